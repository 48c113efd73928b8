"""Resolve a model name (alias, local folder or Hub id) to something vLLM can load.

Embedded aliases are converted once to a Hugging Face folder in the model cache (`embedded_models`).
A model id reads `BASE[+ADAPTER][@key=value,...]`: a LoRA adapter (a PEFT folder or Hub id)
applied to the base without merging, and generation settings of its own.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from llm_engineering.evaluation.embedded_models import EMBEDDED_MODELS, ModelError, converted_folder, model_folder

logger = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_hub_id(name: str) -> bool:
    """`org/name`, as the Hub names a repo (a path that does not exist may read so too: callers check paths first)."""
    return bool(_HUB_ID.match(name))


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str  # what the user asked for: alias, path or Hub id
    path: str  # what vLLM loads: a local folder or a Hub id
    name: str  # short name, used for results repos: `<workspace>/<name>-results`
    adapter: Optional[str] = None  # a LoRA adapter on `path`: a local PEFT folder or a Hub id


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


def split_adapter(name: str) -> tuple[str, Optional[str]]:
    """`BASE+ADAPTER` -> (BASE, ADAPTER); a name without `+` (or an existing path) -> (name, None).
    Give it the name without a variant's settings (`split_variant`'s first part)."""
    if "+" not in name or Path(name).expanduser().exists():
        return name, None
    # At the first '+': aliases and Hub ids never contain one, so only a local base folder could.
    base, _, adapter = name.partition("+")
    if not base or not adapter:
        raise ModelError(f"{name!r}: write a model with a LoRA adapter as BASE+ADAPTER, the adapter a PEFT folder "
                         f"or a Hub id (e.g. smollm2-135m+./my-adapter).")
    return base, adapter


def _last_part(name: str) -> str:
    return Path(name.rstrip("/")).name


def short_name(model_id: str) -> str:
    """The name used in results repos: the embedded model's name, else the id's last part;
    an adapter adds its last part (`SmolLM2-135M-Instruct+my-adapter`), a variant its settings
    (`SmolLM2-135M-Instruct@temperature=0.2`)."""
    name, overrides = split_variant(model_id)
    if overrides:
        return short_name(name) + "@" + model_id.rpartition("@")[2]
    base, adapter = split_adapter(model_id)
    if adapter:
        return f"{short_name(base)}+{_last_part(adapter)}"
    if model_id in EMBEDDED_MODELS:
        return EMBEDDED_MODELS[model_id].name
    return _last_part(model_id)


def file_label(model_id: str) -> str:
    """The model id's part that names files (checkpoints): its last part, with the base's before an adapter's."""
    base, adapter = split_adapter(split_variant(model_id)[0])
    return f"{_last_part(base)}+{_last_part(model_id)}" if adapter else _last_part(model_id)


def adapter_config(adapter: str) -> Optional[dict[str, Any]]:
    """A local adapter's `adapter_config.json`; None for a Hub id (read when vLLM downloads it, not here).
    Says what is wrong with a path that is no PEFT adapter folder."""
    path = Path(adapter).expanduser()
    if not path.exists():
        if _HUB_ID.match(adapter):
            return None
        raise ModelError(f"LoRA adapter {adapter!r}: no such folder, and not a Hub id of the form 'org/name'.")
    config = path / "adapter_config.json"
    if not config.is_file():
        raise ModelError(f"LoRA adapter {path} is not a PEFT adapter folder (no adapter_config.json): give a folder "
                         f"written by PeftModel.save_pretrained, or a Hub id.")
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError) as error:
        raise ModelError(f"LoRA adapter {path}: cannot read adapter_config.json ({error}).") from None
    if not isinstance(data, dict) or str(data.get("peft_type", "LORA")).upper() != "LORA":
        raise ModelError(f"LoRA adapter {path}: adapter_config.json is not a LoRA adapter's "
                         f"(peft_type {data.get('peft_type') if isinstance(data, dict) else None!r}).")
    return data


def adapter_rank(adapter: str) -> Optional[int]:
    """The largest LoRA rank of a local adapter (`r`, or a layer's own in `rank_pattern`); None for a Hub id."""
    config = adapter_config(adapter)
    if config is None:
        return None
    return max([int(config.get("r") or 8), *(int(r) for r in (config.get("rank_pattern") or {}).values())])


def _resolve_adapter(adapter: str, base: ResolvedModel) -> str:
    """What vLLM loads for `adapter`: a local folder's absolute path, or the Hub id."""
    config = adapter_config(adapter)
    if config is None:
        return adapter
    # Names only: a copy or a quantised base under another name is fine, so this warns and goes on;
    # vLLM refuses an adapter whose shapes do not fit the base.
    trained_on = _last_part(str(config.get("base_model_name_or_path") or ""))
    if trained_on and trained_on.lower() not in {base.name.lower(), _last_part(base.path).lower()}:
        logger.warning("LoRA adapter %s was trained on %r, and is applied to %s.", adapter, trained_on, base.name)
    return str(Path(adapter).expanduser().resolve())


def weights_location(model_id: str, cache_dir: Path) -> str:
    """Where the engine for `model_id` loads its base's weights from, as `resolve_model` would say, found without
    converting or downloading anything: an alias's folder in `cache_dir`, a local folder resolved, else (a Hub id,
    a folder that is not here) the base as written. An alias and its folder give one location."""
    base = split_adapter(split_variant(model_id)[0])[0]
    if base in EMBEDDED_MODELS:
        return str(model_folder(EMBEDDED_MODELS[base], cache_dir).resolve())
    path = Path(base).expanduser()
    return str(path.resolve()) if path.exists() else base


def resolve_model(model_id: str, cache_dir: Path) -> ResolvedModel:
    """Alias -> cached converted folder; local folder -> itself; `org/name` -> Hub id.
    A variant (`name@temperature=0.2`) resolves to its model's weights and keeps its own id;
    `BASE+ADAPTER` to the base's weights and the adapter beside them (never merged)."""
    name, overrides = split_variant(model_id)
    if overrides:
        model = resolve_model(name, cache_dir)
        return ResolvedModel(model_id=model_id, path=model.path, name=short_name(model_id), adapter=model.adapter)
    base_id, adapter = split_adapter(model_id)
    if adapter:
        base = resolve_model(base_id, cache_dir)
        return ResolvedModel(model_id=model_id, path=base.path, name=short_name(model_id),
                             adapter=_resolve_adapter(adapter, base))
    if model_id in EMBEDDED_MODELS:
        embedded = EMBEDDED_MODELS[model_id]
        return ResolvedModel(model_id=model_id, path=str(converted_folder(embedded, cache_dir)), name=embedded.name)
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
