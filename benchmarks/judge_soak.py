"""Judge soak: thousands of verdicts through the `openai` judge backend while its endpoint misbehaves.

A loopback server speaking the OpenAI chat API answers every request, but injects faults at set rates: 429 with
Retry-After, 500 and 503, a connection reset in the middle of a reply, a reply slower than the client's timeout,
a reply that is not JSON, a score off the rubric's scale. Every request must end as a valid verdict or a row error
(`lost` counts those that end as neither: it must be 0). Reported: verdicts, row errors by cause, retries per
verdict, throughput and the peak RSS of the judging process (each size in a fresh process, so its peak is its
own). Then a SIGKILL half way through and a rerun on the same judge cache: the rerun must send only the prompts
whose verdicts the killed run had not stored.

    .venv/bin/python benchmarks/judge_soak.py                         # 5,000 verdicts at concurrency 32, faults on
    .venv/bin/python benchmarks/judge_soak.py --served --verdicts 1000 --concurrency 64   # a real `vllm serve`
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_engineering.evaluation import columns as col  # noqa: E402
from tests.support.loopback import JSONHandler  # noqa: E402  (the stand-ins' handler base)

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


class FaultServer:
    """`with FaultServer(log) as server: server.base_url` (`http://127.0.0.1:PORT/v1`; any free port for 0). The
    port is part of the judge's cache key (its endpoint), so a rerun that must find the cache uses the same one."""

    def __init__(self, log: FaultLog, port: int = 0) -> None:
        self.log = log
        self.server = _Server(("127.0.0.1", port), fault_handler(log))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FaultServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def error_cause(error: str) -> str:
    """A row error's cause, in a few words: the reply's problem, or the request's last failure after its retries."""
    if error.startswith("invalid JSON"):
        return "reply not JSON"
    if "less than or equal" in error or "greater than or equal" in error:
        return "score off the scale"
    failed = re.match(r"request failed after \d+ attempt\(s\): ([^:]+):", error)
    return f"{failed.group(1)} after every retry" if failed else error[:80]


