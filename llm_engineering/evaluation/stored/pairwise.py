"""The `pairwise_comparisons` artifact: every other model against the first, pair by pair."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from llm_engineering.evaluation.stored.figures import Rate
from llm_engineering.evaluation.stored.ppi import PPIEstimate

Preference = Literal["A", "B", "tie"]  # the better answer of a pair, as a judge or a person says (A: the first)


class PairwiseRow(BaseModel):
    id: str
    sample: int = Field(0, description="with several answers per prompt: which pair of them (the s-th of each model)")
    turn: int = Field(1, description="which turn of its conversation the pair answers (1: a one-turn row)")
    preference: Optional[float] = Field(
        None, description="preference method: the probability that model_a's answer is better, averaged over both orders")
    in_order: Optional[Preference] = Field(None, description="winner with model_a's answer in position A")
    swapped: Optional[Preference] = Field(None, description="winner with model_a's answer in position B")
    points: Optional[float] = Field(None, description="model_a's points: 1 win, 0.5 tie, 0 loss")
    confidence: Optional[float] = Field(
        None, description="preference method: how far the averaged preference is from one half, doubled (0 a coin toss, "
        "1 certain)")
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
    method: str = Field("verdict", description="preference (numbers' probabilities over both orders) or verdict (the "
                        "only method of runs stored before this field)")
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
    ppi: Optional[PPIEstimate] = Field(None, description="with pairwise labels of some pairs (--labels): the win rate "
                                       "corrected by them (PPI++)")
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

