"""Montgomery multiplication as one PTX block with hardware carry chains, for the CUDA target only.

Why: the generated limb code (gpu/arith/_generated) spells each 32x32->64 step as uint64 arithmetic; PTX's
``mad.lo.cc`` / ``madc.hi.cc`` keep the carry in the flag register. Measured on the H200 (BENCHMARKS.md): the
multiply throughput is the same either way (the integer multiply rate is the bound), but the kernels are half
the PTX, use fewer registers and compile 3-6x faster (first 2^27 prove 47 s instead of 173 s).

The algorithm is the same CIOS as the generated code (no extra carry word: 2p < 2^(32n), the top limb of each
modulus is below 2^31), one row per limb of ``b``: ``t += a*b_i`` (low halves in one carry chain, high halves
in a second), ``m = t_0*inv``, ``t += m*p`` (two chains), drop the zero low word; a final ``t - p`` with a
borrow chain picks the reduced result. Inputs and output are fully reduced, exactly as for the generated
functions, so the two are interchangeable bit for bit (the real-GPU tests compare them).

The simulator cannot run PTX; :func:`cudashim.jitable_cuda` keeps the Python definition there and on the
CPU. ``gpu.options.EngineOptions.ptx`` picks the product (``off``: the generated code, for A/B timings); it
is read once, when the field modules are compiled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu.options import process


def enabled() -> bool:
    """PTX arithmetic is on unless the process's options say ``ptx="off"`` (fixed from the first use on)."""
    return process(freeze=True).ptx != "off"


def variant() -> str:
    """Which PTX product the kernels use: ``evenodd`` (default) or ``cios`` (A/B timings on the device)."""
    ptx = process(freeze=True).ptx
    return "cios" if ptx == "cios" else "evenodd"


