import logging
from datetime import datetime, timezone
from typing import Annotated, Optional

from datasets import Dataset
from zenml import get_step_context, log_metadata, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PublishConfig, SamplingConfig
from llm_engineering.evaluation.models import short_name
from llm_engineering.evaluation.report.results_card import score_facts, scores_of, trust_facts
from llm_engineering.evaluation.stored.pairwise import PairwiseReport
from llm_engineering.evaluation.stored.publishing import PublishReceipt
from llm_engineering.evaluation.stored.summary import EvaluationSummary
from llm_engineering.evaluation.stored.trust import TrustChecks
from llm_engineering.infrastructure.hub import PublishError, hub_workspace, push_results
from llm_engineering.infrastructure.publishing import publish_local, repo_name
from llm_engineering.settings import get_settings

logger = logging.getLogger(__name__)


# Never cached: a publish writes outside the artifact store, and a cached receipt would replay a write made elsewhere
# (another checkout's OUTPUT_DIR, a folder since deleted, an earlier push or its failure) instead of making this one.
@step(enable_cache=False)
def publish_results(
    results: Dataset,
    *,
    publish: PublishConfig,
    dataset: DatasetConfig,
    sampling: Optional[SamplingConfig] = None,
    checks: Optional[TrustChecks] = None,
    pairwise: Optional[PairwiseReport] = None,
    summary: Optional[EvaluationSummary] = None,
) -> Annotated[PublishReceipt, col.PUBLISH_RECEIPT]:
    """Publish one model's answers (or answers with verdicts) to `<workspace>/<model>-results`.

    Always to the local dataset repo; to the Hub too with `target: hub`. A failed push is
    recorded on the receipt and logged, never raised: the results are stored already, and
    `--publish-only` pushes them later. The card's scores are the run's `summary`'s for this model (corrected by human
    labels where the run has them), the figures its report gives.
    """
    settings = get_settings()
    model_id = results[0][col.MODEL_ID]
    stage = "evaluations" if col.JUDGE_MODEL in results.column_names else "generations"
    scores = scores_of(summary, model_id) if stage == "evaluations" else None
    info = {
        "model": model_id,
        "dataset": f"{dataset.source} (split {dataset.split}, revision {dataset.revision or 'default'})",
        "sampling": sampling.model_dump() if sampling else None,
        "pipeline run": f"{get_step_context().pipeline_run.name} ({get_step_context().pipeline_run.id})",
        "date": datetime.now(timezone.utc).date().isoformat(),
        **trust_facts(model_id, checks, pairwise),
        "rows": len(results),
        **(score_facts(scores, results[0][col.JUDGE_MODEL]) if scores else {}),
    }
    local_repo = repo_name(publish.workspace or settings.DATASET_HUGGINGFACE_WORKSPACE, short_name(model_id))
    folder = publish_local(results, settings.local_hub_dir, local_repo, split=dataset.split, info=info)
    receipt = PublishReceipt(repo=local_repo, stage=stage, rows=len(results), local_path=str(folder.resolve()))
    if publish.target == "hub":
        try:
            token = settings.hub_token
            if not token:
                raise PublishError("HUGGINGFACE_ACCESS_TOKEN is not set: add a write token to .env or the environment.")
            receipt.repo = repo_name(hub_workspace(token, publish.workspace or settings.DATASET_HUGGINGFACE_WORKSPACE),
                                     short_name(model_id))
            receipt.hub_url = push_results(results, receipt.repo, token=token, split=dataset.split,
                                           info={**info, "repo": receipt.repo}, private=publish.private)
        except PublishError as error:
            receipt.hub_error = str(error)
            logger.error("%s", error)
    log_metadata(metadata=receipt.model_dump(exclude_none=True))
    return receipt
