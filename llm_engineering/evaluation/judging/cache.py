"""On-disk cache of judge replies, keyed by everything that decides a reply.

Key: judge backend and model, sampling parameters and schema, and the exact messages. Only
replies that parsed into a valid verdict are stored, so failed rows are asked again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any, Optional

import diskcache

logger = logging.getLogger(__name__)


def cache_key(namespace: dict[str, Any], messages: list[dict[str, str]]) -> str:
    payload = json.dumps([namespace, messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


class JudgeCache:
    """Process- and thread-safe (SQLite under diskcache); each write is committed at once,
    so an interrupted scoring run resumes where it stopped."""

    def __init__(self, directory: Path, read: bool = True):
        self._read = read  # False: every verdict asked again (--no-cache), the new ones stored
        try:
            self._cache = self._open(directory)
        except sqlite3.DatabaseError as error:  # a damaged file: keep it for a post-mortem, start an empty cache
            aside = Path(directory).with_name(f"{Path(directory).name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            Path(directory).rename(aside)
            logger.warning("The judge cache %s could not be read (%s): moved aside to %s; verdicts are asked again "
                           "and cached afresh.", directory, error, aside)
            self._cache = self._open(directory)

    @staticmethod
    def _open(directory: Path) -> diskcache.Cache:
        cache = diskcache.Cache(str(directory))
        try:
            len(cache)  # reads the database: a damaged one fails here, not mid-run
        except sqlite3.DatabaseError:
            cache.close()
            raise
        return cache

    def get(self, key: str) -> Optional[dict[str, Any]]:
        return self._cache.get(key) if self._read else None

    def set(self, key: str, reply: dict[str, Any]) -> None:
        self._cache.set(key, reply)

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()
