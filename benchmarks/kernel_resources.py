"""Registers, spills, local memory, shared memory and SASS instruction counts of every CUDA kernel in gpu/,
compiled for the H200 (sm_90a) on a machine without a GPU, the way numba-cuda builds them there.

Why: device time is scarce; a kernel change can be judged by its resources and instruction mix before a device
call confirms it (issue P21), and a spill or stack frame is a performance lead.

How it matches the device: numba-cuda builds a kernel as ``_Kernel(py_func, argtypes, **targetoptions)`` and
links it with ``CUDACodeLibrary.get_cubin()`` for the current device, whose cc becomes ``(9, 0, "a")``; with
nvJitLink present ``lto`` defaults to True, so NVVM emits LTO-IR and nvJitLink runs ptxas with the kernel's
``max_registers`` as ``-maxrregcount``. This script runs exactly that code with two patches (gpu.md §4.7):
``get_current_device`` answers cc (9, 0) and ``_ensure_cc`` answers (9, 0, "a") instead of asking a context,
and the linker is made verbose so ptxas reports its resources. Calibration against device-reported figures
(BENCHMARKS.md): madd_chain 167 registers (this route: 167; NVVM PTX + standalone ptxas: 168), Fq/Fr product
(row-wise CIOS) 48/32 registers (both routes).

Signatures are those of the launches (dtype, ndim, layout of every argument; Python ints are int64, bools are
booleans), each written next to its call site below; tests/gpu/test_kernel_resources.py checks that every
``@kernel`` in gpu/ has a row and that the simulator's launches of the proving path type exactly as listed.

Needs numba-cuda with NVVM, NVRTC and nvJitLink (pip: nvidia-nvvm, nvidia-cuda-nvrtc, nvidia-nvjitlink; the
``cu13`` extra of numba-cuda) and, for SASS counts, nvdisasm (pip: nvidia-cuda-nvdisasm) on PATH, in NVDISASM,
or in the nvidia wheel's bin/. ``--ptxas-route`` also compiles NVVM's PTX with a standalone ptxas (PATH or
PTXAS; the route of the older ptx_check figures) for comparison. On a GPU machine ``--device-check`` also
builds each kernel through its real dispatcher and puts the driver's registers / local / shared bytes beside
this route's (benchmarks/device_suite.sh, stage ptx): one device call confirms the whole table.

Usage: python benchmarks/kernel_resources.py [--only REGEX] [--md FILE] [--json FILE] [--sass-dir DIR]
                                             [--ptxas-route] [--no-probes] [--device-check]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CC = (9, 0, "a")  # what numba-cuda's _ensure_cc gives an H100/H200 (arch sm_90a)


@dataclass(frozen=True)
class Spec:
    """One compiled variant of a kernel: ``sig`` in a small notation (``u32[3]`` = C-contiguous 3-D uint32
    array, ``u8[1]``, ``i64``, ``u32``, ``b1``), ``stage`` where the 32GiB path runs it, ``launch`` its call
    site."""

    name: str
    kernel: str  # "module:function"
    sig: str
    stage: str  # prove (per proof) | load (params to device, once) | setup (params generate) | bench
    launch: str
    heavy: bool = False  # Montgomery-heavy: SASS families in the table


def _group(g: str) -> tuple[int, int]:
    """(ndim of affine / XYZZ point arrays): G1 (n, 2, 12) / (n, 4, 12); G2 (n, 2, 2, 12) / (n, 4, 2, 12)."""
    return (3, 3) if g == "g1" else (4, 4)


def specs() -> list[Spec]:
    ctx = "gpu/msm/context.py MSMContext"
    out = [
        # ---- MSM sort (group-independent); launches in MSMContext._msm_cuda / _pass and sort.exclusive_scan
        Spec("classify", "gpu.msm.sort:classify", "u32[2], u8[1], u32[1]", "prove", f"{ctx}._msm_cuda"),
        Spec("fill_u32", "gpu.msm.sort:fill_u32", "u32[1], i64", "prove", f"{ctx}._pass"),
        Spec(
            "histogram",
            "gpu.msm.sort:histogram",
            "u32[2], u8[1], i64, i64, i64, i64, u32[1]",
            "prove",
            f"{ctx}._pass",
        ),
        Spec(
            "scan_tiles",
            "gpu.msm.sort:_scan_tiles",
            "u32[1], u32[1], u32[1], i64",
            "prove",
            "sort.exclusive_scan",
        ),
        Spec(
            "add_tile_offsets",
            "gpu.msm.sort:_add_tile_offsets",
            "u32[1], u32[1], i64",
            "prove",
            "sort.exclusive_scan",
        ),
        Spec(
            "scatter",
            "gpu.msm.sort:scatter",
            "u32[2], u8[1], i64, i64, i64, i64, u32[1], u32[1], u32[1]",
            "prove",
            f"{ctx}._pass",
        ),
        Spec(
            "gather_rows",
            "gpu.msm.integrate:gather_rows",
            "u32[2], i64, u32[2]",
            "prove",
            "context._rows_to_host",
        ),
    ]
    for g in ("g1", "g2"):
        a, x = _group(g)
        A, X = f"u32[{a}]", f"u32[{x}]"
        out += [
            Spec(
                f"sum_ones_{g}",
                "gpu.msm.batch_add:sum_ones",
                f"{A}, u8[2], i64, {X}",
                "prove",
                f"{ctx}._pass",
            ),
            Spec(
                f"accumulate_{g}",
                "gpu.msm.accumulate:accumulate_chunks",
                f"{A}, u32[1], u32[1], u32[1], i64, i64, {X}, {X}, {X}",
                "prove",
                f"{ctx}._pass",
                heavy=True,
            ),
            Spec(
                f"reduce_heads_{g}",
                "gpu.msm.accumulate:reduce_heads",
                f"u32[1], u32[1], i64, i64, i64, i64, {X}",
                "prove",
                f"{ctx}._pass",
            ),
            Spec(
                f"fixup_{g}",
                "gpu.msm.accumulate:fixup_buckets",
                f"u32[1], i64, i64, {X}, {X}, {X}",
                "prove",
                f"{ctx}._pass",
            ),
            Spec(
                f"integrate_{g}",
                "gpu.msm.integrate:integrate_segments",
                f"{X}, u32[1], i64, i64, i64, i64, {X}",
                "prove",
                f"{ctx}._pass",
            ),
            Spec(
                f"tree_step_{g}",
                "gpu.msm.integrate:tree_step",
                f"{X}, i64, i64, i64",
                "prove",
                "integrate.tree_sum",
            ),
        ]
    out += [
        # ---- H step (gpu/ntt/cuda.py host entry points, called by prover.h_step_device)
        Spec(
            "ntt_pass",
            "gpu.ntt.cuda:_pass",
            "u32[3], u32[2], i64, i64, i64, i64, b1, b1, "
            "i64, u32[2], u32[2], u32[2], i64, i64, u32[2], u32[2], u32[2], i64",
            "prove",
            "gpu/ntt/cuda.py butterflies",
            heavy=True,
        ),
        Spec(
            "ntt_scale",
            "gpu.ntt.cuda:_scale_kernel",
            "u32[3], i64, b1, i64, u32[2], u32[2], u32[2], i64",
            "prove",
            "gpu/ntt/cuda.py scale (logn = 0 only)",
        ),
        Spec(
            "ntt_bitrev",
            "gpu.ntt.cuda:_bitrev_kernel",
            "u32[3], i64",
            "setup",
            "gpu/ntt/cuda.py bitrev_permute (NN/RR orders)",
        ),
        Spec(
            "h_pointwise",
            "gpu.ntt.cuda:_h_pointwise",
            "u32[2], u32[2], u32[2], u32[2]",
            "bench",
            "gpu/ntt/cuda.py h_pointwise (prover.h_step_device: bench ntt's three-buffer H step)",
        ),
        # ---- prover's small kernels (gpu/groth16/prover.py)
        Spec(
            "zero_rows",
            "gpu.groth16.cuda_kernels:_zero_rows_kernel",
            "u32[2], i64",
            "prove",
            "prover.upload_abc",
        ),
        Spec(
            "witness_gather",
            "gpu.groth16.cuda_kernels:_gather_kernel",
            "u32[2], u32[1], u32[2]",
            "prove",
            "prover._msms_cuda (A/B scalars of a pass)",
        ),
        Spec(
            "gather_bitrev",
            "gpu.groth16.cuda_kernels:_gather_bitrev_kernel",
            "u32[2], i64, i64, u32[2]",
            "prove",
            "prover._msms_cuda (H scalars of a streamed pass)",
        ),
        Spec("h_mul", "gpu.groth16.cuda_kernels:_mul_kernel", "u32[2], u32[2]", "prove", "prover._h_step"),
        Spec(
            "h_sub_scale",
            "gpu.groth16.cuda_kernels:_sub_scale_kernel",
            "u32[2], u32[2], u32[2]",
            "prove",
            "prover._h_step",
        ),
        # ---- device SpMV (gpu/groth16/spmv_cuda.py); coeff width = the host CompactCSR's (index_dtype)
    ]
    for w in ("u8", "u16", "u32"):
        out.append(
            Spec(
                f"spmv_{w}",
                "gpu.groth16.spmv_cuda:_spmv_kernel",
                f"u32[1], u32[1], {w}[1], u32[2], u32[2], u32[2]",
                "prove",
                "DeviceMatrix.spmv",
                heavy=(w == "u16"),
            )
        )
    out.append(
        Spec(
            "spmv_tail",
            "gpu.groth16.spmv_cuda:_tail_kernel",
            "u32[2], u32[2], i64, i64, b1",
            "prove",
            "DeviceR1CS.evaluate_into",
        )
    )
    for g in ("g1", "g2"):
        a, x = _group(g)
        A, X = f"u32[{a}]", f"u32[{x}]"
        out += [
            # ---- params load (params_device._section) and setup (fixed_base_cuda.CudaFixedBase)
            Spec(
                f"decode_zcash_{g}",
                "gpu.groth16.params_device:decode_zcash",
                f"u32[2], i64, u32[1], b1, i64, {A}, u32[1]",
                "load",
                "params_device._section",
            ),
            Spec(
                f"comb_xyzz_{g}",
                "gpu.groth16.fixed_base_cuda:comb_xyzz",
                f"{A}, i64, i64, i64, u32[2], i64, {X}",
                "setup",
                "CudaFixedBase.zcash_chunks",
                heavy=True,
            ),
            Spec(
                f"xyzz_to_zcash_{g}",
                "gpu.groth16.fixed_base_cuda:xyzz_to_zcash",
                f"{X}, i64, i64, {X}, u32[2]",
                "setup",
                "CudaFixedBase.zcash_chunks",
            ),
        ]
    out += [
        # ---- throughput benchmarks (gpu/bench/chains.py: psagent bench field / curve, madd_quick.py)
        Spec(
            "fr_mul_chain",
            "gpu.bench.chains:fr_mul_chain",
            "u32[2], u32[2], u32[2], i64",
            "bench",
            "gpu/bench/primitives.py",
            heavy=True,
        ),
        Spec(
            "fq_mul_chain",
            "gpu.bench.chains:fq_mul_chain",
            "u32[2], u32[2], u32[2], i64",
            "bench",
            "gpu/bench/primitives.py",
            heavy=True,
        ),
        Spec(
            "madd_chain",
            "gpu.bench.chains:madd_chain",
            "u32[3], u32[3], u32[3], i64",
            "bench",
            "benchmarks/madd_quick.py",
            heavy=True,
        ),
    ]
    return out


# ------------------------------------------------------------------------------------------- signatures

_DT = {"u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "i64": "int64", "b1": "boolean"}


def parse_sig(sig: str) -> tuple[Any, ...]:
    """The numba argument types of a Spec signature."""
    from numba import types

    out = []
    for tok in (t.strip() for t in sig.split(",")):
        m = re.fullmatch(r"(u8|u16|u32|u64|i64|b1)(?:\[(\d)\])?", tok)
        if not m:
            raise ValueError(f"bad signature token {tok!r}")
        dt = getattr(types, _DT[m.group(1)])
        out.append(types.Array(dt, int(m.group(2)), "C") if m.group(2) else dt)
    return tuple(out)


def sig_of_types(argtypes: Any) -> str:
    """A launch's numba argument types in Spec notation (tests: the simulator's launches)."""
    from numba import types

    inv = {getattr(types, v): k for k, v in _DT.items()}
    toks = []
    for t in argtypes:
        if isinstance(t, types.Array):
            lay = "" if t.layout == "C" else f"<{t.layout}>"
            toks.append(f"{inv.get(t.dtype, str(t.dtype))}[{t.ndim}]{lay}")
        else:
            toks.append(inv.get(t, str(t)))
    return ", ".join(toks)


# ------------------------------------------------------------------------------------------- compiling


def _patch_numba() -> None:
    """Compile without a device (gpu.md §4.7) and make the linker report ptxas's resources."""
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    import numba.cuda.dispatcher as disp
    from numba.cuda import codegen
    from numba.cuda.cudadrv import driver

    class _Dev:
        compute_capability = CC[:2]
        id = 0

    disp.get_current_device = lambda: _Dev()  # type: ignore[assignment]
    codegen.CUDACodeLibrary._ensure_cc = lambda self, cc: cc if cc is not None else CC  # type: ignore[method-assign]
    orig = driver._Linker._get_linker_options

    def verbose(self: Any, ptx: Any) -> Any:
        return dataclasses.replace(orig(self, ptx), verbose=True)

    driver._Linker._get_linker_options = verbose  # type: ignore[method-assign]


