"""Measure vLLM CPU engine settings on the generation workload, one variant per process.

    .venv/bin/python -m benchmarks.performance.tune_cpu [NAME ...]   (only variants whose name contains NAME)

Each variant changes one setting from the pipeline's defaults; the table goes into
benchmarks/README.md. Writes benchmarks/results/tune_cpu.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import click

from benchmarks import RESULTS, ROOT

VARIANTS = {
    "defaults (fp32, eager, all cores, prefix caching and chunked prefill as vLLM decides)": {},
    "one core (VLLM_CPU_OMP_THREADS_BIND=0)": {"cpu_threads": "0"},
    "max_num_seqs=16": {"max_num_seqs": 16},
    "prefix caching off": {"enable_prefix_caching": False},
    "prefix caching on": {"enable_prefix_caching": True},
    "chunked prefill off": {"enable_chunked_prefill": False},
    "compiled (torch inductor) instead of eager": {"enforce_eager": False},
}


def selected(names: list[str]) -> dict[str, dict]:
    """All variants, or those whose name contains one of `names` (the defaults row always runs)."""
    first = next(iter(VARIANTS))
    return {k: v for k, v in VARIANTS.items() if not names or k == first or any(n in k for n in names)}


@click.command()
@click.argument("names", nargs=-1)
def main(names: tuple[str, ...]) -> None:
    """Run every variant, or only those whose name contains one of NAMES (the defaults row always runs)."""
    rows = []
    for name, overrides in selected(list(names)).items():
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.performance.generation", "--engine", "vllm",
             "--engine-config", json.dumps(overrides)],
            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"},
        )
        line = next((text for text in out.stdout.splitlines() if text.startswith("RESULT ")), None)
        if line is None:
            print(f"{name}: failed\n{out.stderr[-1500:]}", file=sys.stderr)
            continue
        result = json.loads(line[7:])
        rows.append({"variant": name, **overrides, **result, "process_wall_s": round(time.perf_counter() - started, 1)})
        print(f"{name}: {result['output_tok_per_s']} tok/s", file=sys.stderr)
    print("| variant | output tok/s | time to first result (s) | process wall incl. engine start (s) |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['output_tok_per_s']} | {r['time_to_first_result_s']} | {r['process_wall_s']} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "".join("_" + a.replace(" ", "-") for a in names)
    (RESULTS / f"tune_cpu{suffix}.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
