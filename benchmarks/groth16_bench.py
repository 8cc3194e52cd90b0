"""NTT / H-step / Groth16-prove benchmarks without the CLI's dependencies (typer, pydantic), for the GPU
machine: the same code as `psagent bench ntt` / `psagent bench prove` (gpu.bench.ntt, gpu.bench.groth16).

  python benchmarks/groth16_bench.py ntt --backend cuda --sizes 20,22,24,27 --h-step --json out.json
  python benchmarks/groth16_bench.py prove --backend cuda --constraints 1048560 --real-setup --export DIR
Exit status 1 if a check fails (NTT mismatch, a proof that does not verify, a wrong input accepted).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _kernel_cache  # noqa: E402,F401  (PSAGENT_NUMBA_CACHE as an engine option, before gpu compiles)


def _progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("ntt")
    n.add_argument("--sizes", default="20,22")
    n.add_argument("--backend", default="cuda")
    n.add_argument("--reps", type=int, default=5)
    n.add_argument("--warmup", type=int, default=1)
    n.add_argument("--order", default="NR")
    n.add_argument("--h-step", action="store_true")
    n.add_argument("--check-max", type=int, default=22)
    n.add_argument("--json")
    p = sub.add_parser("prove")
    p.add_argument("--constraints", type=int, required=True)
    p.add_argument("--backend", default="cuda")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--public-inputs", type=int, default=4)
    p.add_argument("--rng-seed", type=int, default=0)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--real-setup", dest="fake", action="store_false", default=None)
    g.add_argument("--pseudo-random-bases", dest="fake", action="store_true")
    p.add_argument("--export")
    p.add_argument("--json")
    p.add_argument("--circuits", type=int, default=1)
    p.add_argument("--host-memory", choices=("pinned", "pageable"), default="pinned")
    a = ap.parse_args()
    ok = True
    if a.cmd == "ntt":
        from gpu.bench.ntt import bench_h_step, bench_ntt, format_rows
        from gpu.ntt import Order

        rows = []
        for logn in [int(x) for x in a.sizes.split(",")]:
            rows.append(bench_ntt(logn, backend=a.backend, reps=a.reps, warmup=a.warmup, order=Order(a.order),
                                  check_max_log=a.check_max))
            if a.h_step:
                rows.append(bench_h_step(logn, backend=a.backend, reps=a.reps, warmup=a.warmup,
                                         check_max_log=a.check_max))
            print(format_rows(rows[-2 if a.h_step else -1 :]), flush=True)
            if a.json:
                Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
        ok = not any("MISMATCH" in r["check"] for r in rows)
    else:
        from gpu.bench.groth16 import bench_prove, format_row

        row = bench_prove(a.constraints, backend=a.backend, reps=a.reps, warmup=a.warmup,
                          public_inputs=a.public_inputs, seed=a.rng_seed, pseudo_random=a.fake,
                          export=Path(a.export) if a.export else None,
                          progress=_progress, circuits=a.circuits, host_memory=a.host_memory)
        print(format_row(row), flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(row, indent=1) + "\n")
        v = row["verified"]
        ok = "/" not in v or (v.split("/")[0] == v.split("/")[1] and bool(row.get("wrong_input_rejected")))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
