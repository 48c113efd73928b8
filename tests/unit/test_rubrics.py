"""Rubrics from config: loading, errors that name the key and the fix, the generated schema and prompt."""

import json

import pytest
from jsonschema import Draft202012Validator

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.judging.rubric import RubricError, judge_messages, load_rubric, shipped_rubrics
from llm_engineering.evaluation.judging.verdict import first_score_schema, parse_verdict, verdict_schema
from llm_engineering.run_config import parse_evaluation

CUSTOM = {
    "name": "support",
    "system_prompt": "You grade support replies.",
    "criteria": [
        {"name": "politeness", "description": "is it polite?", "scale": {0: "rude", 1: "neutral", 2: "warm"}},
        {"name": "resolution", "description": "does it solve the problem?",
         "scale": {1: "no", 2: "partly", 3: "mostly", 4: "yes"}},
    ],
}


X = {"name": "x", "description": "d", "scale": {1: "a", 2: "b"}}


def test_shipped_rubrics_are_the_handbook_reference_guided_and_helpfulness():
    assert {"handbook", "reference-guided", "helpfulness"} <= set(shipped_rubrics())
    handbook = load_rubric("handbook")
    assert handbook.names == ["accuracy", "style"] and not handbook.score_first and not handbook.reference_guided
    assert [c.values for c in handbook.criteria] == [[1, 2, 3], [1, 2, 3]]
    guided = load_rubric("reference-guided")
    assert guided.reference_guided and guided.score_first
    assert all(c.values == [1, 2, 3, 4, 5] for c in guided.criteria)
    assert load_rubric("helpfulness").names == ["helpfulness"]


@pytest.mark.parametrize("rubric, words", [
    ({"criteria": []}, "at least one criterion"),
    ({"criteria": [{"name": "x", "description": "d", "scale": {3: "only"}}]}, "min < max"),
    ({"criteria": [{"name": "x", "description": "d", "scale": {1: "a", 3: "c"}}]}, "missing [2]"),
    ({"criteria": [X], "template": "{instruction} {answer} {question}"}, "unknown placeholder(s) ['question']"),
    ({"criteria": [X], "template": "{instruction} {answer} {reference}"}, "reference_guided is false"),
    ({"criteria": [X], "template": "{answer} only"}, "never shows ['instruction']"),
    ({"criteria": [X, X]}, "named twice"),
    ({"criteria": [{**X, "name": "judge"}]}, "reserved"),
    ({"criteria": [{**X, "name": "Bad Name"}]}, "criteria.0.name"),
    ({"criteria": [X], "weights": [1]}, "weights"),
    ("no-such-rubric", "neither a shipped rubric"),
])
def test_a_bad_rubric_fails_at_config_load_naming_the_key_and_the_fix(rubric, words):
    with pytest.raises(ConfigError) as error:
        parse_evaluation({"judge": {"rubric": rubric}})
    assert "parameters.judge.rubric" in str(error.value)
    assert words in str(error.value)


def test_a_rubric_file_is_read_once_and_carried_inline(tmp_path):
    path = tmp_path / "support.yaml"
    path.write_text(json.dumps(CUSTOM))  # JSON is YAML
    config = parse_evaluation({"judge": {"rubric": str(path)}})
    path.unlink()  # a remote step never sees the file: the config holds the rubric itself
    again = parse_evaluation(config.model_dump())
    assert again.judge.resolved_rubric().names == ["politeness", "resolution"]


def test_a_broken_rubric_file_names_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("criteria: [unclosed")
    with pytest.raises(ConfigError, match="broken.yaml is not valid YAML"):
        parse_evaluation({"judge": {"rubric": str(path)}})


def test_a_jury_scores_one_rubric():
    with pytest.raises(ConfigError, match="a jury scores one rubric"):
        parse_evaluation({"judges": [{"rubric": "handbook"}, {"rubric": "helpfulness"}]})
    with pytest.raises(ConfigError, match="not both"):
        parse_evaluation({"judge": {"temperature": 0.5}, "judges": [{}, {"seed": 1}]})
    assert len(parse_evaluation({"judges": [{}, {"seed": 1}]}).panel) == 2


def test_the_schema_follows_the_rubric_with_each_score_first():
    rubric = load_rubric(CUSTOM)
    schema = verdict_schema(rubric, 100)
    assert list(schema["properties"]) == ["politeness", "resolution"]
    politeness = schema["properties"]["politeness"]
    assert list(politeness["properties"]) == ["score", "analysis"]  # generated in this order
    assert politeness["properties"]["score"]["enum"] == [0, 1, 2]
    assert schema["properties"]["resolution"]["properties"]["score"]["enum"] == [1, 2, 3, 4]
    valid = {"politeness": {"score": 0, "analysis": "x"}, "resolution": {"score": 4, "analysis": "y"}}
    assert Draft202012Validator(schema).is_valid(valid)
    assert not Draft202012Validator(schema).is_valid({**valid, "resolution": {"score": 5, "analysis": "y"}})
    assert not Draft202012Validator(schema).is_valid({"politeness": valid["politeness"]})


def test_parse_verdict_reads_every_criterion_and_rejects_scores_off_the_scale():
    rubric = load_rubric(CUSTOM)
    parsed = parse_verdict(rubric, json.dumps({"politeness": {"score": 2, "analysis": "warm"},
                                               "resolution": {"score": 1, "analysis": "no"}}))
    assert parsed.error is None
    assert (parsed.criteria["politeness"].score, parsed.criteria["resolution"].analysis) == (2, "no")
    wrong = parse_verdict(rubric, json.dumps({"politeness": {"score": 3, "analysis": "?"},
                                              "resolution": {"score": 1, "analysis": "no"}}))
    assert wrong.criteria is None and "politeness.score" in wrong.error


