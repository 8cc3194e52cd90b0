"""NTT over Fr: the CPU path against an O(n^2) DFT and Horner evaluation with Python integers, and the CUDA
path (simulator in CI, the real GPU with PSAGENT_REAL_CUDA=1) against the CPU path, bit for bit."""

from __future__ import annotations

import os

import numpy as np
import pytest

from gpu.arith.cudashim import simulator
from gpu.arith.fields import fr_decode, fr_encode, fr_random, fr_to_mont
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.ntt import Direction, Kind, Order, bitrev, coset_shift, ntt, plan, root_of_unity, vanishing_on_coset
from gpu.ntt import cuda as ntt_cuda
from gpu.ntt.domain import Algorithm, split_passes

ALL = [(d, k, o) for d in Direction for k in Kind for o in Order]


def dft(a: list[int], logn: int, direction: Direction, kind: Kind) -> list[int]:
    """The definition, O(n^2) with Python integers."""
    n = 1 << logn
    w = root_of_unity(logn)
    g = coset_shift()
    if direction is Direction.FORWARD:
        if kind is Kind.COSET:
            a = [x * pow(g, i, R) % R for i, x in enumerate(a)]
        return [sum(a[i] * pow(w, i * j, R) for i in range(n)) % R for j in range(n)]
    winv, ninv = pow(w, R - 2, R), pow(n, R - 2, R)
    out = [sum(a[j] * pow(winv, i * j, R) for j in range(n)) * ninv % R for i in range(n)]
    if kind is Kind.COSET:
        ginv = pow(g, R - 2, R)
        out = [x * pow(ginv, i, R) % R for i, x in enumerate(out)]
    return out


def horner(coeffs: list[int], x: int) -> int:
    acc = 0
    for c in reversed(coeffs):
        acc = (acc * x + c) % R
    return acc


def in_order(vals: list[int], logn: int, reversed_: bool) -> list[int]:
    return [vals[bitrev(i, logn)] for i in range(len(vals))] if reversed_ else list(vals)


def rand_ints(n: int, rng: np.random.Generator) -> list[int]:
    return fr_decode(fr_to_mont(fr_random(n, rng)))


def test_domain_constants() -> None:
    for logn in (1, 5, 27, 32):
        w = root_of_unity(logn)
        assert pow(w, 1 << logn, R) == 1 and pow(w, 1 << (logn - 1), R) == R - 1
    assert vanishing_on_coset(4) == (pow(7, 16, R) - 1) % R
    assert plan(Order.NR).algorithm is Algorithm.DIF and not plan(Order.NR).permute_after
    assert plan(Order.RN).algorithm is Algorithm.DIT and not plan(Order.RN).permute_before
    assert split_passes(27, 10) == [9, 9, 9] and split_passes(17, 7) == [6, 6, 5]
    passes = ntt_cuda.pass_plan(27)  # (b_lo, bits, column bits), top bits first, covering 0..26 once
    assert [p[1] for p in passes] == [6, 6, 5, 10] and passes[-1] == (0, 10, 0)
    assert all(a[0] == b[0] + b[1] for a, b in zip(passes, passes[1:], strict=False))


@pytest.mark.parametrize("logn", [0, 1, 2, 3, 5])
def test_cpu_matches_dft_all_variants(logn: int, rng: np.random.Generator, seed: int) -> None:
    vals = rand_ints(1 << logn, rng)
    for d, k, o in ALL:
        want = dft(vals, logn, d, k)
        got = fr_decode(ntt(fr_encode(in_order(vals, logn, o.value[0] == "R")), direction=d, kind=k, order=o))
        assert got == in_order(want, logn, o.value[1] == "R"), f"{d} {k} {o} seed {seed}"


