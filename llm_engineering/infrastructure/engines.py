"""The one factory for generation engines: the configured backend, opened for a block and closed after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.engine import GenerationEngine
from llm_engineering.evaluation.models import adapter_rank
from llm_engineering.infrastructure.ray_engine import RayEngine
from llm_engineering.infrastructure.vllm_engine import EnginePool, VLLMEngine

if TYPE_CHECKING:
    from vllm.lora.request import LoRARequest


@contextlib.contextmanager
def open_engine(
    model_path: str, engine: EngineConfig, pool: EnginePool, adapter: Optional[str] = None
) -> Iterator[GenerationEngine]:
    """The generation engine `engine.backend` names, for `model_path` (through the LoRA `adapter` when given);
    closed when the block ends.

    `vllm`: the pool's in-process engine (built, or reused when model and config match); closing
    leaves it in the pool, so a judge of the same model and config reuses it, and the pool's
    `release()` frees it. An adapter is served by its base's engine, built with LoRA on (a run turns it
    on in `engine.lora` for every model of that base, so they share one engine; here it is turned on
    for a caller that did not). `ray`: Ray Data LLM replicas; the pool's engine is freed first, since
    replicas on this node need the memory an idle in-process engine holds.
    """
    generation_engine: GenerationEngine
    if engine.backend == "ray":
        if adapter:
            raise ConfigError(ray_adapter_problem(adapter))
        pool.release()
        generation_engine = RayEngine(model_path, engine)
    elif adapter:
        # A no-op for a run's config (`EvaluationConfig.engine_for` did it for every model of the base).
        engine = engine.model_copy(update={"lora": engine.lora.covering(adapter_rank(adapter) or 1)})
        generation_engine = VLLMEngine(pool.get(model_path, engine), lora_request(adapter, pool))
    else:
        generation_engine = VLLMEngine(pool.get(model_path, engine))
    try:
        yield generation_engine
    finally:
        generation_engine.close()


def ray_adapter_problem(adapter: str) -> str:
    """Why a LoRA adapter cannot run on the Ray backend, and what to do instead."""
    # Ray Data LLM serves adapters only from a `dynamic_lora_loading_path` folder every replica reads, chosen
    # per row by name: not wired here.
    return (f"The LoRA adapter {adapter!r} cannot run with engine.backend: ray (this project's Ray Data LLM engine "
            f"serves base models only); use engine.backend: vllm for models with an adapter, or merge the adapter "
            f"into its base (PeftModel.merge_and_unload) and evaluate the merged folder.")


def lora_request(adapter: str, pool: EnginePool) -> LoRARequest:
    """vLLM's request for the adapter at `adapter` (a local folder, or a Hub id that vLLM downloads)."""
    from vllm.lora.request import LoRARequest

    # vLLM tells adapters apart by name: the path is unique where a folder's last part need not be.
    return LoRARequest(lora_name=adapter, lora_int_id=pool.adapter_id(adapter), lora_path=adapter)
