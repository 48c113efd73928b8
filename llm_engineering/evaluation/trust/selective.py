"""Verdicts with a guarantee: the confidence above which a judge agrees with people at least as often as a target,
with a stated risk (Jung, Brahman and Choi, "Trust or Escalate", 2024), and what share of verdicts clears it.

On labelled calibration pairs, candidate thresholds (those keeping 5%, 10%... of the verdicts) are tested from the
most confident down (fixed-sequence testing): at each, the verdicts at or above it are kept and an exact one-sided
binomial test asks whether their agreement exceeds the target; the first threshold whose test fails ends the sequence,
and the last one that passed is the answer. Tested in this fixed order, the chance that the chosen threshold's true
agreement is under the target is at most the risk, with no correction for the number of thresholds tried. Verdicts
under it are the ones to hand to a person or a stronger judge.

A verdict's confidence, per way of judge-bench (others have none):
- `preference_averaged`: how far the probability that output 1 is better, averaged over both orders, is from one
  half, doubled (0: a coin toss, 1: certain);
- `preference`: the same for each order's own probability;
- `pointwise_expected`: how far apart the two answers' expected scores are, in points of the rubric's scale.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, Field
from scipy.stats import binom

from llm_engineering.evaluation.rates import rate
from llm_engineering.evaluation.stored.figures import Rate

if TYPE_CHECKING:
    from llm_engineering.evaluation.trust.judge_bench import JudgeBenchReport, PairDecisions

CONFIDENT_WAYS = ("preference_averaged", "preference", "pointwise_expected")
RISK = 0.1
STEPS = 20  # candidate thresholds: every 5% of the verdicts


class SelectiveFigures(BaseModel):
    """One way's verdicts kept at the threshold found on the calibration pairs, on the pairs benched."""

    threshold: Optional[float] = Field(description="the lowest confidence kept (None: no threshold met the target on "
                                                   "the calibration pairs: nothing can be kept with this guarantee)")
    calibration_agreement: Optional[Rate] = Field(None, description="on the calibration pairs, at the threshold")
    agreement: Rate = Field(description="decisions kept that name the labelled output (pairs not labelled a tie)")
    coverage: Rate = Field(description="decisions kept, of every decision on pairs not labelled a tie")


def decision_confidences(pair: PairDecisions, way: str) -> list[Optional[float]]:
    """The confidence of each of a pair's decisions in `way` (`pair.preference`: output 1's probability with output 1
    shown first, then second, then averaged; `pair.expected`: each output's expected score)."""
    if way == "pointwise_expected":
        first, second = pair.expected or (None, None)
        return [None if first is None or second is None else round(abs(first - second), 6)]
    probabilities = pair.preference or [None, None, None]
    chosen = probabilities[2:3] if way == "preference_averaged" else probabilities[:2]
    return [None if p is None else round(abs(p - 0.5) * 2, 6) for p in chosen]


def candidate_thresholds(confidences: list[float], steps: int = STEPS) -> list[float]:
    """The thresholds tried, most confident first: those that keep 1/steps, 2/steps... of the verdicts. Chosen from the
    confidences alone (never from which verdicts were right), so testing them in this order keeps its guarantee; a
    threshold that kept a handful would fail its test and end the sequence before any useful one is reached."""
    ranked = sorted(confidences, reverse=True)
    return sorted({ranked[math.ceil(len(ranked) * k / steps) - 1] for k in range(1, steps + 1)} if ranked else set(),
                  reverse=True)


def fixed_sequence_threshold(verdicts: list[tuple[Optional[float], bool]], target: float,
                             risk: float = RISK) -> Optional[float]:
    """The lowest candidate confidence (`candidate_thresholds`) at which the `(confidence, right)` verdicts kept
    (confidence at or above it) agree more often than `target`, every higher candidate passing too, each by an exact
    binomial test at level `risk`."""
    scored = [(c, right) for c, right in verdicts if c is not None]
    # A threshold that keeps fewer verdicts than this fails even if every one is right: it is not tested (decided by
    # the counts alone, so skipping it keeps the guarantee) rather than ending the sequence.
    least = math.ceil(math.log(risk) / math.log(target))
    found = None
    for threshold in candidate_thresholds([c for c, _ in scored]):
        kept = [right for c, right in scored if c >= threshold]
        if len(kept) < least:
            continue
        # P(at least this many right | agreement = target): small when the agreement is above the target.
        if binom.sf(sum(kept) - 1, len(kept), target) > risk:
            break
        found = threshold
    return found


def labelled_verdicts(details: list[PairDecisions], way: str) -> list[tuple[Optional[float], bool]]:
    """`(confidence, right)` of every decision of `way` on the pairs not labelled a tie (a failed one: no confidence,
    wrong)."""
    return [(confidence, decision == d.label)
            for d in details if d.label != "tie"
            for decision, confidence in zip(d.decisions[way], decision_confidences(d, way))]


def selective_figures(calibration: list[PairDecisions], benched: list[PairDecisions], way: str, target: float,
                      risk: float = RISK) -> SelectiveFigures:
    """The threshold found on the `calibration` pairs' decisions, applied to the `benched` ones (`PairDecisions`)."""
    calibrating = labelled_verdicts(calibration, way)
    threshold = fixed_sequence_threshold(calibrating, target, risk)

    def kept_of(verdicts: list[tuple[Optional[float], bool]]) -> list[bool]:
        return [right for c, right in verdicts if threshold is not None and c is not None and c >= threshold]

    verdicts = labelled_verdicts(benched, way)
    kept, at_threshold = kept_of(verdicts), kept_of(calibrating)
    return SelectiveFigures(threshold=threshold,
                            calibration_agreement=rate(sum(at_threshold), len(at_threshold)) if at_threshold else None,
                            agreement=rate(sum(kept), len(kept)), coverage=rate(len(kept), len(verdicts)))


def with_selective(report: JudgeBenchReport, calibration: JudgeBenchReport, target: float,
                   risk: float = RISK) -> JudgeBenchReport:
    """`report` with, for each way that has a confidence (and decisions in both), the threshold found on `calibration`
    and its figures."""
    decided = [way for way in CONFIDENT_WAYS if all(way in d.decisions for d in [*report.details, *calibration.details])]
    return report.model_copy(update={
        "calibration_file": calibration.pairs_file, "target_agreement": target, "risk": risk,
        "selective": {way: selective_figures(calibration.details, report.details, way, target, risk) for way in decided}})
