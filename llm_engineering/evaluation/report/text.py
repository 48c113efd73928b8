"""The evaluation summary as text: table rows (CLI and HTML report) and trust lines (CLI, logs)."""

from __future__ import annotations

from llm_engineering.evaluation.rates import fmt, rate_with_ci, with_ci
from llm_engineering.evaluation.report.checklist import checklist_lines
from llm_engineering.evaluation.report.ppi_text import ppi_lines
from llm_engineering.evaluation.report.trust_text import (
    LABEL_RATERS,
    PAIRWISE_METHODS,
    RIGHT_ANSWERS_TEXT,
    agreement_figures,
    judge_check_figures,
    labels_title,
    note_text,
    pairwise_finding,
    pairwise_name,
    preference_figures,
    similarity_check_finding,
)
from llm_engineering.evaluation.stored.summary import CriterionScores, EvaluationSummary


def expected_lines(summary: EvaluationSummary) -> list[str]:
    """Where scored rows have no expected score, how many and why, in words (never a silent fallback)."""
    lines = []
    for s in summary.models:
        for c in s.criteria:
            if c.expected_rows < s.scored:
                lines.append(f"Expected {c.name} scores of {s.model_id}: {s.scored - c.expected_rows} of {s.scored} scored "
                             f"rows have none ({c.expected_problem}); the expected mean is over the other {c.expected_rows}.")
    return lines



COMPARISON_HEADER = ["difference", "criterion or metric", "mean (95% CI)", "paired rows"]
JURY_HEADER = ["criterion", "Krippendorff's alpha, ordinal (95% CI)", "rows", "judges' means (integer / expected)"]
LENGTH_HEADER = ["model", "criterion", "Spearman: integer score vs answer length", "expected score vs answer length",
                 "rows"]
LABELS_HEADER = ["criterion", "rater", "exact (95% CI)", "within one (95% CI)", "Spearman", "quadratic kappa (95% CI)",
                 "without a verdict"]
PAIRWISE_LABELS_HEADER = ["rater", "agreement with the human preference"]
PAIRWISE_HEADER = ["model A vs model B", "win rate of A (95% CI)", "A wins", "ties", "A loses", "failed",
                   "orders disagree", "first position chosen"]


def criterion_cell(c: CriterionScores, checklist: bool = False, sep: str = "; ", expected: str = "expected") -> str:
    """`1.07 [1.00, 1.17]; expected 1.42 [1.38, 1.46]`, or why there is no expected mean; a checklist's criterion leads
    with its score: `checklist 2.61 [2.55, 2.68]; levels 2.75 [2.60, 2.90]` (`sep`, `expected`: a line break and a
    shorter word in a narrow table)."""
    if checklist:
        return f"checklist {with_ci(c.expected_mean, c.expected_ci)}{sep}levels {with_ci(c.mean, c.ci)}"
    cell = with_ci(c.mean, c.ci)
    if c.expected_mean is not None:
        return cell + f"{sep}{expected} {with_ci(c.expected_mean, c.expected_ci)}"
    return cell + (f"{sep}{expected} n/a" if c.expected_problem else "")


def comparison_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per paired model comparison (`COMPARISON_HEADER`): on each criterion, then each metric and the checks."""
    return [
        [f"{c.model_a} - {c.model_b}", c.criterion, with_ci(c.difference, c.ci), str(c.paired_rows)]
        for c in [*summary.comparisons, *summary.metric_comparisons]
    ]


def jury_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Agreement of the jury per criterion (`JURY_HEADER`), none without a jury."""
    rows = []
    for a in summary.agreement:
        means = "; ".join(
            f"{j.judge}: {fmt(j.mean)} / {fmt(j.expected_mean)}"
            for m in summary.models[:1] for j in m.criterion(a.criterion).judges
        )
        rows.append([a.criterion, with_ci(a.alpha, a.ci), str(a.rows), means])
    return rows


