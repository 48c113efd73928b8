"""On-disk cache of judge replies, keyed by everything that decides a reply.

Key: judge backend and model, sampling parameters and schema, and the exact messages. Only
replies that parsed into a valid verdict are stored, so failed rows are asked again.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Optional

import diskcache


def cache_key(namespace: dict[str, Any], messages: list[dict[str, str]]) -> str:
    payload = json.dumps([namespace, messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class JudgeCache:
    """Process- and thread-safe (SQLite under diskcache); each write is committed at once,
    so an interrupted scoring run resumes where it stopped."""

    def __init__(self, directory: Path):
        self._cache = diskcache.Cache(str(directory))

    def get(self, key: str) -> Optional[dict[str, Any]]:
        return self._cache.get(key)

    def set(self, key: str, reply: dict[str, Any]) -> None:
        self._cache.set(key, reply)

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()
