"""The roofline that `make bench` divides vLLM's throughput by: the model's FLOPs per token, and the ceiling kept
from its two measurements (`tests/support/roofline.py`, the arithmetic the benchmarks import)."""

from __future__ import annotations

import json
from pathlib import Path

from safetensors import safe_open

from llm_engineering.evaluation.models import resolve_model
from llm_engineering.settings import get_settings
from tests.support.roofline import best_ceiling, flops_per_token


def _checkpoint_shapes(folder: Path) -> dict[str, list[int]]:
    shapes = {}
    for file in folder.glob("*.safetensors"):
        with safe_open(str(file), "pt") as tensors:
            shapes.update({name: tensors.get_slice(name).get_shape() for name in tensors.keys()})
    return shapes


def test_flops_per_token_are_twice_the_weights_the_bundled_checkpoint_multiplies_by():
    folder = Path(resolve_model("smollm2-135m", get_settings().MODEL_CACHE_DIR).path)
    config = json.loads((folder / "config.json").read_text())
    shapes = _checkpoint_shapes(folder)
    projections = [shape for name, shape in shapes.items() if name.endswith("_proj.weight")]
    (embedding,) = [shape for name, shape in shapes.items() if name.endswith("embed_tokens.weight")]
    assert config["tie_word_embeddings"]  # the output head multiplies by the embedding matrix
    weights = sum(out * inp for out, inp in projections) + embedding[0] * embedding[1]

    assert flops_per_token(config) == 2 * weights


def _measurement(bf16: float, fp32: float, bandwidth: float, kernel: str) -> dict:
    return {"model": "smollm2-135m", "batch": 64, "flops_per_token": 1, "bandwidth_gb_s": bandwidth,
            "matmul_gflops": {"bfloat16": bf16, "float32": fp32},
            "matmul_kernel": {"bfloat16": kernel, "float32": kernel}}


def test_each_ceiling_is_the_higher_of_the_two_measurements_and_both_are_kept():
    before, after = _measurement(245.4, 195.3, 35.2, "torch linear"), _measurement(369.7, 166.4, 54.7, "vLLM oneDNN")

    ceiling = best_ceiling([before, after])

    assert ceiling["matmul_gflops"] == {"bfloat16": 369.7, "float32": 195.3}
    assert ceiling["matmul_kernel"] == {"bfloat16": "vLLM oneDNN", "float32": "torch linear"}
    assert ceiling["bandwidth_gb_s"] == 54.7
    assert ceiling["measurements"] == [before, after]


def test_a_failed_measurement_leaves_the_other_and_two_failed_leave_no_ceiling():
    after = _measurement(369.7, 166.4, 54.7, "vLLM oneDNN")

    assert best_ceiling([None, after])["matmul_gflops"] == after["matmul_gflops"]
    assert best_ceiling([None, None]) is None
