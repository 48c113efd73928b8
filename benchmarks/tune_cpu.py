"""Measure vLLM CPU engine settings on the generation workload, one variant per process.

    .venv/bin/python benchmarks/tune_cpu.py [NAME ...]   (only variants whose name contains NAME)

Each variant changes one setting from the pipeline's defaults; the table goes into
benchmarks/README.md. Writes benchmarks/results/tune_cpu.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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


def main() -> None:
    rows = []
    for name, overrides in selected(sys.argv[1:]).items():
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "generation.py"), "--engine", "vllm",
             "--engine-config", json.dumps(overrides)],
            capture_output=True, text=True, env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"},
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
    (ROOT / "benchmarks" / "results").mkdir(parents=True, exist_ok=True)
    suffix = "" if len(sys.argv) == 1 else "_" + "_".join(a.replace(" ", "-") for a in sys.argv[1:])
    (ROOT / "benchmarks" / "results" / f"tune_cpu{suffix}.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
