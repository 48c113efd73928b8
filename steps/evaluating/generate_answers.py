import logging
from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.generation.answers import GenerationStats, answer_test_split
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
from llm_engineering.evaluation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.infrastructure.engines import open_engine
from llm_engineering.infrastructure.cpu_tuning import resolved_dtype
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL
from steps.materializers import DatasetMaterializer

logger = logging.getLogger(__name__)


@step(output_materializers={col.GENERATIONS: DatasetMaterializer})
def generate_answers(
    test_split: Dataset,
    model: str,
    sampling: SamplingConfig,
    engine: EngineConfig,
    prompt: PromptConfig,
    resume: bool = True,
) -> tuple[
    Annotated[Dataset, col.GENERATIONS],
    Annotated[GenerationStats, col.GENERATION_STATS],
]:
    """Generate every answer of one model with vLLM (in-process, or on Ray replicas), saving each as it finishes;
    a model with a LoRA adapter (`BASE+ADAPTER`) on its base's engine."""
    settings = get_settings()
    resolved = resolve_model(model, settings.MODEL_CACHE_DIR)
    dtype, dtype_reason = resolved_dtype(engine)
    logger.info("%s: engine dtype %s (%s)", model, dtype, dtype_reason)
    # Keyed by the dtype it resolved to: answers of `auto` on a bf16 CPU are not those of an fp32 one.
    checkpoint = AnswerCheckpoint(settings.CHECKPOINT_DIR, model, resolved.path, sampling,
                                  engine.model_copy(update={"dtype": dtype}), resolved.adapter)
    # The in-process engine stays in the pool after this step: the judge steps reuse it when they match.
    with open_engine(resolved.path, engine, ENGINE_POOL, resolved.adapter) as generation_engine:
        generations, stats = answer_test_split(
            generation_engine, test_split, model, sampling, prompt, engine.max_model_len, checkpoint, fresh=not resume
        )
    stats = stats.model_copy(update={"dtype": dtype, "dtype_reason": dtype_reason})
    log_metadata(metadata={"model": model, "checkpoint": str(checkpoint.path), **stats.model_dump()})
    return generations, stats
