"""Build the configured judge: its backend (`build_judge`), and the whole judge a step hands on (`open_judge`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Literal

from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.transport import JudgeBackend
from llm_engineering.infrastructure.vllm_engine import EnginePool
from llm_engineering.settings import Settings


def build_judge(config: JudgeConfig, engine: EngineConfig, settings: Settings, pool: EnginePool) -> JudgeBackend:
    """The judge `config.backend` names; the in-process one takes its engine from `pool` (the generation engine if it matches)."""
    if config.backend == "openai":
        from llm_engineering.infrastructure.openai_judge import OpenAIJudge

        return OpenAIJudge(config, settings)
    if config.backend == "openai-batch":
        from llm_engineering.infrastructure.openai_batch import OpenAIBatchJudge

        # Beside the verdicts: a batch's id is kept where the cache is, so a rerun finds both.
        return OpenAIBatchJudge(config, settings.JUDGE_CACHE_DIR / "batches", settings)
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
    from llm_engineering.infrastructure.vllm_judge import VLLMJudge

    config = resolve_auto_judge(config)[0]  # callers of the library that did not choose before (the CLI does)
    model = resolve_model(config.model, settings.MODEL_CACHE_DIR)
    if model.adapter:  # never silently the base alone (a run's config refuses it before any work)
        raise ConfigError(f"judge.model {config.model!r}: an in-process judge runs a base model only, not a LoRA adapter.")
    return VLLMJudge(model.path, config, engine, pool)


@contextlib.contextmanager
def open_cache(config: JudgeConfig, settings: Settings) -> Iterator[JudgeCache | None]:
    """The judge cache for the block (None when `config.cache` is off), closed when the block ends."""
    cache = JudgeCache(settings.JUDGE_CACHE_DIR, read=not config.refresh) if config.cache else None
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()


@contextlib.contextmanager
def open_judge(configs: Sequence[JudgeConfig], engine: EngineConfig, *, settings: Settings, pool: EnginePool,
               aggregate: Literal["mean", "majority"] = "mean") -> Iterator[Judge]:
    """The judge of `configs` (several: a jury) for the block: each backend built, the first config's rubric and
    limits, the verdict cache when every config keeps it on (closed when the block ends)."""
    first = configs[0]
    kept = all(c.cache for c in configs)
    with open_cache(first.model_copy(update={"cache": kept, "refresh": any(c.refresh for c in configs)}),
                    settings) as cache:
        backends = tuple(build_judge(config, engine, settings, pool) for config in configs)
        yield Judge(backends, first.resolved_rubric(), cache, first.max_analysis_chars, aggregate)
