"""A run config extends a base file (`base:`): merged under it, the config's own values winning."""

import pytest

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.run_config import load_run_config
from llm_engineering.run_config_file import merged


def _write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_mappings_merge_at_every_depth_and_other_values_replace_the_base():
    base = {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": "base"}
    assert merged(base, {"a": {"c": [3], "d": {"g": 2}}, "f": None}) == \
        {"a": {"b": 1, "c": [3], "d": {"e": 1, "g": 2}}, "f": None}
    assert base == {"a": {"b": 1, "c": [1, 2], "d": {"e": 1}}, "f": "base"}  # the base is not changed


def test_a_config_extends_a_base_relative_to_itself_through_a_chain_of_bases(tmp_path):
    _write(tmp_path, "shared/root.yaml", "enable_cache: false\nsecrets: [settings]\n"
                                        "parameters:\n  dataset: {limit: 5}\n  sampling: {temperature: 0.5}\n")
    _write(tmp_path, "shared/remote.yaml", "base: root.yaml\nparameters:\n  sampling: {max_tokens: 64}\n")
    child = _write(tmp_path, "configs/child.yaml", "base: ../shared/remote.yaml\nenable_cache: true\n"
                                                   "parameters:\n  models: [org/a]\n  sampling: {temperature: 0.2}\n")
    config = load_run_config(child)
    assert config.evaluation.models == ["org/a"]
    assert config.evaluation.dataset.limit == 5  # from the root base
    assert (config.evaluation.sampling.temperature, config.evaluation.sampling.max_tokens) == (0.2, 64)
    assert config.zenml_options == {"enable_cache": True, "secrets": ["settings"]}  # no `base` handed to ZenML


@pytest.mark.parametrize("files, message", [
    ({"run.yaml": "base: missing.yaml\n"}, "its base 'missing.yaml' is not a file (looked for"),
    ({"run.yaml": "base: run.yaml\n"}, "a config cannot extend itself: remove one of these `base` keys"),
    ({"run.yaml": "base: b.yaml\n", "b.yaml": "base: run.yaml\n"}, "leads back to a file that extends it"),
    ({"run.yaml": "base: [b.yaml]\n"}, "`base` names the run config file it extends, a path relative to"),
    ({"run.yaml": "base: b.yaml\n", "b.yaml": "stepz: {}\n"}, "Unknown top-level key(s) ['stepz'] in"),
    ({"run.yaml": "base: b.yaml\n", "b.yaml": "- a\n"}, "b.yaml must hold a mapping at the top level"),
])
def test_a_bad_base_stops_with_the_file_and_the_fix(tmp_path, files, message):
    for name, text in files.items():
        _write(tmp_path, name, text)
    with pytest.raises(ConfigError) as error:
        load_run_config(tmp_path / "run.yaml")
    assert message in str(error.value)


def test_an_unknown_key_in_a_base_names_the_base_file(tmp_path):
    _write(tmp_path, "b.yaml", "stepz: {}\n")
    _write(tmp_path, "run.yaml", "base: b.yaml\n")
    with pytest.raises(ConfigError, match=r"in .*b\.yaml; allowed: \[.*'base'"):
        load_run_config(tmp_path / "run.yaml")


@pytest.mark.parametrize("name", ["evaluating_sagemaker.yaml", "evaluating_vertex.yaml"])
def test_the_cloud_configs_hold_only_their_step_operator_beside_the_shared_base(repo_root, name):
    import yaml

    own = yaml.safe_load((repo_root / "configs" / name).read_text())
    assert own["base"] == "evaluating_remote.yaml" and set(own) == {"base", "parameters"}
    assert set(own["parameters"]) == {"generation_step"}
    assert set(own["parameters"]["generation_step"]) == {"step_operator", "settings"}
    assert [key for key in own["parameters"]["generation_step"]["settings"] if not key.startswith("step_operator.")] == []
