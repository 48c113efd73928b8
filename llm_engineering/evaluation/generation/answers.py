"""Answer generation: every prompt of a model in one engine call, each answer saved as it finishes.

All prompts go to the engine at once (with vLLM: one continuous batch), and the engine yields each
answer as it finishes, so it is appended to the checkpoint immediately: a crash or Ctrl-C loses
nothing, and the next run generates only the rows that are missing. The engine is any
`GenerationEngine` (in-process vLLM, Ray Data LLM replicas), handed in by the caller.

Conversations (`generation.conversation_rows`) go turn by turn: every first turn in one engine call, then every
second turn, whose prompt holds the model's own answer to the first (of the same sample), and so on. A turn's prompt
is keyed in the checkpoint like any other, so a resumed first answer gives the same second prompt, and its saved
answer is found. Each engine call asks for every answer whose earlier turns are known by then, resumed ones included:
a run resumed after a kill asks for the missing first turns and the second turns of the resumed first ones at once
(with Ray, one set of replicas instead of two).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from datasets import Dataset, List

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint, AnswerRecord, CheckpointWriter, row_key
from llm_engineering.evaluation.generation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.generation.conversation_rows import MESSAGE
from llm_engineering.evaluation.generation.engine import GenerationEngine, Tokenizer
from llm_engineering.evaluation.generation.prompts import chat_prompt, conversation_prompt, effective_template
from llm_engineering.evaluation.stored.generation import GenerationStats

logger = logging.getLogger(__name__)


@dataclass
class _Units:
    """One unit of work per answer: answer u is sample `samples[u]` of row `rows_of[u]`, asked once the units of the
    model's own earlier answers its prompt holds (`needs[u]`) are answered. Its prompt, the conversation before it
    (`histories`), its prompt's tokens and its checkpoint key are set when its turn comes."""

    ids: list[str]
    rows_of: list[int]
    samples: list[int]
    needs: list[list[int]]
    by_turn: dict[tuple[str, int, int], int]  # (conversation id, turn, sample) -> its unit, in conversations
    prompts: dict[int, str] = field(default_factory=dict)
    histories: dict[int, list[dict[str, str]]] = field(default_factory=dict)
    lengths: dict[int, int] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)

    def row_id(self, u: int) -> str:
        return self.ids[self.rows_of[u]]

    def ready(self, waiting: list[int], records: dict[int, AnswerRecord]) -> list[int]:
        return [u for u in waiting if all(earlier in records for earlier in self.needs[u])]


