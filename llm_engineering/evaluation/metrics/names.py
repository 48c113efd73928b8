"""The judge-free metrics' names: the config's `metrics:` values, the CLI's `--metric`, the gates' and every table's
names. Imports nothing, so the command line's `--help` stays instant."""

from __future__ import annotations

from typing import Literal

MetricName = Literal["reference_words", "token_f1", "rouge_l", "exact_match", "chrf", "bleu", "reference_facts", "math",
                     "similarity"]
# In the order the tables show them: the first two measured lead the console's table. The share of the reference's
# content words first: on labelled pairs with references it agreed with people more often than the default judge.
METRICS: tuple[MetricName, ...] = ("reference_words", "token_f1", "rouge_l", "exact_match", "chrf", "bleu",
                                   "reference_facts", "math", "similarity")
# Read from the answer and the reference alone (similarity needs the embedding model: `trust.similarity`).
REFERENCE_METRICS: tuple[MetricName, ...] = METRICS[:-1]
SIMILARITY: MetricName = "similarity"

# What each is, in a table's or a page's words.
METRIC_TEXT: dict[str, str] = {
    "reference_words": "share of the reference's content words in the answer",
    "token_f1": "token F1 with the reference (SQuAD normalisation)",
    "rouge_l": "ROUGE-L F-measure (rouge-score, Porter stemming)",
    "exact_match": "exact match with the reference (SQuAD normalisation)",
    "chrf": "chrF (sacrebleu), 0-1",
    "bleu": "sentence BLEU (sacrebleu), 0-1",
    "reference_facts": "share of the reference's names and numbers in the answer",
    "math": "the answer's final value equals the reference's (math-verify)",
    "similarity": "cosine similarity of answer and reference embeddings (all-MiniLM-L6-v2)",
}
