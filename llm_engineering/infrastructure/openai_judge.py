"""A judge behind any OpenAI-compatible chat endpoint (OpenAI, `vllm serve`, ...).

Requests run concurrently (bounded), each with a timeout and bounded retries on 429, 5xx,
timeouts and dropped connections: exponential backoff with jitter, or the server's
Retry-After when it sends one. A request that still fails becomes an error on its row.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Optional

import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential
from tqdm.auto import tqdm

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judge_transport import JudgeReply, OnReply, ReplySchema
from llm_engineering.evaluation.rubric import verdict_schema
from llm_engineering.evaluation.score_probs import TOP_LOGPROBS, compact

logger = logging.getLogger(__name__)

# Fallback order when an endpoint rejects a response format (HTTP 400).
_FORMATS = ["json_schema", "json_object", "none"]


def _retryable(error: BaseException) -> bool:
    if isinstance(error, (openai.APIConnectionError, openai.RateLimitError)):  # incl. timeouts
        return True
    return isinstance(error, openai.APIStatusError) and error.status_code >= 500


def _retry_after(error: Optional[BaseException]) -> Optional[float]:
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to backoff


def _describe(error: BaseException) -> str:
    status = getattr(error, "status_code", None)
    kind = f"HTTP {status}" if status else type(error).__name__
    return f"{kind}: {str(error)[:200]}"


class OpenAIJudge:
    def __init__(self, config: JudgeConfig, api_key: Optional[str], client: Any = None):
        self._config = config
        self.judge_id = f"openai:{config.model}" + (f"@{config.base_url}" if config.base_url else "")
        self._client = client or openai.OpenAI(
            base_url=config.base_url, api_key=api_key or "EMPTY", timeout=config.timeout_s,
            max_retries=0,  # retries are ours: bounded, with jitter and Retry-After
        )
        self._format = "json_schema" if config.response_format == "auto" else config.response_format
        self._format_lock = threading.Lock()
        # Why replies carry no logprobs: turned off, or refused by the endpoint (then asked no more).
        self._logprobs_problem = None if config.logprobs else "logprobs are turned off (judge.logprobs: false)"
        self._backoff = wait_random_exponential(multiplier=0.5, max=config.max_backoff_s)

    def _reply_schema(self, reply_schema: Optional[ReplySchema]) -> ReplySchema:
        return reply_schema or ReplySchema(
            "judge_verdict", verdict_schema(self._config.resolved_rubric(), self._config.max_analysis_chars))

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        c = self._config
        return {"backend": "openai", "model": c.model, "base_url": c.base_url, "temperature": c.temperature,
                "seed": c.seed, "max_tokens": c.max_tokens, "schema": self._reply_schema(reply_schema).schema,
                "options": c.request_options, "logprobs": TOP_LOGPROBS if c.logprobs else None}

    def _wait(self, state: RetryCallState) -> float:
        told = _retry_after(state.outcome.exception() if state.outcome else None)
        return min(told, self._config.max_backoff_s) if told is not None else self._backoff(state)

    def _response_format(self, fmt: str, reply_schema: ReplySchema) -> Optional[dict[str, Any]]:
        if fmt == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": reply_schema.name, "schema": reply_schema.schema, "strict": True}}
        return {"type": "json_object"} if fmt == "json_object" else None

    def _create(self, messages: list[dict[str, str]], reply_schema: ReplySchema) -> JudgeReply:
        while True:
            fmt = self._format
            kwargs: dict[str, Any] = dict(self._config.request_options)
            if (response_format := self._response_format(fmt, reply_schema)) is not None:
                kwargs["response_format"] = response_format
            asks_logprobs = self._logprobs_problem is None
            if asks_logprobs:
                kwargs.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
            try:
                response = self._client.chat.completions.create(
                    model=self._config.model, messages=messages, temperature=self._config.temperature,
                    max_tokens=self._config.max_tokens, seed=self._config.seed, **kwargs,
                )
            except openai.BadRequestError as error:
                if asks_logprobs and "logprob" in str(error).lower():
                    with self._format_lock:
                        if self._logprobs_problem is None:
                            self._logprobs_problem = f"the endpoint refused logprobs ({_describe(error)})"
                            logger.warning("Endpoint refused logprobs: no expected scores (%s)", _describe(error))
                    continue
                if fmt == "none" or "response_format" not in str(error) and "json" not in str(error).lower():
                    raise
                with self._format_lock:  # downgrade once for every request
                    if self._format == fmt:
                        self._format = _FORMATS[_FORMATS.index(fmt) + 1]
                        logger.warning("Endpoint rejected %s responses; falling back to %s", fmt, self._format)
                continue
            usage, choice = response.usage, response.choices[0]
            content = choice.logprobs.content if asks_logprobs and choice.logprobs else None
            return JudgeReply(
                text=choice.message.content or "",
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                logprobs=compact([(t.token, [(c.token, c.logprob) for c in t.top_logprobs or []]) for t in content])
                if content else None,
                logprobs_problem=None if content else self._logprobs_problem or "the endpoint returned no logprobs",
            )

    def _request(self, messages: list[dict[str, str]], reply_schema: ReplySchema) -> JudgeReply:
        retrying = Retrying(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(self._config.max_attempts),
            wait=self._wait,
            reraise=True,
            before_sleep=lambda s: logger.info("Judge request retry %d: %s", s.attempt_number,
                                               _describe(s.outcome.exception())),
        )
        try:
            return retrying(self._create, messages, reply_schema)
        except openai.OpenAIError as error:
            attempts = self._config.max_attempts if _retryable(error) else 1
            return JudgeReply(text=None, error=f"request failed after {attempts} attempt(s): {_describe(error)}")

    def complete(
        self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema]
    ) -> None:
        schema = self._reply_schema(reply_schema)
        with ThreadPoolExecutor(max_workers=self._config.max_concurrency) as pool:
            futures = {pool.submit(self._request, messages, schema): i for i, messages in enumerate(conversations)}
            for future in tqdm(as_completed(futures), total=len(futures), desc="Judging"):
                on_reply(futures[future], future.result())
