"""The evaluation summary as a self-contained HTML page (the dashboard visualization of `evaluation_summary`)."""

from __future__ import annotations

import base64
import html
from typing import Optional

from llm_engineering.evaluation.report import comparison_text as compared
from llm_engineering.evaluation.report import measures_text as measured
from llm_engineering.evaluation.report.card_text import JUDGE_CHECK_HEADER, judge_check_rows
from llm_engineering.evaluation.report.checklist import checklist_lines
from llm_engineering.evaluation.report.comparison import RunComparison
from llm_engineering.evaluation.report.failures import FAILURES_HEADER, FAILURES_TITLE, failure_rows
from llm_engineering.evaluation.report.plots import categories_png, distribution_png, trust_png
from llm_engineering.evaluation.report.ppi_text import PPI_HEADER, PPI_TITLE, ppi_rows
from llm_engineering.evaluation.report.rows import row_browser_html
from llm_engineering.evaluation.report.score_tables import (
    OPERATIONS_HEADER,
    OPERATIONS_TITLE,
    SCORES_CAPTION,
    operations_rows,
    table_header,
    table_rows,
)
from llm_engineering.evaluation.report.text import (
    COMPARISON_HEADER,
    JURY_HEADER,
    LABELS_HEADER,
    LENGTH_HEADER,
    PAIRWISE_HEADER,
    PAIRWISE_LABELS_HEADER,
    SAMPLES_HEADER,
    comparison_rows,
    expected_lines,
    jury_rows,
    label_rows,
    length_rows,
    pairwise_rows,
    sample_rows,
)
from llm_engineering.evaluation.report.trust_text import (
    JUDGE_CHECK_METHOD,
    LABELS_METHOD,
    PAIRWISE_LABELS_METHOD,
    PAIRWISE_METHOD,
    SAMPLES_METHOD,
    SCORES_METHOD,
    SIMILARITY_METRIC,
    WIN_RATE_DEFINITION,
    judge_check_title,
    labels_title,
    note_text,
    similarity_check_finding,
)
from llm_engineering.evaluation.report.turns_text import (
    PAIRWISE_TURNS_HEADER,
    TURNS_METHOD,
    TURNS_TITLE,
    pairwise_turn_rows,
    turn_header,
    turn_rows,
)
from llm_engineering.evaluation.stored.summary import EvaluationSummary


def html_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain table, every cell escaped, its line breaks kept (the report's tables and judge-bench's page)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c).replace(chr(10), '<br>')}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _text(words: str) -> str:
    # Element content: only &, < and > need escaping (apostrophes stay as written).
    return html.escape(words, quote=False)


def _png_img(alt: str, png: bytes) -> str:
    return f"<img alt='{alt}' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"


def _verdict(valid: bool, words: str) -> str:
    style = "background:#efe;border:1px solid #393" if valid else "background:#fdd;border:2px solid #c00"
    return f"<p style='{style};padding:8px'>{_text(words)}</p>"


def _labels_html(summary: EvaluationSummary) -> str:
    report = summary.labels
    if report is None:
        return ""
    verdicts = [_verdict(c.valid, f"{c.criterion}: {c.verdict}") for c in report.criteria]
    if report.pairwise:
        verdicts.append(_verdict(report.pairwise.valid, report.pairwise.verdict))
    header, method = (PAIRWISE_LABELS_HEADER, PAIRWISE_LABELS_METHOD) if report.pairwise else (LABELS_HEADER, LABELS_METHOD)
    corrected = ppi_rows(summary)
    return (f"<h3>{_text(labels_title(report))}</h3>" + "".join(verdicts)
            + html_table(header, label_rows(summary)) + f"<p>{_text(method)}</p>"
            + (f"<h3>{_text(PPI_TITLE)}</h3>" + html_table(PPI_HEADER, corrected) if corrected else ""))


def _trust_html(summary: EvaluationSummary) -> str:
    parts = [f"<p style='background:#fdd;border:2px solid #c00;padding:8px'>{_text(w)}</p>" for w in summary.warnings]
    parts += [f"<p>{_text(line)}</p>" for line in expected_lines(summary) + checklist_lines(summary)]
    if summary.agreement:
        parts.append(f"<h3>Jury ({_text(' + '.join(summary.jury))}; aggregate: {summary.jury_aggregate})</h3>"
                     + html_table(JURY_HEADER, jury_rows(summary)))
    judge_check = summary.judge_check
    if judge_check:
        verdicts = "".join(f"<li>{_text(t.verdict)}</li>" for t in [judge_check, *judge_check.tiers])
        parts.append(f"<h3 id='judge-check'>{_text(judge_check_title(judge_check))}</h3><ul>{verdicts}</ul>"
                     + html_table(JUDGE_CHECK_HEADER, judge_check_rows(summary))
                     + f"<p>{_text(JUDGE_CHECK_METHOD)}</p>")
    parts.append(_labels_html(summary))
    check = summary.similarity_check
    if check:
        metric = SIMILARITY_METRIC[0].upper() + SIMILARITY_METRIC[1:]
        parts.append(f"<h3>Reference similarity</h3><p>{_text(metric)} ({html.escape(check.embedding_model)}), "
                     f"no judge needed; shown per model in the table above. The metric itself: "
                     f"{_text(similarity_check_finding(check))}.</p>")
    if summary.pairwise:
        parts.append(f"<h3>Pairwise comparison ({_text(PAIRWISE_METHOD)})</h3>"
                     + html_table(PAIRWISE_HEADER, pairwise_rows(summary))
                     + f"<p>{_text(WIN_RATE_DEFINITION)}</p>")
    parts.append("<h3>Length bias</h3>" + html_table(LENGTH_HEADER, length_rows(summary))
                 + "<p>A strong positive correlation means longer answers score higher whatever they say.</p>")
    parts += [f"<p>{html.escape(note_text(note))}</p>" for note in summary.notes]
    plot = trust_png(summary)
    if plot:
        parts.append(_png_img("trust checks", plot))
    return "".join(parts)


