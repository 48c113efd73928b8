"""The report card as a table: one row per tier, with every rule without a judge and the paired test against each
(CLI and HTML report)."""

from __future__ import annotations

from llm_engineering.evaluation.rates import fmt
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.evaluation.stored.trust import JudgeCheck
from llm_engineering.evaluation.trust.rules import RULE_NAMES

JUDGE_CHECK_HEADER = ["tier", "outcome", "pairs", "right answer higher (integer scores)", "ties broken by expected scores",
                      "by expected scores alone", "ties", "reversals", "failed", "worse answer at the lowest level",
                      "mean score: right / worse", *[f"rule: {name}" for name in RULE_NAMES.values()],
                      "judge minus the best rule", "the judge against each rule (paired test)", "pairs built",
                      "threshold"]
OUTCOMES = {"passes": "passes", "fails": "fails", "matched_by_rule": "not told apart from a rule",
            "below_rule": "below a rule", "unmeasured": "n/a", "inconclusive": "inconclusive (no references)"}
STANDINGS = {"above": "above", "not_told_apart": "not told apart from", "below": "below"}


def paired_cell(check: JudgeCheck) -> str:
    """`above: longer (12 against 0, p 0.0005); not told apart from: more of the reference's words (1 against 0, p 1)`."""
    cells = []
    for standing, words in STANDINGS.items():
        names = check.rules_by_standing(standing)
        if names:
            cells.append(f"{words}: " + ", ".join(f"{RULE_NAMES.get(n, n)} ({check.paired[n].describe()})" for n in names))
    return "; ".join(cells) or "n/a"


def built_cell(check: JudgeCheck) -> str:
    """`12 of 18 rows kept (dropped: more of the reference's words 4, ...)`, for a tier no rule may pass."""
    if check.candidates is None:
        return "every sampled row"
    dropped = ", ".join(f"{RULE_NAMES.get(n, n)} {c}" for n, c in sorted(check.dropped.items(), key=lambda x: -x[1]))
    return f"{check.pairs} of {check.candidates} rows kept" + (f" (dropped: {dropped})" if dropped else "")
def judge_check_rows(summary: EvaluationSummary) -> list[list[str]]:
    """The judge check, one row per report card tier (`JUDGE_CHECK_HEADER`), none without a check."""
    if summary.judge_check is None:
        return []
    rows = []
    for s in [summary.judge_check, *summary.judge_check.tiers]:
        tie_broken = (s.reference_higher_tie_broken.describe() if s.reference_higher_tie_broken
                      else f"n/a: {s.expected_problem}")
        by_expected = s.reference_higher_by_expected.describe() if s.reference_higher_by_expected else "n/a"
        rules = [s.baselines[name].describe() if name in s.baselines else "n/a" for name in RULE_NAMES]
        margin = "n/a" if s.margin_over_rules is None else f"{s.margin_over_rules * 100:+.0f} points"
        outcome = OUTCOMES[s.outcome] + (" (a rule passes it)" if s.rule_passes else "")
        rows.append([s.tier, outcome, str(s.pairs), s.reference_higher.describe(), tie_broken, by_expected,
                     s.ties.describe(), s.reversals.describe(), s.failed.describe(),
                     s.lowest_level.describe() if s.lowest_level else "n/a",
                     f"{s.criterion}: {fmt(s.reference_accuracy_mean)} / {fmt(s.mismatched_accuracy_mean)}",
                     *rules, margin, paired_cell(s), built_cell(s), f"{s.threshold:.0%}"])
    return rows
