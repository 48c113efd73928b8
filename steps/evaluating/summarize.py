from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation import summary as report
from llm_engineering.evaluation.generation import GenerationStats
from steps.materializers import EvaluationSummaryMaterializer


@step(output_materializers=EvaluationSummaryMaterializer)
def summarize(
    evaluations: list[Dataset], generation_stats: list[GenerationStats]
) -> Annotated[report.EvaluationSummary, col.EVALUATION_SUMMARY]:
    """Aggregate scores per model and rank the models (the artifact renders as an HTML report)."""
    summary = report.summarize(evaluations, generation_stats)
    log_metadata(
        metadata={
            "ranking": summary.ranking,
            **{
                s.model_id: {"accuracy_mean": s.accuracy_mean, "style_mean": s.style_mean,
                             "scored": s.scored, "failed": s.failed,
                             "tokens_per_second": s.tokens_per_second}
                for s in summary.models
            },
        }
    )
    return summary
