"""The `evaluation_summary` artifact: judge scores aggregated per model, models compared, and the
run's trust checks attached.

ZenML stores these models' import path with each artifact: keep them here. The report that shows
a summary is apart: `report_text` (table, trust lines), `report_plots`, `report_html`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from collections import Counter
from typing import Any, Optional

from datasets import Dataset
from pydantic import BaseModel, Field, model_validator

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.agreement import JuryAgreement, LengthCorrelation, jury_agreement, length_correlation
from llm_engineering.evaluation.generation.answers import GenerationStats
from llm_engineering.evaluation.report.items import ItemView, item_views
from llm_engineering.evaluation.trust.label_agreement import LabelAgreement
from llm_engineering.evaluation.judging.pairwise import PairwiseComparison, PairwiseReport
from llm_engineering.evaluation.rates import bootstrap_ci, detectable_change, mean, rows_for_change
from llm_engineering.evaluation.samples import (
    between_sample_share,
    grouped,
    reducers,
    row_means,
    row_spread,
    sample_of,
    two_level_ci,
    verdict_means,
)
from llm_engineering.evaluation.trust.judge_check import JudgeCheck, TrustChecks
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.trust.similarity import SimilarityCheck
from llm_engineering.evaluation.report.trust_text import REFERENCE_GUIDED_CHECK, judge_headline, self_preference_warnings


class JudgeUsage(BaseModel):
    """Judge requests of this scoring: new calls, cache hits, tokens and estimated cost."""

    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    estimated_cost_usd: Optional[float] = None
    seconds: Optional[float] = Field(None, description="the judge's wall time for the new calls (None: scored before "
                                     "it was recorded)")
    seconds_per_verdict: Optional[float] = Field(None, description="seconds over new calls: what one more verdict costs")


class JudgeScores(BaseModel):
    """One jury member's figures on one criterion."""

    judge: str
    scored: int
    mean: Optional[float]
    expected_mean: Optional[float] = None


class Reduced(BaseModel):
    """A reducer's figure: the mean over rows of each row's reduced scores, with its 95% interval over rows."""

    value: Optional[float]
    ci: Optional[list[float]] = None


class CriterionScores(BaseModel):
    """One criterion's figures for one model: the integer mean, the probability-weighted (expected) mean
    where the judge gave logprobs, and how the score follows answer length."""

    name: str
    mean: Optional[float]
    ci: Optional[list[float]] = Field(None, description="95% bootstrap interval of the mean")
    counts: dict[str, int] = Field(description="score -> rows, over scored rows")
    expected_mean: Optional[float] = None
    expected_ci: Optional[list[float]] = None
    expected_rows: int = Field(0, description="scored rows with an expected score")
    expected_problem: Optional[str] = Field(None, description="why scored rows lack an expected score")
    judges: list[JudgeScores] = Field(default_factory=list, description="with a jury: each judge's figures")
    length: Optional[LengthCorrelation] = Field(
        None, description="Spearman correlation of the score (expected where every row has one) with answer length")
    detectable: Optional[float] = Field(
        None, description="the smallest change of the integer mean a paired comparison of these rows detects (80% "
                          "power, 5%), runs uncorrelated per row: an upper bound")
    rows_for_tenth: Optional[int] = Field(None, description="paired rows a change of 0.1 would need, likewise")
    # With several answers per prompt (sampling.n): `mean` is the mean over rows of each row's mean and `ci` the
    # two-level bootstrap's (rows, then samples within a row); the figures below say how far samples differ.
    rows_ci: Optional[list[float]] = Field(None, description="with samples: the interval over rows of row means, "
                                           "without drawing samples within a row (for comparison with `ci`)")
    sample_share: Optional[float] = Field(None, description="with samples: the share of the score's variance between "
                                          "a row's samples (1 - intraclass correlation)")
    row_spread: Optional[float] = Field(None, description="with samples: the mean standard deviation of a row's scores")
    pass_score: Optional[float] = Field(None, description="with samples: the score at or above which an answer passes")
    reducers: dict[str, Reduced] = Field(default_factory=dict, description="with samples: mean, max, majority, "
                                         "pass@1 and pass@k of a row's scores, averaged over rows")


