"""Where a test session keeps its ZenML store, caches and outputs: in memory, where the machine has room for it."""

import os
import shutil
from pathlib import Path
from typing import Optional

IN_MEMORY = Path("/dev/shm")
# A session writes a few hundred MB there, the private Hub test's model twice (its upload and its download) included.
ROOM = 4 * 2**30


def _available_memory() -> int:
    try:
        line = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1]) * 1024


def session_root() -> Optional[str]:
    """/dev/shm (a tmpfs) where it is writable with ROOM free and the machine has twice that memory available, else
    None: the system's temporary folder. The session's ZenML store and judge cache are SQLite databases, and a session
    commits to them thousands of times: on the project's machines a commit waits about 10 ms for the disk, against
    0.05 ms in memory."""
    try:
        free = shutil.disk_usage(IN_MEMORY).free
    except OSError:
        return None
    if free >= ROOM and _available_memory() >= 2 * ROOM and os.access(IN_MEMORY, os.W_OK):
        return str(IN_MEMORY)
    return None


def in_memory(path: Path) -> bool:
    """Whether `path` lies in memory (under IN_MEMORY): removed when the session ends, or it holds that memory."""
    return IN_MEMORY in path.parents
