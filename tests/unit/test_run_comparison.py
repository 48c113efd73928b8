"""Run comparison (`--compare-to`), its regression gate, and the row browser's items: pure logic on scored rows."""

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.report.comparison import compare_runs
from llm_engineering.evaluation.report.comparison_text import regression_lines
from llm_engineering.evaluation.report.items import item_views


def rows(model, scores, answers=None, similarity=None):
    """`scores`: id -> accuracy (None: the verdict failed); style is 2 throughout."""
    ids = list(scores)
    return Dataset.from_dict({
        col.ID: ids,
        col.MODEL_ID: [model] * len(ids),
        col.INSTRUCTION: [f"question {i}" for i in ids],
        col.ANSWER: [(answers or {}).get(i, f"answer {i}") for i in ids],
        col.score("accuracy"): [scores[i] for i in ids],
        col.score("style"): [None if scores[i] is None else 2 for i in ids],
        col.JUDGE_ERROR: [None if scores[i] is not None else "no JSON" for i in ids],
        col.REFERENCE_SIMILARITY: [(similarity or {}).get(i) for i in ids],
    })


def test_differences_are_paired_on_rows_both_runs_scored_and_the_most_changed_rows_listed():
    before = rows("m", {"1": 3, "2": 3, "3": 2, "4": None, "5": 1})
    after = rows("m", {"1": 1, "2": 3, "3": 3, "4": 3, "6": 1}, answers={"3": "a new answer"})
    comparison = compare_runs([after], [before], ["accuracy", "style"], "run-1")
    accuracy = next(m for m in comparison.metrics if m.metric == "accuracy")
    # Rows 1-3 are scored in both runs (4 failed before, 5 and 6 are in one run only): 1-3, 3-3, 3-2.
    assert accuracy.paired_rows == 3
    assert (accuracy.previous_mean, accuracy.current_mean, accuracy.difference) == (2.6667, 2.3333, -0.3333)
    assert not accuracy.regressed  # -2, 0, +1: the interval spans zero
    assert [(r.id, r.change, r.answer_changed) for r in comparison.changed_rows] == [("1", -2, False), ("3", 1, True)]
    assert regression_lines(comparison) == []


def test_a_drop_on_every_row_is_a_regression_with_a_gate_line_naming_model_metric_and_run():
    before = rows("m", {str(i): 3 for i in range(8)})
    after = rows("m", {str(i): 2 for i in range(8)})
    comparison = compare_runs([after], [before], ["accuracy", "style"], "run-1")
    (regressed,) = comparison.regressions()
    assert (regressed.metric, regressed.difference, regressed.ci) == ("accuracy", -1.0, [-1.0, -1.0])
    (line,) = regression_lines(comparison)
    assert line.startswith("regression: m accuracy -1.000 [-1.00, -1.00] against run run-1 (8 paired rows")


def test_models_are_matched_by_id_and_similarity_is_compared_where_both_runs_measured_it():
    before = [rows("a", {"1": 2, "2": 2}, similarity={"1": 0.5, "2": 0.7})]
    after = [rows("new", {"1": 3}), rows("a", {"1": 2, "2": 2}, similarity={"1": 0.6})]
    comparison = compare_runs(after, before, ["accuracy", "style"], "run-1")
    assert comparison.unmatched_models == ["new"]
    similarity = next(m for m in comparison.metrics if m.metric == "similarity")
    assert (similarity.model_id, similarity.paired_rows, similarity.difference) == ("a", 1, 0.1)
    assert {m.metric for m in comparison.metrics} == {"accuracy", "style", "similarity"}  # no expected scores stored
    assert comparison.changed_rows == []


def test_items_hold_each_models_answer_and_past_the_limit_only_the_worst_are_kept():
    base = rows("base", {"1": 3, "2": None, "3": 1, "4": 3})
    tuned = rows("tuned", {"1": 3, "2": 3, "3": 3, "4": 2})
    items, total = item_views([base, tuned], ["accuracy", "style"])
    assert total == 4 and [i.id for i in items] == ["1", "2", "3", "4"]  # the test split's order
    assert [a.model_id for a in items[1].answers] == ["base", "tuned"] and items[1].answers[0].failed
    # Lowest totals (accuracy + style) over the models: item 1: 5, item 2: a failed answer, item 3: 3, item 4: 4.
    worst, total = item_views([base, tuned], ["accuracy", "style"], limit=2)
    assert total == 4 and [i.id for i in worst] == ["2", "3"]
    assert [i.id for i in item_views([base, tuned], ["accuracy", "style"], limit=3)[0]] == ["2", "3", "4"]


def test_holm_rejects_step_down_from_the_smallest_p_and_stops_at_the_first_that_fails():
    from llm_engineering.evaluation.rates import holm

    # m = 3 tested: 0.01 <= 0.05/3; then 0.03 > 0.05/2 stops, so 0.04 is not rejected though below 0.05.
    assert holm([0.01, 0.04, 0.03, None]) == [True, False, False, False]
    assert holm([0.001, 0.02, 0.04]) == [True, True, True]  # 0.05/3, 0.05/2, 0.05/1
    assert holm([0.03, 0.03]) == [False, False]  # each below 0.05 alone, neither below 0.025


def test_a_drop_whose_interval_is_below_zero_alone_is_not_a_regression_once_every_metric_tested_is_counted():
    before = rows("m", {str(i): 3 for i in range(20)})
    # Accuracy drops on 4 of 20 rows: its 95% interval lies below zero (p 0.029), but two metrics are tested
    # (accuracy and style), so Holm asks p <= 0.025 of the smaller one.
    after = rows("m", {str(i): 2 if i < 4 else 3 for i in range(20)})
    comparison = compare_runs([after], [before], ["accuracy", "style"], "run-1")
    accuracy = next(m for m in comparison.metrics if m.metric == "accuracy")
    assert accuracy.ci[1] < 0 and accuracy.worse_uncorrected and 0.025 < accuracy.p_value < 0.05
    assert (comparison.tested, accuracy.regressed, regression_lines(comparison)) == (2, False, [])
    # On 6 of 20 rows the drop passes the correction (p 0.004).
    after = rows("m", {str(i): 2 if i < 6 else 3 for i in range(20)})
    (line,) = regression_lines(compare_runs([after], [before], ["accuracy", "style"], "run-1"))
    assert "significant after Holm's correction across the 2 metrics compared" in line


def test_the_detectable_difference_shrinks_with_the_square_root_of_the_rows():
    from llm_engineering.evaluation.rates import detectable_difference, rows_needed

    differences = [-1, 0, 1, 0] * 5
    four_times = differences * 4
    assert detectable_difference(four_times) == pytest.approx(detectable_difference(differences) / 2, rel=0.05)
    # The rows a difference needs: the detectable difference of n rows needs about n rows.
    assert rows_needed(differences, detectable_difference(differences)) in (len(differences), len(differences) + 1)
    assert detectable_difference([1]) is None and rows_needed([1], 0.1) is None
