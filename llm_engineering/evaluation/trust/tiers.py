"""The judge report card's tiers: for each sampled row, a worse answer built from the test split itself.

The reference answer is right by construction; each tier makes a wrong or weaker one. A judge worth trusting
scores the right answer higher in every tier. The harder tiers are built so that the judge-free rules
(`trust.rules`: the longer answer, more of the instruction's words) cannot pass them: a judge has to read what
the answer says.

- mismatch: another sampled row's reference (a fixed derangement): an answer to another question; the sanity
  floor, which instruction-word overlap passes too;
- same_topic: another row's reference that holds the most of this row's reference's content words (the next ones
  tried where a rule orders the first below the right answer): an answer to a neighbouring question that shares
  what a word count reads;
- truncated: an answer that never makes its point: the instruction echoed and the reference's first third,
  looping to the right answer's length (a small model's loop), so it is neither shorter nor lacks the question's
  words;
- corrupted: the right answer with the numbers and names it adds (not those the instruction names) swapped for
  other rows' (of the same length where one is): fluent, on topic, as long, worded as the right answer, wrong;
- relation_swap, negation: the reference with two of its names or numbers exchanged, or one statement negated
  (`trust.minimal_pairs`), else the right answer so changed: the same words, a meaning changed. Where the judge is
  shown the reference, the right answer is its rewording, and a worse answer made of the reference is worded as the
  reference itself: a judge that matches words prefers it.

same_topic, relation_swap and negation are the tiers no rule can pass: of each row's candidates the card keeps the
first that no judge-free rule orders below the right answer (`FILTERED_TIERS`), and says how many it dropped.
"""

from __future__ import annotations

import random
import re
from typing import Literal, Optional, Sequence

from llm_engineering.evaluation.metrics.words import FACT, NUMBER, content_words, facts
from llm_engineering.evaluation.rates import derangement

Tier = Literal["mismatch", "same_topic", "truncated", "corrupted", "relation_swap", "negation"]
TIERS: tuple[Tier, ...] = ("mismatch", "same_topic", "truncated", "corrupted", "relation_swap", "negation")
# The tiers whose pairs no judge-free rule may order: a candidate a rule orders is dropped, the next one tried.
FILTERED_TIERS: tuple[Tier, ...] = ("same_topic", "relation_swap", "negation")
SAME_TOPIC_CANDIDATES = 5

_NUMBER, _FACT = NUMBER, FACT


def mismatched(sample: Sequence[int], seed: int) -> list[int]:
    """For each sampled row, another sampled row (a fixed derangement)."""
    return [sample[j] for j in derangement(len(sample), seed)]


def same_topic(references: Sequence[str], sample: Sequence[int], k: int = SAME_TOPIC_CANDIDATES) -> list[list[int]]:
    """For each sampled row, the `k` other rows (of all rows) whose references hold the most of its reference's content
    words, most first (the lower row first on a tie)."""
    words = [content_words(reference) for reference in references]
    return [sorted((j for j in range(len(references)) if j != i), key=lambda j: (-len(words[i] & words[j]), j))[:k]
            for i in sample]


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
