"""What a test session pays for, in the summary's last lines: every vLLM engine started, in this process or any
other (a CLI subprocess, a Ray replica, `vllm serve`), and every pipeline run of the session's store."""

import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

ENGINE_CORE = "VLLM::EngineCor"  # the name vLLM gives each engine core's process, as /proc keeps it (15 characters)
# In the environment of a process that a test names as an engine core without being one (test_engine_lifetime.py's
# stand-ins): the census leaves it out, so a session without engines counts none.
STAND_IN = "LLM_EVAL_ENGINE_STAND_IN"


def _read(path: str) -> str:
    try:
        with open(path, "rb") as file:
            return file.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _starter(parent: int) -> str:
    """Who started an engine core: this process, or the program its parent runs (`tools/run.py`, a Ray worker...)."""
    if parent == os.getpid():
        return "this process"
    words = _read(f"/proc/{parent}/cmdline").split()
    if any(word.startswith("ray::") for word in words) or _read(f"/proc/{parent}/comm").startswith("ray::"):
        return "a Ray replica"
    if "serve" in words or any("openai.api_server" in word for word in words):
        return "vllm serve"
    if any(word.endswith("tools/run.py") for word in words):
        return "a CLI subprocess"
    return "another process"


class EngineCensus:
    """Every vLLM engine the session starts, whichever process starts it. Engines built through the engine pool, in
    this process or a CLI subprocess, in-process or not, append a line to `ledger` (the pool's `ENGINE_LEDGER`, with
    their start's seconds); the others (Ray replicas, `vllm serve`) are seen by their engine core's process, named
    `VLLM::EngineCore`: /proc is read every `interval` seconds (such an engine lives for tens of seconds)."""

    def __init__(self, ledger: Path, interval: float = 0.5):
        self.ledger, self.interval = ledger, interval
        self.engines: dict[int, list] = {}  # engine core pid -> [starter, first seen, last seen, parent pid]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="engine-census", daemon=True)

    def __enter__(self) -> "EngineCensus":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit() or _read(f"/proc/{entry.name}/comm") != ENGINE_CORE:
                    continue
                pid = int(entry.name)
                if pid in self.engines:
                    self.engines[pid][2] = now
                elif f"{STAND_IN}=1" not in _read(f"/proc/{pid}/environ").split():
                    stat = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
                    parent = int(stat[1]) if len(stat) > 1 else 0
                    self.engines[pid] = [_starter(parent) if parent else "another process", now, now, parent]
            self._stop.wait(self.interval)

    def lines(self, test_processes: set[int]) -> list[str]:
        """The summary's lines; `test_processes`: the pids that ran the tests (this one, or its xdist workers)."""
        builds = [json.loads(line) for line in self.ledger.read_text().splitlines()] if self.ledger.exists() else []
        by_whom: dict[str, list[float]] = defaultdict(list)
        for build in builds:
            where = "the test process" if build["pid"] in test_processes else "a CLI subprocess"
            by_whom[f"{where}, {'in process' if build['in_process'] else 'its own processes'}"].append(build["seconds"])
        seen: dict[str, list[float]] = defaultdict(list)
        pool_builders = {build["pid"] for build in builds}
        for starter, first, last, parent in self.engines.values():
            if parent in pool_builders:  # the pool's engines are in the ledger
                continue
            if starter == "a CLI subprocess":  # an engine the ledger does not know: a CLI of an earlier version
                starter = "a CLI subprocess, not in the ledger"
            seen[starter].append(last - first)
        total = sum(map(len, by_whom.values())) + sum(map(len, seen.values()))
        parts = [f"{whom} {len(s)} ({sum(s):.0f} s to start)" for whom, s in sorted(by_whom.items())]
        parts += [f"{starter} {len(s)} ({sum(s):.0f} s alive)" for starter, s in sorted(seen.items())]
        lines = [f"vLLM engines started in this session, any process: {total}" + (": " + "; ".join(parts) if parts else "")]
        # In order: a test that needs another engine than the one held makes the next test that needs the first rebuild it.
        for pid in sorted(test_processes):
            own = [build for build in builds if build["pid"] == pid]
            if own:
                lines.append(f"Built in the test process {pid}, in order: "
                             + ", ".join(f"{b['model']} {b['seconds']:.0f} s" for b in own))
        return lines


def pipeline_runs(zenml_config: Path) -> list[tuple[str, Optional[float]]]:
    """The pipeline runs in the store under `zenml_config` (the session's), each as its pipeline's name and its
    seconds (None for a run that did not end); runs in stores of a test's own are not counted."""
    if not any(zenml_config.rglob("*.db")):
        return []
    from zenml.client import Client

    return [(run.pipeline.name if run.pipeline else "?",
             (run.end_time - run.start_time).total_seconds() if run.start_time and run.end_time else None)
            for run in Client().list_pipeline_runs(size=1000, hydrate=True).items]


def pipeline_run_lines(runs: list[tuple[str, Optional[float]]]) -> list[str]:
    """The summary's line of `runs` (`pipeline_runs`, an xdist worker's each): how many, their seconds, per pipeline."""
    if not runs:
        return ["Pipeline runs in the session's store: none"]
    by_pipeline: dict[str, list[Optional[float]]] = defaultdict(list)
    for name, seconds in runs:
        by_pipeline[name].append(seconds)
    total = sum(s for _, s in runs if s is not None)
    return [f"Pipeline runs in the session's store: {len(runs)}, {total:.0f} s: "
            + ", ".join(f"{name} {len(lives)}, {sum(s for s in lives if s is not None):.0f} s"
                        for name, lives in sorted(by_pipeline.items()))]
