"""A proving key over bases loaded straight to the device (gpu.groth16.params_device.load_to_device +
ProvingKey.from_device_parameters), under the CUDA simulator: its proof equals, byte for byte, the proof of
the key built from the host reader's arrays for the same r, s (on the CPU backend: one simulated CUDA proof
is ~15-30 s; CUDA == CPU bytes for a host-built key is test_groth16_prove's
test_cuda_proof_equals_cpu_bytes), and verifies (pairing, pyblst); the host constructor's checks refuse the
same bad inputs here, with the same messages.

Parameters come from the pure-Python reference setup (Python integers + pyblst; equal to setup.generate's,
test_groth16_prove) and are written to a .params file by Parameters.write; the circuit is tiny (domain 2^5)
because the simulator runs every device thread as Python."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

from gpu.arith.fields.constants import R_MODULUS
from gpu.device import devices
from gpu.groth16 import reference
from gpu.groth16.params import Parameters
from gpu.groth16.params_device import DeviceParameters, load_to_device
from gpu.groth16.prover import Assignment, ProvingKey, permuted_h_bases, prove
from gpu.groth16.setup import toxic_from_seed
from gpu.groth16.synthetic import SyntheticCircuit
from gpu.groth16.verifier import verify
from gpu.msm import MSMContext


def _circuit(seed: int, constraints: int = 16) -> tuple[SyntheticCircuit, Parameters]:
    sc = SyntheticCircuit(constraints, num_public=1, seed=seed)  # 17 rows with the input: domain 2^5
    return sc, reference.setup(sc.r1cs(), toxic_from_seed(seed))


def _uploaded(params: Parameters, *, bitrev: bool = True) -> DeviceParameters:
    """DeviceParameters made from host arrays (what load_to_device gives, without running its decoder)."""
    logn = params.domain_log
    h = permuted_h_bases(params.h, logn) if bitrev else params.h
    with devices()[0].use():
        arrays = (h, params.l, params.a, params.b_g1, params.b_g2)
        up = [cuda.to_device(np.ascontiguousarray(x)) for x in arrays]
    return DeviceParameters(params.vk, *up, domain_log=logn, h_bitrev=bitrev)


@pytest.mark.slow
def test_device_loaded_key_proves_the_host_keys_bytes(tmp_path: Path, seed: int) -> None:
    sc, params = _circuit(seed)
    r1cs, w, xs = sc.r1cs(), sc.witness(), sc.public_inputs()
    path = tmp_path / "t.params"
    params.write(path)
    host = Parameters.read(path, subgroup_check=False)  # as load_to_device: trusted by the digest record
    dparams = load_to_device(path, devices()[0], h_bitrev=True, chunk_points=16)  # several chunks per query
    pk_dev = ProvingKey.from_device_parameters(dparams, r1cs.density(), device=0)
    assert pk_dev.params is None and pk_dev.vk == params.vk and pk_dev.logn == params.domain_log
    assert all(pk_dev.ctx[k]._bases is getattr(dparams, k) for k in pk_dev.ctx)  # resident, not copied
    pk_host = ProvingKey(host, r1cs.density())
    asg = Assignment.from_r1cs(r1cs, w, device_spmv=False)
    want = prove(pk_host, asg, r=5, s=9)[0].to_bytes()
    got = prove(pk_dev, asg, r=5, s=9)[0].to_bytes()
    assert got == want, f"seed {seed}"
    assert verify(params.vk, got, xs)
    assert not verify(params.vk, got, [(xs[0] + 1) % R_MODULUS])


def test_device_key_refusals(seed: int) -> None:
    """Every check of the host constructor, with its message: variable counts, A and B query sizes, an
    identity delta; and what only a resident key can get wrong: H not bit-reversed or not 2^k slots."""
    sc, params = _circuit(seed)
    density = sc.r1cs().density()
    good = _uploaded(params)
    assert ProvingKey.from_device_parameters(good, density, device=0).num_aux == params.l.shape[0]
    other = SyntheticCircuit(24, num_public=1, seed=seed).r1cs().density()
    cases = [
        (dataclasses.replace(good), other, "density does not match"),
        (dataclasses.replace(good, a=good.a[:-1]), density, "A query has"),
        (dataclasses.replace(good, b_g2=good.b_g2[:-1]), density, "B queries have"),
        (dataclasses.replace(good, b_g1=good.b_g1[:-1]), density, "B queries have"),
        (_uploaded(params, bitrev=False), density, "bit-reversed"),
        (dataclasses.replace(good, h=good.h[:-1]), density, "H query has"),
    ]
    zero = dataclasses.replace(params.vk, delta_g1=np.zeros_like(params.vk.delta_g1))
    cases.append((dataclasses.replace(good, vk=zero), density, "delta is the identity"))
    zero2 = dataclasses.replace(params.vk, delta_g2=np.zeros_like(params.vk.delta_g2))
    cases.append((dataclasses.replace(good, vk=zero2), density, "delta is the identity"))
    for dp, dens, msg in cases:
        with pytest.raises(ValueError, match=msg):
            ProvingKey.from_device_parameters(dp, dens, device=0)
    # the host constructor says the same for the same faults
    with pytest.raises(ValueError, match="A query has"):
        ProvingKey(dataclasses.replace(params, a=params.a[:-1]), density, backend="cuda", device=0)
    with pytest.raises(ValueError, match="delta is the identity"):
        ProvingKey(dataclasses.replace(params, vk=zero), density, backend="cuda", device=0)


@pytest.mark.slow
def test_msm_context_takes_device_bases(seed: int) -> None:
    """MSMContext over bases already on the device: the same sum as over the host array (CPU backend), no
    copy; a non-uint32 device array and a CPU backend are refused."""
    _, params = _circuit(seed)
    bases = params.l[:6]
    sc = np.random.default_rng(seed).integers(0, 1 << 32, size=(bases.shape[0], 8), dtype=np.uint32)
    sc[:, 7] &= 0x0FFFFFFF  # canonical: below r
    with devices()[0].use():
        d = cuda.to_device(bases)
    ctx = MSMContext(d, backend="cuda", device=0)
    assert ctx._bases is d and ctx.n == bases.shape[0]
    assert np.array_equal(ctx.msm(sc), MSMContext(bases).msm(sc)), f"seed {seed}"
    with pytest.raises(ValueError, match="backend='cuda'"):
        MSMContext(d)
    with pytest.raises(ValueError, match="uint32"):
        MSMContext(cuda.to_device(bases.astype(np.uint64)), backend="cuda", device=0)


def test_host_loaded_key_is_the_files_points_page_locked(tmp_path: Path, seed: int) -> None:
    """load_to_host (the streamed layouts' key): the file decoded on the device a chunk at a time into host
    arrays equal to the host reader's, in natural order, the file's map closed after (the H100 run's first
    version kept a view of it alive: BufferError); a bad point is refused as load_to_device refuses it."""
    from gpu.groth16 import plan
    from gpu.groth16.params_device import load_to_host
    from gpu.transfer import is_pinned

    sc, params = _circuit(seed)
    path = tmp_path / "t.params"
    params.write(path)
    got = load_to_host(path, devices()[0], chunk_points=5)  # several chunks in every section
    want = Parameters.read(path, subgroup_check=False)
    for name, _, arr in want.sections():
        assert np.array_equal(getattr(got, name), arr), name
        assert is_pinned(getattr(got, name))  # page-locked (pinned_empty: plain arrays in the simulator)
    assert got.vk == want.vk
    lay = plan.candidates(plan.ProofSizes.of_r1cs(sc.r1cs()), plan.STREAM16, device_spmv=False)[0]
    pk = ProvingKey(got, sc.r1cs().density(), backend="cuda", device=0, layout=lay)
    assert pk.streamed and pk.ctx == {} and pk.host_bases is not None
    assert all(pk.host_bases[name] is getattr(got, name) for name in ("h", "l", "a", "b_g1", "b_g2"))
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x40  # the last B_G2 point: a coordinate changed, no longer on the curve
    bad = tmp_path / "bad.params"
    bad.write_bytes(bytes(raw))
    with pytest.raises(Exception, match="off the curve"):
        load_to_host(bad, devices()[0], chunk_points=5)
