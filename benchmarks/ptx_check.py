"""Compile every CUDA kernel of the engine to PTX (and, with ptxas on PATH or PTXAS set, to sm_90 SASS with a
register/spill report) on a machine without a GPU.

Needs numba-cuda[cu13] (NVVM). numba-cuda asks the current device for its compute capability when it
compiles a kernel that calls device functions, so get_current_device is patched (gpu.md §4.7).
Usage: python benchmarks/ptx_check.py [--ptxas] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)

import numba.cuda.dispatcher as _disp  # noqa: E402
from numba import cuda, types  # noqa: E402


class _FakeDevice:
    compute_capability = (9, 0)


_disp.get_current_device = lambda: _FakeDevice()  # type: ignore[assignment]


def arr(nd: int, dt=types.uint32, layout: str = "C"):  # type: ignore[no-untyped-def]
    return types.Array(dt, nd, layout)


def kernels() -> list[tuple[str, object, tuple]]:
    from gpu.bench import chains as bk
    from gpu.msm import accumulate, batch_add, integrate, sort

    i64, u32, u8 = types.int64, types.uint32, types.uint8
    out = [
        ("fr_mul_chain", bk.fr_mul_chain, (arr(2), arr(2), arr(2), i64)),
        ("fq_mul_chain", bk.fq_mul_chain, (arr(2), arr(2), arr(2), i64)),
        ("madd_chain_g1", bk.madd_chain, (arr(3), arr(3), arr(3), i64)),
        ("classify", sort.classify, (arr(2), arr(1, u8), arr(1))),
        ("histogram", sort.histogram, (arr(2), arr(1, u8), i64, i64, i64, arr(1))),
        ("scatter", sort.scatter, (arr(2), arr(1, u8), i64, i64, i64, arr(1), arr(1), arr(1))),
        ("scan_tiles", sort._scan_tiles, (arr(1), arr(1), arr(1), i64)),
        ("fill_u32", sort.fill_u32, (arr(1), i64)),
        ("gather_rows", integrate.gather_rows, (arr(2), i64, arr(2))),
    ]
    for g, nd in (("g1", 3), ("g2", 4)):
        out += [
            (f"sum_ones_{g}", batch_add.sum_ones, (arr(nd), arr(1, u8), i64, arr(nd))),
            (
                f"accumulate_{g}",
                accumulate.accumulate_chunks,
                (arr(nd), arr(1), arr(1), arr(1), i64, i64, arr(nd), arr(nd), arr(nd)),
            ),
            (f"reduce_heads_{g}", accumulate.reduce_heads, (arr(1), arr(1), i64, i64, i64, i64, arr(nd))),
            (f"fixup_{g}", accumulate.fixup_buckets, (arr(1), i64, i64, arr(nd), arr(nd), arr(nd))),
            (f"integrate_{g}", integrate.integrate_segments, (arr(nd), arr(1), i64, i64, i64, i64, arr(nd))),
            (f"tree_step_{g}", integrate.tree_step, (arr(nd), i64, i64, i64)),
        ]
    _ = u32
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", action="store_true", help="also run ptxas -v (registers, spills)")
    ap.add_argument("--only", default="", help="regex of kernel names")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    outdir = Path(args.out or tempfile.mkdtemp())
    outdir.mkdir(parents=True, exist_ok=True)
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas")
    failures = 0
    for name, k, sig in kernels():
        if args.only and not re.search(args.only, name):
            continue
        t0 = time.time()
        try:
            ptx, _ = cuda.compile_ptx(k.py_func, sig, cc=(9, 0), lineinfo=False)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - report every kernel
            print(f"{name:18s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            failures += 1
            continue
        dt = time.time() - t0
        path = outdir / f"{name}.ptx"
        path.write_text(ptx)
        calls = len(re.findall(r"\bcall(\.uni)?\b", ptx))
        line = f"{name:18s} ptx ok {dt:6.1f}s  {len(ptx.splitlines()):6d} lines  calls={calls}"
        if args.ptxas and ptxas:
            r = subprocess.run(
                [ptxas, "-arch=sm_90", "-v", str(path), "-o", str(path.with_suffix(".cubin"))],
                capture_output=True,
                text=True,
            )
            m = re.search(r"Used (\d+) registers", r.stderr)
            sp = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
            st = re.search(r"(\d+) bytes stack frame", r.stderr)
            line += f"  regs={m.group(1) if m else '?'} stack={st.group(1) if st else '?'}"
            line += f" spill={sp.group(1) + '/' + sp.group(2) if sp else '?'}"
            if r.returncode:
                line += f" PTXAS FAILED {r.stderr[-300:]}"
                failures += 1
        print(line, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
