"""A run config file: the evaluation's components composed under `parameters`, plus ZenML's own options.

A run config is a ZenML-style YAML file: the evaluation itself lives under `parameters` (validated here with
`extra="forbid"`, because ZenML silently ignores unknown keys), and ZenML's own keys (`settings`, `steps`,
`enable_cache`, `run_name`...) are passed through to it. This module sits above `evaluation` and `infrastructure`:
it composes the component configs with where the generation steps run on the ZenML stack.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llm_engineering.evaluation.config import (
    DatasetConfig,
    JudgeCheckConfig,
    JudgeConfig,
    JuryConfig,
    PairwiseConfig,
    PromptConfig,
    PublishConfig,
    SamplingConfig,
    SimilarityConfig,
)
from llm_engineering.evaluation.config_base import ConfigError, validation_problems
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.metrics.config import CHECKS_HELP, METRICS_HELP, Checks, MeasuresConfig, Metrics, all_metrics
from llm_engineering.evaluation.trust.labels import Labels, load_labels
from llm_engineering.infrastructure.zenml_stack import GenerationStepConfig
from llm_engineering.run_config_file import read_run_config_file

# ZenML's own top-level keys, passed to `Pipeline.with_options` as they are.
ZENML_KEYS = {"settings", "steps", "enable_cache", "run_name", "extra", "model", "tags", "secrets", "environment"}
TOP_LEVEL_KEYS = ZENML_KEYS | {"parameters"}


def _base_and_adapter(model: str) -> tuple[str, Optional[str]]:
    """`BASE+ADAPTER@key=value` -> (BASE, ADAPTER); a model without an adapter -> (model id less its settings, None)."""
    from llm_engineering.evaluation.models import split_adapter, split_variant

    return split_adapter(split_variant(model)[0])


def _check_variant(model: str) -> None:
    """A variant's sampling settings (`name@temperature=0.2`) must be valid sampling keys and values,
    and `BASE+ADAPTER` must name both."""
    from llm_engineering.evaluation.models import ModelError, split_variant

    try:
        _, overrides = split_variant(model)
        _base_and_adapter(model)
    except ModelError as error:
        raise ValueError(str(error)) from None
    unknown = sorted(set(overrides) - set(SamplingConfig.model_fields))
    if unknown:
        raise ValueError(f"model {model!r} sets unknown sampling key(s) {unknown}; "
                         f"allowed: {sorted(SamplingConfig.model_fields)}")
    try:
        SamplingConfig.model_validate(overrides)
    except ValidationError as error:
        raise ValueError(f"model {model!r} has invalid sampling settings ({validation_problems(error)})") from None


class ChecklistsConfig(BaseModel):
    """Where the rows' checklists come from, for a checklist rubric (`reference-checklist`). Items a dataset gives in
    its `checklist` column are used as given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    from_reference: bool = Field(
        True, description="A row's items are its reference's sentences; false: the writer writes them from the "
        "instruction and the reference. Rows without a reference: always the writer, from the instruction.")
    writer: Optional[JudgeConfig] = Field(
        None, description="The model that writes items: any judge (alias, folder, Hub id, served or OpenAI), e.g. a "
        "stronger one than the grader; None: the judge itself.")


