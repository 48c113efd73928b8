"""Pairwise comparison of two models' answers, each pair judged twice with positions swapped.

As MT-Bench and AlpacaEval compare models: the judge sees one instruction and two answers and
names the better one. Judges favour a position, so every pair is asked in both orders and the
two verdicts are averaged for the model (1 a win, 0.5 a tie, 0 a loss); how often the two
orders disagree is reported as well. Calls go through the scoring backend, cache and retries.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal, Optional

from datasets import Dataset
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.agreement import length_controlled_win_rate, longer_answer_wins
from llm_engineering.evaluation.judging.judge import Judge
from llm_engineering.evaluation.judging.transport import JudgeReply, ReplySchema, ask_judge, reply_json_schema
from llm_engineering.evaluation.rates import Rate, bootstrap_ci, rate
from llm_engineering.evaluation.judging.rubric import Rubric

logger = logging.getLogger(__name__)

PAIRWISE_SYSTEM_PROMPT = (
    "You are a helpful assistant who compares two answers based on {criteria}. "
    "Provide your response in JSON format with a short analysis and the better answer."
)

PAIRWISE_PROMPT_TEMPLATE = """You are an expert judge. Compare two answers to the same instruction and decide which one is better.
Judge on the rubric's criteria, in this order: {focus}.
Do not let the order of the answers or their length decide.

Instruction: {instruction}

{reference}Answer A: {answer_a}

Answer B: {answer_b}

Give your decision as JSON with this structure, where winner is "A", "B" or "tie":
{{"analysis": "...", "winner": "A"}}"""

Winner = Literal["A", "B", "tie"]
# Points for the answer shown in position A.
_POINTS = {"A": 1.0, "tie": 0.5, "B": 0.0}


class PairwiseVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    analysis: str
    winner: Winner


def pairwise_schema(max_analysis_chars: int) -> ReplySchema:
    """`PairwiseVerdict`'s schema for generation: the winner one of A, B, tie; the analysis kept short."""
    return ReplySchema("pairwise_verdict", reply_json_schema(PairwiseVerdict, {"analysis": max_analysis_chars}))


def parse_pairwise(raw: str) -> tuple[Optional[Winner], Optional[str]]:
    """(winner, None) for a valid reply, else (None, the problem)."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return PairwiseVerdict.model_validate(json.loads(text)).winner, None
    except json.JSONDecodeError as error:
        return None, f"invalid JSON ({error.msg} at char {error.pos})"
    except ValidationError as error:
        return None, "invalid verdict (" + "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}" for e in error.errors()) + ")"


def pairwise_messages(
    rubric: Rubric, instruction: str, answer_a: str, answer_b: str, reference: Optional[str] = None
) -> list[dict[str, str]]:
    """Ask which answer is better on `rubric`'s criteria (with the reference when the rubric is reference-guided)."""
    focus = "; ".join(f"{c.name} ({c.description})" for c in rubric.criteria)
    shown = f"Reference answer (known to be correct): {reference}\n\n" if rubric.reference_guided and reference else ""
    prompt = PAIRWISE_PROMPT_TEMPLATE.format(instruction=instruction, answer_a=answer_a, answer_b=answer_b, focus=focus,
                                             reference=shown)
    system = PAIRWISE_SYSTEM_PROMPT.format(criteria=" and ".join(rubric.names))
    return [{"role": "system", "content": system}, {"role": "user", "content": prompt}]


def ask_both_orders(
    judge: Judge, pairs: list[tuple[str, str, str, Optional[str]]],
) -> tuple[list[tuple[Optional[Winner], Optional[str]]], list[JudgeReply]]:
    """Each `(instruction, answer_a, answer_b, reference)` asked of the judge's first backend in both orders (a in
    position A, then in B): per pair two `(winner, problem)` readings, in that order, and the replies."""
    conversations = []
    for instruction, answer_a, answer_b, reference in pairs:
        conversations += [pairwise_messages(judge.rubric, instruction, answer_a, answer_b, reference),
                          pairwise_messages(judge.rubric, instruction, answer_b, answer_a, reference)]
    replies = ask_judge(judge.backend, conversations, judge.cache, lambda text: parse_pairwise(text)[0] is not None,
                        pairwise_schema(judge.max_analysis_chars))
    return [parse_pairwise(r.text) if r.text is not None else (None, r.error) for r in replies], replies


def points_for_first_model(in_order: Winner, swapped: Winner) -> float:
    """The first model's points from both orders: it sits in position A first, then in B."""
    return (_POINTS[in_order] + 1.0 - _POINTS[swapped]) / 2


def orders_disagree(in_order: Winner, swapped: Winner) -> bool:
    """True when the swapped order does not name the same answer (or tie) as the first order."""
    return _POINTS[in_order] != 1.0 - _POINTS[swapped]


class PairwiseRow(BaseModel):
    id: str
    in_order: Optional[Winner] = Field(None, description="winner with model_a's answer in position A")
    swapped: Optional[Winner] = Field(None, description="winner with model_a's answer in position B")
    points: Optional[float] = Field(None, description="model_a's points: 1 win, 0.5 tie, 0 loss")
    error: Optional[str] = None
    length_a: Optional[int] = Field(None, description="characters of model_a's answer")
    length_b: Optional[int] = None
    expected_a: Optional[float] = Field(None, description="model_a's expected score (first criterion) from scoring")
    expected_b: Optional[float] = None

    @property
    def tie_broken_points(self) -> Optional[float]:
        """The points, a tie broken by the two answers' expected scores (None: a tie they cannot break)."""
        if self.points != 0.5:
            return self.points
        if self.expected_a is None or self.expected_b is None:
            return None
        return 1.0 if self.expected_a > self.expected_b else 0.0 if self.expected_a < self.expected_b else 0.5


