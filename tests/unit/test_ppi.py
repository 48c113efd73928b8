"""Prediction-powered means: a judge's bias corrected by a few labels, never worse than the labels alone."""

import numpy as np
import ppi_py
import pytest

from llm_engineering.evaluation.trust.ppi import MIN_LABELLED, ppi_mean


def _rows(n_labelled, n_rest, bias, noise, seed=0):
    """True scores 1-3; a judge that adds `bias` and `noise` to them."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, n_labelled + n_rest).astype(float)
    judge = truth + bias + rng.normal(0, noise, len(truth))
    return truth, judge


def test_a_lenient_judge_is_corrected_by_the_labels_and_the_interval_covers_the_truth():
    truth, judge = _rows(40, 400, bias=0.8, noise=0.3)
    estimate = ppi_mean(truth[:40], judge[:40], judge[40:])
    true_mean = truth.mean()
    assert estimate.judge_only.mean > true_mean + 0.6  # the judge alone is far off
    assert estimate.ci[0] <= true_mean <= estimate.ci[1]
    assert estimate.bias == pytest.approx(0.8, abs=0.15)
    # An informative judge narrows the labels' own interval.
    assert estimate.ci[1] - estimate.ci[0] < estimate.labels_only.ci[1] - estimate.labels_only.ci[0]
    assert (estimate.labelled, estimate.unlabelled) == (40, 400) and 0.5 < estimate.power_tuning <= 1


def test_the_tuning_is_ppi_pythons_own():
    truth, judge = _rows(30, 200, bias=0.4, noise=0.8, seed=3)
    estimate = ppi_mean(truth[:30], judge[:30], judge[30:])
    low, high = ppi_py.ppi_mean_ci(truth[:30], judge[:30], judge[30:], alpha=0.05, lam=None)
    assert estimate.ci == [pytest.approx(float(np.atleast_1d(low)[0]), abs=1e-4),
                           pytest.approx(float(np.atleast_1d(high)[0]), abs=1e-4)]


def test_a_judge_that_predicts_nothing_leaves_the_labels_mean():
    truth, _ = _rows(30, 100, bias=0, noise=0)
    constant = [2.0] * len(truth)
    estimate = ppi_mean(truth[:30], constant[:30], constant[30:])
    assert estimate.power_tuning == 0 and estimate.mean == estimate.labels_only.mean
    assert estimate.ci == estimate.labels_only.ci


def test_too_few_labels_give_no_interval_and_say_how_many_more():
    estimate = ppi_mean([3, 2, 3], [3, 3, 3], [3] * 20)
    assert estimate.mean is None and estimate.ci is None
    assert estimate.problem == f"3 labelled rows with a judge score: label {MIN_LABELLED - 3} more (at least {MIN_LABELLED})"


def test_rows_the_judge_could_not_score_are_left_out():
    truth, judge = _rows(12, 50, bias=0.5, noise=0.2)
    with_failures = ppi_mean(list(truth[:12]) + [1.0], list(judge[:12]) + [None], list(judge[12:]) + [None])
    assert (with_failures.labelled, with_failures.unlabelled) == (12, 50)
    assert with_failures == ppi_mean(truth[:12], judge[:12], judge[12:])
