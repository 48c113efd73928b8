"""When a run frees an engine: policy over a run's config, kept out of the config class that only says what to run."""

from __future__ import annotations

from pathlib import Path

from llm_engineering.evaluation.models import weights_location
from llm_engineering.infrastructure.judge_choice import AUTO
from llm_engineering.run_config import EvaluationConfig


def frees_engine_after(config: EvaluationConfig, index: int, cache_dir: Path) -> bool:
    """Whether the generation step of `config.models[index]` frees its in-process engine as it ends: the next engine
    this run builds in process loads other weights (the next model's, or an in-process judge's: `weights_location`
    with the models' `cache_dir`), and would stop it anyway, inside its own step and on its clock. A judge still
    `auto` may be this model, so its engine is kept."""
    if config.engine.backend == "ray":  # no in-process generation engine to free
        return False
    if index + 1 < len(config.models):
        after = config.models[index + 1]
    else:
        judge = next((j for j in config.panel if j.backend == "vllm"), None)
        if judge is None or judge.model == AUTO:
            return False
        after = judge.model
    return weights_location(after, cache_dir) != weights_location(config.models[index], cache_dir)
