"""Judge prices: USD per million tokens, from the judge config or known list prices."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.config import JudgeConfig

# USD per million tokens (input, output), list prices when written; override in the judge config.
KNOWN_PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1-mini": (0.40, 1.60)}


def judge_prices(judge: JudgeConfig) -> Optional[tuple[float, float]]:
    """(input, output) USD per million tokens: from the config, else list prices of OpenAI models."""
    if judge.price_per_million_input is not None or judge.price_per_million_output is not None:
        return (judge.price_per_million_input or 0.0, judge.price_per_million_output or 0.0)
    if judge.backend == "openai" and judge.base_url is None:
        return KNOWN_PRICES.get(judge.model)
    return None
