"""Where the generation steps run on the ZenML stack, and checks of that against the active stack and secrets.

ZenML itself only finds a missing step operator when the run starts, ignores settings for a
step operator flavor the stack lacks (the GPU instance type would be dropped with a warning),
and accepts misspelt settings fields. These checks turn each case into an error that names
the component or setting and the command that adds it.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llm_engineering.evaluation.config_base import ConfigError

DOCS = "docs/remote-stacks.md"
REGISTER_HINTS = {
    "sagemaker": "zenml integration install aws s3 -y && zenml step-operator register {name} --flavor=sagemaker "
    "--role=<execution role ARN>",
    "vertex": "zenml integration install gcp -y && zenml step-operator register {name} --flavor=vertex "
    "--project=<project> --region=<region>",
}


# ZenML settings keys a generation step may carry; a flavor-keyed step operator key
# (`step_operator.sagemaker`) applies only when the stack's step operator has that flavor.
GENERATION_SETTINGS_KEYS = {"docker", "resources"}
STEP_OPERATOR_SETTINGS_PREFIX = "step_operator."


class GenerationStepConfig(BaseModel):
    """Where every generation step runs: a step operator of the active stack and its settings.

    Applied to each model's generation step (`generate_answers`, `generate_answers_2`, ...);
    every other step stays on the orchestrator. Empty: generation runs on the orchestrator too.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    step_operator: Optional[str] = Field(
        None, description="Name of a step operator in the active stack, e.g. 'sagemaker-gpu'."
    )
    settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="ZenML settings of the generation steps only: 'step_operator.<flavor>' "
        "(instance type, accelerators, disk), 'docker' (the GPU vllm requirement), 'resources'.",
    )
    environment: dict[str, str] = Field(
        default_factory=dict, description="Environment variables of the generation steps (never secrets)."
    )

    @field_validator("settings")
    @classmethod
    def _known_settings_keys(cls, settings: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for key in settings:
            flavor = key.removeprefix(STEP_OPERATOR_SETTINGS_PREFIX)
            if key not in GENERATION_SETTINGS_KEYS and not (key.startswith(STEP_OPERATOR_SETTINGS_PREFIX) and flavor):
                raise ValueError(
                    f"unknown settings key {key!r}; use 'step_operator.<flavor>' (e.g. step_operator.sagemaker, "
                    f"step_operator.vertex), 'docker' or 'resources'"
                )
        return settings

    @property
    def step_operator_flavors(self) -> list[str]:
        """Flavors named by `step_operator.<flavor>` settings keys."""
        prefix = STEP_OPERATOR_SETTINGS_PREFIX
        return [key.removeprefix(prefix) for key in self.settings if key.startswith(prefix)]

    def step_options(self) -> dict[str, Any]:
        """Keyword arguments for `generate_answers.with_options(...)`; empty when nothing is set."""
        options = {"step_operator": self.step_operator, "settings": self.settings, "environment": self.environment}
        return {key: value for key, value in options.items() if value}


def _settings_classes() -> dict[str, type[BaseModel]]:
    from zenml.config import DockerSettings, ResourceSettings
    from zenml.integrations.aws.flavors.sagemaker_step_operator_flavor import SagemakerStepOperatorSettings
    from zenml.integrations.gcp.flavors.vertex_step_operator_flavor import VertexStepOperatorSettings

    return {
        "docker": DockerSettings,
        "resources": ResourceSettings,
        f"{STEP_OPERATOR_SETTINGS_PREFIX}sagemaker": SagemakerStepOperatorSettings,
        f"{STEP_OPERATOR_SETTINGS_PREFIX}vertex": VertexStepOperatorSettings,
    }


def check_settings_fields(settings: dict[str, dict[str, Any]]) -> None:
    """Validate known settings blocks field by field (ZenML's settings accept unknown fields)."""
    classes = _settings_classes()
    for key, values in settings.items():
        cls = classes.get(key)
        if cls is None:
            continue  # another step operator flavor: ZenML validates it when it compiles the run
        unknown = sorted(set(values) - set(cls.model_fields))
        if unknown:
            raise ConfigError(
                f"parameters.generation_step.settings.{key}: unknown field(s) {unknown}; "
                f"{cls.__name__} has {sorted(cls.model_fields)}."
            )
        try:
            cls.model_validate(values)
        except ValidationError as error:
            raise ConfigError(f"parameters.generation_step.settings.{key}: {error}") from None


def orchestrator_is_local() -> bool:
    """The active stack runs its steps in this process (the local orchestrator), so on this machine."""
    from zenml.client import Client
    from zenml.enums import StackComponentType

    orchestrators = Client().active_stack_model.components.get(StackComponentType.ORCHESTRATOR, [])
    return bool(orchestrators) and orchestrators[0].flavor_name == "local"


def check_generation_step(step: GenerationStepConfig) -> None:
    """The step operator named by the config exists in the active stack, with the flavor its settings are for."""
    from zenml.client import Client
    from zenml.enums import StackComponentType

    check_settings_fields(step.settings)
    flavors = step.step_operator_flavors
    if step.step_operator is None:
        if flavors:
            raise ConfigError(
                f"parameters.generation_step.settings has step_operator.{flavors[0]} settings but "
                f"generation_step.step_operator names no step operator: set it to the name of the "
                f"stack's step operator (see {DOCS})."
            )
        return
    stack = Client().active_stack_model
    operators = stack.components.get(StackComponentType.STEP_OPERATOR, [])
    found = next((c for c in operators if c.name == step.step_operator), None)
    if found is None:
        flavor = flavors[0] if flavors else "<flavor>"
        register = REGISTER_HINTS.get(flavor, "zenml step-operator register {name} --flavor=" + flavor).format(
            name=step.step_operator
        )
        has = f"its step operator is '{operators[0].name}'" if operators else "it has no step operator"
        raise ConfigError(
            f"The config runs generation on step operator '{step.step_operator}', but the active stack "
            f"'{stack.name}' lacks it ({has}). Register it and add it to a stack with a remote artifact "
            f"store and container registry:\n  {register}\n  zenml stack update {stack.name} "
            f"--step_operator {step.step_operator}   (or `zenml stack set <stack>` to switch stacks; "
            f"see {DOCS}), or run with configs/evaluating.yaml to generate locally."
        )
    wrong = [f for f in flavors if f != found.flavor_name]
    if wrong:
        raise ConfigError(
            f"parameters.generation_step.settings has step_operator.{wrong[0]} settings, but step operator "
            f"'{found.name}' is of flavor '{found.flavor_name}', so ZenML would ignore them: rename the key to "
            f"step_operator.{found.flavor_name} and use that flavor's fields."
        )


def check_secrets(secret_names: Iterable[str]) -> None:
    """Every secret the run config lists exists in the ZenML store the run will use."""
    from zenml.client import Client

    for name in secret_names:
        try:
            Client().get_secret(name, allow_partial_name_match=False, allow_partial_id_match=False)
        except KeyError:
            raise ConfigError(
                f"The config lists the ZenML secret '{name}' (`secrets:`), but the ZenML store has no "
                f"secret of that name: create it from your .env with `python tools/run.py --export-settings`, "
                f"or remove it from the config to use .env and the environment only."
            ) from None


def where_secrets_are_kept() -> str:
    """Where the ZenML store this process uses keeps a secret's values, read from its configuration (no connection):
    a local store's database file and whether its secrets are encrypted there, or a server's secrets store."""
    from zenml.config.global_config import GlobalConfiguration
    from zenml.enums import SecretsStoreType, StoreType

    from llm_engineering.evaluation.urls import shown_url

    store = GlobalConfiguration().store_configuration
    if store.type == StoreType.REST:
        return (f"on the ZenML server {shown_url(store.url)}, in its secrets store (the server's configuration decides "
                f"where that is and how it is encrypted)")
    secrets = getattr(store, "secrets_store", None)
    if secrets is not None and secrets.type not in (SecretsStoreType.SQL, SecretsStoreType.NONE):
        return f"in the {secrets.type.value} secrets store the ZenML store is configured with"
    database = (f"the local SQLite database {store.url.removeprefix('sqlite:///')}" if store.url.startswith("sqlite:")
                else f"the ZenML database {shown_url(store.url)}")
    if getattr(secrets, "encryption_key", None) is not None:
        return f"in {database}, encrypted with the secrets store's key"
    return (f"in {database}, unencrypted: whoever can read that database reads them (ZenML encrypts them only with a "
            f"secrets-store key, ZENML_SECRETS_STORE_ENCRYPTION_KEY, or on a ZenML server with its own secrets store)")
