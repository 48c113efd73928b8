"""A really full disk: a small tmpfs mounted for one test (root with CAP_SYS_ADMIN, as on the project's machines)."""

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def small_disk(path: Path, size: str = "8k") -> Iterator[Path]:
    """`path` as a tmpfs of `size` for the block; the test is skipped where mounting is not allowed."""
    path.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"no small disk: mounting a tmpfs needs root with CAP_SYS_ADMIN ({mounted.stderr.strip()})")
    try:
        yield path
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)
