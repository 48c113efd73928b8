import json

import pytest
from datasets import Dataset, load_dataset

from llm_engineering.evaluation.models import ModelError, resolve_model
from llm_engineering.evaluation.publishing import publish_local, repo_name


def test_local_folder_and_hub_ids_resolve(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    local = resolve_model(str(folder), tmp_path / "cache")
    assert (local.path, local.name) == (str(folder.resolve()), "my-model")
    hub = resolve_model("mlabonne/TwinLlama-3.1-8B", tmp_path / "cache")
    assert (hub.path, hub.name) == ("mlabonne/TwinLlama-3.1-8B", "TwinLlama-3.1-8B")


@pytest.mark.parametrize("name, message", [("not a model", "Unknown model"), ("smollm", "Unknown model")])
def test_unknown_model_names_list_what_is_accepted(tmp_path, name, message):
    with pytest.raises(ModelError, match=message) as error:
        resolve_model(name, tmp_path)
    assert "smollm2-135m" in str(error.value)


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(ModelError, match="no config.json"):
        resolve_model(str(tmp_path), tmp_path / "cache")


def test_repo_name_is_hub_safe():
    assert repo_name("local", "SmolLM2-135M-Instruct") == "local/SmolLM2-135M-Instruct-results"
    assert repo_name("me", "my model/v2") == "me/my-model-v2-results"


def test_published_repo_loads_back_with_datasets_and_has_a_card(tmp_path):
    rows = Dataset.from_dict({"id": ["a", "b"], "answer": ["x", "y"]})
    folder = publish_local(rows, tmp_path / "hub", "ws/m-results", "test", {"model": "m", "pipeline run": "r1"})
    assert folder == tmp_path / "hub" / "ws" / "m-results"
    loaded = load_dataset(str(folder), split="test")
    assert loaded.to_list() == rows.to_list()
    card = (folder / "README.md").read_text()
    assert "**model**: m" in card and "r1" in card
    # Publishing again replaces the repo content instead of adding a second data file.
    publish_local(rows.select([0]), tmp_path / "hub", "ws/m-results", "test", {})
    assert len(load_dataset(str(folder), split="test")) == 1
