"""Judges side by side on the embedded split: the report card (every tier, integer and expected scores)
and the wall time of a run's judge stages (scoring the split's answers, then the check).

    .venv/bin/python -m benchmarks.judge_studies.judge_report_card [--judge smollm2-135m --judge qwen2.5-coder-1.5b]
        [--rubric handbook] [--dtype auto|bfloat16] [--rows 20] [--label-rows 10] [--max-analysis-chars 400]
        [--compare-whole-verdicts]

Each judge runs in this process, one engine after the other (the pool releases the previous one), with
the judge cache off. The answers scored are the references of the split (48 rows), so no generation
engine is needed. With the engine still loaded, the judge then scores constructed labels (`check_tiers.constructed_labels`
on the split's first `--label-rows` rows: reference 3, truncated 2, another row's reference 1): agreement, kappa and
the two baselines. Prints markdown tables and one JSON line per judge.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from llm_engineering.evaluation.config import JudgeCheckConfig, JudgeConfig  # light: pydantic only
from llm_engineering.evaluation.judging.judge import Judge

JUDGE_DEFAULTS = JudgeConfig().model_dump()
HARDER_TIERS = ["same_topic", "truncated", "corrupted"]  # beside the mismatch tier, which every check runs


def _cpu_flags() -> str:
    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0] if Path("/proc/cpuinfo").exists() else ""
    return ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags) or "unknown"


def _card(check) -> dict:
    return {t.tier: {"integer": t.reference_higher.describe(), "ties": t.ties.count,
                     "expected": t.reference_higher_tie_broken.describe() if t.reference_higher_tie_broken else None}
            for t in [check, *check.tiers]}


def _alike(alone, whole) -> dict:
    """How far the check's verdicts asked for scores alone match those asked whole, pair by pair."""
    pairs = [(a, w) for ta, tw in zip([alone, *alone.tiers], [whole, *whole.tiers]) for a, w in zip(ta.details, tw.details)]

    def scores(p):
        return p.reference_accuracy, p.mismatched_accuracy

    def expected(p):
        return p.reference_expected, p.mismatched_expected

    differences = [abs(x - y) for a, w in pairs for x, y in zip(expected(a), expected(w)) if x is not None and y is not None]
    return {"pairs": len(pairs), "pairs_scored_alike": sum(scores(a) == scores(w) for a, w in pairs),
            "max_expected_difference": max(differences, default=None)}


def _measure(model: str, rubric: str, dtype: str, rows: int, label_rows: int, max_analysis_chars: int,
             compare_whole: bool, answers_limit: int = 0) -> dict:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.evaluation.trust import tiers as check_tiers
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.evaluation.trust.label_check import judge_labels
    from llm_engineering.evaluation.trust.labels import Labels
    from llm_engineering.infrastructure.judge_backends import build_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = JudgeConfig(model=model, rubric=rubric, cache=False, max_analysis_chars=max_analysis_chars)
    rubric_ = config.resolved_rubric()
    split = read_test_split(DatasetConfig())
    answers = split.add_column(col.ANSWER, split[col.REFERENCE]).add_column(col.MODEL_ID, ["reference"] * len(split))
    if answers_limit:
        answers = answers.select(range(min(answers_limit, len(answers))))
    result: dict = {"judge": model, "rubric": rubric, "dtype": dtype, "max_analysis_chars": max_analysis_chars,
                    "cpu": _cpu_flags()}
    pool = EnginePool()
    try:
        judge = build_judge(config, EngineConfig(dtype=dtype), get_settings(), pool)
        started = time.perf_counter()
        pool.get(judge._model_path, EngineConfig(dtype=dtype))  # engine start, timed apart
        result["engine_start_s"] = round(time.perf_counter() - started, 1)
        if rows:
            started = time.perf_counter()
            evaluations = score_answers(answers, Judge((judge,), rubric_))
            result["scoring_s"] = round(time.perf_counter() - started, 1)
            result["valid_verdicts"] = f"{sum(e is None for e in evaluations[col.JUDGE_ERROR])}/{len(answers)}"
            result["answers_scored"] = len(answers)
            started = time.perf_counter()
            check = run_judge_check(split, Judge((judge,), rubric_),
                                    JudgeCheckConfig(rows=rows, threshold=0.7, tiers=HARDER_TIERS))
            result.update(check_s=round(time.perf_counter() - started, 1), check_verdicts=check.judge_calls,
                          check_tokens=check.judge_tokens, tiers=_card(check))
            if compare_whole and rubric_.score_first:
                # The same prompts again as whole verdicts; on a prefix cache the first pass warmed.
                started = time.perf_counter()
                whole = run_judge_check(split, Judge((judge,), rubric_),
                                        JudgeCheckConfig(rows=rows, threshold=0.7, tiers=HARDER_TIERS), whole_verdicts=True)
                result["whole_verdicts"] = {"check_s": round(time.perf_counter() - started, 1),
                                            "check_tokens": whole.judge_tokens, "tiers": _card(whole), **_alike(check, whole)}
        if label_rows:
            first = split.select(range(min(label_rows, len(split))))
            labels = Labels(kind="pointwise", rows=check_tiers.constructed_labels(
                first[col.ID], first[col.REFERENCE], rubric_.criteria[0].name))
            started = time.perf_counter()
            result["labels"] = judge_labels(first, labels, Judge((judge,), rubric_)).metadata()
            result["labels_s"] = round(time.perf_counter() - started, 1)
    finally:
        pool.release()
    return result


