"""Judge check: can the judge tell a right answer from a wrong one at all, better than a rule without a judge?

The figures of the report card (`trust.card` runs it): for a fixed sample of rows the judge scores, with the
scoring prompt, each row's right answer and, per tier (`trust.tiers`), a worse answer. A judge worth trusting
scores the right answer higher on the rubric's first criterion nearly always, puts the worse answers at the
scale's lowest level, and passes each tier well above the judge-free rules (`trust.rules`), which are scored on
the same pairs. The flag ("no signal") is decided on integer scores, the kind of figure the summary table leads
with; where the judge gave logprobs, integer ties broken by expected scores are reported beside them.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from llm_engineering.evaluation.rates import Rate, bootstrap_ci, mean, rate
from llm_engineering.evaluation.trust.rules import RULE_NAMES, RULES
from llm_engineering.evaluation.trust.similarity import SimilarityCheck

class JudgeCheckPair(BaseModel):
    """One checked row: the score (first criterion) the judge gave its right answer and a worse answer."""

    id: str
    mismatched_id: str
    reference_accuracy: Optional[int] = Field(description="the right answer's first-criterion score")
    mismatched_accuracy: Optional[int] = Field(description="the worse answer's first-criterion score")
    reference_expected: Optional[float] = None
    mismatched_expected: Optional[float] = None
    error: Optional[str] = None
    right_is_copy: bool = Field(False, description="the right answer is the reference itself where the judge sees the "
                                "reference (its rewording failed or lost a fact)")
    right_answer: Optional[str] = Field(None, description="the right answer judged, where it is not the reference "
                                        "(a rewording)")
    worse_answer: Optional[str] = Field(None, description="the worse answer judged")
    rules: dict[str, int] = Field(default_factory=dict, description="each judge-free rule's order of the two "
                                  "answers: 1 the right one above, 0 a tie, -1 the worse one above")

    @property
    def expected_order(self) -> Optional[int]:
        """+1 the right answer higher, -1 lower, 0 tie: by integer score, ties broken by expected score."""
        if self.reference_accuracy is None or self.mismatched_accuracy is None:
            return None
        if self.reference_accuracy != self.mismatched_accuracy:
            return 1 if self.reference_accuracy > self.mismatched_accuracy else -1
        if self.reference_expected is None or self.mismatched_expected is None:
            return None
        difference = self.reference_expected - self.mismatched_expected
        return (difference > 0) - (difference < 0)


class JudgeCheck(BaseModel):
    """Figures of the judge check. Rates are over every checked pair; a pair with a failed
    verdict counts as failed, never as a tie or dropped."""

    judge_model: str
    criterion: str = "accuracy"
    tier: str = Field("mismatch", description="the report card tier these figures are of")
    pairs: int
    reference_higher: Rate = Field(description="discrimination: the right answer scored above the worse one")
    ties: Rate
    reversals: Rate = Field(description="the worse answer scored above the right one")
    failed: Rate
    reference_accuracy_mean: Optional[float] = Field(description="the right answers' mean first-criterion score")
    mismatched_accuracy_mean: Optional[float] = Field(description="the worse answers' mean first-criterion score")
    reference_accuracy_ci: Optional[list[float]] = None
    mismatched_accuracy_ci: Optional[list[float]] = None
    threshold: float
    no_signal: bool = Field(description="integer discrimination below the threshold")
    reference_higher_expected: Optional[Rate] = Field(
        None, description="discrimination with integer ties broken by expected scores (None without logprobs)")
    expected_problem: Optional[str] = Field(None, description="why there is no tie-broken figure")
    lowest_level: Optional[Rate] = Field(None, description="worse answers scored at the scale's lowest level")
    scale: Optional[list[int]] = Field(None, description="the first criterion's lowest and highest level")
    baselines: dict[str, Rate] = Field(default_factory=dict, description="per judge-free rule (`trust.rules`): the "
                                       "pairs it orders the right answer above the worse one (a tie is no pass)")
    margin_over_rules: Optional[float] = Field(None, description="integer discrimination minus the best rule's rate")
    right_answers: Literal["reference", "reworded"] = Field(
        "reference", description="the right answers: the references, or (for a judge that sees the reference, which a "
        "copy would prove nothing about) the references reworded by the judge")
    right_copies: int = Field(0, description="pairs whose right answer is the reference itself, its rewording having "
                              "failed or lost a fact")
    verdict: str = Field(description="the finding in plain words")
    details: list[JudgeCheckPair] = Field(default_factory=list)
    tiers: list["JudgeCheck"] = Field(default_factory=list, description="the report card's harder tiers")
    judge_calls: Optional[int] = Field(None, description="verdicts the check asked for (all tiers), cached ones included")
    judge_tokens: Optional[int] = Field(None, description="prompt + completion tokens of the calls not served by the cache")
    judge_seconds_per_verdict: Optional[float] = Field(None, description="the judge's wall time over the calls not "
                                                       "served by the cache")

    @property
    def best_rule(self) -> Optional[str]:
        """The judge-free rule that passes this tier most often."""
        scored = {name: r.rate for name, r in self.baselines.items() if r.rate is not None}
        return max(scored, key=lambda name: scored[name]) if scored else None

    def metadata(self) -> dict[str, Any]:
        """The figures as ZenML metadata (logged by the check step and by the summary)."""
        def figures(t: JudgeCheck) -> dict[str, Any]:
            return {"discrimination_rate": t.reference_higher.rate, "discrimination_ci": t.reference_higher.ci,
                    "discrimination_rate_expected": t.reference_higher_expected.rate if t.reference_higher_expected
                    else None, "pairs": t.pairs, "no_signal": t.no_signal,
                    "lowest_level_rate": t.lowest_level.rate if t.lowest_level else None,
                    "baselines": {name: r.rate for name, r in t.baselines.items()}, "margin_over_rules": t.margin_over_rules}

        return {
            "judge": self.judge_model, "verdict": self.verdict, **figures(self),
            "tie_rate": self.ties.rate, "reversal_rate": self.reversals.rate, "failed_rate": self.failed.rate,
            "threshold": self.threshold, "criterion": self.criterion, "right_answers": self.right_answers,
            "tiers": {t.tier: figures(t) for t in self.tiers},
            "judge_calls": self.judge_calls, "judge_tokens": self.judge_tokens,
            "judge_seconds_per_verdict": self.judge_seconds_per_verdict,
        }


class TrustChecks(BaseModel):
    """The `trust_checks` artifact: how far the run's scores can be trusted."""

    judge: Optional[JudgeCheck] = None
    similarity: Optional[SimilarityCheck] = None
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")