class EvaluationConfig(BaseModel):
    """Everything one evaluation run needs; the `parameters` section of a run config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[str] = Field(default_factory=lambda: ["smollm2-135m"], min_length=1)
    dataset: DatasetConfig = DatasetConfig()
    prompt: PromptConfig = PromptConfig()
    sampling: SamplingConfig = SamplingConfig()
    engine: EngineConfig = EngineConfig()
    judge: JudgeConfig = JudgeConfig()
    judges: list[JudgeConfig] = Field(
        default_factory=list, description="A jury: each judge scores every answer on its own (own cache entries), "
        "and the verdicts are aggregated per `jury`. Replaces `judge`; the first judge runs the judge check and pairwise.",
    )
    jury: JuryConfig = JuryConfig()
    publish: PublishConfig = PublishConfig()
    resume: bool = Field(
        True, description="Reuse the answers an interrupted run saved for the same model, sampling and "
        "prompts, and generate only the missing rows; false generates every row again.",
    )
    pass_score: Optional[float] = Field(
        None, description="With several answers per prompt (sampling.n): an answer passes a criterion when its score is "
        "at least this, for the summary's pass@1 and pass@k; default: the top of the criterion's scale.",
    )
    generation_step: GenerationStepConfig = GenerationStepConfig()
    checklists: ChecklistsConfig = ChecklistsConfig()
    judge_check: JudgeCheckConfig = JudgeCheckConfig()
    similarity: SimilarityConfig = SimilarityConfig()
    pairwise: PairwiseConfig = PairwiseConfig()
    metrics: Metrics = Field(default_factory=all_metrics, description=METRICS_HELP)
    checks: Checks = Field(default_factory=list, description=CHECKS_HELP)
    labels: Optional[Labels] = Field(
        None, description="Human labels: a .jsonl or .csv file (docs/judge-trust.md, Agreement with labels), read when "
        "the config is; the first judge scores the labelled answers and the run reports its agreement with them.",
    )

    @field_validator("labels", mode="before")
    @classmethod
    def _read_labels(cls, labels: Any) -> Any:
        # As a rubric file: read and checked now and carried inline, so a remote step needs no copy of the file.
        return load_labels(Path(labels)) if isinstance(labels, (str, Path)) else labels

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

    @model_validator(mode="after")
    def _one_panel(self) -> "EvaluationConfig":
        if self.judges and self.judge != JudgeConfig():
            raise ValueError("set either judge (one judge) or judges (a jury), not both; move the judge into judges")
        if any(j.escalate_to for j in self.judges):
            raise ValueError("escalate_to escalates from one judge, not a jury: use judge: with escalate_to")
        rubrics = [j.resolved_rubric() for j in self.judges]
        for k, rubric in enumerate(rubrics[1:], 1):
            if rubric != rubrics[0]:
                raise ValueError(f"judges[{k}] scores rubric {rubric.name!r} but judges[0] scores {rubrics[0].name!r}: a jury "
                                 f"scores one rubric; give every judge the same rubric")
        return self

    @model_validator(mode="after")
    def _adapters_run_in_process(self) -> "EvaluationConfig":
        adapters = [m for m in self.models if _base_and_adapter(m)[1]]
        if adapters and self.engine.backend == "ray":
            from llm_engineering.infrastructure.engines import ray_adapter_problem

            raise ValueError(ray_adapter_problem(_base_and_adapter(adapters[0])[1] or ""))
        for k, judge in enumerate(self.panel):
            if judge.backend == "vllm" and _base_and_adapter(judge.model)[1]:
                where = f"judges[{k}]" if self.judges else "judge"
                raise ValueError(f"{where}.model {judge.model!r}: an in-process judge runs a base model only, not a LoRA "
                                 f"adapter; merge the adapter into its base (PeftModel.merge_and_unload) and give the "
                                 f"merged folder, or serve it with `vllm serve --enable-lora` and use backend: openai")
        return self

    def engine_for(self, model: str) -> EngineConfig:
        """The engine config of `model`'s generation: the run's, with LoRA on where the run has an adapter of the
        same base (the base and all its adapters then share one engine), `max_rank` raised to fit their local
        adapters. Bases are compared as written: an alias and its folder's path make two engines."""
        from llm_engineering.evaluation.models import adapter_rank

        base = _base_and_adapter(model)[0]
        adapters = [adapter for b, adapter in map(_base_and_adapter, self.models) if adapter and b == base]
        if not adapters:
            return self.engine
        lora = self.engine.lora
        for adapter in adapters:  # a Hub adapter's rank is not read before vLLM downloads it: engine.lora.max_rank
            lora = lora.covering(adapter_rank(adapter) or 1)
        return self.engine.model_copy(update={"lora": lora})

    @property
    def reference_required_by(self) -> Optional[str]:
        """The name of the judges' rubric where it cannot judge a row without a reference answer, else None."""
        rubric = self.panel[0].resolved_rubric()
        return rubric.name if rubric.reference_guided and rubric.reference_required else None

    @property
    def measures(self) -> MeasuresConfig:
        """What the evaluation step measures without a judge."""
        return MeasuresConfig(metrics=self.metrics, checks=self.checks)

    @property
    def similarity_measured(self) -> bool:
        """The embedding similarity is measured (and checked): on, and among the metrics."""
        return self.similarity.enabled and self.measures.similarity

    @property
    def panel(self) -> list[JudgeConfig]:
        """The judges that score: the jury, or the one judge."""
        return list(self.judges) or [self.judge]

    def sampling_for(self, model: str) -> SamplingConfig:
        """The sampling of `model`: the run's, with a variant's own settings (`name@temperature=0.2`) on top."""
        from llm_engineering.evaluation.models import split_variant

        _, overrides = split_variant(model)
        return SamplingConfig.model_validate({**self.sampling.model_dump(), **overrides}) if overrides else self.sampling