def _tool(name: str, env: str) -> str | None:
    if os.environ.get(env):
        return os.environ[env]
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia  # the pip wheels' namespace package

        for root in nvidia.__path__:
            for cand in Path(root).glob(f"*/bin/{name}"):
                return str(cand)
    except ImportError:
        pass
    return None


@dataclass
class Result:
    name: str
    kernel: str
    sig: str
    stage: str
    launch: str
    max_registers: int | None = None
    lto: bool | None = None
    regs: int | None = None
    stack: int | None = None  # entry function's stack frame (bytes per thread)
    cumulative_stack: int | None = None  # with its callees (the local memory a thread reserves)
    spill_stores: int | None = None
    spill_loads: int | None = None
    callee_spill_stores: int = 0
    smem: int = 0
    barriers: int | None = None
    calls: int = 0  # CALL instructions in the SASS (noinline device functions)
    loop_ldl: int = 0  # LDL / STL inside loops (static)
    loop_stl: int = 0
    sass_total: int | None = None
    sass: dict[str, int] = field(default_factory=dict)
    ptxas_route: dict[str, Any] | None = None
    device: dict[str, int] | None = None  # --device-check: what the driver reports for the dispatcher's build
    compile_s: float = 0.0
    error: str | None = None

    @property
    def local_bytes(self) -> int:
        return max(self.cumulative_stack or 0, self.stack or 0)

    @property
    def flagged(self) -> bool:
        return bool(self.local_bytes or self.spill_stores or self.spill_loads or self.callee_spill_stores)


