"""Reference metrics: an answer against its row's reference, no judge. Each is a pure function of the two texts that
returns a score from 0 to 1, or None where it does not apply (`math` on a reference that is no final value, the
word and fact shares on a reference without any).

- exact_match, token_f1: SQuAD's (v1.1 evaluation script): lower case, punctuation and the articles a/an/the removed,
  whitespace collapsed; F1 over the multiset of the two token lists;
- rouge_l: rouge-score's `RougeScorer(["rougeL"], use_stemmer=True)` F-measure (its tokenizer keeps ASCII letters and
  digits only: a text in another script scores 0);
- chrf, bleu: sacrebleu's `sentence_chrf` and `sentence_bleu` (default settings), divided by 100 so every metric reads
  0-1;
- reference_words, reference_facts: the share of the reference's content words, and of its names and numbers, that
  the answer holds (`metrics.words`, the report card's rules' notions);
- math: 1.0 or 0.0, the answer's final value against the reference's (`metrics.math_answers`, math-verify).

The libraries are imported on first use: the report, the CLI and the rules load none of them.
"""

from __future__ import annotations

import re
import string
import sys
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Optional

from llm_engineering.evaluation.metrics.math_answers import math_match
from llm_engineering.evaluation.metrics.names import MetricName
from llm_engineering.evaluation.metrics.words import fact_share, word_share

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def squad_normalize(text: str) -> str:
    """SQuAD's normalisation: lower case, punctuation removed, articles removed, whitespace collapsed."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(answer: str, reference: str) -> float:
    """1.0 where the normalised texts are equal, else 0.0."""
    return float(squad_normalize(answer) == squad_normalize(reference))


def token_f1(answer: str, reference: str) -> float:
    """SQuAD's token F1 of the normalised texts (two empty texts: 1.0; one empty: 0.0)."""
    predicted, gold = squad_normalize(answer).split(), squad_normalize(reference).split()
    if not predicted or not gold:
        return float(predicted == gold)
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from absl import logging as absl_logging
    from rouge_score.rouge_scorer import RougeScorer

    # rouge-score imports absl, whose log handler (attached to no logger) takes the sys.stderr of that moment and closes
    # it when a `logging.config.dictConfig` call shuts every handler down (vLLM's, as an engine starts), unless it is
    # still sys.stderr then: a stream rebound meanwhile (the CLI's quiet console, a test runner's capture) would be
    # closed under its owner. The process's own stderr is never closed by it.
    if sys.__stderr__ is not None:
        absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__
    return RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(answer: str, reference: str) -> float:
    """rouge-score's ROUGE-L F-measure (target: the reference; prediction: the answer)."""
    return float(_rouge_scorer().score(reference, answer)["rougeL"].fmeasure)


def chrf(answer: str, reference: str) -> float:
    """sacrebleu's `sentence_chrf`, divided by 100."""
    from sacrebleu import sentence_chrf

    return sentence_chrf(answer, [reference]).score / 100


def bleu(answer: str, reference: str) -> float:
    """sacrebleu's `sentence_bleu` (exponential smoothing and effective order, its defaults), divided by 100."""
    from sacrebleu import sentence_bleu

    return sentence_bleu(answer, [reference]).score / 100


ReferenceMetric = Callable[[str, str], Optional[float]]  # (answer, reference) -> 0..1, or None: does not apply
REFERENCE_METRIC_FUNCTIONS: dict[MetricName, ReferenceMetric] = {
    "reference_words": lambda answer, reference: word_share(reference, answer),
    "token_f1": token_f1,
    "rouge_l": rouge_l,
    "exact_match": exact_match,
    "chrf": chrf,
    "bleu": bleu,
    "reference_facts": lambda answer, reference: fact_share(reference, answer),
    "math": math_match,
}


def reference_metric(name: MetricName, answer: str, reference: str) -> Optional[float]:
    """The metric `name` of `answer` against `reference`, rounded to 4 decimals (None: it does not apply)."""
    value = REFERENCE_METRIC_FUNCTIONS[name](answer, reference)
    return None if value is None else round(value, 4)
