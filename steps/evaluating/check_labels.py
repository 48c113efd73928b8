from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.stored.labels import LabelAgreement
from llm_engineering.evaluation.trust.label_check import judge_labels
from llm_engineering.evaluation.trust.labels import Labels
from llm_engineering.infrastructure.judge_backends import open_judge
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL


@step
def check_labels(
    answers: list[Dataset], labels: Labels, judge: JudgeConfig, engine: EngineConfig
) -> Annotated[LabelAgreement, col.LABEL_AGREEMENT]:
    """How far the judge agrees with human labels: it scores exactly the labelled answers, each with its
    row's instruction and reference (from the first model's rows) and, in a conversation, after its own model's
    earlier turns (`answers`: every model's), beside the labels and the baselines."""
    settings = get_settings()
    with open_judge([judge], engine, settings=settings, pool=ENGINE_POOL) as bound:
        report = judge_labels(answers[0], labels, bound, every_model=answers)
    log_metadata(metadata={"label_agreement": report.metadata()})
    return report
