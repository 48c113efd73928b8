from typing import Annotated

from datasets import Dataset
from zenml import get_step_context, log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PublishConfig, SamplingConfig
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.evaluation.publishing import publish_local, repo_name
from llm_engineering.settings import get_settings


@step
def publish_results(
    generations: Dataset,
    model: str,
    publish: PublishConfig,
    dataset: DatasetConfig,
    sampling: SamplingConfig,
) -> Annotated[str, col.RESULTS_REPO]:
    """Publish one model's generations to `<workspace>/<model>-results` (a local dataset repo)."""
    settings = get_settings()
    name = resolve_model(model, settings.MODEL_CACHE_DIR).name
    repo = repo_name(publish.workspace or settings.DATASET_HUGGINGFACE_WORKSPACE, name)
    info = {
        "model": model,
        "dataset": f"{dataset.source} (split {dataset.split}, revision {dataset.revision or 'default'})",
        "rows": len(generations),
        "sampling": sampling.model_dump(),
        "pipeline run": get_step_context().pipeline_run.name,
    }
    folder = publish_local(generations, settings.local_hub_dir, repo, dataset.split, info)
    log_metadata(metadata={"repo": repo, "location": str(folder.resolve())})
    return str(folder.resolve())