def length_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Length bias per model and criterion (`LENGTH_HEADER`)."""
    return [
        [s.model_id, c.name, *(f"{fmt(x.spearman)} (p {fmt(x.p_value, 3)})" if x else "n/a"
                               for x in (c.length, c.length_expected)), str(c.length.rows) if c.length else "0"]
        for s in summary.models for c in s.criteria
    ]


def pairwise_rows(summary: EvaluationSummary) -> list[list[str]]:
    """One row per pairwise comparison (`PAIRWISE_HEADER`)."""
    return [
        [pairwise_name(p), rate_with_ci(p.win_rate, p.win_rate_ci), p.wins.describe(),
         p.ties.describe(), p.losses.describe(), p.failed.describe(), p.order_disagreement.describe(),
         p.position_a_preferred.describe()]
        for p in summary.pairwise
    ]


def label_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Agreement with labels: per criterion, the judge and each baseline (`LABELS_HEADER`); with pairwise labels,
    each rater's agreement (`PAIRWISE_LABELS_HEADER`). None without labels."""
    report = summary.labels
    if report is None:
        return []
    if report.pairwise:
        p = report.pairwise
        return [[LABEL_RATERS[key], a.agreement.describe()]
                for key, a in (("judge", p.judge), ("majority", p.majority), ("length", p.length))]
    rows = []
    for c in report.criteria:
        for key, a in (("judge", c.judge), ("judge_expected", c.judge_expected), ("majority", c.majority),
                       ("length", c.length)):
            rows.append([c.criterion, LABEL_RATERS[key]] + (
                [rate_with_ci(a.exact, a.exact_ci), rate_with_ci(a.within_one, a.within_one_ci), fmt(a.spearman),
                 with_ci(a.kappa, a.kappa_ci), str(a.failed)] if a else [f"n/a: {c.expected_problem}", "", "", "", ""]))
    return rows


def _label_lines(summary: EvaluationSummary) -> list[str]:
    report = summary.labels
    if report is None:
        return []
    lines = [f"{labels_title(report)}:"]
    for c in report.criteria:
        lines.append(f"  {c.criterion} ({c.rows} labels): {c.verdict}")
        for key, a in (("judge", c.judge), ("judge_expected", c.judge_expected), ("majority", c.majority),
                       ("length", c.length)):
            lines.append(f"    {LABEL_RATERS[key]}: {agreement_figures(a) if a else f'n/a ({c.expected_problem})'}")
    if report.pairwise:
        lines.append(f"  {report.pairwise.verdict}")
        lines += [f"    {line}" for line in preference_figures(report.pairwise)]
    return lines


def power_lines(summary: EvaluationSummary) -> list[str]:
    """Per model: the smallest change a comparison of these rows can detect, and the rows a change of 0.1 needs."""
    lines = []
    for s in summary.models:
        criteria = [c for c in s.criteria if c.detectable is not None]
        alike = [c.name for c in s.criteria if c.detectable is None]
        same = f"; {', '.join(alike)}: every scored row has the same score, no spread to size a test by" if alike else ""
        scored = f"{s.scored} scored answers, {s.samples} per prompt" if s.samples > 1 else f"{s.scored} scored rows"
        if criteria:
            needs = ", ".join(f"{c.name} {c.rows_for_tenth}" for c in criteria)
            lines.append(f"Power of {s.model_id} ({scored}): a paired comparison with another run detects "
                         f"a change of at least {', '.join(f'{c.name} {c.detectable:.2f}' for c in criteria)} "
                         f"(80% power at 5%; runs uncorrelated per row, so an upper bound); a change of 0.1 needs "
                         f"about {needs} rows{same}")
        elif alike and s.scored > 1:
            lines.append(f"Power of {s.model_id} ({scored}){same}")
    return lines


SAMPLES_HEADER = ["model", "criterion", "answers per prompt", "mean of row means (95% CI, rows and samples)",
                  "95% CI over rows alone", "variance between a prompt's answers", "spread within a row",
                  "max", "majority", "pass@1", "pass@k", "passing score"]