WORSE_ANSWER = {
    "mismatch": "an answer to another question",
    "same_topic": "an answer to a neighbouring question",
    "truncated": "an answer that loops without making its point",
    "corrupted": "the answer with its numbers and names swapped",
}


def _rules_text(check: JudgeCheck) -> str:
    best = check.best_rule
    if best is None:
        return ""
    figure = check.baselines[best]
    ahead = f", the judge {check.margin_over_rules * 100:+.0f} points" if check.margin_over_rules is not None else ""
    return f"; the best judge-free rule ({RULE_NAMES[best]}) {figure.count}/{figure.total} ({figure.rate:.0%}){ahead}"


def judge_verdict_text(check: JudgeCheck) -> str:
    """The check's finding in plain words, on integer scores (the table's kind), the rules beside it."""
    discrimination, threshold, tier = check.reference_higher, check.threshold, check.tier
    if not discrimination.total:
        return "NO SIGNAL: the judge's discrimination could not be measured (no pair was checked)."
    interval = f", 95% CI {discrimination.ci[0]:.0%}-{discrimination.ci[1]:.0%}" if discrimination.ci else ""
    found = (f"the right answer scored above {WORSE_ANSWER.get(tier, tier)} in {discrimination.count} of "
             f"{discrimination.total} pairs ({discrimination.rate:.0%}{interval}, integer scores){_rules_text(check)}")
    if tier != "mismatch":
        return (f"{tier}: {found}, " + ("below" if check.no_signal else "at or above") + f" the {threshold:.0%} threshold"
                + (": the judge cannot tell these apart." if check.no_signal else "."))
    if check.no_signal:
        return (f"NO SIGNAL: {found}, below the {threshold:.0%} threshold. Its scores do not tell right "
                f"answers from wrong ones, so this run's accuracy and style means say little: "
                f"use a stronger judge.")
    return f"The judge tells answers apart: {found}, at or above the {threshold:.0%} threshold."


def _mean_ci(values: list[int]) -> Optional[list[float]]:
    return bootstrap_ci([float(v) for v in values]) if len(values) > 1 else None


def judge_check_from_pairs(
    judge_id: str, pairs: list[JudgeCheckPair], threshold: float, criterion: str = "accuracy",
    expected_problem: Optional[str] = None, tier: str = "mismatch", scale: Optional[list[int]] = None,
    right_answers: str = "reference",
) -> JudgeCheck:
    """Rates, intervals, the judge-free rules and the no-signal flag from the checked pairs (pure bookkeeping).
    `scale`: the criterion's lowest and highest level (for the share of worse answers at the lowest)."""
    scored = [p for p in pairs if p.reference_accuracy is not None and p.mismatched_accuracy is not None]
    higher = sum(p.reference_accuracy > p.mismatched_accuracy for p in scored)
    lower = sum(p.reference_accuracy < p.mismatched_accuracy for p in scored)
    total = len(pairs)
    discrimination = rate(higher, total)
    orders = [p.expected_order for p in scored]
    tie_broken = rate(orders.count(1), total) if scored and None not in orders else None
    if scored and tie_broken is None and expected_problem is None:
        expected_problem = "some checked verdicts have no expected score"
    baselines = {name: rate(sum(p.rules.get(name) == 1 for p in pairs), total) for name in RULES
                 if pairs and all(name in p.rules for p in pairs)}
    best = max((r.rate for r in baselines.values() if r.rate is not None), default=None)
    right = [p.reference_accuracy for p in scored]
    wrong = [p.mismatched_accuracy for p in scored]
    check = JudgeCheck(
        judge_model=judge_id,
        criterion=criterion,
        pairs=total,
        reference_higher=discrimination,
        ties=rate(len(scored) - higher - lower, total),
        reversals=rate(lower, total),
        failed=rate(total - len(scored), total),
        reference_accuracy_mean=mean(right),
        mismatched_accuracy_mean=mean(wrong),
        reference_accuracy_ci=_mean_ci(right),
        mismatched_accuracy_ci=_mean_ci(wrong),
        threshold=threshold,
        no_signal=discrimination.rate is None or discrimination.rate < threshold,
        reference_higher_expected=tie_broken,
        expected_problem=None if tie_broken else expected_problem,
        lowest_level=rate(wrong.count(scale[0]), total) if scale else None,
        scale=scale,
        baselines=baselines,
        margin_over_rules=round(discrimination.rate - best, 4) if best is not None and discrimination.rate is not None
        else None,
        right_answers=right_answers,
        right_copies=sum(p.right_is_copy for p in pairs),
        tier=tier,
        details=pairs,
        verdict="",
    )
    return check.model_copy(update={"verdict": judge_verdict_text(check)})
