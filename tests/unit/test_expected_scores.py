"""Probability-weighted scores from token logprobs, a jury's rows, and the figures built on them.

Token lists are written out by hand as a backend returns them: (token text, [(candidate, logprob)]).
"""

import math

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.pairwise import tally
from llm_engineering.evaluation.judging.rubric import RubricError, judge_messages, load_rubric
from llm_engineering.evaluation.judging.score_probs import compact, score_distribution
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.judging.verdict import first_score_schema
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import trust_lines
from llm_engineering.evaluation.report.trust_text import pairwise_finding
from llm_engineering.evaluation.stored.pairwise import PairwiseRow
from llm_engineering.evaluation.stored.trust import JudgeCheckPair
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs

ln = math.log
HELPFULNESS = load_rubric("helpfulness")  # one criterion, 1-5, score first


def test_expected_score_weights_each_scale_value_by_its_probability():
    text = '{"q":{"score":2,"analysis":"ok"}}'
    tokens = [('{"q":{"score":', None), ("2", [("2", ln(0.5)), ("3", ln(0.3)), ("1", ln(0.2))]), (',"analysis":"ok"}}', None)]
    d = score_distribution(text, tokens, criterion="q", values=[1, 2, 3], score=2)
    assert d.problem is None
    assert d.probabilities == pytest.approx([0.2, 0.5, 0.3])
    assert d.expected == pytest.approx(2.1)


def test_a_score_token_merged_with_its_prefix_counts_only_candidates_with_that_prefix():
    text = '{"q":{"score":3,"analysis":"ok"}}'
    tokens = [('{"q":{"score"', None), (":3", [(":3", ln(0.6)), (":1", ln(0.2)), ('"', ln(0.1)), ("1", ln(0.1))]),
              (',"analysis":"ok"}}', None)]
    d = score_distribution(text, tokens, criterion="q", values=[1, 2, 3], score=3)
    # ":3" and ":1" renormalised; the bare "1" would follow a different prefix and the quote spells no value.
    assert d.probabilities == pytest.approx([0.25, 0.0, 0.75])
    assert d.expected == pytest.approx(2.5)


def test_values_missing_from_the_candidates_count_as_zero_and_the_rest_renormalise():
    text = '{"q":{"score":2,"analysis":"ok"}}'
    tokens = [('{"q":{"score":', None), ("2", [("2", ln(0.6)), ("3", ln(0.2)), ("x", ln(0.2))]), (',"analysis":"ok"}}', None)]
    d = score_distribution(text, tokens, criterion="q", values=[1, 2, 3], score=2)
    assert d.probabilities == pytest.approx([0.0, 0.75, 0.25])
    assert d.expected == pytest.approx(2.25)


def test_a_score_spread_over_several_tokens_has_no_expected_score_and_says_why():
    text = '{"q":{"score":10,"analysis":"ok"}}'
    tokens = [('{"q":{"score":', None), ("1", [("1", ln(0.9)), ("9", ln(0.1))]), ("0", [("0", 0.0)]),
              (',"analysis":"ok"}}', None)]
    d = score_distribution(text, tokens, criterion="q", values=list(range(1, 11)), score=10)
    assert d.expected is None and "several tokens" in d.problem
    # A "1" candidate on a 1-10 scale may begin "10": its mass cannot be assigned to a value.
    text = '{"q":{"score":7,"analysis":"ok"}}'
    tokens = [('{"q":{"score":', None), ("7", [("7", ln(0.7)), ("1", ln(0.3))]), (',"analysis":"ok"}}', None)]
    d = score_distribution(text, tokens, criterion="q", values=list(range(1, 11)), score=7)
    assert d.expected is None and "longer scale value" in d.problem


def test_the_score_is_found_past_a_quoted_key_inside_an_analysis():
    text = '{"q":{"analysis":"he said \\"score\\": 3","score":1}}'
    decoy = len('{"q":{"analysis":"he said \\"score\\": ')
    head = '{"q":{"analysis":"he said \\"score\\": 3","score":'
    tokens = [(text[:decoy], None), ("3", [("3", 0.0)]), (head[decoy + 1:], None),
              ("1", [("1", ln(0.8)), ("2", ln(0.2))]), ("}}", None)]
    d = score_distribution(text, tokens, criterion="q", values=[1, 2, 3], score=1)
    assert d.probabilities == pytest.approx([0.8, 0.2, 0.0])


