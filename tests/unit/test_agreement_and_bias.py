import math

import pytest

from llm_engineering.evaluation.judging.agreement import (
    alpha_with_ci,
    jury_aggregate,
    krippendorff_alpha,
    length_controlled_win_rate,
    length_correlation,
    longer_answer_wins,
)

_ = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders x 12 units, with gaps.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
]


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("interval", 0.849), ("ordinal", 0.815)])
def test_alpha_reproduces_krippendorffs_worked_example(level, published):
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, level), 3) == published
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, level, values=[1, 2, 3, 4, 5]), 3) == published


def test_alpha_small_nominal_example_worked_by_hand():
    # Units (1,1), (2,2), (1,2): D_o = 2/6 disagreeing pairs, D_e = 2*3*3/(6*5) = 0.6, alpha = 1 - (1/3)/0.6 = 4/9.
    assert krippendorff_alpha([[1, 2, 1], [1, 2, 2]], "nominal") == round(4 / 9, 4)


def test_alpha_perfect_agreement_is_one_even_with_gaps():
    assert krippendorff_alpha([[1, 2, 3, 4, _], [1, 2, 3, 4, 5], [_, 2, 3, 4, 5]]) == 1.0


@pytest.mark.parametrize(
    "scores, values",
    [
        ([[3, 3, 3], [3, 3, 3]], None),  # no variation: the package raises
        ([[3, 3, 3], [3, 3, 3]], [1, 2, 3, 4, 5]),  # no variation: the package returns nan
        ([[1, 2, 3, 4]], None),  # one judge
        ([[1, 2, 3], [2, _, _]], None),  # one row scored by two judges
        ([[1, _, 5], [_, 4, _]], None),  # no row scored by two judges
    ],
)
def test_alpha_undefined_is_none(scores, values):
    assert krippendorff_alpha(scores, values=values) is None


def test_alpha_rejects_a_score_outside_the_scale():
    with pytest.raises(ValueError):
        krippendorff_alpha([[1, 2, 6], [1, 2, 6]], values=[1, 2, 3, 4, 5])


def test_alpha_with_ci_contains_the_estimate_and_is_reproducible():
    alpha, ci = alpha_with_ci(KRIPPENDORFF_2011, samples=300, seed=7)
    assert alpha == round(krippendorff_alpha(KRIPPENDORFF_2011), 4)
    assert ci[0] < alpha <= ci[1] <= 1.0
    assert alpha_with_ci(KRIPPENDORFF_2011, samples=300, seed=7) == (alpha, ci)


def test_alpha_with_ci_perfect_agreement_and_undefined_alpha():
    assert alpha_with_ci([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]], samples=200) == (1.0, [1.0, 1.0])
    assert alpha_with_ci([[3, 3, 3], [3, 3, 3]]) == (None, None)


def test_jury_mean_skips_missing_verdicts():
    judges = [[1, 2, _, _, 1], [3, 2, 4, _, 2], [2, _, 5, _, 2]]
    assert jury_aggregate(judges, "mean") == [2.0, 2.0, 4.5, None, 1.6667]


def test_jury_majority_breaks_ties_low():
    judges = [[1, 2, 3, _, 5], [1, 4, 5, _, 1], [2, 4, _, _, 3]]
    # Rows: 1,1,2 -> 1; 2,4,4 -> 4; 3,5 tie -> 3; nobody -> None; 5,1,3 three-way tie -> 1.
    assert jury_aggregate(judges, "majority") == [1.0, 4.0, 3.0, None, 1.0]


@pytest.mark.parametrize("judges", [[[1, 2], [1, 2, 3]], []])
def test_jury_rejects_mismatched_or_missing_judges(judges):
    with pytest.raises(ValueError):
        jury_aggregate(judges, "mean")


def test_length_correlation_rank_values():
    assert length_correlation([1, 2, 3, 4], [10, 20, 30, 45]).spearman == 1.0
    # The unscored row is dropped; the rest fall as the lengths grow.
    falling = length_correlation([4, _, 3, 1], [10, 20, 30, 45])
    assert (falling.rows, falling.spearman) == (3, -1.0)
    # Rank differences -1, 1, -1, 1, 0: rho = 1 - 6*4 / (5*24) = 0.8.
    assert length_correlation([1, 2, 3, 4, 5], [20, 10, 40, 30, 50]).spearman == 0.8


def test_length_correlation_undefined_cases():
    constant = length_correlation([3, 3, 3, 3], [10, 20, 30, 40])
    assert (constant.rows, constant.spearman, constant.p_value) == (4, None, None)
    assert length_correlation([1, _, 3, _], [10, 20, 30, 40]) is None


def test_longer_answer_wins_counts_decisive_rows_of_unequal_length():
    points = [1, 0, 0.5, _, 1, 0, 0]
    length_a = [200, 300, 500, 500, 100, 100, 100]
    length_b = [100, 100, 100, 100, 100, 200, 300]
    # Row 0: A longer, won. Row 1: A longer, lost. Row 2 tie, row 3 failed, row 4 equal lengths: out.
    # Rows 5 and 6: B longer, A lost. So the longer answer won 3 of 4.
    result = longer_answer_wins(points, length_a, length_b)
    assert (result.count, result.total, result.rate) == (3, 4, 0.75)
    assert longer_answer_wins([0.5, _], [1, 2], [2, 1]).rate is None


def test_length_control_removes_a_pure_length_effect():
    # A is longer in 6 of 8 rows and mostly wins those (0.8); it mostly loses when shorter (0.2).
    points = [0.8] * 6 + [0.2] * 2
    length_a = [200] * 6 + [100] * 2
    length_b = [100] * 6 + [200] * 2
    assert sum(points) / len(points) == pytest.approx(0.65)
    # Length differences are +-d, so x = +-t and the fit matches both groups: logit(0.8) + logit(0.2) = 0.
    assert length_controlled_win_rate(points, length_a, length_b) == pytest.approx(0.5, abs=0.02)


def test_length_control_is_the_raw_rate_without_length_differences():
    assert length_controlled_win_rate([1, 0.5, 1, 0, 1, _], [100] * 6, [100] * 6) == pytest.approx(0.7, abs=1e-3)


def test_length_control_worked_example():
    # Points 0.9 at x = +t, 0.6 at x = -t: the intercept is the mean of the two logits, so the odds
    # at x = 0 are the geometric mean of the odds 9 and 1.5.
    odds = math.sqrt(9 * 1.5)
    lc = length_controlled_win_rate([0.9] * 3 + [0.6] * 3, [200] * 3 + [100] * 3, [100] * 3 + [200] * 3)
    assert lc == pytest.approx(odds / (1 + odds), abs=1e-3)


def test_length_control_needs_two_rows():
    assert length_controlled_win_rate([1, _], [200, 100], [100, 200]) is None
