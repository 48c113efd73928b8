"""Engine start, side by side: vLLM's engine core (and on CPU its worker) in processes of their own, as vLLM does by
default, against both in this process (`engine.in_process`).

    .venv/bin/python -m benchmarks.performance.engine_start [--model smollm2-135m --model qwen2.5-coder-1.5b] [--rounds 2]

Each start in a fresh interpreter, the two ways interleaved (round by round, so a neighbour's load falls on both);
each one: the interpreter's imports, the `EnginePool.get` build (what the pipeline's steps pay), a short generation
(64 prompts, 64 tokens: the engine must still be as fast once started), the engine's release, and the whole process.
Prints a markdown table and one JSON line (medians, and the ratio of builds); writes the JSON under
benchmarks/results/. Absolute seconds mean little on a shared 2-core CPU; the ratio is the result.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

from benchmarks import RESULTS, ROOT

WAYS = {"processes": False, "in_process": True}


def _one_start(model: str, in_process: bool) -> dict:
    """In this (fresh) process: build, generate, release; seconds of each."""
    started = time.perf_counter()
    import vllm  # noqa: F401

    from benchmarks.performance.generation import workload
    from llm_engineering.evaluation.config import SamplingConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.vllm_engine import EnginePool, VLLMEngine
    from llm_engineering.settings import get_settings

    imported = time.perf_counter()
    path = resolve_model(model, get_settings().MODEL_CACHE_DIR).path
    pool = EnginePool()
    llm = pool.get(path, EngineConfig(in_process=in_process))
    built = time.perf_counter()
    prompts = dict(enumerate(workload(64)))
    answers = dict(VLLMEngine(llm).generate(prompts, SamplingConfig(max_tokens=64, temperature=0.0)))
    generated = time.perf_counter()
    tokens = sum(record.completion_tokens for record in answers.values())
    pool.release()
    return {"imports_s": imported - started, "build_s": built - imported, "generate_s": generated - built,
            "output_tok_s": tokens / (generated - built), "release_s": time.perf_counter() - generated}


def _cpu_flags() -> str:
    from llm_engineering.infrastructure.cpu_tuning import native_bf16_flags

    line = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
    flags = set(line.split(":", 1)[-1].split())
    return " ".join(f for f in ("avx2", "avx512f", *native_bf16_flags()) if f in flags)


@click.command()
@click.option("--model", "models", multiple=True, default=["smollm2-135m", "qwen2.5-coder-1.5b"], show_default=True)
@click.option("--rounds", default=2, show_default=True, help="Starts of each way per model, interleaved.")
@click.option("--child", hidden=True)
def main(models: tuple[str, ...], rounds: int, child: str | None) -> None:
    if child:
        model, way = child.split(":")
        print("RESULT " + json.dumps(_one_start(model, WAYS[way])), flush=True)
        return
    results: dict[str, dict[str, list[dict]]] = {m: {w: [] for w in WAYS} for m in models}
    for model in models:
        for round_ in range(rounds):
            for way in (WAYS if round_ % 2 == 0 else reversed(list(WAYS))):
                began = time.perf_counter()
                command = [sys.executable, "-m", "benchmarks.performance.engine_start", "--child", f"{model}:{way}"]
                done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                                      env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
                line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if done.returncode != 0 or line is None:
                    raise SystemExit(f"{model} {way} failed:\n{done.stderr[-3000:]}")
                result = {**json.loads(line[7:]), "process_s": time.perf_counter() - began}
                results[model][way].append(result)
                print(f"{model} {way} round {round_ + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in result.items()),
                      flush=True)
    median = {m: {w: {k: statistics.median(r[k] for r in runs) for k in runs[0]} for w, runs in ways.items()}
              for m, ways in results.items()}
    print(f"\nCPU flags: {_cpu_flags()}; {os.cpu_count()} cores; medians of {rounds} starts each\n")
    print("| model | way | imports s | build s | generate s | output tok/s | release s | process s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for m, ways in median.items():
        for w, r in ways.items():
            print(f"| {m} | {w} | {r['imports_s']:.1f} | {r['build_s']:.1f} | {r['generate_s']:.1f} | "
                  f"{r['output_tok_s']:.0f} | {r['release_s']:.1f} | {r['process_s']:.1f} |")
    summary = {"cpu_flags": _cpu_flags(), "rounds": rounds, "medians": median, "runs": results,
               "build_in_process_over_processes": {m: w["in_process"]["build_s"] / w["processes"]["build_s"]
                                                   for m, w in median.items()}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "engine_start.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps({k: summary[k] for k in ("cpu_flags", "build_in_process_over_processes")}))


if __name__ == "__main__":
    main()
