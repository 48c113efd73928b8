"""Opik logging: silent when not configured; traces with scores when pointed at a server."""

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


from llm_engineering.evaluation.scoring import score_answers
from llm_engineering.infrastructure import opik_tracking
from llm_engineering.settings import Settings
from tests.unit.test_judge import GOOD, ScriptedJudge, answers
from llm_engineering.evaluation.rubric import load_rubric

HANDBOOK = load_rubric("handbook")


def test_not_configured_sends_nothing(monkeypatch):
    monkeypatch.setattr(opik_tracking, "_client", lambda settings: (_ for _ in ()).throw(AssertionError("contacted")))
    evaluations = score_answers(answers(2), [ScriptedJudge([GOOD, GOOD])], HANDBOOK)
    assert opik_tracking.log_scoring(evaluations, HANDBOOK, Settings(_env_file=None), "exp") is None


class Recorder(BaseHTTPRequestHandler):
    """Answers every Opik REST call with an empty success and records what was sent."""

    received: list = []
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if body.startswith(b"\x1f\x8b"):
            body = gzip.decompress(body)
        Recorder.received.append((self.command, self.path, body))
        payload = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = _reply


def test_configured_opik_receives_a_trace_per_row_with_scores():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        settings = Settings(_env_file=None, OPIK_URL_OVERRIDE=f"http://127.0.0.1:{server.server_address[1]}")
        evaluations = score_answers(answers(3), [ScriptedJudge([GOOD, GOOD, "broken"])], HANDBOOK)
        logged = opik_tracking.log_scoring(evaluations, HANDBOOK, settings, "exp")
    finally:
        server.shutdown()
    sent = b"".join(body for method, path, body in Recorder.received if "traces" in path)
    assert logged in (0, 3)  # 0: the stub cannot play the dataset/experiment part; traces go first
    for row_id in (b"r0", b"r1", b"r2"):
        assert b'"row_id":"' + row_id + b'"' in sent.replace(b" ", b"")
    scores = b"".join(body for method, path, body in Recorder.received if "feedback-scores" in path)
    assert scores.count(b"\"name\":\"accuracy\"") + scores.count(b"\"name\": \"accuracy\"") == 2  # the broken reply has none
