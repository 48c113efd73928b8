"""Run comparison (`--compare-to`), its regression gate, and the row browser's items: pure logic on scored rows."""

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.report.items import item_views
from llm_engineering.evaluation.report.comparison import compare_runs
from llm_engineering.evaluation.report.comparison_text import regression_lines


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
