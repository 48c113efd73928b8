"""Math answers: the answer's final value against the reference's, with math-verify (Hugging Face's grader of
math answers: LaTeX, fractions, sets, intervals, equivalent forms).

math-verify reads the last number of any text, so a reference in prose ("LoRA trains 0.1% of the weights of a 7B
model") would yield a value that is not its answer. A reference counts as a final value only where it is one: a
bare value or expression (`42`, `3/4`, `$\\frac{1}{2}$`, `x = 3`), a text holding `\\boxed{...}`, or a worked answer
ending in GSM8K's `#### 72` (the part after the marker). The answer is read as math-verify reads a model's output (its
last boxed or last value).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Optional

# A word of three or more letters that is not a LaTeX command (\frac, \sqrt): prose, not a value.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_GSM8K_MARKER = "####"
# math-verify bounds its own parsing and comparing with signal.alarm, which only the main thread may set; elsewhere
# (a step run in a thread) it runs without a time limit.
TIMEOUT_S = 5


def final_value_text(reference: str) -> Optional[str]:
    """The part of `reference` that states a final value, or None where it is prose."""
    if "\\boxed" in reference:
        return reference
    _, marker, after = reference.rpartition(_GSM8K_MARKER)
    if marker:
        return after.strip() or None
    text = reference.strip()
    return text if text and not _WORD.search(text) else None


def _timeout() -> Optional[int]:
    return TIMEOUT_S if threading.current_thread() is threading.main_thread() else None


def _parsed(text: str) -> list[Any]:
    from math_verify import parse

    try:
        return parse(text, parsing_timeout=_timeout())
    except Exception:  # math-verify raises on a text it times out on or cannot read: no value
        return []


def math_match(answer: str, reference: str) -> Optional[float]:
    """1.0 where the answer's final value equals the reference's, 0.0 where it differs; None where the reference is
    no final value or either text yields none."""
    value = final_value_text(reference)
    if value is None:
        return None
    gold, predicted = _parsed(value), _parsed(answer)
    if not gold or not predicted:
        return None
    from math_verify import verify

    try:
        return float(verify(gold, predicted, timeout_seconds=_timeout()))
    except Exception:  # a comparison that timed out decides nothing
        return None
