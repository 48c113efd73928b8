"""Where the default judge's scoring time goes beyond the model's own work: the judge writing whole verdicts for the
embedded split's 48 reference answers (what `evaluate_answers` asks of it), back to back on one engine:

- as the pipeline asks (the rubric's JSON schema enforced by xgrammar, top logprobs at every token);
- without logprobs;
- without the schema (free text: other tokens, so compare tokens per second);
- without either.

The engine starts once, before any figure. Output tokens per second is the figure to compare.

    .venv/bin/python benchmarks/judge_decode.py [--judge auto] [--rows 48]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@click.command()
@click.option("--judge", "judge_model", default="auto")
@click.option("--rows", default=48, type=int)
def main(judge_model: str, rows: int) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig, JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.rubric import judge_messages, verdict_schema
    from llm_engineering.evaluation.judging.score_probs import TOP_LOGPROBS
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = resolve_auto_judge(JudgeConfig(model=judge_model))[0]
    rubric = config.resolved_rubric()
    split = read_test_split(DatasetConfig(limit=rows))
    conversations = [judge_messages(rubric, row[col.INSTRUCTION], row[col.REFERENCE]) for row in split]
    schema = StructuredOutputsParams(json=verdict_schema(rubric, config.max_analysis_chars))
    variants = {"as the pipeline asks": dict(logprobs=TOP_LOGPROBS, structured_outputs=schema),
                "no logprobs": dict(structured_outputs=schema),
                "no JSON schema": dict(logprobs=TOP_LOGPROBS),
                "neither": {}}
    pool = EnginePool()
    try:
        llm = pool.get(resolve_model(config.model, get_settings().MODEL_CACHE_DIR).path, EngineConfig())
        llm.chat(conversations[:1], SamplingParams(max_tokens=8), use_tqdm=False)  # warm
        results = {}
        for name, options in variants.items():
            llm.reset_prefix_cache()
            params = SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed, **options)
            started = time.perf_counter()
            outputs = llm.chat(conversations, params, use_tqdm=False)
            seconds = time.perf_counter() - started
            tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
            results[name] = {"seconds": round(seconds, 1), "output_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1)}
            click.echo(f"{name}: {json.dumps(results[name])}")
    finally:
        pool.release()


if __name__ == "__main__":
    main()
