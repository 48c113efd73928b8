"""One loopback HTTP server for every stand-in (the Hugging Face Hub, an OpenAI endpoint, its Batch API): real
HTTP on 127.0.0.1, served from a thread while the block runs. Each stand-in brings its request handler and state."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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
