"""Escalation: the rows a judge is unsure of go to a second judge, the others keep the first judge's verdict.

A verdict's confidence (`judge_confidence`) is the judge's probability of the integer score it gave, the lowest over
the rubric's criteria, read from the distribution the row's expected score comes from: under a rubric that writes each
analysis first and reads its expected scores before it (`expected_before_analysis`, the default's), that is the
probe's, so the confidence is how likely the judge found, before its analysis, the score it wrote after it; else the
verdict's own score token. Under a checklist rubric the checklist criterion's distribution is its level's
(`checklist.level_probabilities`: how likely the items' Yes and No, drawn each with its probability, give each level),
so a row whose items the judge is sure of keeps its verdict and one whose level hangs on an item near 0.5 goes on; the
other criteria's come from their scores' reply. A judge without logprobs, or a row it could not score, has none and is
escalated. Rows under `threshold` (one found on labelled data, e.g. by `judge-bench --calibration`) are judged again by
the second judge; where it answers, its verdict replaces the first, and where it fails, the row keeps the first judge's
verdict and says why. Nothing already judged is lost.
"""

from __future__ import annotations

from typing import Any, Optional

from datasets import Dataset, Value

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.verdict_record import judge_columns


def verdict_confidence(row: dict[str, Any], rubric: Rubric) -> Optional[float]:
    """The judge's probability of the integer score it gave, from the row's score distribution (the probe's under
    `expected_before_analysis`: see the module doc), the lowest over the criteria; None without a verdict or
    probabilities."""
    if row.get(col.JUDGE_ERROR) is not None:
        return None
    chances = []
    for criterion in rubric.criteria:
        score, probabilities = row.get(col.score(criterion.name)), row.get(col.probabilities(criterion.name))
        if score is None or not probabilities or score not in criterion.values:
            return None
        chances.append(probabilities[criterion.values.index(score)])
    return round(min(chances), 6) if chances else None


def with_confidence(rows: Dataset, rubric: Rubric) -> Dataset:
    """`rows` with each verdict's confidence (`verdict_confidence`) in `judge_confidence`."""
    confidence = [verdict_confidence(r, rubric) for r in rows.to_list()]
    rows = rows.remove_columns(col.CONFIDENCE) if col.CONFIDENCE in rows.column_names else rows
    return rows.add_column(col.CONFIDENCE, confidence, feature=Value("float64"))


def escalate(rows: Dataset, second: Judge, threshold: float) -> Dataset:
    """`rows` (scored by the first judge) with a confidence each, and the rows under `threshold` judged by `second`:
    its verdict where it gave one (`escalated` true), else the first judge's kept with `escalation_error`."""
    records = rows.to_list()
    confidence = [verdict_confidence(r, second.rubric) for r in records]
    under = [i for i, c in enumerate(confidence) if c is None or c < threshold]
    verdict_columns = list(judge_columns(second.rubric))
    rejudged = score_answers(rows.select(under), second).to_list() if under else []
    for record, c in zip(records, confidence):  # a rescored run's earlier escalation is replaced, not kept
        record |= {col.CONFIDENCE: c, col.ESCALATED: False, col.ESCALATION_ERROR: None}
    for i, again in zip(under, rejudged):
        if again[col.JUDGE_ERROR] is None:
            records[i] |= {name: again[name] for name in verdict_columns} | {col.ESCALATED: True}
        else:
            records[i][col.ESCALATION_ERROR] = f"{again[col.JUDGE_MODEL]}: {again[col.JUDGE_ERROR]}"
    return Dataset.from_list(records, features=_features(rows))


def _features(rows: Dataset) -> Any:
    features = rows.features.copy()
    features[col.CONFIDENCE] = Value("float64")
    features[col.ESCALATED] = Value("bool")
    features[col.ESCALATION_ERROR] = Value("string")
    return features
