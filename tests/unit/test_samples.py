"""Several answers per prompt: the two-level interval, the variance between samples, the reducers, and samples
through the summary, the comparisons and the row browser."""

import numpy as np
import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.pairwise import compare_answers
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.rates import bootstrap_ci
from llm_engineering.evaluation.report.comparison import compare_runs
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary, compare_models
from llm_engineering.evaluation.report.text import sample_lines
from llm_engineering.evaluation.samples import (
    between_sample_share,
    first_samples,
    majority,
    pass_at_k,
    reducers,
    two_level_ci,
)
from tests.unit.test_trust_checks import KeyedJudge, pairwise_reply

HANDBOOK = load_rubric("handbook")


def sampled(model_id, scores_by_row, answers=None):
    """Evaluations with each row's samples: `scores_by_row[i]` lists row i's (accuracy, style) per sample."""
    rows = []
    for i, samples in enumerate(scores_by_row):
        for s, (accuracy, style) in enumerate(samples):
            rows.append({col.ID: str(i), col.SAMPLE: s, col.MODEL_ID: model_id, col.INSTRUCTION: f"Explain {i}.",
                         col.REFERENCE: f"reference {i}",
                         col.ANSWER: answers(i, s) if answers else f"answer {i}.{s}",
                         col.score("accuracy"): accuracy, col.score("style"): style,
                         col.analysis("accuracy"): "a", col.analysis("style"): "s", col.JUDGE_ERROR: None,
                         col.JUDGE_MODEL: "judge", col.COMPLETION_TOKENS: 10, col.FINISH_REASON: "stop"})
    return Dataset.from_list(rows)


def test_the_two_level_interval_holds_the_spread_between_a_rows_samples_that_rows_alone_miss():
    groups = [[1, 3] if i % 2 else [3, 1] for i in range(30)]  # every row's mean is 2: rows alone see no spread
    assert bootstrap_ci([2.0] * 30) == [2.0, 2.0]
    low, high = two_level_ci(groups)
    assert low < 1.9 and high > 2.1
    steady = [[v, v, v] for v in [1, 2, 3] * 10]  # samples that agree: the interval over rows
    assert two_level_ci(steady) == pytest.approx(bootstrap_ci([1, 2, 3] * 10), abs=0.08)
    assert two_level_ci([[1, 2, 3]]) is None  # one row: no interval


def test_the_two_level_interval_covers_the_mean_of_a_known_population():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(200):  # 40 prompts, each with its own chance of a good answer; 4 answers each
        chances = rng.uniform(0.1, 0.9, size=40)
        groups = [list(1 + 2 * (rng.random(4) < p)) for p in chances]
        low, high = two_level_ci(groups, samples=500, seed=int(rng.integers(1 << 30)))
        covered += low <= 2.0 <= high  # the population's mean: 1 + 2 x the mean chance (0.5)
    assert covered >= 186  # 95% nominal: at least 93% of 200


def test_the_share_of_variance_between_samples():
    assert between_sample_share({str(i): [1, 3] for i in range(20)}) == 1.0  # rows alike, samples apart
    assert between_sample_share({str(i): [i % 3 + 1] * 4 for i in range(20)}) == 0.0  # samples agree
    assert between_sample_share({str(i): [2] for i in range(20)}) is None  # one sample per row
    assert between_sample_share({str(i): [2, 2] for i in range(20)}) is None  # no score varies


def test_majority_goes_to_the_lower_score_on_a_tie_and_pass_at_k():
    assert majority([3, 3, 1]) == 3 and majority([3, 1, 3, 1]) == 1
    assert pass_at_k(4, 1, 1) == 0.25 and pass_at_k(4, 1, 4) == 1.0 and pass_at_k(4, 0, 2) == 0.0
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)
    with pytest.raises(ValueError, match="0 < k <= n"):
        pass_at_k(2, 1, 3)


def test_reducers_of_constructed_rows():
    figures = reducers({"a": [1, 3, 3, 3], "b": [1, 1, 1, 2]}, threshold=3, k=4)
    assert {name: value for name, (value, _) in figures.items()} == {
        "mean": 1.875, "max": 2.5, "majority": 2.0, "pass@1": 0.375, "pass@4": 0.5}


