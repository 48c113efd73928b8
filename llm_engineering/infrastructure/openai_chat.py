"""What the OpenAI judges share: the client, the chat request body, and the reply read from a completion.

The online judge (`openai_judge`) sends a body as one request, the batch judge (`openai_batch`)
as one line of a batch file; both read replies the same way, and fall back the same way when an
endpoint refuses a response format or logprobs (HTTP 400): later bodies ask without it.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Literal, Optional

import openai
from openai.types.chat import ChatCompletion

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.judging.failures import CONNECTION, TIMEOUT
from llm_engineering.evaluation.judging.score_probs import TOP_LOGPROBS, compact
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema
from llm_engineering.evaluation.judging.verdict import verdict_schema
from llm_engineering.evaluation.stored.judge_id import JudgeId
from llm_engineering.evaluation.urls import shown_url
from llm_engineering.infrastructure.judge_endpoint import judge_endpoint, openai_client
from llm_engineering.settings import Settings

logger = logging.getLogger(__name__)

# Fallback order when an endpoint rejects a response format (HTTP 400).
_FORMATS: list[Literal["json_schema", "json_object", "none"]] = ["json_schema", "json_object", "none"]


def server_message(error: openai.APIStatusError) -> str:
    """What the server said in an error reply: its JSON error's `message` (OpenAI's and vLLM's forms), else its body."""
    body = error.body
    message = (body.get("message") or json.dumps(body)) if isinstance(body, dict) else body or error.message
    return " ".join(str(message).split())


def describe(error: BaseException) -> str:
    """An API error in one line, in the form `judging.failures` reads back: `HTTP 400: <the server's message>`,
    `timeout: ...`, `connection error: ...`."""
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {server_message(error)[:300]}"
    if isinstance(error, openai.APITimeoutError):
        return f"{TIMEOUT}: {error}"
    if isinstance(error, openai.APIConnectionError):
        return f"{CONNECTION}: {error.__cause__ or error}"
    return f"{type(error).__name__}: {str(error)[:200]}"


def chat_client(config: JudgeConfig, settings: Settings, max_retries: int = 0) -> openai.OpenAI:
    """The client of the judge's endpoint, with the key meant for it (`judge_endpoint`)."""
    endpoint = judge_endpoint(config.endpoint.base_url, config.endpoint.api_key_env, settings)
    return openai_client(endpoint, timeout_s=config.endpoint.timeout_s, max_retries=max_retries)


def served_model(base_url: str, api_key_env: Optional[str] = None, timeout_s: float = 10.0) -> str:
    """The one model an OpenAI-compatible server at `base_url` lists (`GET /models`; a `vllm serve` serves one), for
    `--judge URL` without `--judge-model`, asked with the served judge's own key (`judge_endpoint`). ConfigError when
    it cannot be reached or lists none or several."""
    from llm_engineering.settings import get_settings

    client = openai_client(judge_endpoint(base_url, api_key_env, get_settings()), timeout_s=timeout_s, max_retries=1)
    shown = shown_url(base_url)
    try:
        models = [model.id for model in client.models.list()]
    except openai.OpenAIError as error:
        raise ConfigError(f"--judge {shown}: cannot list the served models ({describe(error)}): start the server or "
                          f"fix the URL (an OpenAI-compatible base URL ends in /v1), or name the model with "
                          f"--judge-model NAME") from None
    if len(models) != 1:
        raise ConfigError(f"--judge {shown} serves {len(models)} models ({', '.join(models) or 'none'}): name the "
                          f"judge with --judge-model NAME")
    return models[0]


class ChatRequests:
    """Chat request bodies for one judge config, and its replies; thread-safe."""

    def __init__(self, config: JudgeConfig):
        self.config = config
        self.judge_id = str(JudgeId("openai", config.model, config.endpoint.base_url))
        self._format = "json_schema" if config.response_format == "auto" else config.response_format
        self._lock = threading.Lock()
        # Why replies carry no logprobs: turned off, or refused by the endpoint (then asked no more).
        self._logprobs_problem = None if config.logprobs else "logprobs are turned off (judge.logprobs: false)"

    def reply_schema(self, reply_schema: Optional[ReplySchema]) -> ReplySchema:
        return reply_schema or ReplySchema(
            "judge_verdict", verdict_schema(self.config.resolved_rubric(), self.config.max_analysis_chars)
        )

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        # Online and batch requests are the same requests: they share their cache entries.
        c = self.config
        return {
            "backend": "openai",
            "model": c.model,
            "base_url": c.endpoint.base_url,
            "temperature": c.temperature,
            "seed": c.seed,
            "max_tokens": c.max_tokens,
            "schema": self.reply_schema(reply_schema).schema,
            "options": c.endpoint.request_options,
            "logprobs": TOP_LOGPROBS if c.logprobs else None,
        }

    def body(self, messages: list[dict[str, str]], reply_schema: ReplySchema) -> dict[str, Any]:
        """The chat completion request, with the response format and logprobs the endpoint still accepts."""
        c = self.config
        body: dict[str, Any] = {
            **c.endpoint.request_options,
            "model": c.model,
            "messages": messages,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "seed": c.seed,
        }
        # One word: cut at one token, read at its candidates (no response format needed). Not held to the choices: an
        # endpoint's token ids are unknown here; a reply begun otherwise reads as unread (`checklist.YES_NO_FLOOR`).
        if reply_schema.choices:
            body["max_tokens"] = 1
        elif self._format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": reply_schema.name, "schema": reply_schema.schema, "strict": True},
            }
        elif self._format == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self._logprobs_problem is None:
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        return body

    def refused(self, body: dict[str, Any], message: str) -> bool:
        """After an HTTP 400 `message` for `body`: True when the endpoint refused its logprobs or response
        format, so later bodies ask without (ask again); False for any other bad request."""
        with self._lock:
            if body.get("logprobs") and "logprob" in message.lower():
                if self._logprobs_problem is None:
                    self._logprobs_problem = f"the endpoint refused logprobs (HTTP 400: {message[:200]})"
                    logger.warning("Endpoint refused logprobs: no expected scores (%s)", message[:200])
                return True
            fmt = (body.get("response_format") or {}).get("type", "none")
            if fmt == "none" or "response_format" not in message and "json" not in message.lower():
                return False
            if self._format == fmt:  # downgrade once for every request
                self._format = _FORMATS[_FORMATS.index(fmt) + 1]
                logger.warning("Endpoint rejected %s responses; falling back to %s", fmt, self._format)
            return True

    def reply(self, body: dict[str, Any], completion: ChatCompletion) -> JudgeReply:
        """The judge reply in `completion`, the answer to `body`: text, token usage, compacted logprobs."""
        usage, choice = completion.usage, completion.choices[0]
        content = choice.logprobs.content if body.get("logprobs") and choice.logprobs else None
        return JudgeReply(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            logprobs=compact([(t.token, [(c.token, c.logprob) for c in t.top_logprobs or []]) for t in content])
            if content
            else None,
            logprobs_problem=None if content else self._logprobs_problem or "the endpoint returned no logprobs",
        )
