"""The product's own code in every cached step's key: a step served from ZenML's cache was computed by the code that
runs now.

ZenML keys a cached step by its own function's source, its parameters and its inputs, not by the library code the
function calls: after an upgrade of this project, `make evaluate` would serve a summary built by the old report code,
or a test split read by the old loader. The pipelines add this digest to every step's key (`CachePolicy.cache_func`).
Nothing costly is lost by it: a step run again after a change resumes its answers from the checkpoint and its verdicts
from the judge cache, both keyed by what they depend on.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("llm_engineering", "steps", "pipelines")
SUFFIXES = {".py", ".js", ".yaml", ".yml", ".json", ".jsonl"}  # code, and the data and rubrics shipped with it
CACHE_FUNC = "llm_engineering.code_version.code_digest"  # as ZenML's CachePolicy names it


@lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 of every file of the product's code and shipped data, by path relative to the project (the same on
    every machine that runs the same version)."""
    digest = hashlib.sha256()
    for folder in FOLDERS:
        for path in sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
