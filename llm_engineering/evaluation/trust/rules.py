"""Judge-free rules: what a report card tier is worth if a rule without a judge passes it as well.

A judge check that the longer answer, or the answer holding more of the instruction's words, passes as
often as the judge proves nothing about the judge. Each rule orders a right and a wrong answer to one
instruction: +1 the right one above, 0 a tie, -1 the wrong one above. A tie is not a pass, as an
integer-score tie is not one for the judge.
"""

from __future__ import annotations

import re
from typing import Callable

from llm_engineering.evaluation import preference
from llm_engineering.evaluation.preference import compare

# Words that every instruction and answer share, whatever they are about.
_FUNCTION_WORDS = frozenset(
    "the and for with are its this that what why how which who when from into about your you can does would "
    "explain describe give list name mention few some one two three".split())


def content_words(text: str) -> set[str]:
    """Lower-case words of three or more letters or digits, function words left out."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _FUNCTION_WORDS}


_ORDER = {"A": 1, "tie": 0, "B": -1}  # the right answer (shown as A) above, a tie, the wrong one above


def _order(right: float, wrong: float) -> int:
    return _ORDER[compare(right, wrong)]


def longer(instruction: str, right: str, wrong: str) -> int:
    """The longer answer (in characters) is the better one."""
    return _ORDER[preference.longer(right, wrong)]


def instruction_overlap(instruction: str, right: str, wrong: str) -> int:
    """The answer holding more of the instruction's content words is the better one."""
    asked = content_words(instruction)
    return _order(len(asked & content_words(right)), len(asked & content_words(wrong)))


Rule = Callable[[str, str, str], int]
RULES: dict[str, Rule] = {"longer": longer, "instruction_overlap": instruction_overlap}
RULE_NAMES = {"longer": "the longer answer", "instruction_overlap": "more of the instruction's words"}
