"""Field, curve and MSM benchmarks from a checkout (the device suite runs this file): the code is
gpu.bench.primitives, the same that `psagent bench field|curve|msm` runs, without typer/pydantic.

  python benchmarks/gpu_bench.py field --backend cuda --log2n 20
  python benchmarks/gpu_bench.py msm --group g1 --log2n 20 24 --cpu-check --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.config import engine_options  # noqa: E402
from gpu.options import configure  # noqa: E402

configure(engine_options())  # PSAGENT_PROVER__PTX, PSAGENT_NUMBA_CACHE, ...: before anything compiles

from gpu.bench.primitives import bench_curve, bench_field, bench_msm, environment  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["field", "curve", "msm"])
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--log2n", type=int, nargs="*", default=None)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--group", default="g1", choices=["g1", "g2"])
    ap.add_argument("--kind", default="random", choices=["random", "bits"])
    ap.add_argument("--windows", type=int, nargs="*", default=None)
    ap.add_argument("--cpu-check", action="store_true")
    ap.add_argument("--period-log2", type=int, default=24, help="distinct bases: 2^k, then repeated")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"env": environment()}
    if args.what == "field":
        out["field"] = bench_field(args.backend, (args.log2n or [20])[0], args.reps)
    elif args.what == "curve":
        out["curve"] = bench_curve(args.backend, (args.log2n or [19])[0], reps=args.reps)
    else:
        out["msm"] = [
            bench_msm(
                args.group,
                k,
                args.backend,
                max(5, args.reps),
                args.kind,
                args.windows,
                args.cpu_check,
                args.period_log2,
            )
            for k in (args.log2n or [16])
        ]
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
