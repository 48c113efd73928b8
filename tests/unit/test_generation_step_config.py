import pytest

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.infrastructure.zenml_stack import GenerationStepConfig
from llm_engineering.run_config import load_run_config, parse_evaluation
from llm_engineering.settings import Settings, exportable_values


def test_default_generation_step_changes_nothing():
    assert GenerationStepConfig().step_options() == {}


def test_generation_step_options_carry_operator_settings_and_environment():
    step = GenerationStepConfig(step_operator="gpu", settings={"step_operator.vertex": {"accelerator_count": 1}},
                                environment={"A": "1"})
    assert step.step_options() == {"step_operator": "gpu", "settings": {"step_operator.vertex": {"accelerator_count": 1}},
                                   "environment": {"A": "1"}}
    assert step.step_operator_flavors == ["vertex"]


@pytest.mark.parametrize("key", ["step_operator", "step_operator.", "orchestrator.sagemaker", "dockr"])
def test_unknown_generation_settings_key_names_the_allowed_ones(key):
    with pytest.raises(ConfigError, match=r"generation_step\.settings: .*use 'step_operator.<flavor>'"):
        parse_evaluation({"generation_step": {"settings": {key: {}}}})


@pytest.mark.parametrize("name, flavor", [("evaluating_sagemaker.yaml", "sagemaker"), ("evaluating_vertex.yaml", "vertex")])
def test_remote_configs_put_the_gpu_and_vllm_on_the_generation_step_only(repo_root, name, flavor):
    run_config = load_run_config(repo_root / "configs" / name)
    step = run_config.evaluation.generation_step
    assert step.step_operator and step.step_operator_flavors == [flavor]
    # Both images' requirements are exported from pyproject.toml (no hand-written list); the generation image's
    # command adds the `gpu` extra, the CUDA vLLM (tests/unit/test_image_requirements.py).
    generation, pipeline = step.settings["docker"], run_config.zenml_options["settings"]["docker"]
    assert generation["pyproject_path"] == pipeline["pyproject_path"] == "pyproject.toml"
    command = pipeline["pyproject_export_command"]
    assert generation["pyproject_export_command"] == command[:3] + ["--extra", "gpu"] + command[3:]
    assert "requirements" not in generation and "requirements" not in pipeline
    assert run_config.zenml_options["secrets"] == ["settings"]
    assert "steps" not in run_config.zenml_options  # ZenML's per-step key would reach one model's step only


def test_exported_values_hold_what_was_set_with_secrets_unwrapped_and_no_local_paths(tmp_path):
    settings = Settings(HUGGINGFACE_ACCESS_TOKEN="hf_x", OUTPUT_DIR=tmp_path, OPIK_WORKSPACE="ws", _env_file=None)
    assert exportable_values(settings) == {"HUGGINGFACE_ACCESS_TOKEN": "hf_x", "OPIK_WORKSPACE": "ws"}
