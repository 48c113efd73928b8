"""The settings checks run before any work: each names what is missing and how to add it."""

from pathlib import Path

import pytest

from llm_engineering.evaluation.config import JudgeConfig, PublishConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.preflight import check_judge_settings, check_publish_settings, check_settings
from llm_engineering.run_config import EvaluationConfig
from llm_engineering.settings import Settings


@pytest.fixture
def settings(monkeypatch):
    """Settings from the given values only: no .env, no token of this machine's environment."""
    for name in ("OPENAI_API_KEY", "HUGGINGFACE_ACCESS_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return lambda **values: Settings(_env_file=None, **values)


def test_hub_target_without_token_stops_with_the_fix(settings):
    with pytest.raises(ConfigError) as error:
        check_publish_settings(PublishConfig(target="hub"), settings())
    assert str(error.value) == (
        "publish.target is 'hub' but HUGGINGFACE_ACCESS_TOKEN is not set: add a write token "
        "to .env or the environment, or set publish.target to 'local'."
    )


def test_hub_target_with_token_and_local_target_pass(settings):
    check_publish_settings(PublishConfig(target="hub"), settings(HUGGINGFACE_ACCESS_TOKEN="hf_x"))
    check_publish_settings(PublishConfig(target="local"), settings())


def test_openai_judge_without_key_or_base_url_stops_with_the_fix(settings):
    with pytest.raises(ConfigError) as error:
        check_judge_settings(JudgeConfig(backend="openai", model="gpt-4o-mini"), settings())
    assert str(error.value) == (
        "judge.backend is 'openai' with no endpoint.base_url, which means api.openai.com, but "
        "OPENAI_API_KEY is not set: add it to .env or the environment, or set "
        "judge.endpoint.base_url to your OpenAI-compatible endpoint (e.g. a `vllm serve`)."
    )


def test_batch_judge_without_key_or_base_url_stops_with_the_fix(settings):
    with pytest.raises(ConfigError, match=r"judge.backend is 'openai-batch' with no endpoint.base_url.*"
                                          r"OPENAI_API_KEY is not set.*an endpoint that serves the Batch API"):
        check_judge_settings(JudgeConfig(backend="openai-batch", model="gpt-4o-mini"), settings())


@pytest.mark.parametrize(
    "judge, values",
    [
        ({"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}, {}),  # a local endpoint needs no key
        ({"backend": "openai-batch", "model": "gpt-4o-mini"}, {"OPENAI_API_KEY": "sk-x"}),
        ({"backend": "openai", "model": "gpt-4o-mini"}, {"OPENAI_API_KEY": "sk-x"}),
        ({"backend": "vllm"}, {}),
    ],
    ids=["openai-base-url", "openai-batch-key", "openai-key", "vllm"],
)
def test_reachable_judges_pass(settings, judge, values):
    check_judge_settings(JudgeConfig(**judge), settings(**values))


def test_openai_named_by_its_url_without_a_key_stops_naming_that_url(settings):
    judge = JudgeConfig(backend="openai", model="gpt-4o-mini", base_url="https://u:p@api.openai.com/v1")
    with pytest.raises(ConfigError, match=r"^judge.backend is 'openai' with endpoint.base_url https://api.openai.com/v1, "
                                          r"OpenAI's API, but OPENAI_API_KEY is not set"):
        check_judge_settings(judge, settings())


def test_a_key_variable_the_judge_names_must_be_set_where_the_steps_run(settings):
    judge = JudgeConfig(backend="openai", model="m", base_url="http://127.0.0.1:8000/v1", api_key_env="MY_SERVER_KEY")
    with pytest.raises(ConfigError, match="api_key_env is MY_SERVER_KEY, but MY_SERVER_KEY is not set in the environment"):
        check_judge_settings(judge, settings(), {})
    check_judge_settings(judge, settings(), {"MY_SERVER_KEY": "k"})
    check_judge_settings(judge, settings(), None)  # a remote step's environment (its secrets) is not known here


def test_judge_is_not_checked_when_the_run_does_not_judge(settings):
    config = EvaluationConfig(judge={"backend": "openai", "model": "gpt-4o-mini"})
    check_settings(config, settings(), judge=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        check_settings(config, settings(), judge=True)


def test_settings_read_from_zenml_secrets_say_how_to_update_the_secret(settings):
    config = EvaluationConfig(publish={"target": "hub"})
    with pytest.raises(ConfigError) as error:
        check_settings(config, settings(), judge=True, secrets=["settings"])
    message = str(error.value)
    assert message.startswith("publish.target is 'hub' but HUGGINGFACE_ACCESS_TOKEN is not set")
    assert message.endswith(
        "\nThis config's steps read their settings from the ZenML secret(s) ['settings']: "
        "after adding the value, run `python tools/run.py --export-settings`."
    )


def test_settings_of_this_machine_get_no_secret_hint(settings):
    with pytest.raises(ConfigError) as error:
        check_settings(EvaluationConfig(publish={"target": "hub"}), settings(), judge=True)
    assert "ZenML secret" not in str(error.value)


def test_a_seeded_sampled_in_process_judge_is_stopped_on_cpu_before_any_work(monkeypatch):
    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.infrastructure import cpu_tuning
    from llm_engineering.preflight import check_sampled_judges
    from llm_engineering.run_config import parse_evaluation

    monkeypatch.setattr(cpu_tuning, "runs_on_cpu", lambda: True)
    jury = parse_evaluation({"judges": [{}, {"temperature": 1.0, "seed": 7}]})
    with pytest.raises(ConfigError, match=r"judges\[1\].*set seed: null"):
        check_sampled_judges(jury)
    check_sampled_judges(parse_evaluation({"judges": [{}, {"temperature": 1.0, "seed": None}]}))
    monkeypatch.setattr(cpu_tuning, "runs_on_cpu", lambda: False)
    check_sampled_judges(jury)  # CUDA generators take the offset rewind: only CPU engines are stopped


def test_max_model_len_above_a_local_models_limit_stops_before_any_engine_starts(tmp_path):
    import json

    from llm_engineering.evaluation.config_base import ConfigError
    from llm_engineering.preflight import check_context_length

    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 1024}))
    with pytest.raises(ConfigError, match=r"engine.max_model_len 2048 is above what ./tiny supports \(1024.*set "
                                          r"engine.max_model_len to 1024 or less"):
        check_context_length("./tiny", str(tmp_path), 2048)
    check_context_length("./tiny", str(tmp_path), 1024)  # at the limit: fine
    check_context_length("org/hub-model", "org/hub-model", 10**6)  # no local config: vLLM's to say


# The shape of a Llama-3-8B: 32 layers, 8 key/value heads of 128 dimensions.
_EIGHT_B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096}
GIB = 1 << 30


