"""The run's two tables of models (console and HTML report): the scores (each criterion, the first two judge-free
metrics, the checks), narrow enough for a 120-column terminal, with the judge check's right and wrong answers' means
under the models; and what the run cost per model (answers scored, cut, throughput, judge calls and cost)."""

from __future__ import annotations

from llm_engineering.evaluation.rates import fmt, rate_with_ci, with_ci
from llm_engineering.evaluation.report.text import criterion_cell
from llm_engineering.evaluation.stored.summary import EvaluationSummary, ModelScores

MAIN_METRICS = 2  # the first metrics measured (in the config's order) lead the table; every one: `measures_text`
SCORES_CAPTION = ("Criteria: the judge's mean integer score [95% CI]; exp: the expected (probability-weighted) mean. "
                  "Metrics: mean [95% CI] over the answers with a reference (every metric: the table below). Checks: "
                  "answers passing every one of their checks.")


def main_metrics(summary: EvaluationSummary) -> list[str]:
    return summary.metrics[:MAIN_METRICS]


def _has_checks(summary: EvaluationSummary) -> bool:
    return any(s.checks for s in summary.models)


def table_header(summary: EvaluationSummary) -> list[str]:
    """The model, each criterion, the main metrics, the checks where the run has any."""
    return (["model"] + [f"{name} (95% CI)" for name in summary.criteria]
            + [f"{name}\n(95% CI)" for name in main_metrics(summary)]
            + (["checks passed\n(95% CI)"] if _has_checks(summary) else []))


def _metric_cell(s: ModelScores, name: str) -> str:
    m = s.metric(name)
    return "n/a" if m is None or m.mean is None else f"{fmt(m.mean)}\n" + (f"[{m.ci[0]:.2f}, {m.ci[1]:.2f}]" if m.ci else "")


def _checks_cell(s: ModelScores) -> str:
    if s.checks is None:
        return "n/a"
    passed = s.checks.passed
    return f"{rate_with_ci(passed.rate, passed.ci)}\n{passed.count}/{passed.total} answers"


# On lines of their own: the model column stays as narrow as the models' names.
ANCHORS = ("right answers\n(judge check)", "answers to\nother questions\n(judge check)")


def anchor_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Two rows under the models: the judge's mean for the judge check's right answers and for answers to other
    questions (its mismatch tier), on the first criterion, with their expected means, so that a model's means read
    against both."""
    check = summary.judge_check
    if check is None or check.reference_accuracy_mean is None or check.criterion not in summary.criteria:
        return []
    width = len(table_header(summary))
    position = 1 + summary.criteria.index(check.criterion)
    rows = []
    for name, mean, ci, expected in (
            (ANCHORS[0], check.reference_accuracy_mean, check.reference_accuracy_ci, check.reference_expected_mean),
            (ANCHORS[1], check.mismatched_accuracy_mean, check.mismatched_accuracy_ci, check.mismatched_expected_mean)):
        row = [name] + [""] * (width - 1)
        row[position] = (f"checklist {fmt(expected)}\nlevels {with_ci(mean, ci)}" if check.criterion == summary.checklist
                         else with_ci(mean, ci) + (f"\nexp {expected:.2f}" if expected is not None else ""))
        rows.append(row)
    return rows


def table_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Rows for the CLI table and the HTML report (`table_header`), in ranking order, the judge check's anchors last."""
    by_id = {s.model_id: s for s in summary.models}
    has_checks = _has_checks(summary)
    return [
        [s.model_id, *(criterion_cell(c, c.name == summary.checklist, sep="\n", expected="exp") for c in s.criteria),
         *(_metric_cell(s, name) for name in main_metrics(summary)), *([_checks_cell(s)] if has_checks else [])]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ] + anchor_rows(summary)


OPERATIONS_TITLE = "What each model's evaluation took"
OPERATIONS_HEADER = ["model", "scored", "failed", "cut by\nmax_tokens", "output\ntok/s", "judge calls\n(answers)",
                     "judge\ns/answer", "judge\ncost $"]


def operations_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Per model (ranking order): answers scored and failed, cut by max_tokens, throughput, the judge's calls (not
    from its cache), seconds per answer and cost (`OPERATIONS_HEADER`)."""
    by_id = {s.model_id: s for s in summary.models}
    return [
        [s.model_id, f"{s.scored}/{s.rows}", str(s.failed), f"{s.truncated}/{s.rows}" if s.rows else "0",
         fmt(s.tokens_per_second, 1),
         f"{s.judge_usage.calls}" + (f" ({s.judge_usage.answers})" if s.judge_usage.answers is not None else "")
         + f"\n+{s.judge_usage.cached} cached",
         fmt(s.judge_usage.seconds_per_verdict, 2), fmt(s.judge_usage.estimated_cost_usd, 4)]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ]
