"""Intervals with several answers per prompt: one `evaluate --samples K` run of the embedded split with the default
sampling (temperature 0.8), then per criterion (integer and expected scores) three 95% intervals of the same
run's answers:

- the first answer of each prompt alone, over rows (what a run with one answer per prompt reports);
- the K answers, rows drawn with each row's mean fixed (over rows alone);
- the K answers, the two-level bootstrap: rows, then samples within a row (what the summary reports);

and the share of the variance that lies between a prompt's answers, the per-row spread and the reducers.

    .venv/bin/python -m benchmarks.judge_studies.samples [--samples 4] [--judge auto] [--limit N]
        # writes benchmarks/results/samples_k<K>_<judge>.json
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


def _width(ci: list[float] | None) -> float | None:
    return None if ci is None else round(ci[1] - ci[0], 4)


@click.command()
@click.option("--samples", default=4, show_default=True, help="answers per prompt")
@click.option("--limit", type=int, default=None, help="rows of the embedded split (default: all 48)")
@click.option("--judge", default="auto", show_default=True, help="judge.model")
def main(samples: int, limit: int | None, judge: str) -> None:
    from click.testing import CliRunner
    from zenml.client import Client

    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.rates import bootstrap_ci, mean
    from llm_engineering.evaluation.samples import grouped, row_means, two_level_ci
    from llm_engineering.infrastructure.zenml_runs import step_output
    from tools.run import main as cli

    started = time.perf_counter()
    config = Path(tempfile.mkdtemp(prefix="samples-")) / "run.yaml"
    config.write_text(yaml.safe_dump({"parameters": {
        "dataset": {"limit": limit}, "judge": {"model": judge}, "judge_check": {"rows": 0}}}))
    result = CliRunner().invoke(cli, ["evaluate", "--config", str(config), "--samples", str(samples)],
                                catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"evaluate failed (exit {result.exit_code}):\n{result.output[-3000:]}")
    line = next(line for line in result.stdout.splitlines() if line.startswith("JSON report:"))
    report = json.loads(Path(line.split(":", 1)[1].strip()).read_text())
    rows = step_output(Client().get_pipeline_run(report["run"]), "evaluate_answers", col.EVALUATIONS).to_list()
    valid = [r for r in rows if r[col.JUDGE_ERROR] is None]
    (model,) = report["models"]
    figures = []
    for criterion in model["criteria"]:
        name = criterion["name"]
        for kind, column in (("integer", col.score(name)), ("expected", col.expected(name))):
            groups = grouped(valid, lambda r, column=column: r.get(column))
            first = [values[0] for values in groups.values()]
            means = list(row_means(groups).values())
            intervals = {"first answer, over rows": bootstrap_ci(first),
                         "row means, over rows alone": bootstrap_ci(means),
                         "rows and samples (two-level)": two_level_ci(list(groups.values()))}
            figures.append({"criterion": name, "scores": kind, "mean_first": mean(first), "mean": mean(means),
                            "intervals": intervals, "widths": {k: _width(v) for k, v in intervals.items()}})
    result_file = RESULTS / f"samples_k{samples}_{judge}.json"
    output = {
        "command": f".venv/bin/python -m benchmarks.judge_studies.samples --samples {samples} --judge {judge}"
                   + (f" --limit {limit}" if limit else ""),
        "machine": {"cpu_flags": _cpu_flags(), "processor": platform.processor() or platform.machine()},
        "run": report["run"], "judge": report["judge_model"], "answers": len(rows), "scored": len(valid),
        "figures": figures,
        "summary_criteria": [{key: c.get(key) for key in ("name", "mean", "ci", "rows_ci", "sample_share",
                                                          "row_spread", "pass_score", "reducers")}
                             for c in model["criteria"]],
        "seconds": round(time.perf_counter() - started, 1),
    }
    result_file.parent.mkdir(parents=True, exist_ok=True)
    result_file.write_text(json.dumps(output, indent=2) + "\n")
    for f in figures:
        print(f"{f['criterion']} ({f['scores']}): " + "; ".join(
            f"{k} {f['intervals'][k]} (width {w})" for k, w in f["widths"].items()))
    for c in output["summary_criteria"]:
        print(f"{c['name']}: between-sample share {c['sample_share']}, row spread {c['row_spread']}, "
              + ", ".join(f"{k} {v['value']}" for k, v in c["reducers"].items()))
    print(f"wrote {result_file} ({output['seconds']} s)")


if __name__ == "__main__":
    main()
