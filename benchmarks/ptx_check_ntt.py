"""Compile the NTT / Groth16 CUDA kernels to PTX and (with ptxas) sm_90 SASS on a machine without a GPU, and
report registers and spills. Needs numba-cuda[cu13] (NVVM); see benchmarks/ptx_check.py for
the patch it needs.
Usage: python benchmarks/ptx_check_ntt.py [--ptxas]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)

import numba.cuda.dispatcher as _disp  # noqa: E402
from numba import cuda, types  # noqa: E402


class _FakeDevice:
    compute_capability = (9, 0)


_disp.get_current_device = lambda: _FakeDevice()  # type: ignore[assignment]


def arr(nd: int, dt=types.uint32):  # type: ignore[no-untyped-def]
    return types.Array(dt, nd, "C")


def kernels() -> list[tuple[str, object, tuple]]:
    from gpu.ntt import cuda as nc

    i64, b1 = types.int64, types.boolean
    out = [
        (
            "ntt_pass",
            nc._pass,
            (
                arr(3),
                arr(2),
                i64,
                i64,
                i64,
                i64,
                b1,
                b1,
                i64,
                arr(2),
                arr(2),
                arr(2),
                i64,
                i64,
                arr(2),
                arr(2),
                arr(2),
                i64,
            ),
        ),
        ("ntt_scale", nc._scale_kernel, (arr(3), i64, b1, i64, arr(2), arr(2), arr(2), i64)),
        ("ntt_bitrev", nc._bitrev_kernel, (arr(3), i64)),
        ("h_pointwise", nc._h_pointwise, (arr(2), arr(2), arr(2), arr(2))),
    ]
    try:
        from gpu.groth16 import cuda_kernels as gk  # the prover's own kernels, when present

        out += gk.ptx_signatures(arr)
    except ImportError:
        pass
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ptxas", action="store_true")
    args = ap.parse_args()
    outdir = Path(tempfile.mkdtemp())
    ptxas = os.environ.get("PTXAS") or shutil.which("ptxas")
    failures = 0
    for name, k, sig in kernels():
        try:
            ptx, ret = cuda.compile_ptx(k.py_func, sig, cc=(9, 0))  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001
            print(f"{name:14s} FAILED {type(exc).__name__}: {str(exc)[:600]}")
            failures += 1
            continue
        path = outdir / f"{name}.ptx"
        path.write_text(ptx)
        line = f"{name:14s} ptx ok {len(ptx.splitlines()):6d} lines calls={len(re.findall(r'call', ptx))}"
        if args.ptxas and ptxas:
            r = subprocess.run(
                [ptxas, "-arch=sm_90", "-v", str(path), "-o", str(path.with_suffix(".cubin"))],
                capture_output=True,
                text=True,
            )
            m = re.search(r"Used (\d+) registers", r.stderr)
            sp = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
            line += f" regs={m.group(1) if m else '?'} spill={sp.group(1) + '/' + sp.group(2) if sp else '?'}"
            if r.returncode:
                failures += 1
                line += " PTXAS FAILED " + r.stderr[-300:]
        print(line, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
