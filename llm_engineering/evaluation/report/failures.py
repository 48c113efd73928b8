"""The judge's failures by cause, as the console, the HTML report and judge-bench's page say them, and the exit of a
run in which every verdict of a model failed.

Causes are read from the stored row errors (`judging.failures`): counted with one example each, the example of an
HTTP error holding the server's status and message. A run with no valid verdict for a model is stored whole (its
answers are kept) and then exits with `NO_VERDICT_EXIT_CODE`, naming the cause and how to judge the answers again.
"""

from __future__ import annotations

from llm_engineering.evaluation.judging.failures import NOT_GENERATED
from llm_engineering.evaluation.stored.figures import FailureCause
from llm_engineering.evaluation.stored.summary import EvaluationSummary, ModelScores
from llm_engineering.evaluation.trust.judge_bench import JudgeBenchReport

# 0 passed, 1 the run failed, 2 a bad command line, 3 a gate failed; 4: the run is stored, but for some model (or
# judge-bench: for every pair) the judge gave no valid verdict at all: its scores mean nothing.
NO_VERDICT_EXIT_CODE = 4

FAILURES_TITLE = "Judge failures by cause (one example each)"
FAILURES_HEADER = ["model", "cause", "verdicts failed", "example"]
BENCH_FAILURES_HEADER = ["judge", "cause", "verdicts failed", "example"]


def causes_text(causes: list[FailureCause]) -> str:
    """`4 HTTP 400 (e.g. 'request failed ...: HTTP 400: <message>'); 1 invalid JSON (e.g. ...)`."""
    return "; ".join(f"{c.count} {c.cause} (e.g. {c.example!r})" for c in causes) or "causes not recorded (a summary " \
        "stored before they were: the rows' judge_error column holds them)"


def failure_rows(models: list[ModelScores]) -> list[list[str]]:
    """One row per model and cause (`FAILURES_HEADER`); none where every verdict is valid."""
    return [[m.model_id, c.cause, f"{c.count} of {m.rows}", c.example] for m in models for c in m.failures]


def failure_lines(summary: EvaluationSummary) -> list[str]:
    """The console's line per model with failed verdicts: how many, by cause, one example each."""
    return [f"Judge failures, {m.model_id}: {m.failed} of {m.rows} answers without a valid verdict: "
            f"{causes_text(m.failures)}" for m in summary.models if m.failures]


def _fix(causes: list[FailureCause]) -> str:
    if all(c.cause == NOT_GENERATED for c in causes):
        return ("No answer was generated (every prompt is longer than engine.max_model_len): raise "
                "engine.max_model_len or shorten the prompts, and run again.")
    return ("The answers are stored: once the cause is fixed (the judge's URL, model, key or server), `python "
            "tools/run.py rescore --only-failed` judges them again, without generating anything.")


def no_verdict_message(summary: EvaluationSummary) -> str | None:
    """Why the run exits with `NO_VERDICT_EXIT_CODE`: each model whose every verdict failed, with the causes and the
    fix; None when every model has some valid verdict."""
    lost = [m for m in summary.models if m.rows and not m.scored]
    if not lost:
        return None
    lines = [f"No valid verdict for {m.model_id}: all {m.rows} of its answers failed to be judged: "
             f"{causes_text(m.failures)}" for m in lost]
    return "\n".join(lines + [_fix([c for m in lost for c in m.failures])])


def bench_failure_rows(report: JudgeBenchReport) -> list[list[str]]:
    """judge-bench's failed verdicts per cause (`BENCH_FAILURES_HEADER`)."""
    return [[report.judge, c.cause, str(c.count), c.example] for c in report.failures]


def bench_failure_line(report: JudgeBenchReport) -> str | None:
    """judge-bench's console line on failed verdicts, by cause; None when none failed."""
    if not report.failures:
        return None
    return f"Judge failures: {sum(c.count for c in report.failures)} verdicts failed: {causes_text(report.failures)}"


def bench_no_verdict_message(report: JudgeBenchReport) -> str | None:
    """Why judge-bench exits with `NO_VERDICT_EXIT_CODE`: every judge call failed, with the causes (the server's status
    and message); None when some verdict is valid."""
    if not report.every_verdict_failed():
        return None
    return (f"Every judge call failed: no verdict on any of the {report.pairs} pairs: {causes_text(report.failures)}. "
            f"Fix the judge (its URL, model, key or server) and run again.")
