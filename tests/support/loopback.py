"""One loopback HTTP server for every stand-in (the Hugging Face Hub, an OpenAI endpoint, its Batch API): real
HTTP on 127.0.0.1, served from a thread while the block runs. Each stand-in brings its request handler and state."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional


class LoopbackServer:
    """`with LoopbackServer(Handler) as server: server.url` (`http://127.0.0.1:PORT`; any free port for 0)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0,
                 server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer) -> None:
        self.server = server_class(("127.0.0.1", port), handler)  # a subclass may keep the stand-in's state
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Any:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class JSONHandler(BaseHTTPRequestHandler):
    """The base of a stand-in's request handler: HTTP/1.1 (the clients keep connections), no access log, JSON in
    and out."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def send_json(self, status: int, body: Any, headers: Optional[dict[str, str]] = None,
                  content_type: str = "application/json") -> None:
        """`body` as JSON (bytes as they are), with `headers`."""
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)


class OpenAIStandIn(LoopbackServer):
    """A stand-in for an OpenAI-compatible endpoint: its `state`, the handler made for that state, `base_url`."""

    def __init__(self, state: Any, handler_for: Callable[[Any], type[BaseHTTPRequestHandler]]) -> None:
        self.state = state
        super().__init__(handler_for(state))

    @property
    def base_url(self) -> str:
        return self.url + "/v1"
