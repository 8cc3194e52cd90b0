"""The pre-compiled partition circuit (porep.circuit.pce) of one sector size: record, tile, save, load.

    python benchmarks/pce_bench.py --sector-size 2KiB|8MiB|512MiB|32GiB [--cache-dir D] [--no-tile]
                                   [--evaluate]

Stages (seconds, each on its own line): recording the header and one challenge (Python synthesis plus
sorting), tiling the full partition's compact matrices, saving the template, loading it back (digest
check) and tiling again (what a warm ``partition_r1cs(pt, cache_dir)`` costs). The counts are checked
against cuzk's measured 32GiB PCE (cuzk.md §1.6) and circuit.md's totals for the smaller sizes. With
``--evaluate``, A·w, B·w, C·w of a random witness (the SpMV cost of a proof). Peak RSS is printed at the end
(run under ``/usr/bin/time -v`` for the kernel's view). The 32GiB partition needs ~8 GB of host memory
(one challenge recorded in Python ~4 GB, the compact matrices 7.5 GB, not at the same time).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

# name -> (rows incl. input rows, inputs, aux, nnz A incl. input rows, nnz B, nnz C)
EXPECTED = {
    "2KiB": (2_687_961, 40, 2_685_673, 6_420_965 + 40, 2_689_006, 5_824_682),
    "8MiB": (3_844_969, 40, 3_842_449, 9_388_413 + 40, 3_847_886, 8_234_882),
    "512MiB": (4_423_473, 40, 4_420_837, None, None, None),
    "32GiB": (130_278_869, 328, 130_169_893, 309_405_051, 130_327_340, 282_656_500),  # cuzk's extraction
}


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sector-size", required=True, choices=sorted(EXPECTED))
    ap.add_argument("--cache-dir", type=Path, help="keep the template here (default: a temporary directory)")
    ap.add_argument("--no-tile", action="store_true", help="counts from the template only (32GiB: no 7.5 GB)")
    ap.add_argument("--load-only", action="store_true", help="skip recording: load --cache-dir's template")
    ap.add_argument("--evaluate", action="store_true", help="time A.w, B.w, C.w of a random witness")
    a = ap.parse_args()

    from gpu.groth16.r1cs import CompactCSR
    from porep.circuit import pce
    from porep.circuit.stacked import CircuitShape
    from porep.prooftypes import proof_type

    pt = proof_type(f"StackedDrg{a.sector_size}V1_1")
    shape = CircuitShape.for_proof_type(pt)
    print(f"{pt.name}: {shape}", flush=True)

    if a.load_only and a.cache_dir is None:
        ap.error("--load-only needs --cache-dir")
    t0 = time.perf_counter()
    template = pce.cached_template(shape, a.cache_dir) if a.load_only else pce.record(shape)
    t_record = time.perf_counter() - t0
    lay = template.layout
    what = "load" if a.load_only else "record"
    print(f"{what} header + 1 challenge: {t_record:.2f} s ({lay.h_rows + lay.c_rows:,} rows, "
          f"{len(template.table)} distinct coefficients, RSS peak {_rss_gib():.2f} GiB)", flush=True)

    s = template.stats()
    got = (s.num_constraints_total, s.num_inputs, s.num_aux, s.nnz[0] + s.num_inputs, s.nnz[1], s.nnz[2])
    want = EXPECTED[a.sector_size]
    ok = all(w is None or g == w for g, w in zip(got, want, strict=True))
    print(f"counts: rows {got[0]:,} inputs {got[1]} aux {got[2]:,} nnz A {got[3]:,} B {got[4]:,} "
          f"C {got[5]:,} (A incl. input rows); density a_aux {s.a_aux:,} b_input {s.b_input} "
          f"b_aux {s.b_aux:,}: "
          f"{'as expected' if ok else f'EXPECTED {want}'}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        cache = a.cache_dir or Path(tmp)
        key = pce.cache_key(shape)
        if not a.load_only:
            t0 = time.perf_counter()
            path = template.save(cache / pce.CACHE_SUBDIR / key, key)
            size = sum(f.stat().st_size for f in path.iterdir())
            dt = time.perf_counter() - t0
            print(f"save template: {dt:.2f} s ({size / 2**20:.1f} MiB, {path})", flush=True)
        del template
        t0 = time.perf_counter()
        loaded = pce.cached_template(shape, cache)
        t_load = time.perf_counter() - t0
        print(f"load template (digest checked): {t_load:.3f} s", flush=True)
        if a.no_tile:
            print(f"RSS peak {_rss_gib():.2f} GiB")
            return 0 if ok else 1
        t0 = time.perf_counter()
        r1cs = loaded.r1cs()
        t_tile = time.perf_counter() - t0
        mats = [m for m in (r1cs.a, r1cs.b, r1cs.c) if isinstance(m, CompactCSR)]
        nbytes = sum(m.row_ptr.nbytes + m.cols.nbytes + m.coeff.nbytes for m in mats)
        build = "" if a.load_only else f"; build (record + tile) {t_record + t_tile:.2f} s"
        print(f"tile the partition (compact R1CS, {nbytes / 1e9:.2f} GB): {t_tile:.2f} s; load + tile "
              f"{t_load + t_tile:.2f} s{build}", flush=True)
        d = r1cs.density()
        dens = (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))
        nnz = (r1cs.a.nnz, r1cs.b.nnz, r1cs.c.nnz)
        same = dens == (s.a_aux, s.b_input, s.b_aux) and nnz == s.nnz
        print(f"tiled density/nnz {'equal' if same else 'DIFFER FROM'} the template's counts", flush=True)
        ok = ok and same
        if a.evaluate:
            import numpy as np

            rng = np.random.default_rng(1)
            w = rng.integers(0, 2**32, (r1cs.num_vars, 8), dtype=np.uint32)
            w[:, 7] &= 0x3FFFFFFF  # < r
            w[0] = 0
            w[0, 0] = 1
            for label in ("first (incl. compilation)", "second"):
                t0 = time.perf_counter()
                r1cs.evaluate(w)
                print(f"evaluate A.w, B.w, C.w, {label}: {time.perf_counter() - t0:.2f} s", flush=True)
    print(f"RSS peak {_rss_gib():.2f} GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
