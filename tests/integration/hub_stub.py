"""A small Hugging Face Hub on 127.0.0.1: enough of its HTTP API for `huggingface_hub` to push a
dataset repo (whoami, repo creation, pre-upload, commit) and for `datasets` to load it back
(repo info, tree, paths-info, file download). Files are kept on disk; commits get fresh shas.

`state.fail_status = 401 | 500 ...` makes every API call answer that status.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote, urlparse

TOKEN = "hf_stub_write_token"
API_ROUTE = re.compile(r"^/api/datasets/([^/]+/[^/]+)(?:/(preupload|commit|revision|tree|paths-info)/([^/]+)(/.*)?)?$")
USER = "stub-user"


class HubState:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.repos: dict[str, dict[str, Any]] = {}  # repo_id -> {"sha", "private"}
        self.fail_status: Optional[int] = None
        self.calls: list[tuple[str, str]] = []

    def files(self, repo_id: str) -> dict[str, bytes]:
        folder = self.root / repo_id
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # One request per connection: a pooled keep-alive connection must not outlive the stub
        # that a test started (the next test's stub listens on the same port).
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any = None, raw: Optional[bytes] = None, headers: Optional[dict] = None,
                  head: bool = False) -> None:
            payload = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                self.wfile.write(payload)

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _authorized(self) -> bool:
            return self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def _entries(self, repo_id: str, prefix: str = "", recursive: bool = True) -> list[dict[str, Any]]:
            entries, dirs = [], set()
            for path, data in state.files(repo_id).items():
                if prefix and not path.startswith(prefix.rstrip("/") + "/"):
                    continue
                rest = path[len(prefix.rstrip("/") + "/"):] if prefix else path
                if not recursive and "/" in rest:
                    dirs.add((prefix.rstrip("/") + "/" if prefix else "") + rest.split("/")[0])
                    continue
                entries.append({"type": "file", "path": path, "size": len(data),
                                "oid": hashlib.sha1(data).hexdigest()})
            return [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(dirs)] + entries

        def _route(self, method: str) -> None:
            url = urlparse(self.path)
            path = unquote(url.path)
            state.calls.append((method, path))
            body = self._body() if method in ("POST", "PUT") else b""
            if state.fail_status and path.startswith("/api/"):
                self._send(state.fail_status, {"error": f"stub failure {state.fail_status}"})
                return
            if path == "/api/whoami-v2":
                if not self._authorized():
                    self._send(401, {"error": "Invalid credentials in Authorization header"})
                else:
                    self._send(200, {"type": "user", "name": USER, "orgs": [], "auth": {"accessToken": {"role": "write"}}})
                return
            if path == "/api/validate-yaml":  # the client checks a card's metadata before committing it
                self._send(200, {"errors": [], "warnings": []})
                return
            if path == "/api/repos/create" and method == "POST":
                if not self._authorized():
                    self._send(401, {"error": "Invalid credentials"})
                    return
                spec = json.loads(body)
                repo_id = f"{spec.get('organization') or USER}/{spec['name']}"
                with state.lock:
                    exists = repo_id in state.repos
                    state.repos.setdefault(repo_id, {"sha": uuid.uuid4().hex + "00000000",
                                                    "private": bool(spec.get("private")) or spec.get("visibility") == "private"})
                (state.root / repo_id).mkdir(parents=True, exist_ok=True)
                url_ = f"http://{self.headers['Host']}/datasets/{repo_id}"
                self._send(409 if exists else 200, {"url": url_, "error": "already exists"} if exists else {"url": url_})
                return
            match = API_ROUTE.match(path)
            if match:
                repo_id, action, revision, rest = match.groups()
                if repo_id not in state.repos:
                    self._send(404, {"error": "Repository not found"}, headers={"X-Error-Code": "RepoNotFound"})
                    return
                sha = state.repos[repo_id]["sha"]
                if action == "preupload":
                    files = json.loads(body)["files"]
                    self._send(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                               for f in files], "commitOid": sha})
                elif action == "commit":
                    if not self._authorized():
                        self._send(401, {"error": "Invalid credentials"})
                        return
                    for line in body.decode().splitlines():
                        item = json.loads(line)
                        if item["key"] == "file":
                            target = state.root / repo_id / item["value"]["path"]
                            target.parent.mkdir(parents=True, exist_ok=True)
                            target.write_bytes(base64.b64decode(item["value"]["content"]))
                    with state.lock:
                        state.repos[repo_id]["sha"] = sha = uuid.uuid4().hex + "00000000"
                    self._send(200, {"commitUrl": f"http://{self.headers['Host']}/datasets/{repo_id}/commit/{sha}",
                                     "commitOid": sha, "pullRequestUrl": None})
                elif action == "paths-info":
                    wanted = set(json.loads(body or b"{}").get("paths", []))
                    self._send(200, [e for e in self._entries(repo_id) if e["path"] in wanted])
                elif action == "tree":
                    recursive = "recursive=true" in (url.query or "").lower() or "recursive=1" in (url.query or "")
                    self._send(200, self._entries(repo_id, (rest or "").lstrip("/"), recursive))
                else:  # repo info, with or without a revision
                    siblings = [{"rfilename": p} for p in state.files(repo_id)]
                    self._send(200, {"id": repo_id, "sha": sha, "private": state.repos[repo_id]["private"],
                                     "siblings": siblings, "tags": [], "downloads": 0, "likes": 0})
                return
            match = re.match(r"^/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
            if match:
                repo_id, _, file_path = match.groups()
                data = state.files(repo_id).get(file_path) if repo_id in state.repos else None
                if data is None:
                    self._send(404, {"error": "Entry not found"}, headers={"X-Error-Code": "EntryNotFound"},
                               head=method == "HEAD")
                    return
                self._send(200, raw=data, head=method == "HEAD", headers={
                    "ETag": f'"{hashlib.sha1(data).hexdigest()}"', "X-Repo-Commit": state.repos[repo_id]["sha"]})
                return
            self._send(404, {"error": f"stub has no route for {method} {path}"}, head=method == "HEAD")

        def do_GET(self) -> None:  # noqa: N802
            self._route("GET")

        def do_HEAD(self) -> None:  # noqa: N802
            self._route("HEAD")

        def do_POST(self) -> None:  # noqa: N802
            self._route("POST")

    return Handler


class HubStub:
    def __init__(self, root: Path, port: int = 0) -> None:
        self.state = HubState(root)
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self.state))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "HubStub":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
