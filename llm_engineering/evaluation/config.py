"""Typed run configuration: one pydantic model per component, validated at the edge.

A run config is a ZenML-style YAML file: the evaluation itself lives under `parameters`
(validated here with `extra="forbid"`, because ZenML silently ignores unknown keys), and
ZenML's own keys (`settings`, `steps`, `enable_cache`, `run_name`) are passed through to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

ZENML_KEYS = {"settings", "steps", "enable_cache", "run_name", "extra", "model", "tags", "secrets", "environment"}
TOP_LEVEL_KEYS = ZENML_KEYS | {"parameters"}


class ConfigError(ValueError):
    """A run configuration a user must fix; the message says what and how."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetConfig(_Strict):
    """Where the test split comes from and which rows to evaluate."""

    source: str = Field(
        "embedded",
        description="'embedded', a Hugging Face dataset id, or a local path (json, jsonl, parquet, "
        "csv, or a save_to_disk / dataset repo folder).",
    )
    split: str = "test"
    limit: Optional[PositiveInt] = Field(None, description="Evaluate only the first N rows.")
    dummy: bool = Field(False, description="Evaluate only 10 rows, as the original's dummy mode.")
    revision: Optional[str] = None

    @property
    def row_limit(self) -> Optional[int]:
        limits = [n for n in (self.limit, 10 if self.dummy else None) if n]
        return min(limits) if limits else None


class PromptConfig(_Strict):
    """How an instruction becomes the text the model sees."""

    template: Literal["alpaca", "chat"] = "alpaca"
    system_prompt: Optional[str] = Field(None, description="Only used with the chat template.")


