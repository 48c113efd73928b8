"""Scale: a test split of 1k, 10k, 100k rows through everything but the models.

    .venv/bin/python -m benchmarks.soak.scale [--sizes 1000,10000,100000] [--row-bytes 300]

Each size runs in a fresh process (so its peak memory is its own): read a JSONL file and validate it,
format the prompts, add stand-in answers (generating 100k answers is not possible here; the columns are
the real ones), publish the local dataset repo (parquet + card), add stand-in verdicts, build the summary
(with bootstrap intervals) and render the HTML report (its row browser keeps the worst 2,000 items).
Writes benchmarks/results/scale.json; times are seconds, memory is the process's peak RSS.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks import RESULTS, ROOT


def one_size(rows: int, row_bytes: int) -> dict:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import PromptConfig
    from llm_engineering.evaluation.generation.dataset import validate_split, with_prompts
    from llm_engineering.evaluation.generation.source import read_split
    from llm_engineering.evaluation.report.html import render_html
    from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
    from llm_engineering.infrastructure.publishing import publish_local

    rng = random.Random(0)
    filler = "word " * (row_bytes // 10)
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "split.jsonl"
        with source.open("w") as handle:
            for i in range(rows):
                handle.write(json.dumps({"id": f"r{i}", "instruction": f"Question {i}: {filler}",
                                         "answer": f"Reference {i}: {filler}"}) + "\n")
        started = time.perf_counter()
        split = validate_split(read_split(str(source)))
        times["read_and_validate"] = time.perf_counter() - started

        started = time.perf_counter()
        split = with_prompts(split, PromptConfig())
        times["prompts"] = time.perf_counter() - started

        answers = [f"Answer {i}: {filler}" for i in range(rows)]
        generations = (split.add_column(col.MODEL_ID, ["model"] * rows).add_column(col.ANSWER, answers)
                       .add_column(col.FINISH_REASON, ["stop"] * rows).add_column(col.PROMPT_TOKENS, [60] * rows)
                       .add_column(col.COMPLETION_TOKENS, [60] * rows))
        started = time.perf_counter()
        publish_local(generations, Path(folder) / "hub", "local/model-results", split="test", info={"model": "model"})
        times["publish_local"] = time.perf_counter() - started

        evaluations = generations.add_column(col.JUDGE_MODEL, ["judge"] * rows)
        for criterion in ("accuracy", "style"):
            evaluations = (evaluations.add_column(col.score(criterion), [rng.randint(1, 3) for _ in range(rows)])
                           .add_column(col.analysis(criterion), ["fine"] * rows)
                           .add_column(col.expected(criterion), [rng.uniform(1, 3) for _ in range(rows)]))
        evaluations = evaluations.add_column(col.JUDGE_ERROR, [None] * rows)
        started = time.perf_counter()
        summary = build_summary(SummaryInputs([evaluations]))
        times["summary"] = time.perf_counter() - started
        started = time.perf_counter()
        page = render_html(summary)
        times["html_report"] = time.perf_counter() - started
    return {"rows": rows, "row_bytes": row_bytes, "seconds": {k: round(v, 3) for k, v in times.items()},
            "total_seconds": round(sum(times.values()), 2), "html_mb": round(len(page) / 1e6, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


@click.command()
@click.option("--sizes", default="1000,10000,100000", show_default=True)
@click.option("--row-bytes", default=300, show_default=True, help="about this many bytes per instruction, reference and answer")
@click.option("--one", type=int, hidden=True)
def main(sizes: str, row_bytes: int, one: int | None) -> None:
    if one:
        print(json.dumps(one_size(one, row_bytes)))
        return
    results = []
    for rows in (int(s) for s in sizes.split(",")):
        out = subprocess.run([sys.executable, "-m", "benchmarks.soak.scale", "--one", str(rows), "--row-bytes",
                              str(row_bytes)], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(results[-1]))
    target = RESULTS / "scale.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {target}")


if __name__ == "__main__":
    main()
