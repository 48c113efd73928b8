"""`judge-bench`: the configured judge measured against human-labelled pairs, start to end.

Composition, as `run_config`: the run config's judge (or jury) with the command line's choices, the pairs file
checked whole before any judge starts, the caller's engine pool, the reports written beside the run
reports (`outputs/reports/judge-bench-<time>.json` and `.html`).
"""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from llm_engineering.evaluation.report.judge_bench import render_bench_html
from llm_engineering.evaluation.trust.human_pairs import load_pairs
from llm_engineering.evaluation.trust.judge_bench import JudgeBenchReport, bench_judge
from llm_engineering.evaluation.trust.selective import RISK, with_selective
from llm_engineering.run_config import EvaluationConfig, load_run_config, with_judges_chosen
from llm_engineering.run_overrides import Overrides, apply_overrides

if TYPE_CHECKING:
    from llm_engineering.infrastructure.vllm_engine import EnginePool

logger = logging.getLogger(__name__)


def bench_config(config_path: Path, judge_model: Optional[str] = None, rubric: Optional[str] = None,
                 judge_served_model: Optional[str] = None) -> tuple[EvaluationConfig, list[str]]:
    """The run config's judges with `--judge` and `--rubric` applied and `auto` chosen, and a line per choice."""
    return with_judges_chosen(apply_overrides(load_run_config(config_path).evaluation,
                                              Overrides(rubric=rubric, judge_model=judge_model,
                                                        judge_served_model=judge_served_model)))


def run_judge_bench(pairs_path: Path, config: EvaluationConfig, pool: EnginePool, *, limit: Optional[int] = None,
                    reports_dir: Optional[Path] = None, half: Optional[int] = None,
                    calibration: Optional[Path] = None, target_agreement: float = 0.8,
                    risk: float = RISK) -> tuple[JudgeBenchReport, Optional[Path]]:
    """The judge benchmark of `config`'s judges (chosen: `bench_config`) on the pairs of `pairs_path` (`half` 1 or 2:
    every other pair, from the first or the second; then the first `limit`): the report, and the JSON report's path
    (when `reports_dir` is given; the HTML page beside it). In-process judges take their engine from the caller's
    `pool` (an engine it already holds is reused), which the caller releases. With `calibration` (another pairs
    file, whole), each way with a confidence gets the threshold found on it for `target_agreement` at `risk`, and
    the share and agreement of the verdicts it keeps here (`trust.selective`)."""
    from llm_engineering.infrastructure.judge_backends import open_judge
    from llm_engineering.settings import get_settings

    pairs = load_pairs(pairs_path)  # a bad file stops here, before any engine starts
    pairs = pairs[half - 1::2] if half else pairs
    pairs = pairs[:limit] if limit else pairs
    calibration_pairs = load_pairs(calibration) if calibration else None
    with open_judge(config.panel, config.engine, settings=get_settings(), pool=pool) as judge:
        started = time.perf_counter()
        report = bench_judge(pairs, judge, str(pairs_path))
        report = report.model_copy(update={"seconds": round(time.perf_counter() - started, 1), "half": half})
        if calibration_pairs:
            report = with_selective(report, bench_judge(calibration_pairs, judge, str(calibration)), target_agreement,
                                    risk)
    if reports_dir is None:
        return report, None
    reports_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y_%m_%d-%H_%M_%S")
    path = reports_dir / f"judge-bench-{stamp}.json"
    path.write_text(json.dumps(report.json_report(), indent=2))
    path.with_suffix(".html").write_text(render_bench_html(report), encoding="utf-8")
    return report, path.resolve()
