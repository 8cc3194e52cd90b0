#!/usr/bin/env python3
"""P16: the Snap update circuit's pre-compiled R1CS (``porep.snap.pce``) and vectorised witness
(``porep.snap.witness``) of one size: record, save, load, tile; then one partition's full assignment.

    .venv/bin/python benchmarks/snap_bench.py --size 2KiB|8MiB|32GiB [--cache-dir D [--load-only]]
        [--repeat 3] [--no-tile] [--no-witness] [--check] [--source made|synth] [--partition K]

Each stage on its own line (seconds): recording the header and one challenge shape-only (Python synthesis
plus sorting), saving the template, loading it back (digest check), tiling the partition's compact matrices
(``--no-tile``: counts from the template only). The counts are checked against Rust's published (2KiB, 32GiB)
and derived (8MiB) totals (docs snap.md §6.4). Then the witness of a request of that size: ``made`` (2KiB,
8MiB: a CC sector sealed by ``porep.sdr.seal`` and updated by ``porep.snap.update``, what ``psagent snap
make`` does) or ``synth`` (``porep.snap.synth.synth_request``, the sparse update: the only 32GiB source).
First call (the node's bit program and Numba compilation), then ``--repeat`` warm calls: wall, process CPU
time (all threads), constraints per CPU-second. ``--check``: the witness satisfies the tiled R1CS. Peak RSS at
the end (run under ``/usr/bin/time -v`` for the kernel's view).
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

# name -> (update proof id, constraints per partition): Rust's published 2KiB / 32GiB, the derived 8MiB
SIZES = {"2KiB": (0, 1_705_039), "8MiB": (1, 10_007_503), "32GiB": (3, 81_049_499)}


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _cpu() -> float:
    return time.process_time()  # this process, all threads


def _made_request(size: str) -> object:
    """A CC sector sealed by our sealer, updated with random data (``psagent snap make``'s steps)."""
    from market.proofdata import Snap
    from porep.fr32 import pad_to_sector, unpadded_size
    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.snap.update import update_sector

    nbytes = {"2KiB": 2048, "8MiB": 8 << 20}[size]
    sealed = seal(f"StackedDrg{size}V1_1", prover_id(1000), 5, bytes([3]) * 32, piece=b"")
    u = update_sector(sealed, pad_to_sector(random.Random(81).randbytes(unpadded_size(nbytes) // 2), nbytes))
    return Snap(SIZES[size][0], u.comm_r_old, u.comm_r_new, u.comm_d_new,
                tuple(p.to_bytes() for p in u.partition_proofs()))


def _synth_request(size: str) -> object | None:
    """The sparse update's request (``porep.snap.synth``), or None where that module is not there."""
    try:
        from porep.snap.synth import synth_request
    except ImportError as exc:
        print(f"witness: no synthetic request source ({exc}); skipped", flush=True)
        return None
    return synth_request(size)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[1])
    ap.add_argument("--size", required=True, choices=list(SIZES))
    ap.add_argument("--cache-dir", type=Path, help="keep the template here (default: a temporary directory)")
    ap.add_argument("--repeat", type=int, default=3, help="warm witness runs")
    ap.add_argument("--no-tile", action="store_true", help="counts from the template only")
    ap.add_argument("--load-only", action="store_true", help="skip recording: load --cache-dir's template")
    ap.add_argument("--no-witness", action="store_true")
    ap.add_argument("--check", action="store_true", help="the witness satisfies the tiled R1CS")
    ap.add_argument("--source", choices=["made", "synth"], help="request source (default: made up to 8MiB)")
    ap.add_argument("--partition", type=int, default=0)
    a = ap.parse_args()
    if a.repeat < 0 or a.partition < 0:
        ap.error("--repeat and --partition must not be negative")
    if a.check and a.no_tile:
        ap.error("--check needs the tiled R1CS (drop --no-tile)")
    if a.load_only and a.cache_dir is None:
        ap.error("--load-only needs --cache-dir")

    from gpu.groth16.r1cs import CompactCSR
    from porep.circuit.pce import CACHE_SUBDIR, PartitionTemplate
    from porep.snap import pce
    from porep.snap.params import update_proof_type

    pid, want = SIZES[a.size]
    pt = update_proof_type(pid)
    c = pt.constants
    if a.partition >= c.partitions:
        ap.error(f"--partition must be below {c.partitions} for {a.size}")
    print(f"{pt.name}: {c.partitions} partitions x {c.challenges} challenges, {c.apex_leaves} apex leaves, "
          f"h {c.h}, tree R {c.tree_r}; cpu threads {os.cpu_count()}, load {os.getloadavg()[0]:.2f}",
          flush=True)

    t0, c0 = time.perf_counter(), _cpu()
    template = pce.cached_template(pt, a.cache_dir) if a.load_only else pce.record(pt)
    lay = template.layout
    what = "load" if a.load_only else "record"
    print(f"PCE {what} header + 1 challenge: {time.perf_counter() - t0:.2f} s wall, {_cpu() - c0:.2f} CPU-s "
          f"({lay.h_rows + lay.c_rows:,} rows, {len(template.table)} distinct coefficients, RSS peak "
          f"{_rss_gib():.2f} GiB)", flush=True)
    s = template.stats()
    verdict = "as published/derived" if s.num_constraints == want else f"EXPECTED {want:,}"
    print(f"counts: constraints {s.num_constraints:,} ({verdict}), "
          f"inputs {s.num_inputs}, aux {s.num_aux:,}, nnz A {s.nnz[0]:,} B {s.nnz[1]:,} C {s.nnz[2]:,}; "
          f"density a_aux {s.a_aux:,} b_input {s.b_input} b_aux {s.b_aux:,}; with the input rows "
          f"{s.num_constraints_total:,} -> domain 2^{(s.num_constraints_total - 1).bit_length()}", flush=True)

    r1cs = None
    with tempfile.TemporaryDirectory() as tmp:
        cache = a.cache_dir or Path(tmp)
        key = pce.cache_key(pt)
        t0 = time.perf_counter()
        path = cache / CACHE_SUBDIR / key
        if not a.load_only:
            template.save(path, key)
        size = sum(f.stat().st_size for f in path.iterdir())
        what = "entry" if a.load_only else f"save: {time.perf_counter() - t0:.2f} s"
        print(f"PCE {what} ({size / 2**20:.1f} MiB at {path})", flush=True)
        del template
        t0 = time.perf_counter()
        template = PartitionTemplate.load(path, key)
        print(f"PCE load (digest checked): {time.perf_counter() - t0:.2f} s", flush=True)
        if not a.no_tile:
            t0, c0 = time.perf_counter(), _cpu()
            r1cs = template.r1cs()
            mats = [m for m in (r1cs.a, r1cs.b, r1cs.c) if isinstance(m, CompactCSR)]
            nbytes = sum(int(m.row_ptr.nbytes + m.cols.nbytes + m.coeff.nbytes) for m in mats)
            print(f"PCE tile {r1cs.num_constraints:,} rows: {time.perf_counter() - t0:.2f} s wall, "
                  f"{_cpu() - c0:.2f} CPU-s ({nbytes / 2**30:.2f} GiB compact; RSS peak "
                  f"{_rss_gib():.2f} GiB)", flush=True)
        del template
        if not a.check:
            r1cs = None

        if a.no_witness:
            print(f"peak RSS {_rss_gib():.2f} GiB", flush=True)
            return 0
        source = a.source or ("synth" if a.size == "32GiB" else "made")
        t0 = time.perf_counter()
        snap = _made_request(a.size) if source == "made" else _synth_request(a.size)
        if snap is None:
            print(f"peak RSS {_rss_gib():.2f} GiB", flush=True)
            return 0
        print(f"request ({source}): {time.perf_counter() - t0:.2f} s", flush=True)

        from porep.snap.witness import update_assignment

        k = a.partition
        runs = []
        for i in range(1 + a.repeat):
            t0, c0 = time.perf_counter(), _cpu()
            w = update_assignment(snap, k, cache_dir=cache)
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            what = "first (bit program, compilation)" if i == 0 else f"warm {i}"
            print(f"witness partition {k} {what}: {wall:.3f} s wall, {cpu:.3f} CPU-s, "
                  f"{want / cpu / 1e6:.1f} M constraints per CPU-s, {want / wall / 1e6:.1f} M/s wall",
                  flush=True)
            if i:
                runs.append((wall, cpu))
            if i < a.repeat:
                del w
        if runs:
            wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
            print(f"witness best warm: {wall:.3f} s wall, {cpu:.3f} CPU-s -> {want / cpu / 1e6:.1f} M "
                  f"constraints per CPU-s (P6 target >= 20 M/s per core)", flush=True)
        if r1cs is not None:
            t0 = time.perf_counter()
            if "rows_per_chunk" in inspect.signature(r1cs.check).parameters:  # chunked: no A.w, B.w, C.w kept
                r1cs.check(w, rows_per_chunk=1 << 20)
            else:
                r1cs.check(w)
            print(f"R1CS check of the witness: satisfied ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"peak RSS {_rss_gib():.2f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
