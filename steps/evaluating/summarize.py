from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step
from zenml.types import HTMLString

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation import summary as report
from llm_engineering.evaluation.generation import GenerationStats


@step
def summarize(
    evaluations: list[Dataset], generation_stats: list[GenerationStats]
) -> tuple[
    Annotated[report.EvaluationSummary, col.EVALUATION_SUMMARY],
    Annotated[HTMLString, col.EVALUATION_REPORT],
]:
    """Aggregate scores per model, rank the models, and render the HTML report."""
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
    return summary, HTMLString(report.render_html(summary))
