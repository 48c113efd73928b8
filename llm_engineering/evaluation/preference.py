"""One preference between two answers, wherever it comes from: `A` (the first), `B` (the second) or `tie`.

A judge's pairwise verdict, a person's label in the report, a human-labelled pairs file (written 1, 2 or 0 there)
and the rules that need no judge all give one. `None` is a decision that could not be made (a failed verdict).
"""

from __future__ import annotations

from typing import Any, Optional, Sized, overload

from llm_engineering.evaluation.stored.pairwise import Preference

PREFERENCES: tuple[Preference, ...] = ("A", "B", "tie")
# A pairs file's numbers: 1 the first output, 2 the second, 0 a tie.
_NUMBERS: dict[str, Preference] = {"1": "A", "2": "B", "0": "tie"}
_POINTS: dict[str, float] = {"A": 1.0, "tie": 0.5, "B": 0.0}


@overload
def compare(a: float, b: float) -> Preference: ...
@overload
def compare(a: Optional[float], b: Optional[float]) -> Optional[Preference]: ...
def compare(a: Optional[float], b: Optional[float]) -> Optional[Preference]:
    """The higher of two figures (scores, lengths, probabilities); None when either is missing."""
    if a is None or b is None:
        return None
    return "A" if a > b else "B" if b > a else "tie"


def longer(a: Sized | int, b: Sized | int) -> Preference:
    """The rule that needs no judge: the longer answer is the better one (texts, or their lengths in characters)."""
    preference = compare(a if isinstance(a, int) else len(a), b if isinstance(b, int) else len(b))
    assert preference is not None
    return preference


def points(preference: Preference) -> float:
    """The first answer's points by a preference: 1 a win, 0.5 a tie, 0 a loss."""
    return _POINTS[preference]


def swapped(preference: Optional[Preference]) -> Optional[Preference]:
    """The same preference with the two answers shown the other way round."""
    return {"A": "B", "B": "A"}.get(preference, preference) if preference else None  # type: ignore[return-value]


def read(value: Any) -> Optional[Preference]:
    """A preference written in a file: A, B or tie, or 1, 2 or 0 (human pairs files); None if it is neither."""
    if isinstance(value, bool):
        return None
    text = str(value).strip() if isinstance(value, (int, str)) else ""
    return _NUMBERS.get(text) or (text if text in PREFERENCES else None)
