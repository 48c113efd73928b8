"""A run's component configs, named in one place for the code above the domain (the run config, steps, the
infrastructure, tests): each is defined in the room it configures and re-exported here, so a caller imports any of
them from one module. Publishing's, which no room of the domain reads, is defined here.

- `generation.config`: `DatasetConfig` (with `ColumnsConfig`), `PromptConfig`, `SamplingConfig`;
- `judging.config`: `JudgeConfig` (with `EndpointConfig`, `BatchConfig`), `JuryConfig`, `PairwiseConfig`;
- `trust.config`: `JudgeCheckConfig`, `SimilarityConfig`

(and metrics' `metrics:` and `checks:`, in `metrics.config`).

The rooms import their own config and those of rooms below them, never this module (a contract in pyproject.toml):
it sits above them. The run config that composes them, and the YAML loading, live in `llm_engineering.run_config`.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from llm_engineering.evaluation.config_base import Strict
from llm_engineering.evaluation.generation.config import ColumnsConfig, DatasetConfig, PromptConfig, SamplingConfig
from llm_engineering.evaluation.judging.config import (
    ENDPOINT_BACKENDS,
    BatchConfig,
    EndpointConfig,
    JudgeConfig,
    JuryConfig,
    PairwiseConfig,
)
from llm_engineering.evaluation.trust.config import JudgeCheckConfig, SimilarityConfig

__all__ = [
    "ColumnsConfig", "DatasetConfig", "PromptConfig", "SamplingConfig",
    "ENDPOINT_BACKENDS", "BatchConfig", "EndpointConfig", "JudgeConfig", "JuryConfig", "PairwiseConfig",
    "JudgeCheckConfig", "SimilarityConfig", "PublishConfig",
]


class PublishConfig(Strict):
    """Where results are published: always a local dataset repo, and the Hub with `target: hub`."""

    target: Literal["local", "hub"] = "local"
    workspace: Optional[str] = Field(
        None, description="Namespace of the results repos; defaults to the settings' workspace "
        "(for the Hub: the token owner's name when that is unset)."
    )
    private: bool = Field(True, description="Create Hub repos as private.")