class PairwiseComparison(BaseModel):
    """`model_a` against `model_b` on the instructions both answered. Win, tie, loss and failed
    rates are over every pair (a failed verdict is its own outcome, never a tie)."""

    model_a: str
    model_b: str
    judge_model: str
    pairs: int
    wins: Rate
    ties: Rate
    losses: Rate
    failed: Rate
    win_rate: Optional[float] = Field(description="model_a's mean points over judged pairs (ties count half)")
    win_rate_ci: Optional[list[float]] = Field(None, description="95% bootstrap interval")
    order_disagreement: Rate = Field(description="judged pairs whose two orders named different winners")
    position_a_preferred: Rate = Field(description="decisive verdicts that chose the answer shown first")
    tie_broken_win_rate: Optional[float] = Field(
        None, description="win rate over the judged pairs whose ties the answers' expected scores from scoring break "
        "(a pair without both expected scores is left out unless it was decisive)")
    tie_broken_pairs: int = Field(0, description="pairs the tie-broken win rate is over")
    longer_wins: Optional[Rate] = Field(None, description="decisive pairs of unequal length won by the longer answer")
    length_controlled_win_rate: Optional[float] = Field(
        None, description="win rate at equal length: logistic regression of the points on the length difference "
        "(AlpacaEval's length control for one pair of models)")
    details: list[PairwiseRow] = Field(default_factory=list)

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the comparison step and by the summary)."""
        return {
            "win_rate": self.win_rate, "win_rate_ci": self.win_rate_ci, "wins": self.wins.rate,
            "ties": self.ties.rate, "losses": self.losses.rate, "failed": self.failed.rate,
            "order_disagreement": self.order_disagreement.rate, "pairs": self.pairs,
        }


class PairwiseReport(BaseModel):
    """The `pairwise_comparisons` artifact: every other model against the first (the baseline)."""

    comparisons: list[PairwiseComparison] = Field(default_factory=list)


def tally(model_a: str, model_b: str, judge_id: str, rows: list[PairwiseRow]) -> PairwiseComparison:
    """Outcome rates, win rate with its interval, and order disagreement (pure bookkeeping)."""
    judged = [r for r in rows if r.points is not None]
    points = [r.points for r in judged]
    verdicts = [w for r in judged for w in (r.in_order, r.swapped)]
    decisive = [w for w in verdicts if w != "tie"]
    total = len(rows)
    measured = [r for r in rows if r.length_a is not None and r.length_b is not None]
    lengths = ([r.points for r in measured], [r.length_a for r in measured], [r.length_b for r in measured])
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
        order_disagreement=rate(sum(orders_disagree(r.in_order, r.swapped) for r in judged), len(judged)),
        position_a_preferred=rate(decisive.count("A"), len(decisive)),
        tie_broken_win_rate=(round(sum(broken) / len(broken), 4)
                             if (broken := [p for r in judged if (p := r.tie_broken_points) is not None]) else None),
        tie_broken_pairs=len(broken),
        longer_wins=longer_answer_wins(*lengths) if measured else None,
        length_controlled_win_rate=length_controlled_win_rate(*lengths) if measured else None,
        details=rows,
    )


def compare_answers(a: Dataset, b: Dataset, judge: Judge) -> PairwiseComparison:
    """Judge `a`'s answers against `b`'s on the rubric's criteria for every instruction id both have, in
    both orders. With the scoring's expected scores of the first criterion on both, ties are also
    reported broken by them."""
    criterion = judge.rubric.names[0]
    answers_b = {row[col.ID]: row[col.ANSWER] for row in b.select_columns([col.ID, col.ANSWER]).to_list()}
    shown = [col.ID, col.INSTRUCTION, col.ANSWER] + ([col.REFERENCE] if col.REFERENCE in a.column_names else [])
    rows_a = [row for row in a.select_columns(shown).to_list() if row[col.ID] in answers_b]
    if len(rows_a) < len(a) or len(rows_a) < len(answers_b):
        logger.warning("Pairwise: %d of %d / %d instructions are answered by both models",
                       len(rows_a), len(a), len(answers_b))
    expected_a, expected_b = (
        dict(zip(d[col.ID], d[col.expected(criterion)])) if col.expected(criterion) in d.column_names else {}
        for d in (a, b)
    )
    winners, _ = ask_both_orders(judge, [(row[col.INSTRUCTION], row[col.ANSWER], answers_b[row[col.ID]],
                                          row.get(col.REFERENCE)) for row in rows_a])
    rows = []
    for k, row in enumerate(rows_a):
        (in_order, error_1), (swapped, error_2) = winners[2 * k], winners[2 * k + 1]
        points = points_for_first_model(in_order, swapped) if in_order and swapped else None
        rows.append(PairwiseRow(id=str(row[col.ID]), in_order=in_order, swapped=swapped, points=points,
                                error=error_1 or error_2, length_a=len(row[col.ANSWER] or ""),
                                length_b=len(answers_b[row[col.ID]] or ""), expected_a=expected_a.get(row[col.ID]),
                                expected_b=expected_b.get(row[col.ID])))
    comparison = tally(a[0][col.MODEL_ID], b[0][col.MODEL_ID], judge.backend.judge_id, rows)
    logger.info("Pairwise %s vs %s: win rate %s %s, orders disagree %s", comparison.model_a, comparison.model_b,
                comparison.win_rate, comparison.win_rate_ci, comparison.order_disagreement.describe())
    return comparison
