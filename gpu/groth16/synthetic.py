"""A synthetic circuit family with Filecoin-like witness statistics, at any size.

Groups of GROUP = 16 constraints, each allocating 16 aux variables:
  rows 0..3   r_t * (1 - r_t) = 0                   (boolean constraints on 4 random root bits)
  rows 4..13  (2 r_a) * r_b = r_a + r_b - d_t       (XOR, as bellman's boolean gadget: d_t = r_a xor r_b with
                                                    a = t mod 4, b = (t + 1) mod 4; d_t appears only in C)
  row 14      (sum_t 2^t bit_t) * 1 = v             (packing of the 14 bits, as multipack does)
  row 15      v * prev = z                          (prev = public input x_(1 + g mod k) for the first k
                                                    groups, else the previous group's z: full-size field
                                                    values)
so 14 of 16 aux values (87.5 %) are bits, A-density is 15/16 and B-density 5/16, near the PoRep statistics of
cuzk.md §1.6 (a_aux 99.7 %, b_aux 25.4 %; dominated by SHA-256 bit gadgets). A trailing partial group holds
only boolean rows.
``evaluations()`` gives A.w, B.w, C.w directly from the structure (no matrices), so proving benchmarks run at
2^27 without materialising a 130 M-row R1CS; ``r1cs()`` builds the CSR matrices for setup and checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_from_ints, fr_load, fr_mul, fr_store, fr_to_mont
from gpu.arith.fields.constants import R_MODULUS
from gpu.groth16.r1cs import CSR, R1CS, Density

GROUP = 16
BITS = 14
ROOTS = 4
XOR_A = [t % ROOTS for t in range(BITS - ROOTS)]
XOR_B = [(t + 1) % ROOTS for t in range(BITS - ROOTS)]


@njit(nogil=True, cache=cache_enabled())
def _chain(v, x, ngroups, k, z):
    # z[g] = v[g] * prev(g), all Montgomery; prev(g) = x[g mod k] for g < k, else z[g - 1]
    for g in range(ngroups):
        prev = fr_load(x, g % k) if g < k else fr_load(z, g - 1)
        fr_store(z, g, fr_mul(fr_load(v, g), prev))


@dataclass
class SyntheticCircuit:
    """The circuit of ``num_constraints`` rows (input constraints not counted) with ``num_public`` public
    inputs (ONE not counted), and a witness drawn from ``seed``."""

    num_constraints: int
    num_public: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.num_public < 1:
            raise ValueError("the synthetic circuit needs at least one public input")
        if self.full_groups < self.num_public:
            raise ValueError(
                f"{self.num_constraints} constraints are too few for {self.num_public} inputs "
                f"(need {GROUP * self.num_public})"
            )

    @property
    def full_groups(self) -> int:
        return self.num_constraints // GROUP

    @property
    def tail_bits(self) -> int:
        return self.num_constraints % GROUP

    @property
    def num_inputs(self) -> int:
        return 1 + self.num_public

    @property
    def num_aux(self) -> int:
        return self.full_groups * GROUP + self.tail_bits

    # ------------------------------------------------------------------ witness

    def _draw(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        rng = np.random.default_rng(self.seed)
        bits = np.empty((self.full_groups, BITS), dtype=np.uint8)
        bits[:, :ROOTS] = rng.integers(0, 2, size=(self.full_groups, ROOTS), dtype=np.uint8)
        bits[:, ROOTS:] = bits[:, XOR_A] ^ bits[:, XOR_B]
        tail = rng.integers(0, 2, size=self.tail_bits, dtype=np.uint8)
        xs = [int.from_bytes(rng.bytes(32), "little") % R_MODULUS for _ in range(self.num_public)]
        return bits, tail, xs

    def _values(self) -> dict[str, np.ndarray]:
        """Canonical limb arrays: bits (G, 14) u8, v (G, 8), z (G, 8), xs (k, 8), tail bits."""
        bits, tail, xs = self._draw()
        g = self.full_groups
        v = np.zeros((g, 8), dtype=np.uint32)
        v[:, 0] = (bits.astype(np.uint32) << np.arange(BITS, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
        xm = fr_to_mont(fr_from_ints(xs))
        zm = np.empty((g, 8), dtype=np.uint32)
        _chain(fr_to_mont(v), xm, g, self.num_public, zm)
        from gpu.arith.fields import fr_from_mont

        return {"bits": bits, "tail": tail, "v": v, "z": fr_from_mont(zm), "xs": fr_from_ints(xs)}

    def public_inputs(self) -> list[int]:
        """x_1..x_k (ONE not included), as integers."""
        return self._draw()[2]

    def witness(self) -> np.ndarray:
        """The full assignment [ONE, x_1..x_k, aux...] as canonical (num_vars, 8) limbs."""
        val = self._values()
        return self._assemble(val)

    def _assemble(self, val: dict[str, np.ndarray]) -> np.ndarray:
        k1 = self.num_inputs
        g = self.full_groups
        w = np.zeros((k1 + self.num_aux, 8), dtype=np.uint32)
        w[0, 0] = 1
        w[1:k1] = val["xs"]
        grp = w[k1 : k1 + g * GROUP].reshape(g, GROUP, 8)
        grp[:, :BITS, 0] = val["bits"]
        grp[:, BITS] = val["v"]
        grp[:, BITS + 1] = val["z"]
        w[k1 + g * GROUP :, 0] = val["tail"]
        return w

    def evaluations(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(witness, A.w, B.w, C.w): the last three Montgomery, with the input constraints appended, computed
        from the structure (equal to r1cs().evaluate(witness), which the tests check)."""
        val = self._values()
        w = self._assemble(val)
        g, k1 = self.full_groups, self.num_inputs
        m = self.num_constraints
        one_m = fr_to_mont(fr_from_ints([1]))[0]
        bits_m = np.zeros((2, 8), dtype=np.uint32)
        bits_m[1] = one_m  # Montgomery 0 and 1
        a = np.zeros((m + k1, 8), dtype=np.uint32)
        b = np.zeros((m + k1, 8), dtype=np.uint32)
        c = np.zeros((m + k1, 8), dtype=np.uint32)
        ag = a[: g * GROUP].reshape(g, GROUP, 8)
        bg = b[: g * GROUP].reshape(g, GROUP, 8)
        cg = c[: g * GROUP].reshape(g, GROUP, 8)
        bits = val["bits"]
        two_m = fr_to_mont(fr_from_ints([0, 2]))
        ag[:, :ROOTS] = bits_m[bits[:, :ROOTS]]
        bg[:, :ROOTS] = bits_m[1 - bits[:, :ROOTS]]
        ag[:, ROOTS:BITS] = two_m[bits[:, XOR_A]]
        bg[:, ROOTS:BITS] = bits_m[bits[:, XOR_B]]
        cg[:, ROOTS:BITS] = two_m[bits[:, XOR_A] & bits[:, XOR_B]]  # r_a + r_b - d = 2 r_a r_b
        vm = fr_to_mont(np.ascontiguousarray(val["v"]))
        zm = fr_to_mont(np.ascontiguousarray(val["z"]))
        ag[:, BITS] = vm
        bg[:, BITS] = one_m
        cg[:, BITS] = vm
        ag[:, BITS + 1] = vm
        prev = np.empty_like(zm)
        kp = self.num_public
        prev[:kp] = fr_to_mont(np.ascontiguousarray(val["xs"]))[np.arange(kp) % kp]
        prev[kp:] = zm[:-1][kp - 1 :] if g > kp else prev[kp:]
        bg[:, BITS + 1] = prev
        cg[:, BITS + 1] = zm
        a[g * GROUP : m] = bits_m[val["tail"]]
        b[g * GROUP : m] = bits_m[1 - val["tail"]]
        a[m:] = fr_to_mont(np.ascontiguousarray(w[:k1]))
        return w, a, b, c

    # ------------------------------------------------------------------ matrices

    def r1cs(self) -> R1CS:
        """The CSR matrices (vectorised; fine up to a few million constraints)."""
        g, k1, m, kp = self.full_groups, self.num_inputs, self.num_constraints, self.num_public
        aux0 = k1
        gi = np.arange(g, dtype=np.int64)
        base = aux0 + gi * GROUP
        # coefficient table: 0 -> 1, 1 -> -1, 2 + t -> 2^t (so 3 -> 2)
        coeffs = fr_from_ints([1, R_MODULUS - 1] + [1 << t for t in range(BITS)])
        nb = g * ROOTS + self.tail_bits  # boolean rows
        bit_cols = np.concatenate(
            [(base[:, None] + np.arange(ROOTS)).reshape(-1), aux0 + g * GROUP + np.arange(self.tail_bits)]
        )
        row_of_bit = np.concatenate(
            [(gi[:, None] * GROUP + np.arange(ROOTS)).reshape(-1), g * GROUP + np.arange(self.tail_bits)]
        )
        rows_a, cols_a, cf_a = [row_of_bit], [bit_cols], [np.zeros(nb, np.int64)]
        rows_b = [row_of_bit, row_of_bit]
        cols_b = [np.zeros(nb, np.int64), bit_cols]
        cf_b = [np.zeros(nb, np.int64), np.ones(nb, np.int64)]
        # XOR rows: A = 2 r_a, B = r_b, C = r_a + r_b - d
        nx = BITS - ROOTS
        xr = (gi[:, None] * GROUP + ROOTS + np.arange(nx)).reshape(-1)
        ra = (base[:, None] + np.asarray(XOR_A)).reshape(-1)
        rb = (base[:, None] + np.asarray(XOR_B)).reshape(-1)
        dd = (base[:, None] + ROOTS + np.arange(nx)).reshape(-1)
        rows_a.append(xr)
        cols_a.append(ra)
        cf_a.append(np.full(xr.shape[0], 3, np.int64))
        rows_b.append(xr)
        cols_b.append(rb)
        cf_b.append(np.zeros(xr.shape[0], np.int64))
        rows_c: list[np.ndarray] = [xr, xr, xr]
        cols_c: list[np.ndarray] = [ra, rb, dd]
        cf_c: list[np.ndarray] = [
            np.zeros(xr.shape[0], np.int64),
            np.zeros(xr.shape[0], np.int64),
            np.ones(xr.shape[0], np.int64),
        ]
        # packing rows
        pr = gi * GROUP + BITS
        rows_a.append(np.repeat(pr, BITS))
        cols_a.append((base[:, None] + np.arange(BITS)).reshape(-1))
        cf_a.append(np.tile(2 + np.arange(BITS), g))
        rows_b.append(pr)
        cols_b.append(np.zeros(g, np.int64))
        cf_b.append(np.zeros(g, np.int64))
        rows_c.append(pr)
        cols_c.append(base + BITS)
        cf_c.append(np.zeros(g, np.int64))
        # multiplication rows
        mr = pr + 1
        prev = np.where(gi < kp, 1 + gi % kp, base - 1)  # previous group's z is at its base + 15 = base - 1
        rows_a.append(mr)
        cols_a.append(base + BITS)
        cf_a.append(np.zeros(g, np.int64))
        rows_b.append(mr)
        cols_b.append(prev)
        cf_b.append(np.zeros(g, np.int64))
        rows_c.append(mr)
        cols_c.append(base + BITS + 1)
        cf_c.append(np.zeros(g, np.int64))

        def csr(rows: list[np.ndarray], cols: list[np.ndarray], cfs: list[np.ndarray]) -> CSR:
            r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
            c = np.concatenate(cols) if cols else np.zeros(0, np.int64)
            f = np.concatenate(cfs) if cfs else np.zeros(0, np.int64)
            order = np.lexsort((c, r))
            r, c, f = r[order], c[order], f[order]
            ptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(np.bincount(r, minlength=m), out=ptr[1:])
            return CSR(ptr, c.astype(np.uint32), np.ascontiguousarray(coeffs[f]))

        return R1CS(
            k1, self.num_aux, csr(rows_a, cols_a, cf_a), csr(rows_b, cols_b, cf_b), csr(rows_c, cols_c, cf_c)
        )

    def density(self) -> Density:
        """The A/B densities from the structure (equal to r1cs().density(), which the tests check)."""
        g, kp = self.full_groups, self.num_public
        a = np.ones((g, GROUP), dtype=bool)
        a[:, BITS + 1] = False  # z appears in C and in the next group's B only
        b = np.zeros((g, GROUP), dtype=bool)
        b[:, :ROOTS] = True
        used_z = np.zeros(g, dtype=bool)
        used_z[kp - 1 : g - 1] = True  # z_j is prev of group j + 1 >= kp
        b[:, BITS + 1] = used_z
        tail = np.ones(self.tail_bits, dtype=bool)
        return Density(
            a_aux=np.concatenate([a.reshape(-1), tail]),
            b_input=np.ones(self.num_inputs, dtype=bool),
            b_aux=np.concatenate([b.reshape(-1), tail]),
        )
