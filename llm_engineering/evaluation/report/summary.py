"""The `evaluation_summary` artifact built: judge scores aggregated per model, models compared, and the
run's trust checks attached.

Its types are stored ones (`evaluation.stored.summary`). The report that shows a summary is apart: `text`
(table, trust lines), `plots`, `html`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.judging.agreement import jury_agreement
from llm_engineering.evaluation.judging.failures import INCOMPLETE_VERDICT, failure_causes
from llm_engineering.evaluation.judging.rubric import Rubric
from llm_engineering.evaluation.rates import bootstrap_ci, mean
from llm_engineering.evaluation.report.categories import category_scores
from llm_engineering.evaluation.report.checklist import checklist_figures, scored_on, unscored
from llm_engineering.evaluation.report.criterion_scores import criterion_scores
from llm_engineering.evaluation.report.items import item_views
from llm_engineering.evaluation.report.measures import check_scores, compare_measures, measured_metrics, metric_scores
from llm_engineering.evaluation.report.trust_text import (
    EXPECTED_BEFORE_ANALYSIS,
    REFERENCE_GUIDED_CHECK,
    judge_headline,
    reference_notes,
    self_preference_warnings,
)
from llm_engineering.evaluation.samples import sample_of, verdict_means
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.evaluation.stored.judge_id import JudgeId, members
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.stored.summary import (
    RUBRIC_OF_OLD_RUNS,
    EvaluationSummary,
    JudgeUsage,
    ModelComparison,
    ModelScores,
    TurnScores,
)
from llm_engineering.evaluation.stored.trust import TrustChecks
from llm_engineering.evaluation.trust.labels import Labels
from llm_engineering.evaluation.trust.ppi import ppi_by_criterion, ppi_difference
from llm_engineering.evaluation.turns import turn_of


def judge_usage(rows: list[dict], prices: Optional[tuple[float, float]] = None) -> JudgeUsage:
    """Fresh judge calls, cache hits and tokens of these rows; the cost when `prices` (USD per
    million input, output tokens) are known."""
    fresh = [r for r in rows if r.get(col.JUDGE_RAW) is not None and not r.get(col.JUDGE_CACHED)]
    prompt = sum(r.get(col.JUDGE_PROMPT_TOKENS) or 0 for r in fresh)
    completion = sum(r.get(col.JUDGE_COMPLETION_TOKENS) or 0 for r in fresh)
    timed = [r[col.JUDGE_SECONDS] for r in fresh if r.get(col.JUDGE_SECONDS) is not None]
    seconds = round(sum(timed), 3) if fresh and len(timed) == len(fresh) else None
    return JudgeUsage(
        answers=len(fresh),
        calls=sum(r[col.JUDGE_CALLS] if r.get(col.JUDGE_CALLS) is not None else 1 for r in fresh),  # before: 1 a row
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


def _turn_scores(rows: list[dict], scored: list[dict], names: list[str], *, rubric: Optional[Rubric], samples: int,
                 pass_score: Optional[float]) -> list[TurnScores]:
    """Each turn's figures, over that turn's answers (none for one-turn rows)."""
    turns = sorted({turn_of(r) for r in rows})
    if turns == [1]:
        return []
    per_turn = []
    for turn in turns:
        answers = [r for r in scored if turn_of(r) == turn]
        criteria = [criterion_scores(n, answers, values=rubric.criterion(n).values if rubric else None, judges=[],
                                      samples=samples, pass_score=pass_score) for n in names]
        per_turn.append(TurnScores(turn=turn, rows=sum(turn_of(r) == turn for r in rows), scored=len(answers),
                                   criteria=criteria))
    return per_turn


def model_scores(
    evaluations: Dataset,
    *,
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
    valid = [r[col.JUDGE_ERROR] is None and all(r.get(col.score(n)) is not None for n in names) for r in rows]
    scored = [r for r, ok in zip(rows, valid) if ok]
    model_ids = sorted({r[col.MODEL_ID] for r in rows})
    if len(model_ids) != 1:
        raise ValueError(f"evaluations must hold exactly one model, found {model_ids}")
    similarities = [r[col.REFERENCE_SIMILARITY] for r in rows if r.get(col.REFERENCE_SIMILARITY) is not None]
    metrics = measured_metrics(evaluations.column_names)
    return ModelScores(
        model_id=model_ids[0],
        rows=len(rows),
        scored=len(scored),
        failed=len(rows) - len(scored),
        failure_rate=round((len(rows) - len(scored)) / len(rows), 4) if rows else 0.0,
        failures=failure_causes(r[col.JUDGE_ERROR] or INCOMPLETE_VERDICT for r, ok in zip(rows, valid) if not ok),
        samples=samples,
        # Each criterion over the rows with its score: a checklist rubric's row keeps its checklist score where its
        # other criteria failed (counted: `unscored`).
        criteria=[criterion_scores(n, scored_on(rows, n), values=rubric.criterion(n).values if rubric else None,
                                   judges=judges or [], samples=samples, pass_score=pass_score).model_copy(
                                       update=unscored(rows, n)) for n in names],
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
        reference_rows=sum(r.get(col.REFERENCE) is not None for r in rows) if col.REFERENCE in evaluations.column_names
        else None,
        escalated=sum(bool(r.get(col.ESCALATED)) for r in rows),
        escalation_failed=len(errors := [r[col.ESCALATION_ERROR] for r in rows if r.get(col.ESCALATION_ERROR)]),
        escalation_error=errors[0] if errors else None,
        turns=_turn_scores(rows, scored, names, rubric=rubric, samples=samples, pass_score=pass_score),
        checklist=checklist_figures(rows, rubric),
        metrics=metric_scores(rows, metrics),
        checks=check_scores(rows, samples),
        categories=category_scores(rows, scored, names, metrics, rubric=rubric, samples=samples, pass_score=pass_score),
    )


def with_ppi(scores: ModelScores, evaluations: Dataset, labels: Optional[Labels]) -> ModelScores:
    """The model's scores with each labelled criterion's PPI++ mean (`trust.ppi`), where labels name its answers."""
    estimates = ppi_by_criterion(evaluations.to_list(), labels, [c.name for c in scores.criteria]) if labels else {}
    if not estimates:
        return scores
    criteria = [c.model_copy(update={"ppi": estimates.get(c.name)}) for c in scores.criteria]
    return scores.model_copy(update={"criteria": criteria})


def compare_models(a: Dataset, b: Dataset, criterion: str, *, labels: Optional[Labels] = None) -> ModelComparison:
    """Paired difference of means on the ids both models have a valid verdict for; with pointwise `labels` of both
    models' answers to some rows, also corrected by them (`trust.ppi`)."""
    scores_a, scores_b = (verdict_means(d.to_list(), col.score(criterion)) for d in (a, b))
    common = sorted(scores_a.keys() & scores_b.keys())
    differences = [scores_a[i] - scores_b[i] for i in common]
    return ModelComparison(
        model_a=a[0][col.MODEL_ID], model_b=b[0][col.MODEL_ID], criterion=criterion,
        paired_rows=len(common), difference=mean(differences), ci=bootstrap_ci(differences),
        ppi=ppi_difference(a.to_list(), b.to_list(), labels, criterion) if labels else None,
    )


