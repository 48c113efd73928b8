"""`--export-settings` stores the settings as a ZenML secret; steps of a run config that lists it
read them from there; no secret value shows up in output, logs, artifacts or metadata.

Real ZenML local store (its SQL secrets store), real publish step, a Hub stub on 127.0.0.1.
"""

import json
import os
import subprocess
import sys

import pytest
from datasets import Dataset

from llm_engineering.evaluation import columns as col
from llm_engineering.run_config import EvaluationConfig

pytestmark = pytest.mark.slow  # two CLI processes and a pipeline run

JUDGE_KEY = "sk-judge-key-that-must-never-be-logged"


def _export(repo_root, **env):
    environment = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "HUGGINGFACE_ACCESS_TOKEN"}}
    environment.update(env)
    return subprocess.run([sys.executable, "tools/run.py", "--export-settings"], cwd=repo_root, env=environment,
                          capture_output=True, text=True, timeout=300)


def _files_containing(root, needles):
    hits = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            hits += [(str(path), needle) for needle in needles if needle.encode() in data]
    return hits


def test_steps_read_exported_settings_and_no_secret_value_is_stored_anywhere(repo_root, hub, monkeypatch):
    from pathlib import Path

    from zenml import save_artifact
    from zenml.client import Client

    from llm_engineering.settings import get_settings
    from pipelines.evaluating import publishing
    from steps.materializers import DatasetMaterializer
    from tests.support.hub_stub import TOKEN, USER

    first = _export(repo_root, HUGGINGFACE_ACCESS_TOKEN=TOKEN)
    assert first.returncode == 0, first.stderr[-2000:]
    # Exporting again replaces the secret's values with the current settings.
    second = _export(repo_root, HUGGINGFACE_ACCESS_TOKEN=TOKEN, OPENAI_API_KEY=JUDGE_KEY)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "HUGGINGFACE_ACCESS_TOKEN, OPENAI_API_KEY" in second.stdout  # names only
    # Where the values now lie: on a local install, the store's SQLite file, unencrypted (no secrets-store key).
    from zenml.config.global_config import GlobalConfiguration

    database = GlobalConfiguration().store_configuration.url.removeprefix("sqlite:///")
    assert f"ZenML keeps their values in the local SQLite database {database}, unencrypted" in second.stdout
    secret = Client().get_secret("settings", allow_partial_name_match=False)
    assert secret.secret_values == {"HUGGINGFACE_ACCESS_TOKEN": TOKEN, "OPENAI_API_KEY": JUDGE_KEY}
    for result in (first, second):
        assert TOKEN not in result.stdout + result.stderr and JUDGE_KEY not in result.stdout + result.stderr

    # The token is in the secret only: not in this process's environment, nor in cached settings.
    monkeypatch.delenv("HUGGINGFACE_ACCESS_TOKEN", raising=False)
    get_settings.cache_clear()
    rows = Dataset.from_dict({col.ID: ["a", "b"], col.INSTRUCTION: ["q1", "q2"], col.ANSWER: ["x", "y"],
                              col.MODEL_ID: ["org/secret-test-model"] * 2})
    results = save_artifact(rows, name="secret-test-answers", materializer=DatasetMaterializer)
    config = EvaluationConfig.model_validate({"publish": {"target": "hub"}})
    try:
        run = publishing.with_options(enable_cache=False, secrets=["settings"])(
            config=config, results_ids=[str(results.id)])
    finally:
        get_settings.cache_clear()
    run = Client().get_pipeline_run(run.id)
    step = run.steps["publish_results"]
    receipt = step.outputs[col.PUBLISH_RECEIPT][0].load()
    assert receipt.hub_error is None and receipt.repo == f"{USER}/secret-test-model-results"  # pushed with the token
    assert f"{USER}/secret-test-model-results" in hub.state.repos

    needles = [TOKEN, JUDGE_KEY]
    stored = json.dumps([
        run.run_metadata, step.run_metadata, receipt.model_dump(),
        [artifact.run_metadata for artifacts in step.outputs.values() for artifact in artifacts],
        step.config.model_dump(mode="json"), run.config.model_dump(mode="json"),
    ], default=str)
    assert not [n for n in needles if n in stored]
    artifact_store = Path(Client().active_stack.artifact_store.path)
    logs = [p for p in artifact_store.rglob("*") if p.is_file() and "logs" in p.parts]
    assert logs, "step logs are stored in the artifact store, and scanned below"
    assert not _files_containing(artifact_store, needles)
