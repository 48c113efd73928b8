"""Prediction-powered inference: a criterion's mean from a few human labels and every verdict of the judge.

The judge's mean over every row is biased by however far its scores sit from people's; the labelled rows measure
that bias, and PPI subtracts it (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, Science 2023). PPI++ (Angelopoulos,
Duchi and Zrnic, 2023) weighs the judge by how well it predicts the labels (lambda, tuned to the narrowest interval):
a judge that predicts nothing gets lambda 0 and the estimate is the labels' own mean, so it is never worse than the
labels alone. The estimators are the method authors' `ppi-python`. The 95% interval holds when the labelled rows are
a uniform random sample of the rows (the report's "Label at random" gives that order).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.stored.ppi import Estimate, PPIEstimate
from llm_engineering.evaluation.trust.labels import Labels

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


def ppi_by_criterion(rows: list[dict[str, Any]], labels: Labels, criteria: list[str]) -> dict[str, PPIEstimate]:
    """Each criterion's PPI++ mean over one model's `rows`: a row is labelled on a criterion where a pointwise label
    names its id and its exact answer (several labels of one row: their mean); the judge's score is the row's integer
    score (the table's). Empty without pointwise labels of this model's answers."""
    human: dict[tuple[str, str, str], list[float]] = {}
    for label in labels.pointwise_rows if labels.kind == "pointwise" else []:
        human.setdefault((label.id, label.answer, label.criterion), []).append(float(label.score))
    out = {}
    for name in criteria:
        labelled, judged_labelled, rest = [], [], []
        for row in rows:
            given = human.get((str(row[col.ID]), row.get(col.ANSWER) or "", name))
            score = row.get(col.score(name)) if row.get(col.JUDGE_ERROR) is None else None
            if given:
                labelled.append(sum(given) / len(given))
                judged_labelled.append(score)
            else:
                rest.append(score)
        if labelled:
            out[name] = ppi_mean(labelled, judged_labelled, rest)
    return out