def _samples_html(summary: EvaluationSummary) -> str:
    rows = sample_rows(summary)
    if not rows:
        return ""
    return ("<h3>Several answers per prompt</h3>" + html_table(SAMPLES_HEADER, rows)
            + f"<p>{_text(SAMPLES_METHOD)}</p>")


def _measures_html(summary: EvaluationSummary) -> str:
    """Every metric and check figure per model, what each metric is, and every score per category with its plot."""
    rows, categories = measured.metrics_rows(summary), measured.categories_rows(summary)
    parts = []
    if rows:
        parts.append(f"<h3>{_text(measured.METRICS_TITLE)}</h3>" + html_table(measured.metrics_header(summary), rows)
                     + f"<p>{_text(measured.METRICS_METHOD)}</p><ul>"
                     + "".join(f"<li>{_text(line)}</li>" for line in measured.metric_lines(summary)) + "</ul>")
    if categories:
        parts.append(f"<h3>{_text(measured.CATEGORIES_TITLE)}</h3>"
                     + html_table(measured.categories_header(summary), categories))
        plot = categories_png(summary)
        if plot:
            parts.append(_png_img("scores by category", plot))
    return "".join(parts)


def _turns_html(summary: EvaluationSummary) -> str:
    rows, pairwise = turn_rows(summary), pairwise_turn_rows(summary)
    if not rows:
        return ""
    return (f"<h3>{_text(TURNS_TITLE)}</h3>" + html_table(turn_header(summary), rows) + f"<p>{_text(TURNS_METHOD)}</p>"
            + (html_table(PAIRWISE_TURNS_HEADER, pairwise) if pairwise else ""))


def _run_comparison_html(comparison: Optional[RunComparison]) -> str:
    if comparison is None:
        return ""
    changed = (html_table(compared.ROWS_HEADER, compared.changed_rows(comparison)) if comparison.changed_rows
               else "<p>No row's scores changed.</p>")
    return (f"<h3>{_text(compared.title(comparison))}</h3>"
            + "".join(f"<p>{_text(line)}</p>" for line in compared.notes(comparison))
            + html_table(compared.METRICS_HEADER, compared.metric_rows(comparison))
            + f"<p>{_text(compared.METHOD)}</p><h4>Rows whose scores changed most</h4>" + changed)


def _headline_html(summary: EvaluationSummary) -> str:
    """The judge's line under the models: red without signal, amber where it fails a tier or a rule does as well,
    green only where it passes every tier; linked to its report card."""
    check = summary.judge_check
    outcomes = {t.outcome for t in ([check, *check.tiers] if check else [])}
    style = ("background:#fdd;border:2px solid #c00" if summary.headline.startswith("NO SIGNAL") else
             "background:#eef6ee;border:1px solid #9c9" if outcomes == {"passes"} else
             "background:#fff6e0;border:1px solid #d90")
    link = " <a href='#judge-check'>Its report card</a>." if check else ""
    return f"<p style='{style};padding:8px'><b>{_text(summary.headline)}</b>{link}</p>"


def render_html(summary: EvaluationSummary, comparison: Optional[RunComparison] = None) -> str:
    """A self-contained HTML report: scores table, comparisons (between models; with `comparison`, with an
    earlier run), trust checks, plots and the row browser."""
    comparisons = (
        "<h3>Model comparisons (paired on rows both scored)</h3>"
        + html_table(COMPARISON_HEADER, comparison_rows(summary))
        if summary.comparisons or summary.metric_comparisons else ""
    )
    return (
        "<html><head><meta charset='utf-8'><title>Evaluation summary</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        "<h2>Evaluation summary</h2>"
        + f"<p>Run {html.escape(summary.run)} &middot; judge: {html.escape(summary.judge_model)} &middot; rubric: "
        f"{html.escape(summary.rubric)} &middot; {html.escape(summary.created_at)} &middot; "
        "<a href='#row-browser'>every answer, row by row</a></p>"
        + html_table(table_header(summary), table_rows(summary)) + f"<p>{_text(SCORES_CAPTION)}</p>"
        + f"<h3>{_text(OPERATIONS_TITLE)}</h3>" + html_table(OPERATIONS_HEADER, operations_rows(summary))
        + _measures_html(summary)
        + comparisons
        + (f"<h3>{FAILURES_TITLE}</h3>" + html_table(FAILURES_HEADER, failures) if (failures := failure_rows(summary.models))
           else "")
        + (_headline_html(summary) if summary.headline else "")
        + f"<p>{_text(SCORES_METHOD)}</p>"
        + _turns_html(summary)
        + _samples_html(summary)
        + _run_comparison_html(comparison)
        + _trust_html(summary)
        + "<h3>Score distributions</h3>" + _png_img("score distributions", distribution_png(summary))
        + row_browser_html(summary)
        + "</body></html>"
    )
