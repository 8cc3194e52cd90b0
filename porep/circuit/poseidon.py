"""neptune's legacy Poseidon circuit (``circuit::poseidon_hash``, circuit.md §8), the one Filecoin's PoRep
parameters were made with, in its exact allocation and constraint order.

Why not the plain permutation: neptune's circuit is built on its *optimised* constants (compressed round
constants added after each S-box, a pre-sparse matrix, one sparse matrix per partial round), and those are
the coefficients of its rows and the values of its witness (circuit.md §8.2, §11.4). The matrices come from
:func:`porep.hashes.poseidon.optimized_constants` (checked there against supraseal's copy of neptune's); the
compressed round constants are built here in neptune's order (checked against the same file in the tests).

An element of the state is either an allocated variable or an LC ("Num") with its value; mixes build merged
LCs (coefficients reduced mod r, zeros kept, as bellpepper's LC does), and ``_ensure`` allocates an LC with
(LC)·1 = u. Every row defines exactly one new aux — the last allocated, in C — so the gadget of one arity
is one fixed template over (ONE, its inputs, its own consecutive aux): a PCE can record it once and tile
it, and a vectorised witness can evaluate it row by row for all instances at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from porep.circuit.cs import ONE, ConstraintSystem, R
from porep.hashes.poseidon import _mat_inv, constants, optimized_constants

COLUMN_ARITIES = (2, 11)
"""hash_single_column: 2 layers use arity 2, 11 layers arity 11 (SPP circuit/hash.rs)."""


@dataclass(frozen=True)
class CircuitConstants:
    """What neptune's circuit consumes for one arity (neptune ``PoseidonConstants``)."""

    arity: int
    width: int
    half_full_rounds: int
    partial_rounds: int
    domain_tag: int
    compressed: tuple[int, ...]  # R_F·t + R_P compressed round constants, in consumption order
    mds: tuple[tuple[int, ...], ...]  # X[i][j]: e'_j = Σ_i X[i][j]·e_i
    pre_sparse: tuple[tuple[int, ...], ...]  # same orientation
    w_hat: tuple[tuple[int, ...], ...]  # per partial round: column 0 of the sparse matrix (t)
    v_rest: tuple[tuple[int, ...], ...]  # per partial round: row 0 without its first entry (t − 1)


def _vec_mat(v: Sequence[int], m: Sequence[Sequence[int]]) -> list[int]:
    """Row vector times matrix: (v·X)_j = Σ_i v_i·X[i][j] (neptune ``apply_matrix``)."""
    n = len(m[0])
    return [sum(v[i] * m[i][j] for i in range(len(v))) % R for j in range(n)]


@cache
def circuit_constants(arity: int) -> CircuitConstants:
    """neptune's compressed round constants (preprocessing.rs) and its matrices for ``arity``."""
    c = constants(arity)
    o = optimized_constants(arity)
    t, rf, rp = c.width, c.full_rounds, c.partial_rounds
    half = rf // 2
    rc = [list(c.round_constants[i * t : (i + 1) * t]) for i in range(rf + rp)]
    m_inv = _mat_inv(c.mds)

    out: list[int] = list(rc[0])
    for r in range(1, half):
        out += _vec_mat(rc[r], m_inv)
    # Fold the partial rounds' constants backwards: only element 0 of each stays in its round.
    acc = list(rc[half + rp])
    partial: list[int] = []
    for i in range(rp):
        x = _vec_mat(acc, m_inv)
        partial.append(x[0])
        x[0] = 0
        acc = [(a + b) % R for a, b in zip(rc[half + rp - 1 - i], x, strict=True)]
    out += _vec_mat(acc, m_inv)
    out += reversed(partial)
    for r in range(half + rp + 1, rf + rp):
        out += _vec_mat(rc[r], m_inv)
    assert len(out) == rf * t + rp

    # porep.hashes.poseidon's matrices act on column vectors (s' = P·s); neptune's act on row vectors.
    pre = tuple(tuple(o.pre_sparse[j][i] for j in range(t)) for i in range(t))
    w_hat = tuple((o.sparse_m00[k], *o.sparse_v[k]) for k in range(rp))
    return CircuitConstants(
        arity=arity,
        width=t,
        half_full_rounds=half,
        partial_rounds=rp,
        domain_tag=c.domain_tag,
        compressed=tuple(out),
        mds=c.mds,
        pre_sparse=pre,
        w_hat=w_hat,
        v_rest=tuple(tuple(w) for w in o.sparse_w),
    )


def constraint_count(arity: int) -> int:
    """3·arity + 4·t·(R_F − 1) + 4·R_P + 1 (aux is the same number)."""
    c = constants(arity)
    return 3 * arity + 4 * c.width * (c.full_rounds - 1) + 4 * c.partial_rounds + 1


class _Elt:
    """An allocated variable (``var``) or an LC; ``val`` is None in shape-only mode."""

    __slots__ = ("var", "lc", "val")

    def __init__(self, var: int | None, lc: dict[int, int], val: int | None) -> None:
        self.var = var
        self.lc = lc
        self.val = val

    @staticmethod
    def allocated(var: int, val: int | None) -> _Elt:
        return _Elt(var, {var: 1}, val)


def _ensure(cs: ConstraintSystem, e: _Elt) -> _Elt:
    """ensure_allocated: an LC becomes u with (LC)·1 = u."""
    if e.var is not None:
        return e
    u = cs.alloc(e.val)
    cs.enforce(e.lc, {ONE: 1}, {u: 1})
    return _Elt.allocated(u, e.val)


