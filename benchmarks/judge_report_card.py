"""Judges side by side on the embedded split: the report card (every tier, integer and expected scores)
and the wall time of a run's judge stages (scoring the split's answers, then the check).

    .venv/bin/python benchmarks/judge_report_card.py [--judge smollm2-135m --judge qwen2.5-coder-1.5b]
        [--rubric handbook] [--dtype auto|bfloat16] [--rows 20]

Each judge runs in this process, one engine after the other (the pool releases the previous one), with
the judge cache off. The answers scored are the references of the split (48 rows), so no generation
engine is needed. Prints a markdown table and one JSON line per judge.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cpu_flags() -> str:
    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0] if Path("/proc/cpuinfo").exists() else ""
    return ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f" {f}" in flags) or "unknown"


def _measure(model: str, rubric: str, dtype: str, rows: int) -> dict:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig, EngineConfig, JudgeConfig
    from llm_engineering.evaluation.dataset import read_test_split
    from llm_engineering.evaluation.judge_check import run_judge_check
    from llm_engineering.evaluation.scoring import score_answers
    from llm_engineering.evaluation.similarity import get_embedder
    from llm_engineering.infrastructure.judge_backends import build_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = JudgeConfig(model=model, rubric=rubric, cache=False)
    split = read_test_split(DatasetConfig())
    answers = split.add_column(col.ANSWER, split[col.REFERENCE]).add_column(col.MODEL_ID, ["reference"] * len(split))
    pool = EnginePool()
    try:
        judge = build_judge(config, EngineConfig(dtype=dtype), get_settings(), pool)
        started = time.perf_counter()
        pool.get(judge._model_path, EngineConfig(dtype=dtype))  # engine start, timed apart
        start_s = time.perf_counter() - started
        started = time.perf_counter()
        evaluations = score_answers(answers, [judge], config.resolved_rubric())
        scoring_s = time.perf_counter() - started
        started = time.perf_counter()
        check = run_judge_check(split, judge, config.resolved_rubric(), None, rows, 0.7, tiers=["same_topic", "truncated",
                                "corrupted"], embedder=get_embedder())
        check_s = time.perf_counter() - started
    finally:
        pool.release()
    valid = sum(e is None for e in evaluations[col.JUDGE_ERROR])
    tiers = {t.tier: {"integer": t.reference_higher.describe(), "ties": t.ties.count,
                      "expected": t.reference_higher_expected.describe() if t.reference_higher_expected else None}
             for t in [check, *check.tiers]}
    return {"judge": model, "rubric": rubric, "dtype": dtype, "cpu": _cpu_flags(), "engine_start_s": round(start_s, 1),
            "scoring_s": round(scoring_s, 1), "check_s": round(check_s, 1), "check_verdicts": check.judge_calls,
            "valid_verdicts": f"{valid}/{len(answers)}", "tiers": tiers}


@click.command()
@click.option("--judge", "judges", multiple=True, default=["smollm2-135m", "qwen2.5-coder-1.5b"], show_default=True)
@click.option("--rubric", default="handbook", show_default=True, help="A shipped rubric, or a rubric YAML file.")
@click.option("--dtype", default="auto", show_default=True, help="Engine dtype (auto: float32 on CPU).")
@click.option("--rows", default=20, show_default=True, help="Pairs per report card tier.")
def main(judges: tuple[str, ...], rubric: str, dtype: str, rows: int) -> None:
    results = [_measure(model, rubric, dtype, rows) for model in judges]
    tiers = list(results[0]["tiers"])
    print("| judge | rubric | dtype | scoring 48 s | check s (verdicts) | valid | "
          + " | ".join(f"{t}: integer / expected" for t in tiers) + " |")
    print("|---" * (6 + len(tiers)) + "|")
    for r in results:
        print(f"| {r['judge']} | {r['rubric']} | {r['dtype']} | {r['scoring_s']} | {r['check_s']} ({r['check_verdicts']}) | "
              f"{r['valid_verdicts']} | " + " | ".join(f"{r['tiers'][t]['integer']} / {r['tiers'][t]['expected']}"
                                                          for t in tiers) + " |")
    print(f"CPU flags: {results[0]['cpu']}")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
