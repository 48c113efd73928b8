"""CI gates: `--fail-under METRIC=VALUE`, checked against a finished run's summary.

The run completes and stores everything first; a gate only decides the exit code. Metrics:

- a rubric criterion (`accuracy`, `style`, ...): each model's mean integer score;
- `<criterion>_expected`: each model's mean expected (probability-weighted) score;
- `similarity`: each model's mean cosine similarity of answer and reference;
- `judge_check`: the judge check's share of pairs where the right answer scored higher (integer scores);
- `judge_check_expected`: the same with integer ties broken by expected scores;
- a judge-free metric (`token_f1`, `rouge_l`, `reference_words`, ...: `metrics.names`): each model's mean;
- `checks`: each model's share of answers passing every one of their checks; `check_items`: of checks passed.

`METRIC=VALUE@CATEGORY` holds the rows of one category (the dataset's category column) to it. Every model must clear
a per-model gate. A metric the run did not measure fails its gate, saying why.
`--max-failed-rate RATE` holds each model's share of rows without a valid verdict to at most RATE.
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel

from llm_engineering.evaluation.metrics.names import METRICS
from llm_engineering.evaluation.stored.metrics import CheckScores, MetricScores
from llm_engineering.evaluation.stored.summary import CriterionScores, EvaluationSummary

GATE_FAILED_EXIT_CODE = 3  # 0: passed, 1: the run failed, 2: bad command line, 3: the run passed but a gate failed
_GATE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*=\s*([-+]?\d+(?:\.\d+)?)\s*(?:@\s*(\S.*?))?\s*$")
Values = dict[str, list[tuple[str, Optional[float]]]]  # a metric -> (who it is of, value or None: not measured)


class Gate(BaseModel):
    metric: str
    threshold: float
    category: Optional[str] = None  # the rows of this category only

    def __str__(self) -> str:
        return f"{self.metric}={self.threshold:g}" + (f"@{self.category}" if self.category else "")


def parse_gate(text: str) -> Gate:
    """`accuracy=2.0` or `accuracy=2.0@coding` -> Gate; anything else is a ValueError that shows the form."""
    match = _GATE.match(text)
    if not match:
        raise ValueError(f"--fail-under {text!r}: write METRIC=VALUE, e.g. accuracy=2.0, token_f1=0.4, checks=0.9 or "
                         f"judge_check=0.7, or METRIC=VALUE@CATEGORY for one category's rows (accuracy=2.0@coding)")
    return Gate(metric=match[1], threshold=float(match[2]), category=match[3])


def _scores(values: Values, subject: str, criteria: list[CriterionScores], metrics: list[MetricScores],
            checks: Optional[CheckScores]) -> None:
    """Add one model's (or one model's category's) criteria, metrics and checks to `values`."""
    for c in criteria:
        values.setdefault(c.name, []).append((subject, c.mean))
        values.setdefault(f"{c.name}_expected", []).append((subject, c.expected_mean))
    measured = {m.name: m.mean for m in metrics}
    for name in METRICS:
        values.setdefault(name, []).append((subject, measured.get(name)))
    values.setdefault("checks", []).append((subject, checks.passed.rate if checks else None))
    values.setdefault("check_items", []).append((subject, checks.items.rate if checks else None))


def metric_values(summary: EvaluationSummary, category: Optional[str] = None) -> Values:
    """Every gateable metric of `summary` (of one `category`'s rows): its name -> (who it is of, value or None when not
    measured)."""
    values: Values = {}
    for m in summary.models:
        if category is None:
            _scores(values, m.model_id, m.criteria, m.metrics, m.checks)
            continue
        own = next((c for c in m.categories if c.category == category), None)
        if own is not None:
            _scores(values, f"{m.model_id} on {category}", own.criteria, own.metrics, own.checks)
    if category is None:
        values["similarity"] = [(m.model_id, m.similarity_mean) for m in summary.models]  # runs stored before metrics
        check = summary.judge_check
        values["judge_check"] = [("the judge", check.reference_higher.rate if check else None)]
        expected = check.reference_higher_tie_broken if check else None
        values["judge_check_expected"] = [("the judge", expected.rate if expected else None)]
    return values


def _not_measured(gate: Gate) -> str:
    if gate.metric in METRICS:
        return (f"not measured: add {gate.metric} to the config's metrics (or --metric {gate.metric}); a model whose "
                f"rows have no reference has none")
    if gate.metric in ("checks", "check_items"):
        return "no answer has a check: give the rows a checks column, or the config checks:"
    return "not measured: check the config"


def failed_gates(summary: EvaluationSummary, gates: list[Gate]) -> list[str]:
    """One line per gate that failed (empty: every gate passed)."""
    failures = []
    for gate in gates:
        if gate.category is not None and gate.category not in summary.categories:
            having = f"it has: {', '.join(summary.categories)}" if summary.categories else (
                "its rows have none: name the column with --group-by COLUMN")
            failures.append(f"{gate}: this run has no category {gate.category!r} ({having})")
            continue
        values = metric_values(summary, gate.category)
        if gate.metric not in values:
            failures.append(f"{gate}: this run has no metric {gate.metric!r} (it has: {', '.join(values)})")
            continue
        for subject, value in values[gate.metric]:
            if value is None:
                failures.append(f"{gate}: {subject} has no {gate.metric} in this run ({_not_measured(gate)})")
            elif value < gate.threshold:
                failures.append(f"{gate}: {subject} has {gate.metric} {value:.3g}, under {gate.threshold:g}")
    return failures


def failed_rate_failures(summary: EvaluationSummary, max_rate: float) -> list[str]:
    """One line per model whose share of rows without a valid verdict is over `max_rate`."""
    return [f"max-failed-rate={max_rate:g}: {m.model_id} has {m.rows - m.scored} of {m.rows} rows without a valid "
            f"verdict ({m.failure_rate:.1%}: a judge error, or no answer because the prompt was too long), over "
            f"{max_rate:.1%}; `rescore --only-failed` asks the judge again for those rows"
            for m in summary.models if m.failure_rate > max_rate]