@pytest.mark.parametrize("tokens, words", [
    (None, "no token logprobs"),
    ([('{"q":{"score":2', None), ("}}", None)], "no candidate logprobs"),
    ([("{", None), ("2", [("2", 0.0)])], "do not line up"),
])
def test_without_usable_logprobs_the_problem_is_named(tokens, words):
    d = score_distribution('{"q":{"score":2}}', tokens, criterion="q", values=[1, 2, 3], score=2)
    assert d.expected is None and words in d.problem


def test_compact_keeps_candidates_only_at_the_first_token_and_where_a_digit_was_written():
    kept = compact([("{", [("{", 0.0)]), ("2", [("2", 0.0), ("3", -1.0)]), ("ok", [("ok", 0.0)])])
    assert kept == [("{", [("{", 0.0)]), ("2", [("2", 0.0), ("3", -1.0)]), ("ok", None)]  # a one-word reply: its first


def _reply(score, probabilities=None):
    """A helpfulness verdict, with the candidates at its score token when `probabilities` (value -> p) are given."""
    head, tail = '{"helpfulness":{"score":', ',"analysis":"a' + str(score) + '"}}'
    text = f"{head}{score}{tail}"
    if probabilities is None:
        return JudgeReply(text=text, logprobs_problem="the endpoint refused logprobs (HTTP 400)")
    candidates = [(str(v), ln(p)) for v, p in probabilities.items()]
    return JudgeReply(text=text, logprobs=[(head, None), (str(score), candidates), (tail, None)])


class ScriptedJudge:
    def __init__(self, judge_id, replies):
        self.judge_id, self.replies = judge_id, list(replies)

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id}

    def complete(self, conversations, on_reply, reply_schema):
        for index, _ in enumerate(conversations):
            on_reply(index, self.replies.pop(0))


def answers(n, model="m", lengths=None):
    return Dataset.from_dict({
        col.ID: [f"r{i}" for i in range(n)], col.INSTRUCTION: [f"i{i}" for i in range(n)],
        col.ANSWER: ["x" * (lengths[i] if lengths else 5) for i in range(n)], col.MODEL_ID: [model] * n,
        col.COMPLETION_TOKENS: [3] * n, col.FINISH_REASON: ["stop"] * n,
    })


def test_scoring_stores_each_scale_value_probability_and_the_expected_score():
    judge = ScriptedJudge("j", [_reply(4, {4: 0.5, 5: 0.5}), _reply(2, None)])
    rows = score_answers(answers(2), Judge((judge,), HELPFULNESS)).to_list()
    assert rows[0][col.score("helpfulness")] == 4
    assert rows[0][col.probabilities("helpfulness")] == pytest.approx([0, 0, 0, 0.5, 0.5])
    assert rows[0][col.expected("helpfulness")] == pytest.approx(4.5)
    assert rows[1][col.expected("helpfulness")] is None
    assert "refused logprobs" in rows[1][col.EXPECTED_PROBLEM]


def test_the_summary_says_in_words_when_rows_lack_expected_scores():
    judge = ScriptedJudge("j", [_reply(4, {4: 0.5, 5: 0.5}), _reply(2, None)])
    summary = build_summary(SummaryInputs([score_answers(answers(2), Judge((judge,), HELPFULNESS))], rubric=HELPFULNESS))
    figures = summary.models[0].criterion("helpfulness")
    assert (figures.mean, figures.expected_mean, figures.expected_rows) == (3.0, 4.5, 1)
    assert any("1 of 2 scored rows have none" in line and "refused logprobs" in line for line in trust_lines(summary))


