"""The PTX Montgomery product, run instruction by instruction by a small interpreter of the PTX subset it uses
(CI has no GPU), against Python integers; on a GPU the real-CUDA tests compare it with the generated code."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from gpu.arith.fields.constants import FQ_INV, FQ_LIMBS, FR_INV, FR_LIMBS, P_MODULUS, R_MODULUS
from gpu.arith.montgomery_ptx import limbs_of, montgomery_ptx, montgomery_ptx_evenodd

M32 = 0xFFFFFFFF


def run_ptx(text: str, operands: list[int]) -> list[int]:
    """Execute the instruction subset (mul/mad/madc lo|hi with .cc, add/addc, sub.cc/subc, mov, setp.eq, selp)
    with a carry flag, as the PTX ISA defines it; unknown instructions fail the test."""
    regs: dict[str, int] = {f"${i}": v for i, v in enumerate(operands)}
    cc = 0

    def val(x: str) -> int:
        return int(x, 16) if x.startswith("0x") else (int(x) if x.isdigit() else regs[x])

    for line in text.splitlines():
        line = line.strip().rstrip(";")
        if line in ("{", "}") or line.startswith(".reg"):
            continue
        op, args = line.split(None, 1)
        a = [x.strip() for x in args.split(",")]
        parts = op.split(".")
        name, carry_out = parts[0], "cc" in parts
        if name in ("mul", "mad", "madc"):
            prod = val(a[1]) * val(a[2])
            half = prod & M32 if "lo" in parts else prod >> 32
            s = half + (val(a[3]) if name != "mul" else 0) + (cc if name == "madc" else 0)
        elif name == "add":
            s = val(a[1]) + val(a[2])
        elif name == "addc":
            s = val(a[1]) + val(a[2]) + cc
        elif name == "sub":
            s = val(a[1]) - val(a[2])
        elif name == "subc":
            s = val(a[1]) - val(a[2]) - cc
        elif name == "mov":
            s = val(a[1])
        elif name == "setp":
            assert parts[1] == "eq"
            regs[a[0]] = int(val(a[1]) == val(a[2]))
            continue
        elif name == "selp":
            regs[a[0]] = val(a[1]) if regs[a[3]] else val(a[2])
            continue
        else:
            raise AssertionError(f"instruction outside the interpreted subset: {line}")
        if carry_out:
            cc = int(s < 0) if name in ("sub", "subc") else s >> 32
            assert cc in (0, 1), line
        elif name in ("mad", "madc", "add", "addc"):
            assert s >> 32 == 0, f"a carry the code drops is not zero: {line}"  # the bounds argument
        regs[a[0]] = s & M32
    return [regs[f"${i}"] for i in range(len(operands) // 3)]


@pytest.mark.parametrize("make", [montgomery_ptx, montgomery_ptx_evenodd], ids=["cios", "evenodd"])
@pytest.mark.parametrize(
    ("modulus", "n", "inv"), [(P_MODULUS, FQ_LIMBS, FQ_INV), (R_MODULUS, FR_LIMBS, FR_INV)], ids=["fq", "fr"]
)
def test_ptx_montgomery_product_matches_integers(
    make: Callable[[int, int, int], str], modulus: int, n: int, inv: int
) -> None:
    text = make(modulus, n, inv)
    assert {int(k) for k in re.findall(r"\$(\d+)", text)} == set(range(3 * n))  # outputs, a, b
    r_inv = pow(1 << (32 * n), -1, modulus)
    rng = random.Random(7)
    edge = [0, 1, 2, modulus - 1, modulus - 2, (1 << (32 * n)) % modulus, modulus >> 1]
    pairs = [(x, y) for x in edge for y in edge]
    pairs += [(rng.randrange(modulus), rng.randrange(modulus)) for _ in range(60)]
    for x, y in pairs:
        out = run_ptx(text, [0] * n + limbs_of(x, n) + limbs_of(y, n))
        got = sum(v << (32 * i) for i, v in enumerate(out))
        assert got == x * y * r_inv % modulus, (x, y)
