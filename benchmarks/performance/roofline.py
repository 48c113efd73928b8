"""The machine's ceilings for a decoder model: matmul rate at the model's decode shapes, memory bandwidth.

    .venv/bin/python -m benchmarks.performance.roofline [--batch 64]      (also run by `benchmarks.performance.generation`)

A generation run's compute-bound time is its FLOPs (2 x the linear layers' parameters per token, prompt
and output tokens alike; attention's own FLOPs are small at these lengths and left out: `tests/support/roofline.py`,
the arithmetic a unit test checks) over the matmul
rate measured here at the model's shapes, with as many rows as sequences decode at once, by the fastest
kernel at hand (torch's linear, and the oneDNN kernel vLLM's CPU build uses, which is faster: measuring
torch's alone put vLLM above "its" ceiling in fp32). The shapes are the ones vLLM runs (q, k and v in one
matmul, gate and up in one), and every layer has weights of its own, as in the model: one weight per
shape, used by all 30 layers, stayed in the CPU's caches and overstated the rate (by 11% in bf16 on an AMD
EPYC Zen 4: benchmarks/README.md).
Its fraction of that ceiling is the roofline fraction `make bench` reports.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import click

from tests.support.roofline import flops_per_token, linear_shapes


def _kernels() -> dict[str, Callable]:
    """Ways to run `x @ W.T` for weights laid out as nn.Linear's (out, in): torch's, and the oneDNN kernel that
    vLLM's CPU build runs its linear layers with (prepacked weights), where it has one."""
    import torch

    kernels: dict[str, Callable] = {"torch linear": lambda w: (lambda x: torch.nn.functional.linear(x, w))}
    try:
        from vllm import _custom_ops as ops

        def onednn(weight):
            handler = ops.create_onednn_mm(weight.t(), 32)
            return lambda x: ops.onednn_mm(handler, x, None)

        if getattr(ops, "_supports_onednn", False):
            kernels["vLLM oneDNN"] = onednn
    except ImportError:
        pass
    return kernels


def matmul_gflops(config: dict, batch: int, dtype: str, windows: int = 6, seconds: float = 0.5) -> tuple[float, str]:
    """GFLOP/s of one decode step's matmuls (`batch` rows each, a weight of its own for each), repeated for
    `windows` spans of about `seconds`, the best span with the fastest kernel this machine has for them (a
    ceiling is the best the machine does: other tenants of a shared CPU only ever slow a span down), and the
    kernel's name."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    kind = getattr(torch, dtype)
    shapes = linear_shapes(config)
    inputs = {i: torch.randn(batch, i, dtype=kind) for i in {i for i, _ in shapes}}
    step_flops = sum(2 * batch * i * o for i, o in shapes)
    rates = {}
    with torch.inference_mode():
        for name, make in _kernels().items():
            step = [(make(torch.randn(o, i, dtype=kind)), inputs[i]) for i, o in shapes]
            for matmul, x in step:  # warm-up: oneDNN picks its kernels on first use
                matmul(x)
            for _ in range(windows):
                steps, started = 0, time.perf_counter()
                while time.perf_counter() - started < seconds:
                    for matmul, x in step:
                        matmul(x)
                    steps += 1
                rates[name] = max(rates.get(name, 0.0), steps * step_flops / (time.perf_counter() - started) / 1e9)
            del step
    best = max(rates, key=rates.get)
    return rates[best], best


def bandwidth_gb_s(megabytes: int = 512, repeats: int = 5) -> float:
    """Copy rate of a large buffer (bytes read + written per second), the best of `repeats`."""
    import torch

    source = torch.ones(megabytes * 2**20 // 4, dtype=torch.float32)
    target = torch.empty_like(source)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        target.copy_(source)
        best = min(best, time.perf_counter() - started)
    return 2 * source.numel() * 4 / best / 1e9


def measure(dtypes: list[str], batch: int) -> dict:
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    config = json.loads((Path(path) / "config.json").read_text())
    rates = {d: matmul_gflops(config, batch, d) for d in dtypes}
    return {"model": "smollm2-135m", "batch": batch, "flops_per_token": flops_per_token(config),
            "matmul_gflops": {d: round(rate, 1) for d, (rate, _) in rates.items()},
            "matmul_kernel": {d: kernel for d, (_, kernel) in rates.items()},
            "bandwidth_gb_s": round(bandwidth_gb_s(), 1)}


@click.command()
@click.option("--batch", default=64, show_default=True, help="Rows per matmul: the sequences decoding at once.")
@click.option("--dtype", "dtypes", multiple=True, default=["float32"], show_default=True)
def main(batch: int, dtypes: tuple[str, ...]) -> None:
    print("RESULT " + json.dumps(measure(list(dtypes), batch)), flush=True)


if __name__ == "__main__":
    main()
