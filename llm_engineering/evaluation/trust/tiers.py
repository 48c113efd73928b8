"""The judge report card's tiers: for each sampled row, a worse answer built from the test split itself.

The reference answer is right by construction; each tier makes a wrong or weaker one. A judge worth trusting
scores the right answer higher in every tier. The harder tiers are built so that the judge-free rules
(`trust.rules`: the longer answer, more of the instruction's words) cannot pass them: a judge has to read what
the answer says.

- mismatch: another sampled row's reference (a fixed derangement): an answer to another question; the sanity
  floor, which instruction-word overlap passes too;
- same_topic: of the five other references nearest by embedding, the nearest that holds as many of the
  instruction's words as the right answer (else the one holding most): an answer to a neighbouring question that
  looks as much like an answer to this one;
- truncated: an answer that never makes its point: the instruction echoed and the reference's first third,
  looping to the right answer's length (a small model's loop), so it is neither shorter nor lacks the question's
  words;
- corrupted: the right answer with the numbers and names it adds (not those the instruction names) swapped for
  other rows' (of the same length where one is): fluent, on topic, as long, worded as the right answer, wrong.
"""

from __future__ import annotations

import random
import re
from typing import Literal, Optional, Sequence

import numpy as np

from llm_engineering.evaluation.rates import derangement
from llm_engineering.evaluation.metrics.words import FACT, NUMBER, content_words, facts

Tier = Literal["mismatch", "same_topic", "truncated", "corrupted"]
TIERS: tuple[Tier, ...] = ("mismatch", "same_topic", "truncated", "corrupted")
SAME_TOPIC_CANDIDATES = 5

_NUMBER, _FACT = NUMBER, FACT


def mismatched(sample: Sequence[int], seed: int) -> list[int]:
    """For each sampled row, another sampled row (a fixed derangement)."""
    return [sample[j] for j in derangement(len(sample), seed)]


def nearest_other(embeddings: np.ndarray, sample: Sequence[int]) -> list[int]:
    """For each sampled row, the row (of all rows) whose embedding is nearest by cosine, itself excluded."""
    return [candidates[0] for candidates in _nearest(embeddings, sample, 1)]


def _nearest(embeddings: np.ndarray, sample: Sequence[int], k: int) -> list[list[int]]:
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True).clip(min=1e-12)
    similarity = unit[list(sample)] @ unit.T
    similarity[np.arange(len(sample)), list(sample)] = -np.inf
    return [[int(j) for j in np.argsort(-row, kind="stable")[:k] if j != i] for i, row in zip(sample, similarity)]


def same_topic(embeddings: np.ndarray, sample: Sequence[int], *, instructions: Sequence[str],
               references: Sequence[str], right: Sequence[str], k: int = SAME_TOPIC_CANDIDATES) -> list[int]:
    """For each sampled row, of the `k` other rows whose references are nearest by cosine, the nearest whose reference
    holds as many of the row's instruction words as its right answer (`right`, one per sampled row) does; where none
    does, the one that holds most (the nearest of those on a tie)."""
    chosen = []
    for i, answer, candidates in zip(sample, right, _nearest(embeddings, sample, k)):
        asked = content_words(instructions[i])
        held = {j: len(asked & content_words(references[j])) for j in candidates}
        enough = [j for j in candidates if held[j] >= len(asked & content_words(answer))]
        chosen.append(enough[0] if enough else max(candidates, key=lambda j: (held[j], -candidates.index(j))))
    return chosen


def truncated(text: str) -> str:
    """The first third of the words (at least one)."""
    words = text.split()
    return " ".join(words[: max(1, len(words) // 3)])


def unfinished(instruction: str, reference: str, length: Optional[int] = None) -> str:
    """The instruction echoed and the reference's first third, looping until the text is about `length` characters
    long (whole words; default the reference's length): an answer that never makes its point."""
    target = len(reference) if length is None else length
    loop = instruction.split() + truncated(reference).split()
    words: list[str] = []
    while len(" ".join(words)) < target:
        words += loop
    cut = min(range(1, len(words) + 1), key=lambda n: abs(len(" ".join(words[:n])) - target))
    return " ".join(words[:cut])


def corrupted(text: str, donors: Sequence[str], seed: int, instruction: str = "") -> Optional[str]:
    """`text` with each number and name that `instruction` does not name swapped for one of another text's
    (numbers for numbers, as long as the original where one is); None when none could be swapped."""
    rng = random.Random(seed)
    asked = content_words(instruction)
    pool = [f for donor in donors for f in facts(donor)]
    numbers = sorted({f for f in pool if _NUMBER.fullmatch(f)})
    names = sorted({f for f in pool if not _NUMBER.fullmatch(f) and not content_words(f) & asked})
    changed = 0

    def swap(match: re.Match) -> str:
        nonlocal changed
        own = match.group()
        if content_words(own) & asked:  # what the question names stays: the answer still looks on topic
            return own
        choices = [f for f in (numbers if _NUMBER.fullmatch(own) else names) if f != own]
        if not choices:
            return own
        changed += 1
        # Of the same length where possible: the text keeps its shape (and the longer-answer rule learns nothing).
        closest = min(abs(len(f) - len(own)) for f in choices)
        return rng.choice([f for f in choices if abs(len(f) - len(own)) == closest])

    result = _FACT.sub(swap, text)
    return result if changed else None


def constructed_labels(ids: Sequence[str], references: Sequence[str], criterion: str) -> list[dict]:
    """Pointwise labels built from the tiers, not by people: they check the wiring of `--labels` and give a judge a
    scale to agree with. Per row: its reference scores 3, the reference cut to its first third 2, the next row's
    reference (off its question) 1."""
    labels = []
    for k, (row_id, reference) in enumerate(zip(ids, references)):
        labels += [{"id": row_id, "answer": reference, "criterion": criterion, "score": 3},
                   {"id": row_id, "answer": truncated(reference), "criterion": criterion, "score": 2},
                   {"id": row_id, "answer": references[(k + 1) % len(references)], "criterion": criterion, "score": 1}]
    return labels
