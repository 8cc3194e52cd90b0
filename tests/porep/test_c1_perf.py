"""Performance smoke test of the C1 codec on a few-MB document (the 39 MB 32GiB P7 measurement is
``psagent bench c1-parse --generate 32GiB``, recorded in BENCHMARKS.md, not a CI test)."""

from __future__ import annotations

import time

from porep.c1 import KeyOrder, parse_c1
from porep.c1_synth import synth_c1_json


def test_parse_validate_reserialise_3mb() -> None:
    """NI 512MiB: 13 partitions × 2 challenges, ~3.4 MB. The 32GiB document is ~11x larger; P7 allows 3 s
    there, so 3 s here is a bound only a pathological slowdown (a pure-Python fallback) would break."""
    raw = synth_c1_json("StackedDrg512MiBV1_2_Feat_NonInteractivePoRep", seed=5, order=KeyOrder.GO)
    assert 3_000_000 < len(raw) < 4_000_000
    parse_c1(raw)  # warm the layout cache, as a long-running agent has it
    start = time.perf_counter()
    c1 = parse_c1(raw)
    out = c1.to_json()
    elapsed = time.perf_counter() - start
    assert out == raw
    assert elapsed < 3.0, f"{len(raw)} bytes took {elapsed:.2f} s"
