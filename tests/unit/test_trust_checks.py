"""Trust checks: derangement, rates and intervals, the judge check, position-swap bookkeeping."""

import json
import math

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeCheckConfig
from llm_engineering.evaluation.judging.cache import JudgeCache
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.pairwise import (
    compare_answers,
    orders_disagree,
    parse_pairwise,
    points_for_first_model,
    tally,
)
from llm_engineering.evaluation.judging.rubric import load_rubric
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema, ask_judge
from llm_engineering.evaluation.judging.verdict import first_score_schema
from llm_engineering.evaluation.rates import derangement, rate, sample_rows, wilson_interval
from llm_engineering.evaluation.stored.pairwise import PairwiseRow
from llm_engineering.evaluation.stored.trust import JudgeCheckPair
from llm_engineering.evaluation.trust.card import run_judge_check
from llm_engineering.evaluation.trust.judge_check import judge_check_from_pairs

HANDBOOK = load_rubric("handbook")


@pytest.mark.parametrize("n", [2, 3, 7, 20, 48])
def test_derangement_is_a_permutation_without_fixed_points(n):
    order = derangement(n, seed=5)
    assert sorted(order) == list(range(n))
    assert all(order[i] != i for i in range(n))
    assert order == derangement(n, seed=5)  # fixed: same pairs, same cached judge calls


def test_derangement_depends_on_the_seed_and_needs_two_rows():
    assert len({tuple(derangement(20, seed)) for seed in range(5)}) > 1
    with pytest.raises(ValueError, match="at least 2 rows"):
        derangement(1)


def test_sample_rows_is_fixed_sorted_and_capped():
    sample = sample_rows(48, 20, seed=0)
    assert len(set(sample)) == 20 and sample == sorted(sample) and max(sample) < 48
    assert sample == sample_rows(48, 20, seed=0)
    assert sample_rows(5, 20) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("count, total, expected", [
    (0, 20, [0.0, 0.1611]),     # z^2 / (n + z^2): a zero count still has an upper bound
    (10, 20, [0.2993, 0.7007]),
    (20, 20, [0.8389, 1.0]),
])
def test_wilson_interval_matches_the_closed_form(count, total, expected):
    assert wilson_interval(count, total) == pytest.approx(expected, abs=1e-4)


def test_rate_carries_count_total_and_interval():
    r = rate(3, 12)
    assert (r.count, r.total, r.rate) == (3, 12, 0.25)
    assert r.ci[0] < 0.25 < r.ci[1]
    assert r.describe().startswith("3/12 (25%, 95% CI")
    assert rate(0, 0).rate is None and rate(0, 0).ci is None
    with pytest.raises(ValueError):
        rate(5, 4)


def pair(ref, mis, i=0):
    return JudgeCheckPair(id=f"r{i}", mismatched_id=f"r{i + 1}", reference_accuracy=ref, mismatched_accuracy=mis)


def test_judge_check_rates_count_failed_pairs_in_the_denominator():
    check = judge_check_from_pairs("j", [pair(3, 1), pair(2, 2), pair(1, 3), pair(None, 2)], threshold=0.7)
    assert [r.count for r in (check.reference_higher, check.ties, check.reversals, check.failed)] == [1, 1, 1, 1]
    assert all(r.total == 4 for r in (check.reference_higher, check.ties, check.reversals, check.failed))
    assert check.reference_accuracy_mean == 2.0 and check.mismatched_accuracy_mean == 2.0
    assert check.no_signal and check.verdict.startswith("NO SIGNAL")


@pytest.mark.parametrize("threshold, flagged", [(0.0, False), (0.5, False), (0.51, True), (1.0, True)])
def test_no_signal_flag_follows_the_threshold(threshold, flagged):
    check = judge_check_from_pairs("j", [pair(3, 1), pair(3, 1, 1), pair(2, 2, 2), pair(1, 2, 3)], threshold=threshold)
    assert check.reference_higher.rate == 0.5
    assert check.no_signal is flagged
    assert ("NO SIGNAL" in check.verdict) is flagged
    assert "2/4 (50%" in check.verdict


def test_no_pairs_means_no_signal():
    check = judge_check_from_pairs("j", [], threshold=0.0)
    assert check.no_signal and "could not be measured" in check.verdict