def _square(cs: ConstraintSystem, x: _Elt) -> _Elt:
    assert x.var is not None
    v = None if x.val is None else x.val * x.val % R
    s = cs.alloc(v)
    cs.enforce({x.var: 1}, {x.var: 1}, {s: 1})
    return _Elt.allocated(s, v)


def _sbox(cs: ConstraintSystem, x: _Elt, key: int | None) -> _Elt:
    """u = E(x); u², u⁴; y with u·u⁴ = y − key·1 (neptune quintic_s_box + mul_sum)."""
    u = _ensure(cs, x)
    q = _square(cs, _square(cs, u))
    assert u.var is not None and q.var is not None
    v = None if u.val is None or q.val is None else (u.val * q.val + (key or 0)) % R
    y = cs.alloc(v)
    cs.enforce({u.var: 1}, {q.var: 1}, {y: 1, ONE: -key % R} if key is not None else {y: 1})
    return _Elt.allocated(y, v)


def _sbox_pre(cs: ConstraintSystem, x: _Elt, pre: int, post: int) -> _Elt:
    """First-round S-box of an allocated input: (x+pre)² = s, s² = q, (x+pre)·q = y − post·1."""
    assert x.var is not None
    xa = None if x.val is None else (x.val + pre) % R
    sv = None if xa is None else xa * xa % R
    s = cs.alloc(sv)
    cs.enforce({x.var: 1, ONE: pre}, {x.var: 1, ONE: pre}, {s: 1})
    q = _square(cs, _Elt.allocated(s, sv))
    assert q.var is not None
    v = None if xa is None or q.val is None else (xa * q.val + post) % R
    y = cs.alloc(v)
    cs.enforce({x.var: 1, ONE: pre}, {q.var: 1}, {y: 1, ONE: -post % R})
    return _Elt.allocated(y, v)


def _scaled_sum(elts: Sequence[_Elt], coeffs: Sequence[int]) -> _Elt:
    """Σ coeffs_i·elts_i as a merged LC (neptune scalar_product)."""
    lc: dict[int, int] = {}
    val: int | None = 0
    for e, k in zip(elts, coeffs, strict=True):
        for v, c in e.lc.items():
            lc[v] = (lc.get(v, 0) + c * k) % R
        val = None if val is None or e.val is None else val + e.val * k
    return _Elt(None, lc, None if val is None else val % R)


def _mix(e: list[_Elt], m: Sequence[Sequence[int]]) -> list[_Elt]:
    t = len(e)
    return [_scaled_sum(e, [m[i][j] for i in range(t)]) for j in range(t)]


def _mix_sparse(e: list[_Elt], w_hat: Sequence[int], v_rest: Sequence[int]) -> list[_Elt]:
    out = [_scaled_sum(e, w_hat)]
    for j in range(1, len(e)):
        out.append(_scaled_sum([e[j], e[0]], [1, v_rest[j - 1]]))
    return out


def poseidon_hash(cs: ConstraintSystem, preimage: Sequence[int], domain_tag: int | None = None) -> int:
    """neptune ``poseidon_hash`` of allocated variables; arity = len(preimage). The tag defaults to the
    MerkleTree one; another (SnapDeals' 2^40) changes only the constant state element, not the rows' shape.

    Returns the variable of the hash (an aux allocated last)."""
    k = circuit_constants(len(preimage))
    t, half, rp = k.width, k.half_full_rounds, k.partial_rounds
    cc = k.compressed
    w = cs.witness
    tag0 = k.domain_tag if domain_tag is None else domain_tag % R
    e = [_Elt(None, {ONE: tag0}, tag0)]
    e += [_Elt.allocated(v, cs.value(v) if w else None) for v in preimage]
    rnd = 0

    def mix(e: list[_Elt]) -> list[_Elt]:
        nonlocal rnd
        if rnd == half - 1:
            out = _mix(e, k.pre_sparse)
        elif half - 1 < rnd < half + rp:
            out = _mix_sparse(e, k.w_hat[rnd - half], k.v_rest[rnd - half])
        else:
            out = _mix(e, k.mds)
        rnd += 1
        return out

    # first full round: pre-keys C[0..t), post-keys C[t..2t); the tag's S-box is a constant
    pre, post = cc[0:t], cc[t : 2 * t]
    tag = (pow((tag0 + pre[0]) % R, 5, R) + post[0]) % R
    e = [_Elt(None, {ONE: tag}, tag)] + [_sbox_pre(cs, e[i], pre[i], post[i]) for i in range(1, t)]
    e = mix(e)
    off = 2 * t
    for _ in range(1, half):
        e = [_sbox(cs, e[i], cc[off + i]) for i in range(t)]
        off += t
        e = mix(e)
    for _ in range(rp):
        e[0] = _sbox(cs, e[0], cc[off])
        off += 1
        e = mix(e)
    for _ in range(half - 1):
        e = [_sbox(cs, e[i], cc[off + i]) for i in range(t)]
        off += t
        e = mix(e)
    e = [_sbox(cs, e[i], None) for i in range(t)]
    e = mix(e)
    assert off == len(cc)
    out = _ensure(cs, e[1])
    assert out.var is not None
    return out.var


def column_hash(cs: ConstraintSystem, rows: Sequence[int]) -> int:
    """hash_single_column (SPP circuit/hash.rs): Poseidon-2 for 2 layers, Poseidon-11 for 11."""
    if len(rows) not in COLUMN_ARITIES:
        raise ValueError(f"a column hash takes {COLUMN_ARITIES} rows, got {len(rows)}")
    return poseidon_hash(cs, rows)
