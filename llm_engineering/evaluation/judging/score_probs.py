"""Probability-weighted scores: the judge's distribution over a criterion's scale at its score token.

An integer verdict from a small judge ties almost everything; the probability the judge gave
each scale value where it wrote the score (G-Eval, deepeval, AlpacaEval) gives an expected
score that separates answers the integer ties. Backends hand over, per generated token, its text
and the top candidates with their logprobs (`TokenChoices`); the score's position is found in
the reply text, and the candidates there that spell a scale value are renormalised. Nothing
here guesses: a score whose distribution cannot be read (no logprobs, a value spread over
several tokens, candidates that spell no value) gets no expected score and a reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional, Sequence

# (sampled token text, [(candidate text, logprob), ...] or None where candidates were not kept)
TokenChoices = tuple[str, Optional[list[tuple[str, float]]]]
TOP_LOGPROBS = 20  # vLLM's default max_logprobs and OpenAI's ceiling


def compact(tokens: Sequence[TokenChoices]) -> list[TokenChoices]:
    """Keep candidates only at the first token (a one-word reply, a checklist item's Yes or No, is read there) and at
    tokens holding a digit (a score is written there): a reply's logprobs shrink from ~20 entries per token to a few
    positions, small enough to cache."""
    return [(text, candidates if candidates is not None and (k == 0 or any(ch.isdigit() for ch in text)) else None)
            for k, (text, candidates) in enumerate(tokens)]


@dataclass(frozen=True)
class ScoreDistribution:
    """Probability of each scale value (min..max) and the expected score, or why there are none."""

    probabilities: Optional[list[float]]
    expected: Optional[float]
    problem: Optional[str] = None


def _unavailable(problem: str) -> ScoreDistribution:
    return ScoreDistribution(None, None, problem)


def _score_offset(text: str, criterion: str) -> Optional[tuple[int, str]]:
    """(char offset, digits) of `criterion`'s score in a JSON reply; keys inside strings are escaped
    (`\\"score\\"`), so only the verdict's own keys match."""
    start = re.search(rf'(?<!\\)"{re.escape(criterion)}"\s*:\s*\{{', text)
    if start is None:
        return None
    score = re.compile(r'(?<!\\)"score"\s*:\s*(\d+)').search(text, start.end())
    return (score.start(1), score.group(1)) if score else None


def score_distribution(
    text: str, tokens: Optional[Sequence[TokenChoices]], *, criterion: str, values: Sequence[int], score: int
) -> ScoreDistribution:
    """The judge's distribution over `values` where it wrote `criterion`'s `score` in `text`.

    Candidates at the score token that spell a scale value (after the same prefix as the sampled
    token, e.g. `:` in a `:3` token) are renormalised over the scale; a value missing from the top
    candidates counts as 0 (with a grammar mask, the allowed values are all among them).
    """
    if not tokens:
        return _unavailable("the judge backend returned no token logprobs")
    found = _score_offset(text, criterion)
    if found is None or int(found[1]) != score:
        return _unavailable(f"the {criterion} score was not found in the reply text")
    offset, digits = found
    return value_distribution(text, tokens, offset=offset, digits=digits, criterion=criterion, values=values)


def value_distribution(
    text: str, tokens: Sequence[TokenChoices], *, offset: int, digits: str, criterion: str, values: Sequence[int]
) -> ScoreDistribution:
    """The judge's distribution over `values` at the number `digits` written at char `offset` of `text` (a
    criterion's score, or any other number a reply holds); `criterion` names it in the reasons."""
    position, index = 0, 0
    while index < len(tokens) and position + len(tokens[index][0]) <= offset:
        position += len(tokens[index][0])
        index += 1
    if index == len(tokens):
        return _unavailable("the token texts do not cover the score (they do not line up with the reply)")
    sampled, candidates = tokens[index]
    if text[position:position + len(sampled)] != sampled:
        return _unavailable("the token texts do not line up with the reply (a multi-byte character before the score?)")
    prefix, own = sampled[:offset - position], sampled[offset - position:]
    if not own.startswith(digits):
        return _unavailable(f"the {criterion} score {digits} is spread over several tokens, so no single token's "
                            f"probabilities cover the scale")
    if candidates is None:
        return _unavailable("no candidate logprobs were kept at the score token")
    mass = {v: 0.0 for v in values}
    multi_digit = any(len(str(v)) > 1 for v in values)
    for candidate, logprob in candidates:
        if not candidate.startswith(prefix):
            continue
        match = re.match(r"\d+", candidate[len(prefix):])
        if match is None:
            continue
        if multi_digit and match.end() == len(candidate) - len(prefix) and any(
                str(v).startswith(match.group()) and str(v) != match.group() for v in values):
            return _unavailable(f"a candidate {match.group()!r} at the {criterion} score token may begin a longer "
                                f"scale value, so its probability cannot be assigned")
        value = int(match.group())
        if value in mass and logprob is not None and logprob > -math.inf:
            mass[value] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return _unavailable(f"no candidate at the {criterion} score token spells a value of the scale")
    probabilities = [mass[v] / total for v in values]
    expected = sum(v * p for v, p in zip(values, probabilities))
    return ScoreDistribution([round(p, 6) for p in probabilities], round(expected, 6))
