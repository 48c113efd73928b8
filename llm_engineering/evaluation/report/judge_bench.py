"""The judge benchmark as text (console table) and as a self-contained HTML page in the style of the run report."""

from __future__ import annotations

import html

from llm_engineering.evaluation.report.failures import BENCH_FAILURES_HEADER, FAILURES_TITLE, bench_failure_rows
from llm_engineering.evaluation.report.html import html_table
from llm_engineering.evaluation.stored.figures import Rate
from llm_engineering.evaluation.trust.judge_bench import WAY_NAMES, JudgeBenchReport

BENCH_HEADER = ["way", "agreement with people (95% CI)", "pairs right in both orders", "shown first chosen", "ties",
                "failed"]

BENCH_METHOD = ("Agreement: decisions that name the answer people preferred, over the pairs not labelled a tie, each "
                "order of showing counted (as LLMBar reports); a way that sees no order decides once per pair. A failed "
                "verdict counts as a disagreement. 'Shown first chosen' is over decisive verdicts: 50% is no position "
                "bias. Intervals: 95% Wilson.")


def _cell(r: Rate | None) -> str:
    return r.describe() if r is not None else "n/a (no order)"


def bench_title(report: JudgeBenchReport) -> str:
    half = f" (half {report.half}: every other pair)" if report.half else ""
    return (f"Judge benchmark · {report.judge} · rubric {report.rubric} · {report.pairs} pairs of {report.pairs_file}{half}"
            + (f" ({report.tie_labels} labelled a tie, outside agreement)" if report.tie_labels else ""))


def bench_rows(report: JudgeBenchReport) -> list[list[str]]:
    """One row per way and baseline (`BENCH_HEADER`)."""
    return [[WAY_NAMES[way], _cell(f.agreement), _cell(f.both_orders_right), _cell(f.first_shown), _cell(f.ties),
             _cell(f.failed)] for way, f in report.ways.items()]


def bench_cost_line(report: JudgeBenchReport) -> str:
    """`16 verdicts (4 from the judge cache) in 9 s.`, and how many preferences were read from a written number."""
    seconds = f" in {report.seconds:.0f} s" if report.seconds is not None else ""
    written = (f"; {report.written_preferences} preference readings taken from the number the judge wrote (no token "
               f"logprobs), as the pipeline takes them" if report.written_preferences else "")
    return f"{report.judge_calls} verdicts ({report.cached} from the judge cache){seconds}{written}."


SELECTIVE_HEADER = ["way", "confidence threshold", "agreement at it on the calibration pairs", "agreement kept",
                    "coverage (decisions kept)"]


def selective_title(report: JudgeBenchReport) -> str:
    return (f"Verdicts kept above a confidence threshold found on {report.calibration_file} (agreement over "
            f"{report.target_agreement:.0%} with at most a {report.risk:.0%} risk; fixed-sequence testing), applied to "
            f"these pairs")


def selective_rows(report: JudgeBenchReport) -> list[list[str]]:
    """One row per way with a confidence (`SELECTIVE_HEADER`); none without --calibration."""
    return [[WAY_NAMES[way], "none met the target" if f.threshold is None else f"{f.threshold:.2f}",
             _cell(f.calibration_agreement) if f.calibration_agreement else "n/a", f.agreement.describe(),
             f.coverage.describe()] for way, f in report.selective.items()]


_SHOWN = {"A": "1", "B": "2", "tie": "tie", None: "failed"}


def render_bench_html(report: JudgeBenchReport) -> str:
    """The page: the figures per way, the method, and every pair's decisions."""
    ways = list(report.ways)
    details = [[d.id, _SHOWN[d.label]] + [" / ".join(_SHOWN[c] for c in d.decisions.get(w, [])) for w in ways]
               + ["; ".join(d.problems)] for d in report.details]
    return (
        "<html><head><meta charset='utf-8'><title>Judge benchmark</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h2>{html.escape(bench_title(report))}</h2>"
        + html_table(BENCH_HEADER, bench_rows(report))
        + f"<p>{html.escape(BENCH_METHOD)}</p><p>{html.escape(bench_cost_line(report))}</p>"
        + (f"<h3>{FAILURES_TITLE}</h3>" + html_table(BENCH_FAILURES_HEADER, failures)
           if (failures := bench_failure_rows(report)) else "")
        + (f"<h3>{html.escape(selective_title(report))}</h3>" + html_table(SELECTIVE_HEADER, selective_rows(report))
           if report.selective else "")
        + "<h3>Every pair (the output chosen: per order of showing, or once)</h3>"
        + html_table(["id", "people"] + [WAY_NAMES[w] for w in ways] + ["problems"], details)
        + "</body></html>"
    )
