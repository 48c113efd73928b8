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
from dataclasses import dataclass
from typing import Optional

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint, AnswerRecord, row_key
from llm_engineering.evaluation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.generation.engine import GenerationEngine
from llm_engineering.evaluation.generation.prompts import effective_template, format_prompts
from llm_engineering.evaluation.stored.generation import GenerationStats

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Units:
    """One unit of work per answer: answer u is sample `samples[u]` of row `rows_of[u]`, saved under `keys[u]`."""

    ids: list[str]
    prompts: list[str]
    lengths: list[int]  # each row's prompt tokens
    rows_of: list[int]
    samples: list[int]
    keys: list[str]

    def row_id(self, u: int) -> str:
        return self.ids[self.rows_of[u]]


def answer_test_split(
    engine: GenerationEngine,
    test_split: Dataset,
    model_id: str,
    *,
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
    units = _units(engine, test_split, sampling, prompt)
    records = _skipped(units, max_model_len)
    skipped = len(records)
    resumed, todo, seconds = _generate(engine, units, records, sampling=sampling, checkpoint=checkpoint, fresh=fresh)
    generations = _generations(test_split, units, records, model_id=model_id, sampling=sampling)
    rows = [records[u] for u in range(len(units.keys))]
    new_tokens = sum(records[u].completion_tokens for u in todo)
    stats = GenerationStats(
        model_id=model_id,
        rows=len(units.keys),
        samples=sampling.n,
        skipped=skipped,
        prompt_tokens=sum(r.prompt_tokens for r in rows),
        completion_tokens=sum(r.completion_tokens for r in rows),
        seconds=round(seconds, 3),
        tokens_per_second=round(new_tokens / seconds, 2) if todo and seconds else 0.0,
        prompts_per_second=round(len(todo) / seconds, 3) if todo and seconds else 0.0,
        resumed=resumed,
        generated=len(todo),
    )
    logger.info("%s: %d answers generated (%.1f output tokens/s), %d resumed, %d skipped",
                model_id, len(todo), stats.tokens_per_second, resumed, skipped // sampling.n)
    return generations, stats


def _units(engine: GenerationEngine, test_split: Dataset, sampling: SamplingConfig, prompt: PromptConfig) -> _Units:
    """The prompts as the model reads them (the Alpaca template, or the model's chat template), and the answers
    to make of them."""
    tokenizer = engine.get_tokenizer()
    if effective_template(prompt.template, tokenizer) == "alpaca":
        prompts = list(test_split[col.PROMPT])
    else:
        prompts = format_prompts(test_split[col.INSTRUCTION], "chat", tokenizer, prompt.system_prompt)
    ids = [str(row_id) for row_id in test_split[col.ID]]
    lengths = [len(t) for t in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    rows_of = [i for i in range(len(prompts)) for _ in range(sampling.n)]
    samples = [s for _ in range(len(prompts)) for s in range(sampling.n)]
    keys = [row_key(ids[i], prompts[i], s) for i, s in zip(rows_of, samples)]
    return _Units(ids, prompts, lengths, rows_of, samples, keys)


def _skipped(units: _Units, max_model_len: int) -> dict[int, AnswerRecord]:
    """The answers not asked for: a prompt that leaves no room for an answer."""
    records = {u: AnswerRecord(answer="", finish_reason=col.PROMPT_TOO_LONG, prompt_tokens=units.lengths[i],
                               completion_tokens=0)
               for u, i in enumerate(units.rows_of) if units.lengths[i] >= max_model_len}
    if records:
        logger.warning(
            "%d prompt(s) are longer than max_model_len=%d and are skipped (finish_reason %r on their rows); raise "
            "engine.max_model_len to include them.", len({units.rows_of[u] for u in records}), max_model_len,
            col.PROMPT_TOO_LONG,
        )
    return records


def _generate(engine: GenerationEngine, units: _Units, records: dict[int, AnswerRecord], *, sampling: SamplingConfig,
              checkpoint: Optional[AnswerCheckpoint], fresh: bool) -> tuple[int, dict[int, str], float]:
    """Fill `records` with the checkpoint's answers and the engine's, each saved as it comes. Returns the answers
    resumed, those asked for (unit -> prompt) and the seconds the engine took."""
    keys, samples = units.keys, units.samples
    with contextlib.ExitStack() as stack:
        if checkpoint:  # a run with the same checkpoint generating now: wait for it, then reuse its answers
            stack.enter_context(checkpoint.exclusive())
            if fresh:
                checkpoint.reset()
        stored = checkpoint.load() if checkpoint else {}
        resumed = [u for u in range(len(keys)) if u not in records and keys[u] in stored]
        records.update({u: stored[keys[u]] for u in resumed})
        if checkpoint and resumed:  # answers are resumed from a checkpoint only
            logger.info("Resuming: %d of %d answers are in %s; generating the other %d.",
                        len(resumed), len(keys), checkpoint.path, len(keys) - len(records))
        todo = {u: units.prompts[units.rows_of[u]] for u in range(len(keys)) if u not in records}
        started = time.perf_counter()
        writer = stack.enter_context(checkpoint.writer()) if checkpoint else None
        # Everything resumed from the checkpoint: ask the engine for nothing (no Ray replica starts).
        answers = stack.enter_context(contextlib.closing(
            engine.generate(todo, sampling, {u: samples[u] for u in todo}))) if todo else ()
        for u, record in answers:
            if u in records:
                raise RuntimeError(f"The engine answered row {units.row_id(u)!r} (sample {samples[u]}) twice; every "
                                   f"prompt must be answered once.")
            records[u] = record
            if writer:
                writer.append(keys[u], units.row_id(u), record, samples[u])
    seconds = time.perf_counter() - started
    missing = sorted({units.row_id(u) for u in todo if u not in records})
    if missing:  # what was answered is saved: a re-run asks only for these
        raise RuntimeError(f"The engine returned no answer for {len(missing)} row(s) (ids {missing[:5]}); "
                           f"run the same command again to generate only those.")
    return len(resumed), todo, seconds


def _generations(test_split: Dataset, units: _Units, records: dict[int, AnswerRecord], *, model_id: str,
                 sampling: SamplingConfig) -> Dataset:
    """The `generations` artifact: the split's rows with their prompts as sent, one row per answer."""
    rows = [records[u] for u in range(len(units.keys))]
    generations = test_split.remove_columns(col.PROMPT).add_column(col.PROMPT, units.prompts)
    if sampling.n > 1:
        generations = generations.select(units.rows_of).flatten_indices()
    return (
        generations.add_column(col.SAMPLE, units.samples)
        .add_column(col.MODEL_ID, [model_id] * len(units.keys))
        .add_column(col.ANSWER, [r.answer for r in rows])
        .add_column(col.FINISH_REASON, [r.finish_reason for r in rows])
        .add_column(col.PROMPT_TOKENS, [r.prompt_tokens for r in rows])
        .add_column(col.COMPLETION_TOKENS, [r.completion_tokens for r in rows])
    )
