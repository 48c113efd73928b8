"""Aggregate judge scores per model, compare models, and render the report (HTML and table)."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation import GenerationStats


class ModelScores(BaseModel):
    """One model's scores. Means are over scored rows; failed rows are counted, never dropped."""

    model_id: str
    rows: int
    scored: int
    failed: int
    failure_rate: float
    accuracy_mean: Optional[float]
    style_mean: Optional[float]
    accuracy_counts: dict[str, int] = Field(description="score -> rows, over scored rows")
    style_counts: dict[str, int]
    mean_completion_tokens: float
    truncated: int = Field(description="answers cut by max_tokens (finish reason 'length')")
    tokens_per_second: Optional[float] = None
    generation_seconds: Optional[float] = None


class EvaluationSummary(BaseModel):
    """The `evaluation_summary` artifact: per-model scores and the ranking."""

    judge_model: str
    models: list[ModelScores]
    ranking: list[str] = Field(description="model ids, best mean accuracy (then style) first")
    created_at: str


def _mean(values: list[int]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _counts(values: list[int]) -> dict[str, int]:
    return {str(score): values.count(score) for score in (1, 2, 3)}


def model_scores(evaluations: Dataset, stats: Optional[GenerationStats] = None) -> ModelScores:
    """Scores of one model's `evaluations`: a row counts as scored only if both scores exist."""
    rows = evaluations.to_list()
    scored = [
        r for r in rows
        if r[col.JUDGE_ERROR] is None and r[col.ACCURACY_SCORE] is not None and r[col.STYLE_SCORE] is not None
    ]
    accuracy = [r[col.ACCURACY_SCORE] for r in scored]
    style = [r[col.STYLE_SCORE] for r in scored]
    model_ids = sorted({r[col.MODEL_ID] for r in rows})
    if len(model_ids) != 1:
        raise ValueError(f"evaluations must hold exactly one model, found {model_ids}")
    return ModelScores(
        model_id=model_ids[0],
        rows=len(rows),
        scored=len(scored),
        failed=len(rows) - len(scored),
        failure_rate=round((len(rows) - len(scored)) / len(rows), 4) if rows else 0.0,
        accuracy_mean=_mean(accuracy),
        style_mean=_mean(style),
        accuracy_counts=_counts(accuracy),
        style_counts=_counts(style),
        mean_completion_tokens=round(
            sum(r[col.COMPLETION_TOKENS] for r in rows) / len(rows), 2
        ) if rows else 0.0,
        truncated=sum(r[col.FINISH_REASON] == "length" for r in rows),
        tokens_per_second=stats.tokens_per_second if stats else None,
        generation_seconds=stats.seconds if stats else None,
    )


def summarize(
    evaluations: list[Dataset], stats: Optional[list[GenerationStats]] = None
) -> EvaluationSummary:
    """Per-model scores for every model's evaluations, ranked by mean accuracy then style."""
    by_model = {s.model_id: s for s in stats or []}
    scores = []
    for dataset in evaluations:
        model_id = dataset[0][col.MODEL_ID] if len(dataset) else "?"
        scores.append(model_scores(dataset, by_model.get(model_id)))
    judges = sorted({j for dataset in evaluations for j in set(dataset[col.JUDGE_MODEL])})
    ranking = sorted(
        scores, key=lambda s: (-(s.accuracy_mean or 0.0), -(s.style_mean or 0.0), s.model_id)
    )
    return EvaluationSummary(
        judge_model=", ".join(judges),
        models=scores,
        ranking=[s.model_id for s in ranking],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


TABLE_HEADER = ["model", "accuracy", "style", "scored", "failed", "output tok/s"]


def table_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Rows for the CLI table and the HTML report, in ranking order."""
    by_id = {s.model_id: s for s in summary.models}
    return [
        [
            s.model_id,
            _fmt(s.accuracy_mean),
            _fmt(s.style_mean),
            f"{s.scored}/{s.rows}",
            str(s.failed),
            _fmt(s.tokens_per_second, 1),
        ]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ]


def render_html(summary: EvaluationSummary) -> str:
    """A self-contained HTML report (the dashboard visualization of `evaluation_summary`)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in TABLE_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in table_rows(summary)
    )
    dist = "".join(
        f"<tr><td>{html.escape(s.model_id)}</td><td>{s.accuracy_counts}</td><td>{s.style_counts}</td>"
        f"<td>{s.truncated}</td></tr>"
        for s in summary.models
    )
    return (
        "<html><head><meta charset='utf-8'><title>Evaluation summary</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h2>Evaluation summary</h2><p>Judge: {html.escape(summary.judge_model)} &middot; "
        f"{html.escape(summary.created_at)}</p>"
        f"<table><tr>{head}</tr>{body}</table>"
        "<p>Means are over scored rows (scores 1-3); rows whose verdict failed to parse are "
        "counted as failed, not dropped.</p>"
        "<h3>Score distributions</h3><table><tr><th>model</th><th>accuracy 1/2/3</th>"
        f"<th>style 1/2/3</th><th>truncated answers</th></tr>{dist}</table></body></html>"
    )
