"""A run comparison (`--compare-to`) as text: the tables the CLI and the HTML report show, and the
one-line reasons of the `--fail-on-regression` gate."""

from __future__ import annotations

from llm_engineering.evaluation.rates import fmt
from llm_engineering.evaluation.report.comparison import MetricChange, RunComparison

METRICS_HEADER = ["model", "metric", "this run", "earlier run", "difference (95% CI)", "p", "detectable (80% power)",
                  "paired rows", "verdict"]
ROWS_HEADER = ["model", "id", "instruction", "earlier scores", "scores now", "change", "answer changed"]
METHOD = ("Differences are this run minus the earlier run, paired on the rows both runs scored; the interval is a "
          "95% bootstrap over those rows, p its two-sided bootstrap p-value. A metric regressed when it is lower and "
          "its p-value passes Holm's correction across every metric and model compared (5% family-wise), so that "
          "two runs alike flag nothing in 19 comparisons of 20 however many metrics are tested; 'worse, not after "
          "correction' marks an interval below zero that does not. Detectable: the smallest difference these rows "
          "find with 80% power at 5%, from the spread of the paired differences.")


def _difference(change: MetricChange) -> str:
    if change.difference is None:
        return "n/a"
    interval = f" [{change.ci[0]:+.2f}, {change.ci[1]:+.2f}]" if change.ci else ""
    return f"{change.difference:+.3f}{interval}"


def _verdict(change: MetricChange) -> str:
    if change.regressed:
        return "REGRESSED"
    if change.worse_uncorrected:
        return "worse, not after correction"
    if change.ci is not None and change.ci[0] > 0:
        return "improved"
    return "no clear change"


def metric_rows(comparison: RunComparison) -> list[list[str]]:
    return [[m.model_id, m.metric, fmt(m.current_mean), fmt(m.previous_mean), _difference(m),
             "n/a" if m.p_value is None else f"{m.p_value:.3g}", fmt(m.detectable), str(m.paired_rows), _verdict(m)]
            for m in comparison.metrics]


def _scores(scores: dict[str, int]) -> str:
    return ", ".join(f"{name} {value}" for name, value in scores.items())


def changed_rows(comparison: RunComparison) -> list[list[str]]:
    return [[r.model_id, r.id + (f" #{r.sample}" if r.sample else ""), r.instruction[:80], _scores(r.previous_scores),
             _scores(r.current_scores), f"{r.change:+d}", "yes" if r.answer_changed else "no"] for r in comparison.changed_rows]


def title(comparison: RunComparison) -> str:
    return f"Against run {comparison.previous_run}"


def notes(comparison: RunComparison) -> list[str]:
    lines = []
    if comparison.unmatched_models:
        lines.append(f"Not in run {comparison.previous_run}, so not compared: {', '.join(comparison.unmatched_models)}.")
    if not comparison.metrics:
        lines.append(f"Run {comparison.previous_run} shares no scored rows of the same models with this run.")
    return lines


def regression_lines(comparison: RunComparison) -> list[str]:
    """One line per regressed metric, for the `--fail-on-regression` gate."""
    return [f"regression: {m.model_id} {m.metric} {_difference(m)} against run {comparison.previous_run} "
            f"({m.paired_rows} paired rows; p = {m.p_value:.3g}, significant after Holm's correction across the "
            f"{comparison.tested} metrics compared)" for m in comparison.regressions()]
