"""Worse answers a word count cannot see: the same words, one meaning changed (the report card's `relation_swap` and
`negation` tiers).

Each function returns every candidate it can make of a text, in a fixed order; the card keeps, per row, the first
candidate that no judge-free rule orders below the right answer (`trust.rules`), so a tier built of them is one that
the rules fail by construction and only a judge that reads what the answer says can pass.

- `relation_swaps`: two names or two numbers of the text exchange places everywhere they occur ("LoRA freezes the
  base, QLoRA quantizes it" -> "QLoRA freezes the base, LoRA quantizes it"): the same words, names and numbers, the
  relations wrong.
- `negations`: one statement's polarity flipped ("is" -> "is not", "increases" -> "decreases", "before" -> "after",
  "cannot" -> "can"...), at one place.
"""

from __future__ import annotations

import re

from llm_engineering.evaluation.metrics.words import FACT, NUMBER

# Word pairs whose exchange flips a statement: each direction is tried. Lower case; the text's case is kept.
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("increases", "decreases"), ("increase", "decrease"), ("increased", "decreased"), ("increasing", "decreasing"),
    ("raises", "lowers"), ("higher", "lower"), ("more", "less"), ("larger", "smaller"), ("faster", "slower"),
    ("before", "after"), ("always", "never"), ("enables", "disables"), ("enable", "disable"), ("with", "without"),
    ("same", "different"), ("first", "last"), ("allows", "prevents"), ("reduces", "increases"), ("reduce", "increase"),
    ("cheaper", "costlier"), ("better", "worse"), ("most", "least"), ("many", "few"), ("inside", "outside"),
    ("encoder", "decoder"), ("input", "output"), ("read", "write"), ("true", "false"), ("static", "dynamic"),
)
# Verbs that take "not" after them, and the contractions and forms that undo it.
_NEGATABLE = ("is", "are", "was", "were", "can", "does", "do", "should", "must", "will", "has", "have")
# The wordings of a negation after such a verb, the plainest first.
NEGATIONS = ("not", "never", "in no way", "by no means")
_UNDO = {"cannot": "can", "can't": "can", "isn't": "is", "aren't": "are", "doesn't": "does", "don't": "do",
         "won't": "will", "shouldn't": "should", "mustn't": "must"}


def _fact_kind(fact: str) -> str:
    return "number" if NUMBER.fullmatch(fact) else "name"


def relation_swaps(text: str) -> list[str]:
    """`text` with two distinct names (or two distinct numbers) exchanged at every occurrence, one candidate per pair,
    in the order the pair's first member first occurs; none where the text has fewer than two of a kind."""
    seen: dict[str, str] = {}
    for match in FACT.finditer(text):
        seen.setdefault(match.group(), _fact_kind(match.group()))
    facts = list(seen)
    candidates = []
    for i, a in enumerate(facts):
        for b in facts[i + 1:]:
            if seen[a] != seen[b] or a.lower() == b.lower():
                continue

            def exchange(match: re.Match, a: str = a, b: str = b) -> str:
                return {a: b, b: a}.get(match.group(), match.group())

            candidates.append(FACT.sub(exchange, text))
    return [c for c in candidates if c != text]


def _with_case(word: str, like: str) -> str:
    return word.capitalize() if like[:1].isupper() else word


def negations(text: str) -> list[str]:
    """`text` with one statement's polarity flipped at one place, one candidate per place and wording: a negation
    after a verb that takes one ("is" -> "is not", "is never", "is in no way", "is by no means": each wording at every
    place before the next, the plainest first), a negation undone ("is not" -> "is", "cannot" -> "can"), an antonym
    exchanged. Several wordings of one negation differ in length, so that the longer answer is not always the right
    one (the card drops a pair a rule orders)."""
    inserted: dict[str, list[str]] = {wording: [] for wording in NEGATIONS}
    others = []
    for match in re.finditer(r"\b[A-Za-z']+\b", text):
        word, start, end = match.group(), match.start(), match.end()
        lower = word.lower()
        if lower in _NEGATABLE:
            if re.match(r"\s+not\b", text[end:end + 5]):  # "is not" -> "is"
                others.append(text[:end] + re.sub(r"^\s+not\b", "", text[end:], count=1))
            else:
                for wording in NEGATIONS:
                    negated = "cannot" if lower == "can" and wording == "not" else f"{word} {wording}"
                    inserted[wording].append(text[:start] + _with_case(negated, word) + text[end:])
        flips = [b if lower == a else a for a, b in ANTONYMS if lower in (a, b)]
        if lower in _UNDO:
            flips.append(_UNDO[lower])
        others += [text[:start] + _with_case(flip, word) + text[end:] for flip in dict.fromkeys(flips)]
    candidates = [c for wording in NEGATIONS for c in inserted[wording]] + others
    return [c for c in dict.fromkeys(candidates) if c != text]