@dataclass(frozen=True)
class SummaryInputs:
    """What a summary is built from: one model's `evaluations` each (the first is the baseline), and what the run
    found beside them. `prices`: USD per million input, output tokens of the judge; `rubric`: None for runs stored
    before rubrics were named; `run`: the pipeline run's name."""

    evaluations: list[Dataset]
    stats: Optional[list[GenerationStats]] = None
    prices: Optional[tuple[float, float]] = None
    checks: Optional[TrustChecks] = None
    pairwise: Optional[PairwiseReport] = None
    rubric: Optional[Rubric] = None
    jury_aggregate: Optional[str] = None
    labels: Optional[LabelAgreement] = None
    run: str = ""
    pass_score: Optional[float] = None
    human_labels: Optional[Labels] = None  # pointwise labels: each criterion's mean and comparison corrected (PPI++)


def build_summary(inputs: SummaryInputs) -> EvaluationSummary:
    """Per-model scores per criterion, each model compared with the first (the baseline), the ranking,
    the jury's agreement, and the trust checks, agreement with human `labels` and bias warnings of the
    run. The judges are read from the rows' judge ids (a jury's: its members)."""
    from llm_engineering.evaluation.judging.rubric import load_rubric

    evaluations, checks = inputs.evaluations, inputs.checks
    rubric = inputs.rubric or load_rubric(RUBRIC_OF_OLD_RUNS)
    judge_ids = sorted({j for dataset in evaluations for j in set(dataset[col.JUDGE_MODEL])})
    judges = members(judge_ids[0]) if judge_ids else []
    jury = judges if len(judges) > 1 else []
    by_model = {s.model_id: s for s in inputs.stats or []}
    scores = []
    for dataset in evaluations:
        model_id = dataset[0][col.MODEL_ID] if len(dataset) else "?"
        scores.append(with_ppi(model_scores(dataset, stats=by_model.get(model_id), prices=inputs.prices, rubric=rubric,
                                            judges=jury, pass_score=inputs.pass_score), dataset, inputs.human_labels))
    comparisons = [
        compare_models(other, evaluations[0], criterion, labels=inputs.human_labels)
        for other in evaluations[1:] if len(other) and len(evaluations[0])
        for criterion in rubric.names
    ]
    metric_comparisons = [
        comparison for other in evaluations[1:] if len(other) and len(evaluations[0])
        for comparison in compare_measures(other.to_list(), evaluations[0].to_list(), measured_metrics(other.column_names))
    ]
    ranking = sorted(scores, key=lambda s: (
        [-(c.mean or 0.0) for c in s.criteria], [-(c.expected_mean or 0.0) for c in s.criteria], s.model_id))
    judge_check = checks.judge if checks else None
    metrics = list(dict.fromkeys(name for dataset in evaluations for name in measured_metrics(dataset.column_names)))
    items, items_total = item_views(evaluations, rubric.names, metrics=metrics)
    return EvaluationSummary(
        judge_model=", ".join(judge_ids),
        judges=judges,
        run=inputs.run,
        headline=judge_headline(", ".join(judge_ids), judge_check),
        rubric=rubric.name,
        criteria=rubric.names,
        checklist=rubric.checklist.criterion if rubric.checklist else None,
        scales=rubric.scales,
        models=scores,
        comparisons=comparisons,
        metrics=metrics,
        metric_comparisons=metric_comparisons,
        categories=list(dict.fromkeys(c.category for s in scores for c in s.categories)),
        ranking=[s.model_id for s in ranking],
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        judge_check=judge_check,
        similarity_check=checks.similarity if checks else None,
        pairwise=inputs.pairwise.comparisons if inputs.pairwise else [],
        jury=jury,
        jury_aggregate=inputs.jury_aggregate if jury else None,
        agreement=jury_agreement(evaluations, rubric, len(jury)) if jury else [],
        labels=inputs.labels,
        warnings=self_preference_warnings([JudgeId.parse(j).model for j in judges], [s.model_id for s in scores],
                                          judge_check),
        notes=reference_notes(scores, rubric.reference_guided) + (checks.notes if checks else [])
        + ([REFERENCE_GUIDED_CHECK] if judge_check and judge_check.right_answers == "reworded" else [])
        + ([EXPECTED_BEFORE_ANALYSIS] if rubric.expected_before_analysis else []),
        items=items,
        items_total=items_total,
    )
