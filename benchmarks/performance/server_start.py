"""`vllm serve` on CPU, side by side: the engine core's worker in a process of its own (vLLM's default, the mp
executor) against the worker inside the engine core (the uniproc executor, `VLLM_ENABLE_V1_MULTIPROCESSING=0`, what
`vllm_server` and the Ray replicas set on CPU).

    .venv/bin/python -m benchmarks.performance.server_start [--rounds 2]

Each round starts the server both ways, one after the other (so a neighbour's load falls on both), and measures the
seconds until it answers `/v1/models`, then the output tokens per second of 48 concurrent chat requests of 96 tokens
(three bursts, after a warm-up): a faster start must not cost throughput. Prints a markdown table and one JSON line
(medians), also written to benchmarks/results/server_start.json. Absolute seconds mean little on a shared 2-core CPU;
the ratio is the result.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import click
import httpx

from benchmarks import RESULTS

WAYS = {"worker process": "1", "worker in engine core": "0"}


async def _burst(url: str, requests: int) -> float:
    """Output tokens per second of `requests` concurrent chat requests of 96 tokens each."""
    async with httpx.AsyncClient(timeout=300) as client:
        async def one(i: int) -> int:
            reply = await client.post(f"{url}/chat/completions", json={
                "model": "m", "messages": [{"role": "user", "content": f"Write a long story number {i} about a cat."}],
                "max_tokens": 96, "temperature": 0, "ignore_eos": True})
            return reply.json()["usage"]["completion_tokens"]

        started = time.monotonic()
        tokens = sum(await asyncio.gather(*[one(i) for i in range(requests)]))
        return tokens / (time.monotonic() - started)


def _one_start(model_path: str, multiprocessing: str) -> dict:
    from llm_engineering.infrastructure.vllm_server import vllm_server

    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = multiprocessing  # vllm_server's default is "0"; this wins
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder, vllm_server(model_path, "m", Path(folder) / "server.log") as url:
        ready = time.monotonic() - started
        asyncio.run(_burst(url, 8))
        throughput = statistics.median(asyncio.run(_burst(url, 48)) for _ in range(3))
    return {"ready_s": ready, "output_tok_s": throughput}


@click.command()
@click.option("--model", default="smollm2-135m", show_default=True)
@click.option("--rounds", default=2, show_default=True)
def main(model: str, rounds: int) -> None:
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.cpu_tuning import native_bf16_flags
    from llm_engineering.settings import get_settings

    path = resolve_model(model, get_settings().MODEL_CACHE_DIR).path
    runs: dict[str, list[dict]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way, value in WAYS.items():
            runs[way].append(_one_start(path, value))
    medians = {way: {key: round(statistics.median(r[key] for r in results), 1) for key in results[0]}
               for way, results in runs.items()}
    print("| engine core's worker | ready (s) | output tok/s |\n|---|---|---|")
    for way, m in medians.items():
        print(f"| {way} | {m['ready_s']} | {m['output_tok_s']} |")
    before, after = (medians[way]["ready_s"] for way in WAYS)
    result = {"model": model, "rounds": rounds, "cpu": ", ".join(native_bf16_flags()) or "no native bf16",
              "medians": medians, "ready_ratio": round(after / before, 2)}
    print(json.dumps(result))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "server_start.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
