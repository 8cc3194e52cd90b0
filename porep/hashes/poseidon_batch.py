"""Poseidon for many inputs at once (Numba, CPU threads), on gpu.arith.fields' Montgomery Fr arithmetic.

Tree C (a column hash per node), tree R_last and tree C (arity-8 trees over 2^18 leaves for 8MiB) and
vanilla verification hash tens of thousands to hundreds of thousands of nodes; the Python-int reference
(:mod:`porep.hashes.poseidon`) takes ~1 ms a hash. Here one kernel hashes rows of a ``uint32[n, arity, 8]``
Montgomery array with the partial-round-optimized constants
(:func:`porep.hashes.poseidon.optimized_constants`): 2t − 1 multiplications per partial round instead of t².
Inputs and outputs at the byte edge are 32-byte little-endian canonical Fr reprs (PoseidonDomain);
non-canonical input raises, as blstrs ``from_repr`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import (
    fr_add,
    fr_encode,
    fr_from_mont,
    fr_is_canonical,
    fr_load,
    fr_load2,
    fr_mul,
    fr_sqr,
    fr_store,
    fr_to_mont,
)
from porep.hashes.poseidon import ARITIES, optimized_constants

# ----------------------------------------------------------------------------------------------- kernel


@njit(nogil=True, cache=cache_enabled())
def _sbox(x):
    x2 = fr_sqr(x)
    return fr_mul(fr_sqr(x2), x)


@njit(nogil=True, cache=cache_enabled())
def _full_round(s, u, rc, rc_off, m, t):
    """s ← m·(s + rc[rc_off : rc_off + t])^5 (u is scratch)."""
    for i in range(t):
        fr_store(u, i, _sbox(fr_add(fr_load(s, i), fr_load(rc, rc_off + i))))
    for i in range(t):
        acc = fr_mul(fr_load(m, i * t), fr_load(u, 0))
        for j in range(1, t):
            acc = fr_add(acc, fr_mul(fr_load(m, i * t + j), fr_load(u, j)))
        fr_store(s, i, acc)


@njit(nogil=True, cache=cache_enabled())
def _hash_rows(lo, hi, inp, out, tag, frc, prc, lrc, mds, pre, m00, sv, sw):
    """out[r] = Poseidon(tag, inp[r, 0], …, inp[r, arity-1]) for r in [lo, hi); all Montgomery."""
    arity = inp.shape[1]
    t = arity + 1
    h = frc.shape[0] // t
    rp = prc.shape[0]
    s = np.empty((t, 8), np.uint32)
    u = np.empty((t, 8), np.uint32)
    for r in range(lo, hi):
        fr_store(s, 0, fr_load(tag, 0))
        for k in range(arity):
            fr_store(s, k + 1, fr_load2(inp, r, k))
        for i in range(h - 1):
            _full_round(s, u, frc, i * t, mds, t)
        _full_round(s, u, frc, (h - 1) * t, pre, t)
        for j in range(rp):
            x0 = _sbox(fr_add(fr_load(s, 0), fr_load(prc, j)))
            acc = fr_mul(fr_load(m00, j), x0)
            for k in range(arity):
                xk = fr_load(s, k + 1)
                acc = fr_add(acc, fr_mul(fr_load(sv, j * arity + k), xk))
                fr_store(s, k + 1, fr_add(xk, fr_mul(fr_load(sw, j * arity + k), x0)))
            fr_store(s, 0, acc)
        for i in range(h):
            _full_round(s, u, lrc, i * t, mds, t)
        fr_store(out, r, fr_load(s, 1))


# ----------------------------------------------------------------------------------------------- constants


@dataclass(frozen=True)
class _Tables:
    """One arity's optimized constants as Montgomery uint32 arrays (the kernel's arguments)."""

    tag: np.ndarray
    frc: np.ndarray
    prc: np.ndarray
    lrc: np.ndarray
    mds: np.ndarray
    pre: np.ndarray
    m00: np.ndarray
    sv: np.ndarray
    sw: np.ndarray

    def args(self) -> tuple[np.ndarray, ...]:
        return (self.tag, self.frc, self.prc, self.lrc, self.mds, self.pre, self.m00, self.sv, self.sw)


@cache
def _tables(arity: int) -> _Tables:
    o = optimized_constants(arity)

    def enc(values: list[int]) -> np.ndarray:
        arr = fr_encode(values)
        arr.flags.writeable = False
        return arr

    def flat(rows: tuple[tuple[int, ...], ...]) -> list[int]:
        return [x for row in rows for x in row]

    return _Tables(
        tag=enc([o.domain_tag]),
        frc=enc(flat(o.first_rc)),
        prc=enc(list(o.partial_rc)),
        lrc=enc(flat(o.last_rc)),
        mds=enc(flat(o.mds)),
        pre=enc(flat(o.pre_sparse)),
        m00=enc(list(o.sparse_m00)),
        sv=enc(flat(o.sparse_v)),
        sw=enc(flat(o.sparse_w)),
    )


def montgomery_tables(arity: int) -> _Tables:
    """One arity's optimized constants as Montgomery arrays: also the circuit's witness kernel's
    (``porep.circuit.poseidon_witness``), so the constants have one source."""
    return _tables(arity)


# ----------------------------------------------------------------------------------------------- public


def hash_mont(inputs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Poseidon of each row of ``uint32[n, arity, 8]`` (Montgomery) → ``uint32[n, 8]`` (Montgomery)."""
    inputs = np.ascontiguousarray(inputs)
    if inputs.dtype != np.uint32 or inputs.ndim != 3 or inputs.shape[2] != 8:
        raise ValueError(f"inputs must be uint32[n, arity, 8], got {inputs.dtype} {inputs.shape}")
    n, arity = inputs.shape[0], inputs.shape[1]
    if arity not in ARITIES:
        raise ValueError(f"no Poseidon constants for arity {arity}")
    if out is None:
        out = np.empty((n, 8), dtype=np.uint32)
    elif out.dtype != np.uint32 or out.shape != (n, 8) or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32[{n}, 8] array")
    parallel_for(_hash_rows, n, inputs, out, *_tables(arity).args(), min_chunk=4)
    return out


