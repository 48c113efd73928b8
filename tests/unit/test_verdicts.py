"""Verdicts: parsing a judge's reply against the rubric, the reply schemas that hold generation to it, the prompt."""

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from llm_engineering.evaluation.judging.pairwise import pairwise_schema
from llm_engineering.evaluation.judging.rubric import judge_messages, load_rubric
from llm_engineering.evaluation.judging.verdict import parse_verdict, verdict_schema

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
