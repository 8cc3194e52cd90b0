"""The host's available memory, for the long tests that skip where it is too small."""

from __future__ import annotations


def available_gib() -> float:
    """``MemAvailable`` of /proc/meminfo in GiB (0 where absent)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return 0.0
