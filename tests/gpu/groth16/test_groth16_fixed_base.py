"""The setup's fixed-base multiplication (signed-digit comb, batched affine additions).

Oracle: blst (pyblst) scalar multiplication of the generator. Scalars are chosen to hit the recoding's edges
(0, 1, r - 1, digits of exactly 2^(w-1), carries through every window) and windows with an odd number of
terms; the batched addition is checked on every case it distinguishes (P + P, P + (-P), identity operands).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.curves._host import Group
from gpu.groth16.fixed_base import FixedBase, add, best_window, windows
from gpu.groth16.setup import generate
from tests.gpu._circuits import random_circuit
from tests.gpu._points import blst_points

pytestmark = pytest.mark.slow  # the first test of a process compiles the G1/G2 kernels (~25 s CPU)

GROUPS = [pytest.param(G1, id="g1"), pytest.param(G2, id="g2")]


def edge_scalars(w: int) -> list[int]:
    half = 1 << (w - 1)
    ks = [0, 1, 2, R - 1, R - 2, half, half + 1, half - 1, (1 << w) - 1, 3 * half]
    ks.append(sum(half << (w * k) for k in range(windows(w) - 1)))  # every digit exactly 2^(w-1)
    ks.append(sum((half + 1) << (w * k) for k in range(windows(w) - 1)) % R)  # a carry out of every window
    ks.append((1 << 255) - 1 - R)  # wraps negative: reduced below
    return [k % R for k in ks]


@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("window", [3, 7, 16])
def test_mul_equals_blst(group: Group, window: int) -> None:
    """w = 7 has 37 windows (odd counts at several tree levels); w = 16 is what a 2^22 setup uses (its
    table is built only once here, for G1)."""
    if window == 16 and group is G2:
        pytest.skip("the G2 16-bit table (100 MB) is exercised by the setup at scale, not in CI")
    rnd = random.Random(window)
    ks = edge_scalars(window) + [rnd.randrange(R) for _ in range(40)]
    fb = FixedBase(group, group.generator(), window=window)
    got = fb.mul(fr_from_ints(ks))
    want = group.from_blst(blst_points(group.name, ks))
    bad = [i for i in range(len(ks)) if not np.array_equal(got[i], want[i])]
    assert not bad, f"{group.name} w={window}: wrong products for scalars {[hex(ks[i]) for i in bad[:3]]}"
    assert not got[0].any()  # 0 * G is the identity (0, 0)


@pytest.mark.parametrize("group", GROUPS)
def test_batched_addition_cases(group: Group) -> None:
    a, b = [5, 7, 11, 13, 2**200 + 3], [17, 19, 23, 29, 31]

    def pts(ks: list[int]) -> np.ndarray:
        return group.from_blst(blst_points(group.name, [k % R for k in ks]))

    p, q, zero = pts(a), pts(b), pts([0] * 5)
    assert not zero.any()
    assert np.array_equal(add(group, p, p), pts([2 * k for k in a]))
    assert not add(group, p, pts([-k for k in a])).any()
    assert np.array_equal(add(group, p, zero), p) and np.array_equal(add(group, zero, q), q)
    assert not add(group, zero, zero).any()
    assert np.array_equal(add(group, p, q), pts([x + y for x, y in zip(a, b, strict=True)]))
    left, right = [5, 7, 0, 13, 31], [5, -7, 23, 0, 31]  # one of each case in a single batch
    assert np.array_equal(
        add(group, pts(left), pts(right)), pts([x + y for x, y in zip(left, right, strict=True)])
    )


def test_window_choice() -> None:
    assert best_window(1) <= 4 and best_window(10**7) == 16
    ws = [best_window(n) for n in (10, 10**3, 10**5, 10**7)]
    assert ws == sorted(ws)
    for w in range(2, 17):  # the top window of a 255-bit scalar has at most w - 1 bits: no final carry
        assert windows(w) * w >= 256
    with pytest.raises(ValueError, match="window"):
        FixedBase(G1, G1.generator(), window=17)


def test_setup_reports_progress(seed: int) -> None:
    r1cs, _, _ = random_circuit(seed, num_public=2, num_constraints=30)
    calls: list[tuple[str, float, float]] = []
    timings: dict[str, float] = {}
    generate(r1cs, test_seed=seed, progress=lambda s, d, t: calls.append((s, d, t)), timings=timings)
    stages = list(dict.fromkeys(s for s, _, _ in calls))
    assert stages == ["evaluate", "tables", "vk", "h", "l", "a", "b_g1", "b_g2"]
    done = [d for _, d, _ in calls]
    assert done == sorted(done) and calls[-1][1] == calls[-1][2]
    assert set(timings) == set(stages) and all(v >= 0 for v in timings.values())
