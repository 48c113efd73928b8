"""Judge prices: USD per million tokens, from the judge config or known list prices (halved for batches)."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.judging.config import ENDPOINT_BACKENDS, JudgeConfig

# USD per million tokens (input, output), list prices when written; override in the judge config.
KNOWN_PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1-mini": (0.40, 1.60)}
# OpenAI's Batch API bills half the list price, input and output.
BATCH_DISCOUNT = 0.5


def judge_prices(judge: JudgeConfig) -> Optional[tuple[float, float]]:
    """(input, output) USD per million tokens: from the config (the prices actually paid), else the
    list prices of OpenAI models, halved for the Batch API."""
    if judge.endpoint.price_per_million_input is not None or judge.endpoint.price_per_million_output is not None:
        return (judge.endpoint.price_per_million_input or 0.0, judge.endpoint.price_per_million_output or 0.0)
    if judge.backend not in ENDPOINT_BACKENDS or judge.endpoint.base_url is not None or judge.model not in KNOWN_PRICES:
        return None
    prices = KNOWN_PRICES[judge.model]
    return (prices[0] * BATCH_DISCOUNT, prices[1] * BATCH_DISCOUNT) if judge.backend == "openai-batch" else prices
