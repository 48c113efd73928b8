"""The judge-free columns of the `evaluations` artifact: each reference metric's value and each check's verdict per
answer, so that `rescore` computes them again from stored answers (no generation, no judge).

A row gets None for every reference metric where it has no reference (never 0), and no metric or check verdict where
no answer was generated (its prompt too long). Its checks are the config's (every row's) then its own.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from datasets import Dataset, List, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.metrics.check_rows import read_checks
from llm_engineering.evaluation.metrics.checks import CheckType, check_value
from llm_engineering.evaluation.metrics.names import SIMILARITY, MetricName
from llm_engineering.evaluation.metrics.reference import reference_metric

logger = logging.getLogger(__name__)

CHECK_RESULT = {"type": Value("string"), "value": Value("string"), "passed": Value("bool"), "reason": Value("string")}
# Typed explicitly, so a column that is all None (no row has a reference) keeps its type.
CHECK_FEATURES = {col.CHECK_SHARE: Value("float64"), col.CHECKS_PASSED: Value("bool"),
                  col.CHECK_RESULTS: List(CHECK_RESULT)}


def _measured_columns(names: list[str]) -> list[str]:
    """Columns an earlier measuring left (a previous evaluations artifact read again): replaced, never mixed."""
    return [name for name in names if name.startswith(col.metric("")) or name in CHECK_FEATURES]


def check_verdicts(checks: Sequence[CheckType], answer: str) -> list[dict[str, Any]]:
    """Each check's verdict on `answer`: its type, value (JSON text), whether it passed and why not."""
    verdicts = []
    for check in checks:
        reason = check.failure(answer)
        verdicts.append({"type": check.type, "value": check_value(check), "passed": reason is None, "reason": reason})
    return verdicts


def _check_columns(dataset: Dataset, answered: list[bool], common: Sequence[CheckType]) -> Optional[dict[str, list]]:
    own = dataset[col.CHECKS] if col.CHECKS in dataset.column_names else [None] * len(dataset)
    if not common and not any(own):
        return None
    answers = dataset[col.ANSWER]
    results: list[Optional[list[dict[str, Any]]]] = []
    for answer, text, measured in zip(answers, own, answered):
        checks = [*common, *read_checks(text)]  # the split's checks were validated when it was loaded
        results.append(check_verdicts(checks, answer) if checks and measured else None)
    return {
        col.CHECK_SHARE: [None if not r else round(sum(v["passed"] for v in r) / len(r), 4) for r in results],
        col.CHECKS_PASSED: [None if not r else all(v["passed"] for v in r) for r in results],
        col.CHECK_RESULTS: results,
    }


def measure_answers(dataset: Dataset, metrics: Sequence[MetricName], checks: Sequence[CheckType] = ()) -> Dataset:
    """`dataset` (answers with their rows) with a column per reference metric of `metrics` (similarity is the
    embedding model's: `trust.similarity`) and, where any row has checks, the checks' columns."""
    stale = _measured_columns(dataset.column_names)
    if SIMILARITY not in metrics and col.REFERENCE_SIMILARITY in dataset.column_names:
        stale.append(col.REFERENCE_SIMILARITY)
    measured = dataset.remove_columns(stale)
    reasons = dataset[col.FINISH_REASON] if col.FINISH_REASON in dataset.column_names else [None] * len(dataset)
    answers = dataset[col.ANSWER]
    answered = [answer is not None and reason != col.PROMPT_TOO_LONG for answer, reason in zip(answers, reasons)]
    references = dataset[col.REFERENCE] if col.REFERENCE in dataset.column_names else [None] * len(dataset)
    for name in metrics:
        if name == SIMILARITY:
            continue
        values = [reference_metric(name, answer, reference) if ok and reference is not None else None
                  for answer, reference, ok in zip(answers, references, answered)]
        measured = measured.add_column(col.metric(name), values, feature=Value("float64"))
    verdicts = _check_columns(dataset, answered, checks)
    for column, values in (verdicts or {}).items():
        measured = measured.add_column(column, values, feature=CHECK_FEATURES[column])
    logger.info("Measured %d answers: metrics %s; checks %s", len(dataset), ", ".join(metrics) or "none",
                "none" if verdicts is None else f"on {sum(v is not None for v in verdicts[col.CHECKS_PASSED])} rows")
    return measured
