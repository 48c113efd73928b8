"""Judge soak: thousands of verdicts through the `openai` judge backend while its endpoint misbehaves.

A loopback server speaking the OpenAI chat API answers every request, but injects faults at set rates: 429 with
Retry-After, 500 and 503, a connection reset in the middle of a reply, a reply slower than the client's timeout,
a reply that is not JSON, a score off the rubric's scale. Every request must end as a valid verdict or a row error
(`lost` counts those that end as neither: it must be 0). Reported: verdicts, row errors by cause, retries per
verdict, throughput and the peak RSS of the judging process (each size in a fresh process, so its peak is its
own). Then a SIGKILL half way through and a rerun on the same judge cache: the rerun must send only the prompts
whose verdicts the killed run had not stored. The server and the accounting are test support
(`tests/support/fault_stub.py`, `tests/support/judge_soak.py`): the integration test runs the same on a few hundred.

    .venv/bin/python -m benchmarks.soak.judge_soak                   # 5,000 verdicts at concurrency 32, faults on
    .venv/bin/python -m benchmarks.soak.judge_soak --served --verdicts 1000 --concurrency 64   # a real `vllm serve`
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import click

from benchmarks import RESULTS
from tests.support.fault_stub import FAULTS, FaultLog, FaultServer
from tests.support.judge_soak import kill_and_resume, run_child


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
@click.option("--out", type=click.Path(path_type=Path), default=RESULTS / "judge_soak.json",
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
