"""LoRA adapters as models (`BASE+ADAPTER`): parsing, names, checks, and one engine per base."""

import json
import logging

import pytest

from llm_engineering.engine_policy import frees_engine_after
from llm_engineering.evaluation.config import JudgeConfig, SamplingConfig
from llm_engineering.evaluation.config_base import ConfigError
from llm_engineering.evaluation.engine_config import EngineConfig, LoraConfig
from llm_engineering.evaluation.generation.checkpoint import AnswerCheckpoint
from llm_engineering.evaluation.models import (
    ModelError,
    adapter_rank,
    file_label,
    resolve_model,
    short_name,
    split_adapter,
    split_variant,
)
from llm_engineering.infrastructure.publishing import repo_name
from llm_engineering.run_config import EvaluationConfig, parse_evaluation


def _base(tmp_path, name="my-base"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    return folder


def _adapter(tmp_path, name="my-adapter", **config):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8, **config}))
    return folder


@pytest.mark.parametrize("model_id, parts, name, label", [
    ("smollm2-135m", ("smollm2-135m", None), "SmolLM2-135M-Instruct", "smollm2-135m"),
    ("smollm2-135m+org/my-lora", ("smollm2-135m", "org/my-lora"), "SmolLM2-135M-Instruct+my-lora", "smollm2-135m+my-lora"),
    ("org/base+/data/adapters/my-lora/", ("org/base", "/data/adapters/my-lora/"), "base+my-lora", "base+my-lora"),
    ("smollm2-135m+org/my-lora@temperature=0.2", ("smollm2-135m", "org/my-lora"),
     "SmolLM2-135M-Instruct+my-lora@temperature=0.2", "smollm2-135m+my-lora@temperature=0.2"),
])
def test_an_adapter_is_named_after_its_base_and_its_last_part(model_id, parts, name, label):
    assert split_adapter(split_variant(model_id)[0]) == parts
    assert short_name(model_id) == name
    assert file_label(model_id) == label


def test_results_repos_of_a_base_and_its_adapter_differ():
    assert repo_name("local", short_name("smollm2-135m")) == "local/SmolLM2-135M-Instruct-results"
    assert repo_name("local", short_name("smollm2-135m+org/my-lora")) == "local/SmolLM2-135M-Instruct-my-lora-results"


def test_an_existing_path_with_a_plus_is_a_model_not_an_adapter(tmp_path):
    folder = _base(tmp_path, "c+d")
    assert split_adapter(str(folder)) == (str(folder), None)


def test_base_with_a_local_adapter_resolves_to_the_base_weights_and_the_adapter_folder(tmp_path):
    base, adapter = _base(tmp_path), _adapter(tmp_path, base_model_name_or_path="org/my-base")
    resolved = resolve_model(f"{base}+{adapter}", tmp_path / "cache")
    assert resolved.path == str(base.resolve())
    assert resolved.adapter == str(adapter.resolve())
    assert resolved.name == "my-base+my-adapter"
    hub = resolve_model(f"{base}+org/my-lora@temperature=0.2", tmp_path / "cache")
    assert (hub.path, hub.adapter, hub.name) == (str(base.resolve()), "org/my-lora", "my-base+my-lora@temperature=0.2")
    assert resolve_model(str(base), tmp_path / "cache").adapter is None


@pytest.mark.parametrize("adapter, message", [
    ("missing", "no such folder, and not a Hub id"),
    ("empty", "no adapter_config.json"),
    ("prefix", "not a LoRA adapter's (peft_type 'PREFIX_TUNING')"),
    ("garbled", "cannot read adapter_config.json"),
])
def test_bad_adapters_say_what_to_give_instead(tmp_path, adapter, message):
    base = _base(tmp_path)
    (tmp_path / "empty").mkdir()
    _adapter(tmp_path, "prefix", peft_type="PREFIX_TUNING")
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / "adapter_config.json").write_text("{not json")
    with pytest.raises(ModelError, match="LoRA adapter") as error:
        resolve_model(f"{base}+{tmp_path / adapter}", tmp_path / "cache")
    assert message in str(error.value)