def limbs_of(value: int, n: int) -> list[int]:
    return [(value >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def montgomery_ptx(modulus: int, n: int, inv: int) -> str:
    """The PTX text of ``out = a*b/2^(32n) mod modulus``: operands $0..$(n-1) are the outputs, then a, b."""
    p = limbs_of(modulus, n)
    a = [f"${n + j}" for j in range(n)]
    b = [f"${2 * n + j}" for j in range(n)]
    out = [f"${j}" for j in range(n)]
    t = [f"t{j}" for j in range(n + 1)]  # t[0..n] is a rotating window of registers
    lines = ["{", f".reg .u32 t<{n + 1}>, s<{n}>, m, br;", ".reg .pred nb;"]

    def chains(x: list[str], y: str, first: bool) -> None:
        """t += x*y over n limbs; t[n] is the top word (``first``: t = x*y, the first row of a*b)."""
        if first:
            for j in range(n):
                lines.append(f"mul.lo.u32 {t[j]}, {y}, {x[j]};")
            lines.append(f"mul.hi.u32 {t[n]}, {y}, {x[n - 1]};")
            lines.append(f"mad.hi.cc.u32 {t[1]}, {y}, {x[0]}, {t[1]};")
            for j in range(1, n - 1):
                lines.append(f"madc.hi.cc.u32 {t[j + 1]}, {y}, {x[j]}, {t[j + 1]};")
            lines.append(f"addc.u32 {t[n]}, {t[n]}, 0;")
            return
        lines.append(f"mad.lo.cc.u32 {t[0]}, {y}, {x[0]}, {t[0]};")
        for j in range(1, n):
            lines.append(f"madc.lo.cc.u32 {t[j]}, {y}, {x[j]}, {t[j]};")
        lines.append(f"addc.u32 {t[n]}, {t[n]}, 0;")
        lines.append(f"mad.hi.cc.u32 {t[1]}, {y}, {x[0]}, {t[1]};")
        for j in range(1, n - 1):
            lines.append(f"madc.hi.cc.u32 {t[j + 1]}, {y}, {x[j]}, {t[j + 1]};")
        lines.append(f"madc.hi.u32 {t[n]}, {y}, {x[n - 1]}, {t[n]};")

    pk = [f"0x{v:08x}" for v in p]
    for i in range(n):
        if i > 0:
            lines.append(f"mov.u32 {t[n]}, 0;")
        chains(a, b[i], first=(i == 0))
        lines.append(f"mul.lo.u32 m, {t[0]}, 0x{inv:08x};")
        chains(pk, "m", first=False)
        t = t[1:] + t[:1]  # t[0] is zero now: it becomes the next top word
    lines.append(f"sub.cc.u32 s0, {t[0]}, {pk[0]};")  # s = t - p; keep t where that borrows
    lines += [f"subc.cc.u32 s{j}, {t[j]}, {pk[j]};" for j in range(1, n)]
    lines += ["subc.u32 br, 0, 0;", "setp.eq.u32 nb, br, 0;"]
    lines += [f"selp.b32 {out[j]}, s{j}, {t[j]}, nb;" for j in range(n)]
    lines.append("}")
    return "\n".join(lines)


def montgomery_ptx_evenodd(modulus: int, n: int, inv: int) -> str:
    """The same product with the running sum split by limb parity, so that the low and high halves of one
    32x32 product land in adjacent words of ONE carry chain (ptxas can issue them as one wide multiply-add)
    and the even and odd chains are independent of each other (instruction-level parallelism).

    Why: the row-wise CIOS above computes every product twice (its low half in one chain, its high half in
    another), ~4n^2 multiplies; here each product feeds one lo/hi pair of the same chain. State between rows:
    ``T = X + Y*2^32`` with X at word offset 0 and Y at offset 1. A row adds a_even*b_i into X and a_odd*b_i
    into Y (Y's words also shifted down by two, with the word that falls off X folded into X[0]), picks
    ``m = X[0]*inv`` and adds p_even*m, p_odd*m the same way; X[0] becomes 0, and dividing by 2^32 swaps the
    roles (Y is now at offset 0, X beyond its first word at offset 1). ``n`` must be even; the bounds
    (T < 2p, 2p·2^33 < 2^(32(n+1))) keep every carry out of the top word zero.
    """
    if n % 2:
        raise ValueError("the even/odd split needs an even number of limbs")
    p = limbs_of(modulus, n)
    pk = [f"0x{v:08x}" for v in p]
    a = [f"${n + j}" for j in range(n)]
    b = [f"${2 * n + j}" for j in range(n)]
    out = [f"${j}" for j in range(n)]
    x = [f"e{j}" for j in range(n)]
    y = [f"o{j}" for j in range(n)]
    lines = ["{", f".reg .u32 e<{n}>, o<{n}>, t<{n}>, s<{n}>, m, z, br;", ".reg .pred nb;", "mov.u32 z, 0;"]

    def chain(acc: list[str], src: list[str], mul: str, parity: int, shift: bool, carry_in: bool) -> None:
        """acc += the products src[j]*mul of limbs j of this parity, product j at acc words j - parity and
        j - parity + 1; with ``shift`` the old acc is read two words up (acc = acc >> 64 + products). The
        even chain's carry out is kept for the caller (it belongs to the odd accumulator's top word); the odd
        chain's is zero by the bounds."""
        for k in range(0, n, 2):
            j = k + parity
            lo_in = (acc[k + 2] if k + 2 < n else "z") if shift else acc[k]
            hi_in = (acc[k + 3] if k + 3 < n else "z") if shift else acc[k + 1]
            op = "madc" if (k > 0 or carry_in) else "mad"
            lines.append(f"{op}.lo.cc.u32 {acc[k]}, {src[j]}, {mul}, {lo_in};")
            cc = ".cc" if (k + 2 < n or parity == 0) else ""
            lines.append(f"madc.hi{cc}.u32 {acc[k + 1]}, {src[j]}, {mul}, {hi_in};")

    for i in range(n):
        if i == 0:
            for k in range(0, n, 2):
                lines.append(f"mul.lo.u32 {x[k]}, {a[k]}, {b[0]};")
                lines.append(f"mul.hi.u32 {x[k + 1]}, {a[k]}, {b[0]};")
                lines.append(f"mul.lo.u32 {y[k]}, {a[k + 1]}, {b[0]};")
                lines.append(f"mul.hi.u32 {y[k + 1]}, {a[k + 1]}, {b[0]};")
        else:
            lines.append(f"add.cc.u32 {x[0]}, {x[0]}, {y[1]};")  # the word the shift drops from y
            chain(y, a, b[i], 1, shift=True, carry_in=True)
            chain(x, a, b[i], 0, shift=False, carry_in=False)
            lines.append(f"addc.u32 {y[n - 1]}, {y[n - 1]}, 0;")
        lines.append(f"mul.lo.u32 m, {x[0]}, 0x{inv:08x};")
        chain(y, pk, "m", 1, shift=False, carry_in=False)
        chain(x, pk, "m", 0, shift=False, carry_in=False)
        lines.append(f"addc.u32 {y[n - 1]}, {y[n - 1]}, 0;")
        x, y = y, x
    # after the last swap x is the offset-1 accumulator and y the one whose first word is zero:
    # T = x + y / 2^32, i.e. t_k = x_k + y_(k+1)
    t = [f"t{j}" for j in range(n)]
    lines.append(f"add.cc.u32 {t[0]}, {x[0]}, {y[1]};")
    lines += [f"addc.cc.u32 {t[k]}, {x[k]}, {y[k + 1]};" for k in range(1, n - 1)]
    lines.append(f"addc.u32 {t[n - 1]}, {x[n - 1]}, 0;")
    lines.append(f"sub.cc.u32 s0, {t[0]}, {pk[0]};")
    lines += [f"subc.cc.u32 s{j}, {t[j]}, {pk[j]};" for j in range(1, n)]
    lines += ["subc.u32 br, 0, 0;", "setp.eq.u32 nb, br, 0;"]
    lines += [f"selp.b32 {out[j]}, s{j}, {t[j]}, nb;" for j in range(n)]
    lines.append("}")
    return "\n".join(lines)


def montgomery_intrinsic(modulus: int, n: int, inv: int) -> Callable[..., Any]:
    """A numba-cuda intrinsic ``mul(a, b)`` on UniTuple(uint32, n) values running :func:`montgomery_ptx`."""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    text = (montgomery_ptx_evenodd if variant() == "evenodd" else montgomery_ptx)(modulus, n, inv)
    i32 = ir.IntType(32)
    constraints = ",".join(["=r"] * n + ["r"] * (2 * n))
    fnty = ir.FunctionType(ir.LiteralStructType([i32] * n), [i32] * (2 * n))

    @intrinsic
    def mont_mul(typingctx, a, b):
        tup = types.UniTuple(types.uint32, n)
        if a != tup or b != tup:
            return None
        sig = tup(tup, tup)

        def codegen(context, builder, sig, args):
            va, vb = args
            ops = [builder.extract_value(va, j) for j in range(n)]
            ops += [builder.extract_value(vb, j) for j in range(n)]
            res = builder.call(ir.InlineAsm(fnty, text, constraints), ops)
            out = ir.Constant(context.get_value_type(tup), ir.Undefined)
            for j in range(n):
                out = builder.insert_value(out, builder.extract_value(res, j), j)
            return out

        return sig, codegen

    return mont_mul


def cuda_montgomery(modulus: int, n: int, inv: int) -> Callable[..., Any] | None:
    """The CUDA definition used in place of a generated ``*_mul`` (a thin device function over the intrinsic),
    or None when the PTX product is off."""
    if not enabled():
        return None
    intr = montgomery_intrinsic(modulus, n, inv)

    def mul(a, b):
        return intr(a, b)

    return mul
