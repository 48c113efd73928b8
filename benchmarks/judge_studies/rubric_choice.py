"""Rubrics side by side with one judge engine: the report card (every tier: integer and tie-broken discrimination,
worse answers at the lowest level, right and worse answers' means, the judge-free rules) and a model's answers
scored (mean, levels), with the seconds of each.

    .venv/bin/python -m benchmarks.judge_studies.rubric_choice --answers outputs/hub/local/smollm2-135m-results \
        --rubric handbook-score-first --rubric task-accuracy [--judge qwen2.5-coder-1.5b] [--rows 20] [--out FILE]

`--answers`: a published results folder (or a data file) with instruction, reference and answer columns: a run's
answers, scored again by each rubric without generating anything. The judge cache is off, so every figure is
fresh. Prints a markdown table per rubric and writes the whole result (every scored row, with its analysis) as
JSON to `--out`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import click


def _answers(path: Path):
    from datasets import load_dataset

    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".parquet", ".jsonl", ".json")
                                                 and p.name != "README.json")
    kind = "parquet" if files[0].suffix == ".parquet" else "json"
    return load_dataset(kind, data_files=[str(f) for f in files], split="train")


def _tier_row(t) -> dict:
    return {"tier": t.tier, "pairs": t.pairs, "integer": t.reference_higher.describe(),
            "tie_broken": t.reference_higher_tie_broken.describe() if t.reference_higher_tie_broken else None,
            "lowest_level": t.lowest_level.describe() if t.lowest_level else None,
            "right_mean": t.reference_accuracy_mean, "wrong_mean": t.mismatched_accuracy_mean,
            "rules": {name: r.describe() for name, r in t.baselines.items()}, "margin": t.margin_over_rules,
            "copies": t.right_copies}


@click.command()
@click.option("--answers", "answers_path", type=click.Path(exists=True, path_type=Path), required=True)
@click.option("--rubric", "rubrics", multiple=True, required=True, help="A shipped rubric or a rubric YAML file.")
@click.option("--judge", "judge_model", default="qwen2.5-coder-1.5b", show_default=True)
@click.option("--rows", default=20, show_default=True, help="Pairs per report card tier.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Write the whole result as JSON here.")
@click.option("--card-only", is_flag=True, help="The report card alone, no answers scored.")
def main(answers_path: Path, rubrics: tuple[str, ...], judge_model: str, rows: int, out: Path | None,
         card_only: bool) -> None:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig, JudgeCheckConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.judge import Judge
    from llm_engineering.evaluation.judging.scoring import score_answers
    from llm_engineering.evaluation.rates import bootstrap_ci, mean
    from llm_engineering.evaluation.trust.card import run_judge_check
    from llm_engineering.infrastructure.cpu_tuning import native_bf16_flags
    from llm_engineering.infrastructure.judge_backends import build_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    answers = _answers(answers_path)
    split = read_test_split(DatasetConfig())
    results = {"judge": judge_model, "cpu": ", ".join(native_bf16_flags()) or "no native bf16",
               "answers": str(answers_path), "rubrics": []}
    pool = EnginePool()
    try:
        for name in rubrics:
            config = JudgeConfig(model=judge_model, rubric=name, cache=False)
            rubric = config.resolved_rubric()
            backend = build_judge(config, EngineConfig(), get_settings(), pool)
            judge = Judge((backend,), rubric, None, config.max_analysis_chars)
            started = time.perf_counter()
            scored = score_answers(answers.select(range(0 if card_only else len(answers))), judge)
            scoring_s = time.perf_counter() - started
            started = time.perf_counter()
            check = run_judge_check(split, judge, JudgeCheckConfig(rows=rows))
            check_s = time.perf_counter() - started
            criteria = {}
            for c in rubric.names:
                scores = [s for s in scored[col.score(c)] if s is not None]
                expected = [e for e in scored[col.expected(c)] if e is not None]
                criteria[c] = {"mean": mean(scores), "ci": bootstrap_ci([float(s) for s in scores]),
                               "expected_mean": mean(expected), "levels": dict(sorted(Counter(scores).items()))}
            result = {"rubric": rubric.name, "scoring_s": round(scoring_s, 1), "check_s": round(check_s, 1),
                      "failed": sum(e is not None for e in scored[col.JUDGE_ERROR]), "criteria": criteria,
                      "card": [_tier_row(t) for t in [check, *check.tiers]],
                      "rows": [{k: r.get(k) for k in (col.ID, col.INSTRUCTION, col.REFERENCE, col.ANSWER, col.FINISH_REASON,
                                                       *[f(c) for c in rubric.names for f in (col.score, col.analysis,
                                                                                              col.expected)])}
                               for r in scored.to_list()],
                      "check_details": [{"tier": t.tier, **p.model_dump()} for t in [check, *check.tiers] for p in t.details]}
            results["rubrics"].append(result)
            print(f"\n## {rubric.name}: scoring {result['scoring_s']} s, check {result['check_s']} s, failed {result['failed']}")
            for c, f in criteria.items():
                print(f"- {c}: mean {f['mean']} {f['ci']}, expected {f['expected_mean']}, levels {f['levels']}")
            print("| tier | integer | tie-broken | lowest level | right / wrong mean | rules | margin |")
            print("|---|---|---|---|---|---|---|")
            for t in result["card"]:
                print(f"| {t['tier']} | {t['integer']} | {t['tie_broken']} | {t['lowest_level']} | {t['right_mean']} / "
                      f"{t['wrong_mean']} | {t['rules']} | {t['margin']} |")
    finally:
        pool.release()
    print(f"CPU flags: {results['cpu']}")
    if out:
        out.write_text(json.dumps(results, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
