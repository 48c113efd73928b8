"""One token for every Hub read: a private dataset and a gated model on the Hub stand-in (127.0.0.1), both refusing
a request without the token, read by a whole CLI run with the token set as HUGGINGFACE_ACCESS_TOKEN; without it, a
clear error naming the setting before any work; the token in no artifact, report or log of the run.

The dataset holds prompts alone, under column names of its own (`qid`, `question`): the run judges its answers
without references, and the summary and the report card say what that left out. The gated model is the embedded
generator's own files as a model repository; it generates and judges (one engine, downloaded with the token by vLLM).
"""

import json

import pytest
import yaml

from llm_engineering.evaluation import columns as col
from tests.support.cli_output import reported_run
from tests.support.hub_stub import TOKEN, USER

pytestmark = [pytest.mark.slow, pytest.mark.own_engine]  # an engine of the gated model (a Hub id, not the folder)

MODEL = f"{USER}/gated-smollm2"
DATASET = f"{USER}/private-prompts"
PROMPTS = [{"qid": f"p{k}", "question": question} for k, question in enumerate(
    ["Explain what a KV cache is in one sentence.", "Name two uses of a vector database.",
     "What does LoRA change in a model?"])]


@pytest.fixture
def private_hub(hub, repo_root):
    from pathlib import Path

    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    folder = Path(resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path)
    hub.state.add_repo(MODEL, {f.name: f.read_bytes() for f in folder.iterdir() if f.is_file()}, gated=True)
    rows = "".join(json.dumps(row) + "\n" for row in PROMPTS).encode()
    hub.state.add_repo(DATASET, {"test.jsonl": rows, "README.md": b"---\nlicense: mit\n---\n"}, private=True)
    return hub


def _config(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"parameters": {
        "sampling": {"max_tokens": 32}, "judge": {"max_tokens": 256, "max_analysis_chars": 160},
        "pairwise": {"enabled": False}}}))
    return path


@pytest.mark.timeout(600)
def test_a_private_dataset_and_a_gated_model_are_read_with_the_token_and_the_token_is_stored_nowhere(
        run_cli, private_hub, tmp_path, monkeypatch):
    from zenml.client import Client

    from llm_engineering.settings import get_settings

    config = _config(tmp_path)
    args = ["evaluate", "--config", config, "--model", MODEL, "--dataset", DATASET, "--column", "instruction=question",
            "--column", "id=qid", "--judge", MODEL]

    # Without the token: each refusal is named with the setting, before any work (no pipeline run).
    runs_before = len(Client().list_pipeline_runs(size=1000).items)
    refused = run_cli(*args)
    assert refused.exit_code == 1 and f"dataset {DATASET} is not on the Hub" in refused.stderr, refused.output[-2000:]
    assert "for a private dataset set HUGGINGFACE_ACCESS_TOKEN (or HF_TOKEN)" in refused.stderr
    gated = run_cli("evaluate", "--config", config, "--model", MODEL, "--judge", "smollm2-135m", "--limit", "2")
    assert gated.exit_code == 1 and f"model {MODEL} is gated: HUGGINGFACE_ACCESS_TOKEN (or HF_TOKEN) is not set" \
        in gated.stderr, gated.output[-2000:]
    assert len(Client().list_pipeline_runs(size=1000).items) == runs_before
    downloads = [path for method, path in private_hub.state.calls if "/resolve/" in path]
    assert not downloads  # nothing read without the token

    # With the token: the whole run.
    monkeypatch.setenv("HUGGINGFACE_ACCESS_TOKEN", TOKEN)
    result = run_cli(*args)
    run, report = reported_run(result)
    assert f"/{MODEL}/resolve/main/model.safetensors" in {path for _, path in private_hub.state.calls}  # vLLM's download
    (model,) = report["models"]
    assert model["model_id"] == MODEL and model["scored"] == len(PROMPTS) and model["reference_rows"] == 0
    assert model["similarity_mean"] is None
    assert any(note.startswith(f"References: 0 of {len(PROMPTS)} answers' rows have a reference answer")
               for note in report["notes"]), report["notes"]
    assert any("too few for the checks that need one" in note and "mismatch tier alone" in note for note in report["notes"])
    card = report["judge_check"]
    assert card["right_answers"] == "answers" and card["tiers"] == [] and card["pairs"] == len(PROMPTS)
    assert sorted(item["id"] for item in report["items"]) == [row["qid"] for row in PROMPTS]
    assert "References: 0 of 3" in result.stdout  # the console says it too

    # The token appears nowhere the run wrote: its output, the ZenML store and artifacts, reports, logs, results.
    split = run.steps["load_test_split"].outputs[col.TEST_SPLIT][0].load()
    assert split[col.REFERENCE] == [None] * len(PROMPTS) and split[col.ID] == [row["qid"] for row in PROMPTS]
    settings = get_settings()
    from zenml.config.global_config import GlobalConfiguration

    places = [settings.OUTPUT_DIR, settings.CHECKPOINT_DIR, settings.JUDGE_CACHE_DIR,
              GlobalConfiguration().config_directory, Client().active_stack.artifact_store.path]
    hits = [str(path) for place in map(_path, places) for path in place.rglob("*")
            if path.is_file() and TOKEN.encode() in path.read_bytes()]
    assert TOKEN not in result.output and not hits, hits


def _path(place):
    from pathlib import Path

    return Path(str(place))
