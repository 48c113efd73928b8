"""The `ray` generation engine against the in-process one, on the same rows, on this machine.

    .venv/bin/python -m benchmarks.performance.ray_engine [--prompts 64] [--max-tokens 128]   (or `make bench-ray`)

Three runs, each in its own process: in-process vLLM (all cores), Ray Data LLM with one replica
of every core, and with two replicas splitting the cores. Greedy decoding, so the answers can be
compared row for row. Writes benchmarks/results/ray_engine_batch<B>x<C>.json and prints a markdown table.

What is measured, per run:
- wall: from the call to the last answer, start-up included (local Ray cluster, replica engines);
- first answer: when the first answers reached the caller;
- steady tok/s: output tokens after the first answers / time from the first to the last answers
  (answers arrive per batch, so this leaves out start-up; for in-process it is the generate call;
  meaningless when every answer arrives in one wave);
- wall tok/s: all output tokens / wall.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import click

from benchmarks import RESULTS, ROOT

CORES = os.cpu_count() or 1
KV_CACHE_GIB = 1  # per engine: room for the workload; three engines of 2 GiB crowd a 24 GiB shared machine
RUNS = {
    "vllm": "in-process vLLM `LLM.generate` (all cores)",
    "ray_1": f"Ray Data LLM, 1 replica x {CORES} CPU",
    "ray_2": f"Ray Data LLM, 2 replicas x {max(1, CORES // 2)} CPU",
}


def _rows(count: int) -> list[tuple[str, str]]:
    from benchmarks.performance.generation import workload

    return [(str(i), prompt) for i, prompt in enumerate(workload(count))]


def _result(arrivals: list[tuple[float, int]], wall: float, answers: dict[str, str], **extra: Any) -> dict:
    """`arrivals`: (seconds since the call, output tokens) per answer, in arrival order."""
    first = arrivals[0][0]
    later = [tokens for at, tokens in arrivals if at > first]
    window = arrivals[-1][0] - first
    total = sum(tokens for _, tokens in arrivals)
    return {"rows": len(arrivals), "output_tokens": total, "wall_s": round(wall, 2), "first_answer_s": round(first, 2),
            "steady_tok_per_s": round(sum(later) / window, 2) if window > 0 else None,
            "wall_tok_per_s": round(total / wall, 2), "rows_per_s_wall": round(len(arrivals) / wall, 3),
            "answers": answers, **extra}


def run_in_process(rows: list[tuple[str, str]], max_tokens: int) -> dict:
    from llm_engineering.evaluation.config import SamplingConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.vllm_engine import EnginePool, sampling_params
    from llm_engineering.settings import get_settings

    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    started = time.perf_counter()
    pool = EnginePool()
    try:  # the engine runs in its own process: end it even when the run fails
        llm = pool.get(path, EngineConfig(cpu_kvcache_space_gib=KV_CACHE_GIB))
        built = time.perf_counter()
        outputs = llm.generate([p for _, p in rows], sampling_params(SamplingConfig(temperature=0.0, max_tokens=max_tokens)),
                               use_tqdm=False)
        done = time.perf_counter()
    finally:
        pool.release()
    # One call returns everything at once: the first answer is the end of the call.
    arrivals = [(done - started, len(o.outputs[0].token_ids)) for o in outputs]
    answers = {row_id: o.outputs[0].text.strip() for (row_id, _), o in zip(rows, outputs)}
    result = _result(arrivals, done - started, answers, engine_start_s=round(built - started, 2))
    result["steady_tok_per_s"] = round(result["output_tokens"] / (done - built), 2)
    return result


def run_ray(rows: list[tuple[str, str]], max_tokens: int, replicas: int, batch_size: int, max_concurrent_batches: int) -> dict:
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import SamplingConfig
    from llm_engineering.evaluation.engine_config import EngineConfig, RayConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.ray_engine import generate_rows
    from llm_engineering.settings import get_settings

    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    ray = RayConfig(replicas=replicas, cpus_per_replica=max(1, CORES // replicas), batch_size=batch_size,
                    max_concurrent_batches=max_concurrent_batches, local_num_cpus=CORES)
    engine = EngineConfig(backend="ray", cpu_kvcache_space_gib=KV_CACHE_GIB, ray=ray)
    arrivals, answers = [], {}
    started = time.perf_counter()
    for row in generate_rows(rows, path, sampling=SamplingConfig(temperature=0.0, max_tokens=max_tokens), engine=engine,
                             ray_config=ray):
        arrivals.append((time.perf_counter() - started, row[col.COMPLETION_TOKENS]))
        answers[row[col.ID]] = row[col.ANSWER]
    return _result(arrivals, time.perf_counter() - started, answers, replicas=replicas,
                   cpus_per_replica=ray.cpus_per_replica, batch_size=batch_size,
                   max_concurrent_batches=max_concurrent_batches)


@click.command()
@click.option("--prompts", "count", default=64, show_default=True)
@click.option("--max-tokens", default=128, show_default=True)
@click.option("--batch-size", default=16, show_default=True, help="Rows per Ray batch (small: answers stream back sooner).")
@click.option("--concurrent-batches", default=4, show_default=True, help="Batches in flight per Ray replica.")
@click.option("--run", "only", type=click.Choice(list(RUNS)), help="Internal: one run, printed as JSON.")
def main(count: int, max_tokens: int, batch_size: int, concurrent_batches: int, only: str | None) -> None:
    rows = _rows(count)
    if only:
        result = (run_in_process(rows, max_tokens) if only == "vllm"
                  else run_ray(rows, max_tokens, int(only[-1]), batch_size, concurrent_batches))
        print("RESULT " + json.dumps(result), flush=True)
        return
    results: dict[str, dict] = {}
    for name in RUNS:
        command = [sys.executable, "-m", "benchmarks.performance.ray_engine", "--run", name, "--prompts", str(count),
                   "--max-tokens", str(max_tokens), "--batch-size", str(batch_size),
                   "--concurrent-batches", str(concurrent_batches)]
        load = os.getloadavg()[0]
        process = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                                 env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"})
        line = next((text for text in process.stdout.splitlines() if text.startswith("RESULT ")), None)
        if process.returncode or line is None:
            print(f"{name}: failed (exit {process.returncode})\n{process.stderr[-3000:]}", file=sys.stderr)
            continue
        results[name] = {**json.loads(line[7:]), "load_average_before": round(load, 2)}
        print(f"{name}: {results[name]['wall_s']} s wall", file=sys.stderr)

    reference = results.get("vllm", {}).get("answers", {})
    for result in results.values():
        result["same_answers_as_in_process"] = sum(result["answers"].get(k) == v for k, v in reference.items())
    print(f"\n{count} prompts, at most {max_tokens} new tokens, greedy, {CORES} CPU cores\n")
    print("| engine | wall (s) | first answers (s) | steady output tok/s | wall output tok/s | same answers as in-process |")
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {RUNS[name]} | {r['wall_s']} | {r['first_answer_s']} | {r['steady_tok_per_s']} | "
              f"{r['wall_tok_per_s']} | {r['same_answers_as_in_process']}/{len(reference)} |")
    summary = {"prompts": count, "max_tokens": max_tokens, "cpu_count": CORES, "batch_size": batch_size,
               "max_concurrent_batches": concurrent_batches,
               "results": {name: {k: v for k, v in r.items() if k != "answers"} for name, r in results.items()}}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"ray_engine_batch{batch_size}x{concurrent_batches}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
