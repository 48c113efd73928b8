"""Would one judge queue pay? The pipeline asks the judge for the run's whole verdicts (`evaluate_answers`), then,
in its own step, for the judge check's first scores (`check_trust`). On a CPU a decode step has a large fixed
cost (it reads every weight) and the verdicts' tail runs few sequences a step, so the check's prefill could ride on
those steps. On one engine, back to back: the two requests one after the other, as the pipeline asks them, and
both in one `chat` call.

The check's prompts here are check-like (each reference, and its first third, scored alone: 96 prompts) rather than
the check's own tiers; the verdicts are a published results file's answers (what `evaluate_answers` judged).

    .venv/bin/python -m benchmarks.performance.judge_one_queue --answers outputs/hub/local/<model>-results/data/<file>.parquet
"""

from __future__ import annotations

import time
from pathlib import Path

import click


@click.command()
@click.option("--answers", "answers_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--judge", "judge_model", default="auto")
def main(answers_path: Path, judge_model: str) -> None:
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    from benchmarks.performance.judge_decode import judged_conversations
    from benchmarks.performance.judge_prefill import check_like_conversations
    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.judging.score_probs import TOP_LOGPROBS
    from llm_engineering.evaluation.judging.verdict import first_score_schema, verdict_schema
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = resolve_auto_judge(JudgeConfig(model=judge_model))[0]
    rubric = config.resolved_rubric()
    verdicts, checks = judged_conversations(rubric, answers_path), check_like_conversations(rubric)

    def params(schema: dict) -> SamplingParams:
        # As the in-process judge asks (vllm_judge.py); a new StructuredOutputsParams per request, as vLLM needs.
        return SamplingParams(temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed,
                              logprobs=TOP_LOGPROBS, structured_outputs=StructuredOutputsParams(json=schema))

    whole, first = verdict_schema(rubric, config.max_analysis_chars), first_score_schema(rubric, config.max_analysis_chars)
    pool = EnginePool()
    try:
        llm = pool.get(resolve_model(config.model, get_settings().MODEL_CACHE_DIR).path, EngineConfig())
        llm.chat(checks[:1], SamplingParams(max_tokens=1), use_tqdm=False)  # warm
        for way in ("one after the other", "one queue", "one after the other", "one queue"):
            llm.reset_prefix_cache()
            started = time.perf_counter()
            if way == "one queue":
                llm.chat(verdicts + checks, [params(whole) for _ in verdicts] + [params(first) for _ in checks],
                         use_tqdm=False)
                click.echo(f"{way}: {time.perf_counter() - started:.1f} s")
            else:
                llm.chat(verdicts, [params(whole) for _ in verdicts], use_tqdm=False)
                middle = time.perf_counter()
                llm.chat(checks, [params(first) for _ in checks], use_tqdm=False)
                click.echo(f"{way}: {time.perf_counter() - started:.1f} s (verdicts {middle - started:.1f} s, "
                           f"check {time.perf_counter() - middle:.1f} s)")
    finally:
        pool.release()


if __name__ == "__main__":
    main()
