"""Scoring a dataset's answers: every row kept in order, failures as row errors, rescoring only the failed rows."""

import json

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.judging.verdict_record import VerdictRecord
from tests.support.judges import GOOD, ScriptedJudge, answers

HANDBOOK = load_rubric("handbook")


def test_score_answers_keeps_failed_rows_with_error_and_raw_reply():
    evaluations = score_answers(answers(3),
                                Judge((ScriptedJudge([GOOD, "not json", JudgeReply(None, "HTTP 503: down")]),), HANDBOOK))
    rows = evaluations.to_list()
    assert [r[col.ID] for r in rows] == ["r0", "r1", "r2"]
    assert (rows[0][col.score("accuracy")], rows[0][col.score("style")], rows[0][col.JUDGE_ERROR]) == (2, 3, None)
    assert rows[1][col.score("accuracy")] is None and rows[1][col.score("style")] is None
    assert "invalid JSON" in rows[1][col.JUDGE_ERROR] and rows[1][col.JUDGE_RAW] == "not json"
    assert rows[2][col.JUDGE_ERROR] == "HTTP 503: down" and rows[2][col.JUDGE_RAW] is None


def test_rows_never_generated_are_not_judged_and_say_why():
    rows = answers(3).add_column(col.FINISH_REASON, ["stop", col.PROMPT_TOO_LONG, "length"])
    judge = ScriptedJudge([GOOD, GOOD])
    evaluations = score_answers(rows, Judge((judge,), HANDBOOK))
    assert len(judge.asked) == 2 and all("instruction 1" not in str(c) for c in judge.asked)
    assert evaluations[col.score("accuracy")] == [2, None, 2]
    assert "max_model_len" in evaluations[1][col.JUDGE_ERROR]


def test_score_answers_all_failed_keeps_typed_columns():
    evaluations = score_answers(answers(1), Judge((ScriptedJudge(["{"]),), HANDBOOK))
    assert str(evaluations.features[col.score("accuracy")].dtype) == "int32"
    assert evaluations[0][col.score("accuracy")] is None


def test_only_failed_rescoring_keeps_valid_rows_and_fills_the_others():
    first = score_answers(answers(4), Judge((ScriptedJudge([GOOD, "oops", GOOD, JudgeReply(None, "timeout")]),), HANDBOOK))
    better = json.dumps({"accuracy": {"analysis": "fine", "score": 3}, "style": {"analysis": "fine", "score": 1}})
    judge = ScriptedJudge([better, better])
    merged = score_answers(first, Judge((judge,), HANDBOOK), only_failed=True)
    assert len(judge.asked) == 2
    assert merged[col.ID] == first[col.ID]
    assert merged[col.score("accuracy")] == [2, 3, 2, 3]
    assert merged[col.JUDGE_ERROR] == [None] * 4
    assert merged[col.analysis("accuracy")][0] == "ok"


def test_first_score_only_asks_for_the_first_score_and_leaves_the_other_criteria_empty():
    class SchemaJudge(ScriptedJudge):
        def complete(self, conversations, on_reply, reply_schema):
            self.schemas = [reply_schema.schema if reply_schema else None] * len(conversations)
            super().complete(conversations, on_reply, reply_schema)

    judge = SchemaJudge(['{"accuracy":{"score":3}}', '{"style":{"score":2}}'])
    rows = score_answers(answers(2), Judge((judge,), load_rubric("handbook-score-first")), first_score_only=True).to_list()
    assert judge.schemas[0]["required"] == ["accuracy"] and "analysis" not in str(judge.schemas[0])
    assert (rows[0][col.score("accuracy")], rows[0][col.score("style")], rows[0][col.JUDGE_ERROR]) == (3, None, None)
    assert rows[1][col.score("accuracy")] is None and "accuracy" in rows[1][col.JUDGE_ERROR]  # no first score: an error


def _stored_before_the_later_columns():
    """Evaluations as a run of 2026-11-22 stored them: the handbook's scores and analyses, the raw reply, tokens and
    the cache flag; no expected scores, probabilities, expected_score_problem, judge_seconds or judge_calls (columns
    added since). The second row's verdict failed."""
    return answers(2).add_column(col.JUDGE_MODEL, ["vllm:old-judge"] * 2).add_column(
        col.score("accuracy"), [3, None]).add_column(col.analysis("accuracy"), ["right", None]).add_column(
        col.score("style"), [2, None]).add_column(col.analysis("style"), ["plain", None]).add_column(
        col.JUDGE_ERROR, [None, "invalid JSON (Expecting value at char 0)"]).add_column(
        col.JUDGE_RAW, ["{...}", "oops"]).add_column(col.JUDGE_PROMPT_TOKENS, [120, 118]).add_column(
        col.JUDGE_COMPLETION_TOKENS, [40, 3]).add_column(col.JUDGE_CACHED, [False, False])


def test_a_verdict_stored_by_an_earlier_run_reads_back_as_it_was_stored():
    old = _stored_before_the_later_columns()
    record = VerdictRecord.from_row(old[0], HANDBOOK)
    assert record.scored and record.judge_model == "vllm:old-judge"
    assert (record.criteria["accuracy"].score, record.criteria["accuracy"].analysis, record.criteria["style"].score) == (
        3, "right", 2)
    assert (record.raw, record.prompt_tokens, record.completion_tokens, record.cached) == ("{...}", 120, 40, False)
    # What the run did not store reads as unknown, not as a value it never had.
    assert (record.seconds, record.calls, record.expected_problem, record.criteria["accuracy"].expected) == (None,) * 4
    assert not VerdictRecord.from_row(old[1], HANDBOOK).scored
    # Written again, the record gives back the stored values, column for column, and None in the columns added since.
    again = record.row(HANDBOOK)
    assert {name: again[name] for name in old.column_names if name in again} == {
        name: value for name, value in old[0].items() if name in again}
    assert set(again) - set(old.column_names) == {
        col.expected("accuracy"), col.probabilities("accuracy"), col.expected("style"), col.probabilities("style"),
        col.EXPECTED_PROBLEM, col.JUDGE_SECONDS, col.JUDGE_CALLS}
    assert all(again[name] is None for name in set(again) - set(old.column_names))


def test_rescoring_the_failed_rows_of_an_earlier_run_keeps_its_verdicts_and_the_summary_reads_them_as_before():
    from llm_engineering.evaluation.report.summary import model_scores

    old = _stored_before_the_later_columns()
    judge = ScriptedJudge([GOOD])
    merged = score_answers(old, Judge((judge,), HANDBOOK), only_failed=True)
    assert len(judge.asked) == 1 and "instruction 1" in str(judge.asked[0])
    kept = merged[0]
    assert all(kept[name] == value for name, value in old[0].items())
    assert (merged[1][col.score("accuracy")], merged[1][col.JUDGE_ERROR], merged[1][col.JUDGE_CALLS]) == (2, None, 1)
    usage = model_scores(merged, rubric=HANDBOOK).judge_usage
    # The old row counts as one call (stored before calls were counted), as the new one; only the new one was timed, so
    # the two have no total time.
    assert (usage.answers, usage.calls, usage.seconds) == (2, 2, None)
