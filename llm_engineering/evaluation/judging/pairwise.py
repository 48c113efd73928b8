"""Pairwise comparison of two models' answers, each pair judged twice with positions swapped.

As MT-Bench and AlpacaEval compare models: the judge sees one instruction and two answers and
names the better one. Judges favour a position, so every pair is asked in both orders. Two methods:

- `preference` (the default): the better answer as one number (1 or 2) before any analysis; the
  probabilities the judge gave the two numbers are averaged over both orders, so a lean towards a
  position cancels out, and the pair goes to the answer with more than half (a judge without token
  logprobs: the numbers it wrote, a win in each position making a tie);
- `verdict`: a short analysis, then the winner (A, B or tie); the two verdicts are averaged
  (1 a win, 0.5 a tie, 0 a loss).

On human-labelled pairs (`judge-bench`, docs/judge-trust.md) the verdict of a small judge is decided
by position; the averaged preference is not. How often the two orders disagree is reported either
way. Calls go through the scoring backend, cache and retries.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Callable, Optional

from datasets import Dataset
from pydantic import BaseModel, ConfigDict, ValidationError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config_base import validation_problems
from llm_engineering.evaluation.judging.agreement import length_controlled_win_rate, longer_answer_wins
from llm_engineering.evaluation.judging.conversation import turn_pair
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.rubric import REFERENCE_LINE, Rubric
from llm_engineering.evaluation.judging.score_probs import value_distribution
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema, ask_judge, reply_json_schema, unfenced
from llm_engineering.evaluation.preference import compare, points
from llm_engineering.evaluation.rates import bootstrap_ci, rate
from llm_engineering.evaluation.samples import answer_key, sample_of
from llm_engineering.evaluation.stored.pairwise import PairwiseComparison, PairwiseRow, Preference
from llm_engineering.evaluation.turns import turn_of

logger = logging.getLogger(__name__)

_FIRST_SENTENCE = re.compile(r".*?[?.](?=\s|$)|.*", re.S)
COMPARE_SYSTEM_PROMPT = "You are a helpful assistant who compares two answers based on {criteria}."
PAIRWISE_SYSTEM_PROMPT = COMPARE_SYSTEM_PROMPT + " Provide your response in JSON format with a short analysis and the better answer."

PAIRWISE_PROMPT_TEMPLATE = """You are an expert judge. Compare two answers to the same instruction and decide which one is better.
Judge on the rubric's criteria, in this order: {focus}.
Do not let the order of the answers or their length decide.

Instruction: {instruction}

{reference}Answer A: {first}

Answer B: {second}

Give your decision as JSON with this structure, where winner is "A", "B" or "tie":
{{"analysis": "...", "winner": "A"}}"""

# Points for the answer shown in position A.


class PairwiseVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analysis: str
    winner: Preference


def pairwise_schema(max_analysis_chars: int) -> ReplySchema:
    """`PairwiseVerdict`'s schema for generation: the winner one of A, B, tie; the analysis kept short."""
    return ReplySchema("pairwise_verdict", reply_json_schema(PairwiseVerdict, {"analysis": max_analysis_chars}))


def parse_pairwise(raw: str) -> tuple[Optional[Preference], Optional[str]]:
    """(winner, None) for a valid reply, else (None, the problem)."""
    try:
        return PairwiseVerdict.model_validate(json.loads(unfenced(raw))).winner, None
    except json.JSONDecodeError as error:
        return None, f"invalid JSON ({error.msg} at char {error.pos})"
    except ValidationError as error:
        return None, f"invalid verdict ({validation_problems(error, 'reply')})"


def _first_sentence(text: str) -> str:
    match = _FIRST_SENTENCE.match(text)
    assert match is not None  # the pattern's last branch, `.*`, matches any text
    return match.group()


