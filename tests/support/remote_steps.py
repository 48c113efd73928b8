"""A pipeline whose first step runs on a step operator (remotely) and whose second reads its artifact back on the
orchestrator: the test of the `clean_env` step operator (tests/support/clean_env_step_operator.py)."""

from __future__ import annotations

import sys
from typing import Annotated

from datasets import Dataset
from zenml import log_metadata, pipeline, step

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import DatasetConfig, PromptConfig
from llm_engineering.settings import get_settings
from steps.evaluating import load_test_split
from steps.materializers import DatasetMaterializer


@step(enable_cache=False, output_materializers=DatasetMaterializer)
def remote_test_split(dataset: DatasetConfig) -> Annotated[Dataset, col.TEST_SPLIT]:
    """The project's `load_test_split`, plus what the environment that ran it was: its prefix, and the workspace its
    settings read (from the `settings` secret, where ZenML sets it)."""
    log_metadata(metadata={"python_prefix": sys.prefix, "workspace": get_settings().DATASET_HUGGINGFACE_WORKSPACE or ""})
    return load_test_split.entrypoint(dataset=dataset, prompt=PromptConfig())


@step(enable_cache=False)
def row_ids(split: Dataset) -> Annotated[list[str], "row_ids"]:
    """The ids of the rows that arrived, read back from the artifact store."""
    return list(split[col.ID])


@pipeline(enable_cache=False)
def remote_split_pipeline(dataset: DatasetConfig) -> None:
    row_ids(remote_test_split(dataset))
