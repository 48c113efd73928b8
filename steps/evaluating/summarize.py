from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation import summary as report
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.generation import GenerationStats
from steps.materializers import EvaluationSummaryMaterializer


@step(output_materializers=EvaluationSummaryMaterializer)
def summarize(
    evaluations: list[Dataset], generation_stats: list[GenerationStats], judge: JudgeConfig
) -> Annotated[report.EvaluationSummary, col.EVALUATION_SUMMARY]:
    """Aggregate scores per model and compare models (the artifact renders as an HTML report)."""
    summary = report.summarize(evaluations, generation_stats, report.judge_prices(judge))
    log_metadata(
        metadata={
            "ranking": summary.ranking,
            **{
                s.model_id: {"accuracy_mean": s.accuracy_mean, "style_mean": s.style_mean,
                             "accuracy_ci": s.accuracy_ci, "style_ci": s.style_ci,
                             "scored": s.scored, "failed": s.failed,
                             "tokens_per_second": s.tokens_per_second,
                             "judge_calls": s.judge_usage.calls,
                             "judge_cost_usd": s.judge_usage.estimated_cost_usd}
                for s in summary.models
            },
        }
    )
    return summary
