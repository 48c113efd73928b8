from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import EngineConfig, JudgeConfig
from llm_engineering.evaluation.judge import VLLMJudge, score_answers
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.evaluation.summary import model_scores
from llm_engineering.settings import get_settings
from steps.materializers import DatasetMaterializer


@step(output_materializers=DatasetMaterializer)
def evaluate_answers(
    generations: Dataset, judge: JudgeConfig, engine: EngineConfig
) -> Annotated[Dataset, col.EVALUATIONS]:
    """Score every generated answer with the LLM judge (accuracy and style, 1-3)."""
    resolved = resolve_model(judge.model, get_settings().MODEL_CACHE_DIR)
    evaluations = score_answers(generations, VLLMJudge(resolved.path, judge.model, judge, engine))
    scores = model_scores(evaluations)
    log_metadata(
        metadata={
            "judge": judge.model,
            "rows": scores.rows,
            "failed": scores.failed,
            "accuracy_mean": scores.accuracy_mean,
            "style_mean": scores.style_mean,
        }
    )
    return evaluations
