"""The judge against a rule on the same pairs: an exact McNemar test on the pairs where they disagree.

Judge and rule order the same report card pairs, each passing a pair or not, so their rates are paired: what tells
them apart is the discordant pairs alone, those the judge passes and the rule does not (`judge_only`) and those the
rule passes and the judge does not (`rule_only`). Under "no difference" each discordant pair goes either way with
probability one half: the exact two-sided test is statsmodels' `mcnemar(exact=True)`, a binomial test on them. A
point estimate cannot decide it: 20/20 beside 19/20 is one discordant pair, p = 1. Where the judge stands against
the rule (above, below, not told apart at `stored.trust.PAIRED_ALPHA`) is the stored test's `standing`.
"""

from __future__ import annotations

from typing import Sequence

from llm_engineering.evaluation.stored.trust import PairedTest


def mcnemar_p(judge_only: int, rule_only: int) -> float:
    """The exact two-sided McNemar p-value of the discordant counts (1.0 where there are none)."""
    if judge_only + rule_only == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    # Only the off-diagonal cells enter the exact test; the concordant ones are zeros here.
    return round(float(mcnemar([[0, judge_only], [rule_only, 0]], exact=True).pvalue), 6)


def paired_test(judge_passes: Sequence[bool], rule_passes: Sequence[bool]) -> PairedTest:
    """The judge's passes against a rule's, pair by pair (the same pairs, in the same order)."""
    if len(judge_passes) != len(rule_passes):
        raise ValueError(f"{len(judge_passes)} judge outcomes but {len(rule_passes)} rule outcomes: pair them")
    judge_only = sum(j and not r for j, r in zip(judge_passes, rule_passes))
    rule_only = sum(r and not j for j, r in zip(judge_passes, rule_passes))
    return PairedTest(judge_only=judge_only, rule_only=rule_only, p_value=mcnemar_p(judge_only, rule_only))
