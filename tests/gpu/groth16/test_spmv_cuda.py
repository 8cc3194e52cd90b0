"""A.w, B.w, C.w on the device from resident matrices (gpu.groth16.spmv_cuda) against the host's
``R1CS.evaluate``, array for array, for plain and compact matrices, input constraints included; and a proof
made through the device evaluation against the CPU backend's bytes for the same r, s (the CPU backend is tied
to the default CUDA path by test_groth16_prove.test_cuda_proof_equals_cpu_bytes)."""

from __future__ import annotations

import numpy as np
import pytest
from _circuits import random_circuit  # tests/gpu is on sys.path

from gpu.arith.fields.constants import R_MODULUS
from gpu.groth16.r1cs import CSR, R1CS, CompactCSR
from gpu.groth16.spmv_cuda import DeviceR1CS
from gpu.groth16.synthetic import SyntheticCircuit


def _equal(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> bool:
    return all(g.shape == x.shape and np.array_equal(g, x) for g, x in zip(got, want, strict=True))


def test_device_spmv_equals_host_evaluate(seed: int) -> None:
    """Synthetic circuit (coefficients 1, -1, 2^t: compact uint8, a table row holding 1) and a random one
    (distinct random coefficients, no 1 in C's table), both forms; the witness need not satisfy the system."""
    sc = SyntheticCircuit(37, num_public=2, seed=seed)  # 2 full groups + a 5-row tail of boolean rows
    plain = sc.r1cs()
    w = sc.witness()
    want = plain.evaluate(w)
    assert np.array_equal(want[0], sc.evaluations()[1])  # the host oracle agrees with the structure
    for r1cs in (plain, plain.compact()):
        dev = DeviceR1CS.upload(r1cs, device=0)
        assert _equal(dev.evaluate_host(w), want), f"seed {seed} {type(r1cs.a).__name__}"
    rnd, wr, _ = random_circuit(seed, num_public=3, num_constraints=12)
    rng = np.random.default_rng(seed)
    wr = wr.copy()
    wr[1:, 0] ^= rng.integers(0, 2, size=wr.shape[0] - 1, dtype=np.uint32)  # unsatisfying: still equal
    want = rnd.evaluate(wr)
    for r1cs in (rnd, rnd.compact()):
        assert _equal(DeviceR1CS.upload(r1cs, device=0).evaluate_host(wr), want), f"seed {seed}"


def test_device_spmv_padding_empty_rows_and_wide_indices(seed: int) -> None:
    """An empty matrix, empty rows, uint16 indices and a domain larger than the rows: the buffer the quotient
    transforms is a, b, c then zeros, whatever ``out`` held before."""
    from numba import cuda

    rng = np.random.default_rng(seed)
    rnd, w, _ = random_circuit(seed, num_public=1, num_constraints=6)
    c = rnd.compact()
    # B: row 0 empty, row 1 holds 300 entries with distinct coefficients 2..301 (uint16 indices, no 1), the
    # other rows empty
    nb = 300
    cols = rng.integers(0, rnd.num_vars, size=nb).astype(np.uint32)
    ptr = np.array([0, 0] + [nb] * (rnd.num_constraints - 1), dtype=np.int64)
    table = np.zeros((nb, 8), dtype=np.uint32)
    table[:, 0] = np.arange(2, nb + 2, dtype=np.uint32)
    wide = CompactCSR(ptr, cols, np.arange(nb, dtype=np.uint16), table)
    m = rnd.num_constraints
    empty = CSR(np.zeros(m + 1, np.int64), np.zeros(0, np.uint32), np.zeros((0, 8), np.uint32))
    sys_ = R1CS(rnd.num_inputs, rnd.num_aux, c.a, wide, empty)
    want = sys_.evaluate(w)
    dev = DeviceR1CS.upload(sys_, device=0)
    assert dev.c.nnz == 0 and dev.b.coeff.dtype == np.uint16
    assert want[1][1].any() and not want[1][0].any()
    logn = sys_.domain_log + 1
    n = 1 << logn
    out = cuda.to_device(np.full((3, n, 8), 0xFFFFFFFF, dtype=np.uint32))
    got = dev.evaluate(cuda.to_device(w), logn, out=out).copy_to_host()
    rows = sys_.num_constraints_total
    assert _equal(tuple(got[j, :rows] for j in range(3)), want), f"seed {seed}"
    assert not got[:, rows:].any()
    with pytest.raises(ValueError, match="domain"):
        dev.evaluate(cuda.to_device(w), 2)
    with pytest.raises(ValueError, match="witness"):
        dev.evaluate(cuda.to_device(w[:-1]))


def test_device_spmv_switch_and_deferred_assignments(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``device_spmv=True`` (the engine options' device SpMV, a value: the environment plays no part) makes
    from_r1cs defer the evaluation; a deferred assignment holds the witness only (a pooled one gives back only
    its witness buffer)."""
    from gpu.groth16.prover import Assignment
    from gpu.transfer import PinnedPool

    r1cs, w, _ = random_circuit(seed, num_constraints=5)
    monkeypatch.setenv("PSAGENT_PROVER__DEVICE_SPMV", "1")  # read by the agent's configuration, not here
    assert Assignment.from_r1cs(r1cs, w).system is None
    asg = Assignment.from_r1cs(r1cs, w, device_spmv=True)
    assert asg.system is r1cs and asg.a.shape == (0, 8) and np.array_equal(asg.witness, w)
    assert Assignment.from_r1cs(r1cs, w, device_spmv=False).system is None
    pool = PinnedPool()
    pooled = Assignment.from_r1cs(r1cs, w, pool=pool, device_spmv=True)
    assert pooled.system is r1cs and pool.held_bytes == w.nbytes
    pooled.release(pool)
    assert pool.take(w.shape, w.dtype) is pooled.witness
    with pytest.raises(ValueError, match="witness"):
        Assignment.on_device(r1cs, w[:-1])


@pytest.mark.slow
def test_device_spmv_proof_equals_default_bytes(seed: int) -> None:
    """A CUDA proof whose A.w, B.w, C.w come from the key's resident matrices has the CPU backend's bytes
    for the same r, s (as the default CUDA path does: test_groth16_prove.test_cuda_proof_equals_cpu_bytes)
    and verifies; the CPU backend proves a deferred assignment to the same bytes; the matrices are uploaded
    once per key."""
    from gpu.groth16 import reference
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.setup import toxic_from_seed
    from gpu.groth16.verifier import verify

    sc = SyntheticCircuit(16, num_public=1, seed=seed)  # 17 rows: domain 2^5
    r1cs = sc.r1cs().compact()
    w, xs = sc.witness(), sc.public_inputs()
    params = reference.setup(r1cs.expanded(), toxic_from_seed(seed))  # == setup.generate (test_groth16_prove)
    cpu_pk = ProvingKey(params, r1cs.density())
    want = prove(cpu_pk, Assignment.from_r1cs(r1cs, w), r=5, s=9)[0].to_bytes()
    deferred = Assignment.on_device(r1cs, w)
    assert prove(cpu_pk, deferred, r=5, s=9)[0].to_bytes() == want, f"seed {seed}"
    pk = ProvingKey(params, r1cs.density(), backend="cuda", device=0)
    ts: list[dict[str, float]] = []
    got = prove(pk, deferred, r=5, s=9, timings=ts)[0].to_bytes()
    assert got == want, f"seed {seed}"
    assert {"upload_r1cs", "upload_witness", "spmv", "quotient"} <= ts[0].keys() and "upload_abc" not in ts[0]
    assert verify(params.vk, got, xs)
    assert not verify(params.vk, got, [(xs[0] + 1) % R_MODULUS])
    dev = pk.device_r1cs(r1cs)
    assert pk.device_r1cs(r1cs) is dev  # resident: no second upload for the same system
    with pytest.raises(ValueError, match="CUDA backend"):
        prove(cpu_pk, Assignment.on_device(dev, w), r=5, s=9)
