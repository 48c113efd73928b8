"""The Ray engine's settings and the pure parts of the Ray engine: no cluster, no model."""

import os
import threading

import pytest

from llm_engineering.evaluation import columns as col
from llm_engineering.evaluation.config import SamplingConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig, RayConfig
from llm_engineering.evaluation.generation.checkpoint import AnswerRecord
from llm_engineering.infrastructure.engines import open_engine
from llm_engineering.infrastructure.ray_engine import RayEngine, finish_reason, placement_problem, processor_config
from llm_engineering.infrastructure.vllm_engine import EnginePool
from llm_engineering.run_config import load_run_config


def _load(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return load_run_config(path).evaluation


def test_ray_settings_load_from_yaml(tmp_path):
    engine = _load(tmp_path, (
        "parameters:\n  engine:\n    backend: ray\n    tensor_parallel_size: 2\n"
        "    ray: {address: 'ray://head:10001', replicas: [2, 8], batch_size: 64, max_concurrent_batches: 2,"
        " accelerator_type: H100}\n"
    )).engine
    assert engine.backend == "ray" and engine.tensor_parallel_size == 2
    assert engine.ray.address == "ray://head:10001" and engine.ray.replica_range == (2, 8)
    assert (engine.ray.batch_size, engine.ray.max_concurrent_batches, engine.ray.accelerator_type) == (64, 2, "H100")


def test_shipped_ray_config_is_valid(repo_root):
    engine = load_run_config(repo_root / "configs" / "evaluating_ray.yaml").evaluation.engine
    assert engine.backend == "ray" and engine.ray.cpus_per_replica == 1 and engine.ray.replica_range == (2, 2)


@pytest.mark.parametrize(
    "engine, message",
    [
        ("backend: spark", "parameters.engine.backend"),
        ("ray: {replicas: 0}", "parameters.engine.ray.replicas"),
        ("ray: {replicas: [4, 2]}", "min > max"),
        ("ray: {replicas: [1, 2, 3]}", "parameters.engine.ray.replicas"),
        ("ray: {batch_size: 0}", "parameters.engine.ray.batch_size"),
        ("ray: {cpus_per_replica: 0}", "parameters.engine.ray.cpus_per_replica"),
        ("ray: {cpus_per_replica: 1, accelerator_type: A10G}", "exclude each other"),
        ("ray: {adress: auto}", "parameters.engine.ray.adress: unknown key"),
        ("tensor_parallel_size: 0", "parameters.engine.tensor_parallel_size"),
        ("data_parallel_size: 0", "parameters.engine.data_parallel_size"),
        ("data_parallel_size: 4", "engine.ray.replicas: 4"),
    ],
)
def test_bad_engine_settings_name_the_key_and_the_fix(tmp_path, engine, message):
    with pytest.raises(ConfigError) as error:
        _load(tmp_path, f"parameters:\n  engine: {{{engine}}}\n")
    assert message in str(error.value)


def test_cpu_replicas_get_cpu_bundles_and_their_own_threads(monkeypatch):
    monkeypatch.setattr("llm_engineering.infrastructure.vllm_setup.native_bf16_flags", lambda: [])  # an AVX2-only CPU
    engine = EngineConfig(backend="ray", ray=RayConfig(replicas=2, cpus_per_replica=1, batch_size=4))
    config = processor_config("/models/m", engine, engine.ray)
    assert config["placement_group_config"] == {"bundle_per_worker": {"CPU": 1}}
    assert config["runtime_env"]["env_vars"]["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert config["runtime_env"]["env_vars"]["OMP_NUM_THREADS"] == "1"
    assert config["runtime_env"]["env_vars"]["LLM_EVAL_CPU_FAST_TOP_P"] == "1"  # the sampler the in-process engine runs
    assert config["concurrency"] == (2, 2)  # a fixed pool, not an autoscaling 1..2
    assert config["engine_kwargs"]["dtype"] == "float32" and config["engine_kwargs"]["enforce_eager"] is True
    assert config["engine_kwargs"]["block_size"] == 32  # on CPU, small KV blocks: the prefix cache shares more
    assert "model" not in config["engine_kwargs"] and config["model_source"] == "/models/m"
    # Prompts arrive formatted: Ray must not template or tokenize them again.
    assert not (config["chat_template_stage"] or config["tokenize_stage"] or config["detokenize_stage"])


def test_gpu_replicas_ask_for_gpus_of_a_type_and_keep_the_model_dtype():
    engine = EngineConfig(backend="ray", tensor_parallel_size=4,
                          ray=RayConfig(replicas=(1, 16), accelerator_type="H100"))
    config = processor_config("org/model", engine, engine.ray)
    assert "placement_group_config" not in config and "runtime_env" not in config
    assert config["accelerator_type"] == "H100" and config["concurrency"] == (1, 16)
    assert config["engine_kwargs"]["tensor_parallel_size"] == 4
    assert config["engine_kwargs"]["dtype"] == "auto" and "gpu_memory_utilization" in config["engine_kwargs"]
    assert "block_size" not in config["engine_kwargs"]  # vLLM's own default on GPU
    pinned = processor_config("org/model", engine.model_copy(update={"block_size": 64}), engine.ray)
    assert pinned["engine_kwargs"]["block_size"] == 64


@pytest.mark.parametrize("ray", [RayConfig(replicas=1, cpus_per_replica=1), RayConfig(replicas=1)], ids=["cpu", "gpu"])
def test_the_hub_token_is_in_no_part_of_what_ray_is_handed(monkeypatch, ray):
    """Ray's runtime-env agent logs a runtime env whole: the token reaches replicas through the cluster's environment."""
    monkeypatch.setenv("HUGGINGFACE_ACCESS_TOKEN", "hf_canary_in_ray_config")
    monkeypatch.setattr("llm_engineering.infrastructure.vllm_setup.native_bf16_flags", lambda: [])
    engine = EngineConfig(backend="ray", ray=ray)
    assert "hf_canary_in_ray_config" not in repr(processor_config("org/gated-model", engine, engine.ray))


@pytest.mark.parametrize(
    "tokens, prompt_tokens, expected",
    [
        ([5, 6, 2], 10, "stop"),         # ended on EOS
        ([5, 6, 7, 2], 10, "stop"),      # EOS as the last allowed token: vLLM checks EOS first
        ([5, 6, 7, 8], 10, "length"),    # max_tokens reached
        ([5, 6], 98, "length"),          # max_model_len reached
        ([5, 6], 10, "stop"),            # a stop string
    ],
)
def test_finish_reason_follows_vllm_order_of_checks(tokens, prompt_tokens, expected):
    assert finish_reason(tokens, prompt_tokens, stop_ids=frozenset({2}), max_tokens=4, max_model_len=100) == expected


@pytest.mark.parametrize(
    "resources, ray, tp, problem",
    [
        ({"CPU": 2.0}, RayConfig(replicas=2, cpus_per_replica=1), 1, None),
        ({"CPU": 2.0}, RayConfig(replicas=(2, 4), cpus_per_replica=1), 1, None),
        ({"CPU": 2.0}, RayConfig(replicas=3, cpus_per_replica=1), 1, "3 replica(s) x 1 CPU(s) do not fit"),
        ({"CPU": 64.0}, RayConfig(replicas=2), 1, "set engine.ray.cpus_per_replica"),
        ({"CPU": 64.0, "GPU": 8.0}, RayConfig(replicas=2), 4, None),
        ({"CPU": 64.0, "GPU": 2.0}, RayConfig(replicas=1), 4, "needs 4 GPU(s) but the cluster has 2"),
    ],
)
def test_placement_problems_are_found_before_ray_would_wait_forever(resources, ray, tp, problem):
    found = placement_problem(resources, ray, tp)
    assert found == problem if problem is None else problem in found


class _RowsFromRay(RayEngine):
    """The Ray engine with Ray's rows made up here: out of order, as replicas finish them."""

    closed_rows = False

    def generate_rows(self, rows, sampling, samples=None):
        def stream():
            try:
                for row_id, prompt in reversed(list(rows)):
                    yield {col.ID: row_id, col.ANSWER: f"answer to {prompt}", col.FINISH_REASON: "stop",
                           col.PROMPT_TOKENS: len(prompt), col.COMPLETION_TOKENS: 3}
            finally:
                type(self).closed_rows = True

        return stream()


def test_ray_engine_maps_its_rows_back_to_the_prompt_indexes():
    engine = _RowsFromRay("model", EngineConfig(backend="ray"))
    answers = dict(engine.generate({4: "a", 7: "bb"}, SamplingConfig()))
    assert sorted(answers) == [4, 7]
    assert answers[7] == AnswerRecord(answer="answer to bb", finish_reason="stop", prompt_tokens=2, completion_tokens=3)
    assert list(engine.generate({}, SamplingConfig())) == []  # nothing to ask: no cluster


def test_closing_the_ray_answer_stream_early_lets_go_of_ray_rows():
    _RowsFromRay.closed_rows = False
    stream = _RowsFromRay("model", EngineConfig(backend="ray")).generate({0: "a", 1: "b"}, SamplingConfig())
    next(stream)
    stream.close()  # what answer_test_split does on Ctrl-C: the cluster is shut down, not left running
    assert _RowsFromRay.closed_rows


def test_the_ray_backend_frees_the_pooled_engine_before_its_replicas_start():
    pool = EnginePool()
    pool.llm, pool.key = _HeldEngine(), ("other-model", EngineConfig())
    with open_engine("model", EngineConfig(backend="ray"), pool) as engine:
        assert pool.llm is None and pool.key is None
        assert engine.model_path == "model"
    assert pool.builds == []  # no in-process engine was built for a ray run


class _HeldEngine:
    """Stands for a built `vllm.LLM` in the pool (it has no engine process to shut down)."""


def test_another_model_frees_the_held_engine_before_its_own_is_built(monkeypatch):
    """Several `--model`s with other weights: one engine at a time in memory, never two."""
    import vllm

    events = []

    class Engine:  # stands for vllm.LLM: records when it is built and when its engine process is shut down
        def __init__(self, model, **kwargs):
            core = type("EngineCore", (), {"shutdown": staticmethod(lambda timeout=None: events.append(("shutdown", model)))})
            self.llm_engine = type("LLMEngine", (), {"engine_core": core})
            events.append(("build", model))

    monkeypatch.setattr(vllm, "LLM", Engine)
    pool, engine = EnginePool(), EngineConfig(dtype="float32")
    first = pool.get("model-a", engine)
    assert pool.get("model-a", engine) is first  # the same weights and settings: the held engine
    pool.get("model-b", engine)
    pool.release()
    assert events == [("build", "model-a"), ("shutdown", "model-a"), ("build", "model-b"), ("shutdown", "model-b")]
    assert [model for model, _ in pool.builds] == ["model-a", "model-b"]


def test_the_engine_variables_reach_only_the_engine_processes_started_inside_the_block(monkeypatch):
    from llm_engineering.infrastructure import vllm_setup
    from llm_engineering.infrastructure.cpu_sampler import FAST_TOP_P
    from llm_engineering.infrastructure.engine_lifetime import DIE_WITH_PARENT

    monkeypatch.setattr(vllm_setup, "preloaded_libraries", lambda existing: f"{existing}:libtcmalloc_minimal.so.4")
    monkeypatch.setenv("LD_PRELOAD", "/opt/libx.so")
    monkeypatch.delenv(DIE_WITH_PARENT, raising=False)
    monkeypatch.delenv(FAST_TOP_P, raising=False)
    with vllm_setup.engine_process_environment(EngineConfig(in_process=False), on_cpu=True):
        assert os.environ["LD_PRELOAD"] == "/opt/libx.so:libtcmalloc_minimal.so.4"
        assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ  # vLLM's engine processes
        assert os.environ[DIE_WITH_PARENT] == str(os.getpid())
        assert os.environ[FAST_TOP_P] == "1"
    # Taken back: a Ray cluster or a server started later inherits none of them.
    assert os.environ["LD_PRELOAD"] == "/opt/libx.so" and DIE_WITH_PARENT not in os.environ and FAST_TOP_P not in os.environ
    with vllm_setup.engine_process_environment(EngineConfig(in_process=False, cpu_preload=False, cpu_fast_top_p=False),
                                                 on_cpu=True):
        assert os.environ["LD_PRELOAD"] == "/opt/libx.so" and os.environ[FAST_TOP_P] == "0"
    # Each engine its own KV cache size, none left behind to pass for an exported value; an exported one wins.
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    for space in (3, 5):
        with vllm_setup.engine_process_environment(EngineConfig(cpu_kvcache_space_gib=space), on_cpu=True):
            assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == str(space)
    assert "VLLM_CPU_KVCACHE_SPACE" not in os.environ
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "7")
    with vllm_setup.engine_process_environment(EngineConfig(cpu_kvcache_space_gib=3), on_cpu=True):
        assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "7"
    with vllm_setup.engine_process_environment(EngineConfig(), on_cpu=False):  # GPU: vLLM's own sampler
        assert FAST_TOP_P not in os.environ
    # Built from another thread, whose end would kill the engine: no parent-death tie.
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_tie_inside()))
    thread.start()
    thread.join()
    assert seen == [None]


