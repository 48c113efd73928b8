import json
from pathlib import Path

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judge_cache import JudgeCache
from llm_engineering.evaluation.judge import (
    JUDGE_PROMPT_TEMPLATE,
    JudgeReply,
    judge_messages,
    parse_verdict,
    score_answers,
    verdict_schema,
)

CASES = json.loads((Path(__file__).parent / "cases" / "verdicts.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_parse_verdict_cases(case):
    parsed = parse_verdict(case["raw"])
    if case["error"] is None:
        assert parsed.error is None
        assert parsed.verdict.accuracy.score == case["accuracy"]
        assert parsed.verdict.style.score == case["style"]
    else:
        assert parsed.verdict is None
        assert case["error"] in parsed.error


def test_schema_limits_scores_to_one_to_three():
    schema = verdict_schema(200)
    for criterion in ("accuracy", "style"):
        properties = schema["properties"][criterion]["properties"]
        assert properties["score"]["enum"] == [1, 2, 3]
        assert properties["analysis"]["maxLength"] == 200
    assert schema["required"] == ["accuracy", "style"]


def test_judge_prompt_carries_instruction_and_answer():
    messages = judge_messages("What is LoRA?", "Low-rank adapters.")
    assert messages[0]["role"] == "system"
    assert "What is LoRA?" in messages[1]["content"]
    assert "Low-rank adapters." in messages[1]["content"]
    assert "{instruction}" in JUDGE_PROMPT_TEMPLATE


class ScriptedJudge:
    """Replies fixed strings in order and counts requests: exercises bookkeeping, not a model."""

    judge_id = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = []

    def cache_namespace(self):
        return {"backend": "scripted"}

    def complete(self, conversations, on_reply):
        for index, messages in enumerate(conversations):
            self.asked.append(messages[1]["content"])
            reply = self.replies.pop(0)
            if not isinstance(reply, JudgeReply):
                reply = JudgeReply(text=reply, prompt_tokens=10, completion_tokens=5)
            on_reply(index, reply)


def answers(n):
    return Dataset.from_dict({
        col.ID: [f"r{i}" for i in range(n)], col.INSTRUCTION: [f"instruction {i}" for i in range(n)],
        col.ANSWER: [f"answer {i}" for i in range(n)], col.MODEL_ID: ["m"] * n,
    })


GOOD = json.dumps({"accuracy": {"analysis": "ok", "score": 2}, "style": {"analysis": "ok", "score": 3}})


def test_score_answers_keeps_failed_rows_with_error_and_raw_reply():
    evaluations = score_answers(answers(3), ScriptedJudge([GOOD, "not json", JudgeReply(None, "HTTP 503: down")]))
    rows = evaluations.to_list()
    assert [r[col.ID] for r in rows] == ["r0", "r1", "r2"]
    assert (rows[0][col.ACCURACY_SCORE], rows[0][col.STYLE_SCORE], rows[0][col.JUDGE_ERROR]) == (2, 3, None)
    assert rows[1][col.ACCURACY_SCORE] is None and rows[1][col.STYLE_SCORE] is None
    assert "invalid JSON" in rows[1][col.JUDGE_ERROR] and rows[1][col.JUDGE_RAW] == "not json"
    assert rows[2][col.JUDGE_ERROR] == "HTTP 503: down" and rows[2][col.JUDGE_RAW] is None


def test_rows_never_generated_are_not_judged_and_say_why():
    rows = answers(3).add_column(col.FINISH_REASON, ["stop", col.PROMPT_TOO_LONG, "length"])
    judge = ScriptedJudge([GOOD, GOOD])
    evaluations = score_answers(rows, judge)
    assert len(judge.asked) == 2 and all("instruction 1" not in str(c) for c in judge.asked)
    assert evaluations[col.ACCURACY_SCORE] == [2, None, 2]
    assert "max_model_len" in evaluations[1][col.JUDGE_ERROR]


def test_score_answers_all_failed_keeps_typed_columns():
    evaluations = score_answers(answers(1), ScriptedJudge(["{"]))
    assert str(evaluations.features[col.ACCURACY_SCORE].dtype) == "int32"
    assert evaluations[0][col.ACCURACY_SCORE] is None


def test_cached_verdicts_are_not_asked_again_and_failures_are_not_cached(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    first = ScriptedJudge([GOOD, "not json", GOOD])
    score_answers(answers(3), first, cache)
    assert len(first.asked) == 3 and len(cache) == 2
    second = ScriptedJudge([GOOD])
    evaluations = score_answers(answers(3), second, cache)
    assert second.asked == [first.asked[1]]  # only the row that failed
    assert evaluations[col.JUDGE_CACHED] == [True, False, True]
    assert evaluations[col.ACCURACY_SCORE] == [2, 2, 2]


def test_cache_key_changes_with_judge_settings(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    score_answers(answers(1), ScriptedJudge([GOOD]), cache)
    other = ScriptedJudge([GOOD])
    other.cache_namespace = lambda: {"backend": "scripted", "temperature": 1.0}
    score_answers(answers(1), other, cache)
    assert len(other.asked) == 1


def test_only_failed_rescoring_keeps_valid_rows_and_fills_the_others():
    first = score_answers(answers(4), ScriptedJudge([GOOD, "oops", GOOD, JudgeReply(None, "timeout")]))
    better = json.dumps({"accuracy": {"analysis": "fine", "score": 3}, "style": {"analysis": "fine", "score": 1}})
    judge = ScriptedJudge([better, better])
    merged = score_answers(first, judge, only_failed=True)
    assert len(judge.asked) == 2
    assert merged[col.ID] == first[col.ID]
    assert merged[col.ACCURACY_SCORE] == [2, 3, 2, 3]
    assert merged[col.JUDGE_ERROR] == [None] * 4
    assert merged[col.ACCURACY_ANALYSIS][0] == "ok"