def _comparison_messages(
    system: str, template: str, rubric: Rubric, *, instruction: str, first: str, second: str, reference: Optional[str],
) -> list[dict[str, str]]:
    """`template` filled with the two answers and `rubric`'s criteria (with the reference when the rubric is
    reference-guided); the rubric's system prompt, then `system` (how to reply)."""
    # Each criterion's question, without the scoring instructions a pointwise description may go on with.
    focus = "; ".join(f"{c.name} ({_first_sentence(c.description)})" for c in rubric.criteria)
    # A reference can be a model's text, even the judge's own: it shows what a right answer holds, not the only wording.
    shown = REFERENCE_LINE.format(reference=reference) if rubric.reference_guided and reference else ""
    prompt = template.format(instruction=instruction, first=first, second=second, focus=focus, reference=shown)
    system = f"{rubric.system_prompt}\n\n{system.format(criteria=' and '.join(rubric.names))}"
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def pairwise_messages(
    rubric: Rubric, instruction: str, *, answer_a: str, answer_b: str, reference: Optional[str] = None
) -> list[dict[str, str]]:
    """Ask which answer is better on `rubric`'s criteria: an analysis, then A, B or tie."""
    return _comparison_messages(PAIRWISE_SYSTEM_PROMPT, PAIRWISE_PROMPT_TEMPLATE, rubric, instruction=instruction,
                                first=answer_a, second=answer_b, reference=reference)


def _in_both_orders(pairs: list[tuple[str, str, str, Optional[str]]],
                    messages: Callable[[str, str, str, Optional[str]], list[dict[str, str]]]) -> list[list[dict[str, str]]]:
    """Each `(instruction, answer_a, answer_b, reference)`'s messages with a shown first, then b."""
    return [conversation for instruction, a, b, reference in pairs
            for conversation in (messages(instruction, a, b, reference), messages(instruction, b, a, reference))]


def ask_both_orders(
    judge: Judge, pairs: list[tuple[str, str, str, Optional[str]]],
) -> tuple[list[tuple[Optional[Preference], Optional[str]]], list[JudgeReply]]:
    """Each `(instruction, answer_a, answer_b, reference)` asked of the judge's first backend in both orders (a in
    position A, then in B): per pair two `(winner, problem)` readings, in that order, and the replies."""
    conversations = _in_both_orders(pairs, lambda instruction, first, second, reference: pairwise_messages(
        judge.rubric, instruction, answer_a=first, answer_b=second, reference=reference))
    replies = ask_judge(judge.backend, conversations, cache=judge.cache,
                        is_valid=lambda text: parse_pairwise(text)[0] is not None,
                        reply_schema=pairwise_schema(judge.max_analysis_chars))
    return [parse_pairwise(r.text) if r.text is not None else (None, r.error) for r in replies], replies


PREFERENCE_PROMPT_TEMPLATE = """You are an expert judge. Compare two answers to the same instruction and decide which one is better.
Judge on the rubric's criteria, in this order: {focus}.
Do not let the order of the answers or their length decide.

Instruction: {instruction}

{reference}Answer 1: {first}

Answer 2: {second}

Reply with JSON only: {{"better": 1}} when Answer 1 is better, {{"better": 2}} when Answer 2 is better."""

_PREFERENCE = re.compile(r'(?<!\\)"better"\s*:\s*([12])')  # the number in a preference reply
# The preference alone, before any analysis: one number, whose token probabilities are the verdict.
PREFERENCE_SCHEMA = ReplySchema("preference", {
    "type": "object", "properties": {"better": {"type": "integer", "enum": [1, 2]}}, "required": ["better"],
    "additionalProperties": False,
})


def preference_messages(
    rubric: Rubric, instruction: str, *, answer_1: str, answer_2: str, reference: Optional[str] = None
) -> list[dict[str, str]]:
    """Ask which answer is better as one number (1 or 2), on `rubric`'s criteria."""
    return _comparison_messages(COMPARE_SYSTEM_PROMPT, PREFERENCE_PROMPT_TEMPLATE, rubric, instruction=instruction,
                                first=answer_1, second=answer_2, reference=reference)


