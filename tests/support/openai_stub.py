"""A small OpenAI-compatible chat endpoint on 127.0.0.1 that can be told to fail.

Each request pops the next action from `script` (default: answer). Actions:
"ok", ("429", retry_after_seconds), "500", ("400", message) (HTTP 400 with that message, as a server refuses a
request), "drop" (close the connection without a reply), and "reject_schema" (HTTP 400 for json_schema response
formats, as endpoints without structured outputs answer). `GET /v1/models` lists `models`. Every request's method,
path and Authorization header are kept in `seen`, the model list's too. A pointwise verdict is `VERDICT`, or the
verdict of the first `(text, verdict)` of `verdict_when` whose text the prompt holds; `answer`, where set, may choose
any reply from the prompt (None: the reply above). Each request is held `delay` seconds before its action;
`max_in_flight` records the most requests held at once.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Optional

from tests.support.loopback import JSONHandler, OpenAIStandIn

VERDICT = {"accuracy": {"analysis": "Correct and complete.", "score": 3},
           "style": {"analysis": "Plain and clear.", "score": 2}}
# For a pairwise prompt: always the answer shown first, a judge with pure position bias.
PAIRWISE_VERDICT = {"analysis": "The first answer is better.", "winner": "A"}
PREFERENCE = {"better": 1}  # the preference method's number: the same lean to the answer shown first


def reply_for(prompt: str, verdict: dict[str, Any]) -> dict[str, Any]:
    """What the stub answers: the pairwise verdict, the preference, or `verdict` for a scoring prompt."""
    return PAIRWISE_VERDICT if "Answer A:" in prompt else PREFERENCE if "Answer 1:" in prompt else verdict


class StubState:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.script: list[Any] = []
        self.default: Any = "ok"
        self.verdict_when: list[tuple[str, dict[str, Any]]] = []
        self.answer: Optional[Callable[[str], Optional[dict[str, Any]]]] = None
        self.requests: list[dict[str, Any]] = []
        self.models = ["stub-judge"]
        self.seen: list[tuple[str, str, Optional[str]]] = []  # (method, path, Authorization header) of every request
        self.delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0

    def next_action(self) -> Any:
        with self.lock:
            return self.script.pop(0) if self.script else self.default


def _handler(state: StubState) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def _saw(self) -> None:
            with state.lock:
                state.seen.append((self.command, self.path, self.headers.get("Authorization")))

        def do_GET(self) -> None:  # noqa: N802
            self._saw()
            if self.path.rstrip("/").endswith("/models"):
                self.send_json(200, {"object": "list", "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "stub"} for name in state.models]})
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:  # noqa: N802
            self._saw()
            body = self.read_json()
            action = state.next_action()
            with state.lock:
                state.requests.append({"time": time.monotonic(), "action": action, "body": body})
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            time.sleep(state.delay)
            with state.lock:  # before the reply goes out, so the client's next request never overlaps this one
                state.in_flight -= 1
            if action == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if isinstance(action, tuple) and action[0] == "429":
                self.send_json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                           {"Retry-After": str(action[1])})
                return
            if isinstance(action, tuple) and action[0] == "400":
                self.send_json(400, {"error": {"message": action[1], "type": "invalid_request_error", "code": 400}})
                return
            if action == "500":
                self.send_json(500, {"error": {"message": "server exploded", "type": "server_error"}})
                return
            fmt = (body.get("response_format") or {}).get("type")
            if action == "reject_schema" and fmt == "json_schema":
                self.send_json(400, {"error": {"message": "response_format json_schema is not supported",
                                           "type": "invalid_request_error"}})
                return
            prompt = body["messages"][-1]["content"]
            verdict = next((v for text, v in state.verdict_when if text in prompt), VERDICT)
            chosen = state.answer(prompt) if state.answer else None
            self.send_json(200, {
                "id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": json.dumps(chosen or reply_for(prompt, verdict))}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            })

    return Handler


class OpenAIStub(OpenAIStandIn):
    """Context manager: `with OpenAIStub() as stub: stub.base_url, stub.state ...`."""

    def __init__(self) -> None:
        super().__init__(StubState(), _handler)
