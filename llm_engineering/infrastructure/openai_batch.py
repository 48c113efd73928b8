"""A judge through OpenAI's Batch API: the online judge's requests at half the price, answered within 24 h.

The requests a call still needs (`ask_judge` passes only the cache misses) are written as a batch
input file (JSONL, one chat request per line, its `custom_id` the request's cache key), uploaded
and submitted. Before any wait, the batch id is written to a state file named by the file's
sha256: a run killed while waiting and started again with the same requests polls that batch
instead of paying for another. Replies come from the output file; requests that failed, or that
an expired or cancelled batch never ran, become row errors. Those are not cached, so a rerun
(`--only-failed`) sends a new, smaller file: a new batch. A batch whose results were handed over
is marked done and never resumed, so identical requests asked again (none answered) go out again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Optional

import openai
from openai.types import Batch
from openai.types.chat import ChatCompletion
from tqdm.auto import tqdm

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judging.cache import cache_key
from llm_engineering.evaluation.judging.transport import JudgeReply, OnReply, ReplySchema
from llm_engineering.evaluation.urls import shown_url
from llm_engineering.infrastructure.openai_chat import ChatRequests, chat_client, describe
from llm_engineering.infrastructure.zenml_runs import log_on_running_step
from llm_engineering.settings import Settings, get_settings

logger = logging.getLogger(__name__)

ENDPOINT: Final = "/v1/chat/completions"
# OpenAI's limits on one batch input file.
MAX_REQUESTS = 50_000
MAX_BYTES = 200_000_000
_ENDED = {"completed", "failed", "expired", "cancelled"}


class BatchStillRunning(RuntimeError):
    """The wait for a batch stopped (past `judge.batch.max_wait_s`, or the API out of reach) while it runs;
    it goes on, and a rerun resumes waiting for it."""


def request_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One line of a batch input file. Keys keep their order: a JSON schema's property order is the
    order the judge writes them in (score first or analysis first)."""
    line = {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


def batch_files(
    bodies: dict[str, dict[str, Any]], max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
) -> list[tuple[bytes, list[str]]]:
    """The input files for `bodies` (by custom id), each within the limits: (file content, its custom ids)."""
    files: list[tuple[bytes, list[str]]] = []
    lines: list[bytes] = []
    ids: list[str] = []
    size = 0
    for custom_id, body in bodies.items():
        line = request_line(custom_id, body)
        if lines and (len(lines) == max_requests or size + len(line) > max_bytes):
            files.append((b"".join(lines), ids))
            lines, ids, size = [], [], 0
        lines.append(line)
        ids.append(custom_id)
        size += len(line)
    return files + [(b"".join(lines), ids)] if lines else files


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome in a batch: its chat completion, or the error (and HTTP status) instead."""

    completion: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    status: Optional[int] = None


def read_results(jsonl: str) -> dict[str, BatchResult]:
    """The results in a batch's output or error file, by custom id."""
    results = {}
    for text in filter(str.strip, jsonl.splitlines()):
        line = json.loads(text)
        response = line.get("response") or {}
        status, body = response.get("status_code"), response.get("body") or {}
        if status == 200 and not line.get("error"):
            results[line["custom_id"]] = BatchResult(completion=body)
            continue
        error = line.get("error") or body.get("error") or {}
        kind = f"HTTP {status}" if status else error.get("code") or "error"
        results[line["custom_id"]] = BatchResult(error=f"{kind}: {error.get('message') or text[:200]}", status=status)
    return results


def batch_replies(
    chat: ChatRequests, bodies: dict[str, dict[str, Any]], results: dict[str, BatchResult], *, batch_id: str, missing: str
) -> tuple[dict[str, JudgeReply], list[str]]:
    """Each request's reply from an ended batch's `results` (`missing`: the error of one without a result),
    and the requests to ask again because the endpoint refused their response format or logprobs."""
    replies: dict[str, JudgeReply] = {}
    again = []
    for custom_id, body in bodies.items():
        result = results.get(custom_id)
        if result is None:
            replies[custom_id] = JudgeReply(None, error=missing)
        elif result.completion is not None:
            replies[custom_id] = chat.reply(body, ChatCompletion.construct(**result.completion))
        elif result.status == 400 and chat.refused(body, result.error or ""):
            again.append(custom_id)
        else:
            replies[custom_id] = JudgeReply(None, error=f"batch {batch_id}: {result.error}")
    return replies, again


def _missing(batch: Batch) -> str:
    """The error of a request that has no result in `batch`'s files."""
    if batch.status == "failed":
        errors = "; ".join(f"{e.code}: {e.message}" for e in (batch.errors.data if batch.errors else None) or [])
        return f"batch {batch.id} failed: {errors or 'no reason given'}"
    return f"batch {batch.id} {batch.status} without running this request"


def _progress(batch: Batch) -> str:
    counts = batch.request_counts
    return f"{counts.completed}/{counts.total} done, {counts.failed} failed" if counts else "no counts yet"


def _write_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(state, indent=1))
    os.replace(partial, path)  # a kill mid-write leaves the previous state, never half of one


