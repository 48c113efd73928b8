"""A full disk named: where it happened, what was being written, and what to do."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def naming_a_full_disk(where: str, writing: str, then: str) -> Iterator[None]:
    """A write that fails for lack of space (ENOSPC) inside the block raises `No space left on the disk of
    <where> to <writing>: free space there <then>` instead; any other error passes unchanged."""
    try:
        yield
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        raise OSError(errno.ENOSPC, f"No space left on the disk of {where} to {writing}: free space there {then}") from None
