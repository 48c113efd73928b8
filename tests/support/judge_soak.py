"""The judge soak's accounting, shared by its test (a few hundred verdicts) and its benchmark (thousands,
`benchmarks.soak.judge_soak`): distinct answers scored through the real `openai` judge backend against an endpoint
(the fault stand-in of `tests/support/fault_stub.py`, or a real `vllm serve`), each row counted as a valid verdict,
a row error by cause, or lost; the scoring in a fresh process (its own peak RSS; killable); and a kill half way
followed by a rerun on the same judge cache."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

from llm_engineering.evaluation import columns as col
from tests.support.fault_stub import TIMEOUT_S, FaultLog, FaultServer

ROOT = Path(__file__).resolve().parents[2]  # the judging process imports this module from the repository root


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

    from llm_engineering.evaluation.config import EndpointConfig, JudgeConfig
    from llm_engineering.evaluation.judging.cache import JudgeCache
    from llm_engineering.evaluation.judging.judge import Judge
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.infrastructure.openai_judge import OpenAIJudge

    config = JudgeConfig(backend="openai", model=model, max_tokens=max_tokens, rubric="handbook",
                         endpoint=EndpointConfig(base_url=base_url, max_concurrency=concurrency, max_attempts=6,
                                                 timeout_s=TIMEOUT_S if model == "soak" else 300, max_backoff_s=0.5))
    rows = Dataset.from_dict({
        col.ID: [f"q{i}" for i in range(n)], col.INSTRUCTION: [f"Question {i}: what does step {i} do?" for i in range(n)],
        col.ANSWER: [f"Step {i} loads the split." for i in range(n)], col.MODEL_ID: ["soak"] * n,
    })
    cache = JudgeCache(cache_dir) if cache_dir is not None else None
    started = time.perf_counter()
    try:
        evaluations = score_answers(rows, Judge((OpenAIJudge(config),), config.resolved_rubric(), cache))
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
    code = "from tests.support.judge_soak import child; child()"  # run from ROOT: `-c` puts it on the path
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
    """`judge_rows` in a fresh process, waited for: its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        process = _child(n, base_url, concurrency, cache_dir, out, **options)
        if process.wait() != 0:
            log = out.with_suffix(".log").read_text()[-3000:]
            raise RuntimeError(f"the judging process failed ({process.returncode}):\n{log}")
        return json.loads(out.read_text())


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