class ModelScores(BaseModel):
    """One model's scores. Means are over scored rows; failed rows are counted, never dropped."""

    model_id: str
    rows: int = Field(description="answers: the test split's rows times `samples`")
    samples: int = Field(1, description="answers per prompt (sampling.n)")
    scored: int
    failed: int
    failure_rate: float
    criteria: list[CriterionScores]
    mean_completion_tokens: float
    truncated: int = Field(description="answers cut by max_tokens (finish reason 'length')")
    tokens_per_second: Optional[float] = None
    generation_seconds: Optional[float] = None
    judge_usage: JudgeUsage
    similarity_mean: Optional[float] = Field(None, description="mean cosine similarity of answer and reference")
    similarity_ci: Optional[list[float]] = None
    similarity_rows: int = 0

    @model_validator(mode="before")
    @classmethod
    def _read_handbook_fields(cls, data: Any) -> Any:
        # Summaries stored before rubrics had accuracy_* and style_* fields: read them as criteria.
        if isinstance(data, dict) and "criteria" not in data and "accuracy_mean" in data:
            data = dict(data)
            data["criteria"] = [
                {"name": name, "mean": data.pop(f"{name}_mean", None), "ci": data.pop(f"{name}_ci", None),
                 "counts": data.pop(f"{name}_counts", {})} for name in ("accuracy", "style")
            ]
        return data

    def criterion(self, name: str) -> CriterionScores:
        return next(c for c in self.criteria if c.name == name)


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
    run: str = Field("", description="the pipeline run that made it (a run whose summarize step was cached reports "
                                      "under its own name: `run_report`); the report's labels name it")
    headline: str = Field("", description="the first line: whether the judge's scores mean anything")
    rubric: str = "handbook"
    criteria: list[str] = Field(default_factory=lambda: ["accuracy", "style"])
    scales: dict[str, dict[int, str]] = Field(default_factory=dict, description="each criterion's levels and meanings")
    models: list[ModelScores]
    comparisons: list[ModelComparison] = Field(default_factory=list)
    ranking: list[str] = Field(description="model ids, best mean of the first criterion (then the next...) first")
    created_at: str
    judge_check: Optional[JudgeCheck] = Field(None, description="can the judge tell right answers from wrong?")
    similarity_check: Optional[SimilarityCheck] = None
    pairwise: list[PairwiseComparison] = Field(default_factory=list)
    jury: list[str] = Field(default_factory=list, description="the jury's judges, when several judges scored")
    jury_aggregate: Optional[str] = None
    agreement: list[JuryAgreement] = Field(default_factory=list)
    labels: Optional[LabelAgreement] = Field(None, description="the first judge's agreement with human labels (--labels)")
    warnings: list[str] = Field(default_factory=list, description="biases the reader must know (self-preference)")
    notes: list[str] = Field(default_factory=list, description="checks that were skipped, and why")
    items: list[ItemView] = Field(default_factory=list, description="the rows a person reads (the report's row browser)")
    items_total: int = Field(0, description="test items in the run (more than `items` when only the worst are kept)")



def judge_usage(rows: list[dict], prices: Optional[tuple[float, float]] = None) -> JudgeUsage:
    """Fresh judge calls, cache hits and tokens of these rows; the cost when `prices` (USD per
    million input, output tokens) are known."""
    fresh = [r for r in rows if r.get(col.JUDGE_RAW) is not None and not r.get(col.JUDGE_CACHED)]
    prompt = sum(r.get(col.JUDGE_PROMPT_TOKENS) or 0 for r in fresh)
    completion = sum(r.get(col.JUDGE_COMPLETION_TOKENS) or 0 for r in fresh)
    timed = [r[col.JUDGE_SECONDS] for r in fresh if r.get(col.JUDGE_SECONDS) is not None]
    seconds = round(sum(timed), 3) if fresh and len(timed) == len(fresh) else None
    return JudgeUsage(
        calls=len(fresh),
        seconds=seconds,
        seconds_per_verdict=round(seconds / len(fresh), 3) if seconds is not None else None,
        cached=sum(bool(r.get(col.JUDGE_CACHED)) for r in rows),
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_cost_usd=round((prompt * prices[0] + completion * prices[1]) / 1e6, 6) if prices else None,
    )


