"""An int8 copy of the 1.5B judge (W8A8: int8 weights per output channel, int8 activations scaled per token at run
time), for comparing it with the bf16 judge in the pipeline. No calibration data: weight scales are each row's
largest magnitude, activation scales are computed by vLLM's CPU kernel (oneDNN) at every step.

    .venv/bin/python benchmarks/int8_judge.py            # writes <MODEL_CACHE_DIR>/Qwen2.5-Coder-1.5B-Instruct-w8a8
    python tools/run.py evaluate --no-cache --config FILE   # with judge.model: that folder

The folder follows the compressed-tensors "int-quantized" format that vLLM loads (`CompressedTensorsW8A8Int8`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The decoder layers' linear projections; embeddings, norms and the output head stay in bf16.
QUANTIZED = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

QUANTIZATION_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "quantization_status": "compressed",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False},
        "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True},
    }},
    "ignore": ["lm_head"],
}


def quantize(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: (int8 weight, float32 scale of shape [out, 1])."""
    w = weight.float()
    scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-8)
    return torch.round(w / scale).clamp(-127, 127).to(torch.int8), scale


def convert(source: Path, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.suffix != ".safetensors" and item.name != "model.safetensors.index.json" and item.is_file():
            shutil.copy2(item, target / item.name)
    config = json.loads((source / "config.json").read_text())
    config["quantization_config"] = QUANTIZATION_CONFIG
    (target / "config.json").write_text(json.dumps(config, indent=2))
    tensors: dict[str, torch.Tensor] = {}
    for shard in sorted(source.glob("*.safetensors")):
        for name, tensor in load_file(shard).items():
            if name.endswith(".weight") and name.split(".")[-2] in QUANTIZED:
                tensors[name], tensors[name[: -len("weight")] + "weight_scale"] = quantize(tensor)
            else:
                tensors[name] = tensor
    save_file(tensors, target / "model.safetensors", metadata={"format": "pt"})
    return target


def main() -> None:
    from llm_engineering.evaluation.models import resolve_model
    from llm_engineering.settings import get_settings

    source = Path(resolve_model("qwen2.5-coder-1.5b", get_settings().MODEL_CACHE_DIR).path)  # the bf16 folder
    target = convert(source, source.with_name(source.name + "-w8a8"))
    size = sum(f.stat().st_size for f in target.glob("*.safetensors")) / 2**30
    print(f"{target} ({size:.2f} GiB of weights)")


if __name__ == "__main__":
    main()
