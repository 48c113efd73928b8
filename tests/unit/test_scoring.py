"""Scoring a dataset's answers: every row kept in order, failures as row errors, rescoring only the failed rows."""

import json

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.judging.transport import JudgeReply
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
