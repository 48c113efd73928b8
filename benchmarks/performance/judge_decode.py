"""Where the default judge's scoring time goes beyond the model's own work: the judge writing whole verdicts for the
embedded split's 48 reference answers (what `evaluate_answers` asks of it), back to back on one engine:

- as the pipeline asks (the rubric's JSON schema enforced by the grammar backend, top logprobs at every token);
- without logprobs;
- without the schema (free text: other tokens, so compare tokens per second);
- without either.

The engine starts once per grammar backend (`--backend`, several: guidance, the pipeline's, or xgrammar, vLLM's
default), before any figure; with several, the verdicts each backend wrote are compared with the first's. Output
tokens per second is the figure to compare.

    .venv/bin/python -m benchmarks.performance.judge_decode [--judge auto] [--rows 48] [--backend guidance --backend xgrammar]
        [--only-as-asked] [--answers PARQUET] [--top-logprobs 10 --top-logprobs 1]

`--answers`: judge a published results file's answers (`outputs/hub/local/<model>-results/data/*.parquet`, what
`evaluate_answers` judged) instead of the references. `--top-logprobs K` (several): the pipeline's request with K top
logprobs instead of its 20, after it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import click


def judged_conversations(rubric, answers_path: Optional[Path], rows: Optional[int] = None) -> list[list[dict[str, str]]]:
    """The judge's prompts for the answers of a published results parquet (what `evaluate_answers` judged), or
    without one for the embedded split's references; the first `rows` (all: None)."""
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.rubric import judge_messages

    if answers_path:
        import pyarrow.parquet as pq

        split, judged = pq.read_table(answers_path).to_pylist()[:rows], col.ANSWER
    else:
        split, judged = read_test_split(DatasetConfig(limit=rows)), col.REFERENCE
    return [judge_messages(rubric, row[col.INSTRUCTION], row[judged]) for row in split]


@click.command()
@click.option("--judge", "judge_model", default="auto")
@click.option("--rows", default=48, type=int)
@click.option("--backend", "backends", multiple=True, help="vLLM's structured-output backend (default: the pipeline's).")
@click.option("--only-as-asked", is_flag=True, help="Only the variant the pipeline asks.")
@click.option("--answers", "answers_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A published results parquet whose answers the judge reads (default: the split's references).")
@click.option("--top-logprobs", "top_logprobs", multiple=True, type=int, help="Also ask with K top logprobs (several).")
def main(judge_model: str, rows: int, backends: tuple[str, ...], only_as_asked: bool, answers_path: Optional[Path],
         top_logprobs: tuple[int, ...]) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.judging.score_probs import TOP_LOGPROBS
    from llm_engineering.evaluation.judging.verdict import verdict_schema
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure import vllm_engine, vllm_setup
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = resolve_auto_judge(JudgeConfig(model=judge_model))[0]
    rubric = config.resolved_rubric()
    conversations = judged_conversations(rubric, answers_path, rows)
    schema = verdict_schema(rubric, config.max_analysis_chars)
    variants = {"as the pipeline asks": dict(logprobs=TOP_LOGPROBS, schema=True), "no logprobs": dict(schema=True),
                "no JSON schema": dict(logprobs=TOP_LOGPROBS), "neither": {}}
    if only_as_asked:
        variants = dict(list(variants.items())[:1])
    variants |= {f"top {k} logprobs": dict(logprobs=k, schema=True) for k in top_logprobs}
    pipeline_kwargs = vllm_engine.engine_kwargs
    first_texts = None
    for backend in backends or [vllm_setup.STRUCTURED_OUTPUTS["backend"]]:
        # The pipeline's engine arguments with another grammar backend (same whitespace rule).
        vllm_engine.engine_kwargs = lambda *args, backend=backend: {
            **pipeline_kwargs(*args), "structured_outputs_config": {**vllm_setup.STRUCTURED_OUTPUTS, "backend": backend}}
        pool = EnginePool()
        try:
            llm = pool.get(resolve_model(config.model, get_settings().MODEL_CACHE_DIR).path, EngineConfig())
            llm.chat(conversations[:1], SamplingParams(max_tokens=8), use_tqdm=False)  # warm
            for name, options in variants.items():
                llm.reset_prefix_cache()
                # A new StructuredOutputsParams per request batch: vLLM records its engine's backend on the one it reads.
                grammar = StructuredOutputsParams(json=schema) if options.get("schema") else None
                params = SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed,
                                        logprobs=options.get("logprobs"), structured_outputs=grammar)
                started = time.perf_counter()
                outputs = llm.chat(conversations, params, use_tqdm=False)
                seconds = time.perf_counter() - started
                tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
                result = {"seconds": round(seconds, 1), "output_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1)}
                texts = [o.outputs[0].text for o in outputs]
                if name == "as the pipeline asks":
                    first_texts = first_texts or texts
                    result["verdicts_as_the_first_backend"] = sum(a == b for a, b in zip(texts, first_texts))
                    result["valid_json"] = sum(_is_json(t) for t in texts)
                click.echo(f"{backend}, {name}: {json.dumps(result)}")
        finally:
            pool.release()
    vllm_engine.engine_kwargs = pipeline_kwargs


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


if __name__ == "__main__":
    main()
