"""The aux values of many Poseidon circuit instances at once (Numba, CPU threads, Montgomery Fr).

Why: a partition has thousands of Poseidon gadgets (column hashes, every tree C/R level) whose rows are one
template per arity (``porep.circuit.poseidon``); their witness is the neptune-order sequence of S-box
intermediates, which this kernel computes for all instances together instead of through per-row Python.
``out[n, k]`` is the value of the gadget's k-th own aux (allocation order, the hash last), so for an instance
whose first aux is ``base`` the assignment is ``aux[base : base + count] = out[n]``.
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_add, fr_encode, fr_load, fr_load2, fr_mul, fr_sqr, fr_store, fr_store2
from porep.circuit.poseidon import circuit_constants, constraint_count
from porep.hashes.poseidon_batch import montgomery_tables


@njit(nogil=True, cache=cache_enabled())
def _sbox_keyed(out, r, k, u, key):
    """Store u², u⁴, u⁵ + key at out[r, k..k+2]; return u⁵ + key."""
    s = fr_sqr(u)
    q = fr_sqr(s)
    y = fr_add(fr_mul(u, q), key)
    fr_store2(out, r, k, s)
    fr_store2(out, r, k + 1, q)
    fr_store2(out, r, k + 2, y)
    return y


@njit(nogil=True, cache=cache_enabled())
def _mix(e, f, m, t):
    """e ← M·e (m flat row-major, porep.hashes.poseidon_batch's orientation: neptune's row-vector product with
    the transposed matrix); f is scratch."""
    for j in range(t):
        acc = fr_mul(fr_load(e, 0), fr_load(m, j * t))
        for i in range(1, t):
            acc = fr_add(acc, fr_mul(fr_load(e, i), fr_load(m, j * t + i)))
        fr_store(f, j, acc)
    for j in range(t):
        fr_store(e, j, fr_load(f, j))


@njit(nogil=True, cache=cache_enabled())
def _witness_rows(lo, hi, inp, out, tag, cc, mds, pre, m00, sv, sw, zero, half, rp):
    arity = inp.shape[1]
    t = arity + 1
    e = np.empty((t, 8), np.uint32)
    f = np.empty((t, 8), np.uint32)
    for r in range(lo, hi):
        k = 0
        # first full round: the tag's S-box is a constant; inputs get pre- and post-keys
        x = fr_add(fr_load(tag, 0), fr_load(cc, 0))
        x2 = fr_sqr(x)
        fr_store(e, 0, fr_add(fr_mul(fr_sqr(x2), x), fr_load(cc, t)))
        for i in range(1, t):
            xa = fr_add(fr_load2(inp, r, i - 1), fr_load(cc, i))
            s = fr_sqr(xa)
            q = fr_sqr(s)
            y = fr_add(fr_mul(xa, q), fr_load(cc, t + i))
            fr_store2(out, r, k, s)
            fr_store2(out, r, k + 1, q)
            fr_store2(out, r, k + 2, y)
            k += 3
            fr_store(e, i, y)
        _mix(e, f, mds, t)
        off = 2 * t
        for rnd in range(1, half):
            for i in range(t):
                u = fr_load(e, i)
                fr_store2(out, r, k, u)
                fr_store(e, i, _sbox_keyed(out, r, k + 1, u, fr_load(cc, off + i)))
                k += 4
            off += t
            _mix(e, f, pre if rnd == half - 1 else mds, t)
        for j in range(rp):
            u = fr_load(e, 0)
            fr_store2(out, r, k, u)
            y = _sbox_keyed(out, r, k + 1, u, fr_load(cc, off))
            k += 4
            off += 1
            acc = fr_mul(fr_load(m00, j), y)
            for i in range(1, t):
                xi = fr_load(e, i)
                acc = fr_add(acc, fr_mul(fr_load(sv, j * arity + i - 1), xi))
                fr_store(e, i, fr_add(xi, fr_mul(fr_load(sw, j * arity + i - 1), y)))
            fr_store(e, 0, acc)
        for rnd in range(half):
            last = rnd == half - 1
            for i in range(t):
                u = fr_load(e, i)
                fr_store2(out, r, k, u)
                key = fr_load(zero, 0) if last else fr_load(cc, off + i)
                fr_store(e, i, _sbox_keyed(out, r, k + 1, u, key))
                k += 4
            if not last:
                off += t
            _mix(e, f, mds, t)
        fr_store2(out, r, k, fr_load(e, 1))


@cache
def _compressed(arity: int) -> tuple[np.ndarray, np.ndarray]:
    """neptune's compressed round constants (the circuit's own; the matrices are
    porep.hashes.poseidon_batch's) and a Montgomery zero (the terminal round's key)."""
    return fr_encode(list(circuit_constants(arity).compressed)), fr_encode([0])


def poseidon_witness_mont(
    inputs: np.ndarray, out: np.ndarray | None = None, domain_tag: int | None = None
) -> np.ndarray:
    """``uint32[n, arity, 8]`` Montgomery preimages → ``uint32[n, count, 8]`` Montgomery aux values, in the
    gadget's allocation order (``out[:, -1]`` is the hash). ``domain_tag``: the constant s[0] of
    ``poseidon_hash(..., domain_tag=)`` (SnapDeals' 2^40); default the MerkleTree tag."""
    inputs = np.ascontiguousarray(inputs)
    if inputs.dtype != np.uint32 or inputs.ndim != 3 or inputs.shape[2] != 8:
        raise ValueError(f"inputs must be uint32[n, arity, 8], got {inputs.dtype} {inputs.shape}")
    n, arity = inputs.shape[0], inputs.shape[1]
    count = constraint_count(arity)
    if out is None:
        out = np.empty((n, count, 8), dtype=np.uint32)
    elif out.dtype != np.uint32 or out.shape != (n, count, 8) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32[{n}, {count}, 8] array")
    tb = montgomery_tables(arity)
    k = circuit_constants(arity)
    cc, zero = _compressed(arity)
    tag = tb.tag if domain_tag is None else fr_encode([domain_tag])
    parallel_for(
        _witness_rows, n, inputs, out, tag, cc, tb.mds, tb.pre, tb.m00, tb.sv, tb.sw, zero,
        k.half_full_rounds, k.partial_rounds, min_chunk=4,
    )
    return out