def test_a_jury_aggregates_each_row_and_keeps_every_judges_score():
    first = ScriptedJudge("a", [_reply(4, {4: 0.5, 5: 0.5}), _reply(1, {1: 1.0}), JudgeReply(None, "timeout")])
    second = ScriptedJudge("b", [_reply(2, {2: 1.0}), _reply(2, {2: 0.5, 3: 0.5}), _reply(5, {5: 1.0})])
    rows = score_answers(answers(3), Judge((first, second), HELPFULNESS, aggregate="majority")).to_list()
    assert [r[col.jury_scores("helpfulness")] for r in rows] == [[4, 2], [1, 2], [None, 5]]
    assert [r[col.score("helpfulness")] for r in rows] == [2, 1, 5]  # a split vote goes to the lower score
    assert [r[col.expected("helpfulness")] for r in rows] == pytest.approx([(4.5 + 2) / 2, (1 + 2.5) / 2, 5.0])
    assert rows[2][col.JUDGE_ERROR] is None  # one judge answered
    assert rows[0][col.JUDGE_MODEL] == "jury: a + b"
    jury = (ScriptedJudge("a", [_reply(4, {4: 1.0})]), ScriptedJudge("b", [_reply(1, {1: 1.0})]))
    mean_rows = score_answers(answers(1), Judge(jury, HELPFULNESS, aggregate="mean")).to_list()
    assert mean_rows[0][col.score("helpfulness")] == 3  # 2.5 rounds half up


def test_a_row_no_judge_of_the_jury_answered_is_a_row_error_naming_each_judge():
    judges = [ScriptedJudge("a", [JudgeReply("nope")]), ScriptedJudge("b", [JudgeReply(None, "HTTP 503")])]
    rows = score_answers(answers(1), Judge(tuple(judges), HELPFULNESS)).to_list()
    assert rows[0][col.score("helpfulness")] is None
    assert "a: invalid JSON" in rows[0][col.JUDGE_ERROR] and "b: HTTP 503" in rows[0][col.JUDGE_ERROR]


def test_the_summary_reports_each_judge_and_the_jurys_agreement():
    agreeing = [{1: 1.0}, {3: 1.0}, {5: 1.0}, {2: 1.0}]
    scores = [1, 3, 5, 2]
    judges = [ScriptedJudge(name, [_reply(s, p) for s, p in zip(scores, agreeing)]) for name in ("a", "b")]
    evaluations = score_answers(answers(4), Judge(tuple(judges), HELPFULNESS))
    summary = build_summary(SummaryInputs([evaluations], rubric=HELPFULNESS, jury_aggregate="mean"))
    assert summary.jury == summary.judges == ["a", "b"]
    (agreement,) = summary.agreement
    assert (agreement.alpha, agreement.rows) == (1.0, 4)
    assert [j.mean for j in summary.models[0].criterion("helpfulness").judges] == [2.75, 2.75]


def test_the_judge_check_breaks_integer_ties_with_expected_scores_beside_the_integer_figure_that_decides():
    def pair(i, ref, mis, ref_e, mis_e):
        return JudgeCheckPair(id=str(i), mismatched_id="x", reference_accuracy=ref, mismatched_accuracy=mis,
                              reference_expected=ref_e, mismatched_expected=mis_e)

    pairs = [pair(0, 2, 2, 2.4, 2.1), pair(1, 2, 2, 2.0, 2.3), pair(2, 3, 1, 2.9, 1.2), pair(3, 2, 2, 2.2, 2.2)]
    check = judge_check_from_pairs("j", pairs, threshold=0.5)
    assert check.reference_higher.count == 1 and check.ties.count == 3
    assert check.reference_higher_tie_broken.count == 2  # pair 0 breaks for the reference, pair 1 against, pair 3 stays tied
    # The flag reads integer scores, the kind the table leads with: 1 of 4 is no signal, whatever the tie-break says.
    assert check.no_signal is True and "1/4 (25%" in check.verdict
    assert judge_check_from_pairs("j", pairs, threshold=0.25).no_signal is False
    without = judge_check_from_pairs("j", [pair(0, 2, 2, None, None)], threshold=0.5, expected_problem="no logprobs")
    assert without.reference_higher_tie_broken is None and without.expected_problem == "no logprobs"