@pytest.mark.parametrize("model", ["smollm2-135m+", "+org/my-lora"])
def test_a_plus_without_both_parts_is_refused_when_the_config_is_read(model):
    with pytest.raises(ConfigError, match="BASE\\+ADAPTER"):
        parse_evaluation({"models": [model]})


def test_an_adapter_trained_on_another_base_warns_and_is_still_used(tmp_path, caplog):
    base, adapter = _base(tmp_path), _adapter(tmp_path, base_model_name_or_path="org/other-model")
    with caplog.at_level(logging.WARNING):
        resolved = resolve_model(f"{base}+{adapter}", tmp_path / "cache")
    assert resolved.adapter == str(adapter.resolve())
    assert "trained on 'other-model'" in caplog.text


def test_the_adapter_rank_is_its_largest_layer_rank(tmp_path):
    assert adapter_rank(str(_adapter(tmp_path, "plain", r=4))) == 4
    assert adapter_rank(str(_adapter(tmp_path, "pattern", r=8, rank_pattern={"q_proj": 48}))) == 48
    assert adapter_rank("org/my-lora") is None  # a Hub adapter is not downloaded to read it


def test_a_base_and_its_adapters_get_one_engine_config_with_lora_on(tmp_path):
    small, large = _adapter(tmp_path, "small", r=8), _adapter(tmp_path, "large", r=24)
    config = EvaluationConfig(models=["smollm2-135m", f"smollm2-135m+{small}", f"smollm2-135m+{large}@temperature=0.2",
                                      "org/other"])
    engines = [config.engine_for(model) for model in config.models[:3]]
    assert engines[0] == engines[1] == engines[2]  # one key in the engine pool: one engine for the three
    assert engines[0].lora == LoraConfig(enabled=True, max_rank=32)  # rank 24 needs vLLM's next rank up
    assert config.engine_for("org/other") == config.engine  # no adapter of its own base: no LoRA
    assert EvaluationConfig().engine_for("smollm2-135m").lora.enabled is False


def test_a_generation_step_frees_its_engine_only_where_the_runs_next_in_process_engine_loads_other_weights(tmp_path):
    adapter, cache = _adapter(tmp_path, "small", r=8), tmp_path / "models"
    folder = cache / "SmolLM2-135M-Instruct"  # the alias's converted folder, as `resolve_model` names it
    folder.mkdir(parents=True)
    qwen, smol = JudgeConfig(model="qwen2.5-coder-1.5b"), JudgeConfig(model="smollm2-135m")
    models = ["smollm2-135m", f"smollm2-135m+{adapter}", f"{folder}@temperature=0.2", "org/other"]
    config = EvaluationConfig(models=models, judge=qwen)
    # Its adapter and the alias's folder run on the base's engine; the next model has its own; the judge another.
    assert [frees_engine_after(config, k, cache) for k in range(len(models))] == [False, False, True, True]
    assert frees_engine_after(EvaluationConfig(judge=qwen), 0, cache)
    assert not frees_engine_after(EvaluationConfig(judge=smol), 0, cache)  # the judge reuses the generator's engine
    assert not frees_engine_after(EvaluationConfig(judge=JudgeConfig(model=str(folder))), 0, cache)  # the same weights
    assert not frees_engine_after(EvaluationConfig(), 0, cache)  # judge.model auto: may be this model (AVX2-only CPU)
    assert not frees_engine_after(EvaluationConfig(judge=JudgeConfig(backend="openai", model="qwen2.5-coder-1.5b")), 0, cache)
    # A jury: the first in-process judge is the next engine.
    jury = [JudgeConfig(backend="openai", model="gpt"), smol, qwen]
    assert not frees_engine_after(EvaluationConfig(judges=jury), 0, cache)
    assert not frees_engine_after(EvaluationConfig(judge=qwen, engine={"backend": "ray"}), 0, cache)  # nothing in process


def test_lora_configs_serve_what_they_cover():
    plain, lora16, lora64 = LoraConfig(), LoraConfig(enabled=True), LoraConfig(enabled=True, max_rank=64)
    assert lora16.serves(plain) and lora64.serves(lora16) and plain.serves(plain)
    assert not plain.serves(lora16) and not lora16.serves(lora64)
    with pytest.raises(ConfigError, match="rank 600"):
        plain.covering(600)


