"""CI gates: `--fail-under METRIC=VALUE`, checked against a finished run's summary.

The run completes and stores everything first; a gate only decides the exit code. Metrics:

- a rubric criterion (`accuracy`, `style`, ...): each model's mean integer score;
- `<criterion>_expected`: each model's mean expected (probability-weighted) score;
- `similarity`: each model's mean cosine similarity of answer and reference;
- `judge_check`: the judge check's share of pairs where the right answer scored higher (integer scores);
- `judge_check_expected`: the same with integer ties broken by expected scores.

Every model must clear a per-model gate. A metric the run did not measure fails its gate, saying why.
`--max-failed-rate RATE` holds each model's share of rows without a valid verdict to at most RATE.
"""

from __future__ import annotations

import re
from typing import Optional

from pydantic import BaseModel

from llm_engineering.evaluation.stored.summary import EvaluationSummary

GATE_FAILED_EXIT_CODE = 3  # 0: passed, 1: the run failed, 2: bad command line, 3: the run passed but a gate failed
_GATE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*=\s*([-+]?\d+(?:\.\d+)?)\s*$")


class Gate(BaseModel):
    metric: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}={self.threshold:g}"


def parse_gate(text: str) -> Gate:
    """`accuracy=2.0` -> Gate; anything else is a ValueError that shows the form."""
    match = _GATE.match(text)
    if not match:
        raise ValueError(f"--fail-under {text!r}: write METRIC=VALUE, e.g. accuracy=2.0, similarity=0.4 or "
                         f"judge_check=0.7")
    return Gate(metric=match[1], threshold=float(match[2]))


def metric_values(summary: EvaluationSummary) -> dict[str, list[tuple[str, Optional[float]]]]:
    """Every gateable metric of `summary`: its name -> (who it is of, value or None when not measured)."""
    values: dict[str, list[tuple[str, Optional[float]]]] = {}
    for name in summary.criteria:
        values[name] = [(m.model_id, m.criterion(name).mean) for m in summary.models]
        values[f"{name}_expected"] = [(m.model_id, m.criterion(name).expected_mean) for m in summary.models]
    values["similarity"] = [(m.model_id, m.similarity_mean) for m in summary.models]
    check = summary.judge_check
    values["judge_check"] = [("the judge", check.reference_higher.rate if check else None)]
    expected = check.reference_higher_tie_broken if check else None
    values["judge_check_expected"] = [("the judge", expected.rate if expected else None)]
    return values


def failed_gates(summary: EvaluationSummary, gates: list[Gate]) -> list[str]:
    """One line per gate that failed (empty: every gate passed)."""
    values = metric_values(summary)
    failures = []
    for gate in gates:
        if gate.metric not in values:
            failures.append(f"{gate}: this run has no metric {gate.metric!r} (it has: {', '.join(values)})")
            continue
        for subject, value in values[gate.metric]:
            if value is None:
                failures.append(f"{gate}: {subject} has no {gate.metric} in this run (not measured: check the config)")
            elif value < gate.threshold:
                failures.append(f"{gate}: {subject} has {gate.metric} {value:.3g}, under {gate.threshold:g}")
    return failures


def failed_rate_failures(summary: EvaluationSummary, max_rate: float) -> list[str]:
    """One line per model whose share of rows without a valid verdict is over `max_rate`."""
    return [f"max-failed-rate={max_rate:g}: {m.model_id} has {m.rows - m.scored} of {m.rows} rows without a valid "
            f"verdict ({m.failure_rate:.1%}: a judge error, or no answer because the prompt was too long), over "
            f"{max_rate:.1%}; `rescore --only-failed` asks the judge again for those rows"
            for m in summary.models if m.failure_rate > max_rate]
