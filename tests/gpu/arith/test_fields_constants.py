"""Every derived field constant recomputed from the two moduli with Python integers."""

from __future__ import annotations

import gpu.arith._generated.fq as gfq
import gpu.arith._generated.fr as gfr
from gpu.arith.fields import constants as c


def test_montgomery_constants() -> None:
    for m, bits, R, R2, R3, inv in (
        (c.R_MODULUS, 256, c.FR_R, c.FR_R2, c.FR_R3, c.FR_INV),
        (c.P_MODULUS, 384, c.FQ_R, c.FQ_R2, c.FQ_R3, c.FQ_INV),
    ):
        assert R == (1 << bits) % m
        assert R2 == (1 << (2 * bits)) % m
        assert R3 == (1 << (3 * bits)) % m
        assert (inv * m) % (1 << 32) == (1 << 32) - 1  # inv = -m^-1 mod 2^32
    assert c.R_MODULUS.bit_length() == 255 and c.P_MODULUS.bit_length() == 381


def test_bls_parameter_relations() -> None:
    x = c.BLS_X
    assert c.R_MODULUS == x**4 - x**2 + 1
    assert c.P_MODULUS == (x - 1) ** 2 * (x**4 - x**2 + 1) // 3 + x
    assert c.G1_COFACTOR == (x - 1) ** 2 // 3


def test_generators_on_curves() -> None:
    p = c.P_MODULUS
    gx, gy = c.G1_GENERATOR
    assert (gy * gy - gx**3 - c.G1_B) % p == 0

    def m2(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return ((a[0] * b[0] - a[1] * b[1]) % p, (a[0] * b[1] + a[1] * b[0]) % p)

    X, Y = c.G2_GENERATOR
    rhs = m2(m2(X, X), X)
    assert m2(Y, Y) == ((rhs[0] + c.G2_B[0]) % p, (rhs[1] + c.G2_B[1]) % p)


def test_generated_limb_constants() -> None:
    for g, m, n in ((gfr, c.R_MODULUS, 8), (gfq, c.P_MODULUS, 12)):
        assert g.MODULUS == m and g.NLIMBS == n
        assert [int(getattr(g, f"P{j}")) for j in range(n)] == list(c.limbs(m, n))
        assert [int(getattr(g, f"CP{j}")) for j in range(n)] == [(1 << 32) - x for x in c.limbs(m, n)]
        assert int(g.INV) == (-pow(m, -1, 1 << 32)) % (1 << 32)
        # the no-carry CIOS variant needs the top limb below (2^32 - 1)/2 - 1
        assert c.limbs(m, n)[-1] < (2**32 - 1) // 2 - 1
    assert [int(x) for x in gfr.fr_one()] == list(c.limbs(c.FR_R, 8))
    assert [int(x) for x in gfq.fq_one()] == list(c.limbs(c.FQ_R, 12))
    assert [int(x) for x in gfr.fr_r2()] == list(c.limbs(c.FR_R2, 8))
    assert [int(x) for x in gfq.fq_r2()] == list(c.limbs(c.FQ_R2, 12))
    assert sum(int(x) << (32 * j) for j, x in enumerate(gfq.fq_PM2)) == c.P_MODULUS - 2
    assert sum(int(x) << (32 * j) for j, x in enumerate(gfr.fr_PM2)) == c.R_MODULUS - 2
