"""A judge's id is built and read in one place: what the backends write, the summary, the card and the report read."""

import pytest

from llm_engineering.evaluation.stored.judge_id import JudgeId, jury_id, members, model_names


@pytest.mark.parametrize("judge, text", [
    (JudgeId("vllm", "smollm2-135m"), "vllm:smollm2-135m"),
    (JudgeId("openai", "gpt-4o-mini"), "openai:gpt-4o-mini"),
    (JudgeId("openai", "llama3:8b", "http://127.0.0.1:8000/v1"), "openai:llama3:8b@http://127.0.0.1:8000/v1"),
])
def test_an_id_reads_back_as_the_judge_that_wrote_it(judge, text):
    assert str(judge) == text
    assert JudgeId.parse(text) == judge


def test_an_id_without_a_backend_is_a_models_name():
    assert JudgeId.parse("smollm2-135m") == JudgeId("", "smollm2-135m")


def test_a_jurys_id_names_its_members_in_order():
    served = "openai:qwen@http://127.0.0.1:9/v1"
    jury = jury_id(["vllm:smollm2-135m", served])
    assert jury == f"jury: vllm:smollm2-135m + {served}"
    assert members(jury) == ["vllm:smollm2-135m", served]
    assert model_names(jury) == ["smollm2-135m", "qwen"]
    assert members("vllm:smollm2-135m") == ["vllm:smollm2-135m"]
