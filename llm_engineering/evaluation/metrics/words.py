"""Words, names and numbers of a text: what the report card's rules, the reference metrics and judge-bench's baselines
count, written once.

- content words: lower-case words of three or more letters or digits, the words every text shares left out;
- facts: numbers (3, 4.5, 70%, 1,000) and name-like tokens (a word holding a capital letter or a digit past its first
  character: LoRA, vLLM, GPT-4, H100), which in technical prose mark models, tools and units.
"""

from __future__ import annotations

import re
from typing import Optional

# Words that every instruction and answer share, whatever they are about.
_FUNCTION_WORDS = frozenset(
    "the and for with are its this that what why how which who when from into about your you can does would "
    "explain describe give list name mention few some one two three".split())


def content_words(text: str) -> set[str]:
    """Lower-case words of three or more letters or digits, function words left out."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in _FUNCTION_WORDS}


# A number (3, 4.5, 70%, 1,000) or a name-like token: a word holding a capital letter or a digit past its
# first character (LoRA, vLLM, GPT-4, H100), which in technical prose marks models, tools and units.
NUMBER = re.compile(r"\d+(?:[.,]\d+)*%?")
FACT = re.compile(r"\b\d+(?:[.,]\d+)*%?(?!\w)|\b\d[\w-]*[A-Za-z][\w-]*\b|\b[A-Za-z][\w-]*?[A-Z0-9][\w-]*\b")


def facts(text: str) -> list[str]:
    """The numbers and name-like tokens of a text, in order."""
    return [m.group() for m in FACT.finditer(text)]


def word_share(reference: str, answer: str) -> Optional[float]:
    """The share of the reference's content words that the answer holds; None for a reference without any."""
    known = content_words(reference)
    return len(known & content_words(answer)) / len(known) if known else None


def fact_share(reference: str, answer: str) -> Optional[float]:
    """The share of the reference's names and numbers (`facts`, as written) that the answer holds; None for a
    reference without any."""
    known = set(facts(reference))
    return len(known & set(facts(answer))) / len(known) if known else None
