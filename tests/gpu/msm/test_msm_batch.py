"""MSMContext.msm_batch: K scalar vectors over one resident set of bases in one CUDA pass == msm() per vector
== the CPU backend == blst. Under the simulator on a handful of points with small windows and mostly short
scalars (the simulator's cost is per launched thread, so K and n stay small); with PSAGENT_REAL_CUDA=1 (the
GPU machine) on 2^12 / 2^10 random inputs."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path
from numba import cuda
from pyblst import BlstP1Element, BlstP2Element
from test_msm import _oracle

from gpu.arith.cudashim import simulator
from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2
from gpu.msm import MSMContext
from gpu.msm.context import pass_bytes, plan_batches
from gpu.msm.digits import window_bits

R = R_MODULUS
SIM = simulator()
GROUPS = {"g1": (G1, BlstP1Element), "g2": (G2, BlstP2Element)}
N = {"g1": 6, "g2": 4} if SIM else {"g1": 4096, "g2": 1024}
WINDOW = 3 if SIM else None  # small windows: fewer buckets to reduce in the simulator


def _mixed(rnd: random.Random, n: int) -> list[int]:
    """Zeros, ones and other values, r - 1 among them; in the simulator the others have few bits, so that few
    of the 64 windows get entries."""
    ks = [0, 1, R - 1] + [rnd.choice((0, 1, 2)) for _ in range(n - 3)]
    ks = [rnd.randrange(2, 1 << 8 if SIM else R) if k == 2 else k for k in ks]
    rnd.shuffle(ks)
    return ks


def _circuits(kind: str, rnd: random.Random, n: int) -> list[list[int]]:
    """m = mixed, 0 = all zeros, 1 = all ones, one letter per circuit."""
    return [_mixed(rnd, n) if c == "m" else [int(c)] * n for c in kind]


def _check(name: str, a: np.ndarray, pts: list, circuits: list[list[int]], seed: int) -> np.ndarray:
    """The CUDA batch == the CPU batch == the CPU msm() per vector == blst per vector; returns the batch."""
    G, ident = GROUPS[name]
    ss = [fr_from_ints(ks) for ks in circuits]
    gpu = MSMContext(a, backend="cuda", device=0).msm_batch(ss, window=WINDOW)
    assert gpu.shape == (len(ss),) + G.affine_shape
    cpu_ctx = MSMContext(a, backend="cpu")
    np.testing.assert_array_equal(gpu, cpu_ctx.msm_batch(ss, window=WINDOW), err_msg=f"seed {seed}")
    np.testing.assert_array_equal(gpu, np.stack([cpu_ctx.msm(s) for s in ss]), err_msg=f"seed {seed}")
    m = len(circuits[0])
    for k, ks in enumerate(circuits):
        assert G.to_blst(gpu[k : k + 1])[0] == _oracle(pts[:m], ks, ident), (seed, k)
    return gpu


@pytest.mark.parametrize("name", ["g1", "g2"])
@pytest.mark.parametrize("kind", ["m", "1m", "m0m"])
def test_batch(name: str, kind: str, seed: int) -> None:
    """K = 1, 2, 3: one mixed vector; an all-ones circuit next to a mixed one (its buckets start at an
    offset, circuit 0 has none); two mixed circuits around an all-zeros one."""
    rnd = random.Random(seed)
    a, pts = random_points(name, N[name], rnd)
    _check(name, a, pts, _circuits(kind, rnd, N[name]), seed)


def _counts(circuits: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per circuit: how many scalars are one, how many go to the bucket method."""
    n_one = np.array([sum(k % R == 1 for k in ks) for ks in circuits])
    n_other = np.array([sum(k % R > 1 for k in ks) for ks in circuits])
    return n_one, n_other