@dataclass(frozen=True)
class _Submitted:
    id: str
    state: Path
    bodies: dict[str, dict[str, Any]]


class OpenAIBatchJudge:
    """The judge's chat requests as OpenAI batches; `state_dir` keeps the ids of batches waited for."""

    def __init__(self, config: JudgeConfig, state_dir: Path, settings: Optional[Settings] = None, client: Any = None):
        """The Batch API at `config.endpoint`, with the key meant for it from `settings` (default: this process's)."""
        self._config = config
        self._chat = ChatRequests(config)
        self.judge_id = self._chat.judge_id
        # The client's own retries (backoff, Retry-After) carry uploads and polls over the blips of a long wait.
        self._client = client or chat_client(config, settings or get_settings(),
                                             max_retries=config.endpoint.max_attempts - 1)
        self._state_dir = state_dir

    def cache_namespace(self, reply_schema: Optional[ReplySchema]) -> dict[str, Any]:
        return self._chat.cache_namespace(reply_schema)

    def complete(self, conversations: list[list[dict[str, str]]], on_reply: OnReply, reply_schema: Optional[ReplySchema]) -> None:
        schema = self._chat.reply_schema(reply_schema)
        namespace = self.cache_namespace(reply_schema)
        # A custom id is unique in a batch: identical conversations are one request, its reply given to each.
        positions: dict[str, list[int]] = {}
        for i, messages in enumerate(conversations):
            positions.setdefault(cache_key(namespace, messages), []).append(i)
        deadline = time.monotonic() + self._config.batch.max_wait_s
        pending = list(positions)
        while pending:  # more than once only for requests whose response format or logprobs were refused
            bodies = {custom_id: self._chat.body(conversations[positions[custom_id][0]], schema) for custom_id in pending}
            submitted = [
                self._submit(data, {custom_id: bodies[custom_id] for custom_id in ids}) for data, ids in batch_files(bodies)
            ]
            ended = self._wait(submitted, deadline)
            pending = []
            for batch in submitted:
                info = ended[batch.id]
                results = {**self._results(info.error_file_id), **self._results(info.output_file_id)}
                replies, again = batch_replies(self._chat, batch.bodies, results, batch_id=batch.id,
                                               missing=_missing(info))
                for custom_id, reply in replies.items():
                    for i in positions[custom_id]:
                        on_reply(i, reply)
                pending += again
                _write_state(batch.state, {**json.loads(batch.state.read_text()), "done": True, "status": info.status})

    def _submit(self, data: bytes, bodies: dict[str, dict[str, Any]]) -> _Submitted:
        """Submit one input file, or resume the batch an earlier run submitted with the same file."""
        digest = hashlib.sha256(data).hexdigest()
        path = self._state_dir / f"{digest}.json"
        state = json.loads(path.read_text()) if path.exists() else {}
        # The state file names the endpoint as a judge id does: without the credentials a URL may carry.
        base_url = shown_url(self._config.endpoint.base_url) if self._config.endpoint.base_url else None
        resumed = bool(state) and not state["done"] and state["base_url"] == base_url
        if resumed:
            logger.info("Resuming judge batch %s (%d requests), submitted by an earlier run", state["batch_id"], len(bodies))
        else:
            upload = self._client.files.create(file=(f"judge-{digest[:16]}.jsonl", data, "application/jsonl"), purpose="batch")
            batch = self._client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h", metadata={"request_file_sha256": digest}
            )
            state = {
                "batch_id": batch.id,
                "input_file_id": upload.id,
                "sha256": digest,
                "requests": len(bodies),
                "judge": self.judge_id,
                "base_url": base_url,
                "done": False,
            }
            _write_state(path, state)
            logger.info("Submitted judge batch %s: %d requests (state: %s)", batch.id, len(bodies), path)
        log_on_running_step(
            {
                f"judge_batch {state['batch_id']}": {
                    "requests": len(bodies),
                    "request_file_sha256": digest,
                    "state_file": str(path),
                    "resumed": resumed,
                }
            }
        )
        return _Submitted(state["batch_id"], path, bodies)

    def _wait(self, submitted: list[_Submitted], deadline: float) -> dict[str, Batch]:
        """Poll until every batch has ended (capped exponential backoff, a status bar); past `deadline`, raise."""
        ended: dict[str, Batch] = {}
        statuses: dict[str, str] = {}
        interval = self._config.batch.poll_initial_s
        with tqdm(total=sum(len(b.bodies) for b in submitted), desc="Judge batch", unit="request") as bar:
            while True:
                try:
                    batches = [ended.get(b.id) or self._client.batches.retrieve(b.id) for b in submitted]
                except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as error:
                    waiting = [b for b in submitted if b.id not in ended]
                    raise BatchStillRunning(self._resume(waiting, f"could not be polled ({describe(error)})")) from error
                for batch in batches:
                    if statuses.get(batch.id) != batch.status:
                        statuses[batch.id] = batch.status
                        logger.info("Judge batch %s: %s (%s)", batch.id, batch.status, _progress(batch))
                    if batch.status in _ENDED:
                        ended[batch.id] = batch
                counts = [b.request_counts for b in batches if b.request_counts]
                shown = (sum(c.completed + c.failed for c in counts), ", ".join(f"{b.id} {b.status}" for b in batches))
                if shown != (bar.n, bar.postfix):
                    bar.n = shown[0]
                    bar.set_postfix_str(shown[1])
                if len(ended) == len(submitted):
                    return ended
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    waiting = [b for b in submitted if b.id not in ended]
                    seen = "; ".join(f"{b.id}: {b.status}, {_progress(b)}" for b in batches if b.status not in _ENDED)
                    why = f"has not ended after {self._config.batch.max_wait_s:g} s (judge.batch.max_wait_s; {seen})"
                    raise BatchStillRunning(self._resume(waiting, why))
                time.sleep(min(interval, remaining))
                interval = min(interval * 2, self._config.batch.poll_max_s)

    def _resume(self, waiting: list[_Submitted], why: str) -> str:
        """Why the wait for these batches stopped, and how to take it up again."""
        return (
            f"Judge batch {', '.join(b.id for b in waiting)} {why}. It goes on at the provider, and its id is kept in "
            f"{', '.join(str(b.state) for b in waiting)}: rerun the same command to resume waiting for it without "
            f"submitting it again: {shlex.join([Path(sys.executable).name, *sys.argv])}"
        )

    def _results(self, file_id: Optional[str]) -> dict[str, BatchResult]:
        return read_results(self._client.files.content(file_id).text) if file_id else {}
