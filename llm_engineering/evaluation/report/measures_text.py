"""The judge-free scores as text (console and HTML report): every metric per model with the rows it covers, the
checks' pass rates (every check of an answer, each check, each type), and every score per category."""

from __future__ import annotations

from typing import Optional

from llm_engineering.evaluation.metrics.names import METRIC_TEXT
from llm_engineering.evaluation.rates import fmt, rate_with_ci, with_ci
from llm_engineering.evaluation.report.score_tables import main_metrics
from llm_engineering.evaluation.stored.metrics import CheckScores, MetricScores
from llm_engineering.evaluation.stored.summary import EvaluationSummary

METRICS_TITLE = "Scores without a judge (mean [95% CI], answers covered)"
METRICS_METHOD = ("Each metric is measured per answer against its row's reference (0 to 1; rows without a reference "
                  "have none, never a 0) and averaged over the answers it covers, with a 95% bootstrap interval. Checks "
                  "are each row's own and the config's: 'every check' counts the answers that pass all of theirs (95% "
                  "Wilson interval), 'each check' every check on its own. Details: docs/metrics.md.")
CATEGORIES_TITLE = "Per category"


def _metric_cell(m: Optional[MetricScores]) -> str:
    return "n/a" if m is None else f"{with_ci(m.mean, m.ci)}, {m.rows}/{m.answers}"


def _check_cells(checks: Optional[CheckScores]) -> list[tuple[str, str]]:
    """(label, cell) of every check figure of one model: every check of an answer, each check, each type."""
    if checks is None:
        return []
    return ([("checks: every check of an answer", checks.passed.describe()),
             ("checks: each check", checks.items.describe())]
            + [(f"check: {kind}", rate.describe()) for kind, rate in checks.by_type.items()])


def metrics_header(summary: EvaluationSummary) -> list[str]:
    return ["metric"] + [m.model_id for m in summary.models]


def metrics_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per metric (`metrics_header`), then one per check figure; none where the run measured nothing."""
    rows = [[name] + [_metric_cell(s.metric(name)) for s in summary.models] for name in summary.metrics]
    labels = list(dict.fromkeys(label for s in summary.models for label, _ in _check_cells(s.checks)))
    for label in labels:
        cells = [dict(_check_cells(s.checks)).get(label, "n/a") for s in summary.models]
        rows.append([label, *cells])
    return rows


def metric_lines(summary: EvaluationSummary) -> list[str]:
    """What each metric is, for the metrics measured."""
    return [f"{name}: {METRIC_TEXT[name]}" for name in summary.metrics if name in METRIC_TEXT]


def categories_header(summary: EvaluationSummary) -> list[str]:
    has_checks = any(c.checks for s in summary.models for c in s.categories)
    return (["category\nmodel", "scored"] + list(summary.criteria) + main_metrics(summary)
            + (["checks passed"] if has_checks else []))


def _two_lines(mean: Optional[float], ci: Optional[list[float]]) -> str:
    return fmt(mean) + (f"\n[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def categories_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Per category (in order of first row), per model: answers scored, each criterion's integer mean, the main
    metrics and the checks (`categories_header`), each with its 95% interval; none without categories."""
    has_checks = any(c.checks for s in summary.models for c in s.categories)
    rows = []
    for category in summary.categories:
        for s in summary.models:
            c = next((c for c in s.categories if c.category == category), None)
            if c is None:
                continue
            metrics = {m.name: m for m in c.metrics}
            checks = [] if not has_checks else [
                "n/a" if c.checks is None else f"{rate_with_ci(c.checks.passed.rate, c.checks.passed.ci)}\n"
                f"{c.checks.passed.count}/{c.checks.passed.total} answers"]
            rows.append([f"{category}\n{s.model_id}", f"{c.scored}/{c.rows}",
                         *(_two_lines(k.mean, k.ci) for k in c.criteria),
                         *(_two_lines(metrics[n].mean, metrics[n].ci) if n in metrics else "n/a"
                           for n in main_metrics(summary)), *checks])
    return rows