@pytest.mark.parametrize("logn", [4, 13])  # 13 > BLOCK_LOG: the stage-by-stage sweep runs too
def test_coset_forward_is_polynomial_evaluation(logn: int, rng: np.random.Generator, seed: int) -> None:
    n = 1 << logn
    coeffs = rand_ints(n, rng)
    w, g = root_of_unity(logn), coset_shift()
    ev = fr_decode(ntt(fr_encode(coeffs), kind=Kind.COSET))
    std = fr_decode(ntt(fr_encode(coeffs)))
    for j in rng.integers(0, n, size=4).tolist() + [0, n - 1]:
        assert ev[j] == horner(coeffs, g * pow(w, j, R) % R), f"j={j} seed {seed}"
        assert std[j] == horner(coeffs, pow(w, j, R)), f"j={j} seed {seed}"
    back = fr_decode(ntt(fr_encode(ev), direction=Direction.INVERSE, kind=Kind.COSET))
    assert back == coeffs


def test_inverse_after_forward_is_identity_batched(rng: np.random.Generator, seed: int) -> None:
    x = fr_to_mont(fr_random(3 << 14, rng)).reshape(3, 1 << 14, 8)
    for k in Kind:
        y = ntt(x, kind=k, order=Order.NR)
        assert not np.array_equal(y, x)
        z = ntt(y, kind=k, direction=Direction.INVERSE, order=Order.RN)
        np.testing.assert_array_equal(z, x, err_msg=f"{k} seed {seed}")
    # each batch row is transformed on its own
    np.testing.assert_array_equal(ntt(x)[1], ntt(x[1]))


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="power of two"):
        ntt(np.zeros((3, 8), np.uint32))
    with pytest.raises(ValueError, match="uint32"):
        ntt(np.zeros((4, 8), np.int64))
    with pytest.raises(ValueError, match="backend"):
        ntt(np.zeros((4, 8), np.uint32), backend="tpu")


# ------------------------------------------------------------------------------------------- CUDA

# (logn, pass shape): tiny shapes in the simulator still run several passes, column tiles and batches.
SIM_CASES = [
    (1, None),
    (4, None),
    (6, ntt_cuda.pass_plan(6, low=2, high=2, columns=2)),
    (5, ntt_cuda.pass_plan(5, low=3, high=1, columns=4)),
]
REAL_NPOW = int(os.environ.get("PSAGENT_TEST_NPOW", "20"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "logn,passes", SIM_CASES if simulator() else [(1, None), (10, None), (12, None), (REAL_NPOW, None)]
)
def test_cuda_matches_cpu(
    logn: int, passes: list[tuple[int, int, int]] | None, rng: np.random.Generator, seed: int
) -> None:
    batch = 2 if logn <= 12 else 1
    x = fr_to_mont(fr_random(batch << logn, rng)).reshape(batch, 1 << logn, 8)
    cases = ALL if logn <= 12 or not simulator() else ALL[:4]
    if simulator() and logn >= 5:
        cases = [
            (Direction.FORWARD, Kind.COSET, Order.RN),
            (Direction.INVERSE, Kind.STANDARD, Order.NR),
            (Direction.INVERSE, Kind.COSET, Order.NN),
            (Direction.FORWARD, Kind.STANDARD, Order.RR),
        ]
    for d, k, o in cases:
        want = ntt(x, direction=d, kind=k, order=o)
        got = ntt(x, direction=d, kind=k, order=o, backend="cuda", device=0, passes=passes)
        np.testing.assert_array_equal(got, want, err_msg=f"2^{logn} {d} {k} {o} seed {seed}")


@pytest.mark.slow
def test_cuda_device_array_in_place(rng: np.random.Generator, seed: int) -> None:
    from numba import cuda

    from gpu.device import get_device

    logn = 3 if simulator() else 16
    x = fr_to_mont(fr_random(1 << logn, rng))
    with get_device(0).use():
        d = cuda.to_device(x)
        out = ntt(d, order=Order.NR, backend="cuda", device=0)
        assert out is d
        ntt(d, order=Order.RN, direction=Direction.INVERSE, backend="cuda", device=0)
        np.testing.assert_array_equal(d.copy_to_host(), x, err_msg=f"seed {seed}")
    assert ntt_cuda.cached_bytes() > 0