def _tie_inside():
    from llm_engineering.infrastructure import vllm_setup
    from llm_engineering.infrastructure.engine_lifetime import DIE_WITH_PARENT

    with vllm_setup.engine_process_environment(EngineConfig(), on_cpu=False):
        return os.environ.get(DIE_WITH_PARENT)


def test_on_cpu_the_engine_runs_in_this_process_and_leaves_vllms_variables_unfrozen(monkeypatch):
    """On CPU by default the engine core and its worker run in the building process (no preload can reach it); on GPU
    vLLM's own processes. The engine core freezes vLLM's variables where it runs: after the block they are read again,
    so the next engine gets its own settings."""
    import vllm.envs

    from llm_engineering.infrastructure import vllm_setup

    monkeypatch.setattr(vllm_setup, "preloaded_libraries", lambda existing: f"{existing}:libtcmalloc_minimal.so.4")
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    with vllm_setup.engine_process_environment(EngineConfig(cpu_kvcache_space_gib=3), on_cpu=True):
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0" and "LD_PRELOAD" not in os.environ
        os.environ["LD_PRELOAD"] = "/torch/lib/libgomp.so.1"  # what vLLM's CPU platform writes as it configures one
        vllm.envs.enable_envs_cache()  # what the engine core does once it is up
        assert vllm.envs.VLLM_CPU_KVCACHE_SPACE == 3
    # None of it is left for a program started later (a CLI whose engine preloads Intel OpenMP fails beside libgomp).
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ and "LD_PRELOAD" not in os.environ
    with vllm_setup.engine_process_environment(EngineConfig(cpu_kvcache_space_gib=5), on_cpu=True):
        assert vllm.envs.VLLM_CPU_KVCACHE_SPACE == 5  # not the first engine's 3
    with vllm_setup.engine_process_environment(EngineConfig(), on_cpu=False):
        assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in os.environ
    with vllm_setup.engine_process_environment(EngineConfig(in_process=True), on_cpu=False):
        assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
