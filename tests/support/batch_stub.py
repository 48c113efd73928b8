"""A small OpenAI Batch API on 127.0.0.1, scriptable, answering with valid verdicts.

Endpoints: POST /v1/files (multipart upload), GET /v1/files/{id}/content, POST /v1/batches,
GET /v1/batches/{id} and POST /v1/batches/{id}/cancel. Each created batch follows the next
`BatchPlan` in `state.plans` (then `state.default`): polls spent validating and in progress, one
finalizing, then it completes, answering each request as openai_stub does (with logprobs at the
scores when asked), or expires with part of its output, or fails validation. A plan that `hold`s
stays in progress until `release()`; with `down` set, every request is dropped. The state counts
batches created, uploads and requests received.
"""

from __future__ import annotations

import email.policy
import json
import math
import re
import socket
import threading
from dataclasses import dataclass, field
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler
from typing import Any, Optional

from tests.support.loopback import JSONHandler, OpenAIStandIn
from tests.support.openai_stub import VERDICT, reply_for


@dataclass
class BatchPlan:
    validating_polls: int = 1
    in_progress_polls: int = 1
    hold: bool = False  # in progress until `release()`
    errored: int = 0  # the first N requests fail with HTTP 500 (in the error file)
    expire_after: Optional[int] = None  # expires with only the first N requests answered
    fail_validation: bool = False  # fails before running any request
    reject_json_schema: bool = False  # HTTP 400 for requests asking a json_schema response format


@dataclass
class StubBatch:
    id: str
    input_file_id: str
    requests: list[dict[str, Any]]
    plan: BatchPlan
    polls: int = 0
    cancelled: bool = False
    ended: Optional[dict[str, Any]] = None  # status, output and error file ids, once it has ended

    @property
    def custom_ids(self) -> list[str]:
        return [r["custom_id"] for r in self.requests]


@dataclass
class StubState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    plans: list[BatchPlan] = field(default_factory=list)
    default: BatchPlan = field(default_factory=BatchPlan)
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, StubBatch] = field(default_factory=dict)
    uploads: int = 0
    down: bool = False  # every request dropped without a reply, as by an API out of reach

    @property
    def batches_created(self) -> int:
        return len(self.batches)

    @property
    def requests_received(self) -> int:
        return sum(len(b.requests) for b in self.batches.values())

    def release(self) -> None:
        """Let every held batch, and every batch created from now on, run to its end."""
        with self.lock:
            for plan in [b.plan for b in self.batches.values()] + self.plans + [self.default]:
                plan.hold = False

    def _add_file(self, content: bytes) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return file_id


def _logprobs(text: str) -> dict[str, Any]:
    """Token logprobs for `text`: each digit a token at which the judge hesitated (0.8 on it, 0.2 on
    its neighbour), the rest certain."""
    content = []
    for token in re.findall(r"\d|\D+", text):
        top = [{"token": token, "logprob": 0.0}]
        if token.isdigit():
            other = str(int(token) - 1 if token != "1" else 2)
            top = [{"token": token, "logprob": math.log(0.8)}, {"token": other, "logprob": math.log(0.2)}]
        content.append({"token": token, "logprob": top[0]["logprob"], "top_logprobs": top})
    return {"content": content}


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(reply_for(body["messages"][-1]["content"], VERDICT))
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
                "logprobs": _logprobs(text) if body.get("logprobs") else None,
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def _error_line(custom_id: str, status: int, message: str, kind: str) -> dict[str, Any]:
    return {
        "id": f"batch_req_{custom_id[:8]}",
        "custom_id": custom_id,
        "error": None,
        "response": {"status_code": status, "body": {"error": {"message": message, "type": kind}}},
    }


