"""The `generation_stats` artifact: throughput of one model's generation run."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel


class GenerationStats(BaseModel):
    """Throughput of one model's generation run (over the answers generated in this run)."""

    model_id: str
    rows: int  # answers: the test split's rows times `samples`
    samples: int = 1  # answers per prompt (sampling.n)
    skipped: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    tokens_per_second: float
    prompts_per_second: float
    resumed: int = 0  # answers taken from the checkpoint of an interrupted run
    generated: int = 0  # answers generated in this run
    dtype: Optional[str] = None  # the engine's dtype, as `engine.dtype` resolved on this machine
    dtype_reason: Optional[str] = None