class KeyedJudge:
    """Answers by looking at the prompt: exercises bookkeeping and caching, not a model."""

    judge_id = "keyed"

    def __init__(self, reply_for):
        self.reply_for = reply_for
        self.asked = []
        self.schemas = []

    def cache_namespace(self, reply_schema):
        return {"backend": "keyed", "schema": reply_schema.schema if reply_schema else "verdict"}

    def complete(self, conversations, on_reply, reply_schema):
        self.schemas.append(reply_schema)
        for index, messages in enumerate(conversations):
            self.asked.append(messages[1]["content"])
            reply = self.reply_for(messages[1]["content"])
            on_reply(index, reply if isinstance(reply, JudgeReply) else JudgeReply(text=reply))


def verdict(accuracy):
    return json.dumps({"accuracy": {"analysis": "a", "score": accuracy}, "style": {"analysis": "s", "score": 2}})


def split(n):
    return Dataset.from_dict({
        col.ID: [f"q{i}" for i in range(n)],
        col.INSTRUCTION: [f"Explain topic {i}." for i in range(n)],
        col.REFERENCE: [f"Topic {i} is explained here." for i in range(n)],
    })


def matching_judge():
    """Scores 3 when the answer is the instruction's own reference, else 1."""
    def reply(prompt):
        topic = prompt.split("Explain topic ")[1].split(".")[0]
        return verdict(3 if f"Answer: Topic {topic} is explained" in prompt else 1)
    return KeyedJudge(reply)


