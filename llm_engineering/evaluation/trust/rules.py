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
- distinct_words: the higher share of distinct words (an answer that loops repeats itself);
- the reference metrics (`metrics.reference`): the answer a metric scores higher against the reference, for token
  F1, ROUGE-L, exact match, chrF, BLEU and the final value of a math answer (the shares of the reference's words and
  of its names and numbers order as the two counts above do), and, with an embedder, the embedding's similarity.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

from llm_engineering.evaluation import preference
from llm_engineering.evaluation.metrics.names import MetricName
from llm_engineering.evaluation.metrics.reference import reference_metric
from llm_engineering.evaluation.metrics.words import content_words, facts
from llm_engineering.evaluation.preference import compare

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


def _metric_rule(name: MetricName) -> Callable[..., int]:
    def rule(instruction: str, right: str, wrong: str, reference: Optional[str] = None) -> int:
        """The answer the metric scores higher against the reference is the better one (a tie where it does not
        apply)."""
        a, b = reference_metric(name, right, reference or ""), reference_metric(name, wrong, reference or "")
        return 0 if a is None or b is None else _order(a, b)

    return rule


Rule = Callable[..., int]  # (instruction, right, wrong, reference=None) -> +1, 0, -1
METRIC_RULES: tuple[MetricName, ...] = ("token_f1", "rouge_l", "exact_match", "chrf", "bleu", "math")
RULES: dict[str, Rule] = {"longer": longer, "instruction_overlap": instruction_overlap,
                          "reference_overlap": reference_overlap, "reference_facts": reference_facts,
                          "distinct_words": distinct_words, **{name: _metric_rule(name) for name in METRIC_RULES}}
SIMILARITY = "similarity"  # the embedding's rule: computed where the caller has an embedder
NEEDS_REFERENCE = frozenset({"reference_overlap", "reference_facts", *METRIC_RULES, SIMILARITY})
RULE_NAMES = {"longer": "the longer answer", "instruction_overlap": "more of the instruction's words",
              "reference_overlap": "more of the reference's words",
              "reference_facts": "more of the reference's names and numbers",
              "distinct_words": "more distinct words (less repetition)",
              "token_f1": "the higher token F1", "rouge_l": "the higher ROUGE-L", "exact_match": "an exact match",
              "chrf": "the higher chrF", "bleu": "the higher BLEU", "math": "the reference's final value",
              SIMILARITY: "the embedding nearer the reference"}


def rule_orders(instruction: str, right: str, wrong: str, reference: Optional[str],
                embedder: Optional[Any] = None, *, until_one_orders: bool = False) -> dict[str, int]:
    """Each rule's order of the two answers; the rules that read the reference only where there is one, the
    embedding's only with an `embedder` (a sentence embedder's `encode`: unit vectors). `until_one_orders`: leave the
    embedding's out where another rule already puts the right answer above (the costly one, for a caller that only
    asks whether any rule does)."""
    orders = {name: rule(instruction, right, wrong, reference) for name, rule in RULES.items()
              if reference is not None or name not in NEEDS_REFERENCE}
    if until_one_orders and 1 in orders.values():
        return orders
    if embedder is not None and reference is not None:
        a, b, ref = embedder.encode([right, wrong, reference])
        orders[SIMILARITY] = _order(round(float(a @ ref), 4), round(float(b @ ref), 4))
    return orders
