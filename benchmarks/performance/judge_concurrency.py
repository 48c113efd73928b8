"""Judge throughput against a real `vllm serve`: concurrency 1 vs the default, in one run.

    .venv/bin/python -m benchmarks.performance.judge_concurrency [--rows 24]

Prints a markdown table and, last, one JSON line with the ratio. A benchmark, not a test.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, JudgeConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.openai_judge import OpenAIJudge
from llm_engineering.infrastructure.vllm_server import vllm_server
from llm_engineering.settings import get_settings


@click.command()
@click.option("--rows", default=24, show_default=True, help="Answers judged per setting.")
@click.option("--concurrency", default=JudgeConfig().endpoint.max_concurrency, show_default=True, help="The default to compare.")
def main(rows: int, concurrency: int) -> None:
    split = read_test_split(DatasetConfig(limit=rows))
    # The reference answers stand in for generated answers: the judge's work is the same.
    answers = split.add_column(col.ANSWER, split[col.REFERENCE]).add_column(col.MODEL_ID, ["reference"] * len(split))
    model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
    results = []
    with tempfile.TemporaryDirectory() as tmp, vllm_server(model.path, "smollm2-135m", Path(tmp) / "serve.log") as url:
        warm = JudgeConfig(backend="openai", model="smollm2-135m", base_url=url, cache=False, max_tokens=256)
        # The first requests pay for warm-up.
        score_answers(answers.select(range(2)), Judge((OpenAIJudge(warm),), warm.resolved_rubric()))
        for level in (1, concurrency):
            config = warm.model_copy(update={"endpoint": warm.endpoint.model_copy(update={"max_concurrency": level})})
            started = time.perf_counter()
            evaluations = score_answers(answers, Judge((OpenAIJudge(config),), config.resolved_rubric()))
            seconds = time.perf_counter() - started
            tokens = sum(evaluations[col.JUDGE_COMPLETION_TOKENS])
            results.append({"concurrency": level, "seconds": round(seconds, 2),
                            "verdicts_per_s": round(len(answers) / seconds, 3),
                            "output_tok_per_s": round(tokens / seconds, 1),
                            "failed": sum(e is not None for e in evaluations[col.JUDGE_ERROR])})
    print("| concurrency | seconds | verdicts/s | output tok/s | failed |\n|---|---|---|---|---|")
    for r in results:
        print(f"| {r['concurrency']} | {r['seconds']} | {r['verdicts_per_s']} | {r['output_tok_per_s']} | {r['failed']} |")
    ratio = results[1]["verdicts_per_s"] / results[0]["verdicts_per_s"]
    print(json.dumps({"rows": rows, "results": results, "default_vs_sequential": round(ratio, 2)}))


if __name__ == "__main__":
    main()
