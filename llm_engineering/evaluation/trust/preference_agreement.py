"""Pairwise labels: a rater's preferences against people's, and the two rules that need no judge.

A tie agrees with a human tie, so on labels with many ties a rater that names no answer (a judge locked on a
position, whose two orders cancel into a tie) scores what the most common preference scores. The agreement on
the decisive labels (people preferred A or B), where a tie is a miss, is therefore reported apart.
"""

from __future__ import annotations

from collections import Counter
from typing import Optional, Sequence

from llm_engineering.evaluation.preference import PREFERENCES, longer
from llm_engineering.evaluation.rates import rate
from llm_engineering.evaluation.stored.labels import PairwiseAgreement
from llm_engineering.evaluation.stored.pairwise import Preference


def pairwise_agreement(judge: Sequence[Optional[str]], human: Sequence[str]) -> PairwiseAgreement:
    """The share of rows where the judge's preference is the human's, over all rows and over the decisive ones, with
    95% Wilson intervals."""
    if len(judge) != len(human):
        raise ValueError(f"{len(judge)} judge preferences for {len(human)} human labels")
    unknown = sorted({p for p in [*judge, *human] if p is not None and p not in PREFERENCES})
    if unknown:
        raise ValueError(f"preferences {unknown} are not among {list(PREFERENCES)}")
    decisive = [(j, h) for j, h in zip(judge, human) if h != "tie"]
    return PairwiseAgreement(rows=len(human), failed=sum(j is None for j in judge),
                             agreement=rate(sum(j == h for j, h in zip(judge, human)), len(human)),
                             agreement_decisive=rate(sum(j == h for j, h in decisive), len(decisive)))


def majority_preference(human: Sequence[str]) -> list[Preference]:
    """The most common human preference for every pair; a tie between counts goes to the first of A, B, tie."""
    counts = Counter(human)
    top = max(PREFERENCES, key=lambda p: counts[p])
    return [top] * len(human)


def longer_preferred(length_a: list[int], length_b: list[int]) -> list[Preference]:
    """The length-only pairwise rule: the longer answer is preferred, a tie when both are as long."""
    if len(length_a) != len(length_b):
        raise ValueError(f"{len(length_a)} lengths of A for {len(length_b)} of B")
    return [longer(a, b) for a, b in zip(length_a, length_b)]
