"""What a test session pays for, in the summary's last lines: every vLLM engine started, in this process or any
other (a CLI subprocess, a Ray replica, `vllm serve`), and every pipeline run of the session's store."""

import os
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

ENGINE_CORE = "VLLM::EngineCor"  # the name vLLM gives each engine core's process, as /proc keeps it (15 characters)


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
    """Every vLLM engine core that starts while it watches, whichever process starts it: /proc is read every
    `interval` seconds (an engine lives for tens of seconds, the scan costs milliseconds)."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.engines: dict[int, list] = {}  # engine core pid -> [starter, first seen, last seen]
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
                else:
                    stat = _read(f"/proc/{pid}/stat").rsplit(")", 1)[-1].split()
                    self.engines[pid] = [_starter(int(stat[1])) if len(stat) > 1 else "another process", now, now]
            self._stop.wait(self.interval)

    def lines(self) -> list[str]:
        if not self.engines:
            return ["vLLM engines started in this session: none"]
        by_starter: dict[str, list[float]] = defaultdict(list)
        for starter, first, last in self.engines.values():
            by_starter[starter].append(last - first)
        total = sum(len(lives) for lives in by_starter.values())
        return [f"vLLM engines started in this session, any process: {total}; by whom (count, seconds alive): "
                + "; ".join(f"{starter} {len(lives)}, {sum(lives):.0f} s"
                            for starter, lives in sorted(by_starter.items(), key=lambda item: -len(item[1])))]


def pipeline_run_lines(zenml_config: Path) -> list[str]:
    """The pipeline runs in the session's ZenML store, with their seconds (runs in stores of a test's own not counted)."""
    if not any(zenml_config.rglob("*.db")):
        return ["Pipeline runs in the session's store: none"]
    from zenml.client import Client

    runs = Client().list_pipeline_runs(size=1000, hydrate=True).items
    by_pipeline: dict[str, list[Optional[float]]] = defaultdict(list)
    for run in runs:
        start, end = run.start_time, run.end_time
        by_pipeline[run.pipeline.name if run.pipeline else "?"].append(
            (end - start).total_seconds() if start and end else None)
    seconds = [s for lives in by_pipeline.values() for s in lives if s is not None]
    return [f"Pipeline runs in the session's store: {len(runs)}, {sum(seconds):.0f} s: "
            + ", ".join(f"{name} {len(lives)}, {sum(s for s in lives if s is not None):.0f} s"
                        for name, lives in sorted(by_pipeline.items()))]
