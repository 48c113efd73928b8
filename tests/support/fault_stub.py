"""An OpenAI-compatible chat endpoint on 127.0.0.1 that misbehaves on purpose, at set rates: 429 with Retry-After,
500 and 503, a connection reset in the middle of a reply, a reply slower than the client's timeout, a reply that is
not JSON, a score off the rubric's scale; every other request gets a valid verdict. `FaultLog` records each
request's prompt and the fault it got, drawn from a seeded generator (the judge soak: `tests/support/judge_soak.py`)."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from tests.support.loopback import JSONHandler, LoopbackServer

FAULTS = {  # fault -> share of requests that get it (the rest are answered with a valid verdict)
    "429": 0.05, "500": 0.03, "503": 0.03, "reset": 0.03, "slow": 0.02, "bad_json": 0.02, "off_scale": 0.02,
}
VERDICT = {"accuracy": {"analysis": "Right.", "score": 3}, "style": {"analysis": "Plain.", "score": 2}}
TIMEOUT_S = 1.0  # the client's per-request timeout; a "slow" reply takes SLOW_S
SLOW_S = 1.5


@dataclass
class FaultLog:
    """What the server did: each request's prompt and the fault it got (None: a valid verdict)."""

    seed: int = 0
    faults: dict[str, float] = field(default_factory=lambda: dict(FAULTS))
    requests: list[tuple[str, Optional[str]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._draw = random.Random(self.seed)

    def next_fault(self, prompt: str) -> Optional[str]:
        with self.lock:
            roll, fault = self._draw.random(), None
            for name, share in self.faults.items():
                if roll < share:
                    fault = name
                    break
                roll -= share
            self.requests.append((prompt, fault))
            return fault

    def answered(self) -> int:
        """Requests answered with a valid verdict so far."""
        with self.lock:
            return sum(fault is None for _, fault in self.requests)


def fault_handler(log: FaultLog) -> type[BaseHTTPRequestHandler]:
    class Handler(JSONHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.read_json()
            fault = log.next_fault(body["messages"][-1]["content"])
            if fault == "429":
                return self.send_json(429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "0.05"})
            if fault in ("500", "503"):
                return self.send_json(int(fault), {"error": {"message": "unavailable", "type": "server_error"}})
            if fault == "reset":  # the headers and half a body, then the connection is gone
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "400")
                self.end_headers()
                self.wfile.write(b'{"id": "chatcmpl-soak", "choices": [')
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return None
            if fault == "slow":
                time.sleep(SLOW_S)
            content = json.dumps(VERDICT)
            if fault == "bad_json":
                content = content[: len(content) // 2]
            elif fault == "off_scale":
                content = json.dumps({**VERDICT, "accuracy": {"analysis": "Off.", "score": 7}})
            return self.send_json(200, {
                "id": "chatcmpl-soak", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            })

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a client that timed out
            super().handle_error(request, client_address)


class FaultServer(LoopbackServer):
    """`with FaultServer(log) as server: server.base_url` (`http://127.0.0.1:PORT/v1`; any free port for 0). The
    port is part of the judge's cache key (its endpoint), so a rerun that must find the cache uses the same one."""

    def __init__(self, log: FaultLog, port: int = 0) -> None:
        self.log = log
        super().__init__(fault_handler(log), port, server_class=_Server)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"
