"""Judge-free rules: what a report card tier is worth if a rule without a judge passes it as well.

A judge check that a rule without a judge passes as often as the judge proves nothing about the judge. Each rule
orders a right and a wrong answer to one instruction: +1 the right one above, 0 a tie, -1 the wrong one above. A tie
is not a pass, as an integer-score tie is not one for the judge. The rules read what a judge of the same rubric may
read: the instruction, the two answers, and the row's reference (the rules that need it are left out where a row has
none or the rubric does not show it to the judge):

- longer: the longer answer;
- instruction_overlap: more of the instruction's content words;
- reference_overlap: more of the reference's content words;
- reference_facts: more of the reference's names and numbers (`facts`) held;
- distinct_words: the higher share of distinct words (an answer that loops repeats itself).
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from llm_engineering.evaluation import preference
from llm_engineering.evaluation.preference import compare
from llm_engineering.evaluation.metrics.words import content_words, facts

_ORDER = {"A": 1, "tie": 0, "B": -1}  # the right answer (shown as A) above, a tie, the wrong one above


def _order(right: float, wrong: float) -> int:
    return _ORDER[compare(right, wrong)]


def longer(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
    """The longer answer (in characters) is the better one."""
    return _ORDER[preference.longer(right, wrong)]


def instruction_overlap(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
    """The answer holding more of the instruction's content words is the better one."""
    asked = content_words(instruction)
    return _order(len(asked & content_words(right)), len(asked & content_words(wrong)))


def reference_overlap(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
    """The answer holding more of the reference's content words is the better one."""
    known = content_words(reference or "")
    return _order(len(known & content_words(right)), len(known & content_words(wrong)))


def reference_facts(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
    """The answer holding more of the reference's names and numbers is the better one."""
    known = set(facts(reference or ""))
    return _order(len(known & set(facts(right))), len(known & set(facts(wrong))))


def _distinct_share(text: str) -> float:
    words = re.findall(r"\w+", text.lower())
    return len(set(words)) / len(words) if words else 0.0


def distinct_words(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
    """The answer with the higher share of distinct words (repeating itself less) is the better one."""
    return _order(round(_distinct_share(right), 4), round(_distinct_share(wrong), 4))


Rule = Callable[..., int]  # (instruction, right, wrong, reference=None) -> +1, 0, -1
RULES: dict[str, Rule] = {"longer": longer, "instruction_overlap": instruction_overlap,
                          "reference_overlap": reference_overlap, "reference_facts": reference_facts,
                          "distinct_words": distinct_words}
NEEDS_REFERENCE = frozenset({"reference_overlap", "reference_facts"})
RULE_NAMES = {"longer": "the longer answer", "instruction_overlap": "more of the instruction's words",
              "reference_overlap": "more of the reference's words",
              "reference_facts": "more of the reference's names and numbers",
              "distinct_words": "more distinct words (less repetition)"}


def rule_orders(instruction: str, right: str, wrong: str, reference: Optional[str]) -> dict[str, int]:
    """Each rule's order of the two answers; the rules that read the reference only where there is one."""
    return {name: rule(instruction, right, wrong, reference) for name, rule in RULES.items()
            if reference is not None or name not in NEEDS_REFERENCE}
