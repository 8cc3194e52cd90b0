"""A, B, C kept resident on the device and A.w, B.w, C.w evaluated there (cuzk's PCE MatVec, cuzk.md §1.6).

Why: at 32GiB one partition's SpMV is ~30 CPU-seconds (722 M entries), ~296 per 10-partition proof, more than
the whole per-proof target even on 16 cores; on the device the matrices are read from HBM and the witness is
already there for the MSMs. So the matrices of a circuit shape are uploaded once (``DeviceR1CS.upload``) and
each proof uploads only its witness.

Device layout (one ``DeviceMatrix`` per A, B, C), always the compact form of ``gpu.groth16.r1cs``:
  row_ptr  (m + 1,) uint32 (int64 when nnz >= 2^32)
  cols     (nnz,) uint32 unified column indices
  coeff    (nnz,) uint8 / uint16 / uint32 index into ``table`` (the host CompactCSR's own width)
  table    (k, 8) uint32 distinct coefficients in Montgomery form
A plain ``CSR`` is interned on upload (``CompactCSR.from_csr``: 6 bytes per entry on the device, not 36);
at 32GiB the compact matrices take ~5.9 GB of device memory (cols 2.9 + coeff 1.4 + row_ptr 1.6).

``evaluate_into(k, d_w, out)``: the witness is on the device in canonical form (the MSMs need it so) and is
read as it is: the table holds each coefficient times R^2 (Montgomery form of c R), so one Montgomery product
per entry gives c w in Montgomery form with no converted copy of the witness (that copy was 4.2 GB at 32GiB).
One thread per row computes its dot product and writes row i of one NTT buffer of the domain: matrix k's rows,
then the input constraints (a = x_i, b = c = 0) and zero padding: exactly the buffer the quotient stage
(``gpu.groth16.prover``) transforms in place. ``evaluate`` fills a (3, n, 8) array the same way. Results are
bit-identical to ``R1CS.evaluate`` (same field, reduced outputs).

Not measured yet (no GPU this session): the kernel's time (benchmarks/spmv_bench.py). Compiled for sm_90 on
a CPU machine (NVVM + ptxas 13.0, default PTX Montgomery product): the SpMV kernel 52 registers, no spills, no
local memory, no float64 (2026-12-04). The next levers, in order: a warp (or a
sub-warp) per long row (PoRep's packing rows have up to hundreds of entries, while most rows have 1-3, so
one thread per row leaves a long tail; bin rows by length), a coefficient table in shared memory, and
multiplying by R^2-scaled coefficients instead of converting the witness (no 4.2 GB scratch, one more product
per coefficient-1 entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda, int64, uint32

from gpu.arith.cudashim import kernel
from gpu.arith.fields import fr_add, fr_load, fr_mul, fr_r2, fr_store, fr_to_mont, fr_zero
from gpu.device import Device, get_device
from gpu.groth16.r1cs import R1CS, CompactCSR, Matrix, SystemSizes, check_witness
from gpu.transfer import Staging

THREADS = 128


@kernel
def _spmv_kernel(ptr, cols, coeff, table, w, out):  # type: ignore[no-untyped-def]
    """out[i] = sum_e table[coeff[e]] * w[cols[e]] over row i's entries (one thread per row): w canonical,
    the table c R^2, so each product is c w in Montgomery form."""
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < ptr.shape[0] - 1:
        acc = fr_zero()
        for e in range(int64(ptr[i]), int64(ptr[i + 1])):
            acc = fr_add(acc, fr_mul(fr_load(table, uint32(coeff[e])), fr_load(w, cols[e])))
        fr_store(out, i, acc)


@kernel
def _tail_kernel(buf, w, m, k, inputs):  # type: ignore[no-untyped-def]
    """Rows m.. of one NTT buffer: the input constraints (x_i in Montgomery form when ``inputs``, the A
    matrix's; else 0), then zero padding."""
    i = cuda.grid(1) + m  # type: ignore[call-arg]  # numba's @intrinsic signature
    if i < buf.shape[0]:
        if inputs and i - m < k:
            fr_store(buf, i, fr_mul(fr_load(w, i - m), fr_r2()))
        else:
            for j in range(8):
                buf[i, j] = uint32(0)


def _blocks(n: int, threads: int = THREADS) -> int:
    return (n + threads - 1) // threads


@dataclass
class DeviceMatrix:
    """One constraint matrix on the device (see the module docstring; the table holds c R^2)."""

    row_ptr: Any
    cols: Any
    coeff: Any
    table: Any
    rows: int
    nnz: int

    @property
    def nbytes(self) -> int:
        return int(sum(x.nbytes for x in (self.row_ptr, self.cols, self.coeff, self.table)))

    @staticmethod
    def upload(mat: Matrix, staging: Staging) -> DeviceMatrix:
        """Copy one host matrix to the current device (a plain CSR is interned first)."""
        cm = mat if isinstance(mat, CompactCSR) else CompactCSR.from_csr(mat)
        nnz, rows = cm.nnz, int(cm.row_ptr.shape[0]) - 1
        ptr_t = np.uint32 if nnz < 1 << 32 else np.int64
        coeff = cm.coeff if cm.coeff.dtype in (np.uint8, np.uint16, np.uint32) else cm.coeff.astype(np.uint32)
        table = cm.mont_table()
        if table.shape[0] >= 1 << 32:
            raise ValueError("a coefficient table of 2^32 entries or more")
        table = fr_to_mont(table) if len(table) else table  # c R^2: the witness is read canonical
        arrays = []
        for host in (
            np.ascontiguousarray(cm.row_ptr, dtype=ptr_t),
            np.ascontiguousarray(cm.cols, dtype=np.uint32),
            np.ascontiguousarray(coeff),
            np.ascontiguousarray(table, dtype=np.uint32),
        ):
            # at least one element: a matrix may be empty, and the driver refuses 0-byte allocations
            shape = (max(host.shape[0], 1),) + host.shape[1:]
            d = cuda.device_array(shape, dtype=host.dtype)
            staging.upload(host, d[: host.shape[0]])
            arrays.append(d)
        d_ptr, d_cols, d_coeff, d_table = arrays
        return DeviceMatrix(d_ptr, d_cols, d_coeff, d_table, rows, nnz)

    def spmv(self, d_w: Any, d_out: Any) -> None:
        """d_out[:rows] = this matrix . d_w (the witness canonical, the result Montgomery; (.., 8) device
        arrays)."""
        if self.rows:
            _spmv_kernel[_blocks(self.rows), THREADS](
                self.row_ptr, self.cols, self.coeff, self.table, d_w, d_out
            )


@dataclass
class DeviceR1CS(SystemSizes):
    """An R1CS resident on one device: upload once per circuit shape, then ``evaluate`` per proof."""

    num_inputs: int
    num_aux: int
    num_constraints: int
    a: DeviceMatrix
    b: DeviceMatrix
    c: DeviceMatrix
    device: Device | None = None

    @property
    def nbytes(self) -> int:
        """Device bytes the resident matrices hold."""
        return self.a.nbytes + self.b.nbytes + self.c.nbytes

    @staticmethod
    def upload(
        r1cs: R1CS, device: Device | int | None = None, staging: Staging | None = None
    ) -> DeviceR1CS:
        """Copy ``r1cs``'s matrices to ``device`` (held while copying; None: the caller already holds the
        current one), through ``staging``'s pinned buffers (a fresh Staging if none is given)."""
        st = staging or Staging()
        dev = None if device is None else get_device(device)

        def up(mat: Matrix) -> DeviceMatrix:
            if dev is None:
                return DeviceMatrix.upload(mat, st)
            with dev.use():
                return DeviceMatrix.upload(mat, st)

        a, b, c = up(r1cs.a), up(r1cs.b), up(r1cs.c)
        return DeviceR1CS(r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints, a, b, c, dev)

    def _check(self, d_w: Any, logn: int | None) -> int:
        if tuple(d_w.shape) != (self.num_vars, 8) or np.dtype(d_w.dtype) != np.uint32:
            raise ValueError(f"the device witness must be ({self.num_vars}, 8) uint32, not {d_w.shape}")
        logn = self.domain_log if logn is None else logn
        if 1 << logn < self.num_constraints + self.num_inputs:
            raise ValueError(
                f"a domain of 2^{logn} rows cannot hold {self.num_constraints + self.num_inputs} constraints"
            )
        return 1 << logn

    def evaluate_into(self, k: int, d_w: Any, out: Any, logn: int | None = None) -> Any:
        """Matrix k's rows (0: A, 1: B, 2: C) at the canonical device witness ``d_w`` into ``out``, an (n, 8)
        device array of the domain 2^logn: Montgomery, the input constraints appended (A: x_i, else 0),
        zero-padded. The caller holds the device; kernels run on the default stream."""
        n = self._check(d_w, logn)
        if tuple(out.shape) != (n, 8) or np.dtype(out.dtype) != np.uint32:
            raise ValueError(f"out must be an ({n}, 8) uint32 device array")
        m = self.num_constraints
        (self.a, self.b, self.c)[k].spmv(d_w, out)
        if n > m:
            _tail_kernel[_blocks(n - m), THREADS](out, d_w, m, self.num_inputs, k == 0)
        return out

    def evaluate(self, d_w: Any, logn: int | None = None, out: Any = None) -> Any:
        """A.w, B.w, C.w of the canonical device witness ``d_w`` ((num_vars, 8) uint32) into a (3, 2^logn, 8)
        device array (``out`` or a new one; logn defaults to the domain), each row as ``evaluate_into``."""
        n = self._check(d_w, logn)
        if out is None:
            out = cuda.device_array((3, n, 8), dtype=np.uint32)
        elif tuple(out.shape) != (3, n, 8) or np.dtype(out.dtype) != np.uint32:
            raise ValueError(f"out must be a (3, {n}, 8) uint32 device array")
        for k in range(3):
            self.evaluate_into(k, d_w, out[k], logn)
        return out

    def evaluate_host(self, witness: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``R1CS.evaluate``'s three (num_constraints_total, 8) arrays, computed on the device (tests and
        benchmarks: the witness is uploaded, the results copied back)."""
        w = check_witness(witness, self.num_vars)

        def run() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            d = self.evaluate(cuda.to_device(w))
            rows = self.num_constraints_total
            host = d.copy_to_host()
            return tuple(np.ascontiguousarray(host[j, :rows]) for j in range(3))  # type: ignore[return-value]

        if self.device is None:
            return run()
        with self.device.use():
            return run()