def first_answer_preferred(reply: JudgeReply) -> tuple[Optional[float], Optional[str]]:
    """(the probability the judge gave "answer 1 is better" where it wrote its preference, None), or (None, why)."""
    if reply.text is None:
        return None, reply.error
    found = _PREFERENCE.search(reply.text)
    if found is None:
        return None, f"no preference in the reply ({reply.text[:80]!r})"
    distribution = value_distribution(reply.text, reply.logprobs or [], offset=found.start(1), digits=found.group(1),
                                      criterion="better", values=[1, 2])
    if distribution.probabilities is None:
        return None, distribution.problem if reply.logprobs else "the judge backend returned no token logprobs"
    return distribution.probabilities[0], None


def written_or_read_preference(reply: JudgeReply) -> tuple[Optional[float], Optional[str]]:
    """`first_answer_preferred`; from a reply without token logprobs, the number the judge wrote, as a certainty."""
    probability, problem = first_answer_preferred(reply)
    found = _PREFERENCE.search(reply.text or "")
    if probability is None and not reply.logprobs and found is not None:
        return (1.0 if found.group(1) == "1" else 0.0), None
    return probability, problem


def ask_preferences(
    judge: Judge, pairs: list[tuple[str, str, str, Optional[str]]],
) -> tuple[list[tuple[Optional[float], Optional[str]]], list[JudgeReply]]:
    """Each `(instruction, answer_a, answer_b, reference)` asked as a preference of the judge's first backend in both
    orders (a in position 1, then in 2): per pair two readings, in that order, of the probability that the answer
    shown first is better (or None and why; without token logprobs the written number's 1 or 0), and the replies."""
    conversations = _in_both_orders(pairs, lambda instruction, first, second, reference: preference_messages(
        judge.rubric, instruction, answer_1=first, answer_2=second, reference=reference))
    replies = ask_judge(judge.backend, conversations, cache=judge.cache,
                        is_valid=lambda text: _PREFERENCE.search(text) is not None, reply_schema=PREFERENCE_SCHEMA)
    return [written_or_read_preference(reply) for reply in replies], replies


def both_orders_preference(in_order: Optional[float], swapped: Optional[float]) -> Optional[float]:
    """The probability that answer a is better, averaged over its two positions (`in_order`: a shown first), so that a
    judge's lean towards a position cancels out; None where either order has no reading."""
    return None if in_order is None or swapped is None else (in_order + 1.0 - swapped) / 2


def points_for_first_model(in_order: Preference, swapped: Preference) -> float:
    """The first model's points from both orders: it sits in position A first, then in B."""
    return (points(in_order) + 1.0 - points(swapped)) / 2


def orders_disagree(in_order: Preference, swapped: Preference) -> bool:
    """True when the swapped order does not name the same answer (or tie) as the first order."""
    return points(in_order) != 1.0 - points(swapped)


def tally(model_a: str, model_b: str, judge_id: str, rows: list[PairwiseRow]) -> PairwiseComparison:
    """Outcome rates, win rate with its interval, and order disagreement (pure bookkeeping)."""
    judged = [r for r in rows if r.points is not None]
    points = [p for r in judged if (p := r.points) is not None]
    # Both orders are set wherever the points are; a row built otherwise is left out of the order figures.
    orders = [(a, b) for r in judged if (a := r.in_order) is not None and (b := r.swapped) is not None]
    decisive = [w for pair in orders for w in pair if w != "tie"]
    total = len(rows)
    measured = [(r.points, la, lb) for r in rows if (la := r.length_a) is not None and (lb := r.length_b) is not None]
    lengths = ([p for p, _, _ in measured], [la for _, la, _ in measured], [lb for _, _, lb in measured])
    return PairwiseComparison(
        model_a=model_a,
        model_b=model_b,
        judge_model=judge_id,
        pairs=total,
        wins=rate(sum(p > 0.5 for p in points), total),
        ties=rate(sum(p == 0.5 for p in points), total),
        losses=rate(sum(p < 0.5 for p in points), total),
        failed=rate(total - len(judged), total),
        win_rate=round(sum(points) / len(points), 4) if points else None,
        win_rate_ci=bootstrap_ci(points),
        order_disagreement=rate(sum(orders_disagree(a, b) for a, b in orders), len(orders)),
        position_a_preferred=rate(decisive.count("A"), len(decisive)),
        tie_broken_win_rate=(round(sum(broken) / len(broken), 4)
                             if (broken := [p for r in judged if (p := r.tie_broken_points) is not None]) else None),
        tie_broken_pairs=len(broken),
        longer_wins=longer_answer_wins(*lengths) if measured else None,
        length_controlled_win_rate=length_controlled_win_rate(*lengths) if measured else None,
        details=rows,
    )


