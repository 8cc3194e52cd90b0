"""What this host has free and what this process used: memory and disk, read before long jobs (``params
generate``), by ``psagent doctor`` and by admission's host budget, so that a job that cannot finish is refused
in its first second, not after hours; and a proof's peaks (the process's RSS, the device's memory in use).
The one reader of the kernel's memory figures (``/proc/meminfo``, ``/proc/self/status``, and the memory cgroup
of this process: a container's or a systemd unit's ``MemoryMax`` kills the process long before
``MemAvailable`` runs out)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CgroupMemory",
    "DeviceSampler",
    "PeakRss",
    "cgroup_memory",
    "disk_free",
    "existing_anchor",
    "gb",
    "mem_available",
    "mem_available_source",
    "mem_total",
    "nearest_existing",
    "peak_rss",
]


def _kb_field(key: str, path: Path) -> int | None:
    """Bytes of the ``key: N kB`` line of a kernel status file; None where absent or unreadable."""
    try:
        for line in path.read_text().splitlines():
            name, _, rest = line.partition(":")
            if name == key:
                return int(rest.split()[0]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


_MEMINFO = Path("/proc/meminfo")
_PROC_CGROUP = Path("/proc/self/cgroup")
_CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNLIMITED = 1 << 60  # cgroup v1 says "no limit" with a page-rounded 2^63 - 1
_FILES = {"v2": ("memory.max", "memory.current"), "v1": ("memory.limit_in_bytes", "memory.usage_in_bytes")}


@dataclass(frozen=True)
class CgroupMemory:
    """The tightest memory limit on this process's cgroup or one of its ancestors (``where``), and what counts
    against it now: the cgroup's usage less its inactive page cache (reclaimed before the limit bites)."""

    limit: int
    used: int
    where: Path

    @property
    def headroom(self) -> int:
        return max(0, self.limit - self.used)


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
        return None if text == "max" else int(text)
    except (OSError, ValueError):
        return None


def _stat_field(path: Path, *keys: str) -> int:
    """The first of ``keys`` in a ``memory.stat`` file (0 where absent)."""
    try:
        fields = dict(line.split()[:2] for line in path.read_text().splitlines() if line.strip())
    except (OSError, ValueError):
        return 0
    for k in keys:
        if k in fields:
            return int(fields[k])
    return 0


def _cgroup_dirs() -> list[tuple[Path, Path, str]]:
    """(this process's cgroup directory, its hierarchy's mount, "v2" or "v1") for the memory controller of the
    unified hierarchy and of cgroup v1: the directory is the mount itself where the process's path is not
    below it (a container without a cgroup namespace mounts its own cgroup there)."""
    try:
        lines = _PROC_CGROUP.read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        _, controllers, rel = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":
            unified = (_CGROUP_ROOT / "cgroup.controllers").exists()  # else a hybrid host's v2 mount
            mount, version = (_CGROUP_ROOT if unified else _CGROUP_ROOT / "unified"), "v2"
        elif "memory" in controllers.split(","):
            mount, version = _CGROUP_ROOT / "memory", "v1"
        else:
            continue
        here = mount / rel.strip().lstrip("/")
        out.append((here if here.is_dir() else mount, mount, version))
    return out


def cgroup_memory() -> CgroupMemory | None:
    """The memory cgroup's limit on this process (v2 ``memory.max``, v1 ``memory.limit_in_bytes``) at the
    level with the least headroom, from the process's cgroup up to its hierarchy's root; None without one."""
    best: CgroupMemory | None = None
    for here, mount, version in _cgroup_dirs():
        limit_file, usage_file = _FILES[version]
        d = here
        while True:
            limit = _read_int(d / limit_file)
            if limit is not None and limit < _UNLIMITED:
                usage = _read_int(d / usage_file) or 0
                cache = _stat_field(d / "memory.stat", "total_inactive_file", "inactive_file")
                found = CgroupMemory(limit, max(0, usage - cache), d / limit_file)
                if best is None or found.headroom < best.headroom:
                    best = found
            if d == mount or mount not in d.parents:
                break
            d = d.parent
    return best


def mem_available() -> int | None:
    """Bytes this process can still take without swapping or meeting its memory cgroup's limit: the smaller of
    the kernel's ``MemAvailable`` and the cgroup's headroom (:func:`cgroup_memory`); None where unknown."""
    avail = _kb_field("MemAvailable", _MEMINFO)
    cg = cgroup_memory()
    if cg is None:
        return avail
    return cg.headroom if avail is None else min(avail, cg.headroom)


def mem_available_source() -> str:
    """Which figure :func:`mem_available` is: ``MemAvailable`` or the memory cgroup's limit less its use."""
    avail = _kb_field("MemAvailable", _MEMINFO)
    cg = cgroup_memory()
    if cg is not None and (avail is None or cg.headroom < avail):
        return f"{cg.where}: {gb(cg.limit)} less {gb(cg.used)} in use"
    return "MemAvailable"


def mem_total() -> int | None:
    """Memory this process may use at most: the host's physical memory (``MemTotal``; the page count × page
    size where there is no ``/proc/meminfo``), or its memory cgroup's limit where that is smaller; None where
    unknown."""
    total = _kb_field("MemTotal", _MEMINFO)
    if total is None:
        try:
            total = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (ValueError, OSError, AttributeError):
            total = None
    cg = cgroup_memory()
    if cg is None:
        return total
    return cg.limit if total is None else min(total, cg.limit)


def peak_rss() -> int | None:
    """This process's peak resident bytes (the kernel's ``VmHWM``, else ``getrusage``); None where unknown."""
    peak = _kb_field("VmHWM", Path("/proc/self/status"))
    if peak is not None:
        return peak
    try:
        import resource  # Unix only: imported where it may be missing

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError):
        return None


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (``VmHWM``; Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakRss:
    """This process's peak RSS over a block: the mark reset on entry, read on exit (``peak``: None where the
    mark cannot be reset, so a figure never includes what came before the block)."""

    def __init__(self) -> None:
        self.peak: int | None = None
        self._reset = False

    def __enter__(self) -> PeakRss:
        self._reset = _reset_peak_rss()
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = peak_rss() if self._reset else None


class DeviceSampler:
    """Peak device memory in use while a proof runs (polled: CUDA keeps no peak of its own)."""

    def __init__(self, read: Callable[[], int | None], every_s: float = 0.02) -> None:
        self.read, self.every_s = read, every_s
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        try:
            v = self.read()
        except Exception:  # noqa: BLE001 - a failing reading is a missing figure, not a failed proof
            self._stop.set()
            return
        if v is not None:
            self.peak = v if self.peak is None else max(self.peak, v)

    def __enter__(self) -> DeviceSampler:
        self._sample()
        if self.peak is not None:

            def loop() -> None:
                while not self._stop.wait(self.every_s):
                    self._sample()

            self._thread = threading.Thread(target=loop, name="psagent-device-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()


def nearest_existing(path: Path) -> Path:
    """``path`` or its nearest parent that exists (as given: a relative path stays relative): where a file
    written below it would land, so whose permissions and file system decide."""
    anchor = path
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    return anchor


def existing_anchor(path: Path) -> Path:
    """``path`` or its nearest existing parent, absolute (``~`` expanded)."""
    return nearest_existing(path.expanduser().absolute())


def disk_free(path: Path) -> int:
    """Bytes an unprivileged writer can still put on the file system of ``path`` (or its nearest parent)."""
    st = os.statvfs(existing_anchor(path))
    return st.f_bavail * st.f_frsize


def gb(n: int | float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"
