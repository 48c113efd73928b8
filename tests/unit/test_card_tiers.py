"""The report card's tiers no rule can pass (relation_swap, negation, same_topic by the reference's words) and the
paired test that decides where the judge stands against each rule."""

import json
from collections import Counter

import pytest
from datasets import Dataset
from scipy.stats import binomtest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.transport import JudgeReply
from llm_engineering.evaluation.stored.trust import JudgeCheckPair, PairedTest
from llm_engineering.evaluation.trust.card import run_judge_check
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs
from llm_engineering.evaluation.trust.minimal_pairs import negations, relation_swaps
from llm_engineering.evaluation.trust.paired import mcnemar_p, paired_test

ANSWER = "LoRA freezes the base model and trains 2 small matrices, while QLoRA quantizes the base to 4 bits."


def _words(text: str) -> Counter:
    return Counter(text.replace(",", " ").replace(".", " ").split())


def test_a_relation_swap_keeps_every_word_and_exchanges_two_names_or_two_numbers():
    swaps = relation_swaps(ANSWER)
    assert ("QLoRA freezes the base model and trains 2 small matrices, while LoRA quantizes the base to 4 bits."
            in swaps)  # the relation is wrong: QLoRA does not freeze, LoRA does not quantize
    assert "LoRA freezes the base model and trains 4 small matrices, while QLoRA quantizes the base to 2 bits." in swaps
    for swapped in swaps:
        assert swapped != ANSWER and _words(swapped) == _words(ANSWER)  # the same words, names and numbers
    # a name never trades places with a number, and a text with one fact of a kind has no swap
    assert not any("2 freezes" in s or "LoRA small" in s for s in swaps)
    assert relation_swaps("vLLM serves 8 requests at once.") == []


def test_a_negation_flips_one_statements_polarity_at_one_place():
    cases = negations("Continuous batching increases throughput, and the cache is shared.")
    assert "Continuous batching decreases throughput, and the cache is shared." in cases
    assert "Continuous batching increases throughput, and the cache is not shared." in cases
    assert all(c.count("decreases") + c.count(" not ") + c.count("Continuous") >= 1 for c in cases)
    assert "The adapter can be merged." in negations("The adapter cannot be merged.")
    assert "Eager mode is slow." in negations("Eager mode is not slow.")
    assert "Before training, Tokenize." not in negations("After training, tokenize.")  # only the word flips
    assert "Before training, tokenize." in negations("After training, tokenize.")


def _reworded(reference: str) -> str:
    """The reference's two clauses in the other order: the same words, the same meaning."""
    head, sep, tail = next(reference.partition(s) for s in (", while ", ", which ", ", and ") if s in reference)
    return f"{tail.rstrip('.')[0].upper()}{tail.rstrip('.')[1:]}{sep}{head}."


class RuleBaitJudge:
    """Shown the reference: gives 3 to an answer that says what the reference says, 1 to one that contradicts it (it
    reads the meaning: a negation or an exchange is wrong), and rewords the reference by putting its clauses in the
    other order."""

    judge_id = "bait"

    def cache_namespace(self, reply_schema):
        return {"judge": "bait"}

    def complete(self, conversations, on_reply, reply_schema):
        for index, messages in enumerate(conversations):
            prompt = messages[1]["content"]
            if reply_schema is not None and reply_schema.name == "rewording":
                reference = prompt.split("Text: ")[1].split("\n\nGive the rewritten")[0]
                text = json.dumps({"answer": _reworded(reference)})
            else:
                reference = prompt.split("): ", 1)[1].split("\n\nAnswer: ")[0]
                answer = prompt.split("\n\nAnswer: ")[1].split("\n\nGive your evaluation")[0]
                right = answer == _reworded(reference)
                text = json.dumps({"accuracy": {"analysis": "", "score": 3 if right else 1},
                                   "style": {"analysis": "", "score": 2}})
            on_reply(index, JudgeReply(text=text))


def _split():
    references = [
        "LoRA freezes the base weights and trains 2 adapters, while QLoRA quantizes the base to 4 bits first.",
        "vLLM stores the KV cache in blocks, which increases the batch size and is what PagedAttention adds.",
        "DPO optimizes the policy on pairs directly, without a reward model, while RLHF can train a reward model first.",
        "Chunking splits documents before embedding, and the retriever returns the chunks nearest the query.",
    ]
    return Dataset.from_dict({col.ID: [f"q{i}" for i in range(4)], col.INSTRUCTION: [f"Explain topic {i}." for i in range(4)],
                              col.REFERENCE: references})


