"""The cloud configs compiled by ZenML against stand-in stacks: no cloud SDK, no credentials, no step run.

Registering a SageMaker or Vertex step operator needs no cloud, so the stacks of the session's store are real ZenML
stacks. Compiling a run needs the step operator's implementation, whose cloud SDK is not installed here: the
registered component is instantiated with its real flavor name, config and settings class, and ZenML's own compiler
decides which step keeps which step operator and settings. The stand-in also reports the real flavor's integration
requirements (the SageMaker SDK, google-cloud-aiplatform...), which ZenML's image builder installs in every image of
such a stack.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# flavor: (config, step operator name, the step operator's registration)
CASES = {
    "sagemaker": ("configs/evaluating_sagemaker.yaml", "sagemaker-gpu",
                  {"role": "arn:aws:iam::123456789012:role/zenml-sagemaker"}),
    "vertex": ("configs/evaluating_vertex.yaml", "vertex-gpu", {"project": "my-project", "region": "europe-west4"}),
}
MODELS = ["org/model-a", "org/model-b"]


def register_remote_stacks() -> dict[str, str]:
    """One stack per flavor in the active store (local orchestrator and artifact store plus the GPU step operator);
    returns {flavor: stack name}."""
    from zenml.client import Client

    client = Client()
    for flavor, (_, name, configuration) in CASES.items():
        if not client.list_stack_components(name=name):
            client.create_stack_component(name, flavor, "step_operator", configuration)
            client.create_stack(f"{flavor}-stack", components={
                "orchestrator": "default", "artifact_store": "default", "step_operator": name})
    return {flavor: f"{flavor}-stack" for flavor in CASES}


def ensure_settings_secret() -> None:
    """The `settings` secret the cloud configs list, with a workspace only (no token), unless one is there."""
    from zenml.client import Client

    if not Client().list_secrets(name="settings"):
        Client().create_secret("settings", {"DATASET_HUGGINGFACE_WORKSPACE": "remote-ws"})


def _flavor_class(flavor: str) -> Any:
    # The flavor modules import no cloud SDK; the step operator modules do.
    from zenml.integrations.aws.flavors.sagemaker_step_operator_flavor import SagemakerStepOperatorFlavor
    from zenml.integrations.gcp.flavors.vertex_step_operator_flavor import VertexStepOperatorFlavor

    return {"sagemaker": SagemakerStepOperatorFlavor, "vertex": VertexStepOperatorFlavor}[flavor]


def stand_in_stack(flavor: str, component_name: str) -> Any:
    """The active local stack plus the registered step operator, built without its cloud SDK."""
    from zenml.client import Client
    from zenml.enums import StackComponentType
    from zenml.integrations.utils import get_requirements_for_module
    from zenml.stack import Stack
    from zenml.step_operators import BaseStepOperator

    from llm_engineering.infrastructure.zenml_stack import _settings_classes

    model = Client().get_stack_component(StackComponentType.STEP_OPERATOR, component_name)
    settings_class = _settings_classes()[f"step_operator.{flavor}"]
    flavor_class = _flavor_class(flavor)
    integration_requirements = set(get_requirements_for_module(flavor_class.__module__))

    class StandIn(BaseStepOperator):
        @property
        def settings_class(self):
            return settings_class

        @property
        def requirements(self):  # the real component's: its integration's (its module would name this file)
            return integration_requirements

        def launch(self, *args, **kwargs):
            raise AssertionError("nothing is launched in a compile test")

    step_operator = StandIn(
        name=model.name, id=model.id, config=flavor_class().config_class(**model.configuration), flavor=flavor,
        type=StackComponentType.STEP_OPERATOR, user=None, created=model.created, updated=model.updated,
    )
    local = Client().active_stack
    return Stack.from_components_v2(id=uuid.uuid4(), name=f"{flavor}-compile", components={
        StackComponentType.ORCHESTRATOR: [local.orchestrator],
        StackComponentType.ARTIFACT_STORE: [local.artifact_store],
        StackComponentType.STEP_OPERATOR: [step_operator],
    })


@dataclass(frozen=True)
class CompiledConfig:
    """A cloud config as ZenML compiles it: the loaded run config, the snapshot and the stack it was compiled for."""

    run_config: Any
    snapshot: Any
    stack: Any


@functools.cache
def compile_remote_config(repo_root: Path, flavor: str) -> CompiledConfig:
    """The cloud config of `flavor`, with two models (two generation steps), compiled by ZenML's own compiler (once a
    session: the tests only read it)."""
    from zenml.config.compiler import Compiler
    from zenml.config.pipeline_run_configuration import PipelineRunConfiguration

    from llm_engineering.run_config import load_run_config
    from pipelines.evaluating import evaluating

    path, operator, _ = CASES[flavor]
    run_config = load_run_config(repo_root / path)
    pipeline = evaluating.with_options()
    pipeline.prepare(config=run_config.evaluation.model_copy(update={"models": MODELS}))
    stack = stand_in_stack(flavor, operator)
    snapshot = Compiler().compile(pipeline=pipeline, stack=stack,
                                  run_configuration=PipelineRunConfiguration(**run_config.zenml_options))
    return CompiledConfig(run_config=run_config, snapshot=snapshot, stack=stack)