@pytest.mark.parametrize("parameters, message", [
    ({"models": ["smollm2-135m+org/my-lora"], "engine": {"backend": "ray"}}, "cannot run with engine.backend: ray"),
    ({"judge": {"model": "smollm2-135m+org/my-lora"}}, "judge.model 'smollm2-135m+org/my-lora': an in-process judge"),
])
def test_adapters_where_they_cannot_run_are_refused_before_any_work(parameters, message):
    with pytest.raises(ConfigError, match="parameters") as error:
        parse_evaluation(parameters)
    assert message in str(error.value)


def test_an_adapter_has_its_own_checkpoint_and_a_retrained_one_a_new_one(tmp_path):
    adapter = _adapter(tmp_path)
    base_id, lora_id = "org/base", f"org/base+{adapter}"

    def checkpoint(model_id, adapter_path=None):
        return AnswerCheckpoint(tmp_path / "ckpt", model_id, "org/base", sampling=SamplingConfig(), engine=EngineConfig(),
                               adapter=adapter_path)

    base, lora = checkpoint(base_id), checkpoint(lora_id, str(adapter))
    assert base.path != lora.path and lora.path.name.startswith("base+my-adapter-")
    (adapter / "adapter_model.safetensors").write_bytes(b"retrained")
    assert checkpoint(lora_id, str(adapter)).path != lora.path


class _Engine:
    """Stands for vllm.LLM: records the keyword arguments of each build and each shutdown."""

    events: list = []

    def __init__(self, model, **kwargs):
        core = type("EngineCore", (), {"shutdown": staticmethod(lambda timeout=None: _Engine.events.append(("shutdown", model)))})
        self.llm_engine = type("LLMEngine", (), {"engine_core": core})
        _Engine.events.append(("build", model, kwargs.get("enable_lora", False), kwargs.get("max_lora_rank")))


@pytest.fixture
def fake_vllm(monkeypatch):
    import vllm

    _Engine.events = []
    monkeypatch.setattr(vllm, "LLM", _Engine)
    return _Engine.events


def test_the_base_engine_with_lora_serves_the_base_and_the_judge_without_a_rebuild(fake_vllm):
    from llm_engineering.infrastructure.vllm_engine import EnginePool

    pool, plain = EnginePool(), EngineConfig(dtype="float32")
    lora = plain.model_copy(update={"lora": LoraConfig(enabled=True)})
    held = pool.get("base", lora)
    assert pool.get("base", plain) is held  # the judge's config, without LoRA: the same engine
    pool.get("base", lora.model_copy(update={"lora": LoraConfig(enabled=True, max_rank=64)}))  # a larger rank: rebuilt
    pool.release()
    assert fake_vllm == [("build", "base", True, 16), ("shutdown", "base"), ("build", "base", True, 64), ("shutdown", "base")]


def test_an_adapter_on_a_plain_engine_config_gets_a_lora_engine_and_a_stable_id(fake_vllm, tmp_path):
    from llm_engineering.infrastructure.engines import open_engine
    from llm_engineering.infrastructure.vllm_engine import EnginePool

    pool, plain = EnginePool(), EngineConfig(dtype="float32")
    first, second = str(_adapter(tmp_path, "first", r=32)), str(_adapter(tmp_path, "second"))
    requests = []
    for adapter in (first, second, first):
        with open_engine("base", plain, pool, adapter) as engine:
            requests.append(engine._lora_request)
    with open_engine("base", plain, pool) as engine:
        assert engine._lora_request is None
    pool.release()
    assert [(r.lora_int_id, r.lora_path) for r in requests] == [(1, first), (2, second), (1, first)]
    assert fake_vllm == [("build", "base", True, 32), ("shutdown", "base")]  # rank 32 read from the adapter


def test_the_ray_backend_refuses_an_adapter(fake_vllm):
    from llm_engineering.infrastructure.engines import open_engine
    from llm_engineering.infrastructure.vllm_engine import EnginePool

    with pytest.raises(ConfigError, match="cannot run with engine.backend: ray"):
        with open_engine("base", EngineConfig(backend="ray"), EnginePool(), "org/my-lora"):
            pass
    assert fake_vllm == []
