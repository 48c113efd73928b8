"""A finished run reported: its summary (and the comparison with an earlier run) loaded from the store, the JSON
and HTML reports written, the console's blocks of text and tables, and the CI gates checked.

The command line decides what to print and when to exit: `print_blocks` is the only function here that writes
(to stdout); nothing here exits.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from rich.console import Console
from rich.table import Table

from llm_engineering.evaluation.report import comparison_text as compared
from llm_engineering.evaluation.report import measures_text as measured
from llm_engineering.evaluation.report.comparison import RunComparison, compare_runs
from llm_engineering.evaluation.report.failures import failure_lines
from llm_engineering.evaluation.report.gates import failed_gates, failed_rate_failures, parse_gate
from llm_engineering.evaluation.report.html import render_html
from llm_engineering.evaluation.report.score_tables import (
    OPERATIONS_HEADER,
    OPERATIONS_TITLE,
    SCORES_CAPTION,
    operations_rows,
    table_header,
    table_rows,
)
from llm_engineering.evaluation.report.text import COMPARISON_HEADER, comparison_rows, trust_lines
from llm_engineering.evaluation.report.turns_text import (
    PAIRWISE_TURNS_HEADER,
    TURNS_TITLE,
    pairwise_turn_rows,
    turn_header,
    turn_rows,
)
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.infrastructure.zenml_runs import evaluations_of, run_results


@dataclass
class RunReport:
    """What the CLI says about a finished run."""

    run_name: str
    summary: Optional[EvaluationSummary]
    comparison: Optional[RunComparison] = None
    json_path: Optional[Path] = None
    html_path: Optional[Path] = None
    published: list[str] = field(default_factory=list)  # `Published <stage> of <repo>: <where>`
    publish_errors: list[str] = field(default_factory=list)


def _labelling_context(summary: EvaluationSummary, run_name: str) -> EvaluationSummary:
    """The summary named by the run reported (a cached summarize step hands on the summary of the run that made
    it), with the scales of its rubric where a summary stored before summaries held them names a shipped one, so
    that its report's rows can be labelled too."""
    from llm_engineering.evaluation.judging.rubric import load_rubric, shipped_rubrics

    update: dict[str, Any] = {"run": run_name} if summary.run != run_name else {}
    if not summary.scales and summary.rubric in shipped_rubrics():
        update["scales"] = load_rubric(summary.rubric).scales
    return summary.model_copy(update=update) if update else summary


def write_reports(summary: EvaluationSummary, run_name: str, directory: Path,
                  comparison: Optional[RunComparison] = None) -> tuple[Path, Path]:
    """`<run>.json` and `<run>.html` in `directory` (the HTML: the dashboard's page, readable without it)."""
    directory.mkdir(parents=True, exist_ok=True)
    summary = _labelling_context(summary, run_name)
    report = directory / f"{run_name}.json"
    extra = {"comparison": comparison.model_dump()} if comparison is not None else {}
    report.write_text(json.dumps({"run": run_name, **summary.model_dump(), **extra}, indent=2))
    page = report.with_suffix(".html")
    page.write_text(render_html(summary, comparison), encoding="utf-8")
    return report.resolve(), page.resolve()


def report_run(run_id: Any, reports_dir: Path, earlier_id: Any = None) -> RunReport:
    """Run `run_id` from the store, compared with run `earlier_id` where given, its reports written."""
    run_name, summary, receipts = run_results(run_id)
    report = RunReport(run_name, summary)
    if summary is not None:
        if earlier_id is not None:
            current, _ = evaluations_of(run_id)
            earlier, earlier_name = evaluations_of(earlier_id)
            report.comparison = compare_runs(current, earlier, summary.criteria, earlier_name)
        report.json_path, report.html_path = write_reports(summary, run_name, reports_dir, report.comparison)
    report.published = [f"Published {r.stage} of {r.repo}: {r.hub_url or r.local_path}" for r in receipts]
    report.publish_errors = sorted({r.hub_error for r in receipts if r.hub_error})
    return report


