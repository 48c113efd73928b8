"""The judge-free figures of a summary: each metric's mean with its interval and the rows it covers, the checks'
pass rates, and models compared on them (as criteria are: paired on the rows both have a value for).

A metric's value per row is the mean over the row's answers (several answers per prompt), and its interval the
two-level bootstrap's, as a criterion's. The checks' row-level rate (every check of an answer passed) has a Wilson
interval (two-level with several answers per prompt); the item-level and per-type rates count each check on its own.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.metrics.names import METRICS, SIMILARITY
from llm_engineering.evaluation.rates import bootstrap_ci, mean, rate
from llm_engineering.evaluation.samples import grouped, row_means, two_level_ci
from llm_engineering.evaluation.stored.metrics import CheckScores, MetricScores
from llm_engineering.evaluation.stored.summary import ModelComparison

CHECKS = "checks"  # the name of the checks' row-level figure in comparisons and gates: every check passed
CHECK_ITEMS = "check_items"  # each check on its own (gates)


def measured_metrics(column_names: Sequence[str]) -> list[str]:
    """The metrics whose columns the rows hold, in the order they were measured (similarity where it was)."""
    present = set(column_names)
    stored: list[str] = [name.removeprefix(col.metric("")) for name in column_names if name.startswith(col.metric(""))]
    return [name for name in stored if name in METRICS] + ([str(SIMILARITY)] if col.REFERENCE_SIMILARITY in present else [])


def measure_values(rows: list[dict[str, Any]], name: str) -> dict[str, float]:
    """Row id -> the row's value of metric `name`, or of `checks` (1.0: every check passed); with samples, the mean
    over the row's answers that have one."""
    if name == CHECKS:
        return row_means(grouped(rows, lambda r: None if r.get(col.CHECKS_PASSED) is None else float(r[col.CHECKS_PASSED])))
    return row_means(grouped(rows, _values_of(name)))


def _values_of(name: str) -> Callable[[dict[str, Any]], Optional[float]]:
    column = col.metric(name)
    return lambda row: row.get(column)


def metric_scores(rows: list[dict[str, Any]], names: Sequence[str]) -> list[MetricScores]:
    """Each metric's mean over the answers it covers (mean of row means), its 95% interval and its coverage."""
    figures = []
    for name in names:
        groups = grouped(rows, _values_of(name))
        figures.append(MetricScores(name=name, mean=mean(list(row_means(groups).values())),
                                    ci=two_level_ci(list(groups.values())),
                                    rows=sum(map(len, groups.values())), answers=len(rows)))
    return figures


def check_scores(rows: list[dict[str, Any]], samples: int = 1) -> Optional[CheckScores]:
    """The checks' pass rates over the answers that have checks; None where none has."""
    checked = [r for r in rows if r.get(col.CHECKS_PASSED) is not None]
    if not checked:
        return None
    passed = rate(sum(bool(r[col.CHECKS_PASSED]) for r in checked), len(checked))
    if samples > 1:  # a row's answers are not independent trials: rows, then answers within a row, drawn
        groups = grouped(checked, lambda r: float(r[col.CHECKS_PASSED]))
        passed = passed.model_copy(update={"ci": two_level_ci(list(groups.values()))})
    verdicts = [v for r in checked for v in r.get(col.CHECK_RESULTS) or []]
    by_type = {kind: rate(sum(v["passed"] for v in verdicts if v["type"] == kind),
                          sum(v["type"] == kind for v in verdicts))
               for kind in dict.fromkeys(v["type"] for v in verdicts)}
    return CheckScores(rows=len(checked), passed=passed, items=rate(sum(v["passed"] for v in verdicts), len(verdicts)),
                       by_type=by_type)


def compare_measures(a: list[dict[str, Any]], b: list[dict[str, Any]], names: Sequence[str]) -> list[ModelComparison]:
    """Model `a` minus model `b` on each metric of `names` and on the checks (where both have them), paired on the
    rows both have a value for, with a bootstrap interval."""
    comparisons = []
    for name in [*names, CHECKS]:
        values_a, values_b = measure_values(a, name), measure_values(b, name)
        common = sorted(values_a.keys() & values_b.keys())
        if not common:
            continue
        differences = [values_a[i] - values_b[i] for i in common]
        comparisons.append(ModelComparison(model_a=a[0][col.MODEL_ID], model_b=b[0][col.MODEL_ID], criterion=name,
                                           paired_rows=len(common), difference=mean(differences),
                                           ci=bootstrap_ci(differences)))
    return comparisons
