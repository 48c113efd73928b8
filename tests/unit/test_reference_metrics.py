"""Reference metrics: each against its library's own output on fixed strings, normalisations that a wrong one would
miss, the shares of the reference's words and facts counted by hand, math answers, and the columns the evaluations
store (None without a reference, never 0)."""

import subprocess
import sys

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.metrics.math_answers import final_value_text
from llm_engineering.evaluation.metrics.measure import measure_answers
from llm_engineering.evaluation.metrics.names import METRICS, REFERENCE_METRICS
from llm_engineering.evaluation.metrics.reference import bleu, chrf, exact_match, reference_metric, rouge_l, token_f1

ANSWER = "LoRA fine-tunes a few adapter matrices on one H100, so training costs far less memory."
REFERENCE = "LoRA trains small adapter matrices while the base weights stay frozen, on a single H100 GPU."


def test_rouge_l_chrf_and_bleu_are_their_libraries_own_scores_on_a_0_to_1_scale():
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu import sentence_bleu, sentence_chrf

    assert rouge_l(ANSWER, REFERENCE) == RougeScorer(["rougeL"], use_stemmer=True).score(REFERENCE, ANSWER)["rougeL"].fmeasure
    assert chrf(ANSWER, REFERENCE) == pytest.approx(sentence_chrf(ANSWER, [REFERENCE]).score / 100)
    assert bleu(ANSWER, REFERENCE) == pytest.approx(sentence_bleu(ANSWER, [REFERENCE]).score / 100)
    assert 0 < bleu(ANSWER, REFERENCE) < chrf(ANSWER, REFERENCE) < 1
    # Stemmed: "trains" meets "training" (unstemmed, ROUGE-L would see no common word).
    assert rouge_l("training", "trains") == 1.0


@pytest.mark.parametrize("answer, reference, expected", [
    ("The Cat!", "cat", 1.0),  # case, punctuation and the article go
    ("  an   apple. ", "Apple", 1.0),  # whitespace collapses
    ("cats", "cat", 0.0),  # no stemming in SQuAD's exact match
    ("the cat sat", "cat", 0.0),
])
def test_exact_match_normalises_as_squad_does(answer, reference, expected):
    assert exact_match(answer, reference) == expected


def test_token_f1_is_squads_on_a_worked_example():
    # "the Denver Broncos won" -> [denver, broncos, won]; "Denver Broncos" -> [denver, broncos]: 2 tokens in common,
    # precision 2/3, recall 2/2, F1 = 2 * (2/3) * 1 / (2/3 + 1) = 0.8. Keeping "the" would give precision 2/4, F1 0.667.
    assert token_f1("the Denver Broncos won", "Denver Broncos") == pytest.approx(0.8)
    # Multiset overlap: a repeated word counts as often as both texts hold it.
    assert token_f1("bank bank bank", "bank") == pytest.approx(0.5)  # precision 1/3, recall 1
    assert token_f1("", "Denver") == 0.0 and token_f1("The!", "a") == 1.0  # both empty once normalised


def test_the_shares_of_the_references_words_and_facts_are_those_the_report_cards_rules_count():
    # Content words of the reference: lora, trains, adapters, h100, gpu ("on" is short, "one" a function word); the
    # answer holds lora, adapters, h100: 3 of 5. Its facts: LoRA, H100, GPU; the answer holds LoRA and H100: 2 of 3.
    reference, answer = "LoRA trains adapters on one H100 GPU.", "LoRA adapters run on an H100."
    assert reference_metric("reference_words", answer, reference) == 0.6
    assert reference_metric("reference_facts", answer, reference) == pytest.approx(0.6667)
    # A reference with no content word, or no name or number, has no share to measure: None, not 0.
    assert reference_metric("reference_words", "yes", "It is.") is None
    assert reference_metric("reference_facts", "yes", "it works well") is None
    from llm_engineering.evaluation.metrics import words
    from llm_engineering.evaluation.trust import rules, tiers

    assert rules.content_words is tiers.content_words is words.content_words and rules.facts is words.facts


@pytest.mark.parametrize("answer, reference, expected", [
    ("So the result is \\boxed{\\frac{1}{2}}.", "0.5", 1.0),  # equal values in other forms
    ("She has 72 clips in all.", "Natalia sold 48/2 = 24 clips in May, 48 + 24 = 72 in all.\n#### 72", 1.0),  # GSM8K
    ("The answer is 3.", "$\\frac{1}{2}$", 0.0),
    ("I do not know.", "42", None),  # the answer holds no value
    ("It has 7 billion parameters.", "LoRA trains 0.1% of the weights of a 7B model.", None),  # prose: no final value
])
def test_math_compares_final_values_only_where_the_reference_is_one(answer, reference, expected):
    assert reference_metric("math", answer, reference) == expected


def test_a_reference_is_a_final_value_when_bare_boxed_or_after_gsm8ks_marker():
    assert final_value_text("x = 3") == "x = 3" and final_value_text("\\frac{3}{4}") == "\\frac{3}{4}"
    assert final_value_text("work... #### 1,000") == "1,000"
    assert final_value_text("The capital of France is Paris.") is None


def test_the_evaluations_get_a_typed_column_per_metric_none_without_a_reference_or_an_answer():
    rows = Dataset.from_dict({
        col.ID: ["a", "b", "c"], col.ANSWER: ["Paris", "Paris", ""], col.REFERENCE: ["Paris", None, "Paris"],
        col.FINISH_REASON: ["stop", "stop", col.PROMPT_TOO_LONG]})
    measured = measure_answers(rows, METRICS)
    assert [name for name in measured.column_names if name.startswith("metric_")] == [
        col.metric(name) for name in REFERENCE_METRICS]  # similarity is the embedding model's (trust.similarity)
    assert measured[col.metric("exact_match")] == [1.0, None, None]  # no reference, no answer generated: none
    assert measured[col.metric("token_f1")] == [1.0, None, None]
    only_none = measure_answers(rows.select([1]), ["token_f1"])
    assert only_none.features[col.metric("token_f1")].dtype == "float64"  # typed though every value is None
    # Measured again with fewer metrics (rescoring a previous evaluations artifact): the others' columns go.
    again = measure_answers(measured, ["chrf"])
    assert [n for n in again.column_names if n.startswith("metric_")] == [col.metric("chrf")]


def test_rouge_l_leaves_open_the_stream_it_was_first_used_under_when_logging_is_configured_again(repo_root):
    """rouge-score imports absl, whose (unattached) log handler takes the sys.stderr of that moment and closes it when
    a `logging.config.dictConfig` call shuts handlers down (vLLM's, as an engine starts) unless it is then still
    sys.stderr: a test runner's capture or the CLI's console stream, rebound meanwhile, was closed under its owner
    (a fresh clone's `make test`, seed 3029490951: pytest's own capture file, then every later report lost). A fresh
    process, so that absl is imported here for the first time."""
    script = (
        "import io, logging.config, sys\n"
        "captured = io.StringIO()\n"
        "sys.stderr = captured\n"  # as a capture or the CLI's console rebinds it
        "from llm_engineering.evaluation.metrics.reference import rouge_l\n"
        "assert rouge_l('the cat sat', 'the cat sat') == 1.0\n"
        "sys.stderr = sys.__stderr__\n"
        "logging.config.dictConfig({'version': 1})\n"  # as vLLM configures logging when an engine starts
        "print('closed' if captured.closed else 'open')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "open"