def test_check_judge_pairs_each_reference_with_another_rows_and_uses_the_cache(tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    judge = matching_judge()
    check = run_judge_check(split(30), Judge((judge,), HANDBOOK, cache),
                            JudgeCheckConfig(rows=10, threshold=0.7, seed=1, tiers=["mismatch"]))
    assert check.pairs == 10 and len(judge.asked) == 20
    assert all(p.id != p.mismatched_id for p in check.details)
    assert {p.mismatched_id for p in check.details} == {p.id for p in check.details}  # a derangement of the sample
    assert check.reference_higher.rate == 1.0 and not check.no_signal
    again = matching_judge()
    rerun = run_judge_check(split(30), Judge((again,), HANDBOOK, cache),
                            JudgeCheckConfig(rows=10, threshold=0.7, seed=1, tiers=["mismatch"]))
    assert rerun.judge_seconds_per_verdict is None and check.judge_seconds_per_verdict is not None  # no new calls
    assert (check.judge_calls, rerun.judge_calls) == (20, 0)  # calls made: none from the cache
    assert rerun == check.model_copy(update={"judge_seconds_per_verdict": None, "judge_calls": 0})
    assert again.asked == []  # every verdict came from the cache


def test_the_check_asks_for_replies_that_end_at_the_first_score_and_reads_them():
    score_first = load_rubric("handbook-score-first")

    def reply(prompt):  # the matching judge, answering the score-only schema
        topic = prompt.split("Explain topic ")[1].split(".")[0]
        return json.dumps({"accuracy": {"score": 3 if f"Answer: Topic {topic} is explained" in prompt else 1}})

    judge = KeyedJudge(reply)
    check = run_judge_check(split(12), Judge((judge,), score_first),
                            JudgeCheckConfig(rows=6, threshold=0.7, seed=2, tiers=["mismatch"]))
    assert [s.name for s in judge.schemas] == ["first_score"]
    assert judge.schemas[0].schema == first_score_schema(score_first, 300)
    assert check.reference_higher.count == 6 and check.failed.count == 0
    # Asked for whole verdicts (to compare), the same judge gets no reply schema and is read the same way.
    whole_judge = matching_judge()
    whole = run_judge_check(split(12), Judge((whole_judge,), score_first),
                            JudgeCheckConfig(rows=6, threshold=0.7, seed=2, tiers=["mismatch"]), whole_verdicts=True)
    assert whole_judge.schemas == [None] and whole.reference_higher.count == 6
    # The handbook (analysis first) is asked for its first criterion's analysis and score, not the whole verdict.
    handbook_judge = matching_judge()
    handbook = run_judge_check(split(12), Judge((handbook_judge,), HANDBOOK),
                               JudgeCheckConfig(rows=6, threshold=0.7, seed=2, tiers=["mismatch"]))
    assert [s.name for s in handbook_judge.schemas] == ["first_score"] and handbook.reference_higher.count == 6
    assert list(handbook_judge.schemas[0].schema["properties"]) == ["accuracy"]


def test_check_judge_flags_a_judge_that_scores_everything_alike():
    check = run_judge_check(split(6), Judge((KeyedJudge(lambda prompt: verdict(2)),), HANDBOOK),
                            JudgeCheckConfig(rows=20, threshold=0.7, tiers=["mismatch"]))
    assert check.pairs == 6 and check.ties.rate == 1.0 and check.no_signal


def test_check_judge_counts_unparseable_verdicts_as_failed():
    check = run_judge_check(split(4), Judge((KeyedJudge(lambda prompt: "not json"),), HANDBOOK),
                            JudgeCheckConfig(rows=4, threshold=0.7, tiers=["mismatch"]))
    assert check.failed.count == 4 and check.reference_higher.count == 0
    assert all(p.error and "invalid JSON" in p.error for p in check.details)


# in_order: winner with the first model's answer in position A; swapped: with it in position B.
@pytest.mark.parametrize("in_order, swapped, points, disagree", [
    ("A", "B", 1.0, False),   # the first model wins in both orders
    ("B", "A", 0.0, False),   # it loses in both
    ("tie", "tie", 0.5, False),
    ("A", "A", 0.5, True),    # position A wins both times: pure position bias, a tie for the models
    ("B", "B", 0.5, True),
    ("A", "tie", 0.75, True),
    ("tie", "A", 0.25, True),
])
def test_position_swap_bookkeeping(in_order, swapped, points, disagree):
    assert points_for_first_model(in_order, swapped) == points
    assert orders_disagree(in_order, swapped) is disagree


def test_tally_rates_and_win_rate():
    rows = [PairwiseRow(id="1", in_order="A", swapped="B", points=1.0),
            PairwiseRow(id="2", in_order="A", swapped="A", points=0.5),
            PairwiseRow(id="3", in_order="B", swapped="A", points=0.0),
            PairwiseRow(id="4", in_order="A", swapped="B", points=1.0),
            PairwiseRow(id="5", error="invalid JSON")]
    result = tally("a", "b", "j", rows)
    assert (result.wins.count, result.ties.count, result.losses.count, result.failed.count) == (2, 1, 1, 1)
    assert result.wins.total == 5
    assert result.win_rate == 0.625  # (1 + 0.5 + 0 + 1) / 4 judged pairs
    assert result.win_rate_ci[0] <= 0.625 <= result.win_rate_ci[1]
    assert (result.order_disagreement.count, result.order_disagreement.total) == (1, 4)
    assert (result.position_a_preferred.count, result.position_a_preferred.total) == (5, 8)


def answers(model, texts):
    return Dataset.from_dict({col.ID: [f"q{i}" for i in range(len(texts))],
                              col.INSTRUCTION: [f"Explain topic {i}." for i in range(len(texts))],
                              col.ANSWER: texts, col.MODEL_ID: [model] * len(texts)})


def pairwise_reply(winner):
    return json.dumps({"analysis": "x", "winner": winner})


def test_compare_answers_swaps_positions_and_cancels_position_bias(tmp_path):
    long_a = answers("a", ["a long and complete answer"] * 3)
    short_b = answers("b", ["short"] * 3)

    def prefers_longer(prompt):
        first = prompt.split("Answer A: ")[1].split("\n")[0]
        second = prompt.split("Answer B: ")[1].split("\n")[0]
        return pairwise_reply("A" if len(first) > len(second) else "B")

    judge = KeyedJudge(prefers_longer)
    result = compare_answers(long_a, short_b, Judge((judge,), HANDBOOK, JudgeCache(tmp_path / "c")), "verdict")
    assert len(judge.asked) == 6 and judge.schemas[0].name == "pairwise_verdict"
    assert "Answer A: a long and complete answer" in judge.asked[0]
    assert "Answer A: short" in judge.asked[1]  # the same pair, positions swapped
    assert (result.model_a, result.model_b, result.win_rate) == ("a", "b", 1.0)
    assert result.order_disagreement.count == 0

    always_first = compare_answers(long_a, short_b, Judge((KeyedJudge(lambda p: pairwise_reply("A")),), HANDBOOK),
                                   "verdict")
    assert always_first.win_rate == 0.5 and always_first.ties.count == 3
    assert always_first.order_disagreement.rate == 1.0 and always_first.position_a_preferred.rate == 1.0


def test_compare_answers_only_pairs_shared_instructions_and_keeps_failures():
    a = answers("a", ["x", "y", "z"])
    b = answers("b", ["x", "y"])
    result = compare_answers(a, b, Judge((KeyedJudge(lambda p: "{}"),), HANDBOOK), "verdict")
    assert result.pairs == 2 and result.failed.count == 2 and result.win_rate is None
    assert "invalid verdict" in result.details[0].error
    preferred = compare_answers(a, b, Judge((KeyedJudge(lambda p: "{}"),), HANDBOOK))
    assert preferred.failed.count == 2 and "no preference in the reply" in preferred.details[0].error


def preference_reply(first, probability_first):
    """A preference for the answer shown first ("1") or second, with the judge's probabilities of 1 and 2."""
    head, number = '{"better":', "1" if probability_first >= 0.5 else "2"
    candidates = [("1", math.log(probability_first)), ("2", math.log(1 - probability_first))]
    return JudgeReply(text=f"{head}{number}}}", logprobs=[(head, None), (number, candidates), ("}", None)])


def test_the_preference_method_averages_probabilities_over_both_orders_so_position_cancels_out():
    long_a = answers("a", ["a long and complete answer"] * 3)
    short_b = answers("b", ["short"] * 3)

    def leans_first(prompt):  # always writes "1", but gives more to 1 when the longer answer is shown first
        first = prompt.split("Answer 1: ")[1].split("\n")[0]
        return preference_reply(first, 0.9 if first.startswith("a long") else 0.7)

    judge = KeyedJudge(leans_first)
    result = compare_answers(long_a, short_b, Judge((judge,), HANDBOOK))
    assert judge.schemas[0].name == "preference" and "Answer 1: short" in judge.asked[1]
    # Each order names the answer shown first; the probabilities averaged over both give the longer answer 0.6.
    assert result.method == "preference" and result.position_a_preferred.rate == 1.0
    assert result.win_rate == 1.0 and result.details[0].preference == pytest.approx(0.6)
    assert result.details[0].confidence == pytest.approx(0.2)  # 0.6 is 0.1 from a half: a weak preference
    # Without token logprobs the numbers written decide: "1" in both orders is a tie, as the verdict method says.
    numbers_only = compare_answers(long_a, short_b, Judge((KeyedJudge(lambda p: '{"better":1}'),), HANDBOOK))
    assert numbers_only.ties.count == 3 and numbers_only.failed.count == 0


@pytest.mark.parametrize("raw, winner, problem", [
    ('{"analysis": "x", "winner": "tie"}', "tie", None),
    ('```json\n{"analysis": "x", "winner": "B"}\n```', "B", None),
    ('{"analysis": "x", "winner": "C"}', None, "invalid verdict"),
    ("A is better", None, "invalid JSON"),
])
def test_parse_pairwise(raw, winner, problem):
    parsed, error = parse_pairwise(raw)
    assert parsed == winner
    assert (error is None) if problem is None else problem in error


def test_ask_judge_keys_the_cache_by_schema(tmp_path):
    cache = JudgeCache(tmp_path / "c")
    conversation = [[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]]
    judge = KeyedJudge(lambda prompt: pairwise_reply("A"))
    schema = ReplySchema("pairwise_verdict", {"type": "object"})
    ask_judge(judge, conversation, cache=cache, is_valid=lambda text: True, reply_schema=schema)
    ask_judge(judge, conversation, cache=cache, is_valid=lambda text: True, reply_schema=schema)
    assert len(judge.asked) == 1  # cached under its schema
    ask_judge(judge, conversation, cache=cache, is_valid=lambda text: True)
    assert len(judge.asked) == 2  # another task, another key


def test_tally_leaves_a_row_without_both_orders_out_of_the_order_figures():
    # compare_answers sets both orders wherever it sets points; a row made otherwise (read back, or built by hand)
    # still counts in the outcomes, but order disagreement and position preference need both of its orders.
    rows = [PairwiseRow(id="1", in_order="A", swapped="B", points=1.0), PairwiseRow(id="2", in_order="A", points=1.0)]
    result = tally("a", "b", "j", rows)
    assert (result.wins.count, result.win_rate) == (2, 1.0)
    assert (result.order_disagreement.count, result.order_disagreement.total) == (0, 1)
    assert (result.position_a_preferred.count, result.position_a_preferred.total) == (1, 2)