@dataclass
class _Tally:
    """What the engine did over every round: answers resumed, those asked for, its seconds."""

    resumed: int = 0
    asked: list[int] = field(default_factory=list)
    seconds: float = 0.0


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
    side by side (`sample` 0..n-1). Conversations go turn by turn (see the module doc).
    """
    units = _units(test_split, sampling)
    rows = test_split.to_dict()
    tokenizer = engine.get_tokenizer()
    records: dict[int, AnswerRecord] = {}
    tally = _Tally()
    waiting = list(range(len(units.rows_of)))
    with _held(checkpoint, fresh) as (stored, writer):
        while waiting:
            todo: list[int] = []
            resumed: list[int] = []
            while ready := units.ready(waiting, records):  # a resumed answer readies the turn after it at once
                _prompt(units, ready, rows, records, tokenizer, prompt)
                records.update(_skipped(units, ready, max_model_len))
                found = [u for u in ready if u not in records and units.keys[u] in stored]
                records.update({u: stored[units.keys[u]] for u in found})
                todo, resumed, taken = todo + ready, resumed + found, set(ready)
                waiting = [u for u in waiting if u not in taken]
            turns = sorted({1 + len(units.needs[u]) for u in todo})
            label = "Resuming" if not any(units.needs) else f"Resuming turn{'s' * (len(turns) > 1)} " + \
                ", ".join(map(str, turns))
            _generate(engine, units, todo, resumed, records, sampling=sampling, writer=writer, tally=tally,
                      label=label, checkpoint=checkpoint)
    generations = _generations(test_split, units, records, model_id=model_id, sampling=sampling)
    answers = [records[u] for u in range(len(units.rows_of))]
    skipped = sum(r.finish_reason == col.PROMPT_TOO_LONG for r in answers)
    new_tokens, seconds = sum(records[u].completion_tokens for u in tally.asked), tally.seconds
    stats = GenerationStats(
        model_id=model_id,
        rows=len(answers),
        samples=sampling.n,
        skipped=skipped,
        prompt_tokens=sum(r.prompt_tokens for r in answers),
        completion_tokens=sum(r.completion_tokens for r in answers),
        seconds=round(seconds, 3),
        tokens_per_second=round(new_tokens / seconds, 2) if tally.asked and seconds else 0.0,
        prompts_per_second=round(len(tally.asked) / seconds, 3) if tally.asked and seconds else 0.0,
        resumed=tally.resumed,
        generated=len(tally.asked),
    )
    logger.info("%s: %d answers generated (%.1f output tokens/s), %d resumed, %d skipped",
                model_id, len(tally.asked), stats.tokens_per_second, tally.resumed, skipped // sampling.n)
    return generations, stats


def _units(test_split: Dataset, sampling: SamplingConfig) -> _Units:
    """The answers to make: each row's samples, and the answers of the same sample that each one's prompt holds."""
    ids = [str(row_id) for row_id in test_split[col.ID]]
    rows_of = [i for i in range(len(ids)) for _ in range(sampling.n)]
    samples = [s for _ in range(len(ids)) for s in range(sampling.n)]
    units = _Units(ids, rows_of, samples, [[] for _ in rows_of], {})
    if col.CONVERSATION_ID in test_split.column_names:
        conversations, turns = test_split[col.CONVERSATION_ID], test_split[col.TURN]
        units.by_turn = {(conversations[i], turns[i], s): u for u, (i, s) in enumerate(zip(rows_of, samples))}
        histories = test_split[col.HISTORY]
        units.needs = [_earlier(units, conversations[i], histories[i], s) for i, s in zip(rows_of, samples)]
    return units


def _earlier(units: _Units, conversation: str, history: list[dict[str, Any]], sample: int) -> list[int]:
    """The units of the model's own answers (of `sample`) that `history` holds: the turns its assistant messages
    without content follow."""
    found: list[int] = []
    turn = 0
    for message in history:
        turn += message["role"] == "user"
        if message["role"] == "assistant" and message["content"] is None:
            earlier = units.by_turn.get((conversation, turn, sample))
            if earlier is None:
                raise ValueError(f"Turn {turn} of conversation {conversation!r} is not in the test split: a later turn "
                                 f"needs the model's answer to it; keep every turn of a conversation.")
            found.append(earlier)
    return found


@contextlib.contextmanager
def _held(checkpoint: Optional[AnswerCheckpoint], fresh: bool
          ) -> Iterator[tuple[dict[str, AnswerRecord], Optional[CheckpointWriter]]]:
    """The checkpoint's saved answers and its writer, held for this run (a run with the same checkpoint generating
    now: wait for it, then reuse its answers)."""
    if checkpoint is None:
        yield {}, None
        return
    with checkpoint.exclusive():
        if fresh:
            checkpoint.reset()
        stored = checkpoint.load()
        with checkpoint.writer() as writer:
            yield stored, writer


def _history(units: _Units, u: int, rows: dict[str, list[Any]], records: dict[int, AnswerRecord]) -> list[dict[str, str]]:
    """The conversation before answer u's user message, each of the model's own earlier answers filled in: the answer
    of the same sample to the turn that assistant message follows (`_earlier`, in order)."""
    if col.HISTORY not in rows:
        return []
    earlier = iter(units.needs[u])
    return [{"role": m["role"], "content": records[next(earlier)].answer if m["role"] == "assistant" and
             m["content"] is None else m["content"]} for m in rows[col.HISTORY][units.rows_of[u]]]


def _prompt(units: _Units, todo: list[int], rows: dict[str, list[Any]], records: dict[int, AnswerRecord],
            tokenizer: Tokenizer, prompt: PromptConfig) -> None:
    """Set the prompts of `todo` as the model reads them (the Alpaca template, or the model's chat template), with
    the conversation so far where there is one, their lengths and checkpoint keys."""
    template = effective_template(prompt.template, tokenizer)
    for u in todo:
        i = units.rows_of[u]
        history = units.histories[u] = _history(units, u, rows, records)
        if history:
            text = conversation_prompt(history, rows[col.INSTRUCTION][i], template, tokenizer, prompt.system_prompt)
        elif template == "alpaca":
            text = rows[col.PROMPT][i]
        else:
            text = chat_prompt(tokenizer, rows[col.INSTRUCTION][i], prompt.system_prompt)
        units.prompts[u] = text
        units.keys[u] = row_key(units.ids[i], text, units.samples[u])
    lengths = tokenizer([units.prompts[u] for u in todo], add_special_tokens=False)["input_ids"] if todo else []
    units.lengths.update({u: len(tokens) for u, tokens in zip(todo, lengths)})


def _skipped(units: _Units, todo: list[int], max_model_len: int) -> dict[int, AnswerRecord]:
    """The answers not asked for: a prompt that leaves no room for an answer."""
    records = {u: AnswerRecord(answer="", finish_reason=col.PROMPT_TOO_LONG, prompt_tokens=units.lengths[u],
                               completion_tokens=0)
               for u in todo if units.lengths[u] >= max_model_len}
    if records:
        logger.warning(
            "%d prompt(s) are longer than max_model_len=%d and are skipped (finish_reason %r on their rows); raise "
            "engine.max_model_len to include them.", len({units.rows_of[u] for u in records}), max_model_len,
            col.PROMPT_TOO_LONG,
        )
    return records


def _generate(engine: GenerationEngine, units: _Units, todo: list[int], resumed: list[int],
              records: dict[int, AnswerRecord], *, sampling: SamplingConfig, writer: Optional[CheckpointWriter],
              tally: _Tally, label: str, checkpoint: Optional[AnswerCheckpoint]) -> None:
    """Fill `records` for the answers of `todo` not resumed from the checkpoint (`resumed`) nor skipped with the
    engine's, in one call, each saved as it comes; `tally` counts them."""
    asked = {u: units.prompts[u] for u in todo if u not in records}
    if checkpoint and resumed:  # answers are resumed from a checkpoint only
        logger.info("%s: %d of %d answers are in %s; generating the other %d.",
                    label, len(resumed), len(todo), checkpoint.path, len(asked))
    started = time.perf_counter()
    if asked:  # everything resumed from the checkpoint: ask the engine for nothing (no Ray replica starts)
        with contextlib.closing(engine.generate(asked, sampling, {u: units.samples[u] for u in asked})) as answers:
            for u, record in answers:
                if u in records:
                    raise RuntimeError(f"The engine answered row {units.row_id(u)!r} (sample {units.samples[u]}) "
                                       f"twice; every prompt must be answered once.")
                records[u] = record
                if writer:
                    writer.append(units.keys[u], units.row_id(u), record, units.samples[u])
    tally.seconds += time.perf_counter() - started
    tally.resumed += len(resumed)
    tally.asked += list(asked)
    missing = sorted({units.row_id(u) for u in asked if u not in records})
    if missing:  # what was answered is saved: a re-run asks only for these
        raise RuntimeError(f"The engine returned no answer for {len(missing)} row(s) (ids {missing[:5]}); "
                           f"run the same command again to generate only those.")


def _generations(test_split: Dataset, units: _Units, records: dict[int, AnswerRecord], *, model_id: str,
                 sampling: SamplingConfig) -> Dataset:
    """The `generations` artifact: the split's rows with their prompts as sent (and, in conversations, the
    conversation before each with the model's own answers), one row per answer."""
    count = len(units.rows_of)
    answers = [records[u] for u in range(count)]
    generations = test_split.remove_columns([c for c in (col.PROMPT, col.HISTORY) if c in test_split.column_names])
    if sampling.n > 1:
        generations = generations.select(units.rows_of).flatten_indices()
    generations = generations.add_column(col.PROMPT, [units.prompts[u] for u in range(count)])
    if col.HISTORY in test_split.column_names:
        generations = generations.add_column(col.HISTORY, [units.histories[u] for u in range(count)],
                                             feature=List(MESSAGE))
    return (
        generations.add_column(col.SAMPLE, units.samples)
        .add_column(col.MODEL_ID, [model_id] * count)
        .add_column(col.ANSWER, [r.answer for r in answers])
        .add_column(col.FINISH_REASON, [r.finish_reason for r in answers])
        .add_column(col.PROMPT_TOKENS, [r.prompt_tokens for r in answers])
        .add_column(col.COMPLETION_TOKENS, [r.completion_tokens for r in answers])
    )
