"""Where a judge's requests go, and the one key that goes with them.

- OpenAI's API (no `endpoint.base_url`, or api.openai.com): `OPENAI_API_KEY`, sent to OpenAI, or to
  `OPENAI_BASE_URL` where the user sends OpenAI's requests (as the openai SDK reads it).
- A served judge (any other URL: `--judge http://...`, `endpoint.base_url`): its own key, the environment variable
  `endpoint.api_key_env` names, else `JUDGE_API_KEY`, else none. OPENAI_API_KEY never goes there.

Every client of a judge endpoint is built here (`openai_client`): the online judge, the Batch API judge, the model
list of `--judge URL`. A plain-http URL to another machine is named on the console once per process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional
from urllib.parse import urlsplit

import openai

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.urls import crosses_the_network_in_clear, shown_url

logger = logging.getLogger(__name__)

OPENAI_HOST = "api.openai.com"
# The openai SDK insists on a key and would read OPENAI_API_KEY from the environment without one: this stands for
# "no key" (a `vllm serve` started without --api-key accepts any).
NO_KEY = "EMPTY"


@dataclass(frozen=True)
class JudgeEndpoint:
    """A judge endpoint as a client reaches it: its URL (None: the SDK's, api.openai.com) and the key sent there,
    with the setting it came from (None: no key)."""

    base_url: Optional[str]
    api_key: str = NO_KEY
    key_name: Optional[str] = None


def is_openai(base_url: Optional[str]) -> bool:
    """Whether `base_url` is OpenAI's own API (unset, or api.openai.com over https)."""
    if base_url is None:
        return True
    parts = urlsplit(base_url)
    return parts.scheme == "https" and parts.hostname == OPENAI_HOST


def _secret(value: Any) -> Optional[str]:
    return value.get_secret_value() if value is not None else None


def judge_endpoint(base_url: Optional[str], api_key_env: Optional[str], settings: Any,
                   environment: Mapping[str, str] = os.environ) -> JudgeEndpoint:
    """The endpoint at `base_url` with the key meant for it (`api_key_env`: the variable a judge's config names, read
    from `environment`; `settings`: `Settings`). ConfigError when `api_key_env` names a variable that is not set."""
    openai_api = is_openai(base_url)
    if openai_api:
        base_url = base_url or settings.OPENAI_BASE_URL
    if api_key_env is not None:
        key = environment.get(api_key_env)
        if not key:
            raise ConfigError(f"judge.endpoint.api_key_env is {api_key_env}, but {api_key_env} is not set in the "
                              f"environment: export it (export {api_key_env}=...), or remove api_key_env to send "
                              f"JUDGE_API_KEY (a served judge) or OPENAI_API_KEY (OpenAI's API).")
        name: Optional[str] = api_key_env
    elif openai_api:
        key, name = _secret(settings.OPENAI_API_KEY), "OPENAI_API_KEY"
    else:
        key, name = _secret(settings.JUDGE_API_KEY), "JUDGE_API_KEY"
    if base_url is not None:
        _warn_plain_http(base_url)
    return JudgeEndpoint(base_url, key or NO_KEY, name if key else None)


@lru_cache(maxsize=None)
def _warn_plain_http(base_url: str) -> None:
    # Once per URL and process: the judge is built in several steps of one run.
    if crosses_the_network_in_clear(base_url):
        logger.warning("The judge's URL %s is plain http to another machine: its key, the prompts and the answers "
                       "cross the network unencrypted, readable and changeable on the way. Serve the judge over "
                       "https, or reach it through an SSH tunnel (ssh -N -L 8000:127.0.0.1:8000 HOST, then --judge "
                       "http://127.0.0.1:8000/v1).", shown_url(base_url))


class _ShownRequestUrls(logging.Filter):
    """httpx logs every request's URL whole at INFO (`HTTP Request: POST <url> "HTTP/1.1 200 OK"`), which the run's
    log keeps: the URL is written as `shown_url` writes it, without credentials or query."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if str(record.msg).startswith("HTTP Request:") and isinstance(args, tuple) and len(args) > 1:
            record.args = (args[0], shown_url(str(args[1])), *args[2:])
        return True


_SHOWN_REQUEST_URLS = _ShownRequestUrls()


def openai_client(endpoint: JudgeEndpoint, *, timeout_s: float, max_retries: int = 0) -> openai.OpenAI:
    """The SDK's client for `endpoint`: its URL and key given explicitly, so that nothing of the environment
    (OPENAI_API_KEY, OPENAI_BASE_URL) is read by the SDK in their place; its requests logged without secrets."""
    logging.getLogger("httpx").addFilter(_SHOWN_REQUEST_URLS)  # once: a filter already there is not added again
    return openai.OpenAI(base_url=endpoint.base_url or f"https://{OPENAI_HOST}/v1", api_key=endpoint.api_key,
                         timeout=timeout_s, max_retries=max_retries)