def domains_to_mont(domains: np.ndarray) -> np.ndarray:
    """``uint8[..., 32]`` canonical Fr reprs (LE) → ``uint32[..., 8]`` Montgomery; raises on values ≥ r."""
    domains = np.ascontiguousarray(domains, dtype=np.uint8)
    if domains.shape[-1] != 32:
        raise ValueError("domains must end in a 32-byte axis")
    lead = domains.shape[:-1]
    limbs = domains.reshape(-1, 32).view("<u4").astype(np.uint32, copy=False)
    bad = ~fr_is_canonical(limbs)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} values are not canonical Fr elements (>= r)")
    return fr_to_mont(limbs).reshape(*lead, 8)


def mont_to_domains(mont: np.ndarray) -> np.ndarray:
    """``uint32[..., 8]`` Montgomery → ``uint8[..., 32]`` canonical LE reprs."""
    lead = mont.shape[:-1]
    canon = fr_from_mont(np.ascontiguousarray(mont).reshape(-1, 8))
    return canon.astype("<u4").view(np.uint8).reshape(*lead, 32)


def hash_domains_batch(children: np.ndarray) -> np.ndarray:
    """Poseidon of each row of ``uint8[n, arity, 32]`` PoseidonDomains → ``uint8[n, 32]``."""
    children = np.asarray(children, dtype=np.uint8)
    if children.ndim != 3:
        raise ValueError(f"children must be uint8[n, arity, 32], got shape {children.shape}")
    return mont_to_domains(hash_mont(domains_to_mont(children)))