@pytest.mark.slow  # seven simulated passes (~15 s on the 2-core CI machine)
def test_forced_split(seed: int) -> None:
    """A budget that holds two of three circuits gives passes [0, 2) and [2, 3); one that holds only the
    largest circuit's pass gives one pass per circuit. Both equal msm() per vector, the CPU backend and blst
    (the unsplit batch of such circuits is test_batch's). Less than one circuit's pass is refused before
    anything of it is allocated (gpu.memory.BudgetExceeded), never run past its budget."""
    rnd = random.Random(seed)
    a, pts = random_points("g1", N["g1"], rnd)
    circuits = _circuits("m1m", rnd, N["g1"])
    ss = [fr_from_ints(ks) for ks in circuits]
    whole = MSMContext(a, backend="cpu").msm_batch(ss, window=WINDOW)
    for k, ks in enumerate(circuits):
        assert G1.to_blst(whole[k : k + 1])[0] == _oracle(pts, ks, BlstP1Element), (seed, k)
    ctx = MSMContext(a, backend="cuda", device=0)
    n_one, n_other = _counts(circuits)
    c = WINDOW or window_bits(int(n_other.max()), "cuda")
    one = max(pass_bytes(n_one[k : k + 1], n_other[k : k + 1], N["g1"], c, 4 * 4 * 12)[0] for k in range(3))
    two = max(pass_bytes(n_one[:2], n_other[:2], N["g1"], c, 4 * 4 * 12)[0], one)
    split = plan_batches(n_one, n_other, N["g1"], c, 4 * 4 * 12, two)
    assert split[0] == (0, 2) and len(split) == 2  # all three never fit what two of them (or one) need
    singles = len(plan_batches(n_one, n_other, N["g1"], c, 4 * 4 * 12, one))  # 3 (2 if two small ones fit)
    for budget, passes in ((two, 2), (one, singles)):
        t: dict[str, float] = {}
        got = ctx.msm_batch(ss, window=WINDOW, timings=t, max_bytes=budget)
        assert t["sub_batches"] == passes and t["n_other"] == n_other.sum()
        np.testing.assert_array_equal(got, whole, err_msg=f"seed {seed}, max_bytes {budget}")
    from gpu.memory import BudgetExceeded

    with pytest.raises(BudgetExceeded, match="MSM pass"):
        ctx.msm_batch(ss, window=WINDOW, max_bytes=one - 1)
    single = np.stack([ctx.msm(s, window=WINDOW) for s in ss])
    np.testing.assert_array_equal(single, whole, err_msg=f"seed {seed}")


def test_device_arrays_and_prefix(seed: int) -> None:
    """Scalars already on the device (a list mixing device and host arrays; a (K, m, 8) stack), m < n: the
    first m bases."""
    rnd = random.Random(seed)
    n = N["g1"]
    a, pts = random_points("g1", n, rnd)
    circuits = _circuits("mm", rnd, n - 1)
    ss = [fr_from_ints(ks) for ks in circuits]
    ctx = MSMContext(a, backend="cuda", device=0)
    got = ctx.msm_batch([cuda.to_device(ss[0]), ss[1]], window=WINDOW)
    for k, ks in enumerate(circuits):
        assert G1.to_blst(got[k : k + 1])[0] == _oracle(pts[: n - 1], ks, BlstP1Element), (seed, k)
    cpu = MSMContext(a, backend="cpu")
    for stack in (np.stack(ss), cuda.to_device(np.stack(ss))):  # also taken by the CPU backend
        np.testing.assert_array_equal(cpu.msm_batch(stack, window=WINDOW), got)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_bad_input(backend: str) -> None:
    a, _ = random_points("g1", 4, random.Random(1))
    ctx = MSMContext(a, backend=backend, device=0)
    ok = fr_from_ints([1, 2, 3])
    bad = [
        ([], "at least one"),
        ([ok, fr_from_ints([1, 2])], "one length"),
        ([fr_from_ints([1] * 5)] * 2, "5 scalars for 4 bases"),
        ([ok, ok.astype(np.uint64)], "uint32"),
        ([ok[:, :4]], r"\(m, 8\)"),
        ([ok, [[0] * 8] * 3], "not a numpy or device array"),
        (ok, "sequence of arrays"),  # one (m, 8) array is not a batch of vectors
    ]
    for arg, msg in bad:
        with pytest.raises(ValueError, match=msg):
            ctx.msm_batch(arg)
    assert not ctx.msm_batch([fr_from_ints([])] * 2).any()  # m = 0: K identities


def test_plan_batches() -> None:
    """Consecutive, greedy, at least one circuit per pass; the uint32 sort keys split too."""
    n_one = np.array([5, 0, 5, 0])
    n_other = np.array([100, 100, 0, 100])
    m, c, pb = 1000, 8, 192
    assert plan_batches(n_one, n_other, m, c, pb, None) == [(0, 4)]
    assert plan_batches(n_one, n_other, m, c, pb, 1) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    two = pass_bytes(n_one[:2], n_other[:2], m, c, pb)[0]
    assert plan_batches(n_one, n_other, m, c, pb, two) == [(0, 2), (2, 4)]  # circuit 2 needs only its ones
    assert pass_bytes(n_one[2:3], n_other[2:3], m, c, pb)[1] == 0
    big = np.array([150_000_000] * 3)  # 16 windows: 2.4e9 entries each, two exceed 2^32
    assert plan_batches(np.zeros(3), big, 1 << 29, 16, pb, None) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="uint32"):
        plan_batches(np.zeros(1), np.array([300_000_000]), 1 << 29, 16, pb, None)
