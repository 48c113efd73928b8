"""The roofline's arithmetic: a decoder model's FLOPs per token, and the ceiling kept from two measurements of the
machine. Shared by the benchmarks that measure it (`benchmarks.performance.roofline`, `.generation`) and the unit
test that checks it, which imports no benchmark."""

from __future__ import annotations


def linear_shapes(config: dict) -> list[tuple[int, int]]:
    """(in, out) of every matmul a token passes through as vLLM runs a Llama-style model (q, k, v fused; gate
    and up fused), the output head included."""
    d, inter = config["hidden_size"], config["intermediate_size"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config.get("head_dim") or d // heads
    layer = [(d, (heads + 2 * kv_heads) * head_dim), (heads * head_dim, d), (d, 2 * inter), (inter, d)]
    return layer * config["num_hidden_layers"] + [(d, config["vocab_size"])]


def flops_per_token(config: dict) -> int:
    return sum(2 * i * o for i, o in linear_shapes(config))


def best_ceiling(measurements: list[dict | None]) -> dict | None:
    """The roofline measured before and after the engines, each ceiling the higher of the two (whatever else
    runs on a shared CPU can only lower a measurement); both measurements kept under `measurements`."""
    done = [m for m in measurements if m]
    if not done:
        return None
    gflops = {d: max(m["matmul_gflops"][d] for m in done) for d in done[0]["matmul_gflops"]}
    kernels = {d: max(done, key=lambda m: m["matmul_gflops"][d])["matmul_kernel"][d] for d in gflops}
    return {**done[0], "matmul_gflops": gflops, "matmul_kernel": kernels,
            "bandwidth_gb_s": max(m["bandwidth_gb_s"] for m in done), "measurements": done}
