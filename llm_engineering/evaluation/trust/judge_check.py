"""Judge check: can the judge tell a right answer from a wrong one at all, better than a rule without a judge?

The figures of the report card (`trust.card` runs it): for a fixed sample of rows the judge scores, with the
scoring prompt, each row's right answer and, per tier (`trust.tiers`), a worse answer. A judge worth trusting
scores the right answer higher on the rubric's first criterion nearly always, puts the worse answers at the
scale's lowest level, and passes each tier well above the judge-free rules (`trust.rules`), which are scored on
the same pairs. The flag ("no signal") is decided on integer scores, the kind of figure the summary table leads
with; where the judge gave logprobs, integer ties broken by expected scores are reported beside them.
"""

from __future__ import annotations

from typing import Optional


from llm_engineering.evaluation.rates import bootstrap_ci, mean, rate
from llm_engineering.evaluation.trust.rules import RULE_NAMES, RULES
from llm_engineering.evaluation.stored.trust import JudgeCheck, JudgeCheckPair

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


def _expected_mean(values: list[Optional[float]]) -> Optional[float]:
    return mean([v for v in values if v is not None]) if values and None not in values else None


def judge_check_from_pairs(
    judge_id: str, pairs: list[JudgeCheckPair], *, threshold: float, criterion: str = "accuracy",
    expected_problem: Optional[str] = None, tier: str = "mismatch", scale: Optional[list[int]] = None,
    right_answers: str = "reference",
) -> JudgeCheck:
    """Rates, intervals, the judge-free rules and the no-signal flag from the checked pairs (pure bookkeeping).
    `scale`: the criterion's lowest and highest level (for the share of worse answers at the lowest)."""
    scored = [(p, ref, mis) for p in pairs
              if (ref := p.reference_accuracy) is not None and (mis := p.mismatched_accuracy) is not None]
    higher = sum(r > w for _, r, w in scored)
    lower = sum(r < w for _, r, w in scored)
    total = len(pairs)
    discrimination = rate(higher, total)
    orders = [p.expected_order for p, _, _ in scored]
    tie_broken = rate(orders.count(1), total) if scored and None not in orders else None
    if scored and tie_broken is None and expected_problem is None:
        expected_problem = "some checked verdicts have no expected score"
    baselines = {name: rate(sum(p.rules.get(name) == 1 for p in pairs), total) for name in RULES
                 if pairs and all(name in p.rules for p in pairs)}
    best = max((r.rate for r in baselines.values() if r.rate is not None), default=None)
    right = [r for _, r, _ in scored]
    wrong = [w for _, _, w in scored]
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
        reference_expected_mean=_expected_mean([p.reference_expected for p, _, _ in scored]),
        mismatched_expected_mean=_expected_mean([p.mismatched_expected for p, _, _ in scored]),
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
