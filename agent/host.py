"""What this host has free and what this process used: memory and disk, read before long jobs (``params
generate``), by ``psagent doctor`` and by admission's host budget, so that a job that cannot finish is refused
in its first second, not after hours; and a proof's peaks (the process's RSS, the device's memory in use).
The one reader of the kernel's memory figures (``/proc/meminfo``, ``/proc/self/status``)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "DeviceSampler",
    "PeakRss",
    "disk_free",
    "existing_anchor",
    "gb",
    "mem_available",
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


def mem_available() -> int | None:
    """Bytes the kernel can hand out without swapping (``MemAvailable``); None where unknown."""
    return _kb_field("MemAvailable", _MEMINFO)


def mem_total() -> int | None:
    """Physical memory of this host (``MemTotal``; the page count × page size where there is no
    ``/proc/meminfo``); None where unknown."""
    total = _kb_field("MemTotal", _MEMINFO)
    if total is not None:
        return total
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


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
