"""A judge behind any OpenAI-compatible chat endpoint (OpenAI, `vllm serve`, ...).

Requests run concurrently (bounded), each with a timeout and bounded retries on 429, 5xx,
timeouts and dropped connections: exponential backoff with jitter, or the server's
Retry-After when it sends one. A request that still fails becomes an error on its row.
The request body and the reading of replies are shared with the batch judge (`openai_chat`).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Optional

import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential
from tqdm.auto import tqdm

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.failures import request_error
from llm_engineering.evaluation.judging.transport import JudgeReply, OnReply, ReplySchema
from llm_engineering.infrastructure.openai_chat import ChatRequests, chat_client, describe
from llm_engineering.settings import Settings, get_settings

logger = logging.getLogger(__name__)


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


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    assert error is not None  # tenacity sleeps only after an attempt that raised (the retry is on exceptions)
    logger.info("Judge request retry %d: %s", state.attempt_number, describe(error))


class OpenAIJudge:
    def __init__(self, config: JudgeConfig, settings: Optional[Settings] = None, client: Any = None):
        """The judge at `config.endpoint`, with the key meant for it from `settings` (default: this process's)."""
        self._config = config
        self._chat = ChatRequests(config)
        self.judge_id = self._chat.judge_id
        # Retries are ours: bounded, with jitter and Retry-After.
        self._client = client or chat_client(config, settings or get_settings())
        self._backoff = wait_random_exponential(multiplier=0.5, max=config.endpoint.max_backoff_s)

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        return self._chat.cache_namespace(reply_schema)

    def _wait(self, state: RetryCallState) -> float:
        told = _retry_after(state.outcome.exception() if state.outcome else None)
        return min(told, self._config.endpoint.max_backoff_s) if told is not None else self._backoff(state)

    def _create(self, messages: list[dict[str, str]], reply_schema: ReplySchema) -> JudgeReply:
        while True:
            body = self._chat.body(messages, reply_schema)
            try:
                # All of the body as JSON, also fields the client has no argument for (vLLM's top_k, ...).
                response = self._client.chat.completions.create(model=body["model"], messages=body["messages"], extra_body=body)
            except openai.BadRequestError as error:
                if self._chat.refused(body, str(error)):
                    continue
                raise
            return self._chat.reply(body, response)

    def _request(self, messages: list[dict[str, str]], reply_schema: ReplySchema) -> JudgeReply:
        retrying = Retrying(
            retry=retry_if_exception(_retryable),
            stop=stop_after_attempt(self._config.endpoint.max_attempts),
            wait=self._wait,
            reraise=True,
            before_sleep=_log_retry,
        )
        try:
            return retrying(self._create, messages, reply_schema)
        except openai.OpenAIError as error:
            attempts = self._config.endpoint.max_attempts if _retryable(error) else 1
            return JudgeReply(text=None, error=request_error(describe(error), attempts))

    def complete(
        self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema]
    ) -> None:
        schema = self._chat.reply_schema(reply_schema)
        with ThreadPoolExecutor(max_workers=self._config.endpoint.max_concurrency) as pool:
            futures = {pool.submit(self._request, messages, schema): i for i, messages in enumerate(conversations)}
            for future in tqdm(as_completed(futures), total=len(futures), desc="Judging"):
                on_reply(futures[future], future.result())