_FAMILIES = (
    ("IMAD", lambda op: op == "IMAD" or op.startswith("IMAD.IADD") or op.startswith("IMAD.SHL")),
    ("IMAD.WIDE", lambda op: op.startswith("IMAD.WIDE")),
    ("IMAD.HI", lambda op: op.startswith("IMAD.HI")),
    ("IMAD.X", lambda op: op.startswith("IMAD.X")),
    ("IMAD.MOV", lambda op: op.startswith("IMAD.MOV")),
    ("IADD3", lambda op: op == "IADD3"),
    ("IADD3.X", lambda op: op.startswith("IADD3.X")),
    ("LOP3", lambda op: op.startswith("LOP3")),
    ("SHF", lambda op: op.startswith("SHF")),
    ("ISETP", lambda op: op.startswith("ISETP")),
    ("SEL", lambda op: op == "SEL"),
    ("MOV", lambda op: op == "MOV"),
    ("LDG", lambda op: op.startswith("LDG")),
    ("STG", lambda op: op.startswith("STG")),
    ("LDS", lambda op: op.startswith("LDS")),
    ("STS", lambda op: op.startswith("STS")),
    ("LDL", lambda op: op.startswith("LDL")),
    ("STL", lambda op: op.startswith("STL")),
    ("BRA", lambda op: op.startswith("BRA")),
    ("CALL", lambda op: op.startswith("CALL")),
)
_SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")


