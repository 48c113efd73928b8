"""Side-by-side generation benchmark on our own workload: HF transformers vs vLLM.

    .venv/bin/python -m benchmarks.performance.generation [--prompts 64] [--max-tokens 128]   (or `make bench`)

Same prompts (the embedded split's Alpaca prompts, topped up with synthetic prompts of varied
length), same sampling settings, one run, every engine in the dtype `engine.dtype: auto` picks on
this machine (bfloat16 on CPUs with native bf16, else float32), so the ratios compare engines, not
dtypes; vLLM also runs in each other dtype the CPU does natively (`vllm_<dtype>` rows). Each engine
runs in its own process so its peak RSS (process tree) is its own. The roofline (`roofline.py`):
the machine's matmul rate at the model's decode shapes and its memory bandwidth, measured before and
after the engines (the higher kept: a ceiling is the best the machine does); each vLLM row's fraction
of the compute-bound ceiling of its dtype. Prints a markdown table and, last, one JSON
line with `vllm_vs_hf_sequential`, `vllm_vs_hf_static` (ratios of output tokens/s) and
`vllm_fraction_of_roofline`; writes the JSON and a PNG bar chart under benchmarks/results/.
Absolute times mean little on a shared 2-core CPU; the ratios and fractions are the result.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from benchmarks import RESULTS, ROOT
from tests.support.roofline import best_ceiling

ENGINES = ["hf_sequential", "hf_static", "hf_continuous", "vllm"]
LABELS = {
    "hf_sequential": "HF transformers generate, one prompt at a time",
    "hf_static": "HF transformers generate, static padded batches",
    "hf_continuous": "HF transformers generate_batch (continuous batching)",
    "vllm": "vLLM LLM.generate over all prompts (our defaults)",
}
TOPICS = ["LoRA adapters", "the KV cache", "retrieval-augmented generation", "DPO", "quantization to 4 bits",
          "tensor parallelism", "a vector database", "prompt monitoring", "continuous batching", "an LLM judge"]


def _label(name: str, result: dict) -> str:
    return f"{LABELS.get(name, 'vLLM LLM.generate over all prompts')}, {result.get('dtype', '?')}"


def workload(count: int) -> list[str]:
    """The embedded split's prompts, then synthetic prompts of varied length, `count` in all."""
    from llm_engineering.evaluation.config import DatasetConfig, PromptConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split, with_prompts
    from llm_engineering.evaluation.generation.prompts import alpaca_prompt

    prompts = with_prompts(read_test_split(DatasetConfig()), PromptConfig())["prompt"][:count]
    k = 0
    while len(prompts) < count:
        detail = " Give an example, name the trade-offs, and say when not to use it." * (k % 4)
        prompts.append(alpaca_prompt(f"Explain {TOPICS[k % len(TOPICS)]} to an ML engineer.{detail}"))
        k += 1
    return prompts


def _result(prompts_done: int, tokens: int, seconds: float, first: float, **extra: Any) -> dict[str, Any]:
    return {"prompts": prompts_done, "output_tokens": tokens, "seconds": round(seconds, 2),
            "output_tok_per_s": round(tokens / seconds, 2), "prompts_per_s": round(prompts_done / seconds, 3),
            "time_to_first_result_s": round(first, 2), **extra}


def run_hf(engine: str, prompts: list[str], max_tokens: int, sequential_subset: int, batch_size: int, dtype: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(0)
    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
    config = GenerationConfig(do_sample=True, temperature=0.8, top_p=0.95, min_p=0.05, max_new_tokens=max_tokens,
                              pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                              eos_token_id=tokenizer.eos_token_id)
    if engine == "hf_continuous":
        from transformers.generation.configuration_utils import ContinuousBatchingConfig

        ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        # Its default KV cache is sized from free memory (18 GB here) and then produced nothing.
        paged = ContinuousBatchingConfig(num_blocks=1024, block_size=32, max_batch_tokens=1024)
        started = time.perf_counter()
        # Not under inference_mode: its scheduler thread updates tensors in place.
        outputs = model.generate_batch(ids, generation_config=config, continuous_batching_config=paged)
        errors = {o.error for o in outputs.values() if o.error}
        if errors:
            print(f"generate_batch errors: {sorted(errors)[:3]}", file=sys.stderr)
        seconds = time.perf_counter() - started
        ends = [o.lifespan[1] for o in outputs.values() if o.lifespan[1] > 0]
        first = (min(ends) - started) if ends else seconds
        tokens = sum(len(o.generated_tokens) for o in outputs.values())
        return _result(len(prompts), tokens, seconds, max(first, 0.0))
    subset = prompts[:sequential_subset] if engine == "hf_sequential" else prompts
    size = 1 if engine == "hf_sequential" else batch_size
    tokens, first, started = 0, None, time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(subset), size):
            batch = tokenizer(subset[start:start + size], return_tensors="pt", padding=True, add_special_tokens=False)
            out = model.generate(**batch, generation_config=config)
            new = out[:, batch["input_ids"].shape[1]:]
            tokens += int((new != config.pad_token_id).sum()) if size > 1 else new.shape[1]
            first = first or time.perf_counter() - started
    seconds = time.perf_counter() - started
    extra = {"measured_on_prompts": len(subset), "extrapolated": len(subset) < len(prompts)} if engine == "hf_sequential" else {}
    return _result(len(subset), tokens, seconds, first, **extra)


