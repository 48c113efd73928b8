"""Aggregate judge scores per model, compare models, and render the report (HTML and table)."""

from __future__ import annotations

import base64
import html
import io
from datetime import datetime, timezone
from typing import Optional, Sequence

import numpy as np

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.generation import GenerationStats


# USD per million tokens (input, output), list prices when written; override in the judge config.
KNOWN_PRICES = {"gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00), "gpt-4.1-mini": (0.40, 1.60)}

BOOTSTRAP_SAMPLES = 2000


def bootstrap_ci(values: Sequence[float], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> Optional[list[float]]:
    """95% percentile-bootstrap interval of the mean (None for fewer than two values)."""
    if len(values) < 2:
        return None
    rng = np.random.default_rng(seed)
    data = np.asarray(values, dtype=float)
    means = rng.choice(data, size=(samples, len(data)), replace=True).mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return [round(float(low), 4), round(float(high), 4)]


class JudgeUsage(BaseModel):
    """Judge requests of this scoring: new calls, cache hits, tokens and estimated cost."""

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost_usd: Optional[float] = None


class ModelScores(BaseModel):
    """One model's scores. Means are over scored rows; failed rows are counted, never dropped."""

    model_id: str
    rows: int
    scored: int
    failed: int
    failure_rate: float
    accuracy_mean: Optional[float]
    style_mean: Optional[float]
    accuracy_ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the mean")
    style_ci: Optional[list[float]] = None
    accuracy_counts: dict[str, int] = Field(description="score -> rows, over scored rows")
    style_counts: dict[str, int]
    mean_completion_tokens: float
    truncated: int = Field(description="answers cut by max_tokens (finish reason 'length')")
    tokens_per_second: Optional[float] = None
    generation_seconds: Optional[float] = None
    judge_usage: JudgeUsage


class ModelComparison(BaseModel):
    """Mean score of `model_a` minus `model_b`, paired on the rows both have scored."""

    model_a: str
    model_b: str
    criterion: str
    paired_rows: int
    difference: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the difference")


class EvaluationSummary(BaseModel):
    """The `evaluation_summary` artifact: per-model scores, comparisons and the ranking."""

    judge_model: str
    models: list[ModelScores]
    comparisons: list[ModelComparison] = Field(default_factory=list)
    ranking: list[str] = Field(description="model ids, best mean accuracy (then style) first")
    created_at: str


def _mean(values: list[int]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _counts(values: list[int]) -> dict[str, int]:
    return {str(score): values.count(score) for score in (1, 2, 3)}


def judge_usage(rows: list[dict], prices: Optional[tuple[float, float]] = None) -> JudgeUsage:
    fresh = [r for r in rows if r.get(col.JUDGE_RAW) is not None and not r.get(col.JUDGE_CACHED)]
    prompt = sum(r.get(col.JUDGE_PROMPT_TOKENS) or 0 for r in fresh)
    completion = sum(r.get(col.JUDGE_COMPLETION_TOKENS) or 0 for r in fresh)
    return JudgeUsage(
        calls=len(fresh),
        cached=sum(bool(r.get(col.JUDGE_CACHED)) for r in rows),
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_cost_usd=round((prompt * prices[0] + completion * prices[1]) / 1e6, 6) if prices else None,
    )


def model_scores(
    evaluations: Dataset,
    stats: Optional[GenerationStats] = None,
    prices: Optional[tuple[float, float]] = None,
) -> ModelScores:
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
        accuracy_ci=bootstrap_ci(accuracy),
        style_ci=bootstrap_ci(style),
        accuracy_counts=_counts(accuracy),
        style_counts=_counts(style),
        mean_completion_tokens=round(
            sum(r[col.COMPLETION_TOKENS] for r in rows) / len(rows), 2
        ) if rows else 0.0,
        truncated=sum(r[col.FINISH_REASON] == "length" for r in rows),
        tokens_per_second=stats.tokens_per_second if stats else None,
        generation_seconds=stats.seconds if stats else None,
        judge_usage=judge_usage(rows, prices),
    )


def _scored_by_id(evaluations: Dataset, criterion: str) -> dict[str, int]:
    column = col.ACCURACY_SCORE if criterion == "accuracy" else col.STYLE_SCORE
    return {
        row[col.ID]: row[column] for row in evaluations.to_list()
        if row[col.JUDGE_ERROR] is None and row[column] is not None
    }


def compare_models(a: Dataset, b: Dataset, criterion: str) -> ModelComparison:
    """Paired difference of means on the ids both models have a valid verdict for."""
    scores_a, scores_b = _scored_by_id(a, criterion), _scored_by_id(b, criterion)
    common = sorted(scores_a.keys() & scores_b.keys())
    differences = [scores_a[i] - scores_b[i] for i in common]
    return ModelComparison(
        model_a=a[0][col.MODEL_ID], model_b=b[0][col.MODEL_ID], criterion=criterion,
        paired_rows=len(common), difference=_mean(differences), ci=bootstrap_ci(differences),
    )


def summarize(
    evaluations: list[Dataset],
    stats: Optional[list[GenerationStats]] = None,
    prices: Optional[tuple[float, float]] = None,
) -> EvaluationSummary:
    """Per-model scores, each model compared with the first (the baseline), and the ranking."""
    by_model = {s.model_id: s for s in stats or []}
    scores = []
    for dataset in evaluations:
        model_id = dataset[0][col.MODEL_ID] if len(dataset) else "?"
        scores.append(model_scores(dataset, by_model.get(model_id), prices))
    comparisons = [
        compare_models(other, evaluations[0], criterion)
        for other in evaluations[1:] if len(other) and len(evaluations[0])
        for criterion in ("accuracy", "style")
    ]
    judges = sorted({j for dataset in evaluations for j in set(dataset[col.JUDGE_MODEL])})
    ranking = sorted(
        scores, key=lambda s: (-(s.accuracy_mean or 0.0), -(s.style_mean or 0.0), s.model_id)
    )
    return EvaluationSummary(
        judge_model=", ".join(judges),
        models=scores,
        comparisons=comparisons,
        ranking=[s.model_id for s in ranking],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


TABLE_HEADER = ["model", "accuracy (95% CI)", "style (95% CI)", "scored", "failed", "output tok/s", "judge calls", "judge cost $"]


def _with_ci(mean: Optional[float], ci: Optional[list[float]]) -> str:
    return _fmt(mean) + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def table_rows(summary: EvaluationSummary) -> list[list[str]]:
    """Rows for the CLI table and the HTML report, in ranking order."""
    by_id = {s.model_id: s for s in summary.models}
    return [
        [
            s.model_id,
            _with_ci(s.accuracy_mean, s.accuracy_ci),
            _with_ci(s.style_mean, s.style_ci),
            f"{s.scored}/{s.rows}",
            str(s.failed),
            _fmt(s.tokens_per_second, 1),
            f"{s.judge_usage.calls} (+{s.judge_usage.cached} cached)",
            _fmt(s.judge_usage.estimated_cost_usd, 4),
        ]
        for s in (by_id[model_id] for model_id in summary.ranking)
    ]


def comparison_rows(summary: EvaluationSummary) -> list[list[str]]:
    return [
        [f"{c.model_a} - {c.model_b}", c.criterion, _with_ci(c.difference, c.ci), str(c.paired_rows)]
        for c in summary.comparisons
    ]


def distribution_png(summary: EvaluationSummary) -> bytes:
    """Bar charts of accuracy and style score counts per model."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    width = 0.8 / max(1, len(summary.models))
    for axis, criterion in zip(axes, ("accuracy", "style")):
        for k, model in enumerate(summary.models):
            counts = getattr(model, f"{criterion}_counts")
            axis.bar([s + k * width for s in (1, 2, 3)], [counts[str(s)] for s in (1, 2, 3)],
                     width=width, label=model.model_id)
        axis.set_xticks([s + width * (len(summary.models) - 1) / 2 for s in (1, 2, 3)], ["1", "2", "3"])
        axis.set_title(f"{criterion} scores")
        axis.set_xlabel("score")
    axes[0].set_ylabel("answers")
    axes[1].legend(fontsize=8)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    plt.close(figure)
    return buffer.getvalue()


def _html_table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(summary: EvaluationSummary) -> str:
    """A self-contained HTML report (the dashboard visualization of `evaluation_summary`)."""
    plot = base64.b64encode(distribution_png(summary)).decode()
    comparisons = (
        "<h3>Model comparisons (paired on rows both scored)</h3>"
        + _html_table(["difference", "criterion", "mean (95% CI)", "paired rows"], comparison_rows(summary))
        if summary.comparisons else ""
    )
    return (
        "<html><head><meta charset='utf-8'><title>Evaluation summary</title>"
        "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px}</style></head><body>"
        f"<h2>Evaluation summary</h2><p>Judge: {html.escape(summary.judge_model)} &middot; "
        f"{html.escape(summary.created_at)}</p>"
        + _html_table(TABLE_HEADER, table_rows(summary))
        + "<p>Means are over scored rows (scores 1-3), with 95% bootstrap intervals; rows whose "
        "verdict failed are counted as failed, never averaged.</p>"
        + comparisons
        + f"<h3>Score distributions</h3><img alt='score distributions' src='data:image/png;base64,{plot}'>"
        + "</body></html>"
    )


def judge_prices(judge: JudgeConfig) -> Optional[tuple[float, float]]:
    """(input, output) USD per million tokens: from the config, else list prices of OpenAI models."""
    if judge.price_per_million_input is not None or judge.price_per_million_output is not None:
        return (judge.price_per_million_input or 0.0, judge.price_per_million_output or 0.0)
    if judge.backend == "openai" and judge.base_url is None:
        return KNOWN_PRICES.get(judge.model)
    return None