def sass_counts(text: str) -> tuple[int, dict[str, int]]:
    """(instructions, counts per family) of nvdisasm output; NOP padding is not counted."""
    ops = Counter(m.group(1) for m in _SASS_LINE.finditer(text))
    ops.pop("NOP", None)
    fam = {name: sum(n for op, n in ops.items() if test(op)) for name, test in _FAMILIES}
    fam["IMAD*"] = sum(n for op, n in ops.items() if op.startswith("IMAD"))
    return sum(ops.values()), fam


_LABEL = re.compile(r"^(\.L_x_\d+):", re.M)
_ADDR = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*)")


def local_ops_in_loops(text: str) -> tuple[int, int]:
    """(LDL, STL) inside loops: between a label and a later branch back to it (a spill there is paid on
    every iteration, e.g. once per madd in the accumulation)."""
    labels: dict[str, int] = {}
    insns: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        lab = _LABEL.match(line.strip())
        if lab:
            pending.append(lab.group(1))
            continue
        m = _ADDR.search(line)
        if m:
            addr = int(m.group(1), 16)
            for name in pending:
                labels[name] = addr
            pending = []
            insns.append((addr, m.group(2)))
    loops = []
    for addr, ins in insns:
        t = re.search(r"BRA[^`]*`\((\.L_x_\d+)\)", ins)
        if t and t.group(1) in labels and labels[t.group(1)] <= addr:
            loops.append((labels[t.group(1)], addr))
    inside = [ins for addr, ins in insns if any(lo <= addr <= hi for lo, hi in loops)]
    ops = [_SASS_LINE.search(f"/*0000*/ {ins}") for ins in inside]
    names = [m.group(1) for m in ops if m]
    return sum(n.startswith("LDL") for n in names), sum(n.startswith("STL") for n in names)


def parse_log(log: str, entry: str) -> dict[str, Any]:
    """ptxas's resource lines for the entry function (and the spills of its callees) from a linker log."""
    out: dict[str, Any] = {"callee_spill_stores": 0}
    blocks = re.split(r"ptxas info\s+: Function properties for ", log)[1:]
    for blk in blocks:
        fname = blk.split()[0]
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", blk)
        if not m:
            continue
        if fname == entry:
            out["stack"], out["spill_stores"], out["spill_loads"] = map(int, m.groups())
            u = re.search(r"Used (\d+) registers(.*)", blk)
            if u:
                out["regs"] = int(u.group(1))
                rest = u.group(2)
                b = re.search(r"used (\d+) barriers", rest)
                s = re.search(r"(\d+) bytes smem", rest)
                c = re.search(r"(\d+) bytes cumulative stack size", rest)
                out["barriers"] = int(b.group(1)) if b else 0
                out["smem"] = int(s.group(1)) if s else 0
                out["cumulative_stack"] = int(c.group(1)) if c else out["stack"]
        else:
            out["callee_spill_stores"] += int(m.group(2))
    return out


