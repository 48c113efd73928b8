"""What the judge costs against generation, per setting and per CPU kind, with the report card's figures beside each:
the default run itself (`tools/run.py evaluate` on the embedded split, every cache cold: step cache, answers'
checkpoints, the judge's verdicts), one run per setting and CPU kind, in one invocation on one machine.

    .venv/bin/python -m benchmarks.performance.judge_cost [--setting default --setting ...] [--cpu native --cpu avx2]
        [--out benchmarks/results/judge_cost.json]      (or `make bench-judge-cost`)

CPU kinds: `native` (this CPU as it is) and `avx2` (this CPU held to AVX2, as far as the engine allows:
benchmarks/performance/avx2_path). A setting is the default run config with the changes `SETTINGS` gives (a rubric, the
card's size, the judge's engine...). Per run: each step's seconds (from the run's ZenML store), the judge stages
(evaluate_answers and check_trust) over generate_answers, the judge's tokens, and every tier of the card (the judge's
figure, the best rule's, the paired test's outcome). Prints a markdown table and writes the JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import yaml

from benchmarks import RESULTS, ROOT

# Each a change of the default run config's `parameters` (configs/evaluating.yaml): what the table compares.
SETTINGS: dict[str, dict[str, Any]] = {
    "auto": {},  # the default run as it is: judge.model auto chooses per CPU
    "1.5b": {"judge": {"model": "qwen2.5-coder-1.5b"}},  # in the CPU's dtype: bf16 where native and faster, else fp32
    "1.5b-int8": {"judge": {"model": "qwen2.5-coder-1.5b-int8"}},  # int8 weights and activations (W8A8)
}
CPU_KINDS = {"native": {}, "avx2": {"PYTHONPATH": str(ROOT / "benchmarks" / "performance" / "avx2_path")}}
JUDGE_STEPS = ("evaluate_answers", "check_trust")
_STEP_TIMES = """
import json, sys
from zenml.client import Client
run = Client().get_pipeline_run(sys.argv[1])
print(json.dumps({name: (s.end_time - s.start_time).total_seconds() for name, s in run.steps.items()
                  if s.start_time and s.end_time}))
"""


def _deep_merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in change.items():
        merged[key] = _deep_merge(merged.get(key) or {}, value) if isinstance(value, dict) else value
    return merged


def _config(setting: str, folder: Path) -> Path:
    base = yaml.safe_load((ROOT / "configs" / "evaluating.yaml").read_text()) or {}
    base["parameters"] = _deep_merge(base.get("parameters") or {}, SETTINGS[setting])
    path = folder / f"{setting}.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def run_one(setting: str, cpu: str) -> dict[str, Any]:
    """The default run under `setting` on CPU kind `cpu`, cold, in a store of its own: its steps' seconds and card."""
    folder = Path(tempfile.mkdtemp(prefix=f"judge-cost-{setting}-{cpu}-"))
    env = {**os.environ, **CPU_KINDS[cpu], "ZENML_CONFIG_PATH": str(folder / "zenml"), "OUTPUT_DIR": str(folder / "out"),
           "JUDGE_CACHE_DIR": str(folder / "judge"), "CHECKPOINT_DIR": str(folder / "checkpoints"),
           "ZENML_ANALYTICS_OPT_IN": "false"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "tools/run.py", "evaluate", "--config", str(_config(setting, folder)),
                           "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 3):
        return {"setting": setting, "cpu": cpu, "error": done.stderr[-2000:] or done.stdout[-2000:]}
    report = json.loads(max((folder / "out" / "reports").glob("*.json"), key=lambda p: p.stat().st_mtime).read_text())
    steps = json.loads(subprocess.run([sys.executable, "-c", _STEP_TIMES, report["run"]], cwd=ROOT, env=env,
                                      capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
    generation = sum(s for name, s in steps.items() if name.startswith("generate_answers"))
    judge = sum(s for name, s in steps.items() if name.startswith(JUDGE_STEPS))
    check = report.get("judge_check") or {}
    first_line = next((line for line in done.stdout.splitlines() if line.startswith("Judge ")), "")
    return {
        "setting": setting, "cpu": cpu, "judge_line": first_line, "wall_s": round(wall, 1),
        "pipeline_s": round(sum(steps.values()), 1), "steps": {k: round(v, 1) for k, v in steps.items()},
        "generation_s": round(generation, 1), "judge_s": round(judge, 1),
        "judge_over_generation": round(judge / generation, 2) if generation else None,
        "judge_tokens": sum(m["judge_usage"]["prompt_tokens"] + m["judge_usage"]["completion_tokens"]
                            for m in report["models"]) + (check.get("judge_tokens") or 0),
        "card": [{"tier": t["tier"], "outcome": t["outcome"], "judge": f"{t['reference_higher']['count']}/{t['pairs']}",
                  "best_rule": t.get("best_rule") if "best_rule" in t else None}
                 for t in ([check, *check.get("tiers", [])] if check else [])],
        "headline": report.get("headline"),
    }


@click.command()
@click.option("--setting", "settings", multiple=True, default=("auto",), show_default=True,
              type=click.Choice(list(SETTINGS)))
@click.option("--cpu", "cpus", multiple=True, default=("native", "avx2"), show_default=True,
              type=click.Choice(list(CPU_KINDS)))
@click.option("--out", type=click.Path(path_type=Path), default=RESULTS / "judge_cost.json", show_default=True)
def main(settings: tuple[str, ...], cpus: tuple[str, ...], out: Path) -> None:
    from llm_engineering.infrastructure.cpu_tuning import cpu_flags

    flags = sorted(f for f in cpu_flags() if f in ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16"))
    results = {"cpu_flags": flags, "runs": []}
    for cpu in cpus:
        for setting in settings:
            result = run_one(setting, cpu)
            results["runs"].append(result)
            print(json.dumps(result), flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(results, indent=1))
    print(f"\nCPU flags: {', '.join(flags)}")
    print("| setting | CPU | generate_answers s | judge stages s | judge / generation | pipeline s | card |")
    print("|---|---|---|---|---|---|---|")
    for r in results["runs"]:
        if "error" in r:
            print(f"| {r['setting']} | {r['cpu']} | error: {r['error'][:80]!r} |")
            continue
        card = "; ".join(f"{t['tier']} {t['judge']} {t['outcome']}" for t in r["card"])
        print(f"| {r['setting']} | {r['cpu']} | {r['generation_s']} | {r['judge_s']} | {r['judge_over_generation']} | "
              f"{r['pipeline_s']} | {card} |")


if __name__ == "__main__":
    main()
