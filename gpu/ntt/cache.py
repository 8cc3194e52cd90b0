"""A least-recently-used cache bounded in bytes, for the NTT's host and device tables.

Why bounded: a table is as large as the transform (twiddles at 2^27 are 2 GiB), so a process that measures or
proves at several sizes kept every size's tables for its whole life. The newest entry is always kept, even
alone over the budget, so one size's working set is never recomputed within a prove.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    """Thread-safe LRU map whose values' ``nbytes`` add up to at most ``budget`` (the newest one excepted)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: Hashable, make: Callable[[], V]) -> V:
        """The cached value, or ``make()`` stored as the newest (made outside the lock: it may be slow)."""
        with self._lock:
            v = self._items.get(key)
            if v is not None:
                self._items.move_to_end(key)
                return v
        v = make()
        with self._lock:
            self._items[key] = v
            self._items.move_to_end(key)
            total = sum(_nbytes(x) for x in self._items.values())
            while total > self.budget and len(self._items) > 1:
                _, old = self._items.popitem(last=False)
                total -= _nbytes(old)
        return v

    def nbytes(self, keep: Callable[[Hashable], bool] = lambda k: True) -> int:
        with self._lock:
            return sum(_nbytes(v) for k, v in self._items.items() if keep(k))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def _nbytes(v: object) -> int:
    n = getattr(v, "nbytes", None)
    if n is not None:
        return int(n)
    return sum(int(getattr(x, "nbytes", 0)) for x in getattr(v, "__dict__", {}).values())
