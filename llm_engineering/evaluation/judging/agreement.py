"""Agreement between judges (jury verdicts, Krippendorff's alpha) and length bias of the verdicts."""

from __future__ import annotations

import math
from typing import Literal, Optional, Sequence

import krippendorff
import numpy as np
from datasets import Dataset
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.preference import compare, longer
from llm_engineering.evaluation.rates import bootstrap_rows_ci, rate
from llm_engineering.evaluation.samples import majority
from llm_engineering.evaluation.stored.figures import JuryAgreement, LengthCorrelation, Rate

Scores = list[list[Optional[float]]]  # scores[j][i]: judge j's score for row i, None where it gave none
Level = Literal["nominal", "ordinal", "interval", "ratio"]  # Krippendorff's levels of measurement


def _check_judges(scores: Scores) -> int:
    """The number of rows, after checking that there are judges and that they score the same rows."""
    if not scores:
        raise ValueError("no judges: scores must hold one list per judge")
    lengths = {len(judge) for judge in scores}
    if len(lengths) > 1:
        raise ValueError(f"judges score different numbers of rows: {sorted(lengths)}")
    return lengths.pop()


def jury_aggregate(scores: Scores, method: Literal["mean", "majority"]) -> list[Optional[float]]:
    """One verdict per row from several judges; a row no judge scored is None.

    "mean": the mean of the judges' scores. "majority": the most common score (on an integer scale);
    a tie goes to the lowest tied score, so a split jury never inflates a verdict.
    """
    if method not in ("mean", "majority"):
        raise ValueError(f"unknown method {method!r}: use 'mean' or 'majority'")
    verdicts: list[Optional[float]] = []
    for i in range(_check_judges(scores)):
        values = [v for judge in scores if (v := judge[i]) is not None]
        if not values:
            verdicts.append(None)
        elif method == "mean":
            verdicts.append(round(sum(values) / len(values), 4))
        else:
            verdicts.append(round(float(majority(values)), 4))
    return verdicts


def krippendorff_alpha(scores: Scores, level: Level = "ordinal", values: Optional[Sequence[int]] = None) -> Optional[float]:
    """Krippendorff's alpha of judges (coders) x rows (units); None where alpha is undefined.

    Undefined: fewer than 2 judges, fewer than 2 rows scored by at least 2 judges, or no variation
    among those rows' scores. `values` is the full scale (e.g. 1-5), passed as the value domain.
    """
    _check_judges(scores)
    if len(scores) < 2:
        return None
    data = np.array([[np.nan if s is None else s for s in judge] for judge in scores], dtype=float)
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    if pairable.shape[1] < 2 or len(np.unique(pairable[~np.isnan(pairable)])) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 gives nan (None below); the checks above should prevent it
        alpha = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=values)
    return None if math.isnan(alpha) else round(float(alpha), 4)


def alpha_with_ci(scores: Scores, *, level: Level = "ordinal", values: Optional[Sequence[int]] = None,
                  samples: int = 1000, seed: int = 0) -> tuple[Optional[float], Optional[list[float]]]:
    """Alpha and its 95% percentile-bootstrap interval, resampling rows with replacement.

    Resamples where alpha is undefined are skipped; the interval is None with fewer than 2 left.
    """
    alpha = krippendorff_alpha(scores, level, values)
    if alpha is None:
        return None, None
    return alpha, bootstrap_rows_ci(
        len(scores[0]), lambda rows: krippendorff_alpha([[judge[i] for i in rows] for judge in scores], level, values),
        samples, seed)


def length_correlation(scores: list[Optional[float]], lengths: list[int]) -> Optional[LengthCorrelation]:
    """Whether the judge favours long answers; None with fewer than 3 scored rows."""
    pairs = [(s, n) for s, n in zip(scores, lengths, strict=True) if s is not None]
    if len(pairs) < 3:
        return None
    xs, ys = zip(*pairs)
    if len(set(xs)) < 2 or len(set(ys)) < 2:  # the rank correlation of a constant is undefined
        return LengthCorrelation(rows=len(pairs), spearman=None, p_value=None)
    result = spearmanr(xs, ys)
    return LengthCorrelation(rows=len(pairs), spearman=round(float(result.statistic), 4),
                             p_value=round(float(result.pvalue), 4))


def longer_answer_wins(points: list[Optional[float]], length_a: list[int], length_b: list[int]) -> Rate:
    """How often the longer answer won, among decisive verdicts (not ties, not failures) of unequal lengths.

    `points[i]` is model A's points for row i: 1 win, 0.5 tie, 0 loss, None failed.
    """
    decided = [(compare(p, 0.5), longer(a, b)) for p, a, b in zip(points, length_a, length_b, strict=True)]
    decisive = [(won, long) for won, long in decided if won not in (None, "tie") and long != "tie"]
    return rate(sum(won == long for won, long in decisive), len(decisive))


def length_controlled_win_rate(points: list[Optional[float]], length_a: list[int], length_b: list[int]) -> Optional[float]:
    """A's win rate had both answers been the same length; None with fewer than 2 scored rows.

    AlpacaEval 2's length control reduced to one model pair, with no per-instruction difficulty term:
    an unpenalised logistic regression of A's points (soft labels) on tanh(length difference / its std),
    read at a length difference of 0, i.e. sigmoid(intercept). Unpenalised, the fit diverges when hard
    0/1 points are separated by length (e.g. A wins exactly when longer): then the result means little.
    """
    rows = [(p, a - b) for p, a, b in zip(points, length_a, length_b, strict=True) if p is not None]
    if len(rows) < 2:
        return None
    p = np.array([r[0] for r in rows], dtype=float)
    diff = np.array([r[1] for r in rows], dtype=float)
    std = diff.std()
    x = np.tanh(diff / std) if std > 0 else np.zeros_like(diff)
    # Each row twice, as a win weighted p and a loss weighted 1 - p: the fit sees the points as soft labels.
    features = np.concatenate([x, x]).reshape(-1, 1)
    labels = np.concatenate([np.ones_like(p), np.zeros_like(p)])
    weights = np.concatenate([p, 1 - p])
    # C=inf is no penalty (`penalty=None` is deprecated from sklearn 1.8); a tight tol so 4 decimals are exact.
    model = LogisticRegression(C=np.inf, tol=1e-10)
    model.fit(features, labels, sample_weight=weights)
    return round(float(1 / (1 + np.exp(-model.intercept_[0]))), 4)


def jury_agreement(evaluations: list[Dataset], rubric: Rubric, judges: int) -> list[JuryAgreement]:
    """Krippendorff's alpha per criterion over the rows of every model (see `JuryAgreement`)."""
    figures = []
    for c in rubric.criteria:
        rows = [scores for dataset in evaluations if col.jury_scores(c.name) in dataset.column_names
                for scores in dataset[col.jury_scores(c.name)] if scores and sum(s is not None for s in scores) >= 2]
        matrix = [[row[k] for row in rows] for k in range(judges)]
        alpha, ci = alpha_with_ci(matrix, level="ordinal", values=c.values) if rows else (None, None)
        figures.append(JuryAgreement(criterion=c.name, alpha=alpha, ci=ci, rows=len(rows)))
    return figures