def _run(batch: StubBatch, answered: int, status: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The output and error lines of `batch`, of which the first `answered` requests ran."""
    output, errors = [], []
    for i, request in enumerate(batch.requests):
        custom_id, body = request["custom_id"], request["body"]
        if i >= answered:
            if status == "expired":
                errors.append(
                    {
                        "id": f"batch_req_{i}",
                        "custom_id": custom_id,
                        "response": None,
                        "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired.",
                        },
                    }
                )
        elif i < batch.plan.errored:
            errors.append(_error_line(custom_id, 500, "The server had an error processing your request.", "server_error"))
        elif batch.plan.reject_json_schema and (body.get("response_format") or {}).get("type") == "json_schema":
            errors.append(_error_line(custom_id, 400, "response_format json_schema is not supported", "invalid_request_error"))
        else:
            output.append(
                {
                    "id": f"batch_req_{i}",
                    "custom_id": custom_id,
                    "error": None,
                    "response": {"status_code": 200, "request_id": f"req_{i}", "body": _completion(body)},
                }
            )
    return output, errors


def _status(batch: StubBatch) -> str:
    plan = batch.plan
    if plan.fail_validation:
        return "failed"
    if batch.cancelled:
        return "cancelled"
    if batch.polls <= plan.validating_polls:
        return "validating"
    if batch.polls <= plan.validating_polls + plan.in_progress_polls or plan.hold:
        return "in_progress"
    if batch.polls == plan.validating_polls + plan.in_progress_polls + 1:
        return "finalizing"
    return "expired" if plan.expire_after is not None else "completed"


def _end(state: StubState, batch: StubBatch, status: str) -> dict[str, Any]:
    """Write an ended batch's output and error files (once)."""
    answered = {"completed": len(batch.requests), "expired": batch.plan.expire_after}.get(status, 0)
    output, errors = _run(batch, answered, status)
    ended: dict[str, Any] = {
        "status": status,
        "output_file_id": None,
        "error_file_id": None,
        "errors": None,
        "request_counts": {"total": len(batch.requests), "completed": len(output), "failed": len(errors)},
    }
    if output:
        ended["output_file_id"] = state._add_file("".join(json.dumps(line) + "\n" for line in output).encode())
    if errors:
        ended["error_file_id"] = state._add_file("".join(json.dumps(line) + "\n" for line in errors).encode())
    if status == "failed":
        ended["errors"] = {
            "object": "list",
            "data": [{"code": "invalid_request", "message": "The batch input file is not valid.", "line": None}],
        }
    return ended


def _batch_object(state: StubState, batch: StubBatch, status: Optional[str] = None) -> dict[str, Any]:
    """The batch as the API shows it at this poll (or in `status`)."""
    status, total = status or _status(batch), len(batch.requests)
    if status in ("completed", "expired", "failed", "cancelled"):
        batch.ended = batch.ended or _end(state, batch, status)
        fields = batch.ended
    else:
        done = (
            0
            if status == "validating"
            else total
            if status == "finalizing"
            else min(total, total * (batch.polls - batch.plan.validating_polls) // (batch.plan.in_progress_polls + 1))
        )
        fields = {
            "status": status,
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": total, "completed": done, "failed": 0},
        }
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "input_file_id": batch.input_file_id,
        "created_at": 0,
        "metadata": None,
        **fields,
    }


def _handler(state: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def _send(self, status: int, body: Any, content_type: str = "application/json") -> None:
            self.send_json(status, body, content_type=content_type)

        def _not_found(self) -> None:
            self._send(404, {"error": {"message": f"no such object: {self.path}", "type": "invalid_request_error"}})

        def _dropped(self) -> bool:
            if state.down:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            return state.down

        def do_GET(self) -> None:  # noqa: N802
            if self._dropped():
                return
            with state.lock:
                if match := re.fullmatch(r"/v1/files/([\w-]+)/content", self.path):
                    content = state.files.get(match.group(1))
                    return self._send(200, content, "application/octet-stream") if content is not None else self._not_found()
                if (match := re.fullmatch(r"/v1/batches/([\w-]+)", self.path)) and match.group(1) in state.batches:
                    batch = state.batches[match.group(1)]
                    batch.polls += 1
                    return self._send(200, _batch_object(state, batch))
            self._not_found()

        def do_POST(self) -> None:  # noqa: N802
            if self._dropped():
                return
            data = self.rfile.read(int(self.headers["Content-Length"]))
            with state.lock:
                if self.path == "/v1/files":
                    message = BytesParser(policy=email.policy.HTTP).parsebytes(
                        f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + data
                    )
                    parts = {
                        p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
                        for p in message.iter_parts()
                    }
                    state.uploads += 1
                    file_id = state._add_file(parts["file"])
                    return self._send(
                        200,
                        {
                            "id": file_id,
                            "object": "file",
                            "bytes": len(parts["file"]),
                            "created_at": 0,
                            "filename": "input.jsonl",
                            "purpose": parts["purpose"].decode(),
                            "status": "processed",
                        },
                    )
                if self.path == "/v1/batches":
                    request = json.loads(data)
                    lines = state.files[request["input_file_id"]].decode().splitlines()
                    batch_id = f"batch_{len(state.batches) + 1}"
                    plan = state.plans.pop(0) if state.plans else BatchPlan(**vars(state.default))
                    state.batches[batch_id] = StubBatch(batch_id, request["input_file_id"], [json.loads(x) for x in lines], plan)
                    return self._send(200, _batch_object(state, state.batches[batch_id], "validating"))
                if (match := re.fullmatch(r"/v1/batches/([\w-]+)/cancel", self.path)) and match.group(1) in state.batches:
                    batch = state.batches[match.group(1)]
                    batch.cancelled = True
                    return self._send(200, {**_batch_object(state, batch), "status": "cancelling"})
            self._not_found()

    return Handler


class BatchStub(OpenAIStandIn):
    """Context manager: `with BatchStub() as stub: stub.base_url, stub.state ...`."""

    def __init__(self) -> None:
        super().__init__(StubState(), _handler)
