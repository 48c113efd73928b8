from typing import Annotated, Optional

from datasets import Dataset
from zenml import get_step_context, log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig, JuryConfig
from llm_engineering.evaluation.judging.prices import judge_prices
from llm_engineering.evaluation.report.summary import SummaryInputs, build_summary
from llm_engineering.evaluation.report.text import trust_lines
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.evaluation.stored.trust import TrustChecks
from llm_engineering.evaluation.trust.labels import Labels
from steps.materializers import EvaluationSummaryMaterializer


@step(output_materializers=EvaluationSummaryMaterializer)
def summarize(
    evaluations: list[Dataset],
    generation_stats: list[GenerationStats],
    *,
    judges: list[JudgeConfig],
    checks: Optional[TrustChecks] = None,
    pairwise: Optional[PairwiseReport] = None,
    jury: Optional[JuryConfig] = None,
    labels: Optional[LabelAgreement] = None,
    human_labels: Optional[Labels] = None,
    pass_score: Optional[float] = None,
) -> Annotated[EvaluationSummary, col.EVALUATION_SUMMARY]:
    """Aggregate scores per model, compare models, and say how far the scores can be trusted
    (the artifact renders as an HTML report)."""
    # A jury's cost is known when its judges share one price (one model, or one price set).
    prices = {judge_prices(judge) for judge in judges}
    summary = build_summary(SummaryInputs(
        evaluations, stats=generation_stats, prices=prices.pop() if len(prices) == 1 else None, checks=checks,
        pairwise=pairwise, rubric=judges[0].resolved_rubric(),
        jury_aggregate=(jury or JuryConfig()).aggregate, labels=labels, run=get_step_context().pipeline_run.name,
        pass_score=pass_score, human_labels=human_labels))
    log_metadata(
        metadata={
            "ranking": summary.ranking,
            "trust": trust_lines(summary),
            "rubric": summary.rubric,
            **({"jury_alpha": {a.criterion: {"alpha": a.alpha, "ci": a.ci} for a in summary.agreement}}
               if summary.agreement else {}),
            **({"judge_check": summary.judge_check.metadata()} if summary.judge_check else {}),
            **({"label_agreement": summary.labels.metadata()} if summary.labels else {}),
            # Nested: ZenML refuses colons in top-level keys, and a model id may hold one.
            **({"pairwise": {f"{c.model_a} vs {c.model_b}": c.metadata() for c in summary.pairwise}}
               if summary.pairwise else {}),
            **{
                s.model_id: {**{f"{c.name}_mean": c.mean for c in s.criteria},
                             **{f"{c.name}_ci": c.ci for c in s.criteria},
                             **{f"{c.name}_expected_mean": c.expected_mean for c in s.criteria},
                             "rows": s.rows, "scored": s.scored, "failed": s.failed,
                             "similarity_mean": s.similarity_mean, "similarity_ci": s.similarity_ci,
                             **{f"{m.name}_mean": m.mean for m in s.metrics if m.name != "similarity"},
                             **({"checks_passed": s.checks.passed.rate} if s.checks else {}),
                             "tokens_per_second": s.tokens_per_second,
                             "judge_calls": s.judge_usage.calls,
                             "judge_cache_hits": s.judge_usage.cached,
                             **({"escalated": s.escalated, "escalation_failed": s.escalation_failed}
                                if judges[0].escalate_to else {}),
                             "judge_seconds_per_verdict": s.judge_usage.seconds_per_verdict,
                             "judge_cost_usd": s.judge_usage.estimated_cost_usd,
                             **({"turns": {str(t.turn): {f"{c.name}_mean": c.mean for c in t.criteria}
                                           for t in s.turns}} if s.turns else {})}
                for s in summary.models
            },
        }
    )
    return summary