def _model_folder(path, weights_bytes=0, **config):
    import json

    path.mkdir()
    (path / "config.json").write_text(json.dumps({**_EIGHT_B, **config}))
    if weights_bytes:
        with open(path / "model.safetensors", "wb") as weights:
            weights.truncate(weights_bytes)  # sparse: its size without the disk
    return str(path)


def test_one_sequence_that_cannot_fit_the_cpu_kv_cache_stops_with_both_fixes(tmp_path, monkeypatch):
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.preflight import check_cpu_kv_cache

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    folder = _model_folder(tmp_path / "eight-b")
    engine = EngineConfig(max_model_len=8192, cpu_kvcache_space_gib=1)
    # fp32: 256 KiB of keys and values per token, 2 GiB for 8192 tokens
    with pytest.raises(ConfigError) as error:
        check_cpu_kv_cache("eight-b", folder, engine, dtype="float32", available=64 * GIB)
    assert str(error.value) == (
        "One sequence of engine.max_model_len 8192 tokens of eight-b needs 2.0 GiB of KV cache (float32), more than "
        "engine.cpu_kvcache_space_gib = 1 GiB: raise engine.cpu_kvcache_space_gib to 2, or lower engine.max_model_len "
        "to 4096.")
    check_cpu_kv_cache("eight-b", folder, engine, dtype="bfloat16", available=64 * GIB)  # bf16: half, exactly 1 GiB, fits
    windowed = _model_folder(tmp_path / "windowed", sliding_window=4096)
    check_cpu_kv_cache("windowed", windowed, engine, dtype="float32", available=64 * GIB)  # not this formula: vLLM's to say
    check_cpu_kv_cache("org/hub-model", "org/hub-model", engine, dtype="float32", available=64 * GIB)  # no local config


