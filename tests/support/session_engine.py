"""What the session's engine runs: the engine pool's default engine (the bundled SmolLM2, `dtype: auto`), shared by
every test that asks for that model and engine config."""

import functools


@functools.cache
def auto_dtype() -> str:
    """The dtype `dtype: auto` runs here: bfloat16 where the CPU has native bf16 and it measured faster, else float32
    (`cpu_tuning.resolved_dtype`, as the generation step resolves it)."""
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.infrastructure.cpu_tuning import resolved_dtype

    return resolved_dtype(EngineConfig())[0]
