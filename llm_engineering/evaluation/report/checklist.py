"""A checklist rubric's rows in the summary (`judging.checklist`): the rows each criterion's figures are over, rows left
without one criterion's score, unread items, and the rows of each item source apart, in figures and in words."""

from __future__ import annotations

from collections import Counter
from typing import Any, Optional

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.checklist import MAX_UNREAD_SHARE, YES_NO_FLOOR
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.rates import fmt, mean
from llm_engineering.evaluation.stored.checklist import ChecklistFigures, ChecklistSourceScores
from llm_engineering.evaluation.stored.summary import EvaluationSummary

Row = dict[str, Any]
# What a source's items ask, for the reader: items written from the instruction alone are no facts of a reference.
SOURCE_NOTES = {"written from the instruction": "what an answer must do, not which facts it must state"}


def scored_on(rows: list[Row], name: str) -> list[Row]:
    """The rows with a verdict and a score on criterion `name` (a checklist rubric's row keeps its checklist score where
    its other criteria failed)."""
    return [r for r in rows if r[col.JUDGE_ERROR] is None and r.get(col.score(name)) is not None]


def unscored(rows: list[Row], name: str) -> dict[str, Any]:
    """`CriterionScores.unscored` and `unscored_problem` of criterion `name`: rows with a verdict but no score on it."""
    missing = [r for r in rows if r[col.JUDGE_ERROR] is None and r.get(col.score(name)) is None]
    problems = Counter(r.get(col.score_error(name)) or "no reason stored" for r in missing)
    return {"unscored": len(missing), "unscored_problem": problems.most_common(1)[0][0] if problems else None}


def checklist_figures(rows: list[Row], rubric: Optional[Rubric]) -> Optional[ChecklistFigures]:
    """Unread items, rows without a checklist score for them, and each item source's rows (`ChecklistFigures`); None
    under a rubric without a checklist."""
    if rubric is None or rubric.checklist is None:
        return None
    criterion = rubric.checklist.criterion
    graded = [(r, r.get(col.checklist_items(criterion)) or []) for r in rows]
    scored = scored_on(rows, criterion)
    sources = Counter(r.get(col.CHECKLIST_SOURCE) or "unknown" for r in scored)
    return ChecklistFigures(
        items=sum(len(items) for _, items in graded),
        unread=sum(i.get("yes") is None for _, items in graded for i in items),
        unread_rows=sum(r[col.JUDGE_ERROR] is not None and any(i.get("yes") is None for i in items) for r, items in graded),
        sources=[ChecklistSourceScores(source=source, rows=count, expected_mean=mean(
            [r[col.expected(criterion)] for r in scored if (r.get(col.CHECKLIST_SOURCE) or "unknown") == source
             and r.get(col.expected(criterion)) is not None])) for source, count in sorted(sources.items())],
    )


def checklist_lines(summary: EvaluationSummary) -> list[str]:
    """Each model's checklist rows in words: where their items came from, items unread, criteria left unscored."""
    lines = []
    for m in summary.models:
        c = m.checklist
        if c is not None and c.sources:
            parts = [f"{s.rows} on {s.source} (mean {fmt(s.expected_mean)}"
                     + (f"; {SOURCE_NOTES[s.source]})" if s.source in SOURCE_NOTES else ")") for s in c.sources]
            lines.append(f"Checklist items of {m.model_id}, rows scored by source: {', '.join(parts)}")
        if c is not None and c.unread:
            lines.append(f"Checklist of {m.model_id}: {c.unread} of {c.items} items unread (Yes and No held under "
                         f"{YES_NO_FLOOR} of the first token's probability), left out of their rows' scores; {c.unread_rows} "
                         f"rows have no score, more than {MAX_UNREAD_SHARE:.0%} of their items unread")
        for criterion in m.criteria:
            if criterion.unscored:
                lines.append(f"{criterion.name.capitalize()} of {m.model_id}: {criterion.unscored} rows have no score "
                             f"({criterion.unscored_problem}); they keep their {summary.checklist or 'other'} score")
    return lines
