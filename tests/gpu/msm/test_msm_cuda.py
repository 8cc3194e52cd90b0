"""The CUDA MSM pipeline == the CPU MSM == blst. Under the simulator (CI) on a handful of points with small
windows; with PSAGENT_REAL_CUDA=1 (the GPU machine) on 2^12 random inputs and the same edge cases."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path
from numba import cuda
from pyblst import BlstP1Element, BlstP2Element
from test_msm import _edge_case_inputs, _oracle

from gpu.arith.cudashim import simulator
from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2
from gpu.msm import MSMContext
from gpu.msm.sort import exclusive_scan

R = R_MODULUS
SIM = simulator()
GROUPS = {"g1": (G1, BlstP1Element), "g2": (G2, BlstP2Element)}


def _check(name: str, a: np.ndarray, pts: list, ks: list[int], window: int | None, seed: int) -> None:
    G, ident = GROUPS[name]
    s = fr_from_ints(ks)
    gpu = MSMContext(a, backend="cuda", device=0).msm(s, window=window)
    cpu = MSMContext(a, backend="cpu").msm(s, window=window)
    np.testing.assert_array_equal(gpu, cpu, err_msg=f"seed {seed}")
    assert G.to_blst(gpu[None])[0] == _oracle(pts, ks, ident), seed


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("name", ["g1", "g2"])
def test_random(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    n = (5 if name == "g1" else 3) if SIM else 4096
    a, pts = random_points(name, n, rnd)
    ks = [rnd.randrange(R) for _ in range(n)]
    _check(name, a, pts, ks, 3 if SIM else None, seed)


@pytest.mark.parametrize("name", ["g1"] if SIM else ["g1", "g2"])
def test_edge_cases(name: str, seed: int) -> None:
    """Zero scalars, ones (batch addition), r - 1, repeated points, an identity base; in the simulator
    with scalars of few bits so that the window count stays small."""
    rnd = random.Random(seed)
    a, pts, ks = _edge_case_inputs(name, rnd)
    if SIM:
        ks = [k if k in (0, 1) else rnd.randrange(1 << 8) for k in ks]
    _check(name, a, pts, ks, 4 if SIM else None, seed)


def test_one_bucket_spanning_many_threads(seed: int) -> None:
    """One point repeated with one scalar: every entry lands in the same buckets, so they span many
    accumulation chunks and the fix-up path does all the work."""
    rnd = random.Random(seed)
    a, pts = random_points("g1", 1, rnd)
    n = 40 if SIM else 5000
    k = rnd.randrange(2, 1 << 6) if SIM else rnd.randrange(R)
    rep = np.repeat(a, n, axis=0)
    got = MSMContext(rep, backend="cuda", device=0).msm(fr_from_ints([k] * n), window=3 if SIM else None)
    assert G1.to_blst(got[None])[0] == pts[0].scalar_mul(n * k % R), seed


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
def test_exclusive_scan(rng: np.random.Generator) -> None:
    n = 5000 if SIM else 3_000_001  # > one tile of 2048: exercises the recursion
    x = rng.integers(0, 1000, size=n, dtype=np.uint32)
    d_out = cuda.device_array(n, dtype=np.uint32)
    exclusive_scan(cuda.to_device(x), d_out, n)
    want = np.concatenate([[0], np.cumsum(x, dtype=np.uint64)[:-1]]).astype(np.uint32)
    np.testing.assert_array_equal(d_out.copy_to_host(), want)


def test_device_selection(seed: int) -> None:
    """Devices are discovered when asked; a job names its device (object or index): there is no default
    device; bad indices are a GpuError; a CUDA job without a device is refused."""
    from gpu.device import Device, devices, get_device
    from gpu.placement import GpuError

    found = devices()
    assert found and all(isinstance(d, Device) for d in found)
    d0 = get_device(found[0].index)
    assert get_device(d0.index) == d0 and get_device(d0) is d0
    with pytest.raises(GpuError, match="no CUDA device with index 10000"):
        get_device(10_000)
    with pytest.raises(TypeError, match="must be named"):
        get_device(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="explicit device"):
        MSMContext(np.zeros((1, 2, 12), np.uint32), backend="cuda")
    with d0.use() as held:  # the lock is re-entrant for the holding thread
        assert held is d0
        with d0.use():
            pass
    rnd = random.Random(seed)
    a, pts = random_points("g1", 2, rnd)
    ks = [1, rnd.randrange(2, 1 << 6)]
    got = MSMContext(a, backend="cuda", device=d0.index).msm(fr_from_ints(ks), window=3)
    assert G1.to_blst(got[None])[0] == _oracle(pts, ks, BlstP1Element), seed
