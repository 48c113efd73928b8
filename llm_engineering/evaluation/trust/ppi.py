"""Prediction-powered inference: a mean from a few human labels and every verdict of the judge. Three means: a
criterion's for one model (`ppi_by_criterion`), the paired difference of two models' (`ppi_difference`), a pairwise
win rate (`ppi_win_rate`).

The judge's mean over every row is biased by however far its scores sit from people's; the labelled rows measure
that bias, and PPI subtracts it (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, Science 2023). PPI++ (Angelopoulos,
Duchi and Zrnic, 2023) weighs the judge by how well it predicts the labels (lambda, tuned to the narrowest interval):
a judge that predicts nothing gets lambda 0 and the estimate is the labels' own mean, so it is never worse than the
labels alone. The estimators are the method authors' `ppi-python`. The 95% interval holds when the labelled rows are
a uniform random sample of the rows (the report's "Label at random" gives that order); each estimate says whether its
labels say so (`random_sample`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.preference import points, swapped
from llm_engineering.evaluation.samples import answer_key
from llm_engineering.evaluation.stored.pairwise import PairwiseComparison
from llm_engineering.evaluation.stored.ppi import Estimate, PPIEstimate
from llm_engineering.evaluation.trust.labels import Labels, PairwiseLabel, PointwiseLabel

MIN_LABELLED = 10  # the intervals are normal approximations: fewer labelled rows than this give none
ALPHA = 0.05


def _interval(low: float, high: float) -> list[float]:
    return [round(float(low), 4), round(float(high), 4)]


def _tuned_lambda(y: np.ndarray, yhat: np.ndarray, rest: np.ndarray) -> float:
    """PPI++'s power tuning for a mean, as `ppi-python` tunes it when given `lam=None` (its `_calc_lam_glm`, which it
    does not return): the labels' covariance with the judge over the judge's variance, shrunk by n/N, in [0, 1]. A
    judge that gives one score everywhere predicts nothing: 0."""
    variance = float(np.var(np.concatenate([yhat, rest]), ddof=1))
    if variance == 0:
        return 0.0
    covariance = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(covariance / ((1 + len(y) / len(rest)) * variance), 0.0, 1.0))


def ppi_mean(human: Sequence[float], judge_labelled: Sequence[Optional[float]],
             judge_unlabelled: Sequence[Optional[float]]) -> PPIEstimate:
    """The PPI++ mean of `human` labels (with the judge's scores of the same rows, `judge_labelled`) and the judge's
    scores of the other rows. Rows the judge could not score are left out of both."""
    import ppi_py  # statsmodels with it: a second's import, paid only by a run with labels
    if len(human) != len(judge_labelled):
        raise ValueError(f"{len(human)} labels for {len(judge_labelled)} judge scores of the labelled rows")
    pairs = [(h, j) for h, j in zip(human, judge_labelled) if j is not None]
    rest = np.array([j for j in judge_unlabelled if j is not None], dtype=float)
    y, yhat = np.array([h for h, _ in pairs], dtype=float), np.array([j for _, j in pairs], dtype=float)
    every = np.concatenate([yhat, rest])
    judge_only = Estimate(mean=round(float(every.mean()), 4) if len(every) else None)
    labels_only = Estimate(mean=round(float(y.mean()), 4) if len(y) else None)
    figures = {"labelled": len(y), "unlabelled": len(rest), "judge_only": judge_only}
    if len(y) < MIN_LABELLED or len(rest) == 0:
        more = MIN_LABELLED - len(y)
        problem = (f"{len(y)} labelled rows with a judge score: label {more} more (at least {MIN_LABELLED})"
                   if more > 0 else "every judged row is labelled: the labels' mean is the estimate")
        return PPIEstimate(mean=None, labels_only=labels_only, problem=problem, **figures)
    labels_only.ci = _interval(*ppi_py.classical_mean_ci(y, alpha=ALPHA))
    lam = _tuned_lambda(y, yhat, rest)
    mean = float(np.atleast_1d(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=lam))[0])
    low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=ALPHA, lam=lam)
    return PPIEstimate(mean=round(mean, 4), ci=_interval(np.atleast_1d(low)[0], np.atleast_1d(high)[0]),
                       labels_only=labels_only, bias=round(float(yhat.mean() - y.mean()), 4),
                       power_tuning=round(lam, 4), **figures)


def _random_sample(labels: Sequence[PointwiseLabel | PairwiseLabel]) -> Optional[bool]:
    """Whether `labels` are of rows chosen at random, as the labelling view recorded: True when every label says so,
    False when any was chosen otherwise ('Label next', or by hand), None when the labels do not say."""
    said = [label.chosen for label in labels]
    if any(chosen not in (None, "random") for chosen in said):
        return False
    return True if said and all(chosen == "random" for chosen in said) else None


def _judge_score(row: dict[str, Any], criterion: str) -> Optional[float]:
    return row.get(col.score(criterion)) if row.get(col.JUDGE_ERROR) is None else None


class _PointwiseLabels:
    """Pointwise labels by (id, exact answer, criterion): several labels of one answer are kept together."""

    def __init__(self, labels: Labels):
        self.by_key: dict[tuple[str, str, str], list[PointwiseLabel]] = {}
        for label in labels.pointwise_rows if labels.kind == "pointwise" else []:
            self.by_key.setdefault((label.id, label.answer, label.criterion), []).append(label)

    def of(self, row: dict[str, Any], criterion: str) -> list[PointwiseLabel]:
        return self.by_key.get((str(row[col.ID]), row.get(col.ANSWER) or "", criterion), [])


def _mean(labels: list[PointwiseLabel]) -> float:
    return sum(label.score for label in labels) / len(labels)


def _estimate(human: list[float], judged: list[Optional[float]], rest: list[Optional[float]],
              used: Sequence[PointwiseLabel | PairwiseLabel]) -> PPIEstimate:
    return ppi_mean(human, judged, rest).model_copy(update={"random_sample": _random_sample(used)})


def ppi_by_criterion(rows: list[dict[str, Any]], labels: Labels, criteria: list[str]) -> dict[str, PPIEstimate]:
    """Each criterion's PPI++ mean over one model's `rows`: a row is labelled on a criterion where a pointwise label
    names its id and its exact answer (several labels of one row: their mean); the judge's score is the row's integer
    score (the table's). Empty without pointwise labels of this model's answers."""
    given = _PointwiseLabels(labels)
    out = {}
    for name in criteria:
        labelled, judged_labelled, rest, used = [], [], [], []
        for row in rows:
            if found := given.of(row, name):
                labelled.append(_mean(found))
                judged_labelled.append(_judge_score(row, name))
                used += found
            else:
                rest.append(_judge_score(row, name))
        if labelled:
            out[name] = _estimate(labelled, judged_labelled, rest, used)
    return out


def ppi_difference(rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], labels: Labels,
                   criterion: str) -> Optional[PPIEstimate]:
    """Model a's mean minus model b's on one criterion, PPI++ over the rows both answered (paired by id and sample): a
    row is labelled where pointwise labels score both its answers. None without such a row."""
    given, by_key = _PointwiseLabels(labels), {answer_key(row): row for row in rows_b}
    human: list[float] = []
    judged: list[Optional[float]] = []
    rest: list[Optional[float]] = []
    used: list[PointwiseLabel | PairwiseLabel] = []
    for row_a in rows_a:
        if (row_b := by_key.get(answer_key(row_a))) is None:
            continue
        a, b = _judge_score(row_a, criterion), _judge_score(row_b, criterion)
        difference = None if a is None or b is None else a - b
        found_a, found_b = given.of(row_a, criterion), given.of(row_b, criterion)
        if found_a and found_b:
            human.append(_mean(found_a) - _mean(found_b))
            judged.append(difference)
            used += found_a + found_b
        else:
            rest.append(difference)
    return _estimate(human, judged, rest, used) if human else None


def _pair_label(given: dict[tuple[str, str, str], PairwiseLabel], pair_id: str, a: Optional[str],
                b: Optional[str]) -> Optional[tuple[PairwiseLabel, float]]:
    """The label of answers `a` and `b`, shown in either position, and the points it gives `a`."""
    if a is None or b is None:
        return None
    if (label := given.get((pair_id, a, b))) is not None:
        return label, points(label.preferred)
    if (label := given.get((pair_id, b, a))) is not None:
        return label, points(swapped(label.preferred) or "tie")
    return None


def ppi_win_rate(comparison: PairwiseComparison, rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]],
                 labels: Labels) -> Optional[PPIEstimate]:
    """`comparison.model_a`'s win rate (1 a win, 0.5 a tie), PPI++ over its judged pairs: a pair is labelled where a
    pairwise label names its id and both exact answers, in either position. None without such a pair."""
    if labels.kind != "pairwise":
        return None
    given = {(label.id, label.answer_a, label.answer_b): label for label in labels.pairwise_rows}
    answers_a, answers_b = ({answer_key(row): row.get(col.ANSWER) or "" for row in rows} for rows in (rows_a, rows_b))
    human: list[float] = []
    judged: list[Optional[float]] = []
    rest: list[Optional[float]] = []
    used: list[PointwiseLabel | PairwiseLabel] = []
    for pair in comparison.details:
        judge = pair.points if pair.error is None else None
        key = (pair.id, pair.sample)
        if found := _pair_label(given, pair.id, answers_a.get(key), answers_b.get(key)):
            human.append(found[1])
            judged.append(judge)
            used.append(found[0])
        else:
            rest.append(judge)
    return _estimate(human, judged, rest, used) if human else None