def _preference_rows(judge: Judge, pairs: list[tuple[str, str, str, Optional[str]]]) -> list[dict[str, Any]]:
    """Per pair: each order's winner, model_a's points from the averaged preference, and the preference."""
    readings, _ = ask_preferences(judge, pairs)
    rows = []
    for k in range(len(pairs)):
        (in_order, error_1), (swapped, error_2) = readings[2 * k], readings[2 * k + 1]
        averaged = both_orders_preference(in_order, swapped)
        rows.append({
            "in_order": compare(in_order, 0.5),
            "swapped": compare(swapped, 0.5),
            "points": None if averaged is None else points(compare(averaged, 0.5)),
            "preference": None if averaged is None else round(averaged, 6),
            "confidence": None if averaged is None else round(abs(averaged - 0.5) * 2, 6),
            "error": (error_1 or error_2) if averaged is None else None,
        })
    return rows


def _verdict_rows(judge: Judge, pairs: list[tuple[str, str, str, Optional[str]]]) -> list[dict[str, Any]]:
    winners, _ = ask_both_orders(judge, pairs)
    rows = []
    for k in range(len(pairs)):
        (in_order, error_1), (swapped, error_2) = winners[2 * k], winners[2 * k + 1]
        rows.append({"in_order": in_order, "swapped": swapped, "error": error_1 or error_2,
                     "points": points_for_first_model(in_order, swapped) if in_order and swapped else None})
    return rows


def compare_answers(a: Dataset, b: Dataset, judge: Judge, method: str = "preference") -> PairwiseComparison:
    """Judge `a`'s answers against `b`'s on the rubric's criteria for every instruction id both have, in
    both orders, by `method` (`preference` or `verdict`, see the module doc). With the scoring's expected
    scores of the first criterion on both, ties are also reported broken by them."""
    criterion = judge.rubric.names[0]
    rows_b = {answer_key(row): row for row in b.to_list()}
    rows_a = [row for row in a.to_list() if answer_key(row) in rows_b]
    if len(rows_a) < len(a) or len(rows_a) < len(rows_b):
        logger.warning("Pairwise: %d of %d / %d answers are answered by both models",
                       len(rows_a), len(a), len(rows_b))
    partners = [rows_b[answer_key(row)] for row in rows_a]  # the other model's answer to the same prompt and sample
    pairs = [(*turn_pair(row[col.INSTRUCTION], row[col.ANSWER], other[col.ANSWER], row.get(col.HISTORY),
                         other.get(col.HISTORY)), row.get(col.REFERENCE)) for row, other in zip(rows_a, partners)]
    judged = _preference_rows(judge, pairs) if method == "preference" else _verdict_rows(judge, pairs)
    rows = [PairwiseRow(id=str(row[col.ID]), sample=sample_of(row), turn=turn_of(row), **outcome,
                        length_a=len(row[col.ANSWER] or ""), length_b=len(other[col.ANSWER] or ""),
                        expected_a=row.get(col.expected(criterion)), expected_b=other.get(col.expected(criterion)))
            for row, other, outcome in zip(rows_a, partners, judged)]
    comparison = tally(a[0][col.MODEL_ID], b[0][col.MODEL_ID], judge.backend.judge_id, rows)
    logger.info("Pairwise %s vs %s (%s): win rate %s %s, orders disagree %s", comparison.model_a, comparison.model_b,
                method, comparison.win_rate, comparison.win_rate_ci, comparison.order_disagreement.describe())
    return comparison.model_copy(update={"method": method})
