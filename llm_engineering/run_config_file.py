"""A run config file read into one mapping, with the base file it extends merged under it.

ZenML's YAML has no include. A run config may name one base file with the top-level key `base`, a path relative to
the file that names it (`base: evaluating_remote.yaml`); a base may have a base of its own. The base is read first
and the file's own keys go on top: mappings merge key by key at every depth, and any other value (a list, a string,
a number, null) replaces the base's. So a config holds only what differs from its base; the cloud configs share
configs/evaluating_remote.yaml this way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from llm_engineering.evaluation.config_base import ConfigError

BASE_KEY = "base"


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`base` with `override` on top: mappings merged at every depth, any other value of `override` winning."""
    result = dict(base)
    for key, value in override.items():
        result[key] = merged(result[key], value) if isinstance(value, dict) and isinstance(result.get(key), dict) \
            else value
    return result


def _mapping(path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"Config file {path} is not valid YAML: {error}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"Config file {path} must hold a mapping at the top level.")
    return raw


def read_run_config_file(path: Path, allowed: set[str], _extended_by: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The top-level mapping of the run config at `path`, its base files merged under it; a key outside `allowed`
    (and `base`) in any of them, a missing base or a base that leads back to a file of the chain stops with a
    ConfigError that names the file and the fix."""
    raw = _mapping(path)
    unknown = sorted(set(raw) - allowed - {BASE_KEY})
    if unknown:
        raise ConfigError(f"Unknown top-level key(s) {unknown} in {path}; allowed: {sorted(allowed | {BASE_KEY})}.")
    if BASE_KEY not in raw:
        return raw
    base = raw.pop(BASE_KEY)
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"Config file {path}: `base` names the run config file it extends, a path relative to "
                          f"{path.parent}; got {base!r}.")
    base_path = path.parent / base
    chain = (*_extended_by, path.resolve())
    if base_path.resolve() in chain:
        names = " -> ".join(str(p) for p in (*chain, base_path.resolve()))
        raise ConfigError(f"Config file {path}: its base {base!r} leads back to a file that extends it ({names}); "
                          f"a config cannot extend itself: remove one of these `base` keys.")
    if not base_path.is_file():
        raise ConfigError(f"Config file {path}: its base {base!r} is not a file (looked for {base_path}); `base` is a "
                          f"path relative to the file that names it.")
    return merged(read_run_config_file(base_path, allowed, chain), raw)
