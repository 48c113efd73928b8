"""The command line's overrides of a run config: `--model`, `--dataset`, `--column`, `--judge`... applied to the
config and validated again (`apply_overrides`). `--judge` names a judge by alias, folder, Hub id, `openai:MODEL` or a
served judge's URL (`judge_from_spec`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.run_config import EvaluationConfig, parse_evaluation


@dataclass(frozen=True)
class Overrides:
    """The command line's overrides of a run config (`--model`, `--dataset`...); a default leaves the config's value."""

    models: Optional[Sequence[str]] = None
    dataset: Optional[str] = None
    split: Optional[str] = None
    columns: Sequence[str] = ()  # --column ROLE=NAME
    limit: Optional[int] = None
    dummy: bool = False
    fresh: bool = False  # every cache ignored (`--no-cache`): answers generated and verdicts asked again
    rubric: Optional[str] = None
    labels: Optional[str] = None
    judge_model: Optional[str] = None  # --judge: an alias, folder, Hub id, openai:MODEL or a served judge's URL
    judge_served_model: Optional[str] = None  # --judge-model: the model name a served judge's URL serves
    samples: Optional[int] = None
    encoding: Optional[str] = None  # --encoding: a csv/json file's text encoding
    prompt_template: Optional[str] = None  # --prompt-template auto|alpaca|chat
    max_tokens: Optional[int] = None  # --max-tokens: an answer's length limit (sampling.max_tokens)
    metrics: Optional[Sequence[str]] = None  # --metric NAME (repeatable): the metrics measured, instead of the config's
    group_by: Optional[str] = None  # --group-by COLUMN: the category column (--column category=COLUMN)


COLUMN_ROLES = ("instruction", "reference", "id", "checks", "category")


def parse_column(value: str) -> tuple[str, str]:
    """`ROLE=NAME` of `--column` -> (role, name); ConfigError naming the roles otherwise."""
    role, equals, name = value.partition("=")
    if not equals or role.strip() not in COLUMN_ROLES or not name.strip():
        raise ConfigError(f"--column {value!r}: write ROLE=NAME with ROLE one of {', '.join(COLUMN_ROLES)}, e.g. "
                          f"--column instruction=question_text (NAME `none`: no such column, e.g. reference=none)")
    return role.strip(), name.strip()


def parse_columns(values: Sequence[str]) -> dict[str, str]:
    """Every `--column ROLE=NAME` -> {role: name}; a role given twice is a mistake (not the last one kept)."""
    names: dict[str, list[str]] = {}
    for role, name in map(parse_column, values):
        names.setdefault(role, []).append(name)
    for role, given in names.items():
        if len(given) > 1:
            raise ConfigError(f"--column {role}= is given {len(given)} times ({', '.join(given)}): a role has one column; "
                              f"give --column {role}=NAME once.")
    return {role: given[0] for role, given in names.items()}


def _endpoint_at(endpoint: dict[str, Any], url: Optional[str]) -> dict[str, Any]:
    """The config's endpoint settings moved to `url` (None: OpenAI's API). The key variable it names
    (`api_key_env`) was named for its own endpoint: it follows only to that same endpoint, never to another."""
    same = (endpoint.get("base_url") or "").rstrip("/") == (url or "")
    return {**endpoint, "base_url": url, "api_key_env": endpoint.get("api_key_env") if same else None}


def _served_judge(judge: dict[str, Any], url: str, model: Optional[str]) -> dict[str, Any]:
    """The judge at an OpenAI-compatible `url`: its `model`, or the one model the server lists (asked with the served
    judge's key: the variable `endpoint.api_key_env` names, else JUDGE_API_KEY, never OPENAI_API_KEY)."""
    endpoint = _endpoint_at(judge["endpoint"], url)
    if model is None:
        from llm_engineering.infrastructure.openai_chat import served_model

        model = served_model(url, endpoint["api_key_env"])
    return {**judge, "backend": "openai", "model": model, "endpoint": endpoint, "batch": {}}


def judge_from_spec(judge: dict[str, Any], spec: str, served_model: Optional[str] = None) -> dict[str, Any]:
    """The judge config (as a dict) that `--judge SPEC [--judge-model NAME]` names:
    - `http(s)://...`: a served judge (OpenAI-compatible, e.g. `vllm serve`), its model `served_model` or the one
      model it lists;
    - `openai:MODEL` / `openai-batch:MODEL`: OpenAI's API (OPENAI_API_KEY), or its Batch API;
    - `vllm:MODEL`: in process, whatever the config's backend;
    - anything else: the model of the config's backend (in process by default: an alias, a folder or a Hub id;
      with an openai backend, the endpoint's model name)."""
    if spec.startswith(("http://", "https://")):
        return _served_judge(judge, spec.rstrip("/"), served_model)
    if served_model is not None:
        raise ConfigError(f"--judge-model {served_model} names the model of a served judge: give its URL with --judge "
                          f"(e.g. --judge http://127.0.0.1:8000/v1 --judge-model {served_model})")
    backend, colon, name = spec.partition(":")
    if colon and backend in ("openai", "openai-batch", "vllm") and name:
        in_process = backend == "vllm"
        return {**judge, "backend": backend, "model": name, "endpoint": {} if in_process else
                _endpoint_at(judge["endpoint"], None), "batch": {} if backend != "openai-batch" else judge["batch"]}
    return {**judge, "model": spec}


def apply_overrides(config: EvaluationConfig, overrides: Overrides) -> EvaluationConfig:
    """The config with command-line overrides applied, validated again."""
    data = config.model_dump()
    if overrides.judge_model:
        if data["judges"]:
            raise ConfigError(f"--judge {overrides.judge_model} names one judge, but the config has a jury (judges): give "
                              f"a config with one judge, or edit its judges")
        data["judge"] = judge_from_spec(data["judge"], overrides.judge_model, overrides.judge_served_model)
    elif overrides.judge_served_model:
        raise ConfigError("--judge-model names the model of a served judge: give its URL with --judge URL too")
    if overrides.labels:
        data["labels"] = overrides.labels
    if overrides.rubric:
        for judge in data["judges"] or [data["judge"]]:  # a jury's judges: `judge` stays unset beside them
            judge["rubric"] = overrides.rubric
    if overrides.models:
        data["models"] = list(overrides.models)
    if overrides.dataset:
        data["dataset"]["source"] = overrides.dataset
    if overrides.split:
        data["dataset"]["split"] = overrides.split
    data["dataset"]["columns"].update(parse_columns(overrides.columns))
    if overrides.encoding:
        data["dataset"]["encoding"] = overrides.encoding
    if overrides.prompt_template:
        data["prompt"]["template"] = overrides.prompt_template
    if overrides.max_tokens:
        data["sampling"]["max_tokens"] = overrides.max_tokens
    if overrides.limit:
        data["dataset"]["limit"] = overrides.limit
    if overrides.dummy:
        data["dataset"]["dummy"] = True
    if overrides.fresh:
        data["resume"] = False
        for judge in data["judges"] or [data["judge"]]:
            judge["refresh"] = True
            if judge.get("escalate_to"):
                judge["escalate_to"]["refresh"] = True
    if overrides.samples:
        data["sampling"]["n"] = overrides.samples
    if overrides.metrics:
        data["metrics"] = list(overrides.metrics)
    if overrides.group_by:
        data["dataset"]["columns"]["category"] = overrides.group_by
    return parse_evaluation(data)
