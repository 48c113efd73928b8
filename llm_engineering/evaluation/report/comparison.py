"""This run against an earlier one (`--compare-to`): per model and metric, the mean difference over the
rows both runs scored, with a paired bootstrap interval, and the rows whose scores changed most.

Paired on row ids: the same test items, so item difficulty cancels out and a small real change shows
where two independent means would not. A metric regressed when its difference is below zero and its bootstrap
p-value passes Holm's correction across every metric and model compared (family-wise 5%): a gate that tests ten
metrics at 5% each would fire on noise in four runs of ten.
"""

from __future__ import annotations

from typing import Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.metrics.names import METRICS
from llm_engineering.evaluation.rates import bootstrap_ci, bootstrap_p, detectable_difference, holm, mean
from llm_engineering.evaluation.report.measures import CHECKS, measure_values, measured_metrics
from llm_engineering.evaluation.samples import sample_of, verdict_means

CHANGED_ROWS = 10
FAMILY_ALPHA = 0.05  # the chance that a comparison of two runs alike flags any metric at all


class MetricChange(BaseModel):
    """One model's metric in this run minus the earlier run, on the rows both have a value for."""

    model_id: str
    metric: str = Field(description="a criterion (integer scores), <criterion>_expected, a judge-free metric (similarity "
                        "among them), or checks (answers passing every check)")
    paired_rows: int
    current_mean: Optional[float]
    previous_mean: Optional[float]
    difference: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% paired bootstrap interval of the difference")
    p_value: Optional[float] = Field(None, description="two-sided paired bootstrap p-value of no difference")
    detectable: Optional[float] = Field(None, description="the smallest difference these rows detect at 80% power")
    regressed: bool = Field(False, description="worse, and significant after Holm's correction across the comparison")

    @property
    def worse_uncorrected(self) -> bool:
        """The whole 95% interval lies below zero: worse if this metric were the only one tested."""
        return self.ci is not None and self.ci[1] < 0


class RowChange(BaseModel):
    """One row whose integer scores changed between the runs."""

    model_id: str
    id: str
    sample: int = 0
    instruction: str
    previous_scores: dict[str, int]
    current_scores: dict[str, int]
    change: int = Field(description="sum over criteria of this run's score minus the earlier run's")
    answer_changed: bool


class RunComparison(BaseModel):
    previous_run: str
    metrics: list[MetricChange]
    tested: int = Field(0, description="metrics with a p-value: the family Holm's correction spans")
    changed_rows: list[RowChange] = Field(description=f"the {CHANGED_ROWS} rows whose scores changed most")
    unmatched_models: list[str] = Field(default_factory=list, description="models of this run the earlier one lacks")

    def regressions(self) -> list[MetricChange]:
        return [m for m in self.metrics if m.regressed]


def _values(rows: list[dict], metric: str) -> dict[str, float]:
    """row id -> the metric's value (with samples: their mean), for rows with a valid verdict (a judge-free metric, the
    checks: rows with a value, whatever their verdict)."""
    if metric in METRICS or metric == CHECKS:
        return measure_values(rows, metric)
    column = col.expected(metric.removesuffix("_expected")) if metric.endswith("_expected") else col.score(metric)
    return verdict_means(rows, column)



def _metric_change(model_id: str, metric: str, current: list[dict], previous: list[dict]) -> MetricChange:
    now, before = _values(current, metric), _values(previous, metric)
    shared = sorted(now.keys() & before.keys())
    differences = [now[i] - before[i] for i in shared]
    return MetricChange(
        model_id=model_id, metric=metric, paired_rows=len(shared),
        current_mean=mean([now[i] for i in shared]), previous_mean=mean([before[i] for i in shared]),
        difference=mean(differences), ci=bootstrap_ci(differences), p_value=bootstrap_p(differences),
        detectable=detectable_difference(differences),
    )


def _row_changes(model_id: str, criteria: list[str], current: list[dict], previous: list[dict]) -> list[RowChange]:
    before = {(r[col.ID], sample_of(r)): r for r in previous}
    changes = []
    for row in current:
        old = before.get((row[col.ID], sample_of(row)))
        if old is None or row.get(col.JUDGE_ERROR) or old.get(col.JUDGE_ERROR):
            continue
        now_scores = {c: s for c in criteria if (s := row.get(col.score(c))) is not None}
        old_scores = {c: s for c in criteria if (s := old.get(col.score(c))) is not None}
        if now_scores.keys() != set(criteria) or old_scores.keys() != set(criteria) or now_scores == old_scores:
            continue
        changes.append(RowChange(
            model_id=model_id, id=str(row[col.ID]), sample=sample_of(row), instruction=(row.get(col.INSTRUCTION) or "")[:200],
            previous_scores=old_scores, current_scores=now_scores,
            change=sum(now_scores[c] - old_scores[c] for c in criteria),
            answer_changed=row.get(col.ANSWER) != old.get(col.ANSWER),
        ))
    return changes


def _by_model(evaluations: list[Dataset]) -> dict[str, list[dict]]:
    return {dataset[0][col.MODEL_ID]: dataset.to_list() for dataset in evaluations if len(dataset)}


def compare_runs(current: list[Dataset], previous: list[Dataset], criteria: list[str], previous_run: str) -> RunComparison:
    """Each model of `current` that `previous` also evaluated, on each criterion (integer and expected
    scores), each judge-free metric and the checks where both runs measured them."""
    now, before = _by_model(current), _by_model(previous)
    metrics, rows = [], []
    for model_id, current_rows in now.items():
        if model_id not in before:
            continue
        measured = list(dict.fromkeys([*measured_metrics(list(current_rows[0])), "similarity"]))
        for metric in [*criteria, *(f"{c}_expected" for c in criteria), *measured, CHECKS]:
            change = _metric_change(model_id, metric, current_rows, before[model_id])
            if change.paired_rows:
                metrics.append(change)
        rows += _row_changes(model_id, criteria, current_rows, before[model_id])
    rows.sort(key=lambda r: (-abs(r.change), r.model_id, r.id))
    significant = holm([m.p_value for m in metrics], FAMILY_ALPHA)
    metrics = [m.model_copy(update={"regressed": bool(m.difference is not None and m.difference < 0 and flagged)})
               for m, flagged in zip(metrics, significant)]
    return RunComparison(previous_run=previous_run, metrics=metrics, changed_rows=rows[:CHANGED_ROWS],
                         unmatched_models=sorted(now.keys() - before.keys()),
                         tested=sum(m.p_value is not None for m in metrics))
