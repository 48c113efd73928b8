"""Push results to the Hugging Face Hub as a dataset repo (`<workspace>/<model>-results`).

Uses `huggingface_hub` (whoami, create_repo, create_commit); honours `HF_ENDPOINT`. Every
failure becomes a `PublishError` naming the repo, the cause and the fix; the token is never
logged.
"""

from __future__ import annotations

import io
import logging
from typing import Optional

import httpx
from datasets import Dataset
from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError

from llm_engineering.infrastructure.publishing import data_file, dataset_card

logger = logging.getLogger(__name__)


class PublishError(RuntimeError):
    """A push that did not happen; results stay in ZenML and the local repo."""


_FIXES = {
    401: "the token is missing or invalid: set HUGGINGFACE_ACCESS_TOKEN to a write token",
    403: "the token may not write there: use a write token with access to the workspace",
    404: "the workspace or repo does not exist for this token: check DATASET_HUGGINGFACE_WORKSPACE",
}


def _explain(repo_id: str, endpoint: str, error: Exception) -> PublishError:
    status = getattr(getattr(error, "response", None), "status_code", None)
    if status is not None:
        cause = f"the Hub answered HTTP {status}"
        fix = _FIXES.get(status, "the Hub had a problem: try again later")
    else:
        cause = f"{endpoint} could not be reached ({type(error).__name__})"
        fix = "check the network or HF_ENDPOINT, then try again"
    return PublishError(
        f"Publishing to {repo_id} failed: {cause}; {fix}. Nothing is lost: the results are stored as "
        f"ZenML artifacts and in the local dataset repo; `python tools/run.py publish` pushes them "
        f"again."
    )


def load_published(repo_id: str, split: str, token: Optional[str]) -> Dataset:
    """Read results back from a Hub dataset repo (for scoring on another machine)."""
    from datasets import load_dataset

    try:
        return load_dataset(repo_id, split=split, token=token)
    except Exception as error:  # datasets wraps HTTP and file errors in many types
        raise PublishError(f"Cannot read published results {repo_id} (split {split}): "
                           f"{type(error).__name__}: {error}") from error


def hub_workspace(token: str, configured: Optional[str]) -> str:
    """The configured workspace, or the token owner's name from `whoami`."""
    if configured and configured != "local":
        return configured
    api = HfApi(token=token)
    try:
        return api.whoami()["name"]
    except (HfHubHTTPError, httpx.HTTPError, OSError) as error:
        raise _explain("<workspace>", api.endpoint, error) from error


def push_results(
    results: Dataset, repo_id: str, *, token: str, split: str, info: dict, private: bool = True
) -> str:
    """Create (if needed) the dataset repo and commit the results and their card; returns the repo URL."""
    api = HfApi(token=token)
    buffer = io.BytesIO()
    results.to_parquet(buffer)
    path = data_file(split, unique=False)
    card = dataset_card(repo_id, split, path, info)
    operations = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=buffer.getvalue()),
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=str(card).encode()),
    ]
    try:
        url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.create_commit(repo_id, operations, repo_type="dataset",
                          commit_message=f"Evaluation results: {len(results)} rows")
    except (HfHubHTTPError, httpx.HTTPError, OSError) as error:
        raise _explain(repo_id, api.endpoint, error) from error
    logger.info("Pushed %d rows to %s", len(results), url)
    return str(url)


def access_problem(repo_id: str, token: Optional[str], repo_type: str = "model") -> Optional[str]:
    """Why the Hub `repo_type` repo `repo_id` (a model, a dataset) cannot be read with `token` (gated, private or
    missing), in words that name the setting; None where it can, or where the Hub cannot be asked (offline: the
    reader then says what it finds)."""
    from huggingface_hub import constants
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    if constants.HF_HUB_OFFLINE:
        return None
    setting = "HUGGINGFACE_ACCESS_TOKEN (or HF_TOKEN)"
    try:
        HfApi().auth_check(repo_id, repo_type=repo_type, token=token)  # None: the login a download would use, if any
    except GatedRepoError:
        missing = "the token set has not been granted access to it" if token else f"{setting} is not set"
        return (f"{repo_type} {repo_id} is gated: {missing}; request access on its Hub page, then set {setting} to a "
                f"token of that account")
    except RepositoryNotFoundError:
        return (f"{repo_type} {repo_id} is not on the Hub ({constants.ENDPOINT}) or is private: check the {repo_type} id"
                + ("; the token set (HUGGINGFACE_ACCESS_TOKEN or HF_TOKEN) may lack access to it" if token else
                   f", or for a private {repo_type} set {setting} to a token with access"))
    except (HfHubHTTPError, httpx.HTTPError, OSError) as error:  # the Hub not reachable: nothing to say yet
        logger.info("Could not check access to the Hub %s %s (%s)", repo_type, repo_id, type(error).__name__)
    return None