class SamplingConfig(_Strict):
    """vLLM sampling parameters for answer generation (the original's defaults)."""

    temperature: float = Field(0.8, ge=0.0, le=5.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    min_p: float = Field(0.05, ge=0.0, le=1.0)
    max_tokens: PositiveInt = 256
    seed: Optional[int] = 42


class RayConfig(_Strict):
    """Ray Data LLM settings for `engine.backend: ray`: where the cluster is and how replicas are laid out.

    Each replica is one vLLM engine built from the rest of `engine` (dtype, max_model_len,
    tensor_parallel_size...); the replicas are the data parallelism.
    """

    address: Optional[str] = Field(
        None, description="An existing cluster, e.g. ray://head:10001 or auto. None: RAY_ADDRESS if set, "
        "else a local cluster on 127.0.0.1 that the step starts and shuts down.",
    )
    replicas: Union[PositiveInt, tuple[PositiveInt, PositiveInt]] = Field(
        1, description="Engine replicas: a fixed number, or [min, max] for an autoscaling pool."
    )
    batch_size: PositiveInt = Field(16, description="Rows per batch sent to a replica.")
    max_concurrent_batches: PositiveInt = Field(4, description="Batches in flight per replica.")
    accelerator_type: Optional[str] = Field(
        None, description="Ray accelerator type for the replicas, e.g. H100, A100, L4, A10G."
    )
    cpus_per_replica: Optional[PositiveFloat] = Field(
        None, description="CPU clusters: each replica is a bundle of this many CPUs and no GPU. "
        "None: each replica asks for tensor_parallel_size GPUs.",
    )
    local_num_cpus: Optional[PositiveInt] = Field(
        None, description="CPUs a local cluster offers; None: every core of this machine."
    )

    @field_validator("replicas")
    @classmethod
    def _ordered_range(cls, replicas: Union[int, tuple[int, int]]) -> Union[int, tuple[int, int]]:
        if isinstance(replicas, tuple) and replicas[0] > replicas[1]:
            raise ValueError(f"replicas range {list(replicas)} has min > max; write [min, max]")
        return replicas

    @model_validator(mode="after")
    def _cpu_bundles_have_no_accelerator(self) -> "RayConfig":
        if self.cpus_per_replica is not None and self.accelerator_type is not None:
            raise ValueError(
                "cpus_per_replica (CPU-only replicas) and accelerator_type exclude each other: "
                "unset cpus_per_replica to run on GPUs, or accelerator_type to run on CPUs"
            )
        return self

    @property
    def replica_range(self) -> tuple[int, int]:
        """(min, max) replicas; a fixed number n is (n, n)."""
        return self.replicas if isinstance(self.replicas, tuple) else (self.replicas, self.replicas)


class EngineConfig(_Strict):
    """How vLLM is built and run. Defaults are the fast ones on a 2-core CPU (see shared FACTS)."""

    backend: Literal["vllm", "ray"] = Field(
        "vllm", description="'vllm': one engine in this process; 'ray': Ray Data LLM engine replicas on a Ray cluster."
    )
    dtype: str = "auto"
    max_model_len: PositiveInt = 2048
    enforce_eager: Optional[bool] = Field(
        None, description="None: eager on CPU (compilation costs ~150 s there), compiled on GPU."
    )
    gpu_memory_utilization: float = Field(0.85, gt=0.0, le=1.0)
    tensor_parallel_size: PositiveInt = Field(1, description="GPUs per engine (per replica with backend ray).")
    data_parallel_size: PositiveInt = Field(
        1, description="Engine replicas on one node. vLLM's in-process LLM refuses more than 1: use backend ray."
    )
    cpu_kvcache_space_gib: PositiveInt = 2
    cpu_threads: Optional[str] = Field(
        None, description="VLLM_CPU_OMP_THREADS_BIND value; None binds every core (nobind for Ray replicas)."
    )
    max_num_seqs: Optional[PositiveInt] = None
    enable_prefix_caching: Optional[bool] = None
    enable_chunked_prefill: Optional[bool] = None
    ray: RayConfig = RayConfig()

    @model_validator(mode="after")
    def _data_parallel_runs_on_ray(self) -> "EngineConfig":
        # vLLM 0.32's LLM raises "LLM(data_parallel_size=N) is not supported for single-process
        # usage and may hang" on every platform; replicas on Ray are the supported way.
        if self.data_parallel_size > 1:
            raise ValueError(
                f"data_parallel_size={self.data_parallel_size}: vLLM's in-process engine runs one replica "
                f"(LLM refuses data_parallel_size > 1 in one process, and on a CPU there are no GPUs to "
                f"spread over). For {self.data_parallel_size} replicas on this node set engine.backend: ray "
                f"and engine.ray.replicas: {self.data_parallel_size} (a local Ray cluster; add "
                f"engine.ray.cpus_per_replica on a CPU machine), and keep data_parallel_size: 1"
            )
        return self


class JudgeConfig(_Strict):
    """The LLM judge: backend, model, how it samples, and how it talks to an endpoint."""

    backend: Literal["vllm", "openai"] = Field(
        "vllm", description="'vllm': in-process engine; 'openai': any OpenAI-compatible chat endpoint."
    )
    model: str = "smollm2-135m"
    base_url: Optional[str] = Field(
        None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1; None: OpenAI."
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: PositiveInt = 384
    seed: Optional[int] = 0
    max_analysis_chars: PositiveInt = 400
    response_format: Literal["auto", "json_schema", "json_object", "none"] = Field(
        "auto", description="auto: JSON schema, falling back to JSON mode, then plain text + validation."
    )
    max_concurrency: PositiveInt = Field(8, description="Requests in flight to an endpoint.")
    timeout_s: float = Field(120.0, gt=0, description="Per-request timeout.")
    max_attempts: PositiveInt = Field(6, description="Tries per request on 429, 5xx, timeouts, dropped connections.")
    max_backoff_s: float = Field(60.0, gt=0, description="Longest wait between tries (Retry-After is honoured up to this).")
    cache: bool = Field(True, description="Reuse verdicts from the on-disk judge cache.")
    request_options: dict[str, Any] = Field(
        default_factory=dict, description="Extra fields sent with every chat request."
    )
    price_per_million_input: Optional[float] = Field(None, ge=0, description="USD; known OpenAI models default.")
    price_per_million_output: Optional[float] = Field(None, ge=0)


class PublishConfig(_Strict):
    """Where results are published: always a local dataset repo, and the Hub with `target: hub`."""

    target: Literal["local", "hub"] = "local"
    workspace: Optional[str] = Field(
        None, description="Namespace of the results repos; defaults to the settings' workspace "
        "(for the Hub: the token owner's name when that is unset)."
    )
    private: bool = Field(True, description="Create Hub repos as private.")


# ZenML settings keys a generation step may carry; a flavor-keyed step operator key
# (`step_operator.sagemaker`) applies only when the stack's step operator has that flavor.
GENERATION_SETTINGS_KEYS = {"docker", "resources"}
STEP_OPERATOR_SETTINGS_PREFIX = "step_operator."


class GenerationStepConfig(_Strict):
    """Where every generation step runs: a step operator of the active stack and its settings.

    Applied to each model's generation step (`generate_answers`, `generate_answers_2`, ...);
    every other step stays on the orchestrator. Empty: generation runs on the orchestrator too.
    """

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


class JudgeCheckConfig(_Strict):
    """Judge check: the judge also scores sampled references and mismatched references."""

    rows: NonNegativeInt = Field(20, description="Rows sampled for the check; 0 turns it off.")
    threshold: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Below this share of pairs where the reference scores higher, the judge is flagged 'no signal'.",
    )
    seed: int = Field(0, description="Fixes the sample and the mismatched pairing.")


class SimilarityConfig(_Strict):
    """Reference similarity: cosine of answer and reference embeddings (all-MiniLM-L6-v2, offline)."""

    enabled: bool = True
    batch_size: PositiveInt = 32


class PairwiseConfig(_Strict):
    """With two or more models: the judge compares each model's answers with the first model's,
    every pair in both orders."""

    enabled: bool = True


def _check_variant(model: str) -> None:
    """A variant's sampling settings (`name@temperature=0.2`) must be valid sampling keys and values."""
    from llm_engineering.evaluation.models import ModelError, split_variant

    try:
        _, overrides = split_variant(model)
    except ModelError as error:
        raise ValueError(str(error)) from None
    unknown = sorted(set(overrides) - set(SamplingConfig.model_fields))
    if unknown:
        raise ValueError(f"model {model!r} sets unknown sampling key(s) {unknown}; "
                         f"allowed: {sorted(SamplingConfig.model_fields)}")
    try:
        SamplingConfig.model_validate(overrides)
    except ValidationError as error:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
        raise ValueError(f"model {model!r} has invalid sampling settings ({problems})") from None


class EvaluationConfig(_Strict):
    """Everything one evaluation run needs; the `parameters` section of a run config."""

    models: list[str] = Field(default_factory=lambda: ["smollm2-135m"], min_length=1)
    dataset: DatasetConfig = DatasetConfig()
    prompt: PromptConfig = PromptConfig()
    sampling: SamplingConfig = SamplingConfig()
    engine: EngineConfig = EngineConfig()
    judge: JudgeConfig = JudgeConfig()
    publish: PublishConfig = PublishConfig()
    resume: bool = Field(
        True, description="Reuse the answers an interrupted run saved for the same model, sampling and "
        "prompts, and generate only the missing rows; false generates every row again.",
    )
    generation_step: GenerationStepConfig = GenerationStepConfig()
    judge_check: JudgeCheckConfig = JudgeCheckConfig()
    similarity: SimilarityConfig = SimilarityConfig()
    pairwise: PairwiseConfig = PairwiseConfig()

    @field_validator("models")
    @classmethod
    def _unique_models(cls, models: list[str]) -> list[str]:
        duplicates = sorted({m for m in models if models.count(m) > 1})
        if duplicates:
            raise ValueError(
                f"models are listed twice: {duplicates}; list each model once (to compare generation "
                f"settings of one model, give each its own, e.g. smollm2-135m@temperature=0.2)"
            )
        for model in models:
            _check_variant(model)
        return models

    def sampling_for(self, model: str) -> SamplingConfig:
        """The sampling of `model`: the run's, with a variant's own settings (`name@temperature=0.2`) on top."""
        from llm_engineering.evaluation.models import split_variant

        _, overrides = split_variant(model)
        return SamplingConfig.model_validate({**self.sampling.model_dump(), **overrides}) if overrides else self.sampling


class RunConfig(BaseModel):
    """A parsed run config file: our validated parameters plus ZenML's own options."""

    evaluation: EvaluationConfig
    zenml_options: dict[str, Any]
    path: Optional[Path] = None


def _format_validation_error(error: ValidationError, path: Optional[Path]) -> str:
    where = f" in {path}" if path else ""
    lines = [f"Invalid evaluation config{where}:"]
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "parameters"
        if item["type"] == "extra_forbidden":
            lines.append(f"  - parameters.{loc}: unknown key; remove it or fix its spelling")
        else:
            lines.append(f"  - parameters.{loc}: {item['msg']}")
    return "\n".join(lines)


def parse_evaluation(parameters: dict[str, Any], path: Optional[Path] = None) -> EvaluationConfig:
    """Validate the `parameters` mapping, with errors that name the key and the fix."""
    try:
        return EvaluationConfig.model_validate(parameters or {})
    except ValidationError as error:
        raise ConfigError(_format_validation_error(error, path)) from None


def load_run_config(path: Path) -> RunConfig:
    """Read and validate a ZenML-style run config YAML file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Config file not found: {path}. Pass an existing file with --config.")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"Config file {path} is not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"Config file {path} must hold a mapping at the top level.")
    unknown = sorted(set(raw) - TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(
            f"Unknown top-level key(s) {unknown} in {path}; allowed: {sorted(TOP_LEVEL_KEYS)}."
        )
    evaluation = parse_evaluation(raw.get("parameters") or {}, path)
    options = {key: value for key, value in raw.items() if key != "parameters"}
    return RunConfig(evaluation=evaluation, zenml_options=options, path=path)


def apply_overrides(
    config: EvaluationConfig,
    models: Optional[list[str]] = None,
    dataset: Optional[str] = None,
    limit: Optional[int] = None,
    dummy: bool = False,
    fresh: bool = False,
) -> EvaluationConfig:
    """The config with command-line overrides applied, validated again."""
    data = config.model_dump()
    if models:
        data["models"] = list(models)
    if dataset:
        data["dataset"]["source"] = dataset
    if limit:
        data["dataset"]["limit"] = limit
    if dummy:
        data["dataset"]["dummy"] = True
    if fresh:
        data["resume"] = False
    return parse_evaluation(data)


def check_judge_settings(judge: JudgeConfig, settings: Any) -> None:
    """Stop before any work when the judge cannot be reached as configured."""
    if judge.backend == "openai" and judge.base_url is None and settings.OPENAI_API_KEY is None:
        raise ConfigError(
            "judge.backend is 'openai' with no base_url, which means api.openai.com, but "
            "OPENAI_API_KEY is not set: add it to .env or the environment, or set "
            "judge.base_url to your OpenAI-compatible endpoint (e.g. a `vllm serve`)."
        )


def check_publish_settings(publish: PublishConfig, settings: Any) -> None:
    """Stop before generation when Hub publishing is chosen without a token."""
    if publish.target == "hub" and settings.HUGGINGFACE_ACCESS_TOKEN is None:
        raise ConfigError(
            "publish.target is 'hub' but HUGGINGFACE_ACCESS_TOKEN is not set: add a write token "
            "to .env or the environment, or set publish.target to 'local'."
        )
