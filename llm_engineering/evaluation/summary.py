"""The `evaluation_summary` artifact: judge scores aggregated per model, models compared, and the
run's trust checks attached.

ZenML stores these models' import path with each artifact: keep them here. The report that shows
a summary is apart: `report_text` (table, trust lines), `report_plots`, `report_html`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from datasets import Dataset
from pydantic import BaseModel, Field

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation import GenerationStats
from llm_engineering.evaluation.pairwise import PairwiseComparison, PairwiseReport
from llm_engineering.evaluation.rates import bootstrap_ci
from llm_engineering.evaluation.judge_check import JudgeCheck, TrustChecks
from llm_engineering.evaluation.similarity import SimilarityCheck


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
    similarity_mean: Optional[float] = Field(None, description="mean cosine similarity of answer and reference")
    similarity_ci: Optional[list[float]] = None
    similarity_rows: int = 0


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
    judge_check: Optional[JudgeCheck] = Field(None, description="can the judge tell right answers from wrong?")
    similarity_check: Optional[SimilarityCheck] = None
    pairwise: list[PairwiseComparison] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")


def _mean(values: list[int]) -> Optional[float]:
    return round(sum(values) / len(values), 4) if values else None


def _counts(values: list[int]) -> dict[str, int]:
    return {str(score): values.count(score) for score in (1, 2, 3)}


def judge_usage(rows: list[dict], prices: Optional[tuple[float, float]] = None) -> JudgeUsage:
    """Fresh judge calls, cache hits and tokens of these rows; the cost when `prices` (USD per
    million input, output tokens) are known."""
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
    similarities = [r[col.REFERENCE_SIMILARITY] for r in rows if r.get(col.REFERENCE_SIMILARITY) is not None]
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
        similarity_mean=round(sum(similarities) / len(similarities), 4) if similarities else None,
        similarity_ci=bootstrap_ci(similarities),
        similarity_rows=len(similarities),
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


def build_summary(
    evaluations: list[Dataset],
    stats: Optional[list[GenerationStats]] = None,
    prices: Optional[tuple[float, float]] = None,
    checks: Optional[TrustChecks] = None,
    pairwise: Optional[PairwiseReport] = None,
) -> EvaluationSummary:
    """Per-model scores, each model compared with the first (the baseline), the ranking, and the
    trust checks of the run."""
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
        judge_check=checks.judge if checks else None,
        similarity_check=checks.similarity if checks else None,
        pairwise=pairwise.comparisons if pairwise else [],
        notes=checks.notes if checks else [],
    )