def table(title: str, header: list[str], rows: list[list[str]], caption: Optional[str] = None) -> Table:
    table = Table(title=title or None, caption=caption)
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*row)
    return table


def console_blocks(report: RunReport) -> list[Union[str, Table]]:
    """What the console shows of a run, in order: the models' scores and their comparisons (the question a user came
    with), the judge's failures by cause, the judge's line (what it can and cannot tell apart), the trust lines, the
    comparison with an earlier run, the reports' paths (`report.text` and `report.comparison_text` hold the words)."""
    summary, comparison = report.summary, report.comparison
    if summary is None:
        return []
    blocks: list[Union[str, Table]] = [
        # A line of its own: a table's title wraps at the table's width, and the table of models is narrow.
        f"Evaluation summary · run {report.run_name} · judge {summary.judge_model} · rubric {summary.rubric}",
        table("", table_header(summary), table_rows(summary), caption=SCORES_CAPTION),
        table(OPERATIONS_TITLE, OPERATIONS_HEADER, operations_rows(summary))]
    if metrics := measured.metrics_rows(summary):
        blocks.append(table(measured.METRICS_TITLE, measured.metrics_header(summary), metrics))
    if categories := measured.categories_rows(summary):
        blocks.append(table(measured.CATEGORIES_TITLE, measured.categories_header(summary), categories))
    if summary.comparisons or summary.metric_comparisons:
        blocks.append(table("Model comparisons (paired on rows both scored)", COMPARISON_HEADER,
                            comparison_rows(summary)))
    blocks += failure_lines(summary)
    if summary.headline:
        blocks.append(summary.headline)
    if turns := turn_rows(summary):
        blocks.append(table(TURNS_TITLE, turn_header(summary), turns))
    if pairwise_turns := pairwise_turn_rows(summary):
        blocks.append(table(f"Pairwise, {TURNS_TITLE.lower()}", PAIRWISE_TURNS_HEADER, pairwise_turns))
    blocks += trust_lines(summary)
    if comparison is not None:
        blocks += compared.notes(comparison)
        if comparison.metrics:
            blocks.append(table(compared.title(comparison), compared.METRICS_HEADER, compared.metric_rows(comparison)))
        if comparison.changed_rows:
            blocks.append(table("Rows whose scores changed most", compared.ROWS_HEADER, compared.changed_rows(comparison)))
        blocks.append(compared.METHOD)
    return blocks + [f"JSON report: {report.json_path}", f"HTML report: {report.html_path}"]


def print_blocks(blocks: list[Union[str, Table]]) -> None:
    """Print `console_blocks` to stdout; tables 200 wide when output goes to a log rather than a terminal."""
    console = Console(width=None if sys.stdout.isatty() else 200, file=sys.stdout)
    for block in blocks:
        if isinstance(block, Table):
            console.print(block)
        else:
            print(block)


def gate_failures(summary: Optional[EvaluationSummary], gates: tuple[str, ...],
                  comparison: Optional[RunComparison] = None,
                  max_failed_rate: Optional[float] = None) -> tuple[list[str], Optional[str]]:
    """The failed gates (`--fail-under` thresholds; with the `--fail-on-regression` comparison, regressed
    metrics; `--max-failed-rate`), one line each, and the line saying which passed (None when there was nothing
    to check)."""
    if not gates and comparison is None and max_failed_rate is None:
        return [], None
    if summary is None:
        return ["not checked: this run stored no evaluation summary"], None
    failures = failed_gates(summary, [parse_gate(g) for g in gates])
    failures += compared.regression_lines(comparison) if comparison is not None else []
    failures += failed_rate_failures(summary, max_failed_rate) if max_failed_rate is not None else []
    passed = [*gates] + ([f"no regression against run {comparison.previous_run}"] if comparison is not None else [])
    passed += [f"max-failed-rate={max_failed_rate:g}"] if max_failed_rate is not None else []
    return failures, None if failures else f"Gates passed: {', '.join(passed)}"
