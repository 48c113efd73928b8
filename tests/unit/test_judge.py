import json
from pathlib import Path

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judge import (
    JUDGE_PROMPT_TEMPLATE,
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
    """Replies fixed strings in order: exercises the row bookkeeping, not a model."""

    judge_id = "scripted"

    def __init__(self, replies):
        self.replies = replies

    def complete(self, conversations):
        assert len(conversations) == len(self.replies)
        return self.replies


def test_score_answers_keeps_failed_rows_with_error_and_raw_reply():
    generations = Dataset.from_dict(
        {col.ID: ["a", "b"], col.INSTRUCTION: ["i1", "i2"], col.ANSWER: ["x", "y"], col.MODEL_ID: ["m", "m"]}
    )
    good = json.dumps({"accuracy": {"analysis": "ok", "score": 2}, "style": {"analysis": "ok", "score": 3}})
    evaluations = score_answers(generations, ScriptedJudge([good, "not json"]))
    rows = evaluations.to_list()
    assert [r[col.ID] for r in rows] == ["a", "b"]
    assert (rows[0][col.ACCURACY_SCORE], rows[0][col.STYLE_SCORE], rows[0][col.JUDGE_ERROR]) == (2, 3, None)
    assert rows[1][col.ACCURACY_SCORE] is None and rows[1][col.STYLE_SCORE] is None
    assert "invalid JSON" in rows[1][col.JUDGE_ERROR]
    assert rows[1][col.JUDGE_RAW] == "not json"


def test_score_answers_all_failed_keeps_typed_columns():
    generations = Dataset.from_dict(
        {col.ID: ["a"], col.INSTRUCTION: ["i"], col.ANSWER: ["x"], col.MODEL_ID: ["m"]}
    )
    evaluations = score_answers(generations, ScriptedJudge(["{"]))
    assert str(evaluations.features[col.ACCURACY_SCORE].dtype) == "int32"
    assert evaluations[0][col.ACCURACY_SCORE] is None
