from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.infrastructure.hub import load_published
from llm_engineering.settings import get_settings
from steps.materializers import DatasetMaterializer


@step(output_materializers=DatasetMaterializer)
def load_published_results(repo_id: str, split: str = "test") -> Annotated[Dataset, col.GENERATIONS]:
    """Read a model's published answers from a Hub dataset repo, to score them on this machine."""
    results = load_published(repo_id, split, get_settings().hub_token)
    missing = {col.ID, col.INSTRUCTION, col.ANSWER, col.MODEL_ID} - set(results.column_names)
    if missing:
        raise ValueError(f"{repo_id} lacks the columns {sorted(missing)} of a results repo written by this pipeline.")
    log_metadata(metadata={"repo": repo_id, "rows": len(results)})
    return results
