#!/usr/bin/env python3
"""P6/P11: vectorised witness throughput of one PoRep partition (``porep.circuit.witness``), per CPU core.

For each size, a C1 of that type (synthetic from ``porep.c1.synth`` by default: random values of the exact
shape — the witness does the same work, but the R1CS is not satisfied by it, so nothing is checked; or a
sealed one with ``--sealed`` for 2KiB / 8MiB) is turned into partition 0's full assignment: first the setup
(recording and compiling each gadget's template: once per process and shape), then ``--repeat`` warm runs.
Reports wall time, process CPU time (all threads), constraints per CPU-second ("per core"), peak RSS and the
load average (the 2-core development machine is shared). ``--challenges N`` keeps the partition's first N
challenges (the same shape otherwise: every challenge is the same work), for a 32GiB partition on a machine
without the ~5 GB its full vector needs.

    .venv/bin/python benchmarks/witness_bench.py [--size 2KiB --size 8MiB --size 32GiB] [--repeat 3]
        [--challenges N] [--sealed] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

from gpu.arith.cpupool import cpu_threads
from porep.c1.synth import synth_c1
from porep.circuit.stacked import CircuitShape, partition_witness
from porep.circuit.witness import assignment, layout
from porep.prooftypes import proof_type

# Rows incl. bellperson's input constraints (circuit.md §10; asserted by tests/porep/circuit/test_stacked.py
# and the PCE tests)
TOTALS = {
    "StackedDrg2KiBV1_1": 2_687_961,
    "StackedDrg8MiBV1_1": 3_844_969,
    "StackedDrg512MiBV1_1": 4_423_473,
    "StackedDrg32GiBV1_1": 130_278_869,
    "StackedDrg64GiBV1_1": 131_186_177,
}


def _sealed(name: str) -> object:
    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.sdr.vanilla import make_c1

    size = proof_type(name).sector_size
    piece = random.Random(8).randbytes(size * 127 // 128)
    return make_c1(seal(name, prover_id(1000), 3, bytes([4]) * 32, piece=piece), bytes([9]) * 32)


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _constraints(name: str, shape: CircuitShape, full: int) -> int | None:
    """Rows incl. input rows of ``shape`` (possibly cut to fewer challenges than the type's partition)."""
    total = TOTALS.get(name)
    if total is None:
        return None
    header = 571 + 4  # header rows + its 4 input rows (ONE, replica id, comm_d, comm_r)
    per = (total - header) // full
    return header + per * shape.challenges


def bench(size: str, repeat: int, sealed: bool, challenges: int | None) -> dict[str, object]:
    name = size if size.startswith("StackedDrg") else f"StackedDrg{size}V1_1"
    t = time.perf_counter()
    c1 = _sealed(name) if sealed else synth_c1(name, seed=1)
    full, _ = partition_witness(c1, 0)
    n = full.challenges if challenges is None else min(challenges, full.challenges)
    shape = CircuitShape(full.tree_d_depth, full.tree_arities, full.layers, n)
    made = time.perf_counter() - t
    w0, c0 = time.perf_counter(), time.process_time()
    lay = layout(shape)
    setup = (time.perf_counter() - w0, time.process_time() - c0)
    out = np.empty((lay.num_inputs + lay.num_aux, 8), np.uint32)
    runs = []
    for _ in range(repeat + 1):  # the first run also compiles the Numba kernels (once per process)
        load = os.getloadavg()[0]
        t, c = time.perf_counter(), time.process_time()
        _, pw = partition_witness(c1, 0)  # timed too: partition_assignment = this + assignment
        pw.challenges = pw.challenges[:n]
        assignment(shape, pw, out=out)
        runs.append((time.perf_counter() - t, time.process_time() - c, load))
    rows = _constraints(name, shape, full.challenges)
    warm = runs[1:] or runs
    best = min(warm, key=lambda r: r[1])
    return {
        "type": name,
        "c1": "sealed" if sealed else "synthetic (R1CS not satisfied)",
        "c1_seconds": round(made, 2),
        "challenges": f"{n} of {full.challenges}",
        "num_aux": lay.num_aux,
        "constraints": rows,
        "threads": cpu_threads(),
        "setup_wall_s": round(setup[0], 2),
        "setup_cpu_s": round(setup[1], 2),
        "first_wall_s": round(runs[0][0], 3),
        "first_cpu_s": round(runs[0][1], 3),
        "best_warm_wall_s": round(min(r[0] for r in warm), 3),
        "best_warm_cpu_s": round(best[1], 3),
        "warm_wall_s": [round(r[0], 3) for r in warm],
        "warm_cpu_s": [round(r[1], 3) for r in warm],
        "load_1min": [round(r[2], 2) for r in runs],
        "constraints_per_cpu_s": round(rows / best[1]) if rows else None,
        "constraints_per_wall_s": round(rows / min(r[0] for r in warm)) if rows else None,
        "peak_rss_gib": round(_rss_gib(), 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--size", action="append", help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB or a full type name")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sealed", action="store_true", help="seal a real sector (2KiB / 8MiB) instead")
    ap.add_argument("--challenges", type=int, default=None, help="keep the partition's first N challenges")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    sizes = args.size or ["2KiB", "8MiB"]
    results = []
    for size in sizes:
        r = bench(size, args.repeat, args.sealed, args.challenges)
        results.append(r)
        print(json.dumps(r), flush=True)
        wall, cpu = r["best_warm_wall_s"], r["best_warm_cpu_s"]
        print(
            f"| {r['type']} ({r['challenges']} challenges) | {r['constraints']} rows | wall {wall} s | "
            f"CPU {cpu} s | {r['constraints_per_cpu_s']} per CPU-s | setup {r['setup_wall_s']} s | "
            f"{r['peak_rss_gib']} GiB | load {r['load_1min']} |",
            file=sys.stderr,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
