"""Build the configured judge backend."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from llm_engineering.evaluation.config import EngineConfig, JudgeConfig
from llm_engineering.evaluation.judge_cache import JudgeCache
from llm_engineering.evaluation.judge_transport import JudgeBackend
from llm_engineering.infrastructure.vllm_engine import EnginePool
from llm_engineering.settings import Settings


def build_judge(config: JudgeConfig, engine: EngineConfig, settings: Settings, pool: EnginePool) -> JudgeBackend:
    """The judge `config.backend` names; the in-process one takes its engine from `pool` (the generation engine if it matches)."""
    if config.backend == "openai":
        from llm_engineering.infrastructure.openai_judge import OpenAIJudge

        key = settings.OPENAI_API_KEY.get_secret_value() if settings.OPENAI_API_KEY else None
        return OpenAIJudge(config, key)
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.vllm_judge import VLLMJudge

    return VLLMJudge(resolve_model(config.model, settings.MODEL_CACHE_DIR).path, config, engine, pool)


@contextlib.contextmanager
def open_cache(config: JudgeConfig, settings: Settings) -> Iterator[JudgeCache | None]:
    """The judge cache for the block (None when `config.cache` is off), closed when the block ends."""
    cache = JudgeCache(settings.JUDGE_CACHE_DIR) if config.cache else None
    try:
        yield cache
    finally:
        if cache is not None:
            cache.close()