def criteria_of(evaluations: Dataset) -> list[str]:
    """The criteria whose verdict columns the rows hold (`<name>_score`)."""
    return [name.removesuffix("_score") for name in evaluations.column_names if name.endswith("_score")]


def _criterion_scores(name: str, scored: list[dict], values: Optional[list[int]], judges: list[str],
                      samples: int = 1, pass_score: Optional[float] = None) -> CriterionScores:
    answers = [r[col.score(name)] for r in scored]
    expected = [r.get(col.expected(name)) for r in scored]
    with_expected = [e for e in expected if e is not None]
    problems = Counter(r.get(col.EXPECTED_PROBLEM) or "no expected-score column (scored before probabilities were "
                       "recorded)" for r in scored if r.get(col.expected(name)) is None)
    per_judge = []
    for k, judge in enumerate(judges):
        own = [(r[col.jury_scores(name)][k], r[col.jury_expected(name)][k]) for r in scored
               if r.get(col.jury_scores(name)) and r[col.jury_scores(name)][k] is not None]
        own_expected = [e for _, e in own if e is not None]
        per_judge.append(JudgeScores(judge=judge, scored=len(own), mean=mean([s for s, _ in own]),
                                     expected_mean=mean(own_expected) if len(own_expected) == len(own) else None))
    by_length = with_expected if len(with_expected) == len(scored) else answers
    scores = answers  # one per row: the rows a paired comparison pairs
    figures: dict[str, Any]
    if samples == 1:
        figures = {"ci": bootstrap_ci(answers), "expected_ci": bootstrap_ci(with_expected)}
    else:
        groups = grouped(scored, lambda r: r[col.score(name)])
        expected_groups = grouped(scored, lambda r: r.get(col.expected(name)))
        scores, with_expected = list(row_means(groups).values()), list(row_means(expected_groups).values())
        threshold = pass_score if pass_score is not None else max(values or answers)
        figures = {
            "ci": two_level_ci(list(groups.values())), "expected_ci": two_level_ci(list(expected_groups.values())),
            "rows_ci": bootstrap_ci(scores), "sample_share": between_sample_share(groups),
            "row_spread": row_spread(groups), "pass_score": threshold,
            "reducers": {reducer: Reduced(value=value, ci=ci) for reducer, (value, ci)
                         in reducers(groups, threshold, samples).items()},
        }
    return CriterionScores(
        name=name, mean=mean(scores),
        counts={str(v): answers.count(v) for v in (values or sorted(set(answers)))},
        expected_mean=mean(with_expected), expected_rows=sum(e is not None for e in expected),
        expected_problem=problems.most_common(1)[0][0] if problems else None,
        judges=per_judge,
        length=length_correlation(by_length, [len(r.get(col.ANSWER) or "") for r in scored]),
        detectable=detectable_change(scores),
        rows_for_tenth=rows_for_change(scores, 0.1),
        **figures,
    )


def model_scores(
    evaluations: Dataset,
    stats: Optional[GenerationStats] = None,
    prices: Optional[tuple[float, float]] = None,
    rubric: Optional[Rubric] = None,
    judges: Optional[list[str]] = None,
    pass_score: Optional[float] = None,
) -> ModelScores:
    """Scores of one model's `evaluations` per criterion of `rubric` (None: the criteria the columns
    hold); a row counts as scored only if every criterion has a score."""
    rows = evaluations.to_list()
    names = rubric.names if rubric else criteria_of(evaluations)
    samples = max((sample_of(r) + 1 for r in rows), default=1)
    scored = [r for r in rows if r[col.JUDGE_ERROR] is None and all(r.get(col.score(n)) is not None for n in names)]
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
        samples=samples,
        criteria=[_criterion_scores(n, scored, rubric.criterion(n).values if rubric else None, judges or [], samples,
                                    pass_score) for n in names],
        mean_completion_tokens=round(
            sum(r.get(col.COMPLETION_TOKENS) or 0 for r in rows) / len(rows), 2
        ) if rows else 0.0,
        truncated=sum(r.get(col.FINISH_REASON) == "length" for r in rows),
        # 0.0 where this run generated nothing (every answer from the checkpoint): no throughput was measured.
        tokens_per_second=(stats.tokens_per_second or None) if stats else None,
        generation_seconds=stats.seconds if stats else None,
        judge_usage=judge_usage(rows, prices),
        similarity_mean=round(sum(similarities) / len(similarities), 4) if similarities else None,
        similarity_ci=bootstrap_ci(similarities),
        similarity_rows=len(similarities),
    )


