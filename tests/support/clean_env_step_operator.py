"""A step operator for tests: ZenML's own step entrypoint command, run in a fresh environment built like an image.

A cloud step operator starts a container of the step's image with the command and environment ZenML hands it. This
one starts the same command (`python -m zenml.entrypoints.entrypoint ...`) with the fresh environment's python, in a
folder holding ZenML's code archive of the project (an image's /app), with a container's environment: no variable of
the test process, only what ZenML hands the step operator (the store, the stack, the step's own environment). What
remains remote runs as it would in the cloud: the code comes from the archive, the step reads the `settings` secret's
values as environment variables (ZenML's step runner sets them), and the output goes to the stack's artifact store.

Registered as the custom flavor `clean_env` (its source: this module, importable from the code archive too).
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Type, cast

from zenml.step_operators import BaseStepOperator, BaseStepOperatorConfig, BaseStepOperatorFlavor

from tests.support.image_envs import container_environment

logger = logging.getLogger(__name__)

FLAVOR = "clean_env"
SITECUSTOMIZE = Path(__file__).resolve().parent / "container_app"  # /app is the code's folder (its docstring)
LAUNCH_TIMEOUT = 600


class CleanEnvStepOperatorConfig(BaseStepOperatorConfig):
    """Where the step runs: the fresh environment's python, the code's folder, the container's home."""

    python: str
    code: str
    home: str


class CleanEnvStepOperator(BaseStepOperator):
    """Runs each step it is given in a fresh environment, waiting for it to end (ZenML's `launch`)."""

    @property
    def config(self) -> CleanEnvStepOperatorConfig:
        return cast(CleanEnvStepOperatorConfig, self._config)

    def launch(self, info: Any, entrypoint_command: List[str], environment: Dict[str, str]) -> None:
        if entrypoint_command[0] != "python":
            raise RuntimeError(f"ZenML's step command starts with {entrypoint_command[0]!r}, not python: "
                               f"{entrypoint_command}")
        command = [self.config.python, *entrypoint_command[1:]]
        env = container_environment(Path(self.config.home), **environment, PYTHONPATH=str(SITECUSTOMIZE),
                                    LLM_EVAL_APP_DIR=self.config.code)
        logger.info("Running step %s with %s", info.pipeline_step_name, self.config.python)
        result = subprocess.run(command, cwd=self.config.code, env=env, capture_output=True, text=True,
                                timeout=LAUNCH_TIMEOUT)
        Path(self.config.home, f"{info.pipeline_step_name}.log").write_text(result.stdout + result.stderr)
        if result.returncode:
            raise RuntimeError(f"step {info.pipeline_step_name} failed in {self.config.python} "
                               f"(exit {result.returncode}):\n{result.stderr[-4000:]}")


class CleanEnvStepOperatorFlavor(BaseStepOperatorFlavor):
    @property
    def name(self) -> str:
        return FLAVOR

    @property
    def config_class(self) -> Type[CleanEnvStepOperatorConfig]:
        return CleanEnvStepOperatorConfig

    @property
    def implementation_class(self) -> Type[CleanEnvStepOperator]:
        return CleanEnvStepOperator


def register_clean_env_stack(name: str, python: Path, code: Path, home: Path) -> str:
    """A stack of the active store: the default orchestrator and artifact store, and a `clean_env` step operator
    `name` that runs steps with `python` in `code`; returns the stack's name (made once per session)."""
    from zenml.client import Client
    from zenml.enums import StackComponentType

    client = Client()
    if not client.list_flavors(name=FLAVOR, type=StackComponentType.STEP_OPERATOR).items:
        client.create_flavor(source=f"{__name__}.{CleanEnvStepOperatorFlavor.__name__}",
                             component_type=StackComponentType.STEP_OPERATOR)
    configuration = {"python": str(python), "code": str(code), "home": str(home)}
    if client.list_stack_components(name=name, type=StackComponentType.STEP_OPERATOR).items:
        client.update_stack_component(name, StackComponentType.STEP_OPERATOR, configuration=configuration)
    else:
        client.create_stack_component(name, FLAVOR, StackComponentType.STEP_OPERATOR, configuration)
        client.create_stack(f"{name}-stack", components={
            StackComponentType.ORCHESTRATOR: "default", StackComponentType.ARTIFACT_STORE: "default",
            StackComponentType.STEP_OPERATOR: name})
    return f"{name}-stack"