def test_a_cpu_kv_cache_beyond_the_free_memory_stops_naming_the_setting_that_wins(tmp_path, monkeypatch):
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.preflight import check_cpu_kv_cache

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    folder = _model_folder(tmp_path / "eight-b", weights_bytes=3 * GIB)
    engine = EngineConfig(cpu_kvcache_space_gib=4)
    with pytest.raises(ConfigError, match=r"^engine.cpu_kvcache_space_gib = 4 GiB of KV cache beside eight-b's weights "
                                          r"\(3.0 GiB in bfloat16\) is more than the 6.5 GiB of memory available now: lower "
                                          r"engine.cpu_kvcache_space_gib to 3, or stop"):
        check_cpu_kv_cache("eight-b", folder, engine, dtype="bfloat16", available=int(6.5 * GIB))
    check_cpu_kv_cache("eight-b", folder, engine, dtype="bfloat16", available=7 * GIB)  # 4 + 3 fit in 7
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "6")  # an exported value wins over the config, and is named
    with pytest.raises(ConfigError, match=r"^VLLM_CPU_KVCACHE_SPACE \(exported: it wins over "
                                          r"engine.cpu_kvcache_space_gib\) = 6 GiB .*: lower VLLM_CPU_KVCACHE_SPACE to 4,"):
        check_cpu_kv_cache("eight-b", folder, engine, dtype="bfloat16", available=7 * GIB)
    with pytest.raises(ConfigError, match=r"3.5 GiB of memory available now: stop what else uses memory here, or "
                                          r"run on a larger machine.$"):
        # not even 1 GiB beside the weights
        check_cpu_kv_cache("eight-b", folder, engine, dtype="bfloat16", available=int(3.5 * GIB))


def test_a_16_bit_checkpoint_upcast_to_float32_counts_its_weights_twice(tmp_path, monkeypatch):
    """The 1.5B judge on an AVX2-only CPU runs in float32 from bf16 files: in memory its weights take twice their
    files' size, and a KV cache that fits beside the files but not beside the upcast weights stops here, not a minute
    into vLLM's start. A quantized checkpoint keeps its stored size; a float32 one loaded in bf16 takes half."""
    from llm_engineering.evaluation.engine_config import EngineConfig
    from llm_engineering.preflight import check_cpu_kv_cache, loaded_weight_bytes

    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    engine = EngineConfig(cpu_kvcache_space_gib=2, max_model_len=2048)
    bf16 = _model_folder(tmp_path / "bf16", weights_bytes=3 * GIB, torch_dtype="bfloat16")
    check_cpu_kv_cache("bf16", bf16, engine, dtype="bfloat16", available=6 * GIB)  # 3 + 2 fit in 6
    with pytest.raises(ConfigError, match=r"beside bf16's weights \(6.0 GiB in float32\) is more than the 6.0 GiB"):
        check_cpu_kv_cache("bf16", bf16, engine, dtype="float32", available=6 * GIB)
    quantized = _model_folder(tmp_path / "int8", weights_bytes=3 * GIB, dtype="bfloat16", quantization_config={})
    assert loaded_weight_bytes(Path(quantized), "float32") == 3 * GIB
    fp32 = _model_folder(tmp_path / "fp32", weights_bytes=2 * GIB, dtype="float32")
    assert loaded_weight_bytes(Path(fp32), "bfloat16") == 1 * GIB
    assert loaded_weight_bytes(tmp_path / "no-such-folder", "float32") == 0
