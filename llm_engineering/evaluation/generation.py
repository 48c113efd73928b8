"""Answer generation: every prompt of a model in one vLLM `generate` call (continuous batching),
or spread over Ray Data LLM replicas."""

from __future__ import annotations

import logging
import time
from typing import Any, Iterator

from datasets import Dataset
from pydantic import BaseModel

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.prompts import format_prompts
from llm_engineering.infrastructure.ray_engine import RayEngine

logger = logging.getLogger(__name__)

PROMPT_TOO_LONG = "prompt_too_long"


class GenerationStats(BaseModel):
    """Throughput of one model's generation run."""

    model_id: str
    rows: int
    skipped: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    tokens_per_second: float
    prompts_per_second: float


def sampling_params(config: SamplingConfig) -> Any:
    from vllm import SamplingParams

    return SamplingParams(
        temperature=config.temperature,
        top_p=config.top_p,
        min_p=config.min_p,
        max_tokens=config.max_tokens,
        seed=config.seed,
    )


def _generate_rows(llm: Any, rows: list[tuple[str, str]], sampling: SamplingConfig) -> Iterator[dict[str, Any]]:
    """One record per `(id, prompt)`: {id, answer, finish_reason, prompt_tokens, completion_tokens}."""
    if isinstance(llm, RayEngine):
        yield from llm.generate_rows(rows, sampling)
        return
    outputs = llm.generate([prompt for _, prompt in rows], sampling_params(sampling), use_tqdm=True)
    for (row_id, _), output in zip(rows, outputs):
        result = output.outputs[0]
        yield {col.ID: row_id, col.ANSWER: result.text.strip(), col.FINISH_REASON: result.finish_reason or "unknown",
               col.PROMPT_TOKENS: len(output.prompt_token_ids), col.COMPLETION_TOKENS: len(result.token_ids)}


def generate_answers(
    llm: Any,
    test_split: Dataset,
    model_id: str,
    sampling: SamplingConfig,
    prompt: PromptConfig,
    max_model_len: int,
) -> tuple[Dataset, GenerationStats]:
    """Generate one answer per row with `llm`, matched to its row by id.

    `llm` is a `vllm.LLM` (in-process) or a `RayEngine` (replicas on a Ray cluster): same rows out.

    A prompt that leaves no room for the answer in `max_model_len` is not sent: its row keeps
    an empty answer with finish reason `prompt_too_long`, and the run goes on.
    """
    tokenizer = llm.get_tokenizer()
    if prompt.template == "alpaca":
        prompts = list(test_split[col.PROMPT])
    else:
        prompts = format_prompts(
            test_split[col.INSTRUCTION], "chat", tokenizer, prompt.system_prompt
        )
    prompt_lengths = [len(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    runnable = [i for i, n in enumerate(prompt_lengths) if n < max_model_len]
    if len(runnable) < len(prompts):
        logger.warning(
            "%d prompt(s) are longer than max_model_len=%d and are skipped; raise "
            "engine.max_model_len to include them.", len(prompts) - len(runnable), max_model_len,
        )

    ids = [str(row_id) for row_id in test_split[col.ID]]
    started = time.perf_counter()
    received = list(_generate_rows(llm, [(ids[i], prompts[i]) for i in runnable], sampling))
    seconds = time.perf_counter() - started
    rows = {row[col.ID]: row for row in received}
    missing = [ids[i] for i in runnable if ids[i] not in rows]
    if missing or len(received) != len(runnable):
        raise RuntimeError(
            f"The engine returned {len(received)} answers for {len(runnable)} prompts "
            f"(missing ids: {missing[:5]}); every prompt must be answered exactly once."
        )

    answers = [""] * len(prompts)
    reasons = [PROMPT_TOO_LONG] * len(prompts)
    completion = [0] * len(prompts)
    for index in runnable:
        row = rows[ids[index]]
        answers[index] = row[col.ANSWER]
        reasons[index] = row[col.FINISH_REASON]
        completion[index] = row[col.COMPLETION_TOKENS]
        prompt_lengths[index] = row[col.PROMPT_TOKENS]

    generations = test_split.remove_columns(col.PROMPT).add_column(col.PROMPT, prompts)
    generations = (
        generations.add_column(col.MODEL_ID, [model_id] * len(prompts))
        .add_column(col.ANSWER, answers)
        .add_column(col.FINISH_REASON, reasons)
        .add_column(col.PROMPT_TOKENS, prompt_lengths)
        .add_column(col.COMPLETION_TOKENS, completion)
    )
    total = sum(completion)
    stats = GenerationStats(
        model_id=model_id,
        rows=len(prompts),
        skipped=len(prompts) - len(runnable),
        prompt_tokens=sum(prompt_lengths),
        completion_tokens=total,
        seconds=round(seconds, 3),
        tokens_per_second=round(total / seconds, 2) if seconds else 0.0,
        prompts_per_second=round(len(runnable) / seconds, 3) if seconds else 0.0,
    )
    logger.info("%s: %d answers, %.1f output tokens/s", model_id, len(runnable), stats.tokens_per_second)
    return generations, stats
