"""The evaluation summary as text: table rows (CLI and HTML report) and trust lines (CLI, logs)."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.summary import EvaluationSummary
from llm_engineering.evaluation.trust_text import (
    PAIRWISE_METHOD,
    fmt,
    judge_check_figures,
    note_text,
    pairwise_finding,
    pairwise_name,
    rate_with_ci,
    similarity_check_finding,
)

TABLE_HEADER = ["model", "accuracy (95% CI)", "style (95% CI)", "similarity (95% CI)", "scored", "failed",
                "output tok/s", "judge calls", "judge cost $"]
COMPARISON_HEADER = ["difference", "criterion", "mean (95% CI)", "paired rows"]
JUDGE_CHECK_HEADER = ["judge", "pairs", "reference higher", "ties", "reversals", "failed",
                      "mean accuracy: reference / mismatched", "threshold"]
PAIRWISE_HEADER = ["model A vs model B", "win rate of A (95% CI)", "A wins", "ties", "A loses", "failed",
                   "orders disagree", "first position chosen"]


def with_ci(mean: Optional[float], ci: Optional[list[float]]) -> str:
    """`2.50 [2.00, 3.00]`: a mean and its 95% interval."""
    return fmt(mean) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def table_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Rows for the CLI table and the HTML report, in ranking order."""
    by_id = {s.model_id: s for s in summary.models}
    return [
        [
            s.model_id,
            with_ci(s.accuracy_mean, s.accuracy_ci),
            with_ci(s.style_mean, s.style_ci),
            with_ci(s.similarity_mean, s.similarity_ci),
            f"{s.scored}/{s.rows}",
            str(s.failed),
            fmt(s.tokens_per_second, 1),
            f"{s.judge_usage.calls} (+{s.judge_usage.cached} cached)",
            fmt(s.judge_usage.estimated_cost_usd, 4),
        ]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ]


def comparison_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per paired model comparison (`COMPARISON_HEADER`)."""
    return [
        [f"{c.model_a} - {c.model_b}", c.criterion, with_ci(c.difference, c.ci), str(c.paired_rows)]
        for c in summary.comparisons
    ]


def judge_check_rows(summary: EvaluationSummary) -> list[list[str]]:
    """The judge check as one row (`JUDGE_CHECK_HEADER`), none without a check."""
    s = summary.judge_check
    if s is None:
        return []
    return [[s.judge_model, str(s.pairs), s.reference_higher.describe(), s.ties.describe(), s.reversals.describe(),
             s.failed.describe(), f"{fmt(s.reference_accuracy_mean)} / {fmt(s.mismatched_accuracy_mean)}",
             f"{s.threshold:.0%}"]]


def pairwise_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per pairwise comparison (`PAIRWISE_HEADER`)."""
    return [
        [pairwise_name(p), rate_with_ci(p.win_rate, p.win_rate_ci), p.wins.describe(),
         p.ties.describe(), p.losses.describe(), p.failed.describe(), p.order_disagreement.describe(),
         p.position_a_preferred.describe()]
        for p in summary.pairwise
    ]


def trust_lines(summary: EvaluationSummary) -> list[str]:
    """How far the scores can be trusted, in plain words (CLI, logs)."""
    lines = []
    if summary.judge_check:
        s = summary.judge_check
        lines.append(f"Judge check ({s.judge_model}): {s.verdict}")
        lines.append(f"  {judge_check_figures(s)}")
    if summary.similarity_check:
        c = summary.similarity_check
        lines.append(f"Similarity metric check ({c.embedding_model}): {similarity_check_finding(c)}")
    for p in summary.pairwise:
        lines.append(f"Pairwise {pairwise_name(p)} ({PAIRWISE_METHOD}): {pairwise_finding(p)}")
    return lines + [note_text(note) for note in summary.notes]
