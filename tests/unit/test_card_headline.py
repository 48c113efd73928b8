"""The report card's outcome per tier and the judge's line: every tier and every judge-free rule decide it, a tier
failed is named, a judge that a rule matches does not pass; the rules themselves on constructed pairs."""

import pytest

from llm_engineering.evaluation.report.trust_text import judge_headline
from llm_engineering.evaluation.stored.trust import JudgeCheck, JudgeCheckPair
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs
from llm_engineering.evaluation.trust.rules import (
    NEEDS_REFERENCE,
    RULES,
    SIMILARITY,
    distinct_words,
    facts,
    reference_facts,
    reference_overlap,
    rule_orders,
)


def _pairs(judged_right: int, total: int, rule_right: dict[str, int], *, expected: bool = False) -> list[JudgeCheckPair]:
    """`total` pairs: the judge scores the right answer 3 and the worse 1 in the first `judged_right`, both 2 after;
    each rule named in `rule_right` orders its first n pairs right and the rest wrong, the other rules tie."""
    pairs = []
    for k in range(total):
        right = k < judged_right
        pairs.append(JudgeCheckPair(
            id=f"q{k}", mismatched_id=f"q{(k + 1) % total}", reference_accuracy=3 if right else 2,
            mismatched_accuracy=1 if right else 2, reference_expected=2.9 if expected else None,
            mismatched_expected=1.5 if expected else None,
            rules={name: (1 if k < rule_right.get(name, -1) else -1 if name in rule_right else 0) for name in RULES}))
    return pairs


def _check(tiers: dict[str, tuple[int, int, dict[str, int]]], threshold: float = 0.7) -> JudgeCheck:
    checks = [judge_check_from_pairs("vllm:judge", _pairs(*figures), threshold=threshold, tier=tier)
              for tier, figures in tiers.items()]
    return checks[0].model_copy(update={"tiers": checks[1:]})


def test_a_judge_under_a_rule_on_mismatch_gets_no_passing_headline_but_both_figures_and_intervals():
    check = _check({"mismatch": (18, 20, {"instruction_overlap": 19, "longer": 11})})
    assert check.outcome == "matched_by_rule" and not check.no_signal and check.rule_passes
    line = judge_headline("vllm:judge", check)
    assert line.startswith("Judge judge: above the 70% threshold on 1 of its report card's 1 tiers, better than every "
                           "rule without a judge by a paired test on none: not told apart from a rule without a judge "
                           "on mismatch (18/20 (90%, 95% CI 70%-97%) against more of the instruction's words 19/20 (95%, "
                           "95% CI 76%-99%) (paired: the judge 0 pairs against 1, p 1))"), line
    assert "NO SIGNAL" not in line  # a rule doing as well is not noise


def test_a_failed_tier_is_named_in_the_headline_with_what_the_judge_is_blind_to():
    check = _check({"mismatch": (19, 20, {"instruction_overlap": 12}), "truncated": (18, 20, {"longer": 9}),
                    "corrupted": (4, 13, {"reference_facts": 13})})
    assert [t.outcome for t in [check, *check.tiers]] == ["passes", "passes", "fails"]
    line = judge_headline("vllm:judge", check)
    assert ("above the 70% threshold on 2 of its report card's 3 tiers, better than every rule without a judge by a "
            "paired test on 2") in line
    assert ("blind to swapped names and numbers (corrupted 4/13 (31%, 95% CI 13%-58%); a rule without a judge passes "
            "it: more of the reference's names and numbers 13/13") in line
    assert "better than every rule without a judge on mismatch (19/20 (95%, 95% CI 76%-99%) against more of" in line
    assert "; truncated (18/20 (90%, 95% CI 70%-97%) against the longer answer 9/20" in line
    corrupted = check.tiers[1]
    assert corrupted.verdict.startswith("corrupted: fails, blind to swapped names and numbers: the right answer above "
                                        "the answer with its numbers and names swapped in 4/13 (31%")
    assert "a rule without a judge, more of the reference's names and numbers 13/13 (100%" in corrupted.verdict


def test_a_judge_that_passes_every_tier_above_every_rule_gets_the_passing_headline():
    check = _check({"mismatch": (20, 20, {"instruction_overlap": 13}), "same_topic": (19, 20, {"reference_overlap": 12}),
                    "truncated": (18, 20, {"distinct_words": 12}), "corrupted": (12, 13, {"reference_facts": 3})})
    assert {t.outcome for t in [check, *check.tiers]} == {"passes"} and not any(t.rule_passes for t in check.tiers)
    assert judge_headline("vllm:judge", check).startswith(
        "Judge judge: passes every tier of its report card, better than every rule without a judge by a paired test: "
        "better than every rule without a judge on mismatch (20/20")


def test_twelve_of_thirteen_beside_a_rule_at_eight_is_not_better_than_the_rule():
    """Four discordant pairs, all the judge's, are p 0.125: the rates differ by 31 points and the test cannot tell."""
    check = _check({"mismatch": (20, 20, {}), "corrupted": (12, 13, {"reference_facts": 8})})
    corrupted = check.tiers[0]
    assert corrupted.outcome == "matched_by_rule" and corrupted.paired["reference_facts"].p_value == 0.125


