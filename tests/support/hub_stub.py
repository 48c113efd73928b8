"""A small Hugging Face Hub on 127.0.0.1: enough of its HTTP API for `huggingface_hub` to push a
dataset repo and for `datasets` to load it back, at any of its commits.

Routes, by group (each handler below says what it answers):
- account: whoami, card metadata validation, repo creation;
- repo API: repo info, tree, paths-info and pre-upload at a revision, and commits;
- git-lfs: the batch API, the upload URL it hands out, and the verify call;
- downloads: `resolve/<revision>/<path>` (GET, HEAD, byte ranges).

As on the real Hub, pre-upload sends parquet/arrow (and any binary) files through LFS: the client
uploads the bytes through the batch API first, and its commit names them by pointer (sha256 +
size); text files travel inline in the commit as base64. File contents are kept on disk by
sha256; each commit is a snapshot {path: file}, so every past commit stays readable by its sha
(and `main` is the newest). This `huggingface_hub` uploads LFS files through Xet whenever
`hf_xet` is installed, without asking the server; the stub speaks plain LFS only, so it turns
Xet off while it runs (`HF_HUB_DISABLE_XET`).

Model repos too (`state.add_repo`, read through `/api/models/...` and `/<repo>/resolve/...`, as vLLM and
transformers download them), and access as the Hub grants it: a private repo answers a request without the token
401 RepoNotFound, a gated one 401 GatedRepo (`auth-check` too), so a client without the token fails as on the Hub.

What the tests look at: `state.repos[repo_id]` ({"sha", "private", "gated", "commits"}), `state.files()`,
`state.commits` (the operations of each commit as received), `state.lfs_uploads` (sha256 -> bytes
PUT to the upload URL), `state.calls`. `state.fail_status = 401 | 500 ...` makes every API call
answer that status.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, unquote, urlparse

from tests.support.loopback import LoopbackServer

TOKEN = "hf_stub_write_token"
USER = "stub-user"
LFS_SUFFIXES = (".parquet", ".arrow", ".bin", ".safetensors", ".zip", ".gz")


@dataclass(frozen=True)
class StoredFile:
    sha256: str
    size: int
    lfs: bool


def _new_sha() -> str:
    return uuid.uuid4().hex + "00000000"


class HubState:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        # repo_id -> {"sha": newest commit, "private": bool, "commits": {sha: {path: StoredFile}}}
        self.repos: dict[str, dict[str, Any]] = {}
        self.commits: list[list[dict[str, Any]]] = []
        self.lfs_uploads: dict[str, bytes] = {}
        self.fail_status: Optional[int] = None
        self.calls: list[tuple[str, str]] = []

    def store(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        (self.root / "objects").mkdir(parents=True, exist_ok=True)
        (self.root / "objects" / sha).write_bytes(data)
        return sha

    def read(self, sha256: str) -> bytes:
        return (self.root / "objects" / sha256).read_bytes()

    def snapshot(self, repo_id: str, revision: Optional[str] = None) -> Optional[dict[str, StoredFile]]:
        """The files of `repo_id` at a commit sha or `main` (the newest); None if there is none."""
        repo = self.repos.get(repo_id)
        if repo is None:
            return None
        return repo["commits"].get(repo["sha"] if revision in (None, "main") else revision)

    def add_repo(self, repo_id: str, files: dict[str, bytes], *, private: bool = False, gated: bool = False) -> None:
        """A repo holding `files` in one commit (a model's folder: weights go as LFS files, as on the Hub)."""
        snapshot = {path: StoredFile(self.store(data), len(data), lfs=path.endswith(LFS_SUFFIXES))
                    for path, data in files.items()}
        sha = _new_sha()
        with self.lock:
            self.repos[repo_id] = {"sha": sha, "private": private, "gated": gated, "commits": {sha: snapshot}}

    def files(self, repo_id: str, revision: Optional[str] = None) -> dict[str, bytes]:
        return {path: self.read(f.sha256) for path, f in sorted((self.snapshot(repo_id, revision) or {}).items())}


def _upload_mode(spec: dict[str, Any]) -> str:
    """The Hub's rule, shortened: LFS for data-file suffixes, binary samples and files of 10 MB+."""
    binary = b"\0" in base64.b64decode(spec.get("sample", ""))
    large = spec.get("size", 0) >= 10 * 1024 * 1024
    return "lfs" if spec["path"].endswith(LFS_SUFFIXES) or binary or large else "regular"


def _handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # One request per connection: a pooled keep-alive connection must not outlive the stub
        # that a test started (the next test's stub listens on the same port).
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:
            pass

        # -- plumbing ------------------------------------------------------------------------

        def _send(self, status: int, body: Any = None, raw: Optional[bytes] = None,
                  headers: Optional[dict] = None) -> None:
            payload = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _not_found(self, code: str, message: str) -> None:
            self._send(404, {"error": message}, headers={"X-Error-Code": code})

        def _read_body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _authorized(self) -> bool:
            return self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def _host(self) -> str:
            return f"http://{self.headers['Host']}"

        def _route(self) -> None:
            url = urlparse(self.path)
            state.calls.append((self.command, unquote(url.path)))
            self.body = self._read_body() if self.command in ("POST", "PUT") else b""
            self.query = parse_qs(url.query)
            if state.fail_status and url.path.startswith("/api/"):
                self._send(state.fail_status, {"error": f"stub failure {state.fail_status}"})
                return
            for method, pattern, handle in ROUTES:
                match = re.match(pattern, url.path)
                if match and self.command in method.split("|"):
                    handle(self, *(unquote(group) if group else group for group in match.groups()))
                    return
            self._send(404, {"error": f"stub has no route for {self.command} {url.path}"})

        do_GET = do_HEAD = do_POST = do_PUT = _route  # noqa: N815

        # -- account: who the token is, card metadata, repo creation --------------------------

        def whoami(self) -> None:
            """The token's owner; 401 for any token but TOKEN."""
            if not self._authorized():
                self._send(401, {"error": "Invalid credentials in Authorization header"})
                return
            self._send(200, {"type": "user", "name": USER, "orgs": [], "auth": {"accessToken": {"role": "write"}}})

        def validate_yaml(self) -> None:  # the client checks a card's metadata before committing it
            self._send(200, {"errors": [], "warnings": []})

        def create_repo(self) -> None:
            """A repo with an empty initial commit; 409 if it exists (the client's exist_ok accepts that)."""
            if not self._authorized():
                self._send(401, {"error": "Invalid credentials"})
                return
            spec = json.loads(self.body)
            repo_id = f"{spec.get('organization') or USER}/{spec['name']}"
            private = bool(spec.get("private")) or spec.get("visibility") == "private"
            with state.lock:
                exists = repo_id in state.repos
                if not exists:
                    sha = _new_sha()  # the empty initial commit
                    state.repos[repo_id] = {"sha": sha, "private": private, "commits": {sha: {}}}
            url = f"{self._host()}/datasets/{repo_id}"
            self._send(409 if exists else 200, {"url": url, "error": "already exists"} if exists else {"url": url})

        # -- repo API: info, tree and paths-info at a revision; pre-upload; commit ------------

        def _refused(self, repo_id: str) -> bool:
            """A private or gated repo without the token: answered 401 as the Hub does (True: answered)."""
            repo = state.repos.get(repo_id)
            if repo is None or self._authorized() or not (repo.get("private") or repo.get("gated")):
                return False
            code, text = (("GatedRepo", f"Access to model {repo_id} is restricted. You must have access to it and be "
                           "authenticated to access it.") if repo.get("gated") else ("RepoNotFound", "Repository not found"))
            self._send(401, {"error": text}, headers={"X-Error-Code": code, "X-Error-Message": text})
            return True

        def _at(self, repo_id: str, revision: Optional[str]) -> Optional[dict[str, StoredFile]]:
            """The snapshot, or None after answering 404 as the Hub does (repo, then revision), or 401 (`_refused`)."""
            if repo_id not in state.repos:
                self._not_found("RepoNotFound", "Repository not found")
                return None
            if self._refused(repo_id):
                return None
            files = state.snapshot(repo_id, revision)
            if files is None:
                self._not_found("RevisionNotFound", f"Invalid rev id: {revision}")
            return files

        def _entries(self, files: dict[str, StoredFile], prefix: str, recursive: bool) -> list[dict[str, Any]]:
            prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
            entries, dirs = [], set()
            for path, stored in sorted(files.items()):
                if not path.startswith(prefix):
                    continue
                if not recursive and "/" in path[len(prefix):]:
                    dirs.add(prefix + path[len(prefix):].split("/")[0])
                    continue
                entry = {"type": "file", "path": path, "size": stored.size, "oid": stored.sha256[:40]}
                if stored.lfs:
                    entry["lfs"] = {"oid": stored.sha256, "size": stored.size, "pointerSize": 134}
                entries.append(entry)
            return [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(dirs)] + entries

        def repo_info(self, repo_id: str, revision: Optional[str]) -> None:
            """The repo at a revision: its commit sha and files."""
            files = self._at(repo_id, revision)
            if files is not None:
                sha = state.repos[repo_id]["sha"] if revision in (None, "main") else revision
                self._send(200, {"id": repo_id, "sha": sha, "private": state.repos[repo_id]["private"],
                                 "siblings": [{"rfilename": p} for p in sorted(files)],
                                 "tags": [], "downloads": 0, "likes": 0})

        def auth_check(self, repo_id: str) -> None:
            """Whether this request may read the repo (`HfApi.auth_check`)."""
            if self._at(repo_id, None) is not None:
                self._send(200, {})

        def tree(self, repo_id: str, revision: str, prefix: Optional[str]) -> None:
            files = self._at(repo_id, revision)
            if files is None:
                return
            if prefix and not any(path.startswith(prefix.rstrip("/") + "/") for path in files):
                self._not_found("EntryNotFound", f"{prefix} does not exist on {revision}")
                return
            recursive = self.query.get("recursive", [""])[0].lower() in ("true", "1")
            self._send(200, self._entries(files, prefix or "", recursive))

        def paths_info(self, repo_id: str, revision: str) -> None:
            files = self._at(repo_id, revision)
            if files is not None:
                wanted = parse_qs(self.body.decode()).get("paths", [])  # a form, not JSON
                files_ = [e for e in self._entries(files, "", True) if e["path"] in wanted]
                folders = [{"type": "directory", "path": p, "oid": "0" * 40, "size": 0} for p in wanted
                           if any(f.startswith(p.rstrip("/") + "/") for f in files)]
                self._send(200, files_ + folders)

        def preupload(self, repo_id: str, revision: str) -> None:
            """Say per file whether it goes inline ("regular") or through LFS."""
            if self._at(repo_id, revision) is not None:
                files = json.loads(self.body)["files"]
                self._send(200, {"files": [{"path": f["path"], "uploadMode": _upload_mode(f), "shouldIgnore": False}
                                           for f in files], "commitOid": state.repos[repo_id]["sha"]})

        def commit(self, repo_id: str, revision: str) -> None:
            """Apply an ndjson commit to `main`: inline files, LFS pointers (bytes uploaded before), deletions."""
            if not self._authorized():
                self._send(401, {"error": "Invalid credentials"})
                return
            if self._at(repo_id, revision) is None:
                return
            operations = [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]
            with state.lock:
                files = dict(state.snapshot(repo_id))
                for op in operations:
                    key, value = op["key"], op["value"]
                    if key == "file":
                        data = base64.b64decode(value["content"])
                        files[value["path"]] = StoredFile(state.store(data), len(data), lfs=False)
                    elif key == "lfsFile":
                        if value["oid"] not in state.lfs_uploads:
                            self._send(422, {"error": f"LFS object {value['oid']} was never uploaded"})
                            return
                        files[value["path"]] = StoredFile(value["oid"], value["size"], lfs=True)
                    elif key == "deletedFile":
                        files.pop(value["path"], None)
                    elif key == "deletedFolder":
                        files = {p: f for p, f in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
                sha = _new_sha()
                state.repos[repo_id]["commits"][sha] = files
                state.repos[repo_id]["sha"] = sha
                state.commits.append(operations)
            self._send(200, {"commitUrl": f"{self._host()}/datasets/{repo_id}/commit/{sha}",
                             "commitOid": sha, "pullRequestUrl": None})

        # -- git-lfs: batch API -> PUT to the upload URL -> verify ----------------------------

        def lfs_batch(self, repo_id: str) -> None:
            """Hand out an upload URL per object not stored yet (a stored one needs no action)."""
            if not self._authorized():
                self._send(401, {"message": "Invalid credentials"})
                return
            if repo_id not in state.repos:
                self._send(404, {"message": "Repository not found"})
                return
            objects = []
            for obj in json.loads(self.body)["objects"]:
                if obj["oid"] not in state.lfs_uploads:
                    obj = {**obj, "actions": {
                        "upload": {"href": f"{self._host()}/lfs-upload/{obj['oid']}"},
                        "verify": {"href": f"{self._host()}/datasets/{repo_id}.git/info/lfs/objects/verify"}}}
                objects.append(obj)
            self._send(200, {"transfer": "basic", "objects": objects, "hash_algo": "sha256"})

        def lfs_upload(self, oid: str) -> None:
            """The storage behind the upload URL: keeps the bytes if they hash to the oid."""
            if hashlib.sha256(self.body).hexdigest() != oid:
                self._send(400, {"message": "content does not match the oid"})
                return
            state.store(self.body)
            state.lfs_uploads[oid] = self.body
            self._send(200, raw=b"", headers={"ETag": f'"{oid}"'})

        def lfs_verify(self, repo_id: str) -> None:
            """The client's check after the PUT: is the object stored, at its size?"""
            spec = json.loads(self.body)
            stored = state.lfs_uploads.get(spec["oid"])
            ok = stored is not None and len(stored) == spec["size"]
            self._send(200 if ok else 404, {"message": "ok" if ok else "object not uploaded"})

        # -- downloads: resolve a path at a revision to its content --------------------------

        def resolve(self, repo_id: str, revision: str, path: str) -> None:
            """A file's bytes (or a byte Range of them); LFS files also name their sha256 and size."""
            files = self._at(repo_id, revision)
            if files is None:
                return
            stored = files.get(path)
            if stored is None:
                self._not_found("EntryNotFound", "Entry not found")
                return
            data = state.read(stored.sha256)
            sha = state.repos[repo_id]["sha"] if revision == "main" else revision
            headers = {"ETag": f'"{stored.sha256[:40]}"', "X-Repo-Commit": sha, "Accept-Ranges": "bytes"}
            if stored.lfs:  # the client names the cached blob by these, as for the real Hub's LFS files
                headers |= {"X-Linked-Etag": f'"{stored.sha256}"', "X-Linked-Size": str(stored.size)}
            byte_range = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
            if byte_range:
                start, end = int(byte_range[1]), int(byte_range[2] or len(data) - 1)
                headers["Content-Range"] = f"bytes {start}-{min(end, len(data) - 1)}/{len(data)}"
                self._send(206, raw=data[start:end + 1], headers=headers)
            else:
                self._send(200, raw=data, headers=headers)

    repo, rev = r"([^/]+/[^/]+)", r"([^/]+)"
    ROUTES: list[tuple[str, str, Callable[..., None]]] = [
        ("GET", r"^/api/whoami-v2$", Handler.whoami),
        ("POST", r"^/api/validate-yaml$", Handler.validate_yaml),
        ("POST", r"^/api/repos/create$", Handler.create_repo),
        ("GET", rf"^/api/(?:datasets|models)/{repo}(?:/revision/{rev})?$", Handler.repo_info),
        ("GET", rf"^/api/(?:datasets|models)/{repo}/auth-check$", Handler.auth_check),
        ("GET", rf"^/api/(?:datasets|models)/{repo}/tree/{rev}(?:/(.*))?$", Handler.tree),
        ("POST", rf"^/api/(?:datasets|models)/{repo}/paths-info/{rev}$", Handler.paths_info),
        ("POST", rf"^/api/datasets/{repo}/preupload/{rev}$", Handler.preupload),
        ("POST", rf"^/api/datasets/{repo}/commit/{rev}$", Handler.commit),
        ("POST", rf"^/datasets/{repo}\.git/info/lfs/objects/batch$", Handler.lfs_batch),
        ("PUT", r"^/lfs-upload/([0-9a-f]{64})$", Handler.lfs_upload),
        ("POST", rf"^/datasets/{repo}\.git/info/lfs/objects/verify$", Handler.lfs_verify),
        ("GET|HEAD", rf"^/datasets/{repo}/resolve/{rev}/(.+)$", Handler.resolve),
        ("GET|HEAD", rf"^/{repo}/resolve/{rev}/(.+)$", Handler.resolve),  # a model's files
    ]
    return Handler


class HubStub(LoopbackServer):
    """`with HubStub(root, port) as hub:` serves on 127.0.0.1:port (any free port for 0) at `hub.endpoint`."""

    def __init__(self, root: Path, port: int = 0) -> None:
        self.state = HubState(root)
        super().__init__(_handler(self.state), port)

    @property
    def endpoint(self) -> str:
        return self.url

    def __enter__(self) -> "HubStub":
        self._saved_xet = _switch_xet_off(True)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _switch_xet_off(*self._saved_xet)


def _switch_xet_off(off: bool, env: Optional[str] = "1") -> tuple[bool, Optional[str]]:
    """Plain LFS instead of Xet (see the module docstring): the environment variable for a
    huggingface_hub imported later (it reads HF_ENDPOINT at import, so the stub must not import
    it before the endpoint is set), the constant for one already imported. Returns what was there."""
    constants = sys.modules.get("huggingface_hub.constants")
    before = (getattr(constants, "HF_HUB_DISABLE_XET", False), os.environ.get("HF_HUB_DISABLE_XET"))
    if env is None:
        os.environ.pop("HF_HUB_DISABLE_XET", None)
    else:
        os.environ["HF_HUB_DISABLE_XET"] = env
    if constants is not None:
        constants.HF_HUB_DISABLE_XET = off
    return before
