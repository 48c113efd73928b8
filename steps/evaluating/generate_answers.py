import logging
from typing import Annotated

from datasets import Dataset
from zenml import get_step_context, log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import PromptConfig, SamplingConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.generation.answers import answer_test_split
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.evaluation.stored.generation import GenerationStats
from llm_engineering.infrastructure.cpu_tuning import resolved_dtype
from llm_engineering.infrastructure.engines import open_engine
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL
from steps.materializers import DatasetMaterializer

logger = logging.getLogger(__name__)

# Set in the step's `extra` by the pipeline (`engine_policy.frees_engine_after`), not as a parameter: `extra` is
# outside the step's cache key, so a judge that changes it does not re-run generation.
FREE_ENGINE = "free_engine"


@step(output_materializers={col.GENERATIONS: DatasetMaterializer})
def generate_answers(
    test_split: Dataset,
    *,
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
    a model with a LoRA adapter (`BASE+ADAPTER`) on its base's engine; the engine stopped as the step ends where the
    step's `extra` says `FREE_ENGINE` (the run's next in-process engine loads other weights)."""
    settings = get_settings()
    resolved = resolve_model(model, settings.MODEL_CACHE_DIR)
    dtype, dtype_reason = resolved_dtype(engine)
    logger.info("%s: engine dtype %s (%s)", model, dtype, dtype_reason)
    # Keyed by the dtype it resolved to: answers of `auto` on a bf16 CPU are not those of an fp32 one.
    checkpoint = AnswerCheckpoint(settings.CHECKPOINT_DIR, model, resolved.path, sampling=sampling,
                                  engine=engine.model_copy(update={"dtype": dtype}), adapter=resolved.adapter)
    # The in-process engine stays in the pool after this step, unless freed: the next steps reuse it when they match.
    with open_engine(resolved.path, engine, ENGINE_POOL, resolved.adapter) as generation_engine:
        generations, stats = answer_test_split(
            generation_engine, test_split, model, sampling=sampling, prompt=prompt, max_model_len=engine.max_model_len,
            checkpoint=checkpoint, fresh=not resume)
    if get_step_context().step_run.config.extra.get(FREE_ENGINE):  # stopping it (~6 s) is this step's cost
        logger.info("%s: stopping its engine (the run's next in-process engine loads other weights)", model)
        ENGINE_POOL.release()
    stats = stats.model_copy(update={"dtype": dtype, "dtype_reason": dtype_reason})
    log_metadata(metadata={"model": model, "checkpoint": str(checkpoint.path), **stats.model_dump()})
    return generations, stats
