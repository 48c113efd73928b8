"""The embedded models' entries against their real PyPI packages (installed by `make install`): file names,
sizes and the first bytes; and the int8 judge's folder, which `make install` writes from the converted 1.5B judge."""

import json
from pathlib import Path

from safetensors import safe_open

from llm_engineering.evaluation.embedded_models import EMBEDDED_MODELS, W8A8_CONFIG, part_paths
from llm_engineering.evaluation.models import resolve_model
from llm_engineering.settings import get_settings


def test_every_embedded_model_make_install_installs_finds_its_files_and_they_start_a_gguf():
    for alias, model in EMBEDDED_MODELS.items():
        if model.int8_of is not None or model.optional:
            continue  # made from another's folder; installed by `make judges`
        with part_paths(model)[0].open("rb") as first:
            assert first.read(4) == b"GGUF", alias


def test_the_split_model_chunks_add_up_to_the_recorded_size():
    model = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
    assert sum(path.stat().st_size for path in part_paths(model)) == model.size


def test_the_int8_judge_holds_int8_projections_with_a_scale_each_and_says_so_in_its_config():
    folder = resolve_model("qwen2.5-coder-1.5b-int8", get_settings().MODEL_CACHE_DIR).path
    config = json.loads((Path(folder) / "config.json").read_text())
    assert config["quantization_config"] == W8A8_CONFIG
    with safe_open(str(Path(folder) / "model.safetensors"), "pt") as weights:
        names = set(weights.keys())
        q_proj = weights.get_slice("model.layers.0.self_attn.q_proj.weight")
        assert q_proj.get_dtype() == "I8"
        assert weights.get_slice("model.layers.0.self_attn.q_proj.weight_scale").get_shape() == [q_proj.get_shape()[0], 1]
        assert weights.get_slice("model.embed_tokens.weight").get_dtype() == "BF16"  # embeddings stay as they were
    projections = [n for n in names if n.endswith("_proj.weight")]
    assert len(projections) == 7 * config["num_hidden_layers"]
    assert all(n.removesuffix("weight") + "weight_scale" in names for n in projections)
