"""Opik logging: silent when not configured; traces, scores, dataset and experiment when pointed at a server."""

import gzip
import json
import logging
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.infrastructure import opik_tracking
from llm_engineering.settings import Settings
from tests.support.judges import GOOD, ScriptedJudge, answers
from tests.support.loopback import LoopbackServer

HANDBOOK = load_rubric("handbook")


def test_not_configured_sends_nothing(monkeypatch):
    monkeypatch.setattr(opik_tracking, "_client", lambda settings: (_ for _ in ()).throw(AssertionError("contacted")))
    evaluations = score_answers(answers(2), Judge((ScriptedJudge([GOOD, GOOD]),), HANDBOOK))
    assert opik_tracking.log_scoring(evaluations, HANDBOOK, Settings(_env_file=None), "exp") is None


class FakeOpik(ThreadingHTTPServer):
    """A real HTTP server playing the Opik REST routes `log_scoring` uses (opik 2.2.x), so the
    real client runs its whole path, and keeping what it was sent: (method, route, JSON body).
    Any other route gets a 404, as on a real server, and lands in `unserved`: then this fake
    no longer covers what the installed client does."""

    daemon_threads = True
    FIXED = {  # replies that do not depend on what was sent
        ("GET", "/is-alive/ping"): (200, {}),  # the client's connection monitor: a failed ping parks its queue
        ("GET", "/is-alive/ver"): (200, {"version": "2.2.8"}),  # new enough for the parallel dataset upload
        ("GET", "/v1/private/auth/workspace"): (200, {"workspace_name": "default"}),  # for the logged URLs
        ("POST", "/v1/private/traces/batch"): (204, None),
        ("PUT", "/v1/private/traces/feedback-scores"): (204, None),
        ("POST", "/v1/private/experiments"): (201, None),
        ("POST", "/v1/private/experiments/items"): (204, None),
    }

    def __init__(self, address, handler):
        super().__init__(address, handler)
        self.calls, self.unserved = [], []
        self.datasets = {}  # name -> {"id": ..., "items": [...]}

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def sent(self, method, route):
        return [body for m, r, body in self.calls if (m, r) == (method, route)]

    def answer(self, method, route, body):
        """(status, JSON reply or None) for one call: the backend's answers, none of its checks."""
        dataset_route = route.split("/")[4:] if route.startswith("/v1/private/datasets/") else []
        if (method, route) in self.FIXED:
            return self.FIXED[method, route]
        if (method, route) == ("POST", "/v1/private/projects/retrieve"):
            return 200, {"id": "00000000-0000-0000-0000-000000000001", "name": body["name"]}
        if (method, route) == ("POST", "/v1/private/datasets/retrieve"):
            dataset = self.datasets.get(body["dataset_name"])
            return (200, {"id": dataset["id"], "name": body["dataset_name"]}) if dataset else (404, {"errors": ["not found"]})
        if (method, route) == ("POST", "/v1/private/datasets"):
            self.datasets[body["name"]] = {"id": str(uuid.uuid4()), "items": []}
            return 201, None
        if (method, route) == ("PUT", "/v1/private/datasets/items"):
            self.datasets[body["dataset_name"]]["items"] += body["items"]
            return 204, None
        if method == "GET" and dataset_route[1:] == ["versions"]:
            return 200, {"content": [], "page": 1, "size": 0, "total": 0}  # versioning off: read live items
        if method == "GET" and dataset_route[1:] == ["items"]:
            [items] = [d["items"] for d in self.datasets.values() if d["id"] == dataset_route[0]]
            return 200, {"content": items, "page": 1, "size": len(items), "total": len(items)}
        self.unserved.append(f"{method} {route}")
        return 404, {"errors": ["not served"]}


class FakeOpikHandler(BaseHTTPRequestHandler):
    """Decodes each call (the client gzips large bodies), records it on its server, sends the server's answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        raw = gzip.decompress(raw) if raw.startswith(b"\x1f\x8b") else raw
        body = json.loads(raw) if raw else None
        route = urlsplit(self.path).path
        self.server.calls.append((self.command, route, body))
        status, reply = self.server.answer(self.command, route, body)
        payload = json.dumps(reply).encode() if reply is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


@pytest.fixture
def opik_server():
    """One server per test, so recorded calls never leak between tests."""
    with LoopbackServer(FakeOpikHandler, server_class=FakeOpik) as loopback:
        yield loopback.server


def test_configured_opik_receives_traces_scores_dataset_and_experiment(opik_server, caplog):
    caplog.set_level(logging.WARNING, logger=opik_tracking.logger.name)
    settings = Settings(_env_file=None, OPIK_URL_OVERRIDE=opik_server.url)
    evaluations = score_answers(answers(3), Judge((ScriptedJudge([GOOD, GOOD, "broken"]),), HANDBOOK))

    assert opik_tracking.log_scoring(evaluations, HANDBOOK, settings, "exp") == 3
    assert not [r for r in caplog.records if "Opik logging failed" in r.getMessage()]
    assert opik_server.unserved == []

    traces = [t for batch in opik_server.sent("POST", "/v1/private/traces/batch") for t in batch["traces"]]
    trace_of = {t["metadata"]["row_id"]: t["id"] for t in traces}
    assert sorted(trace_of) == ["r0", "r1", "r2"] and len(traces) == 3

    scores = [s for batch in opik_server.sent("PUT", "/v1/private/traces/feedback-scores") for s in batch["scores"]]
    names_of = {row: sorted(s["name"] for s in scores if s["id"] == trace) for row, trace in trace_of.items()}
    assert names_of == {"r0": ["accuracy", "style"], "r1": ["accuracy", "style"], "r2": []}  # "broken" has no verdict

    [created] = opik_server.sent("POST", "/v1/private/datasets")
    assert created["name"] == "exp-rows"
    items = opik_server.datasets["exp-rows"]["items"]
    item_of = {item["data"]["row_id"]: item["id"] for item in items}
    assert sorted(item_of) == ["r0", "r1", "r2"] and len(items) == 3

    [experiment] = opik_server.sent("POST", "/v1/private/experiments")
    assert (experiment["name"], experiment["dataset_name"]) == ("exp", "exp-rows")
    links = [i for batch in opik_server.sent("POST", "/v1/private/experiments/items") for i in batch["experiment_items"]]
    assert len(links) == 3 and all(link["experiment_id"] == experiment["id"] for link in links)
    assert {link["dataset_item_id"]: link["trace_id"] for link in links} == {item_of[r]: trace_of[r] for r in trace_of}
