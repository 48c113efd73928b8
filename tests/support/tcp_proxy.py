"""A loopback TCP proxy that can drop dead: a server's crash as its clients see it, without the server.

`cut()` resets every open connection and stops listening (requests in flight fail, new ones are
refused), as when the server process is SIGKILLed; `restore()` listens again on the same port, as
when the server is back. The real server behind it keeps running, so a test does not pay its restart.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading


class TcpProxy:
    def __init__(self, upstream_port: int, host: str = "127.0.0.1"):
        self.host, self.upstream_port = host, upstream_port
        self._lock = threading.Lock()
        self._connections: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.port = self._listen(0)

    def url(self, base_url: str) -> str:
        """`base_url` (the server's) with this proxy's port in place of the server's."""
        return base_url.replace(f":{self.upstream_port}", f":{self.port}", 1)

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._connections = self._connections, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept() (close alone does not)
            listener.close()
        for connection in connections:
            # Linger 0: the socket ends with a reset, as a dead peer's kernel sends. shutdown() first, since the
            # pipe thread blocked in recv() holds the socket open past close() (and is woken by shutdown()).
            with contextlib.suppress(OSError):
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def restore(self) -> None:
        self._listen(self.port)

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.cut()

    def _listen(self, port: int) -> int:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, port))
        listener.listen(64)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return listener.getsockname()[1]

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            upstream = socket.create_connection((self.host, self.upstream_port))
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    upstream.close()
                    return
                self._connections += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, target), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)