def run_vllm(prompts: list[str], max_tokens: int, engine_overrides: dict[str, Any] | None = None) -> dict:
    from tqdm.auto import tqdm
    from vllm import SamplingParams

    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    path = resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path
    marks: dict[str, float] = {}

    class FirstResult(tqdm):  # LLM.generate advances its bar as each request finishes
        def update(self, n: int = 1) -> Any:
            marks.setdefault("first", time.perf_counter())
            return super().update(n)

    pool = EnginePool()
    try:  # the engine runs in its own process: end it even when the run fails
        llm = pool.get(path, EngineConfig(**(engine_overrides or {})))
        params = SamplingParams(temperature=0.8, top_p=0.95, min_p=0.05, max_tokens=max_tokens, seed=0)
        llm.generate(prompts[:2], SamplingParams(max_tokens=4), use_tqdm=False)  # warm-up, as HF's first call
        started = time.perf_counter()
        outputs = llm.generate(prompts, params, use_tqdm=FirstResult)
        seconds = time.perf_counter() - started
    finally:
        pool.release()
    tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    prompt_tokens = sum(len(o.prompt_token_ids) for o in outputs)
    return _result(len(prompts), tokens, seconds, marks.get("first", started + seconds) - started,
                   prompt_tokens=prompt_tokens)


def _peak_rss_mb(process: subprocess.Popen) -> tuple[float, threading.Thread]:
    import psutil

    peak = [0.0]

    def poll() -> None:
        root = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak[0] = max(peak[0], sum(p.memory_info().rss for p in tree if p.is_running()) / 2**20)
            except psutil.Error:
                pass
            time.sleep(0.2)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return peak, thread


def _run(command: list[str], name: str) -> tuple[dict | None, float]:
    """Run one measurement in its own process: its RESULT line, and the peak RSS of its process tree (MB)."""
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"})
    peak, poller = _peak_rss_mb(process)
    stdout, _ = process.communicate()
    poller.join()
    line = next((text for text in stdout.splitlines() if text.startswith("RESULT ")), None)
    if process.returncode or line is None:
        print(f"{name}: failed (exit {process.returncode})", file=sys.stderr)
        return None, peak[0]
    return json.loads(line[7:]), peak[0]