def compile_one(
    disp: Any,
    argtypes: tuple[Any, ...],
    nvdisasm: str | None,
    ptxas: str | None,
    sass_dir: Path | None,
    name: str,
) -> dict[str, Any]:
    """Build ``disp``'s kernel for ``argtypes`` as the device does; its resources and SASS counts."""
    from numba.cuda.dispatcher import _Kernel

    t0 = time.perf_counter()
    k = _Kernel(disp.py_func, argtypes, **disp.targetoptions)
    lib = k.library
    cubin = lib.get_cubin()
    code = cubin.code if hasattr(cubin, "code") else bytes(cubin)
    info: dict[str, Any] = {"compile_s": time.perf_counter() - t0, "lto": bool(lib._lto)}
    info.update(parse_log(lib._linkerinfo_cache[CC], k.entry_name))
    with tempfile.TemporaryDirectory() as tmp:
        cpath = Path(tmp) / f"{name}.cubin"
        cpath.write_bytes(code)
        if nvdisasm:
            r = subprocess.run([nvdisasm, "-c", str(cpath)], capture_output=True, text=True)
            if r.returncode == 0:
                info["sass_total"], info["sass"] = sass_counts(r.stdout)
                info["calls"] = info["sass"].get("CALL", 0)
                info["loop_ldl"], info["loop_stl"] = local_ops_in_loops(r.stdout)
                if sass_dir is not None:
                    (sass_dir / f"{name}.sass").write_text(r.stdout)
        if ptxas:
            ppath = Path(tmp) / f"{name}.ptx"
            ppath.write_text(lib.get_asm_str(cc=CC))
            mr = disp.targetoptions.get("max_registers")
            cmd = [
                ptxas,
                f"-arch=sm_{CC[0]}{CC[1]}{CC[2]}",
                "-v",
                str(ppath),
                "-o",
                str(Path(tmp) / "p.cubin"),
            ]
            r = subprocess.run(cmd + ([f"-maxrregcount={mr}"] if mr else []), capture_output=True, text=True)
            p = parse_log(r.stderr, k.entry_name)
            info["ptxas_route"] = {
                key: p.get(key) for key in ("regs", "stack", "spill_stores", "spill_loads")
            }
    return info


def _load(kernel: str) -> Any:
    import importlib

    mod, attr = kernel.split(":")
    return getattr(importlib.import_module(mod), attr)


# ------------------------------------------------------------------------------------------- probes