def test_the_summary_of_samples_reports_row_means_both_intervals_the_share_and_reducers():
    rows = [[(1, 2), (3, 2), (3, 2), (3, 2)], [(1, 2), (1, 2), (1, 2), (2, 2)]] * 10
    summary = build_summary(SummaryInputs([sampled("m", rows)], rubric=HANDBOOK, pass_score=3))
    (scores,) = summary.models
    accuracy, style = scores.criteria
    assert (scores.rows, scores.samples, scores.scored) == (80, 4, 80)
    assert accuracy.mean == 1.875 and accuracy.counts == {"1": 40, "2": 10, "3": 30}
    assert accuracy.ci[1] - accuracy.ci[0] > accuracy.rows_ci[1] - accuracy.rows_ci[0]
    assert 0 < accuracy.sample_share < 1
    assert accuracy.reducers["max"].value == 2.5 and accuracy.reducers["pass@4"].value == 0.5
    assert style.sample_share is None and style.reducers["pass@4"].value == 0.0  # passing means 3 here
    lines = sample_lines(summary)
    assert len(lines) == 2 and "4 answers per prompt" in lines[0] and "pass@4 50%" in lines[0]
    default = build_summary(SummaryInputs([sampled("m", rows)], rubric=HANDBOOK))  # passing: the top of the scale (3)
    assert default.models[0].criteria[0].pass_score == 3
    single = build_summary(SummaryInputs([sampled("m", [[(1, 2)], [(3, 2)]] * 10)], rubric=HANDBOOK))
    assert single.models[0].samples == 1 and single.models[0].criteria[0].reducers == {}
    assert sample_lines(single) == []


def test_comparisons_pair_a_rows_mean_over_samples():
    four = sampled("a", [[(3, 3), (1, 3), (3, 3), (3, 3)]] * 6)  # every row's accuracy mean: 2.5
    one = sampled("b", [[(2, 3)]] * 6)
    comparison = compare_models(four, one, "accuracy")
    assert (comparison.paired_rows, comparison.difference) == (6, 0.5)
    runs = compare_runs([four], [sampled("a", [[(2, 3)] * 4] * 6)], ["accuracy"], "earlier")
    accuracy = next(m for m in runs.metrics if m.metric == "accuracy")
    assert (accuracy.paired_rows, accuracy.difference) == (6, 0.5)
    changed = compare_runs([sampled("a", [[(3, 3), (1, 3)]])], [sampled("a", [[(2, 3), (2, 3)]])], ["accuracy"], "x")
    assert [(r.id, r.sample, r.change) for r in changed.changed_rows] == [("0", 0, 1), ("0", 1, -1)]


def test_pairwise_meets_each_models_sth_answer_of_a_prompt():
    a = sampled("a", [[(3, 3)] * 2] * 3, answers=lambda i, s: f"a{i}.{s}")
    b = sampled("b", [[(3, 3)] * 2] * 3, answers=lambda i, s: f"b{i}.{s}")
    judge = KeyedJudge(lambda prompt: pairwise_reply("A"))
    result = compare_answers(a, b, Judge((judge,), HANDBOOK), "verdict")
    assert result.pairs == 6 and [(r.id, r.sample) for r in result.details] == [
        (str(i), s) for i in range(3) for s in range(2)]
    assert "Answer A: a1.1" in judge.asked[6] and "Answer B: b1.1" in judge.asked[6]


def test_the_checks_read_the_first_answers_and_the_browser_shows_a_rows_answers_together():
    rows = sampled("m", [[(1, 2), (3, 2)], [(2, 2), (2, 1)]])
    assert first_samples(rows)[col.ANSWER] == ["answer 0.0", "answer 1.0"]
    assert first_samples(rows.remove_columns(col.SAMPLE)).num_rows == 4  # stored before samples: every row
    page = render_html(build_summary(SummaryInputs([rows], rubric=HANDBOOK)))
    row = page.split("data-id='0'>")[1].split("</tr>")[0]
    assert "sample 1</strong> answer 0.0" in row and "sample 2</strong> answer 0.1" in row
    assert "1 · 3" in row  # accuracy of the two samples, side by side
    table = page.split("<h3>Several answers per prompt</h3>")[1].split("</table>")[0]
    assert "<td>m</td><td>accuracy</td><td>2</td><td>2.00 [" in table
    assert '"0": {"m": "answer 0.0"}' in page  # labels go to the first answer


def test_a_model_whose_rows_each_kept_one_scored_answer_still_reports_its_samples():
    rows = [[(3, 2), (None, None)], [(None, None), (1, 2)], [(2, 2), (None, None)]]  # one verdict failed per row
    summary = build_summary(SummaryInputs([sampled("m", rows)], rubric=HANDBOOK))
    (scores,) = summary.models
    accuracy = scores.criteria[0]
    assert (scores.samples, scores.scored, scores.failed) == (2, 3, 3)
    assert accuracy.mean == 2.0 and accuracy.sample_share is None  # no row has two scores to spread
    assert accuracy.reducers["pass@2"].value is None and accuracy.reducers["pass@1"].value == 0.3333
    assert "pass@2 n/a" in sample_lines(summary)[0]
    assert "Several answers per prompt" in render_html(summary)