class RunConfig(BaseModel):
    """A parsed run config file: our validated parameters plus ZenML's own options."""

    evaluation: EvaluationConfig
    zenml_options: dict[str, Any]

    def pipeline_options(self, no_cache: bool = False) -> dict[str, Any]:
        """ZenML's options as keyword arguments of `Pipeline.with_options`; `no_cache` turns step caching off.

        Each ZenML key of a run config is a `with_options` argument of the same name (`run_name`,
        `steps`) or one it hands to `Pipeline.configure` (`settings`, `enable_cache`, `secrets`...),
        so no YAML file is written for ZenML. (A `config_path` file is read again when the run
        compiles, and its `enable_cache: true` then overrode `enable_cache=False`.)
        """
        return {**self.zenml_options, **({"enable_cache": False} if no_cache else {})}


def _format_validation_error(error: ValidationError, path: Optional[Path]) -> str:
    where = f" in {path}" if path else ""
    lines = [f"Invalid evaluation config{where}:"]
    for item in error.errors():
        loc = ".".join(["parameters", *map(str, item["loc"])])
        if item["type"] == "extra_forbidden":
            lines.append(f"  - {loc}: unknown key; remove it or fix its spelling")
        else:
            lines.append(f"  - {loc}: {item['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def parse_evaluation(parameters: dict[str, Any], path: Optional[Path] = None) -> EvaluationConfig:
    """Validate the `parameters` mapping, with errors that name the key and the fix."""
    try:
        return EvaluationConfig.model_validate(parameters or {})
    except ValidationError as error:
        raise ConfigError(_format_validation_error(error, path)) from None


def load_run_config(path: Path) -> RunConfig:
    """Read and validate a ZenML-style run config YAML file, with the base file it extends (`base:`,
    llm_engineering/run_config_file.py)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Config file not found: {path}. Pass an existing file with --config.")
    raw = read_run_config_file(path, TOP_LEVEL_KEYS)
    evaluation = parse_evaluation(raw.get("parameters") or {}, path)
    options = {key: value for key, value in raw.items() if key != "parameters"}
    return RunConfig(evaluation=evaluation, zenml_options=options)


def with_judges_chosen(config: EvaluationConfig, **machine: Any) -> tuple[EvaluationConfig, list[str]]:
    """`config` with every `judge.model: auto` replaced by this machine's choice (`machine`: what
    `resolve_auto_judge` would otherwise read off it), and a line per choice saying why."""
    from llm_engineering.infrastructure.judge_choice import resolve_auto_judge

    resolved = [resolve_auto_judge(judge, **machine) for judge in config.panel]
    lines = [line for _, line in resolved if line]
    if not lines:
        return config, []
    judges = [judge for judge, _ in resolved]
    return config.model_copy(update={"judges": judges} if config.judges else {"judge": judges[0]}), lines
