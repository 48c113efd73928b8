import json

import pytest

from llm_engineering.evaluation.trust.labels import (
    LabelsError,
    PairwiseLabel,
    PointwiseLabel,
    agreement,
    length_baseline,
    load_labels,
    majority_baseline,
    valid_against_baseline,
)
from llm_engineering.evaluation.trust.preference_agreement import longer_preferred, pairwise_agreement

SCALE = [1, 2, 3]


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_load_pointwise_jsonl(tmp_path):
    path = _jsonl(tmp_path / "labels.jsonl", [
        {"id": 7, "answer": "Use LoRA.", "criterion": "accuracy", "score": 3},
        {"id": 7, "answer": "Use LoRA.", "criterion": "style", "score": 2},  # same answer, another criterion
    ])
    labels = load_labels(path)
    assert labels.kind == "pointwise"
    assert labels.rows == [PointwiseLabel(id="7", answer="Use LoRA.", criterion="accuracy", score=3),
                           PointwiseLabel(id="7", answer="Use LoRA.", criterion="style", score=2)]


def test_load_pointwise_csv_with_an_answer_over_two_lines(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text('id,answer,criterion,score\nq1,"First, this.\nThen that.",accuracy,2\n')
    labels = load_labels(path)
    assert labels.kind == "pointwise"
    assert labels.rows == [PointwiseLabel(id="q1", answer="First, this.\nThen that.", criterion="accuracy", score=2)]


def test_load_pairwise_jsonl_and_csv(tmp_path):
    expected = [PairwiseLabel(id="1", answer_a="short", answer_b="long", preferred="B"),
                PairwiseLabel(id="2", answer_a="x", answer_b="y", preferred="tie")]
    jsonl = _jsonl(tmp_path / "pairs.jsonl", [
        {"id": "1", "answer_a": "short", "answer_b": "long", "preferred": "B"},
        {"id": "2", "answer_a": "x", "answer_b": "y", "preferred": "tie"},
    ])
    csv_path = tmp_path / "pairs.csv"
    csv_path.write_text("answer_b,id,preferred,answer_a\nlong,1,B,short\ny,2,tie,x\n")  # column order is free
    for path in (jsonl, csv_path):
        labels = load_labels(path)
        assert labels.kind == "pairwise"
        assert labels.rows == expected


POINT = '{"id": 1, "answer": "a", "criterion": "accuracy", "score": 2}\n'


@pytest.mark.parametrize("name, text, line, fix", [
    ("labels.txt", "id,answer\n", None, "labels are read from .jsonl or .csv files"),
    ("labels.jsonl", "", None, "has no labels"),
    ("labels.csv", "id,answer,criterion,score\n", None, "has no labels"),
    ("labels.jsonl", POINT + '{"id": 2, "answer": "b", "score": 1}\n', 2, "missing ['criterion']"),
    ("labels.csv", "id,answer,criterion,score,note\n1,a,accuracy,2,x\n", 1, "extra ['note']"),
    ("labels.jsonl", POINT + '{"id": 2, "answer_a": "a", "answer_b": "b", "preferred": "A"}\n', 2,
     "put each kind in its own file"),
    ("labels.csv", "id,answer,criterion,score\n1,a,accuracy,2\n2,b,accuracy,2.5\n", 3, "whole number"),
    ("labels.jsonl", '{"id": 1, "answer": "a", "criterion": "accuracy", "score": "good"}\n', 1, "whole number"),
    ("labels.csv", "id,answer_a,answer_b,preferred\n1,a,b,left\n", 2, "'A', 'B' or 'tie'"),
    ("labels.jsonl", POINT + "\n" + POINT.replace('"id": 1', '"id": "1"'), 3, "same id, answer, criterion as line 1"),
    ("labels.jsonl", POINT + "{not json\n", 2, "one JSON object a line"),
    ("labels.csv", "id,answer,criterion,score\n1,a,accuracy\n", 2, "fewer fields"),
    ("labels.jsonl", POINT.replace("}", ', "run": "r1"}') + POINT.replace('"id": 1', '"id": 2').replace("}", ', "run": "r2"}'),
     2, "run 'r2', but line 1 names run 'r1'; keep the labels of one run in a file"),
])
def test_load_errors_name_the_file_the_line_and_the_fix(tmp_path, name, text, line, fix):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(LabelsError) as error:
        load_labels(path)
    message = str(error.value)
    assert str(path) in message
    assert fix in message
    if line is not None:
        assert f"line {line}" in message


def test_column_errors_say_what_each_kind_needs(tmp_path):
    path = _jsonl(tmp_path / "labels.jsonl", [{"id": 1, "text": "a"}])
    with pytest.raises(LabelsError, match="pointwise labels need the columns id, answer, criterion, score; "
                                          "pairwise labels need the columns id, answer_a, answer_b, preferred"):
        load_labels(path)


def test_quadratic_kappa_worked_by_hand_on_a_1_to_3_scale():
    # Human 1,2,3,3 vs judge 1,2,2,3: one row a point off (weight 1). Marginals human (1,1,2), judge (1,2,1),
    # expected weighted disagreement sum(w * r_i * c_j) / 4 = 20/4 = 5, observed 1: kappa = 1 - 1/5.
    # (Linear weights would give 1 - 1/3.5 = 0.7143, unweighted kappa 0.6364.)
    assert agreement([1, 2, 2, 3], [1, 2, 3, 3], SCALE, samples=50).kappa == 0.8
    # Two values of the scale: human 1,1,3,3 vs judge 1,3,3,3: observed 4, expected 4 * (1.5 + 0.5) = 8.
    assert agreement([1, 3, 3, 3], [1, 1, 3, 3], SCALE, samples=50).kappa == 0.5


def test_perfect_agreement():
    result = agreement([1, 2, 3, 2, 1], [1, 2, 3, 2, 1], SCALE, samples=200)
    assert (result.rows, result.failed, result.exact, result.within_one) == (5, 0, 1.0, 1.0)
    assert result.exact_ci == [1.0, 1.0]
    assert (result.spearman, result.kappa, result.kappa_ci) == (1.0, 1.0, [1.0, 1.0])


def test_failed_row_is_a_disagreement_but_is_left_out_of_spearman_and_kappa():
    result = agreement([1, 3, None, 2], [1, 2, 2, 3], SCALE, samples=200)
    assert (result.rows, result.failed) == (4, 1)
    assert result.exact == 0.25  # only row 0 matches; the failed row counts against
    assert result.within_one == 0.75  # rows 0, 1, 3 are at most a point off
    # The three scored rows: judge 1,3,2 vs human 1,2,3; rank differences 0,1,-1: 1 - 6*2 / (3*8) = 0.5.
    assert result.spearman == 0.5
    # Each value once on each side: expected weighted disagreement 12/3 = 4, observed 1 + 1: kappa = 0.5.
    assert result.kappa == 0.5
    low, high = result.exact_ci
    assert 0 <= low <= 0.25 <= high <= 1 and low < high


def test_undefined_statistics_are_none():
    result = agreement([2, 2, None], [2, 2, 3], SCALE, samples=50)
    assert (result.spearman, result.kappa, result.kappa_ci) == (None, None, None)
    assert agreement([None, None], [1, 2], SCALE, samples=50).kappa is None


def test_scores_off_the_scale_or_unequal_lengths_are_rejected():
    with pytest.raises(ValueError, match=r"judge scores \[5\]"):
        agreement([5, 1], [1, 1], SCALE)
    with pytest.raises(ValueError, match="3 judge scores for 2"):
        agreement([1, 1, 1], [1, 1], SCALE)


def test_majority_baseline_breaks_ties_low():
    assert majority_baseline([3, 1, 2, 3, 1]) == [1] * 5  # 1 and 3 twice each
    assert majority_baseline([2, 3, 3]) == [3, 3, 3]
    assert majority_baseline([]) == []


def test_length_baseline_ranks_lengths_into_the_human_proportions():
    # Humans gave 1 twice, 2 once, 3 once. By length the rows run 0 (10), 3 (20), 2 (30), 1 (50),
    # so rows 0 and 3 get the two 1s, row 2 the 2 and row 1, the longest, the 3.
    assert length_baseline([10, 50, 30, 20], [3, 1, 1, 2], SCALE) == [1, 3, 2, 1]


def test_length_baseline_gives_equal_lengths_one_score():
    # Sorted human scores 1,2,3,3; the two rows of length 20 hold ranks 2 and 3 (scores 2, 3) and share the lower, 2.
    assert length_baseline([10, 20, 20, 30], [3, 3, 2, 1], SCALE) == [1, 2, 2, 3]


def test_pairwise_agreement_counts_a_failed_row_against():
    result = pairwise_agreement(["A", None, "tie", "B"], ["A", "B", "tie", "A"])
    assert (result.rows, result.failed) == (4, 1)
    assert (result.agreement.count, result.agreement.total, result.agreement.rate) == (2, 4, 0.5)
    assert result.agreement.ci == [0.15, 0.85]  # the 95% Wilson interval of 2/4
    # On the three labels that prefer an answer, the tie row left out: right only on the first.
    assert (result.agreement_decisive.count, result.agreement_decisive.total) == (1, 3)


def test_longer_preferred():
    assert longer_preferred([120, 40, 60], [80, 90, 60]) == ["A", "B", "tie"]


@pytest.mark.parametrize("interval, baseline, valid", [
    ([0.41, 0.6], 0.4, True),
    ([0.4, 0.6], 0.4, False),  # equal to the baseline does not beat it
    ([0.3, 0.6], 0.4, False),  # the point estimate may beat it; the lower bound must
    (None, 0.4, False),
    ([0.41, 0.6], None, False),
])
def test_valid_against_baseline(interval, baseline, valid):
    assert valid_against_baseline(interval, baseline) is valid


def test_the_run_and_rubric_a_report_writes_are_read_in_either_kind_and_blank_cells_are_none(tmp_path):
    path = _jsonl(tmp_path / "labels.jsonl", [
        {"id": 1, "answer": "a", "criterion": "accuracy", "score": 2, "run": "evaluating-1", "rubric": "handbook"},
        {"id": 2, "answer": "b", "criterion": "accuracy", "score": 3, "run": "evaluating-1", "rubric": "handbook"},
    ])
    labels = load_labels(path)
    assert (labels.kind, labels.run, labels.rubric, len(labels.rows)) == ("pointwise", "evaluating-1", "handbook", 2)
    csv = tmp_path / "pairs.csv"
    csv.write_text("id,answer_a,answer_b,preferred,run,rubric\n1,a,b,A,,\n")
    pairs = load_labels(csv)
    assert (pairs.kind, pairs.run, pairs.rubric) == ("pairwise", None, None)


def test_labels_written_for_another_rubric_are_refused_naming_both_and_the_fix(tmp_path):
    from llm_engineering.evaluation.judging.rubric import load_rubric
    from llm_engineering.evaluation.trust.label_agreement import check_labels_fit

    path = _jsonl(tmp_path / "labels.jsonl", [{"id": 1, "answer": "a", "criterion": "accuracy", "score": 2,
                                               "rubric": "handbook"}])
    labels = load_labels(path)
    check_labels_fit(labels, load_rubric("handbook"))  # its own rubric: no error
    with pytest.raises(LabelsError, match="written for rubric 'handbook', but the judge scores with 'reference-guided'; "
                                          "judge with theirs \\(--rubric handbook\\)"):
        check_labels_fit(labels, load_rubric("reference-guided"))
