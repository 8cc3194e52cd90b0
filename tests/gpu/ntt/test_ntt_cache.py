"""gpu.ntt.cache: the NTT table caches are bounded in bytes, least recently used out first, newest kept."""

from __future__ import annotations

import numpy as np

from gpu.ntt import tables
from gpu.ntt.cache import BoundedCache


def test_evicts_least_recently_used_within_budget() -> None:
    c: BoundedCache[np.ndarray] = BoundedCache(budget=300)
    made: list[str] = []

    def make(k: str) -> np.ndarray:
        made.append(k)
        return np.zeros(100, np.uint8)

    for k in "abc":
        c.get_or_make(k, lambda k=k: make(k))
    c.get_or_make("a", lambda: make("a!"))  # a hit: a becomes the most recent
    c.get_or_make("d", lambda: make("d"))  # over budget: b (least recent) goes
    assert made == ["a", "b", "c", "d"] and len(c) == 3 and c.nbytes() == 300
    c.get_or_make("b", lambda: make("b"))
    assert made[-1] == "b" and len(c) == 3  # b was made again; c went


def test_newest_kept_alone_over_budget() -> None:
    c: BoundedCache[np.ndarray] = BoundedCache(budget=10)
    big = c.get_or_make(1, lambda: np.zeros(50, np.uint8))
    assert c.get_or_make(1, lambda: np.ones(1)) is big and len(c) == 1
    c.get_or_make(2, lambda: np.zeros(60, np.uint8))
    assert len(c) == 1 and c.nbytes() == 60


def test_scales_carry_their_key_and_are_cached() -> None:
    s = tables.scale(5, "coset")
    assert s.key == (5, "coset", False) and tables.scale(5, "coset") is s
    assert tables.scale(5, "coset", canonical=True).key == (5, "coset", True)
    assert tables.NO_SCALE.key != s.key
