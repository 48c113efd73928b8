from typing import Annotated, Optional

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.judging.pairwise import compare_answers
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.trust.labels import Labels
from llm_engineering.evaluation.trust.ppi import ppi_win_rate
from llm_engineering.infrastructure.judge_backends import open_judge
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL


@step
def compare_pairwise(
    answers: list[Dataset], judge: JudgeConfig, engine: EngineConfig, method: str = "preference", *,
    human_labels: Optional[Labels] = None,
) -> Annotated[PairwiseReport, col.PAIRWISE_COMPARISONS]:
    """Judge every other model's answers against the first model's, each pair in both orders (`pairwise.method`);
    with pairwise `human_labels` of some pairs, each win rate corrected by them too (`trust.ppi`)."""
    settings = get_settings()
    with open_judge([judge], engine, settings=settings, pool=ENGINE_POOL) as bound:
        comparisons = [compare_answers(other, answers[0], bound, method) for other in answers[1:]]
    if human_labels is not None:
        baseline = answers[0].to_list()
        comparisons = [c.model_copy(update={"ppi": ppi_win_rate(c, other.to_list(), baseline, human_labels)})
                       for c, other in zip(comparisons, answers[1:])]
    report = PairwiseReport(comparisons=comparisons)
    # Nested: ZenML refuses colons in top-level keys.
    log_metadata(metadata={"comparisons": {f"{c.model_a} vs {c.model_b}": c.metadata() for c in report.comparisons}})
    return report
