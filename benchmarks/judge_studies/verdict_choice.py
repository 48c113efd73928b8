"""Verdicts side by side, for the choice of the default (issue 70): each candidate's report card on the embedded split
(every tier, the tiers no rule can pass among them, each rule and the paired test), the levels it gives a weak model's
answers (SmolLM2-135M's, generated once and kept under outputs/), its agreement with people on labelled pairs (both
halves of a pairs file, pointwise: each answer scored alone, the pair decided by expected scores, and by integer scores
with a tie half right), and the judge's seconds for each.

    .venv/bin/python -m benchmarks.judge_studies.verdict_choice --candidate task-accuracy \
        --candidate task-accuracy-score-first --candidate reference-checklist \
        --pairs ../shared/judge-labels/llmbar-natural.jsonl --pairs-per-half 20 [--rows 20] [--out FILE]

A candidate is a shipped rubric, a rubric file, or one of the variants named in `VARIANTS`. The judge's cache is on, so
what every candidate shares (the card's rewordings, a row's checklist items) is asked once; each candidate's seconds are
those of its own calls.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

# Variants of the default rubric, measured beside it (each the shipped task-accuracy with one change).
VARIANTS: dict[str, dict[str, Any]] = {
    # Each score before its analysis: one call per answer, the expected score read at the score's own token.
    "task-accuracy-score-first": {"score_first": True, "expected_before_analysis": False},
}
ANSWERS = Path("outputs/verdict_choice/smollm2-135m-answers.jsonl")


def _rubric(name: str) -> Any:
    from llm_engineering.evaluation.judging.rubric import load_rubric

    if name in VARIANTS:
        base = load_rubric("task-accuracy")
        return base.model_copy(update={"name": name, **VARIANTS[name]})
    return load_rubric(name)


def _weak_answers(pool: Any) -> Any:
    """SmolLM2-135M's answers to the embedded split (the default run's), generated once and kept."""
    from datasets import Dataset

    from llm_engineering.evaluation.config import DatasetConfig, PromptConfig, SamplingConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.answers import answer_test_split
    from llm_engineering.evaluation.generation.dataset import read_test_split, with_prompts
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.vllm_engine import VLLMEngine
    from llm_engineering.settings import get_settings

    if not ANSWERS.is_file():
        split = with_prompts(read_test_split(DatasetConfig()), PromptConfig())
        path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
        answers, _ = answer_test_split(VLLMEngine(pool.get(path, EngineConfig())), split, "smollm2-135m",
                                       sampling=SamplingConfig(), prompt=PromptConfig(), max_model_len=2048)
        ANSWERS.parent.mkdir(parents=True, exist_ok=True)
        answers.to_json(str(ANSWERS))
    return Dataset.from_json(str(ANSWERS))


def _agreement(rows: list[dict], pairs: list[Any], criterion: str) -> dict[str, Any]:
    """Pointwise agreement with the labels: by expected scores, and by integer scores (LLMBar's Rating, a tie half)."""
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.preference import compare

    expected = integer = total = 0.0
    for k, pair in enumerate(pairs):
        if pair.label == "tie":
            continue
        one, two = rows[2 * k], rows[2 * k + 1]
        total += 1
        expected += compare(one[col.expected(criterion)], two[col.expected(criterion)]) == pair.label
        decided = compare(one[col.score(criterion)], two[col.score(criterion)])
        integer += 0.5 if decided == "tie" else float(decided == pair.label)
    return {"pairs": int(total), "expected": round(expected / total, 3) if total else None,
            "rating": round(integer / total, 3) if total else None}


def _tier(t: Any) -> dict[str, Any]:
    """A tier's figures as the run decides it, and as decided by the expected scores alone (the same pairs)."""
    from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs

    by_expected = judge_check_from_pairs(t.judge_model, t.details, threshold=t.threshold, criterion=t.criterion,
                                         tier=t.tier, scale=t.scale, right_answers=t.right_answers,
                                         decided_by="expected", candidates=t.candidates, dropped=t.dropped)
    return {"tier": t.tier, "outcome": t.outcome, "pairs": t.pairs, "candidates": t.candidates, "dropped": t.dropped,
            "judge": t.deciding.describe(), "integer": t.reference_higher.describe(),
            "tie_broken": t.reference_higher_tie_broken.describe() if t.reference_higher_tie_broken else None,
            "by_expected": t.reference_higher_by_expected.describe() if t.reference_higher_by_expected else None,
            "outcome_by_expected": by_expected.outcome,
            "lowest_level": t.lowest_level.describe() if t.lowest_level else None,
            "right_mean": t.reference_accuracy_mean, "worse_mean": t.mismatched_accuracy_mean,
            "right_expected": t.reference_expected_mean, "worse_expected": t.mismatched_expected_mean,
            "best_rule": t.best_rule, "best_rule_rate": t.baselines[t.best_rule].describe() if t.best_rule else None,
            "paired": {name: test.model_dump() for name, test in t.paired.items()},
            "paired_by_expected": {name: test.model_dump() for name, test in by_expected.paired.items()}}


@click.command()
@click.option("--candidate", "candidates", multiple=True, required=True,
              help=f"A shipped rubric, a rubric file, or a variant: {', '.join(VARIANTS)}.")
@click.option("--judge", "judge_model", default="qwen2.5-coder-1.5b", show_default=True)
@click.option("--rows", default=20, show_default=True, help="Sampled rows of the report card.")
@click.option("--pairs", "pairs_files", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Human-labelled pairs (.jsonl), repeatable.")
@click.option("--pairs-per-half", default=20, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=None)
def main(candidates: tuple[str, ...], judge_model: str, rows: int, pairs_files: tuple[Path, ...], pairs_per_half: int,
         out: Path | None) -> None:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig, JudgeCheckConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.judge import Judge
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.evaluation.rates import bootstrap_ci, mean
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.evaluation.trust.human_pairs import load_pairs
    from llm_engineering.evaluation.trust.judge_bench import _pointwise
    from llm_engineering.evaluation.trust.similarity import get_embedder
    from llm_engineering.infrastructure.cpu_tuning import native_bf16_flags
    from llm_engineering.infrastructure.judge_backends import build_judge, open_cache
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    settings = get_settings()
    split = read_test_split(DatasetConfig())
    results: dict[str, Any] = {"judge": judge_model, "cpu": ", ".join(native_bf16_flags()) or "no native bf16",
                               "candidates": []}
    pool = EnginePool()
    try:
        answers = _weak_answers(pool)
        for name in candidates:
            rubric = _rubric(name)
            config = JudgeConfig(model=judge_model, rubric=rubric)
            with open_cache(config, settings) as cache:
                judge = Judge((build_judge(config, EngineConfig(), settings, pool),), rubric, cache,
                              config.max_analysis_chars)
                first = rubric.checklist.criterion if rubric.checklist else rubric.names[0]
                started = time.perf_counter()
                card_split = split
                if rubric.checklist is not None:  # each row's items, for its answers and the card's alike
                    from llm_engineering.evaluation.judging.checklist_writing import with_checklists, write_checklists

                    items = write_checklists(judge, split, rubric.checklist.max_items)
                    answers_, card_split = with_checklists(answers, items), with_checklists(split, items)
                else:
                    answers_ = answers
                scored = score_answers(answers_, judge)
                scoring_s = time.perf_counter() - started
                started = time.perf_counter()
                check = run_judge_check(card_split, judge, JudgeCheckConfig(rows=rows), embedder=get_embedder())
                card_s = time.perf_counter() - started
                labelled = {}
                for path in pairs_files:
                    every = load_pairs(path)
                    for half in (1, 2):
                        chosen = every[half - 1::2][:pairs_per_half]
                        started = time.perf_counter()
                        pair_rows, _ = _pointwise(chosen, judge)
                        labelled[f"{path.stem} half {half}"] = {**_agreement(pair_rows, chosen, first),
                                                                "s": round(time.perf_counter() - started, 1)}
            levels = [s for s in scored[col.score(first)] if s is not None]
            expected = [e for e in scored[col.expected(first)] if e is not None]
            result = {"candidate": name, "scoring_s": round(scoring_s, 1), "card_s": round(card_s, 1),
                      "weak_model": {"mean": mean(levels), "ci": bootstrap_ci([float(v) for v in levels]),
                                     "expected_mean": mean(expected), "levels": {str(v): levels.count(v) for v in
                                                                               sorted(set(levels))},
                                     "failed": sum(e is not None for e in scored[col.JUDGE_ERROR])},
                      "card": [_tier(t) for t in [check, *check.tiers]], "labelled": labelled,
                      "card_details": [{"tier": t.tier, **p.model_dump(exclude={"rules"}), "reference":
                                        split[col.REFERENCE][split[col.ID].index(p.id)]}
                                       for t in [check, *check.tiers] for p in t.details],
                      "weak_rows": [{k: r.get(k) for k in (col.ID, col.REFERENCE, col.ANSWER, col.score(first),
                                                           col.expected(first), col.analysis(first))}
                                    for r in scored.to_list()],
                      "headline": check.verdict}
            results["candidates"].append(result)
            _print(result)
            if out:
                out.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    finally:
        pool.release()
    print(f"CPU flags: {results['cpu']}")


def _print(result: dict[str, Any]) -> None:
    weak = result["weak_model"]
    print(f"\n## {result['candidate']}: scoring {result['scoring_s']} s, card {result['card_s']} s; SmolLM2-135M's answers "
          f"{weak['mean']} {weak['ci']} (expected {weak['expected_mean']}, levels {weak['levels']}, failed "
          f"{weak['failed']})")
    print("| tier | outcome | judge | by expected (outcome) | lowest level | right / worse mean (expected) | best rule | "
          "kept of built |")
    print("|---|---|---|---|---|---|---|---|")
    for t in result["card"]:
        print(f"| {t['tier']} | {t['outcome']} | {t['judge']} | {t['by_expected']} ({t['outcome_by_expected']}) | "
              f"{t['lowest_level']} | {t['right_mean']} / {t['worse_mean']} ({t['right_expected']} / "
              f"{t['worse_expected']}) | {t['best_rule']} {t['best_rule_rate']} | {t['pairs']} of {t['candidates']} |")
    for name, figures in result["labelled"].items():
        print(f"- {name}: expected {figures['expected']}, rating {figures['rating']} ({figures['pairs']} pairs, "
              f"{figures['s']} s)")


if __name__ == "__main__":
    main()