@click.command()
@click.option("--judge", "judges", multiple=True, default=["smollm2-135m", "qwen2.5-coder-1.5b"], show_default=True)
@click.option("--rubric", default="handbook", show_default=True, help="A shipped rubric, or a rubric YAML file.")
@click.option("--dtype", default="auto", show_default=True, help="Engine dtype (auto: as the run picks it).")
@click.option("--rows", default=20, show_default=True, help="Pairs per report card tier; 0: no card, no scoring.")
@click.option("--label-rows", default=10, show_default=True, help="Rows of constructed labels (3 labels each); 0: none.")
@click.option("--max-analysis-chars", default=JUDGE_DEFAULTS["max_analysis_chars"], show_default=True,
              help="Longest analysis the judge may write (judge.max_analysis_chars).")
@click.option("--answers", "answers_limit", default=0, show_default=True,
              help="Score only the split's first N references (0: all 48): a quicker estimate on a slow CPU.")
@click.option("--compare-whole-verdicts", is_flag=True,
              help="Score-first rubrics: run the check again asking whole verdicts, and compare the two.")
def main(judges: tuple[str, ...], rubric: str, dtype: str, rows: int, label_rows: int, max_analysis_chars: int,
         compare_whole_verdicts: bool, answers_limit: int) -> None:
    results = [_measure(model, rubric, dtype, rows, label_rows, max_analysis_chars, compare_whole_verdicts, answers_limit)
               for model in judges]
    tiers = list(results[0].get("tiers", {}))
    if tiers:
        print("| judge | rubric | dtype | scoring s | check s (verdicts) | valid | "
              + " | ".join(f"{t}: integer / expected" for t in tiers) + " |")
        print("|---" * (6 + len(tiers)) + "|")
    for r in results if tiers else []:
        print(f"| {r['judge']} | {r['rubric']} | {r['dtype']} | {r['scoring_s']} | {r['check_s']} ({r['check_verdicts']}) | "
              f"{r['valid_verdicts']} | " + " | ".join(f"{r['tiers'][t]['integer']} / {r['tiers'][t]['expected']}"
                                                          for t in tiers) + " |")
    if label_rows:
        print("\n| judge | criterion | rater | exact [95% CI] | within one | Spearman | kappa [95% CI] |")
        print("|---|---|---|---|---|---|---|")
        for r in results:
            for name, c in r["labels"]["criteria"].items():
                raters = {"judge (integer)": c["judge"], "judge (expected)": c["judge_expected"],
                          "majority label": c["majority"], "length only": c["length"]}
                for rater, f in raters.items():
                    if isinstance(f, dict):
                        print(f"| {r['judge']} | {name} | {rater} | {f['exact']} {f['exact_ci']} | {f['within_one']} | "
                              f"{f['spearman']} | {f['kappa']} {f['kappa_ci']} |")
                print(f"| {r['judge']} | {name} | verdict | {c['verdict']} | | | |")
    print(f"CPU flags: {results[0]['cpu']}")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