def test_no_signal_is_the_mismatch_tier_failed_whatever_the_other_tiers_say():
    check = _check({"mismatch": (9, 20, {}), "truncated": (20, 20, {})})
    assert check.no_signal and check.outcome == "fails" and check.tiers[0].outcome == "passes"
    assert judge_headline("vllm:judge", check).startswith("NO SIGNAL: the judge judge did not tell right answers from "
                                                          "answers to other questions in its judge check (the right "
                                                          "answer scored higher in 9/20 (45%")


def test_without_references_a_judge_that_calls_the_own_answers_wrong_is_not_called_blind():
    """Rows without references: the card pairs each row's own answer with another row's. Where the judge scores the
    own answers in the scale's lower half (a weak model's answers), ties say nothing of the judge: inconclusive, not
    NO SIGNAL; where it scores them high and the others as high, it is blind."""
    def answers_check(own: int, other: int) -> JudgeCheck:
        pairs = [JudgeCheckPair(id=f"q{k}", mismatched_id=f"q{(k + 1) % 8}", reference_accuracy=own,
                                mismatched_accuracy=other, rules={}) for k in range(8)]
        return judge_check_from_pairs("vllm:qwen2.5-coder-1.5b", pairs, threshold=0.7, scale=[1, 3],
                                      right_answers="answers")

    weak = answers_check(1, 1)
    assert weak.outcome == "inconclusive" and not weak.no_signal
    line = judge_headline("vllm:qwen2.5-coder-1.5b", weak)
    assert line.startswith("Judge qwen2.5-coder-1.5b: not measured: with no reference") and "1.00 on average" in line
    assert "NO SIGNAL" not in line and "inconclusive" in weak.verdict
    blind = answers_check(3, 3)
    assert blind.outcome == "fails" and blind.no_signal
    line = judge_headline("vllm:qwen2.5-coder-1.5b", blind)
    # The advice names a stronger judge, not the judge that was just found blind.
    assert line.startswith("NO SIGNAL") and "judge.model: qwen2.5-coder-1.5b" not in line and "--judge" in line


def test_the_figures_say_which_reading_they_are_and_an_older_checks_field_is_read_as_tie_broken():
    check = judge_check_from_pairs("vllm:judge", _pairs(1, 4, {}, expected=True), threshold=0.7)
    assert check.reference_higher.count == 1  # integers
    assert check.reference_higher_tie_broken.count == 4  # the 3 integer ties broken by expected scores
    assert check.reference_higher_by_expected.count == 4  # expected scores alone
    metadata = check.metadata()
    assert (metadata["discrimination_rate_tie_broken"], metadata["discrimination_rate_by_expected"]) == (1.0, 1.0)
    older = check.model_dump()
    older["reference_higher_expected"] = older.pop("reference_higher_tie_broken")
    assert JudgeCheck.model_validate(older).reference_higher_tie_broken.count == 4


@pytest.mark.parametrize("rule, right, wrong, reference, order", [
    # the reference's words: the answer sharing more of them
    (reference_overlap, "PagedAttention stores the cache in blocks", "It is a database", "PagedAttention stores "
     "the KV cache in fixed blocks", 1),
    (reference_overlap, "It is a database", "PagedAttention stores blocks", "PagedAttention stores blocks", -1),
    (reference_overlap, "cats purr", "cats purr", "Cats purr softly", 0),
    # the reference's names and numbers: vLLM and 16 held against GPT-4 and 8
    (reference_facts, "vLLM pages the KV cache in 16-token blocks: 16 tokens", "TGI pages it in 8 tokens",
     "vLLM uses blocks of 16 tokens", 1),
    (reference_facts, "served by TGI", "served by vLLM", "vLLM serves it", -1),
    # distinct words: a loop repeats itself
    (distinct_words, "RAG retrieves documents then generates an answer", "RAG retrieves RAG retrieves RAG retrieves",
     None, 1),
    (distinct_words, "a b a b", "c d e f", None, -1),
])
def test_each_judge_free_rule_orders_constructed_pairs(rule, right, wrong, reference, order):
    assert rule("What is it?", right, wrong, reference) == order


def test_the_rules_that_read_the_reference_are_left_out_where_a_row_has_none():
    assert set(rule_orders("q?", "a b c", "a a a", None)) == set(RULES) - NEEDS_REFERENCE
    assert {"reference_overlap", "reference_facts", "token_f1", "rouge_l", "bleu"} <= NEEDS_REFERENCE
    assert set(rule_orders("q?", "a b c", "a a a", "a b")) == set(RULES)


def test_the_embedding_is_computed_only_where_no_cheaper_rule_orders_the_pair_when_asked_so():
    import numpy as np

    encoded = []

    class Embedder:
        def encode(self, texts):
            encoded.append(texts)
            return [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 0.0])]

    reference = "vLLM batches requests continuously"
    # The reference's own words are above another topic's by the reference's words: the embedding is not needed.
    ordered = rule_orders("q?", reference, "Paris hosts museums", reference, Embedder(), until_one_orders=True)
    assert ordered["reference_overlap"] == 1 and SIMILARITY not in ordered and not encoded
    # Without the flag, or where no other rule orders the pair (the same text twice), the embedding's order is there.
    assert rule_orders("q?", reference, "Paris hosts museums", reference, Embedder())[SIMILARITY] == 1
    tied = rule_orders("q?", reference, reference, reference, Embedder(), until_one_orders=True)
    assert set(tied.values()) == {0, 1} and tied[SIMILARITY] == 1 and len(encoded) == 2
    assert facts("vLLM serves GPT-4 on 2 H100 GPUs at 70% load") == ["vLLM", "GPT-4", "2", "H100", "GPUs", "70%"]