def sample_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Per model with several answers per prompt and criterion: the figures of `sample_lines`, as table rows."""
    rows = []
    for s in summary.models:
        for c in s.criteria if s.samples > 1 else []:
            _, top, majority, pass_1, pass_k = c.reducers.values()  # mean (the mean itself), max, majority, pass@1, @k
            rows.append([s.model_id, c.name, str(s.samples), with_ci(c.mean, c.ci),
                         "n/a" if not c.rows_ci else f"[{c.rows_ci[0]:.2f}, {c.rows_ci[1]:.2f}]",
                         rate_with_ci(c.sample_share, None), fmt(c.row_spread), with_ci(top.value, top.ci),
                         with_ci(majority.value, majority.ci), rate_with_ci(pass_1.value, pass_1.ci),
                         rate_with_ci(pass_k.value, pass_k.ci), fmt(c.pass_score, 0)])
    return rows


def sample_lines(summary: EvaluationSummary) -> list[str]:
    """Per model with several answers per prompt, per criterion: the interval over rows and samples beside the one
    over rows alone, the share of variance between a prompt's answers, and the reducers."""
    lines = []
    for s in summary.models:
        for c in s.criteria if s.samples > 1 else []:
            if c.mean is None:
                continue
            share = "n/a" if c.sample_share is None else f"{c.sample_share:.0%}"
            reduced = ", ".join(f"{name} " + (fmt(r.value) if not name.startswith("pass@") else rate_with_ci(r.value, None))
                                for name, r in c.reducers.items() if name != "mean")
            lines.append(f"Samples of {s.model_id} on {c.name} ({s.samples} answers per prompt): mean of row means "
                         f"{with_ci(c.mean, c.ci)} over rows and samples ({with_ci(c.mean, c.rows_ci)} over rows "
                         f"alone); {share} of the variance lies between a prompt's answers (a row's scores spread "
                         f"{fmt(c.row_spread)}); {reduced} (passing: {fmt(c.pass_score, 0)} or more)")
    return lines


def trust_lines(summary: EvaluationSummary) -> list[str]:
    """How far the scores can be trusted, in plain words (CLI, logs)."""
    lines = [f"WARNING {warning}" for warning in summary.warnings] + expected_lines(summary) + checklist_lines(summary)
    for a in summary.agreement:
        lines.append(f"Jury agreement on {a.criterion} ({' + '.join(summary.jury)}, {summary.jury_aggregate}): "
                     f"Krippendorff's alpha {with_ci(a.alpha, a.ci)} over {a.rows} rows")
    if summary.judge_check:
        s = summary.judge_check
        lines.append(f"Judge check ({s.judge_model}): {s.verdict}")
        lines.append(f"  {judge_check_figures(s)}; right answers: {RIGHT_ANSWERS_TEXT[s.right_answers]}"
                     + (f" ({s.right_copies} kept as the reference: their rewording failed, lost a fact or most of its "
                        "words)" if s.right_copies else ""))
        lines += [f"  {tier.verdict}" for tier in s.tiers]
        if s.judge_calls is not None:
            per_verdict = f", {s.judge_seconds_per_verdict:.2f} s per answer judged" if s.judge_seconds_per_verdict else ""
            lines.append(f"  the check made {s.judge_calls} judge calls not served by the cache ({s.judge_tokens} tokens"
                         f"{per_verdict})")
    lines += _label_lines(summary) + ppi_lines(summary)
    if summary.similarity_check:
        c = summary.similarity_check
        lines.append(f"Similarity metric check ({c.embedding_model}): {similarity_check_finding(c)}")
    for p in summary.pairwise:
        lines.append(f"Pairwise {pairwise_name(p)} ({PAIRWISE_METHODS[p.method]}): {pairwise_finding(p)}")
    lines += power_lines(summary) + sample_lines(summary)
    for m in summary.models:
        if m.escalated or m.escalation_failed:
            failed = (f"; {m.escalation_failed} kept the first judge's verdict, the second failing ({m.escalation_error})"
                      if m.escalation_failed else "")
            lines.append(f"Escalation of {m.model_id}: {m.escalated} of {m.rows} rows the first judge was unsure of "
                         f"were judged by the second judge{failed}")
        lengths = [f"{c.name} {fmt(c.length.spearman)}" + (f" (expected {fmt(c.length_expected.spearman)})"
                                                           if c.length_expected else "")
                   for c in m.criteria if c.length and c.length.spearman is not None]
        if lengths:
            lines.append(f"Length bias of {m.model_id} (Spearman, integer score vs answer length): {', '.join(lengths)}")
    return lines + [note_text(note) for note in summary.notes]
