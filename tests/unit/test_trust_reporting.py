"""Generation-setting variants in the config, and the trust checks in summary, report and card."""

import json

import numpy as np
import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.judging.pairwise import tally
from llm_engineering.evaluation.models import resolve_model, short_name, split_variant
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.results_card import trust_facts
from llm_engineering.evaluation.report.score_tables import table_rows
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import trust_lines
from llm_engineering.evaluation.stored.pairwise import PairwiseReport, PairwiseRow
from llm_engineering.evaluation.stored.trust import JudgeCheckPair, TrustChecks
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs
from llm_engineering.evaluation.trust.similarity import add_reference_similarity, cosine_similarities
from llm_engineering.infrastructure.publishing import repo_name
from llm_engineering.run_config import EvaluationConfig, parse_evaluation


def test_variants_give_one_model_its_own_sampling():
    config = EvaluationConfig(models=["smollm2-135m@temperature=0.2", "smollm2-135m@temperature=1.2,top_p=0.9"])
    low, high = (config.sampling_for(m) for m in config.models)
    assert (low.temperature, low.top_p) == (0.2, 0.95)
    assert (high.temperature, high.top_p) == (1.2, 0.9)
    assert high.max_tokens == config.sampling.max_tokens  # everything else from the run's sampling
    assert config.sampling_for("smollm2-135m") == config.sampling


@pytest.mark.parametrize("model, message", [
    ("smollm2-135m@temprature=0.2", "unknown sampling key(s) ['temprature']"),
    ("smollm2-135m@temperature=hot", "invalid sampling settings (temperature"),
    ("smollm2-135m@temperature=0.2,", "cannot read ''"),
])
def test_bad_variants_name_the_problem(model, message):
    with pytest.raises(ConfigError, match="parameters.models") as error:
        parse_evaluation({"models": [model]})
    assert message in str(error.value)


def test_the_same_model_twice_points_at_variants():
    with pytest.raises(ConfigError, match="smollm2-135m@temperature=0.2"):
        parse_evaluation({"models": ["smollm2-135m", "smollm2-135m"]})


