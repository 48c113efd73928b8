"""The one factory for generation engines: the configured backend, opened for a block and closed after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from llm_engineering.evaluation.config import EngineConfig
from llm_engineering.evaluation.engine import GenerationEngine
from llm_engineering.infrastructure.ray_engine import RayEngine
from llm_engineering.infrastructure.vllm_engine import EnginePool, VLLMEngine


@contextlib.contextmanager
def open_engine(model_path: str, engine: EngineConfig, pool: EnginePool) -> Iterator[GenerationEngine]:
    """The generation engine `engine.backend` names, for `model_path`; closed when the block ends.

    `vllm`: the pool's in-process engine (built, or reused when model and config match); closing
    leaves it in the pool, so a judge of the same model and config reuses it, and the pool's
    `release()` frees it. `ray`: Ray Data LLM replicas; the pool's engine is freed first, since
    replicas on this node need the memory an idle in-process engine holds.
    """
    generation_engine: GenerationEngine
    if engine.backend == "ray":
        pool.release()
        generation_engine = RayEngine(model_path, engine)
    else:
        generation_engine = VLLMEngine(pool.get(model_path, engine))
    try:
        yield generation_engine
    finally:
        generation_engine.close()