def test_first_score_schema_ends_at_the_first_criterions_score_with_the_analysis_only_where_it_comes_first():
    rubric = load_rubric(CUSTOM)  # score first, as rubrics are unless they say otherwise
    schema = first_score_schema(rubric, 50)
    assert Draft202012Validator(schema).is_valid({"politeness": {"score": 2}})
    assert not Draft202012Validator(schema).is_valid({"politeness": {"score": 3}})  # off the scale
    assert not Draft202012Validator(schema).is_valid({"politeness": {"score": 2, "analysis": "x"}})
    assert not Draft202012Validator(schema).is_valid({"politeness": {"score": 2}, "resolution": {"score": 1}})
    # Analysis first, the score depends on the analysis: the reply holds it, at the whole verdict's length, in order.
    analysis_first = first_score_schema(load_rubric({**CUSTOM, "score_first": False}), 50)
    assert Draft202012Validator(analysis_first).is_valid({"politeness": {"analysis": "x", "score": 2}})
    assert not Draft202012Validator(analysis_first).is_valid({"politeness": {"score": 2}})
    assert not Draft202012Validator(analysis_first).is_valid({"politeness": {"analysis": "x" * 51, "score": 2}})
    assert list(analysis_first["properties"]["politeness"]["properties"]) == ["analysis", "score"]


def test_a_first_score_reply_parses_alone_or_inside_a_whole_verdict():
    rubric = load_rubric(CUSTOM)  # score first, as rubrics are unless they say otherwise
    alone = parse_verdict(rubric, json.dumps({"politeness": {"score": 1}}), first_score_only=True)
    assert alone.error is None and list(alone.criteria) == ["politeness"] and alone.criteria["politeness"].score == 1
    whole = {"politeness": {"score": 0, "analysis": "curt"}, "resolution": {"score": 4, "analysis": "solved"}}
    assert parse_verdict(rubric, json.dumps(whole), first_score_only=True).criteria["resolution"].score == 4
    off_scale = parse_verdict(rubric, json.dumps({"politeness": {"score": 7}}), first_score_only=True)
    assert off_scale.criteria is None and "politeness.score" in off_scale.error
    # A scoring run still needs every criterion and analysis.
    assert parse_verdict(rubric, json.dumps({"politeness": {"score": 1}})).criteria is None


def test_the_default_prompt_writes_out_the_criteria_and_shows_the_reference_only_when_guided():
    guided = load_rubric("reference-guided")
    messages = judge_messages(guided, "What is LoRA?", "A fish.", "Low-rank adapters.")
    prompt = messages[1]["content"]
    assert "Low-rank adapters." in prompt and "A fish." in prompt and "What is LoRA?" in prompt
    assert "5: fully agrees with the reference" in prompt
    assert '"correctness": {"score": 1, "analysis": "..."}' in prompt
    with pytest.raises(RubricError, match="no reference answer"):
        judge_messages(guided, "What is LoRA?", "A fish.")
    plain = judge_messages(load_rubric("helpfulness"), "What is LoRA?", "A fish.", "Low-rank adapters.")
    assert "Low-rank adapters." not in plain[1]["content"]


def test_pairwise_asks_on_the_rubrics_criteria_and_shows_the_reference_only_when_guided():
    from llm_engineering.evaluation.judging.pairwise import pairwise_messages

    guided = pairwise_messages(load_rubric("reference-guided"), "What is LoRA?", answer_a="A fish.", answer_b="Adapters.",
                               reference="Low-rank adapters.")
    assert "correctness (" in guided[1]["content"] and "completeness (" in guided[1]["content"]
    assert "Low-rank adapters." in guided[1]["content"] and "correctness and completeness" in guided[0]["content"]
    plain = pairwise_messages(load_rubric("handbook"), "What is LoRA?", answer_a="A fish.", answer_b="Adapters.",
                              reference="Low-rank adapters.")
    assert "accuracy (" in plain[1]["content"] and "Low-rank adapters." not in plain[1]["content"]


def test_pairwise_and_preference_prompts_carry_the_rubrics_system_prompt_and_never_call_the_reference_correct():
    from llm_engineering.evaluation.judging.pairwise import pairwise_messages, preference_messages

    rubric = load_rubric("reference-guided").model_copy(update={"system_prompt": "You grade answers about ships."})
    asked = [pairwise_messages(rubric, "What floats?", answer_a="A ship.", answer_b="A stone.", reference="Ships float."),
             preference_messages(rubric, "What floats?", answer_1="A ship.", answer_2="A stone.", reference="Ships float.")]
    for system, user in ([m["content"] for m in messages] for messages in asked):
        assert system.startswith("You grade answers about ships.") and "Ships float." in user
        assert "known to be correct" not in system + user
    # The reply each asks for is still said after the rubric's words.
    assert "the better answer" in asked[0][0]["content"] and '{"better": 1}' in asked[1][1]["content"]


def test_a_comparison_asks_each_criterions_question_without_its_pointwise_scoring_instructions():
    from llm_engineering.evaluation.judging.pairwise import preference_messages

    user = preference_messages(load_rubric("task-accuracy"), "What floats?", answer_1="A ship.", answer_2="A stone.",
                               reference="Ships float.")[1]
    focus = user["content"].split("in this order: ")[1].split("\n")[0]
    assert focus.startswith("accuracy (does the answer do what the instruction asks, and is what it says right?); style")
    assert "scores 1" not in user["content"] and "Keep the analysis" not in user["content"]