def test_a_judge_that_is_also_a_generator_is_warned_about_with_its_check_figure():
    judge = ScriptedJudge("vllm:smollm2-135m", [_reply(3, {3: 1.0})])
    evaluations = score_answers(answers(1, model="smollm2-135m"), Judge((judge,), HELPFULNESS))
    summary = build_summary(SummaryInputs([evaluations], rubric=HELPFULNESS))
    assert len(summary.warnings) == 1 and "Self-preference" in summary.warnings[0] and summary.judges == [judge.judge_id]
    other = ScriptedJudge("vllm:other-judge", [_reply(3, {3: 1.0})])
    other_rows = score_answers(answers(1, model="smollm2-135m"), Judge((other,), HELPFULNESS))
    assert build_summary(SummaryInputs([other_rows], rubric=HELPFULNESS)).warnings == []


def test_score_length_correlation_is_reported_per_criterion():
    judge = ScriptedJudge("j", [_reply(s, {s: 1.0}) for s in (1, 2, 3, 4, 5)])
    evaluations = score_answers(answers(5, lengths=[10, 20, 30, 40, 50]), Judge((judge,), HELPFULNESS))
    length = build_summary(SummaryInputs([evaluations], rubric=HELPFULNESS)).models[0].criterion("helpfulness").length
    assert (length.rows, length.spearman) == (5, 1.0)


def test_pairwise_reports_how_often_the_longer_answer_wins():
    rows = [PairwiseRow(id=str(i), in_order="A", swapped="B", points=p, length_a=a, length_b=b)
            for i, (p, a, b) in enumerate([(1.0, 50, 10), (1.0, 60, 10), (0.0, 10, 40), (0.5, 10, 40), (1.0, 5, 40)])]
    comparison = tally("a", "b", "j", rows)
    assert (comparison.longer_wins.count, comparison.longer_wins.total) == (3, 4)
    assert comparison.length_controlled_win_rate is not None
    assert "the longer answer won 3/4" in pairwise_finding(comparison)


def test_pairwise_ties_are_broken_by_the_answers_expected_scores():
    rows = [PairwiseRow(id="0", in_order="tie", swapped="tie", points=0.5, expected_a=1.4, expected_b=1.1),
            PairwiseRow(id="1", in_order="A", swapped="B", points=1.0, expected_a=1.0, expected_b=1.2),
            PairwiseRow(id="2", in_order="tie", swapped="tie", points=0.5, expected_a=1.0, expected_b=1.3)]
    comparison = tally("a", "b", "j", rows)
    assert comparison.win_rate == 0.6667 and comparison.tie_broken_win_rate == 0.6667
    rows[2] = rows[2].model_copy(update={"expected_b": 0.9})
    assert tally("a", "b", "j", rows).tie_broken_win_rate == 1.0
    rows[0] = rows[0].model_copy(update={"expected_b": None})  # a tie that cannot be broken is left out
    left = tally("a", "b", "j", rows)
    assert (left.tie_broken_win_rate, left.tie_broken_pairs) == (1.0, 2)
    rows = [rows[0]]
    assert tally("a", "b", "j", rows).tie_broken_win_rate is None


ANALYSIS_FIRST = {
    "name": "two-analysis-first", "score_first": False, "expected_before_analysis": True,
    "criteria": [{"name": "accuracy", "description": "right?", "scale": {1: "wrong", 2: "partly", 3: "right"}},
                 {"name": "style", "description": "plain?", "scale": {1: "stiff", 2: "ok", 3: "plain"}}],
}


def _analysis_first(scores: dict[str, int]) -> JudgeReply:
    """A whole analysis-first verdict whose score tokens put all their probability on the written score."""
    tokens, text = [("{", None)], "{"
    for k, (name, score) in enumerate(scores.items()):
        head = f'{", " if k else ""}"{name}": {{"analysis": "Wrong.", "score": '
        tokens += [(head, None), (str(score), [(str(score), 0.0)]), ("}", None)]
        text += f"{head}{score}}}"
    tokens.append(("}", None))
    return JudgeReply(text=text + "}", logprobs=tokens, prompt_tokens=100, completion_tokens=30)


