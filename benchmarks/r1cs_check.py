#!/usr/bin/env python3
"""P15: a sparse C1's witness (``c1 synth``) satisfies the partition R1CS, every partition, in bounded memory.

    python benchmarks/r1cs_check.py --sector-size 32GiB [--cache-dir D] [--partitions 0-9] [--mutate]
        [--rows-per-chunk N] [--spmv-partitions 0] [--miner 1000 --sector 1 --ticket HEX --seed HEX]

Stages, each timed and printed on its own line: the C1 synthesised like ``psagent c1 synth`` (sparse sector,
C1 arrays, the strict vanilla check, the C1 model the prover reads); the partition R1CS from the PCE
(``partition_r1cs(pt, cache_dir)``: recorded and saved on the first run, loaded and tiled afterwards); then
per partition the vectorised witness (``partition_assignment``) into ONE reused buffer and the chunked check
(``R1CS.unsatisfied``: the witness turned to Montgomery form in that same buffer, then A.w, B.w, C.w and
a*b == c a row block at a time). Every partition must have no unsatisfied constraint (exit 1 otherwise).
``--spmv-partitions``: for those partitions also the plain CPU SpMV (``gpu.groth16.r1cs.spmv``, the host
fallback of the device's A.w, B.w, C.w) over all rows, in row blocks into one small reused output.
``--mutate``: the witness of each partition gets one value + 1 (an aux variable picked from the partition
number) before the check, which must then FAIL and name the constraint (its a, b, c recomputed in Python
integers, and whether it reads that variable); exit 1 if a mutation goes unnoticed.

Memory at 32GiB: the compact matrices ~7.5 GB + the witness 4.2 GB (converted in place) + per-block flags
and coefficient copies (~30 MB): ~12 GB, printed at the end as the peak RSS (``ru_maxrss``). The PCE and
witness templates are kept under ``--cache-dir`` (default /tmp/psagent-r1cs-check, kept between runs: the
first 32GiB run records the PCE, minutes; later runs load it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from _stages import line, now_rss_gib, rss_gib, timed

DEFAULT_CACHE = Path("/tmp/psagent-r1cs-check")


def _partitions(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise argparse.ArgumentTypeError(f"partitions: {text!r} is not like 0-9 or 0,3,5")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


def _hex32(text: str) -> bytes:
    try:
        b = bytes.fromhex(text)
    except ValueError:
        b = b""
    if len(b) != 32:
        raise argparse.ArgumentTypeError(f"{text!r} is not 32 bytes of hex")
    return b


def spmv_blocks(r1cs: object, wm: np.ndarray, rows: int) -> None:
    """A.w, B.w, C.w of every row by the public ``spmv`` (Montgomery), ``rows`` rows at a time into one
    reused output (a row-range view of each compact matrix: row_ptr sliced, entries shared)."""
    from gpu.groth16.r1cs import CompactCSR, spmv

    m = r1cs.num_constraints  # type: ignore[attr-defined]
    out = np.empty((min(rows, m), 8), np.uint32)
    for mat in (r1cs.a, r1cs.b, r1cs.c):  # type: ignore[attr-defined]
        assert isinstance(mat, CompactCSR)
        table = mat.mont_table()
        for lo in range(0, m, rows):
            hi = min(m, lo + rows)
            view = CompactCSR(mat.row_ptr[lo : hi + 1], mat.cols, mat.coeff, mat.table, _mont_table=table)
            spmv(view, wm, out[: hi - lo])


def _uses(r1cs: object, row: int, col: int) -> str:
    names = []
    for name in ("A", "B", "C"):
        mat = getattr(r1cs, name.lower())
        lo, hi = int(mat.row_ptr[row]), int(mat.row_ptr[row + 1])
        if (np.asarray(mat.cols[lo:hi]) == col).any():
            names.append(name)
    return "+".join(names) or "none"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--sector-size", required=True, choices=["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"])
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--partitions", type=_partitions, default=None, help="e.g. 0-9 or 0,3 (default: all)")
    ap.add_argument("--mutate", action="store_true", help="bump one witness value per partition: must FAIL")
    ap.add_argument("--rows-per-chunk", type=int, default=1 << 20)
    ap.add_argument("--spmv-partitions", type=_partitions, default=[], help="also time the plain SpMV")
    ap.add_argument("--no-strict", action="store_true", help="skip the strict vanilla check of the C1")
    ap.add_argument("--miner", type=int, default=1000)
    ap.add_argument("--sector", type=int, default=1)
    ap.add_argument("--ticket", type=_hex32, default=bytes([2]) * 32)
    ap.add_argument("--seed", type=_hex32, default=bytes([3]) * 32)
    a = ap.parse_args()
    if a.rows_per_chunk < 1:
        ap.error("--rows-per-chunk must be >= 1")

    from gpu.arith.cpupool import cpu_threads
    from gpu.arith.fields import fr_from_ints, fr_to_ints
    from gpu.arith.fields.constants import R_MODULUS
    from porep.c1 import SealCommitPhase1Output
    from porep.circuit import pce
    from porep.circuit.partition import partition_assignment, partition_r1cs
    from porep.circuit.stacked import CircuitShape
    from porep.ids import prover_id
    from porep.prooftypes import proof_type
    from porep.sdr.sparse import sparse_c1_arrays, sparse_sector
    from porep.sdr.vanilla_verify import verify_c1

    pt = proof_type(f"StackedDrg{a.sector_size}V1_1")
    npart = pt.partitions
    parts = a.partitions if a.partitions is not None else list(range(npart))
    if parts and parts[-1] >= npart:
        ap.error(f"{pt.name} has partitions 0-{npart - 1}")
    line(f"{pt.name}: partitions {parts} of {npart}, {cpu_threads()} CPU threads, cache {a.cache_dir}, "
         f"rows per chunk {a.rows_per_chunk:,}{', MUTATED witnesses' if a.mutate else ''}")
    a.cache_dir.mkdir(parents=True, exist_ok=True)

    prover = prover_id(a.miner)
    t0 = time.perf_counter()
    sparse = sparse_sector(pt, prover, a.sector, a.ticket, a.seed)
    arrays = sparse_c1_arrays(sparse)
    t_synth = time.perf_counter() - t0
    line(f"C1 synth (sparse sector + C1 arrays, as `psagent c1 synth`): {t_synth:.2f} s, "
         f"comm_r {sparse.comm_r.hex()}")
    if not a.no_strict:
        report, dt, _ = timed(verify_c1, arrays, prover_id=prover, sector=a.sector)
        line(f"strict vanilla check: {'ok' if report.ok else 'FAILED'} in {dt:.2f} s")
        if not report.ok:
            return 1
    c1, dt, _ = timed(SealCommitPhase1Output.from_arrays, arrays)
    line(f"C1 model: {dt:.2f} s")

    shape = CircuitShape.for_proof_type(pt)
    cold = not (a.cache_dir / pce.CACHE_SUBDIR / pce.cache_key(shape) / "meta.json").exists()
    r1cs, dt, cpu = timed(partition_r1cs, pt, a.cache_dir)
    nnz = (r1cs.a.nnz, r1cs.b.nnz, r1cs.c.nnz)
    line(f"PCE {'record + save + tile (cold)' if cold else 'load + tile (warm)'}: {dt:.2f} s wall, "
         f"{cpu:.2f} s CPU; rows {r1cs.num_constraints:,} (+{r1cs.num_inputs} input rows), aux "
         f"{r1cs.num_aux:,}, nnz {nnz[0]:,} / {nnz[1]:,} / {nnz[2]:,}; RSS {now_rss_gib():.2f} GiB")

    buf = np.empty((r1cs.num_vars, 8), np.uint32)
    buf.fill(0)  # touch it now: the first witness would otherwise pay its page faults
    results = []
    for k in parts:
        _, t_w, c_w = timed(partition_assignment, c1, k, out=buf, cache_dir=a.cache_dir)
        note = ""
        var = -1
        if a.mutate:
            var = r1cs.num_inputs + (k * 7_919_993 + 1_234_567) % r1cs.num_aux
            old = fr_to_ints(buf[var : var + 1])[0]
            buf[var] = fr_from_ints([(old + 1) % R_MODULUS])[0]
            note = f", aux variable {var:,} bumped {old} -> {(old + 1) % R_MODULUS}"
        bad, t_c, c_c = timed(r1cs.unsatisfied, buf, rows_per_chunk=a.rows_per_chunk, work=buf)
        if len(bad):
            row = int(bad[0])
            av, bv, cv = r1cs.row_values(row, buf)
            what = (f"UNSATISFIED: constraint {row:,} (a*b != c: a={av:#x}, b={bv:#x}, c={cv:#x}; "
                    f"reads the variable in {_uses(r1cs, row, var) if var >= 0 else '-'})")
        else:
            what = "all constraints satisfied"
        spmv_note = ""
        if k in a.spmv_partitions:
            _, t_s, c_s = timed(spmv_blocks, r1cs, buf, 1 << 22)
            spmv_note = f"; SpMV A.w, B.w, C.w {t_s:.2f} s wall / {c_s:.2f} s CPU"
        line(f"partition {k}: witness {t_w:.2f} s wall / {c_w:.2f} s CPU; check {t_c:.2f} s wall / "
             f"{c_c:.2f} s CPU{spmv_note}; {what}{note}; RSS {now_rss_gib():.2f} GiB")
        results.append((k, t_w, t_c, bool(len(bad))))
    failed = [k for k, *_, b in results if b]
    if a.mutate:
        ok = len(failed) == len(results)
        verdict = f"mutations found in {len(failed)}/{len(results)} partitions"
    else:
        ok = not failed
        verdict = f"{len(results) - len(failed)}/{len(results)} partitions satisfy the R1CS"
    if results:
        tw = [r[1] for r in results]
        tc = [r[2] for r in results]
        line(f"witness {min(tw):.2f}-{max(tw):.2f} s, check {min(tc):.2f}-{max(tc):.2f} s per partition")
    line(f"{verdict}: {'OK' if ok else 'FAILED'}; peak RSS {rss_gib():.2f} GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
