"""The first small run, made once per session and read by the pipeline tests (each reads only its own run's
artifacts)."""

from pathlib import Path

import pytest
from datasets import load_dataset

from llm_engineering.evaluation import columns as col
from tests.support.small_run import FIRST_RUN_PUBLISHED, small_config


@pytest.fixture(scope="session")
def first_run():
    from zenml.client import Client

    from pipelines.evaluating import evaluating

    run = Client().get_pipeline_run(evaluating.with_options(enable_cache=False)(config=small_config(checks=True)).id)
    for name, step in run.steps.items():
        if name.startswith("publish_results"):
            receipt = step.outputs[col.PUBLISH_RECEIPT][0].load()
            FIRST_RUN_PUBLISHED[receipt.stage] = (load_dataset(receipt.local_path, split="test"),
                                                  (Path(receipt.local_path) / "README.md").read_text())
    return run
