"""Judge check: can the judge tell a right answer from a wrong one at all, better than a rule without a judge?

The figures of the report card (`trust.card` runs it): for a fixed sample of rows the judge scores, with the
scoring prompt, each row's right answer and, per tier (`trust.tiers`), a worse answer; the judge-free rules
(`trust.rules`) order the same pairs. Each tier's outcome, on integer scores (the kind of figure the summary table
leads with): the judge passes it at or above the threshold and above every rule; it fails it under the threshold
(it is blind to that kind of wrong answer); or a rule does as well (the tier then says nothing of the judge beyond
what a word count says). The flag "no signal" is the mismatch tier failed: the judge does not even tell answers to
other questions apart, so its scores are noise. Where the judge gave logprobs, integer ties broken by expected
scores and the order by expected scores alone are reported beside them."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.rates import bootstrap_ci, mean, rate
from llm_engineering.evaluation.stored.figures import Rate
from llm_engineering.evaluation.stored.trust import JudgeCheck, JudgeCheckPair
from llm_engineering.evaluation.trust.paired import paired_test
from llm_engineering.evaluation.trust.rules import RULE_NAMES

WORSE_ANSWER = {
    "mismatch": "an answer to another question",
    "same_topic": "an answer to a neighbouring question",
    "truncated": "an answer that loops without making its point",
    "corrupted": "the answer with its numbers and names swapped",
    "relation_swap": "an answer with two of its names or numbers exchanged",
    "negation": "an answer with one statement negated",
}
# What a judge that fails the tier cannot see.
BLIND_TO = {
    "mismatch": "answers to other questions",
    "same_topic": "answers to a neighbouring question",
    "truncated": "answers that loop without making their point",
    "corrupted": "swapped names and numbers",
    "relation_swap": "names or numbers exchanged within an answer",
    "negation": "a statement negated",
}


def figure_text(figure: Rate) -> str:
    """`18/20 (90%, 95% CI 70%-97%)`."""
    if figure.rate is None:
        return figure.describe()
    interval = f", 95% CI {figure.ci[0]:.0%}-{figure.ci[1]:.0%}" if figure.ci else ""
    return f"{figure.count}/{figure.total} ({figure.rate:.0%}{interval})"


def rule_text(check: JudgeCheck, name: str) -> str:
    """`more of the reference's words 20/20 (100%, 95% CI 84%-100%)`, with the paired test where there is one:
    `; the judge 1 pair against 2, p 1`."""
    test = check.paired.get(name)
    return (f"{RULE_NAMES.get(name, name)} {figure_text(check.baselines[name])}"
            + (f" (paired: the judge {test.describe()})" if test else ""))


def best_rule_text(check: JudgeCheck) -> str:
    """The rule that passes the tier most often, as `rule_text`; '' without rules."""
    best = check.best_rule
    return rule_text(check, best) if best else ""


def _best_of(check: JudgeCheck, names: list[str]) -> str:
    """Of `names`, the rule that passes most often (the first on a tie)."""
    return max(names, key=lambda name: (check.baselines[name].rate or 0.0, -names.index(name)))


def built_text(check: JudgeCheck) -> str:
    """A tier no rule may pass: ` (12 of 20 sampled rows built, no rule above the right answer; 5 dropped: more of the
    reference's words 4, the longer answer 2; 3 without a candidate)`; '' for another tier."""
    if check.candidates is None:
        return ""
    dropped = check.candidates - check.pairs
    why = ", ".join(f"{RULE_NAMES.get(name, name)} {count}" for name, count in
                    sorted(check.dropped.items(), key=lambda item: -item[1]))
    return (f" ({check.pairs} of {check.candidates} rows with a candidate kept, none ordered by a rule"
            + (f"; {dropped} dropped, a rule ordering every candidate: {why}" if dropped else "") + ")")


def judge_verdict_text(check: JudgeCheck) -> str:
    """The tier's finding in plain words, on integer scores (the table's kind): passes, fails (blind to its kind of
    wrong answer), or no better than a rule without a judge, with the figures and their intervals."""
    tier = check.tier
    flag = "NO SIGNAL: " if tier == "mismatch" and check.no_signal else ""  # its scores are noise
    if check.outcome == "unmeasured":
        return f"{flag}{tier}: the judge's discrimination could not be measured (no pair was checked){built_text(check)}."
    reading = "" if check.decided_by == "integer" else " (by the checklist's scores)"
    judge = (f"the right answer above {WORSE_ANSWER.get(tier, tier)} in {figure_text(check.deciding)}{reading}"
             f"{built_text(check)}")
    rule = best_rule_text(check)
    if check.outcome == "inconclusive":
        return (f"{tier}: inconclusive: {judge}, under the {check.threshold:.0%} threshold, but the judge scored the "
                f"rows' own answers {check.reference_accuracy_mean:.2f} on average: with no reference, an own answer is "
                f"not known to be right, and both may be wrong; references (a reference column) make the check.")
    if check.outcome == "fails":
        also = f"; a rule without a judge, {rule}" if check.rule_passes else ""
        return (f"{flag}{tier}: fails, blind to {BLIND_TO.get(tier, tier)}: {judge}, under the {check.threshold:.0%} "
                f"threshold{also}.")
    if check.outcome == "below_rule":
        below = check.rules_by_standing("below")
        return f"{tier}: below a rule without a judge: {judge}, against {rule_text(check, _best_of(check, below))}."
    if check.outcome == "matched_by_rule":
        alike = check.rules_by_standing("not_told_apart") or list(check.baselines)
        return (f"{tier}: not told apart from a rule without a judge: {judge}, against "
                f"{rule_text(check, _best_of(check, alike))}.")
    paired = " by a paired test" if check.paired else ""
    beaten = f", above every rule without a judge{paired} (the best: {rule})" if rule else ""
    return f"{tier}: passes: {judge}{beaten}."


def _mean_ci(values: list[int]) -> Optional[list[float]]:
    return bootstrap_ci([float(v) for v in values]) if len(values) > 1 else None


def _expected_mean(values: list[Optional[float]]) -> Optional[float]:
    return mean([v for v in values if v is not None]) if values and None not in values else None


def _judge_passes(pairs: list[JudgeCheckPair], by_expected: bool) -> list[bool]:
    """Per pair: the judge scored the right answer strictly higher (its expected scores where `by_expected`); a failed
    verdict is no pass."""
    if by_expected:
        return [p.reference_expected is not None and p.mismatched_expected is not None
                and p.reference_expected > p.mismatched_expected for p in pairs]
    return [p.reference_accuracy is not None and p.mismatched_accuracy is not None
            and p.reference_accuracy > p.mismatched_accuracy for p in pairs]


def judge_check_from_pairs(
    judge_id: str, pairs: list[JudgeCheckPair], *, threshold: float, criterion: str = "accuracy",
    expected_problem: Optional[str] = None, tier: str = "mismatch", scale: Optional[list[int]] = None,
    right_answers: str = "reference", decided_by: str = "integer", candidates: Optional[int] = None,
    dropped: Optional[dict[str, int]] = None,
) -> JudgeCheck:
    """Rates, intervals, the judge-free rules, the judge against each of them on the same pairs (`trust.paired`) and
    the no-signal flag from the checked pairs (pure bookkeeping). `scale`: the criterion's lowest and highest level
    (for the share of worse answers at the lowest); `candidates`, `dropped`: how a tier no rule may pass was built."""
    scored = [(p, ref, mis) for p in pairs
              if (ref := p.reference_accuracy) is not None and (mis := p.mismatched_accuracy) is not None]
    higher = sum(r > w for _, r, w in scored)
    lower = sum(r < w for _, r, w in scored)
    total = len(pairs)
    discrimination = rate(higher, total)
    orders = [p.expected_order for p, _, _ in scored]
    tie_broken = rate(orders.count(1), total) if scored and None not in orders else None
    expected = [(p.reference_expected, p.mismatched_expected) for p, _, _ in scored]
    by_expected = (rate(sum(r > w for r, w in expected), total)  # type: ignore[operator]  # None excluded just below
                   if scored and all(r is not None and w is not None for r, w in expected) else None)
    if scored and tie_broken is None and expected_problem is None:
        expected_problem = "some checked verdicts have no expected score"
    rules = [name for name in (pairs[0].rules if pairs else {}) if all(name in p.rules for p in pairs)]
    baselines = {name: rate(sum(p.rules[name] == 1 for p in pairs), total) for name in rules}
    best = max((r.rate for r in baselines.values() if r.rate is not None), default=None)
    deciding = by_expected if decided_by == "expected" and by_expected is not None else discrimination
    passes = _judge_passes(pairs, deciding is by_expected)
    paired = {name: paired_test(passes, [p.rules[name] == 1 for p in pairs]) for name in rules}
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
        no_signal=False,
        reference_higher_tie_broken=tie_broken,
        reference_higher_by_expected=by_expected,
        expected_problem=None if tie_broken else expected_problem,
        lowest_level=rate(wrong.count(scale[0]), total) if scale else None,
        scale=scale,
        baselines=baselines,
        margin_over_rules=round(deciding.rate - best, 4) if best is not None and deciding.rate is not None else None,
        paired=paired,
        candidates=candidates,
        dropped=dropped or {},
        decided_by="expected" if deciding is by_expected else "integer",
        right_answers=right_answers,
        right_copies=sum(p.right_is_copy for p in pairs),
        tier=tier,
        details=pairs,
        verdict="",
    )
    # No signal: the mismatch tier failed (not where the judge may have been right to call both answers wrong).
    check = check.model_copy(update={"no_signal": check.outcome in ("fails", "unmeasured")})
    return check.model_copy(update={"verdict": judge_verdict_text(check)})
