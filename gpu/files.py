"""Files that appear whole or not at all: written under a temporary name beside the target, then renamed.

Why one helper: parameter files, cached circuits, witness programs, records and the agent's gate file are all
read by a later process that must never see half of one (a process killed mid-write, a full disk). A rename
within one directory is atomic on POSIX, so a reader sees the old file or the new one. ``fsync``: the bytes
are on disk before the rename (parameters, for a power loss); caches may skip it.

Imports nothing of the engine (layer 0): porep's caches and the agent use it too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_dir", "atomic_file", "atomic_write"]


def _tmp_beside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


@contextmanager
def atomic_file(path: str | os.PathLike[str], *, fsync: bool = False) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through; it replaces ``path`` when the block ends without an error,
    and is removed otherwise. The directory is made when missing."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _tmp_beside(final)
    try:
        with open(tmp, "wb") as f:
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes | str, *, fsync: bool = False) -> None:
    """``data`` (text is UTF-8) as the whole content of ``path``, atomically."""
    with atomic_file(path, fsync=fsync) as f:
        f.write(data.encode() if isinstance(data, str) else data)


@contextmanager
def atomic_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A fresh directory to fill; it replaces ``path`` (an older one is removed) when the block ends without
    an error, and is removed otherwise."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".tmp", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
