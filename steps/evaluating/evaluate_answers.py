import logging
from typing import Annotated, Optional

from datasets import Dataset
from zenml import get_step_context, log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig, JuryConfig, SimilarityConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.judging.checklist_writing import with_checklists
from llm_engineering.evaluation.judging.escalation import escalate, with_confidence
from llm_engineering.evaluation.judging.scoring import score_answers
from llm_engineering.evaluation.metrics.config import MeasuresConfig
from llm_engineering.evaluation.metrics.measure import measure_answers
from llm_engineering.evaluation.trust.similarity import add_reference_similarity, get_embedder
from llm_engineering.infrastructure.judge_backends import open_judge
from llm_engineering.infrastructure.opik_tracking import log_scoring
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL
from steps.materializers import DatasetMaterializer

logger = logging.getLogger(__name__)


@step(output_materializers=DatasetMaterializer)
def evaluate_answers(
    generations: Dataset,
    *,
    judges: list[JudgeConfig],
    engine: EngineConfig,
    only_failed: bool = False,
    similarity: Optional[SimilarityConfig] = None,
    jury: Optional[JuryConfig] = None,
    checklists: Optional[Dataset] = None,
    measures: Optional[MeasuresConfig] = None,
) -> Annotated[Dataset, col.EVALUATIONS]:
    """Score every generated answer with the LLM judge, or each judge of a jury, on the judges'
    rubric (default task-accuracy: does the answer do the task, and the original's style, 1-3); without a judge, the
    reference metrics and checks of `measures` (default: every metric), and the similarity to the reference when
    `similarity` is enabled.

    `generations` may be a previous `evaluations` artifact: with `only_failed`, its valid
    verdicts are kept and only the rows without one are judged again.
    """
    settings = get_settings()
    if checklists is not None:  # a checklist rubric: each row's items (the `checklists` artifact)
        generations = with_checklists(generations, checklists)
    with open_judge(judges, engine, settings=settings, pool=ENGINE_POOL,
                    aggregate=(jury or JuryConfig()).aggregate) as judge:
        rubric = judge.rubric
        evaluations = score_answers(generations, judge, only_failed)
    evaluations = with_confidence(evaluations, rubric) if len(judges) == 1 else evaluations  # a jury's: none
    second = judges[0].escalate_to if len(judges) == 1 else None
    if second is not None:  # the rows the first judge is unsure of, judged by the second on the same rubric
        with open_judge([second.model_copy(update={"rubric": judges[0].rubric})], engine, settings=settings,
                        pool=ENGINE_POOL) as escalation:
            evaluations = escalate(evaluations, escalation, judges[0].escalate_below)
    measures = measures or MeasuresConfig()
    evaluations = measure_answers(evaluations, measures.metrics, measures.checks)
    if similarity is not None and similarity.enabled and measures.similarity:
        if col.REFERENCE in evaluations.column_names and any(r is not None for r in evaluations[col.REFERENCE]):
            evaluations = add_reference_similarity(evaluations, get_embedder(similarity.batch_size))
        else:
            logger.info("No reference answers in these rows: reference similarity skipped")
    run_name = get_step_context().pipeline_run.name
    model_id = evaluations[0][col.MODEL_ID] if len(evaluations) else "?"
    opik_traces = log_scoring(evaluations, rubric, settings, f"{run_name}-{model_id}")
    # The scores are the summarize step's (its metadata per model, the report, the cards): computed once, from these rows.
    log_metadata(
        metadata={
            "judge": evaluations[0][col.JUDGE_MODEL] if len(evaluations) else judges[0].model,
            "rubric": rubric.name,
            "rows": len(evaluations),
            "opik_traces": opik_traces if opik_traces is not None else "opik not configured",
        }
    )
    return evaluations
