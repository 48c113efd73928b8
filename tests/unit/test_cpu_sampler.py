"""The CPU top-p without a full-vocabulary sort keeps exactly the tokens vLLM's own top-p keeps."""

import pytest
import torch
from vllm.v1.sample.ops import topk_topp_sampler as sampler

from llm_engineering.infrastructure.cpu_sampler import FAST_TOP_P, few_finite_top_k_top_p, top_p_without_full_sort

VOCAB, ROWS = 49152, 8  # SmolLM2's vocabulary


def logits(seed, min_p):
    """Logits like a decode step's after temperature and `min_p`: a few likely tokens, the rest masked."""
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(ROWS, VOCAB, generator=generator) * 2.5
    values[:, :64] += torch.rand(ROWS, 64, generator=generator) * 12
    if min_p:
        probs = values.softmax(-1)
        values = values.masked_fill(probs < min_p * probs.max(-1, keepdim=True).values, -float("inf"))
    return values


@pytest.mark.parametrize("min_p", [0.05, 0.001, 0.0])
@pytest.mark.parametrize("top_k", [None, 5, VOCAB])
@pytest.mark.parametrize("top_p", [0.95, 0.3])
def test_the_same_tokens_survive_as_with_vllms_sorted_top_p(min_p, top_k, top_p):
    reference = sampler.apply_top_k_top_p_pytorch
    fast = few_finite_top_k_top_p(reference)
    for seed in range(2):
        values = logits(seed, min_p)
        k = None if top_k is None else torch.full((ROWS,), top_k, dtype=torch.int32)
        p = torch.full((ROWS,), top_p)
        expected = reference(values.clone(), k, p, allow_cpu_sync=True)
        got = fast(values.clone(), k, p)
        assert torch.equal(torch.isinf(got), torch.isinf(expected))
        assert torch.equal(got[~torch.isinf(got)], expected[~torch.isinf(expected)])  # kept logits unchanged


def test_rows_with_their_own_top_k_and_top_p():
    values = logits(7, 0.01)
    k = torch.tensor([1, 2, 3, 40, VOCAB, 9, 1, 2], dtype=torch.int32)
    p = torch.linspace(0.05, 1.0, ROWS)
    expected = sampler.apply_top_k_top_p_pytorch(values.clone(), k, p, allow_cpu_sync=True)
    assert torch.equal(few_finite_top_k_top_p(sampler.apply_top_k_top_p_pytorch)(values.clone(), k, p), expected)


def test_the_plugin_replaces_vllms_top_p_only_in_engine_processes_started_for_it(monkeypatch):
    monkeypatch.setattr(sampler, "apply_top_k_top_p", sampler.apply_top_k_top_p)  # restored after the test
    original = sampler.apply_top_k_top_p
    monkeypatch.delenv(FAST_TOP_P, raising=False)
    top_p_without_full_sort()
    assert sampler.apply_top_k_top_p is original
    monkeypatch.setenv(FAST_TOP_P, "0")  # engine.cpu_fast_top_p: false
    top_p_without_full_sort()
    assert sampler.apply_top_k_top_p is original
    monkeypatch.setenv(FAST_TOP_P, "1")
    top_p_without_full_sort()
    assert sampler.apply_top_k_top_p is not original
    values, p = logits(3, 0.05), torch.full((ROWS,), 0.9)
    assert torch.equal(sampler.apply_top_k_top_p(values.clone(), None, p), original(values.clone(), None, p))