def compare_models(a: Dataset, b: Dataset, criterion: str) -> ModelComparison:
    """Paired difference of means on the ids both models have a valid verdict for."""
    scores_a, scores_b = (verdict_means(d.to_list(), col.score(criterion)) for d in (a, b))
    common = sorted(scores_a.keys() & scores_b.keys())
    differences = [scores_a[i] - scores_b[i] for i in common]
    return ModelComparison(
        model_a=a[0][col.MODEL_ID], model_b=b[0][col.MODEL_ID], criterion=criterion,
        paired_rows=len(common), difference=mean(differences), ci=bootstrap_ci(differences),
    )


def build_summary(
    evaluations: list[Dataset],
    stats: Optional[list[GenerationStats]] = None,
    prices: Optional[tuple[float, float]] = None,
    checks: Optional[TrustChecks] = None,
    pairwise: Optional[PairwiseReport] = None,
    rubric: Optional[Rubric] = None,
    judge_models: Optional[list[str]] = None,
    jury_aggregate: Optional[str] = None,
    labels: Optional[LabelAgreement] = None,
    run: str = "",
    pass_score: Optional[float] = None,
) -> EvaluationSummary:
    """Per-model scores per criterion, each model compared with the first (the baseline), the ranking,
    the jury's agreement, and the trust checks, agreement with human `labels` and bias warnings of the
    run. `judge_models` are the configured judges' models (several: a jury)."""
    from llm_engineering.evaluation.judging.rubric import load_rubric

    rubric = rubric or load_rubric("handbook")
    judge_ids = sorted({j for dataset in evaluations for j in set(dataset[col.JUDGE_MODEL])})
    jury = [] if len(judge_models or []) < 2 else judge_ids[0].removeprefix("jury: ").split(" + ")
    by_model = {s.model_id: s for s in stats or []}
    scores = []
    for dataset in evaluations:
        model_id = dataset[0][col.MODEL_ID] if len(dataset) else "?"
        scores.append(model_scores(dataset, by_model.get(model_id), prices, rubric, jury, pass_score))
    comparisons = [
        compare_models(other, evaluations[0], criterion)
        for other in evaluations[1:] if len(other) and len(evaluations[0])
        for criterion in rubric.names
    ]
    ranking = sorted(scores, key=lambda s: (
        [-(c.mean or 0.0) for c in s.criteria], [-(c.expected_mean or 0.0) for c in s.criteria], s.model_id))
    judge_check = checks.judge if checks else None
    items, items_total = item_views(evaluations, rubric.names)
    return EvaluationSummary(
        judge_model=", ".join(judge_ids),
        run=run,
        headline=judge_headline(", ".join(judge_ids), judge_check),
        rubric=rubric.name,
        criteria=rubric.names,
        scales=rubric.scales,
        models=scores,
        comparisons=comparisons,
        ranking=[s.model_id for s in ranking],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        judge_check=judge_check,
        similarity_check=checks.similarity if checks else None,
        pairwise=pairwise.comparisons if pairwise else [],
        jury=jury,
        jury_aggregate=jury_aggregate if jury else None,
        agreement=jury_agreement(evaluations, rubric, len(jury)) if jury else [],
        labels=labels,
        warnings=self_preference_warnings(judge_models or [], [s.model_id for s in scores], judge_check),
        notes=(checks.notes if checks else []) + ([REFERENCE_GUIDED_CHECK] if judge_check and rubric.reference_guided else []),
        items=items,
        items_total=items_total,
    )