def judge_rows(n: int, base_url: str, concurrency: int, cache_dir: Optional[Path], model: str = "soak",
               max_tokens: int = 384) -> dict[str, Any]:
    """Score `n` distinct answers through the `openai` backend at `base_url`: the soak's accounting."""
    from datasets import Dataset

    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.judging.cache import JudgeCache
    from llm_engineering.evaluation.judging.judge import Judge
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.infrastructure.openai_judge import OpenAIJudge

    config = JudgeConfig(backend="openai", model=model, base_url=base_url, max_concurrency=concurrency,
                         timeout_s=TIMEOUT_S if model == "soak" else 300, max_attempts=6, max_backoff_s=0.5,
                         max_tokens=max_tokens, rubric="handbook")
    rows = Dataset.from_dict({
        col.ID: [f"q{i}" for i in range(n)], col.INSTRUCTION: [f"Question {i}: what does step {i} do?" for i in range(n)],
        col.ANSWER: [f"Step {i} loads the split." for i in range(n)], col.MODEL_ID: ["soak"] * n,
    })
    cache = JudgeCache(cache_dir) if cache_dir is not None else None
    started = time.perf_counter()
    try:
        evaluations = score_answers(rows, Judge((OpenAIJudge(config, "sk-soak"),), config.resolved_rubric(), cache))
    finally:
        if cache is not None:
            cache.close()
    seconds = time.perf_counter() - started
    errors = [e for e in evaluations[col.JUDGE_ERROR] if e is not None]
    scored = sum(e is None and s is not None for e, s in zip(evaluations[col.JUDGE_ERROR], evaluations[col.score("accuracy")]))
    return {
        "verdicts": n, "valid": scored, "row_errors": len(errors), "errors_by_cause": dict(Counter(map(error_cause, errors))),
        "lost": n - scored - len(errors) + (n - len(evaluations)), "seconds": round(seconds, 1),
        "verdicts_per_s": round(n / seconds, 1), "cached": sum(evaluations[col.JUDGE_CACHED]),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _child(n: int, base_url: str, concurrency: int, cache_dir: Optional[Path], out: Path, **options: Any) -> subprocess.Popen:
    """`judge_rows` in a fresh process (its own peak RSS; killable), its figures written to `out`."""
    spec = {"n": n, "base_url": base_url, "concurrency": concurrency, "cache_dir": str(cache_dir) if cache_dir else None,
            "out": str(out), "options": options}
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks.judge_soak import child; child()"
    with open(out.with_suffix(".log"), "w") as log:  # a file, not a pipe: nothing blocks on a full pipe
        return subprocess.Popen([sys.executable, "-c", code, json.dumps(spec)], cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, env={**os.environ, "TQDM_DISABLE": "1"})


def child() -> None:
    """The judging process `_child` starts: its spec is the first argument."""
    spec = json.loads(sys.argv[1])
    figures = judge_rows(spec["n"], spec["base_url"], spec["concurrency"],
                         Path(spec["cache_dir"]) if spec["cache_dir"] else None, **spec["options"])
    Path(spec["out"]).write_text(json.dumps(figures))


def run_child(n: int, base_url: str, concurrency: int, cache_dir: Optional[Path], **options: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        process = _child(n, base_url, concurrency, cache_dir, out, **options)
        if process.wait() != 0:
            log = out.with_suffix(".log").read_text()[-3000:]
            raise RuntimeError(f"the judging process failed ({process.returncode}):\n{log}")
        return json.loads(out.read_text())


def soak(n: int, concurrency: int, seed: int = 0) -> dict[str, Any]:
    """The fault soak at `n` verdicts (and at a fifth of them, to see whether memory grows with `n`)."""
    results = {}
    for size in (max(1, n // 5), n):
        log = FaultLog(seed=seed)
        with FaultServer(log) as server:
            figures = run_child(size, server.base_url, concurrency, None)
        faults = Counter(fault or "valid" for _, fault in log.requests)
        figures.update(requests=len(log.requests), retries_per_verdict=round(len(log.requests) / size - 1, 3),
                       faults_injected=dict(faults))
        results[str(size)] = figures
    return results


def kill_and_resume(n: int, concurrency: int, seed: int = 0) -> dict[str, Any]:
    """SIGKILL the judging process once half the verdicts are answered, then rerun it on the same cache: the
    rerun must ask exactly the prompts whose verdicts were not stored, and end with every row accounted for."""
    from llm_engineering.evaluation.judging.cache import JudgeCache

    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(tmp) / "cache"
        first = FaultLog(seed=seed)
        with FaultServer(first) as server:
            process = _child(n, server.base_url, concurrency, cache_dir, Path(tmp) / "killed.json")
            while first.answered() < n // 2 and process.poll() is None:
                time.sleep(0.01)
            process.send_signal(signal.SIGKILL)
            process.wait()
        cache = JudgeCache(cache_dir)
        stored = len(cache)
        cache.close()
        second = FaultLog(seed=seed + 1)
        with FaultServer(second, port=server.server.server_address[1]) as server:
            figures = run_child(n, server.base_url, concurrency, cache_dir)
        answered_before = {prompt for prompt, fault in first.requests if fault is None}
        asked_again = {prompt for prompt, _ in second.requests}
        return {
            "verdicts": n, "killed_after_valid_replies": first.answered(), "stored_before_kill": stored,
            "asked_in_rerun": len(asked_again), "missing_before_rerun": n - stored,
            # in flight at the kill: answered by the server, not yet stored by the client, so rightly asked again
            "answered_but_not_stored": len(asked_again & answered_before),
            "rerun": figures,
        }


def cpu_description() -> str:
    """This machine's CPU model, cores and the flags that decide CPU settings (every figure names them)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    field = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in info.splitlines()[:30])}
    named = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in info]
    return (f"{field.get('model name', platform.processor())} (family {field.get('cpu family', '?')}, model "
            f"{field.get('model', '?')}), {os.cpu_count()} cores, {' '.join(named)}")


@click.command()
@click.option("--verdicts", default=5000, show_default=True)
@click.option("--concurrency", default=32, show_default=True)
@click.option("--served", is_flag=True, help="Against a real `vllm serve` of the embedded model, no injected faults.")
@click.option("--out", type=click.Path(path_type=Path), default=ROOT / "benchmarks" / "results" / "judge_soak.json",
              show_default=True)
def main(verdicts: int, concurrency: int, served: bool, out: Path) -> None:
    result: dict[str, Any] = {"cpu": cpu_description(), "concurrency": concurrency}
    if served:
        from llm_engineering.evaluation.models import resolve_model
        from llm_engineering.infrastructure.vllm_server import vllm_server
        from llm_engineering.settings import get_settings

        model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
        with tempfile.TemporaryDirectory() as tmp, vllm_server(model.path, "smollm2-135m", Path(tmp) / "serve.log") as url:
            result["served"] = run_child(verdicts, url, concurrency, None, model="smollm2-135m", max_tokens=96)
        out = out.with_name(out.stem + "_served.json")
    else:
        result["faults"] = FAULTS
        result["soak"] = soak(verdicts, concurrency)
        result["kill_and_resume"] = kill_and_resume(verdicts, concurrency)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    click.echo(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
