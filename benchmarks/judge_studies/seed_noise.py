"""How often `--fail-on-regression` fires on noise: runs that differ only in their sampling seed, each compared with
the first, counted with and without Holm's correction.

Eleven `evaluate` runs of the embedded split with the default sampling (temperature 0.8), seeds 0-10, the judge
check off; runs 1-10 each `--compare-to` run 0. Every difference between them is noise, so every flag is a false
alarm. Reported per comparison: the metrics whose 95% interval lies below zero (the gate before the correction)
and those that pass Holm's correction (the gate now).

    .venv/bin/python -m benchmarks.judge_studies.seed_noise [--judge auto] [--runs 11] [--limit N]
        # writes benchmarks/results/seed_noise_<judge>.json
"""

from __future__ import annotations

import json
import platform
import tempfile
import time
from pathlib import Path

import click
import yaml

from benchmarks import RESULTS


def _cpu_flags() -> list[str]:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return sorted({f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in text})


def _evaluate(runner, main, config: Path, *extra: str) -> dict:
    result = runner.invoke(main, ["evaluate", "--config", str(config), *extra], catch_exceptions=False)
    if result.exit_code not in (0, 3):
        raise SystemExit(f"evaluate failed (exit {result.exit_code}):\n{result.output[-3000:]}")
    line = next(line for line in result.stdout.splitlines() if line.startswith("JSON report:"))
    return json.loads(Path(line.split(":", 1)[1].strip()).read_text())


@click.command()
@click.option("--runs", default=11, show_default=True, help="runs, seeds 0..runs-1; each after the first compared with it")
@click.option("--limit", type=int, default=None, help="rows of the embedded split (default: all 48)")
@click.option("--judge", default="auto", show_default=True,
              help="judge.model: auto (the default judge), smollm2-135m (cheap: shares the generator's engine)...")
def main(runs: int, limit: int | None, judge: str) -> None:
    from click.testing import CliRunner

    from tools.run import main as cli

    runner, started = CliRunner(), time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="seed-noise-"))
    comparisons, first = [], None
    for seed in range(runs):
        config = folder / f"seed{seed}.yaml"
        config.write_text(yaml.safe_dump({"parameters": {
            "dataset": {"limit": limit}, "sampling": {"seed": seed},
            "judge": {"model": judge}, "judge_check": {"rows": 0},
        }}))
        report = _evaluate(runner, cli, config, *(["--compare-to", first] if first else []))
        if first is None:
            first = report["run"]
            continue
        metrics = report["comparison"]["metrics"]
        comparisons.append({
            "seed": seed, "run": report["run"], "metrics_tested": report["comparison"]["tested"],
            "worse_uncorrected": [m["metric"] for m in metrics if m["ci"] and m["ci"][1] < 0],
            "regressed_holm": [m["metric"] for m in metrics if m["regressed"]],
            "p_values": {m["metric"]: m["p_value"] for m in metrics},
        })
        print(f"seed {seed}: interval below zero {comparisons[-1]['worse_uncorrected']}, after Holm "
              f"{comparisons[-1]['regressed_holm']}", flush=True)
    fired = sum(bool(c["worse_uncorrected"]) for c in comparisons)
    fired_holm = sum(bool(c["regressed_holm"]) for c in comparisons)
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(), "flags": _cpu_flags()}, "judge": judge,
        "first_run": first, "comparisons": comparisons,
        "fired_without_correction": fired, "fired_with_holm": fired_holm,
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = RESULTS / f"seed_noise_{judge}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"--fail-on-regression fired in {fired} of {len(comparisons)} comparisons without correction, "
          f"{fired_holm} with Holm's ({result['seconds']:.0f} s); {out}")


if __name__ == "__main__":
    main()