def fraction_of_roofline(result: dict, roofline: dict, dtype: str) -> float | None:
    """The run's compute-bound time (its prompt and output tokens' FLOPs at the measured matmul rate of `dtype`)
    over its measured time: 1.0 would be every FLOP at the machine's matmul rate."""
    rate = roofline["matmul_gflops"].get(dtype)
    if not rate or "prompt_tokens" not in result:
        return None
    flops = roofline["flops_per_token"] * (result["prompt_tokens"] + result["output_tokens"])
    return round(flops / (rate * 1e9) / result["seconds"], 3)


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = set(next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []))
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "unknown CPU")
    return f"{model}: " + (", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags) or "none")


def chart(results: dict[str, dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    names = [name for name in ENGINES if name in results] + [n for n in results if n not in ENGINES]
    figure, axis = plt.subplots(figsize=(8, 3.5))
    axis.barh([_label(n, results[n]) for n in names], [results[n]["output_tok_per_s"] for n in names], color="#4c72b0")
    axis.set_xlabel("output tokens / s (higher is better)")
    axis.invert_yaxis()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


@click.command()
@click.option("--prompts", "count", default=64, show_default=True)
@click.option("--max-tokens", default=128, show_default=True)
@click.option("--sequential-subset", default=8, show_default=True, help="Prompts run one at a time by HF.")
@click.option("--batch-size", default=64, show_default=True, help="HF static batch size.")
@click.option("--engine", type=click.Choice(ENGINES), help="Internal: run one engine and print its JSON.")
@click.option("--engine-config", default="{}", help="Internal: EngineConfig overrides (JSON) for --engine vllm.")
@click.option("--dtype", default=None, help="Internal: the dtype of --engine.")
def main(count: int, max_tokens: int, sequential_subset: int, batch_size: int, engine: str | None,
         engine_config: str, dtype: str | None) -> None:
    prompts = workload(count)
    if engine:
        result = run_vllm(prompts, max_tokens, {**json.loads(engine_config), "dtype": dtype}) if engine == "vllm" else run_hf(
            engine, prompts, max_tokens, sequential_subset, batch_size, dtype)
        print("RESULT " + json.dumps(result), flush=True)
        return
    from transformers import GenerationMixin

    from llm_engineering.infrastructure.cpu_tuning import engine_dtype, native_bf16_flags

    flags = native_bf16_flags()
    dtype, why = engine_dtype("auto", True, flags)  # this benchmark runs on CPU
    others = [d for d in ("float32", "bfloat16") if d != dtype and (d == "float32" or flags)]
    print(f"dtype {dtype}: {why}", file=sys.stderr)
    engines = [e for e in ENGINES if e != "hf_continuous" or hasattr(GenerationMixin, "generate_batch")]
    runs = [(name, name, dtype) for name in engines] + [(f"vllm_{d}", "vllm", d) for d in others]
    roofline_command = [sys.executable, "-m", "benchmarks.performance.roofline", "--batch", str(count),
                        *[a for d in (dtype, *others) for a in ("--dtype", d)]]
    ceilings = [_run(roofline_command, "roofline")[0]]
    results: dict[str, dict] = {}
    for name, engine_name, engine_dtype_ in runs:
        result, peak = _run([sys.executable, "-m", "benchmarks.performance.generation", "--engine", engine_name,
                             "--dtype", engine_dtype_, "--prompts", str(count), "--max-tokens", str(max_tokens),
                             "--sequential-subset", str(sequential_subset), "--batch-size", str(batch_size)], name)
        if result is None:
            continue
        results[name] = {**result, "dtype": engine_dtype_, "peak_rss_mb": round(peak)}
        print(f"{name}: {results[name]['output_tok_per_s']} output tok/s", file=sys.stderr)
    ceilings.append(_run(roofline_command, "roofline")[0])
    roofline = best_ceiling(ceilings)
    for name, result in results.items():
        if name.startswith("vllm") and roofline:
            result["fraction_of_roofline"] = fraction_of_roofline(result, roofline, result["dtype"])

    print(f"\n{count} prompts, max {max_tokens} new tokens, temperature 0.8, top_p 0.95, min_p 0.05\n")
    print("| engine | output tok/s | prompts/s | time to first result (s) | peak RSS (MB) | ratio to sequential |")
    print("|---|---|---|---|---|---|")
    base = results.get("hf_sequential", {}).get("output_tok_per_s")
    for name, r in results.items():
        note = f" (measured on {r['measured_on_prompts']} prompts, per token)" if r.get("extrapolated") else ""
        ratio = f"{r['output_tok_per_s'] / base:.1f}x" if base else "n/a"
        print(f"| {_label(name, r)}{note} | {r['output_tok_per_s']} | {r['prompts_per_s']} | "
              f"{r['time_to_first_result_s']} | {r['peak_rss_mb']} | {ratio} |")
    vllm = results.get("vllm", {}).get("output_tok_per_s")
    def ratio(other: str) -> float | None:
        theirs = results.get(other, {}).get("output_tok_per_s")
        return round(vllm / theirs, 2) if vllm and theirs else None

    if roofline:
        print(f"\nRoofline ({roofline['batch']} rows per matmul, {roofline['flops_per_token'] / 1e6:.0f} MFLOP per token): "
              + ", ".join(f"{d} matmuls {g} GFLOP/s ({roofline.get('matmul_kernel', {}).get(d, 'torch')})"
                          for d, g in roofline["matmul_gflops"].items())
              + f", memory copy {roofline['bandwidth_gb_s']} GB/s")
        for name, r in results.items():
            if "fraction_of_roofline" in r:
                print(f"{name} ({r['dtype']}): {r['fraction_of_roofline']:.0%} of its dtype's compute-bound ceiling")
    summary = {"prompts": count, "max_tokens": max_tokens, "cpu_count": os.cpu_count(), "cpu_flags": cpu_flags(),
               "dtype": dtype, "dtype_reason": why,
               "vllm_vs_hf_sequential": ratio("hf_sequential"), "vllm_vs_hf_static": ratio("hf_static"),
               "vllm_vs_hf_continuous": ratio("hf_continuous"),
               "vllm_fraction_of_roofline": results.get("vllm", {}).get("fraction_of_roofline"),
               "roofline": roofline, "results": results}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "generation.json").write_text(json.dumps(summary, indent=2))
    chart(results, RESULTS / "generation.png")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