def _scores_only(probabilities: dict[str, dict[int, float]]) -> JudgeReply:
    """A reply that holds each criterion's score alone, the written score the likeliest."""
    tokens, text = [("{", None)], "{"
    for k, (name, probs) in enumerate(probabilities.items()):
        head, score = f'{", " if k else ""}"{name}": {{"score": ', max(probs, key=probs.get)
        tokens += [(head, None), (str(score), [(str(v), ln(p)) for v, p in probs.items()]), ("}", None)]
        text += f"{head}{score}}}"
    tokens.append(("}", None))
    return JudgeReply(text=text + "}", logprobs=tokens, prompt_tokens=100, completion_tokens=5)


class RecordingJudge(ScriptedJudge):
    def __init__(self, judge_id, replies):
        super().__init__(judge_id, replies)
        self.asked = []

    def cache_namespace(self, reply_schema):
        return {"judge": self.judge_id, "schema": reply_schema and reply_schema.schema}

    def complete(self, conversations, on_reply, reply_schema):
        self.asked += [(messages, reply_schema) for messages in conversations]
        super().complete(conversations, on_reply, reply_schema)


def test_an_analysis_first_rubric_keeps_the_verdicts_integer_and_reads_the_expected_score_before_the_analysis():
    rubric = load_rubric(ANALYSIS_FIRST)
    judge = RecordingJudge("j", [
        _analysis_first({"accuracy": 1, "style": 3}),  # the verdict: certain of each integer after its analysis
        _scores_only({"accuracy": {1: 0.2, 2: 0.3, 3: 0.5}, "style": {2: 0.4, 3: 0.6}}),  # asked for the scores first
    ])
    (row,) = score_answers(answers(1), Judge((judge,), rubric)).to_list()
    assert (row[col.score("accuracy")], row[col.score("style")]) == (1, 3)  # the integers are the verdict's
    assert row[col.analysis("accuracy")] == "Wrong."
    assert row[col.expected("accuracy")] == pytest.approx(0.2 + 0.6 + 1.5)  # not 1.0, the verdict's certainty
    assert row[col.probabilities("style")] == pytest.approx([0, 0.4, 0.6])
    assert (row[col.JUDGE_PROMPT_TOKENS], row[col.JUDGE_COMPLETION_TOKENS]) == (200, 35)  # the probe is paid for
    # The probe's prompt asks for each score before its analysis, and its reply may hold nothing but the scores.
    (verdict, verdict_schema), (probe, probe_schema) = judge.asked
    assert verdict_schema is None and verdict[1]["content"].endswith('{"accuracy": {"analysis": "...", "score": 1}, '
                                                                     '"style": {"analysis": "...", "score": 1}}')
    assert probe[1]["content"].endswith('{"accuracy": {"score": 1, "analysis": "..."}, '
                                        '"style": {"score": 1, "analysis": "..."}}')
    assert probe[1]["content"].removesuffix(probe[1]["content"].splitlines()[-1]) == \
        verdict[1]["content"].removesuffix(verdict[1]["content"].splitlines()[-1])  # the rest is the same prompt
    assert {name: list(p["properties"]) for name, p in probe_schema.schema["properties"].items()} == {
        "accuracy": ["score"], "style": ["score"]}


def test_the_first_score_read_before_the_analysis_is_the_score_first_rubrics_first_score():
    """The judge check and judge-bench read the first criterion alone: the same prompt and reply schema as the
    score-first rubric's first score, so its measured figures (docs/judge-trust.md) are this rubric's."""
    rubric = load_rubric(ANALYSIS_FIRST)
    score_first = rubric.model_copy(update={"score_first": True, "expected_before_analysis": False})
    judge = RecordingJudge("j", [_analysis_first({"accuracy": 2}), _scores_only({"accuracy": {2: 0.5, 3: 0.5}})])
    (row,) = score_answers(answers(1), Judge((judge,), rubric), first_score_only=True).to_list()
    assert row[col.expected("accuracy")] == pytest.approx(2.5) and row[col.score("style")] is None
    (probe, probe_schema) = judge.asked[1]
    assert probe == judge_messages(score_first, "i0", "xxxxx")
    assert probe_schema.schema == first_score_schema(score_first, 400)


