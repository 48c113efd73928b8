"""Answer generation: every prompt of a model in one engine call, each answer saved as it finishes.

All prompts go to the engine at once (with vLLM: one continuous batch), and the engine yields each
answer as it finishes, so it is appended to the checkpoint immediately: a crash or Ctrl-C loses
nothing, and the next run generates only the rows that are missing. The engine is any
`GenerationEngine` (in-process vLLM, Ray Data LLM replicas), handed in by the caller.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Optional

from datasets import Dataset
from pydantic import BaseModel

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint, AnswerRecord, row_key
from llm_engineering.evaluation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.generation.engine import GenerationEngine
from llm_engineering.evaluation.generation.prompts import effective_template, format_prompts

logger = logging.getLogger(__name__)


class GenerationStats(BaseModel):
    """Throughput of one model's generation run (over the answers generated in this run)."""

    model_id: str
    rows: int  # answers: the test split's rows times `samples`
    samples: int = 1  # answers per prompt (sampling.n)
    skipped: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    tokens_per_second: float
    prompts_per_second: float
    resumed: int = 0  # answers taken from the checkpoint of an interrupted run
    generated: int = 0  # answers generated in this run
    dtype: Optional[str] = None  # the engine's dtype, as `engine.dtype` resolved on this machine
    dtype_reason: Optional[str] = None


def answer_test_split(
    engine: GenerationEngine,
    test_split: Dataset,
    model_id: str,
    sampling: SamplingConfig,
    prompt: PromptConfig,
    max_model_len: int,
    checkpoint: Optional[AnswerCheckpoint] = None,
    fresh: bool = False,
) -> tuple[Dataset, GenerationStats]:
    """Generate `sampling.n` answers per row with `engine` (one, by default), matched to its row by id.

    Answers already in `checkpoint` for the same row id, prompt and sample are reused (unless `fresh`: then it is
    emptied first, once no other run generates into it); new ones are appended to it as they finish. A prompt
    that leaves no room for the answer in `max_model_len` is not sent: its row keeps an empty answer with
    finish reason `prompt_too_long`, and the run goes on. The result has one row per answer, a row's samples
    side by side (`sample` 0..n-1).
    """
    tokenizer = engine.get_tokenizer()
    if effective_template(prompt.template, tokenizer) == "alpaca":
        prompts = list(test_split[col.PROMPT])
    else:
        prompts = format_prompts(test_split[col.INSTRUCTION], "chat", tokenizer, prompt.system_prompt)
    ids = [str(row_id) for row_id in test_split[col.ID]]
    lengths = [len(t) for t in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    # One unit of work per answer: answer u is sample `samples[u]` of row `rows[u]`.
    rows_of = [i for i in range(len(prompts)) for _ in range(sampling.n)]
    samples = [s for _ in range(len(prompts)) for s in range(sampling.n)]
    keys = [row_key(ids[i], prompts[i], s) for i, s in zip(rows_of, samples)]

    records: dict[int, AnswerRecord] = {}
    too_long = [i for i, n in enumerate(lengths) if n >= max_model_len]
    for u, i in enumerate(rows_of):
        if lengths[i] >= max_model_len:
            records[u] = AnswerRecord(answer="", finish_reason=col.PROMPT_TOO_LONG, prompt_tokens=lengths[i],
                                      completion_tokens=0)
    if too_long:
        logger.warning(
            "%d prompt(s) are longer than max_model_len=%d and are skipped (finish_reason %r on "
            "their rows); raise engine.max_model_len to include them.", len(too_long), max_model_len, col.PROMPT_TOO_LONG,
        )
    with contextlib.ExitStack() as stack:
        if checkpoint:  # a run with the same checkpoint generating now: wait for it, then reuse its answers
            stack.enter_context(checkpoint.exclusive())
            if fresh:
                checkpoint.reset()
        stored = checkpoint.load() if checkpoint else {}
        resumed = [u for u in range(len(keys)) if u not in records and keys[u] in stored]
        records.update({u: stored[keys[u]] for u in resumed})
        if resumed:
            logger.info("Resuming: %d of %d answers are in %s; generating the other %d.",
                        len(resumed), len(keys), checkpoint.path, len(keys) - len(records))
        todo = {u: prompts[rows_of[u]] for u in range(len(keys)) if u not in records}
        started = time.perf_counter()
        writer = stack.enter_context(checkpoint.writer()) if checkpoint else None
        # Everything resumed from the checkpoint: ask the engine for nothing (no Ray replica starts).
        answers = stack.enter_context(contextlib.closing(
            engine.generate(todo, sampling, {u: samples[u] for u in todo}))) if todo else ()
        for u, record in answers:
            if u in records:
                raise RuntimeError(f"The engine answered row {ids[rows_of[u]]!r} (sample {samples[u]}) twice; every "
                                   f"prompt must be answered once.")
            records[u] = record
            if writer:
                writer.append(keys[u], ids[rows_of[u]], record, samples[u])
    seconds = time.perf_counter() - started
    missing = sorted({ids[rows_of[u]] for u in todo if u not in records})
    if missing:  # what was answered is saved: a re-run asks only for these
        raise RuntimeError(f"The engine returned no answer for {len(missing)} row(s) (ids {missing[:5]}); "
                           f"run the same command again to generate only those.")

    rows = [records[u] for u in range(len(keys))]
    generations = test_split.remove_columns(col.PROMPT).add_column(col.PROMPT, prompts)
    if sampling.n > 1:
        generations = generations.select(rows_of).flatten_indices()
    generations = (
        generations.add_column(col.SAMPLE, samples)
        .add_column(col.MODEL_ID, [model_id] * len(keys))
        .add_column(col.ANSWER, [r.answer for r in rows])
        .add_column(col.FINISH_REASON, [r.finish_reason for r in rows])
        .add_column(col.PROMPT_TOKENS, [r.prompt_tokens for r in rows])
        .add_column(col.COMPLETION_TOKENS, [r.completion_tokens for r in rows])
    )
    new_tokens = sum(records[u].completion_tokens for u in todo)
    stats = GenerationStats(
        model_id=model_id,
        rows=len(keys),
        samples=sampling.n,
        skipped=len(too_long) * sampling.n,
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        seconds=round(seconds, 3),
        tokens_per_second=round(new_tokens / seconds, 2) if todo and seconds else 0.0,
        prompts_per_second=round(len(todo) / seconds, 3) if todo and seconds else 0.0,
        resumed=len(resumed),
        generated=len(todo),
    )
    logger.info("%s: %d answers generated (%.1f output tokens/s), %d resumed, %d skipped",
                model_id, len(todo), stats.tokens_per_second, len(resumed), len(too_long))
    return generations, stats

