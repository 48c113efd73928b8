"""Each judge key reaches its own endpoint and no other, through the CLI: two loopback stand-ins, one a served judge
(`--judge URL`, `endpoint.base_url`), one standing in for OpenAI's API (OPENAI_BASE_URL), record the Authorization
header of every request they get, the model list asked while `--judge URL` is parsed included. judge-bench on two
synthetic pairs drives them (no engine, no labels outside the repository)."""

import json

import pytest
import yaml

from tests.support.cli_output import report_path
from tests.support.openai_stub import OpenAIStub

OPENAI_KEY, SERVED_KEY, NAMED_KEY = "sk-openai-canary-7d1f", "served-canary-52ab", "named-canary-9c3e"
OPENAI_MODEL = "gpt-4o-mini"


@pytest.fixture
def pairs(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"id": f"p{k}", "instruction": f"Question {k}?", "output_1": f"first {k}",
                                        "output_2": f"second {k}", "label": 1 + k % 2}) + "\n" for k in range(2)))
    return path


@pytest.fixture
def stand_ins(monkeypatch):
    """(served judge, OpenAI's API), with OPENAI_API_KEY set and OpenAI's requests sent to the second."""
    with OpenAIStub() as served, OpenAIStub() as openai_api:
        openai_api.state.models = [OPENAI_MODEL]
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", openai_api.base_url)
        monkeypatch.delenv("JUDGE_API_KEY", raising=False)
        yield served, openai_api


def _keys(stand_in):
    """The Authorization header of every request the stand-in got, and whether the model list was among them."""
    seen = list(stand_in.state.seen)
    stand_in.state.seen.clear()
    return {authorization for _, _, authorization in seen}, any(path.endswith("/models") for _, path, _ in seen)


def _config(path, *judges):
    path.write_text(yaml.safe_dump({"parameters": {"judges" if len(judges) > 1 else "judge":
                                                   list(judges) if len(judges) > 1 else judges[0]}}))
    return path


def _served(url, **endpoint):
    return {"backend": "openai", "model": "stub-judge", "cache": False, "endpoint": {"base_url": url, **endpoint}}


def test_openais_key_never_reaches_a_served_judge_and_a_served_key_reaches_it_alone(run_cli, pairs, stand_ins,
                                                                                    tmp_path, monkeypatch):
    served, openai_api = stand_ins

    # 1. A served judge and no key of its own: no key at all (the SDK's placeholder), OPENAI_API_KEY set regardless.
    result = run_cli("judge-bench", "--pairs", pairs, "--judge", served.base_url)
    assert result.exit_code == 0, result.output[-3000:]
    assert _keys(served) == ({"Bearer EMPTY"}, True) and _keys(openai_api) == (set(), False)

    # 2. JUDGE_API_KEY: the served judge's, every request, the model list too.
    monkeypatch.setenv("JUDGE_API_KEY", SERVED_KEY)
    result = run_cli("judge-bench", "--pairs", pairs, "--judge", served.base_url)
    assert result.exit_code == 0, result.output[-3000:]
    assert _keys(served) == ({f"Bearer {SERVED_KEY}"}, True) and _keys(openai_api) == (set(), False)

    # 3. A jury of the served judge and OpenAI's: each key to its own endpoint, never the other's.
    jury = _config(tmp_path / "jury.yaml", _served(served.base_url),
                   {"backend": "openai", "model": OPENAI_MODEL, "cache": False})
    result = run_cli("judge-bench", "--pairs", pairs, "--config", jury)
    assert result.exit_code == 0, result.output[-3000:]
    assert _keys(served) == ({f"Bearer {SERVED_KEY}"}, False)
    assert _keys(openai_api) == ({f"Bearer {OPENAI_KEY}"}, False)

    # 4. A key variable the judge's config names wins over JUDGE_API_KEY, on the model list of its own URL too.
    monkeypatch.setenv("MY_SERVER_KEY", NAMED_KEY)
    named = _config(tmp_path / "named.yaml", _served(served.base_url, api_key_env="MY_SERVER_KEY"))
    result = run_cli("judge-bench", "--pairs", pairs, "--config", named, "--judge", served.base_url)
    assert result.exit_code == 0, result.output[-3000:]
    assert _keys(served) == ({f"Bearer {NAMED_KEY}"}, True) and _keys(openai_api) == (set(), False)

    # No key in what the last run printed or wrote (its JSON and HTML reports).
    report = report_path(result.stdout)
    written = result.output + report.read_text() + report.with_suffix(".html").read_text()
    assert not [key for key in (OPENAI_KEY, SERVED_KEY, NAMED_KEY) if key in written]