def test_the_tiers_no_rule_can_pass_keep_only_pairs_that_no_rule_orders():
    check = run_judge_check(_split(), Judge((RuleBaitJudge(),), load_rubric("task-accuracy")),
                            JudgeCheckConfig(rows=4, tiers=["relation_swap", "negation"]))
    swap, negation = check.tiers
    assert swap.candidates == 3 and negation.candidates == 4  # q3 names no two things of a kind
    # An exchange keeps the words: the rules that count them tie, and only the sequence metrics, whose n-grams span
    # the exchanged names, can order a pair: a row is kept where one of its exchanges no rule orders, and dropped
    # with the rules that ordered them
    assert swap.pairs >= 1 and all(r.count == 0 for r in swap.baselines.values())
    assert set(swap.dropped) <= {"chrf", "bleu", "rouge_l"} and max(swap.dropped.values()) == 3 - swap.pairs
    for pair in swap.details:
        assert not [name for name, order in pair.rules.items() if order == 1], pair
        assert _words(pair.worse_answer) == _words(pair.right_answer) and pair.worse_answer in (
            relation_swaps(_split()[col.REFERENCE][int(pair.id[1])]))
    # The judge reads the meaning: it passes every pair, beside rules that pass none
    assert swap.reference_higher.count == swap.pairs and set(swap.paired) == set(swap.baselines)
    # A negation adds a word or flips one of the reference's: against a rewording of the very same words, token F1
    # orders every candidate, and every row is dropped, with the rules that did it
    assert negation.pairs == 0 and negation.dropped["token_f1"] == 4 and negation.outcome == "unmeasured"
    assert "0 of 4 rows with a candidate kept" in negation.verdict and "token F1 4" in negation.verdict


def test_a_candidate_a_rule_orders_is_dropped_and_the_next_one_kept():
    from llm_engineering.evaluation.trust.card import _build

    candidates = {0: [("first", "negation"), ("second", "negation")], 1: [("only", "negation")], 2: []}

    # The rule "longer" orders "first" and "only" below the right answer; "second" it does not.
    def orders(row, text, until_one_orders=False):
        return {"longer": 1 if text in ("first", "only") else -1, "distinct_words": 0}

    built = _build("negation", candidates, orders)
    assert built.answers == {0: (("second", "negation"), {"longer": -1, "distinct_words": 0})}
    assert built.candidates == 2 and built.dropped == {"longer": 1}  # row 1 dropped by it; row 2 had no candidate
    unfiltered = _build("truncated", candidates, orders)  # an old tier takes each row's first, whatever the rules say
    assert set(unfiltered.answers) == {0, 1} and unfiltered.candidates is None


@pytest.mark.parametrize("judge_only, rule_only", [(6, 0), (5, 0), (12, 3), (3, 12), (1, 1), (0, 0), (9, 2)])
def test_the_paired_test_is_the_exact_mcnemar_test_on_the_discordant_pairs(judge_only, rule_only):
    expected = 1.0 if judge_only + rule_only == 0 else binomtest(judge_only, judge_only + rule_only, 0.5).pvalue
    assert mcnemar_p(judge_only, rule_only) == pytest.approx(expected, abs=1e-6)
    assert mcnemar_p(6, 0) == pytest.approx(0.03125)  # 2 x 0.5^6: six pairs all one way
    judge = [True] * judge_only + [False] * rule_only + [True, False]  # then one pair both pass, one neither
    rule = [False] * judge_only + [True] * rule_only + [True, False]
    test = paired_test(judge, rule)
    assert (test.judge_only, test.rule_only) == (judge_only, rule_only)


def test_where_the_judge_stands_is_decided_by_the_test_not_by_the_rates():
    assert PairedTest(judge_only=1, rule_only=0, p_value=1.0).standing == "not_told_apart"  # 20/20 beside 19/20
    assert PairedTest(judge_only=6, rule_only=0, p_value=0.03125).standing == "above"
    assert PairedTest(judge_only=0, rule_only=7, p_value=0.015625).standing == "below"


def _pairs(judge_right, rule_right, n=20):
    """`n` pairs: the judge passes the first `judge_right`, the rule "longer" the last `rule_right`."""
    return [JudgeCheckPair(id=f"q{k}", mismatched_id="x", reference_accuracy=3 if k < judge_right else 1,
                           mismatched_accuracy=1, rules={"longer": 1 if k >= n - rule_right else 0}) for k in range(n)]


def test_a_judge_a_point_above_a_rule_is_not_told_apart_from_it_and_the_verdict_names_the_rule():
    close = judge_check_from_pairs("j", _pairs(20, 19), threshold=0.7, tier="truncated")
    assert close.outcome == "matched_by_rule" and close.paired["longer"].p_value == 1.0
    assert "not told apart from a rule without a judge" in close.verdict and "the longer answer 19/20" in close.verdict
    clear = judge_check_from_pairs("j", _pairs(18, 4), threshold=0.7, tier="truncated")
    assert clear.outcome == "passes" and clear.paired["longer"].standing == "above"
    below = judge_check_from_pairs("j", _pairs(14, 20), threshold=0.7, tier="truncated")
    assert below.outcome == "below_rule" and "below a rule without a judge" in below.verdict


def test_the_headline_names_the_rule_that_passes_a_tier_whatever_the_judge_does():
    from llm_engineering.evaluation.report.trust_text import judge_headline

    mismatch = judge_check_from_pairs("j", _pairs(18, 4), threshold=0.7)
    truncated = judge_check_from_pairs("j", _pairs(20, 19), threshold=0.7, tier="truncated")
    failed = judge_check_from_pairs("j", _pairs(6, 18), threshold=0.7, tier="corrupted")
    headline = judge_headline("vllm:j", mismatch.model_copy(update={"tiers": [truncated, failed]}))
    assert "better than every rule without a judge by a paired test on 1" in headline
    assert "not told apart from a rule without a judge on truncated (20/20" in headline
    assert "a rule without a judge passes it: the longer answer 18/20" in headline  # the failed tier names it too
    assert "p 1" in headline and "20 pairs" not in headline
