"""Scores per category (the dataset's `category` column, `--group-by COLUMN`): each category's judge criteria,
metrics and checks, with intervals and counts, so a user sees where a model fails rather than one mean."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.report.criterion_scores import criterion_scores
from llm_engineering.evaluation.report.measures import check_scores, metric_scores
from llm_engineering.evaluation.stored.summary import CategoryScores

NO_CATEGORY = "(none)"


def category_of(row: dict[str, Any]) -> str:
    return row.get(col.CATEGORY) or NO_CATEGORY


def categories_of(rows: list[dict[str, Any]]) -> list[str]:
    """The rows' categories in order of their first row; [] where no row has one."""
    if not any(r.get(col.CATEGORY) for r in rows):
        return []
    return list(dict.fromkeys(category_of(r) for r in rows))


def category_scores(rows: list[dict[str, Any]], scored: list[dict[str, Any]], criteria: Sequence[str],
                    metrics: Sequence[str], *, rubric: Optional[Rubric], samples: int,
                    pass_score: Optional[float]) -> list[CategoryScores]:
    """Each category's figures over its answers (`scored`: those with a valid verdict); [] without categories."""
    figures = []
    for category in categories_of(rows):
        own = [r for r in rows if category_of(r) == category]
        judged = [r for r in scored if category_of(r) == category]
        figures.append(CategoryScores(
            category=category, rows=len(own), scored=len(judged),
            criteria=[criterion_scores(n, judged, values=rubric.criterion(n).values if rubric else None, judges=[],
                                       samples=samples, pass_score=pass_score) for n in criteria],
            metrics=metric_scores(own, metrics), checks=check_scores(own, samples)))
    return figures
