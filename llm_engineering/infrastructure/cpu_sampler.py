"""Top-p sampling on CPU without sorting the whole vocabulary each step.

vLLM's CPU sampler applies top-p by sorting every sequence's logits over the whole vocabulary at every
decode step (`apply_top_k_top_p_pytorch`): for SmolLM2's 49,152 tokens and 64 sequences that sort
costs about as much as the model's own matmuls on two cores. With `min_p` (the handbook's sampling
has 0.05) applied first, all but a handful of logits are already -inf, so sorting only the finite ones
(`topk` of as many as the widest row has) gives the same mask: the masked tokens hold probability 0
in both. `top_p_without_full_sort` is a vLLM general plugin (entry point `vllm.general_plugins`, loaded
in every engine process): in an engine process started with `FAST_TOP_P` set (`engine.cpu_fast_top_p`)
on a CPU, it puts that function in the place of vLLM's. Rows with more than an eighth of the vocabulary
finite (no `min_p`) take vLLM's own path unchanged.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from typing import TYPE_CHECKING, Callable, Optional, Protocol

if TYPE_CHECKING:
    import torch

# Under "vllm": vLLM configures that logger in its engine processes, so the line shows in the run's log.
logger = logging.getLogger("vllm.llm_engineering.cpu_sampler")
INSTALLED = "top-p over the logits min_p left finite, without sorting the whole vocabulary (engine.cpu_fast_top_p)"

FAST_TOP_P = "LLM_EVAL_CPU_FAST_TOP_P"
# Sorting n of V logits instead of all V pays off below this share of the vocabulary.
MAX_FINITE_SHARE = 1 / 8


class TopKTopP(Protocol):
    """vLLM's `apply_top_k_top_p`, parameter names included (the function takes its place)."""

    def __call__(self, logits: torch.Tensor, k: Optional[torch.Tensor], p: Optional[torch.Tensor]) -> torch.Tensor: ...


def few_finite_top_k_top_p(reference: Callable[..., torch.Tensor]) -> TopKTopP:
    """vLLM's top-k/top-p masking (`reference`, its `apply_top_k_top_p_pytorch`) applied to the finite logits
    of each row only, when they are few; the same masked logits (in place, as vLLM's)."""

    def apply(logits: torch.Tensor, k: Optional[torch.Tensor], p: Optional[torch.Tensor]) -> torch.Tensor:
        import torch

        if p is None or logits.dim() != 2:
            return reference(logits, k, p, allow_cpu_sync=True)  # top-k alone: vLLM already avoids the sort
        finite = int(torch.isfinite(logits).sum(dim=-1).max())
        if finite > logits.shape[-1] * MAX_FINITE_SHARE:
            return reference(logits, k, p, allow_cpu_sync=True)
        top, index = logits.topk(max(finite, 1), dim=-1)  # descending; vLLM's sort is ascending
        kept = reference(top.flip(-1).contiguous(), None if k is None else k.clamp(max=top.shape[-1]), p)
        return logits.fill_(-float("inf")).scatter_(-1, index.flip(-1), kept)

    return apply


def top_p_without_full_sort() -> None:
    """vLLM general plugin: in engine processes started with `FAST_TOP_P`, on CPU, the few-finite top-p."""
    if os.environ.get(FAST_TOP_P) != "1":
        return
    try:
        from vllm.platforms import current_platform
        from vllm.v1.sample.ops import topk_topp_sampler as sampler
    except ImportError:
        return
    if not current_platform.is_cpu() or getattr(sampler, "HAS_TRITON", True):
        return
    reference = getattr(sampler, "apply_top_k_top_p_pytorch", None)
    if reference is None or not hasattr(sampler, "apply_top_k_top_p"):
        logger.warning("vLLM's CPU top-p sampler is not where %s expects it: vLLM's own is used", __name__)
        return
    sampler.apply_top_k_top_p = few_finite_top_k_top_p(reference)
    # Said where the engine runs: an engine process, or the program itself when its engine runs in it (vLLM loads
    # plugins in the program that builds an engine in processes of their own too, where the sampler goes unused).
    if multiprocessing.parent_process() is not None or os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0":
        logger.info(INSTALLED)
