"""Verdicts with a guarantee: the confidence threshold found on calibration pairs by fixed-sequence testing, and the
share of verdicts it keeps elsewhere with their agreement."""

import random

import pytest
from scipy.stats import binomtest

from llm_engineering.evaluation.report.judge_bench import render_bench_html, selective_rows
from llm_engineering.evaluation.trust.judge_bench import JudgeBenchReport, PairDecisions
from llm_engineering.evaluation.trust.selective import decision_confidences, fixed_sequence_threshold, with_selective


def _pairs(n, seed, sure_right=True):
    """Pairs labelled A or B; half the judge's averaged preferences are sure (p 0.05 or 0.95: confidence 0.9) and,
    with `sure_right`, right; the other half are unsure (p 0.48 or 0.52: confidence 0.04) and right at random."""
    rng = random.Random(seed)
    pairs = []
    for k in range(n):
        label = rng.choice("AB")
        sure = k % 2 == 0
        right = (sure_right or rng.random() < 0.5) if sure else rng.random() < 0.5
        chosen = label if right else ("B" if label == "A" else "A")
        p = (0.95 if sure else 0.52) if chosen == "A" else (0.05 if sure else 0.48)
        pairs.append(PairDecisions(id=str(k), label=label, preference=[p, p, p],
                                   decisions={"preference_averaged": [chosen], "preference": [chosen, chosen]}))
    return pairs


def _report(details, name):
    return JudgeBenchReport(pairs_file=name, judge="j", rubric="r", pairs=len(details), tie_labels=0, ways={},
                            details=details)


def test_sure_right_verdicts_are_kept_and_unsure_ones_handed_on():
    report = with_selective(_report(_pairs(80, seed=1), "test.jsonl"), _report(_pairs(200, seed=2), "cal.jsonl"),
                            target=0.8, risk=0.1)
    figures = report.selective["preference_averaged"]
    assert figures.threshold == 0.9  # the sure ones (|0.95 - 0.5| x 2): every one right
    assert (figures.coverage.count, figures.coverage.total) == (40, 80) and figures.agreement.rate == 1.0
    assert report.json_report()["selective"]["preference_averaged"]["coverage"]["rate"] == 0.5
    assert selective_rows(report)[0][1] == "0.90" and "Verdicts kept above a confidence threshold" in \
        render_bench_html(report)


def test_a_judge_whose_confidence_means_nothing_gets_no_threshold_and_keeps_nothing():
    report = with_selective(_report(_pairs(80, seed=3, sure_right=False), "t"),
                            _report(_pairs(200, seed=4, sure_right=False), "c"), target=0.8)
    figures = report.selective["preference_averaged"]
    assert figures.threshold is None and figures.coverage.count == 0


def test_the_sequence_stops_at_the_first_threshold_that_fails():
    # Confidences 1.0 (20 right), 0.8 (20 wrong), 0.6 (40 right): 0.6 would pass alone over all 80 (75%) at a
    # target of 0.6, but 0.8 fails first (50% kept), so the answer is 1.0.
    verdicts = [(1.0, True)] * 20 + [(0.8, False)] * 20 + [(0.6, True)] * 40
    assert fixed_sequence_threshold(verdicts, target=0.6, risk=0.1) == 1.0
    assert fixed_sequence_threshold([(1.0, True)] * 3, target=0.8, risk=0.1) is None  # three right prove too little


def test_the_threshold_keeps_the_target_on_simulated_data_at_the_stated_risk():
    """500 calibration sets from one judge whose agreement rises with its confidence (agreement 0.5 + 0.45 x
    confidence); on each, the threshold's true agreement (known here) falls under the target in at most about the
    risk's share of sets."""
    rng = random.Random(0)

    def true_agreement_above(threshold):  # confidences uniform on [0, 1]: the mean of 0.5 + 0.45 c over c >= t
        return 0.5 + 0.45 * (1 + threshold) / 2

    target, risk, misses, found = 0.8, 0.1, 0, 0
    for _ in range(500):
        verdicts = [(c, rng.random() < 0.5 + 0.45 * c) for c in (rng.random() for _ in range(1000))]
        threshold = fixed_sequence_threshold(verdicts, target=target, risk=risk)
        if threshold is not None:
            found += 1
            misses += true_agreement_above(threshold) < target
    assert found > 400 and misses <= risk * 500, (found, misses)


def test_thresholds_that_keep_too_few_verdicts_to_test_are_passed_over_not_the_end_of_the_search():
    # 100 verdicts of distinct confidences, the 70 most confident right: the candidates that keep 5 and 10 verdicts
    # could not pass a test at 80% even all right (0.8^10 > 0.1), so the search goes on to those that can.
    verdicts = [(k / 100, k > 30) for k in range(1, 101)]
    threshold = fixed_sequence_threshold(verdicts, target=0.8, risk=0.1)
    assert threshold is not None
    kept = [right for confidence, right in verdicts if confidence >= threshold]
    assert len(kept) > 10 and binomtest(sum(kept), len(kept), 0.8, alternative="greater").pvalue <= 0.1


@pytest.mark.parametrize("target, risk", [(0.8, 0.1), (0.7, 0.05), (0.9, 0.2)])
def test_a_threshold_passes_exactly_when_the_exact_binomial_test_rejects_an_agreement_at_the_target(target, risk):
    # 40 verdicts of one confidence: the fewest right that the textbook's one-sided test (scipy's binomtest) finds
    # above the target at `risk` give a threshold; one fewer gives none.
    least = next(right for right in range(41) if binomtest(right, 40, target, alternative="greater").pvalue <= risk)
    assert fixed_sequence_threshold([(0.7, True)] * least + [(0.7, False)] * (40 - least), target, risk) == 0.7
    assert fixed_sequence_threshold([(0.7, True)] * (least - 1) + [(0.7, False)] * (41 - least), target, risk) is None


def test_the_pointwise_expected_confidence_is_how_far_apart_the_two_expected_scores_are():
    def pair(label, expected):
        decision = None if None in expected else "A" if expected[0] > expected[1] else "B"
        return PairDecisions(id="p", label=label, expected=expected, decisions={"pointwise_expected": [decision]})

    assert decision_confidences(pair("A", [2.75, 1.25]), "pointwise_expected") == [1.5]
    assert decision_confidences(pair("B", [1.25, 2.75]), "pointwise_expected") == [1.5]  # either order
    assert decision_confidences(pair("A", [2.0, None]), "pointwise_expected") == [None]
    # Far-apart expected scores right, close ones at random: the threshold keeps the far ones.
    rng = random.Random(5)
    far = [pair(label, [2.9, 1.1] if label == "A" else [1.1, 2.9]) for label in rng.choices("AB", k=30)]
    close = [pair(label, [2.1, 2.0] if rng.random() < 0.5 else [2.0, 2.1]) for label in rng.choices("AB", k=30)]
    report = with_selective(_report(far[:15] + close[:15], "t"), _report(far[15:] + close[15:], "c"), target=0.8)
    figures = report.selective["pointwise_expected"]
    assert figures.threshold == pytest.approx(1.8) and (figures.coverage.count, figures.agreement.rate) == (15, 1.0)
