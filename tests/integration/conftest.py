"""The first small run, made once per session and read by the pipeline tests (each reads only its own run's
artifacts); the cloud stacks, the active stack and the `settings` secret of the remote-stack tests."""

from pathlib import Path

import pytest
from datasets import load_dataset

from llm_engineering.evaluation import columns as col
from tests.support.remote_stacks import ensure_settings_secret, register_remote_stacks
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


@pytest.fixture(scope="module")
def remote_stacks():
    """One stack per cloud flavor (local orchestrator and artifact store plus the GPU step operator):
    {flavor: stack name} (tests/support/remote_stacks.py)."""
    return register_remote_stacks()


@pytest.fixture
def active_stack(remote_stacks, monkeypatch):
    """Activate a stack for one test, in this process and in the CLI runs it starts.

    Through ZENML_ACTIVE_STACK_ID rather than `activate_stack`: the CLI creates the repository's
    `.zen` on its first run, and from then on a subprocess reads the active stack from there, not
    from the global configuration `activate_stack` wrote to while no `.zen` existed.
    """
    from zenml.client import Client

    def activate(name):
        monkeypatch.setenv("ZENML_ACTIVE_STACK_ID", str(Client().get_stack(name).id))

    return activate


@pytest.fixture
def settings_secret():
    """The `settings` secret, there for this test whatever an earlier one deleted."""
    ensure_settings_secret()
