"""Seal a random 8MiB sector, make its C1 and strictly verify it; print the phase times and peak RSS.

Run: ``.venv/bin/python benchmarks/seal_8mib.py [--proof StackedDrg8MiBV1_1] [--out DIR] [--json]``.
Numba compilation is timed separately (``warm-up``: the kernels run once on a 2KiB sector first), so the
phase times are steady-state; the total of one fresh ``psagent seal`` process is warm-up + seal.
Peak RSS is the process high-water mark (``ru_maxrss``) after everything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--proof", default="StackedDrg8MiBV1_1")
    ap.add_argument("--out", type=Path, default=None, help="also write the sector directory here")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    t_start = time.perf_counter()
    from gpu.arith.cpupool import cpu_threads
    from porep.fr32 import unpadded_size
    from porep.ids import prover_id
    from porep.prooftypes import proof_type
    from porep.sdr.seal import seal
    from porep.sdr.vanilla import make_c1
    from porep.sdr.vanilla_verify import verify_c1

    t_import = time.perf_counter() - t_start

    # warm-up: compile every kernel on a 2KiB sector
    t0 = time.perf_counter()
    small = seal("StackedDrg2KiBV1_1", prover_id(1000), 1, bytes(32), piece=bytes(2032))
    verify_c1(make_c1(small, bytes([1]) * 32), prover_id=prover_id(1000), sector=1)
    t_warm = time.perf_counter() - t0

    pt = proof_type(args.proof)
    piece = secrets.token_bytes(unpadded_size(pt.sector_size))
    ticket, seed = secrets.token_bytes(32), secrets.token_bytes(32)
    ticket = bytes([ticket[0] & 0x3F]) + ticket[1:]
    t0 = time.perf_counter()
    sealed = seal(pt, prover_id(1000), 42, ticket, piece=piece, miner=1000)
    t_seal = time.perf_counter() - t0
    t_save = 0.0
    if args.out is not None:
        t0 = time.perf_counter()
        sealed.save(args.out)
        t_save = time.perf_counter() - t0
    t0 = time.perf_counter()
    c1 = make_c1(sealed, seed)
    t_c1 = time.perf_counter() - t0
    t0 = time.perf_counter()
    raw = c1.to_json()
    t_json = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = verify_c1(c1, prover_id=prover_id(1000), sector=42)
    t_verify = time.perf_counter() - t0
    if not report.ok:
        raise SystemExit(f"C1 did not verify: {report.failures[:3]}")
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    result = {
        "proof": pt.name,
        "threads": cpu_threads(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "import_s": round(t_import, 2),
        "warmup_compile_s": round(t_warm, 2),
        "seal_s": round(t_seal, 2),
        "seal_phases_s": {k: round(v, 2) for k, v in sealed.timings.items()},
        "save_s": round(t_save, 2),
        "c1_s": round(t_c1, 3),
        "c1_json_s": round(t_json, 3),
        "c1_bytes": len(raw),
        "verify_s": round(t_verify, 3),
        "peak_rss_mib": round(rss_mib),
        "comm_r": sealed.info.comm_r.hex(),
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>18}: {v}")


if __name__ == "__main__":
    main()
