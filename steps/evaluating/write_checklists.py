from typing import Annotated, Optional

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import JudgeConfig
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.judging.checklist_writing import checklist_problems, items_sources
from llm_engineering.evaluation.judging.checklist_writing import write_checklists as write
from llm_engineering.infrastructure.judge_backends import open_judge
from llm_engineering.settings import get_settings
from steps.engine_pool import ENGINE_POOL
from steps.materializers import DatasetMaterializer


@step(output_materializers=DatasetMaterializer)
def write_checklists(
    rows: Dataset, *, judge: JudgeConfig, engine: EngineConfig, writer: Optional[JudgeConfig] = None,
    from_reference: bool = True,
) -> Annotated[Dataset, col.CHECKLISTS]:
    """Each row's checklist for a checklist rubric (the judge's, or `writer`'s): written once, reused by every model
    and every rescoring of these rows. `rows`: any model's answers (each row's id, instruction and reference, and its
    own `checklist` where the dataset gave one)."""
    rubric = judge.resolved_rubric()
    assert rubric.checklist is not None, "write_checklists runs for a checklist rubric only"
    written_by = (writer or judge).model_copy(update={"rubric": judge.rubric})
    with open_judge([written_by], engine, settings=get_settings(), pool=ENGINE_POOL) as bound:
        checklists = write(bound, rows, rubric.checklist.max_items, from_reference)
    problems = checklist_problems(checklists)
    log_metadata(metadata={"rows": len(checklists), "sources": items_sources(checklists),
                           "items": sum(len(items) for items in checklists[col.CHECKLIST]),
                           "rows_without_items": problems[:20]})
    return checklists
