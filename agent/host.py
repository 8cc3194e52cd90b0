"""What this host has free: memory and disk, read before long jobs (``params generate``) and by ``psagent
doctor``, so that a job that cannot finish is refused in its first second, not after hours."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["disk_free", "existing_anchor", "gb", "mem_available", "mem_total"]


def _meminfo(key: str, path: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, rest = line.partition(":")
            if name == key:
                return int(rest.split()[0]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def mem_available() -> int | None:
    """Bytes the kernel can hand out without swapping (``MemAvailable``); None where unknown."""
    return _meminfo("MemAvailable")


def mem_total() -> int | None:
    return _meminfo("MemTotal")


def existing_anchor(path: Path) -> Path:
    """``path`` or its nearest existing parent (where a file written below it would land)."""
    anchor = path.expanduser().absolute()
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    return anchor


def disk_free(path: Path) -> int:
    """Bytes an unprivileged writer can still put on the file system of ``path`` (or its nearest parent)."""
    st = os.statvfs(existing_anchor(path))
    return st.f_bavail * st.f_frsize


def gb(n: int | float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
