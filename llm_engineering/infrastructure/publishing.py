"""Publish results as a dataset repository: `<workspace>/<model>-results`.

Always to a local folder laid out like a Hub dataset repo (parquet data files plus a README
dataset card, loadable with `datasets.load_dataset(folder)`); to the Hub as well when asked.
The original pushes answers after generation and again, with verdicts, after scoring. The card's facts come written
(`report.results_card`): this module formats what it is given.
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from datasets import Dataset
from filelock import FileLock
from huggingface_hub import DatasetCard, DatasetCardData

from llm_engineering.evaluation.disk import naming_a_full_disk

logger = logging.getLogger(__name__)


def repo_name(workspace: str, model_name: str) -> str:
    """`<workspace>/<model>-results`, with characters the Hub rejects replaced."""
    safe = re.sub(r"[^\w.-]+", "-", model_name).strip("-.")
    return f"{workspace}/{safe}-results"


def data_file(split: str, unique: bool) -> str:
    # Locally a fresh name per publish: `datasets` caches a local repo by its card's config and
    # would serve the previous rows after a re-publish. On the Hub each commit is a new revision.
    stamp = f"-{uuid.uuid4().hex[:8]}" if unique else ""
    return f"data/{split}{stamp}-00000-of-00001.parquet"


def dataset_card(repo: str, split: str, data_path: str, info: dict[str, Any]) -> DatasetCard:
    """A dataset card saying what produced the results: the facts `info` gives (model, data, sampling, judge, scores,
    run: `report.results_card`), as they are, one a line; a fact whose value is None is left out."""
    data = DatasetCardData(
        pretty_name=repo,
        tags=["llm-evaluation", "generated-answers"],
        configs=[{"config_name": "default", "data_files": [{"split": split, "path": data_path}]}],
    )
    details = "\n".join(f"- **{key}**: {value}" for key, value in info.items() if value is not None)
    return DatasetCard(
        f"---\n{data.to_yaml()}\n---\n\n# {repo}\n\n"
        f"Results of the LLM evaluation pipeline.\n\n{details}\n"
    )


def publish_local(
    results: Dataset, hub_dir: Path, repo: str, *, split: str, info: dict[str, Any]
) -> Path:
    """Write `results` and its card to `<hub_dir>/<repo>`, replacing the folder atomically."""
    target = Path(hub_dir) / repo
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    full_disk = naming_a_full_disk(str(target.parent), f"publish {repo}",
                                   "(or set OUTPUT_DIR to another disk) and run `python tools/run.py publish`; the "
                                   "results are stored as ZenML artifacts, and the repo as it was is kept.")
    try:
        with full_disk:
            (staging / "data").mkdir()
            path = data_file(split, unique=True)
            results.to_parquet(str(staging / path))
            dataset_card(repo, split, path, info).save(staging / "README.md")
            # Two runs publishing to one repo at once: one swap at a time, so neither removes the other's new folder.
            with FileLock(target.parent / f".{target.name}.lock"):
                if target.exists():
                    shutil.rmtree(target)
                staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    logger.info("Published %d rows to %s", len(results), target)
    return target
