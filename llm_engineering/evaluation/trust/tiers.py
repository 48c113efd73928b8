"""The judge report card's tiers: for each sampled row, a worse answer built from the test split itself.

The reference answer is right by construction; each tier makes a wrong or weaker one, from easy to
hard to tell apart. A judge worth trusting scores the reference higher in every tier:

- mismatch: another sampled row's reference (a fixed derangement): off topic, easy;
- same_topic: the reference of the row whose reference is nearest by embedding: a hard negative;
- truncated: the reference cut to its first third of words: incomplete;
- corrupted: the reference with its numbers and names swapped for other rows': fluent, on topic, wrong.
"""

from __future__ import annotations

import random
import re
from typing import Literal, Optional, Sequence

import numpy as np

from llm_engineering.evaluation.rates import derangement

Tier = Literal["mismatch", "same_topic", "truncated", "corrupted"]
TIERS: tuple[Tier, ...] = ("mismatch", "same_topic", "truncated", "corrupted")

# A number (3, 4.5, 70%, 1,000) or a name-like token: a word holding a capital letter or a digit past its
# first character (LoRA, vLLM, GPT-4, H100), which in technical prose marks models, tools and units.
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")
_FACT = re.compile(r"\b\d+(?:[.,]\d+)*%?(?!\w)|\b\d[\w-]*[A-Za-z][\w-]*\b|\b[A-Za-z][\w-]*?[A-Z0-9][\w-]*\b")


def mismatched(sample: Sequence[int], seed: int) -> list[int]:
    """For each sampled row, another sampled row (a fixed derangement)."""
    return [sample[j] for j in derangement(len(sample), seed)]


def nearest_other(embeddings: np.ndarray, sample: Sequence[int]) -> list[int]:
    """For each sampled row, the row (of all rows) whose embedding is nearest by cosine, itself excluded."""
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True).clip(min=1e-12)
    similarity = unit[list(sample)] @ unit.T
    similarity[np.arange(len(sample)), list(sample)] = -np.inf
    return [int(i) for i in similarity.argmax(axis=1)]


def truncated(text: str) -> str:
    """The first third of the words (at least one)."""
    words = text.split()
    return " ".join(words[: max(1, len(words) // 3)])


def facts(text: str) -> list[str]:
    """The numbers and name-like tokens of a text, in order."""
    return [m.group() for m in _FACT.finditer(text)]


def corrupted(text: str, donors: Sequence[str], seed: int) -> Optional[str]:
    """`text` with each number and name swapped for one of another text's (numbers for numbers);
    None when it has none, or no donor offers a different one."""
    rng = random.Random(seed)
    pool = [f for donor in donors for f in facts(donor)]
    numbers = sorted({f for f in pool if _NUMBER.fullmatch(f)})
    names = sorted({f for f in pool if not _NUMBER.fullmatch(f)})
    changed = False

    def swap(match: re.Match) -> str:
        nonlocal changed
        own = match.group()
        choices = [f for f in (numbers if _NUMBER.fullmatch(own) else names) if f != own]
        if not choices:
            return own
        changed = True
        return rng.choice(choices)

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
