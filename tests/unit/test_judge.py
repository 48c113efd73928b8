import json
from pathlib import Path

import pytest
from datasets import Dataset
from jsonschema import Draft202012Validator

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.judging.pairwise import pairwise_schema
from llm_engineering.evaluation.judging.rubric import judge_messages, load_rubric, parse_verdict, verdict_schema
from llm_engineering.evaluation.judging.scoring import score_answers

HANDBOOK = load_rubric("handbook")
CASES = json.loads((Path(__file__).parent / "cases" / "verdicts.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_parse_verdict_cases(case):
    parsed = parse_verdict(HANDBOOK, case["raw"])
    if case["error"] is None:
        assert parsed.error is None
        assert parsed.criteria["accuracy"].score == case["accuracy"]
        assert parsed.criteria["style"].score == case["style"]
    else:
        assert parsed.criteria is None
        assert case["error"] in parsed.error


def test_schema_limits_scores_to_one_to_three():
    schema = verdict_schema(HANDBOOK, 200)
    for criterion in ("accuracy", "style"):
        properties = schema["properties"][criterion]["properties"]
        assert properties["score"]["enum"] == [1, 2, 3]
        assert properties["analysis"]["maxLength"] == 200
    assert schema["required"] == ["accuracy", "style"]


def _verdict(accuracy=2, style=3, analysis="ok", **extra):
    return {"accuracy": {"analysis": analysis, "score": accuracy}, "style": {"analysis": "ok", "score": style}, **extra}


@pytest.mark.parametrize("reply, valid", [
    (_verdict(), True),
    (_verdict(accuracy=1, style=1), True),
    (_verdict(accuracy=4), False),
    (_verdict(style=0), False),
    (_verdict(accuracy="2"), False),
    (_verdict(overall=3), False),
    ({**_verdict(), "accuracy": {"analysis": "ok", "score": 2, "confidence": 1}}, False),
    ({"accuracy": {"analysis": "ok", "score": 2}}, False),
    (_verdict(analysis="x" * 201), False),
])
def test_verdict_schema_holds_generation_to_the_rubric(reply, valid):
    assert Draft202012Validator(verdict_schema(HANDBOOK, 200)).is_valid(reply) is valid


def test_a_long_analysis_is_held_back_by_the_schema_but_still_parses():
    reply = _verdict(analysis="x" * 500)
    assert not Draft202012Validator(verdict_schema(HANDBOOK, 400)).is_valid(reply)
    assert parse_verdict(HANDBOOK, json.dumps(reply)).error is None


@pytest.mark.parametrize("reply, valid", [
    ({"analysis": "A is right", "winner": "A"}, True),
    ({"analysis": "same", "winner": "tie"}, True),
    ({"analysis": "x", "winner": "C"}, False),
    ({"analysis": "x", "winner": "B", "confidence": 1}, False),
    ({"winner": "B"}, False),
    ({"analysis": "x" * 301, "winner": "B"}, False),
])
def test_pairwise_schema_allows_only_a_b_or_tie(reply, valid):
    assert Draft202012Validator(pairwise_schema(300).schema).is_valid(reply) is valid


def _objects(schema):
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _objects(item)


@pytest.mark.parametrize("schema", [verdict_schema(HANDBOOK, 400), pairwise_schema(400).schema], ids=["verdict", "pairwise"])
def test_reply_schemas_meet_openai_strict_mode_and_need_no_references(schema):
    Draft202012Validator.check_schema(schema)
    objects = list(_objects(schema))
    assert objects
    for node in objects:  # strict mode: no extra keys anywhere, every property required
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    assert "$ref" not in json.dumps(schema) and "$defs" not in schema


def test_generated_verdict_schema_is_the_one_cached_verdicts_were_keyed_by():
    # The schema is part of the judge cache key: generating it from the model must not change it.
    criterion = {
        "type": "object",
        "properties": {"analysis": {"type": "string", "maxLength": 400}, "score": {"type": "integer", "enum": [1, 2, 3]}},
        "required": ["analysis", "score"],
        "additionalProperties": False,
    }
    assert verdict_schema(HANDBOOK, 400) == {
        "type": "object",
        "properties": {"accuracy": criterion, "style": criterion},
        "required": ["accuracy", "style"],
        "additionalProperties": False,
    }
    assert pairwise_schema(300).schema == {
        "type": "object",
        "properties": {"analysis": {"type": "string", "maxLength": 300}, "winner": {"type": "string", "enum": ["A", "B", "tie"]}},
        "required": ["analysis", "winner"],
        "additionalProperties": False,
    }


def test_judge_prompt_carries_instruction_and_answer():
    messages = judge_messages(HANDBOOK, "What is LoRA?", "Low-rank adapters.")
    assert messages[0]["role"] == "system"
    assert "What is LoRA?" in messages[1]["content"]
    assert "Low-rank adapters." in messages[1]["content"]
    assert "{instruction}" in HANDBOOK.template


class ScriptedJudge:
    """Replies fixed strings in order and counts requests: exercises bookkeeping, not a model."""

    judge_id = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.asked = []

    def cache_namespace(self, reply_schema):
        return {"backend": "scripted"}

    def complete(self, conversations, on_reply, reply_schema):
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
    evaluations = score_answers(answers(3), [ScriptedJudge([GOOD, "not json", JudgeReply(None, "HTTP 503: down")])], HANDBOOK)
    rows = evaluations.to_list()
    assert [r[col.ID] for r in rows] == ["r0", "r1", "r2"]
    assert (rows[0][col.score("accuracy")], rows[0][col.score("style")], rows[0][col.JUDGE_ERROR]) == (2, 3, None)
    assert rows[1][col.score("accuracy")] is None and rows[1][col.score("style")] is None
    assert "invalid JSON" in rows[1][col.JUDGE_ERROR] and rows[1][col.JUDGE_RAW] == "not json"
    assert rows[2][col.JUDGE_ERROR] == "HTTP 503: down" and rows[2][col.JUDGE_RAW] is None


def test_rows_never_generated_are_not_judged_and_say_why():
    rows = answers(3).add_column(col.FINISH_REASON, ["stop", col.PROMPT_TOO_LONG, "length"])
    judge = ScriptedJudge([GOOD, GOOD])
    evaluations = score_answers(rows, [judge], HANDBOOK)
    assert len(judge.asked) == 2 and all("instruction 1" not in str(c) for c in judge.asked)
    assert evaluations[col.score("accuracy")] == [2, None, 2]
    assert "max_model_len" in evaluations[1][col.JUDGE_ERROR]


def test_score_answers_all_failed_keeps_typed_columns():
    evaluations = score_answers(answers(1), [ScriptedJudge(["{"])], HANDBOOK)
    assert str(evaluations.features[col.score("accuracy")].dtype) == "int32"
    assert evaluations[0][col.score("accuracy")] is None


def test_cached_verdicts_are_not_asked_again_and_failures_are_not_cached(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    first = ScriptedJudge([GOOD, "not json", GOOD])
    score_answers(answers(3), [first], HANDBOOK, cache)
    assert len(first.asked) == 3 and len(cache) == 2
    second = ScriptedJudge([GOOD])
    evaluations = score_answers(answers(3), [second], HANDBOOK, cache)
    assert second.asked == [first.asked[1]]  # only the row that failed
    assert evaluations[col.JUDGE_CACHED] == [True, False, True]
    assert evaluations[col.score("accuracy")] == [2, 2, 2]


def test_cache_key_changes_with_judge_settings(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    score_answers(answers(1), [ScriptedJudge([GOOD])], HANDBOOK, cache)
    other = ScriptedJudge([GOOD])
    other.cache_namespace = lambda reply_schema: {"backend": "scripted", "temperature": 1.0}
    score_answers(answers(1), [other], HANDBOOK, cache)
    assert len(other.asked) == 1


def test_only_failed_rescoring_keeps_valid_rows_and_fills_the_others():
    first = score_answers(answers(4), [ScriptedJudge([GOOD, "oops", GOOD, JudgeReply(None, "timeout")])], HANDBOOK)
    better = json.dumps({"accuracy": {"analysis": "fine", "score": 3}, "style": {"analysis": "fine", "score": 1}})
    judge = ScriptedJudge([better, better])
    merged = score_answers(first, [judge], HANDBOOK, only_failed=True)
    assert len(judge.asked) == 2
    assert merged[col.ID] == first[col.ID]
    assert merged[col.score("accuracy")] == [2, 3, 2, 3]
    assert merged[col.JUDGE_ERROR] == [None] * 4
    assert merged[col.analysis("accuracy")][0] == "ok"


def test_a_damaged_judge_cache_is_moved_aside_with_a_warning_and_a_fresh_one_used(tmp_path, caplog):
    folder = tmp_path / "cache"
    first = JudgeCache(folder)
    first.set("k", {"reply": 1})
    first.close()
    (folder / "cache.db").write_bytes(b"this is not a database " * 200)  # damaged, as by a full disk or a bad copy
    with caplog.at_level("WARNING"):
        cache = JudgeCache(folder)
    (aside,) = tmp_path.glob("cache.damaged-*")
    assert f"moved aside to {aside}" in caplog.text and "verdicts are asked again" in caplog.text
    assert cache.get("k") is None and len(cache) == 0  # nothing is read from the damaged file
    cache.set("k", {"reply": 2})
    assert cache.get("k") == {"reply": 2}
    cache.close()