def test_a_variant_resolves_to_its_models_weights_and_keeps_its_id(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    variant = resolve_model(f"{folder}@temperature=1.2", tmp_path / "cache")
    assert variant.path == str(folder.resolve())
    assert variant.model_id == f"{folder}@temperature=1.2"
    assert variant.name == "my-model@temperature=1.2"
    assert repo_name("local", short_name("org/m@temperature=1.2")) == "local/m-temperature-1.2-results"
    assert split_variant("org/m") == ("org/m", {})
    assert split_variant("user@host/m") == ("user@host/m", {})  # an '@' without settings is part of the name


class BagOfWords:
    """Counts of a fixed vocabulary, unit length: cosine similarity that is easy to reason about."""

    name = "bag-of-words"
    vocabulary = ["rag", "retrieval", "lora", "adapters", "vllm", "batching"]

    def encode(self, texts):
        vectors = np.array([[t.lower().count(w) for w in self.vocabulary] for t in texts], dtype=float) + 1e-6
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_reference_similarity_is_per_row_and_none_for_empty_answers():
    rows = Dataset.from_dict({col.ANSWER: ["RAG adds retrieval", "", "LoRA trains adapters"],
                              col.REFERENCE: ["retrieval for RAG", "vLLM batching", "vLLM batching"]})
    scored = add_reference_similarity(rows, BagOfWords())
    values = scored[col.REFERENCE_SIMILARITY]
    assert values[0] == pytest.approx(1.0, abs=1e-3) and values[1] is None and values[2] == pytest.approx(0, abs=1e-3)
    assert cosine_similarities(BagOfWords(), [], []) == []
    with pytest.raises(ValueError):
        cosine_similarities(BagOfWords(), ["a"], [])


def evaluations(model, accuracy, similarity):
    n = len(accuracy)
    return Dataset.from_dict({
        col.ID: [str(i) for i in range(n)], col.MODEL_ID: [model] * n, col.score("accuracy"): accuracy,
        col.score("style"): [2] * n, col.JUDGE_ERROR: [None] * n, col.JUDGE_MODEL: ["judge"] * n,
        col.COMPLETION_TOKENS: [10] * n, col.FINISH_REASON: ["stop"] * n, col.REFERENCE_SIMILARITY: similarity,
    })


def trust_inputs(rate_of_higher_pairs):
    higher = int(rate_of_higher_pairs * 4)
    pairs = [JudgeCheckPair(id=str(i), mismatched_id=str(i + 1), reference_accuracy=3 if i < higher else 2,
                        mismatched_accuracy=2) for i in range(4)]
    checks = TrustChecks(judge=judge_check_from_pairs("judge", pairs, threshold=0.7))
    report = PairwiseReport(comparisons=[tally("b", "a", "judge", [
        PairwiseRow(id="0", in_order="A", swapped="B", points=1.0), PairwiseRow(id="1", in_order="A", swapped="A", points=0.5)])])
    return checks, report


@pytest.mark.parametrize("discrimination, flagged", [(0.25, True), (1.0, False)])
def test_summary_report_and_table_carry_the_trust_checks(discrimination, flagged):
    checks, report = trust_inputs(discrimination)
    summary = build_summary(SummaryInputs([evaluations("a", [2, 3], [0.5, 0.7]), evaluations("b", [3, 3], [0.6, None])],
                                          checks=checks, pairwise=report))
    assert summary.judge_check.no_signal is flagged
    assert {m.model_id: m.similarity_mean for m in summary.models} == {"a": 0.6, "b": 0.6}
    assert {m.model_id: m.similarity_rows for m in summary.models} == {"a": 2, "b": 1}
    assert table_rows(summary)[0][3].startswith("0.60")  # the similarity column
    lines = "\n".join(trust_lines(summary))
    assert ("NO SIGNAL" in lines) is flagged
    assert "Pairwise b vs a" in lines and "win rate 75%" in lines
    page = render_html(summary)
    assert ("NO SIGNAL" in page) is flagged
    assert "Judge check" in page and "Pairwise comparison" in page and page.count("<img") == 2
    # ZenML stores the summary as JSON: the trust checks must survive the round trip.
    assert type(summary).model_validate_json(summary.model_dump_json()) == summary


def test_dataset_card_facts_name_the_checks_and_this_models_comparisons():
    checks, report = trust_inputs(0.25)
    info = trust_facts("a", checks, report)
    assert info["judge check"].startswith("NO SIGNAL")
    assert "win rate 75%" in info["pairwise b vs a"]
    assert "pairwise b vs a" not in trust_facts("c", checks, report)
    assert trust_facts("a") == {}


def test_shipped_pairwise_config_compares_two_temperatures_of_the_embedded_model(repo_root):
    from llm_engineering.run_config import load_run_config

    config = load_run_config(repo_root / "configs" / "pairwise-temperature.yaml").evaluation
    assert [config.sampling_for(m).temperature for m in config.models] == [0.2, 1.2]
    assert {split_variant(m)[0] for m in config.models} == {"smollm2-135m"} and config.pairwise.enabled


def test_the_table_reads_each_model_against_the_judge_checks_right_and_wrong_answers_means():
    pairs = [JudgeCheckPair(id=str(i), mismatched_id=str(i + 1), reference_accuracy=3, mismatched_accuracy=right,
                            reference_expected=2.9, mismatched_expected=expected)
             for i, (right, expected) in enumerate([(1, 1.5), (1, 2.1), (2, 2.4)])]
    summary = build_summary(SummaryInputs([evaluations("a", [2, 3], [0.5, 0.7])],
                                          checks=TrustChecks(judge=judge_check_from_pairs("judge", pairs, threshold=0.7))))
    right, wrong = table_rows(summary)[1:]
    assert (right[0], wrong[0]) == ("right answers\n(judge check)", "answers to\nother questions\n(judge check)")
    assert right[1].startswith("3.00") and right[1].endswith("\nexp 2.90")  # the accuracy column
    assert wrong[1].startswith("1.33") and wrong[1].endswith("\nexp 2.00")
    assert right[2] == wrong[2] == ""  # style: the check scores the first criterion only
    # Without an expected score on every checked verdict, no expected mean (never one over some of them).
    pairs[0] = pairs[0].model_copy(update={"mismatched_expected": None})
    check = judge_check_from_pairs("judge", pairs, threshold=0.7)
    assert (check.reference_expected_mean, check.mismatched_expected_mean) == (2.9, None)
