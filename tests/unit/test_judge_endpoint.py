"""Each judge key goes to its own endpoint only, and a URL is stored and shown without the secrets it may carry."""

import logging

import pytest

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.stored.judge_id import JudgeId
from llm_engineering.evaluation.urls import crosses_the_network_in_clear, is_loopback, shown_url
from llm_engineering.infrastructure import judge_endpoint as endpoints
from llm_engineering.infrastructure.judge_endpoint import NO_KEY, JudgeEndpoint, judge_endpoint, openai_client
from llm_engineering.settings import Settings

OPENAI_KEY, SERVED_KEY, NAMED_KEY = "sk-openai-only", "served-only", "named-only"


@pytest.fixture
def settings(monkeypatch):
    """Settings from the given values only (no .env, nothing of this machine's environment)."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return lambda **values: Settings(_env_file=None, **values)


@pytest.mark.parametrize("url, shown", [
    ("https://user:pass@judge.example.com:8443/v1?key=abc#top", "https://judge.example.com:8443/v1"),
    ("http://token@10.0.0.5:8000/v1", "http://10.0.0.5:8000/v1"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://[::1]:8000/v1?api_key=x", "http://[::1]:8000/v1"),
])
def test_a_url_is_shown_without_credentials_query_or_fragment(url, shown):
    assert shown_url(url) == shown


def test_a_judge_id_carries_the_url_without_its_secrets_and_an_earlier_runs_whole_url_still_parses():
    assert str(JudgeId("openai", "qwen", "https://u:p@host/v1?key=k")) == "openai:qwen@https://host/v1"
    stored = "openai:qwen@https://u:p@host/v1"  # as a run before this change wrote it
    assert JudgeId.parse(stored) == JudgeId("openai", "qwen", "https://u:p@host/v1")
    assert str(JudgeId.parse(stored)) == "openai:qwen@https://host/v1"


@pytest.mark.parametrize("url, loopback, in_clear", [
    ("http://127.0.0.1:8000/v1", True, False), ("http://127.8.9.1/v1", True, False), ("http://[::1]:8000/v1", True, False),
    ("http://localhost:8000/v1", True, False), ("http://10.0.0.5:8000/v1", False, True),
    ("http://gpu-box:8000/v1", False, True), ("https://gpu-box/v1", False, False),
])
def test_only_plain_http_to_another_machine_crosses_the_network_in_clear(url, loopback, in_clear):
    assert (is_loopback(url), crosses_the_network_in_clear(url)) == (loopback, in_clear)


@pytest.mark.parametrize("base_url", [None, "https://api.openai.com/v1"])
def test_openai_key_goes_to_openais_api(settings, base_url):
    got = judge_endpoint(base_url, None, settings(OPENAI_API_KEY=OPENAI_KEY, JUDGE_API_KEY=SERVED_KEY))
    assert (got.api_key, got.key_name) == (OPENAI_KEY, "OPENAI_API_KEY")


def test_openai_key_follows_openai_base_url_where_the_user_sends_openais_requests(settings):
    got = judge_endpoint(None, None, settings(OPENAI_API_KEY=OPENAI_KEY, OPENAI_BASE_URL="https://proxy.example/v1"))
    assert got == JudgeEndpoint("https://proxy.example/v1", OPENAI_KEY, "OPENAI_API_KEY")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://gpu.example/v1", "http://api.openai.com/v1"])
def test_a_served_judge_gets_its_own_key_never_openais(settings, url):
    without = judge_endpoint(url, None, settings(OPENAI_API_KEY=OPENAI_KEY))
    assert without == JudgeEndpoint(url, NO_KEY, None)
    served = judge_endpoint(url, None, settings(OPENAI_API_KEY=OPENAI_KEY, JUDGE_API_KEY=SERVED_KEY))
    assert served == JudgeEndpoint(url, SERVED_KEY, "JUDGE_API_KEY")


def test_a_key_variable_the_config_names_wins_and_a_missing_one_stops_with_the_fix(settings):
    both = settings(OPENAI_API_KEY=OPENAI_KEY, JUDGE_API_KEY=SERVED_KEY)
    url = "http://127.0.0.1:8000/v1"
    assert judge_endpoint(url, "MY_SERVER_KEY", both, {"MY_SERVER_KEY": NAMED_KEY}).api_key == NAMED_KEY
    with pytest.raises(ConfigError) as error:
        judge_endpoint(url, "MY_SERVER_KEY", both, {})
    assert str(error.value) == (
        "judge.endpoint.api_key_env is MY_SERVER_KEY, but MY_SERVER_KEY is not set in the environment: export it "
        "(export MY_SERVER_KEY=...), or remove api_key_env to send JUDGE_API_KEY (a served judge) or OPENAI_API_KEY "
        "(OpenAI's API).")


def test_the_client_reads_no_key_or_url_of_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    served = openai_client(JudgeEndpoint("http://127.0.0.1:8000/v1"), timeout_s=1)
    assert (served.api_key, str(served.base_url)) == (NO_KEY, "http://127.0.0.1:8000/v1/")
    openai = openai_client(JudgeEndpoint(None, "sk-given"), timeout_s=1)
    assert (openai.api_key, str(openai.base_url)) == ("sk-given", "https://api.openai.com/v1/")


def test_plain_http_to_another_machine_is_named_once_with_the_fix(settings, caplog):
    endpoints._warn_plain_http.cache_clear()
    with caplog.at_level(logging.WARNING, logger=endpoints.__name__):
        for _ in range(2):
            judge_endpoint("http://user:pw@10.0.0.5:8000/v1?key=k", None, settings())
        judge_endpoint("http://127.0.0.1:8000/v1", None, settings())
        judge_endpoint("https://10.0.0.5/v1", None, settings())
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("The judge's URL http://10.0.0.5:8000/v1 is plain http to another machine")
    assert "https" in warning and "ssh -N -L 8000:127.0.0.1:8000 HOST" in warning and "pw" not in warning


def test_the_request_lines_httpx_logs_carry_the_url_without_its_secrets(caplog):
    import httpx

    openai_client(JudgeEndpoint("http://127.0.0.1:8000/v1"), timeout_s=1)
    with caplog.at_level(logging.INFO, logger="httpx"):
        logging.getLogger("httpx").info('HTTP Request: %s %s "%s %d %s"', "POST",
                                        httpx.URL("http://user:pw@127.0.0.1:8000/v1/chat/completions?key=k"),
                                        "HTTP/1.1", 200, "OK")
    assert caplog.messages == ['HTTP Request: POST http://127.0.0.1:8000/v1/chat/completions "HTTP/1.1 200 OK"']