def probe_kernels() -> list[tuple[str, str, Any, str, Any, str]]:
    """(name, what, kernel with the operation, signature, kernel without it, ops per launch): the SASS
    difference is the operation's static instruction count (loads of unused operands included, listed)."""
    from numba import cuda

    from gpu.arith.fields import fq_load, fq_mul, fq_store, fr_load, fr_mul, fr_store
    from gpu.curves._generated.g1 import g1_xyzz_dbl_affine
    from gpu.curves.generic import (
        load_affine,
        load_xyzz,
        store_xyzz,
        xyzz_add,
        xyzz_add_affine,
        xyzz_from_affine,
    )
    from gpu.ntt.kernels_common import dif_butterfly, dit_butterfly

    @cuda.jit
    def fq_with(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            fq_store(out, i, fq_mul(fq_load(a, i), fq_load(b, i)))

    @cuda.jit
    def fq_without(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            fq_store(out, i, fq_load(a, i))

    @cuda.jit
    def fr_with(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            fr_store(out, i, fr_mul(fr_load(a, i), fr_load(b, i)))

    @cuda.jit
    def fr_without(a, b, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            fr_store(out, i, fr_load(a, i))

    @cuda.jit
    def madd_with(acc, q, out):
        i = cuda.grid(1)
        if i < acc.shape[0]:
            store_xyzz(out, i, xyzz_add_affine(load_xyzz(acc, i), load_affine(q, i)))

    @cuda.jit
    def madd_without(acc, q, out):
        i = cuda.grid(1)
        if i < acc.shape[0]:
            store_xyzz(out, i, load_xyzz(acc, i))

    @cuda.jit
    def add_with(acc, q, out):
        i = cuda.grid(1)
        if i < acc.shape[0]:
            store_xyzz(out, i, xyzz_add(load_xyzz(acc, i), load_xyzz(q, i)))

    @cuda.jit
    def dbl_with(acc, q, out):
        i = cuda.grid(1)
        if i < acc.shape[0]:
            store_xyzz(out, i, g1_xyzz_dbl_affine(load_affine(q, i)))

    @cuda.jit
    def dbl_without(acc, q, out):
        i = cuda.grid(1)
        if i < acc.shape[0]:
            store_xyzz(out, i, xyzz_from_affine(load_affine(q, i)))

    @cuda.jit
    def bfly_dit_with(x, w, out):
        i = cuda.grid(1)
        if 2 * i + 1 < x.shape[0]:
            u, v = dit_butterfly(fr_load(x, 2 * i), fr_load(x, 2 * i + 1), fr_load(w, i))
            fr_store(out, 2 * i, u)
            fr_store(out, 2 * i + 1, v)

    @cuda.jit
    def bfly_dif_with(x, w, out):
        i = cuda.grid(1)
        if 2 * i + 1 < x.shape[0]:
            u, v = dif_butterfly(fr_load(x, 2 * i), fr_load(x, 2 * i + 1), fr_load(w, i))
            fr_store(out, 2 * i, u)
            fr_store(out, 2 * i + 1, v)

    @cuda.jit
    def bfly_without(x, w, out):
        i = cuda.grid(1)
        if 2 * i + 1 < x.shape[0]:
            fr_store(out, 2 * i, fr_load(x, 2 * i))
            fr_store(out, 2 * i + 1, fr_load(x, 2 * i + 1))

    a2 = "u32[2], u32[2], u32[2]"
    return [
        ("fr_mul", "Fr Montgomery product (8 limbs)", fr_with, a2, fr_without, "1 mul + 8 LDG of b"),
        ("fq_mul", "Fq Montgomery product (12 limbs)", fq_with, a2, fq_without, "1 mul + 12 LDG of b"),
        (
            "butterfly_dit",
            "NTT DIT butterfly (u + vw, u - vw)",
            bfly_dit_with,
            a2,
            bfly_without,
            "1 mul, add, sub + 8 LDG of w",
        ),
        (
            "butterfly_dif",
            "NTT DIF butterfly (u + v, (u - v)w)",
            bfly_dif_with,
            a2,
            bfly_without,
            "1 mul, add, sub + 8 LDG of w",
        ),
        (
            "madd_g1",
            "G1 XYZZ += affine (8M + 2S)",
            madd_with,
            "u32[3], u32[3], u32[3]",
            madd_without,
            "1 madd + 24 LDG of q",
        ),
        (
            "madd_g2",
            "G2 XYZZ += affine",
            madd_with,
            "u32[4], u32[4], u32[4]",
            madd_without,
            "1 madd + 48 LDG of q",
        ),
        (
            "dbl_affine_g1",
            "G1 2 * affine -> XYZZ (madd's P == Q fallback)",
            dbl_with,
            "u32[3], u32[3], u32[3]",
            dbl_without,
            "1 doubling",
        ),
        (
            "add_g1",
            "G1 XYZZ + XYZZ (12M + 2S)",
            add_with,
            "u32[3], u32[3], u32[3]",
            madd_without,
            "1 add + 48 LDG of q",
        ),
    ]


# ------------------------------------------------------------------------------------------- report

_SHOW = (
    "IMAD*",
    "IMAD",
    "IMAD.WIDE",
    "IMAD.HI",
    "IMAD.X",
    "IMAD.MOV",
    "IADD3",
    "IADD3.X",
    "LOP3",
    "ISETP",
    "SEL",
    "LDG",
    "STG",
    "LDL",
    "STL",
    "CALL",
)


def _fmt(v: Any) -> str:
    return "–" if v is None else str(v)


def markdown(results: list[Result], probes: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"Compiled {meta['date']} with `{meta['command']}` ({meta['toolchain']}; arch sm_90a, "
        "the device's route: "
        "NVVM LTO-IR + nvJitLink with each kernel's `max_registers`). Bytes are per thread; *local* = the "
        "cumulative stack (frame + callees' frames + spills), i.e. local memory. "
        "Spills = spill stores / loads of the kernel itself (its callees' in brackets); *LDL/STL in loops* = "
        "static local loads/stores between a loop label and its back branch (paid every iteration).",
        "",
        "| kernel | stage | max_reg | regs | local B | spill st/ld B | LDL/STL in loops | smem B "
        "| SASS instr | IMAD* | CALL | flag |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        if r.error:
            lines.append(f"| {r.name} | {r.stage} | | | | | | | | | | COMPILE FAILED: {r.error[:80]} |")
            continue
        spill = f"{_fmt(r.spill_stores)}/{_fmt(r.spill_loads)}"
        if r.callee_spill_stores:
            spill += f" (+{r.callee_spill_stores})"
        flag = "**LOCAL/SPILL**" if r.flagged else ""
        lines.append(
            f"| {r.name} | {r.stage} | {_fmt(r.max_registers)} | {_fmt(r.regs)} | {r.local_bytes} "
            f"| {spill} | {r.loop_ldl}/{r.loop_stl} | {r.smem} | {_fmt(r.sass_total)} "
            f"| {r.sass.get('IMAD*', '–')} | {r.calls} "
            f"| {flag} |"
        )
    heavy = [r for r in results if r.sass and r.name in meta["heavy"]]
    if heavy:
        lines += [
            "",
            "SASS instruction families of the Montgomery-heavy kernels (static counts, whole kernel):",
            "",
        ]
        lines.append("| kernel | total | " + " | ".join(_SHOW) + " |")
        lines.append("|---|---|" + "---|" * len(_SHOW))
        for r in heavy:
            lines.append(
                f"| {r.name} | {r.sass_total} | " + " | ".join(str(r.sass.get(k, 0)) for k in _SHOW) + " |"
            )
    if probes:
        lines += [
            "",
            "Per operation (static SASS of a one-operation probe kernel minus the same kernel without the "
            "operation; all branches of the formula are counted once, a P == Q fallback that is a call "
            "counts as its CALL):",
            "",
            "| operation | instr | " + " | ".join(_SHOW) + " | regs (probe) | includes |",
            "|---|---|" + "---|" * len(_SHOW) + "---|---|",
        ]
        for p in probes:
            d = p["diff"]
            lines.append(
                f"| {p['what']} | {p['total']} | "
                + " | ".join(str(d.get(k, 0)) for k in _SHOW)
                + f" | {_fmt(p['regs'])} | {p['includes']} |"
            )
        by = {p["name"]: p for p in probes}
        if "madd_g1" in by and "dbl_affine_g1" in by and not by["madd_g1"]["diff"].get("CALL"):
            m, d = by["madd_g1"], by["dbl_affine_g1"]
            keys = set(m["diff"]) | set(d["diff"])
            diff = {k: m["diff"].get(k, 0) - d["diff"].get(k, 0) for k in keys}
            lines.append(
                f"| G1 madd, common path (madd - inlined doubling fallback) | {m['total'] - d['total']} | "
                + " | ".join(str(diff.get(k, 0)) for k in _SHOW)
                + " | | derived |"
            )
    checked = [r for r in results if r.device]
    if checked:
        lines += [
            "",
            "Driver-reported (`--device-check`: the dispatcher's own build on this GPU) vs this route:",
            "",
            "| kernel | regs (driver / route) | local B (driver / route) | smem B (driver / route) | same |",
            "|---|---|---|---|---|",
        ]
        for r in checked:
            d = r.device or {}
            same = d.get("regs") == r.regs and d.get("local") == r.local_bytes and d.get("smem") == r.smem
            lines.append(
                f"| {r.name} | {d.get('regs')} / {_fmt(r.regs)} | {d.get('local')} / {r.local_bytes} "
                f"| {d.get('smem')} / {r.smem} | {'yes' if same else '**no**'} |"
            )
    if meta.get("ptxas_route"):
        rows = [r for r in results if r.ptxas_route]
        lines += [
            "",
            "Same PTX through NVVM (non-LTO) + standalone ptxas (`--ptxas-route`):",
            "",
            "| kernel | regs (device route) | regs (ptxas route) | spill st/ld (device) "
            "| spill st/ld (ptxas) |",
            "|---|---|---|---|---|",
        ]
        for r in rows:
            p = r.ptxas_route or {}
            lines.append(
                f"| {r.name} | {_fmt(r.regs)} | {_fmt(p.get('regs'))} | {_fmt(r.spill_stores)}/"
                f"{_fmt(r.spill_loads)} | {_fmt(p.get('spill_stores'))}/{_fmt(p.get('spill_loads'))} |"
            )
    return "\n".join(lines) + "\n"


def _versions() -> str:
    import importlib.metadata as md

    parts = []
    for pkg in ("numba-cuda", "nvidia-nvvm", "nvidia-nvjitlink", "nvidia-cuda-nvdisasm"):
        try:
            parts.append(f"{pkg} {md.version(pkg)}")
        except md.PackageNotFoundError:
            parts.append(f"{pkg} absent")
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="regex of kernel names")
    ap.add_argument("--md", default=None, help="write the markdown table here (default: stdout only)")
    ap.add_argument("--json", default=None, help="write the results as JSON here")
    ap.add_argument("--sass-dir", default=None, help="keep each kernel's SASS listing here")
    ap.add_argument(
        "--ptxas-route", action="store_true", help="also NVVM PTX + standalone ptxas, for comparison"
    )
    ap.add_argument("--no-probes", action="store_true", help="skip the per-operation probe kernels")
    ap.add_argument(
        "--device-check",
        action="store_true",
        help="on a GPU machine: also build each kernel through its dispatcher and report the driver's "
        "registers / local / shared bytes beside this route's",
    )
    args = ap.parse_args(argv)
    try:
        only = re.compile(args.only)
    except re.error as exc:
        print(f"--only: bad regex: {exc}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO))
    _patch_numba()
    try:
        from numba.cuda.cudadrv import nvvm

        nvvm.NVVM()
    except Exception as exc:  # noqa: BLE001 - one line, then exit 2
        print(
            f"NVVM not available ({type(exc).__name__}: {str(exc).splitlines()[0][:120]}); "
            "pip install nvidia-nvvm nvidia-cuda-nvrtc nvidia-nvjitlink",
            file=sys.stderr,
        )
        return 2
    from numba.cuda.cudadrv.driver import _have_nvjitlink

    if not _have_nvjitlink():
        print(
            "nvJitLink not available: the device links with it (LTO); pip install nvidia-nvjitlink",
            file=sys.stderr,
        )
        return 2
    nvdisasm = _tool("nvdisasm", "NVDISASM")
    ptxas = _tool("ptxas", "PTXAS") if args.ptxas_route else None
    if args.ptxas_route and not ptxas:
        print("--ptxas-route: no ptxas on PATH (or PTXAS)", file=sys.stderr)
        return 2
    if args.device_check:
        from numba import cuda

        if not cuda.is_available():
            print("--device-check: no CUDA device here", file=sys.stderr)
            return 2
    sass_dir = Path(args.sass_dir) if args.sass_dir else None
    if sass_dir:
        sass_dir.mkdir(parents=True, exist_ok=True)
    todo = [s for s in specs() if only.search(s.name)]
    results: list[Result] = []
    for s in todo:
        disp = _load(s.kernel)
        r = Result(
            s.name, s.kernel, s.sig, s.stage, s.launch, max_registers=disp.targetoptions.get("max_registers")
        )
        try:
            info = compile_one(disp, parse_sig(s.sig), nvdisasm, ptxas, sass_dir, s.name)
        except Exception as exc:  # noqa: BLE001 - report every kernel
            r.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        else:
            for key, val in info.items():
                setattr(r, key, val)
            if args.device_check:
                try:
                    k = disp.compile(parse_sig(s.sig))
                    r.device = {
                        "regs": int(k.regs_per_thread),
                        "local": int(k.local_mem_per_thread),
                        "smem": int(k.shared_mem_per_block),
                    }
                except Exception as exc:  # noqa: BLE001 - report every kernel
                    r.error = (
                        f"device build: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                    )
        results.append(r)
        print(
            f"{s.name:22s} regs={_fmt(r.regs):>4s} local={r.local_bytes:5d} spill={_fmt(r.spill_stores)}/"
            f"{_fmt(r.spill_loads)}(+{r.callee_spill_stores}) smem={r.smem:6d} sass={_fmt(r.sass_total):>6s} "
            f"{r.compile_s:5.1f}s" + (f"  ERROR {r.error}" if r.error else ""),
            file=sys.stderr,
            flush=True,
        )
    probes: list[dict[str, Any]] = []
    if not args.no_probes and nvdisasm and not args.only:
        for name, what, with_k, sig, without_k, includes in probe_kernels():
            a = compile_one(with_k, parse_sig(sig), nvdisasm, None, sass_dir, f"probe_{name}")
            b = compile_one(without_k, parse_sig(sig), nvdisasm, None, None, f"probe_{name}_base")
            keys = set(a["sass"]) | set(b["sass"])
            diff = {k: a["sass"].get(k, 0) - b["sass"].get(k, 0) for k in keys}
            probes.append(
                {
                    "name": name,
                    "what": what,
                    "total": a["sass_total"] - b["sass_total"],
                    "diff": diff,
                    "regs": a.get("regs"),
                    "includes": includes,
                }
            )
            print(
                f"probe {name:16s} instr={probes[-1]['total']} IMAD*={diff.get('IMAD*')}",
                file=sys.stderr,
                flush=True,
            )
    cmd = (
        "python benchmarks/kernel_resources.py"
        + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    )
    meta = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": cmd.strip(),
        "toolchain": _versions(),
        "heavy": {s.name for s in todo if s.heavy},
        "ptxas_route": bool(ptxas),
    }
    md_text = markdown(results, probes, meta)
    print(md_text)
    if args.md:
        Path(args.md).write_text(md_text)
    if args.json:
        payload = {
            "meta": {k: (sorted(v) if isinstance(v, set) else v) for k, v in meta.items()},
            "kernels": [
                dict(dataclasses.asdict(r), local_bytes=r.local_bytes, flagged=r.flagged) for r in results
            ],
            "probes": probes,
        }
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n")
    return 1 if any(r.error for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
