"""The judge engine's two costs apart, on one engine each: prefill of check-like prompts (the default rubric's prompt
for each reference answer and for its first third, as the judge check asks them) with vLLM's prefix cache on and
off, and the cost of one decode step at several batch sizes (free text, no grammar, no logprobs).

    .venv/bin/python -m benchmarks.performance.judge_prefill [--judge auto] [--batch 1 --batch 8 --batch 48]
"""

from __future__ import annotations

import time

import click


def check_like_conversations(rubric) -> list[list[dict[str, str]]]:
    """The judge's prompts for each reference answer of the embedded split and for its first third, scored alone:
    96 prompts like those of the judge check."""
    from llm_engineering.evaluation import columns as col
    from llm_engineering.evaluation.config import DatasetConfig
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.judging.rubric import judge_messages

    return [judge_messages(rubric, row[col.INSTRUCTION], answer) for row in read_test_split(DatasetConfig())
            for answer in (row[col.REFERENCE], row[col.REFERENCE][: len(row[col.REFERENCE]) // 3])]


@click.command()
@click.option("--judge", "judge_model", default="auto")
@click.option("--batch", "batches", multiple=True, type=int, default=(1, 8, 48))
@click.option("--steps", default=64, type=int, help="Decode steps per batch size.")
def main(judge_model: str, batches: tuple[int, ...], steps: int) -> None:
    from vllm import SamplingParams

    from llm_engineering.evaluation.config import JudgeConfig
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge
    from llm_engineering.infrastructure.vllm_engine import EnginePool
    from llm_engineering.settings import get_settings

    config = resolve_auto_judge(JudgeConfig(model=judge_model))[0]
    rubric = config.resolved_rubric()
    conversations = check_like_conversations(rubric)
    model_path = resolve_model(config.model, get_settings().MODEL_CACHE_DIR).path
    for prefix_caching in (True, False):
        pool = EnginePool()
        try:
            llm = pool.get(model_path, EngineConfig(enable_prefix_caching=prefix_caching))
            llm.chat(conversations[:1], SamplingParams(max_tokens=1), use_tqdm=False)  # warm
            llm.reset_prefix_cache()
            started = time.perf_counter()
            outputs = llm.chat(conversations, SamplingParams(max_tokens=1), use_tqdm=False)
            seconds = time.perf_counter() - started
            tokens = sum(len(o.prompt_token_ids) for o in outputs)
            click.echo(f"prefix cache {'on' if prefix_caching else 'off'}: {len(outputs)} prompts, {tokens} prompt "
                       f"tokens in {seconds:.1f} s ({tokens / seconds:.0f} tokens/s)")
            if not prefix_caching:
                continue
            ids = [o.prompt_token_ids for o in outputs]
            shared = min(next((i for i, (a, b) in enumerate(zip(ids[0], other)) if a != b), len(other)) for other in ids[1:])
            click.echo(f"  tokens every prompt shares at its head: {shared}")
            for batch in batches:
                params = SamplingParams(max_tokens=steps, ignore_eos=True, temperature=0)
                started = time.perf_counter()
                llm.generate(["Write a long story about a dragon."] * batch, params, use_tqdm=False)
                seconds = time.perf_counter() - started
                click.echo(f"decode, batch {batch}: {seconds / steps:.3f} s a step, {batch * steps / seconds:.1f} tokens/s")
        finally:
            pool.release()


if __name__ == "__main__":
    main()