def test_a_failed_probe_leaves_the_integer_and_says_why_the_expected_score_is_missing():
    rubric = load_rubric({**ANALYSIS_FIRST, "criteria": ANALYSIS_FIRST["criteria"][:1]})
    judge = ScriptedJudge("j", [_analysis_first({"accuracy": 2}), JudgeReply(None, "HTTP 503")])
    (row,) = score_answers(answers(1), Judge((judge,), rubric)).to_list()
    assert row[col.score("accuracy")] == 2 and row[col.JUDGE_ERROR] is None
    assert row[col.expected("accuracy")] is None
    assert "before the analysis" in row[col.EXPECTED_PROBLEM] and "HTTP 503" in row[col.EXPECTED_PROBLEM]


def test_a_judge_without_token_logprobs_is_not_asked_for_scores_it_cannot_give_probabilities_of():
    rubric = load_rubric({**ANALYSIS_FIRST, "criteria": ANALYSIS_FIRST["criteria"][:1]})
    verdict = _analysis_first({"accuracy": 2})
    without = JudgeReply(text=verdict.text, logprobs_problem="the endpoint refused logprobs (HTTP 400)")
    judge = RecordingJudge("j", [without, without])
    rows = score_answers(answers(2), Judge((judge,), rubric)).to_list()
    assert len(judge.asked) == 2  # the two verdicts, no probe
    assert [r[col.score("accuracy")] for r in rows] == [2, 2] and [r[col.expected("accuracy")] for r in rows] == [None] * 2
    assert "refused logprobs" in rows[0][col.EXPECTED_PROBLEM]


def test_a_score_first_rubric_cannot_ask_for_its_expected_score_before_the_analysis_again():
    with pytest.raises(RubricError, match="drop expected_before_analysis or set score_first to false"):
        load_rubric({**ANALYSIS_FIRST, "score_first": True})


def test_each_probe_lands_on_its_own_row_and_only_verdicts_with_logprobs_are_probed():
    """Five rows: verdicts with logprobs on rows 0, 3 and 4, one without on row 1 (an endpoint that refused them), a
    failed verdict on row 2. Rows 0, 3 and 4 are probed, in that order, each probe's probabilities on its own row."""
    rubric = load_rubric({**ANALYSIS_FIRST, "criteria": ANALYSIS_FIRST["criteria"][:1]})
    verdict = _analysis_first({"accuracy": 2})
    refused = JudgeReply(text=verdict.text, logprobs_problem="the endpoint refused logprobs (HTTP 400)")
    probes = {0: {1: 0.6, 2: 0.4}, 3: {2: 0.7, 3: 0.3}, 4: {1: 0.1, 3: 0.9}}
    spare = _scores_only({"accuracy": {2: 1.0}})  # what a probe too many would be given
    judge = RecordingJudge("j", [verdict, refused, JudgeReply(None, "HTTP 503"), verdict, verdict] +
                           [_scores_only({"accuracy": probes[k]}) for k in sorted(probes)] + [spare])
    split = answers(5, lengths=[1, 2, 3, 4, 5])
    rows = score_answers(split, Judge((judge,), rubric)).to_list()
    score_first = rubric.model_copy(update={"score_first": True, "expected_before_analysis": False})
    assert [messages for messages, _ in judge.asked[5:]] == [
        judge_messages(score_first, split[k][col.INSTRUCTION], split[k][col.ANSWER]) for k in sorted(probes)]
    for k, row in enumerate(rows):
        given = probes.get(k, {})
        assert row[col.probabilities("accuracy")] == (pytest.approx([given.get(v, 0.0) for v in (1, 2, 3)])
                                                      if given else None), k
    assert [r[col.score("accuracy")] for r in rows] == [2, 2, None, 2, 2]
    assert "refused logprobs" in rows[1][col.EXPECTED_PROBLEM] and rows[2][col.JUDGE_ERROR] == "HTTP 503"
