"""P27: the memory plan (gpu.groth16.plan) is what the prover allocates, phase by phase, in every layout.

* At 32GiB sizes (arithmetic only): the H MSM's phase counts the whole pass MSMContext._pass allocates (the
  P20 run ran out of memory where the old plan counted the sorted entries alone), every MSM's bound covers
  every class count, and the layouts fit 80, 24 and 16 GB budgets.
* Under the simulator (or a GPU with PSAGENT_REAL_CUDA=1), with gpu.memory counting every allocation: each
  layout (resident, streamed with the device SpMV, streamed with the host's) proves the CPU backend's bytes
  with its MSMs cut into several passes; every phase's measured peak is at most its planned bytes; each MSM
  pass allocates exactly the buffers ``pass_buffers`` lists; a cap equal to the plan's peak passes and one
  byte less is refused before the phase that needs it, naming it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from gpu import memory
from gpu.groth16 import plan
from gpu.groth16.prover import Assignment, ProvingKey, prove
from gpu.groth16.setup import generate
from gpu.groth16.synthetic import SyntheticCircuit
from gpu.msm import context as msm_context
from gpu.msm.digits import num_windows, window_bits

memory.install()

# one 32GiB PoRep partition (docs/circuit.md; nnz from cuzk's PCE extraction)
PARTITION_32GIB = plan.ProofSizes(
    logn=27, num_inputs=328, num_aux=130_169_893, a_aux=129_753_620 - 328, b_input=0, b_aux=33_112_282,
    rows=130_278_869 + 328, matrices=((309_400_000, 2, 2466), (130_300_000, 2, 2466), (282_700_000, 2, 2466)),
)
GB = 10**9


def test_the_h_msm_phase_counts_its_whole_pass() -> None:
    """At 2^27 the H MSM's pass allocates ~20.7 GB (sort entries 12.9, buckets 4.8, chunk sums 2.4, ...):
    the phase that runs it holds h and that pass, not 12 windows of sorted entries alone (the P20 plan)."""
    s = PARTITION_32GIB
    n = s.n
    c = window_bits(n - 1)
    worst = msm_context.pass_bytes(np.array([0]), np.array([n - 1]), n, c, plan.G1_XYZZ)[0]
    assert 20.5 * GB < worst < 21 * GB  # MSMContext._pass allocates 20,719,913,136 bytes here (20.72 GB)
    buffers = msm_context.pass_buffers(np.array([0]), np.array([n - 1]), n, c, plan.G1_XYZZ)
    assert buffers["buckets"] == num_windows(c) * (1 << (c - 1)) * plan.G1_XYZZ  # what P20's plan left out
    one_pass = plan.Layout.resident_of(s, device_spmv=True)
    msm_h = {p.name: p for p in one_pass.phases()}["msm_h"]
    assert msm_h.bytes >= plan.FR * n + worst


@pytest.mark.parametrize("m", [1, 2, 37, 4096, 1 << 20, 130_169_893])
def test_an_msm_bound_covers_every_class_count(m: int) -> None:
    """msm_bound(m) >= the bytes of an MSM of m scalars whatever k of them take the bucket method (the window
    follows k), with or without scalars one."""
    bound = msm_context.msm_bound(m, plan.G1_XYZZ)
    ks = sorted({1, 2, 3, m // 3, m // 2, m - 1, m} | {1 << e for e in range(m.bit_length())})
    for k in (k for k in ks if 1 <= k <= m):
        for ones in (0, 1):
            got = msm_context.msm_bytes(
                np.array([ones]), np.array([k]), m, window_bits(k), plan.G1_XYZZ
            )
            assert got <= bound, (m, k, ones)


@pytest.mark.parametrize(
    ("budget_gb", "kind"),
    [(81.5, plan.RESIDENT), (22.0, plan.STREAM24), (14.4, plan.STREAM16)],
)
def test_a_32gib_partition_has_a_layout_for_80_24_and_16_gb_cards(budget_gb: float, kind: str) -> None:
    """An H100's budget (85 GB, less the context, the kernels' local memory and the reserve) keeps the key
    resident; a 24 GB card's (~22 GB) streams the bases and keeps the R1CS; a 16 GB card's (~14.4 GB) streams
    the bases and computes A.w, B.w, C.w on the host. Each peak is within its budget; below the smallest
    streamed layout there is none, and the error says what would have fitted."""
    s = PARTITION_32GIB
    lay = plan.choose_layout(s, int(budget_gb * GB), device_spmv=True)
    assert lay.name == kind and lay.peak() <= budget_gb * GB
    assert lay.device_spmv == (kind != plan.STREAM16)
    assert [p.name for p in lay.phases()] == ["h_step", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2"]
    if kind == plan.RESIDENT:  # the 80 GB card: the whole key and the device SpMV, 4 GB to spare at least
        assert lay.key_on_device and lay.peak() <= 81.5 * GB - 3.9 * GB
    else:
        vk = 3 * plan.G1_AFFINE + 3 * plan.G2_AFFINE + 4 + plan.G1_AFFINE * s.num_inputs
        assert lay.host_bytes()["bases (page-locked)"] == plan.params_file_bytes(s) - vk - 5 * 4  # the points
    smallest = plan.smallest_layout(s, device_spmv=True)
    with pytest.raises(plan.LayoutError) as err:
        plan.choose_layout(s, smallest.peak() - 1, device_spmv=True)
    assert err.value.need == smallest.peak()
    with pytest.raises(plan.LayoutError, match="resident"):  # the key alone is 48 GB, the R1CS 5.9
        plan.choose_layout(s, 55 * GB, device_spmv=True, force=plan.RESIDENT)


# ------------------------------------------------------------------------------- proofs under the ledger


@pytest.fixture(scope="module")
def small() -> dict[str, Any]:
    sc = SyntheticCircuit(16, num_public=1, seed=11)  # 17 rows: a domain of 2^5
    r1cs = sc.r1cs().compact()
    params = generate(r1cs.expanded(), test_seed=11)
    w = sc.witness()
    cpu = prove(ProvingKey(params, r1cs.density()), Assignment.from_r1cs(r1cs, w), r=5, s=9)[0].to_bytes()
    return {"r1cs": r1cs, "params": params, "w": w, "cpu": cpu, "xs": sc.public_inputs()}


def _layout(small: dict[str, Any], kind: str, spmv: bool) -> plan.Layout:
    """The kind's one-pass layout cut into passes of 16 points for H (of 32) and 4 for L (16 points), A (17),
    B_G1 (6) and B_G2 (2 a pass): several passes of every MSM."""
    sizes = plan.ProofSizes.of_r1cs(small["r1cs"])
    return replace(plan.candidates(sizes, kind, device_spmv=spmv)[0], h_chunk=16, chunk=4)


# the resident layout with A.w, B.w, C.w from the host is the default path of test_groth16_prove's CUDA == CPU
CASES = [(plan.RESIDENT, True), (plan.STREAM24, True), (plan.STREAM16, False)]


@pytest.mark.parametrize(("kind", "spmv"), CASES)
def test_every_layout_proves_the_cpu_bytes_within_its_plan(
    small: dict[str, Any], kind: str, spmv: bool
) -> None:
    import gc

    lay = _layout(small, kind, spmv)
    led = memory.ledger(0)
    gc.collect()  # what earlier tests dropped in reference cycles
    before = led.live  # the process's other device arrays (earlier tests', cached tables): not this key's
    pk = ProvingKey(small["params"], small["r1cs"].density(), backend="cuda", device=0, layout=lay)
    assert pk.streamed == (kind != plan.RESIDENT)
    asg = Assignment.from_r1cs(small["r1cs"], small["w"], device_spmv=spmv)
    ts: list[dict[str, float]] = []
    got = prove(pk, asg, r=5, s=9, timings=ts, memory_bytes=lay.working())[0].to_bytes()
    assert got == small["cpu"], kind
    assert all(ts[0][f"msm_{m}.passes"] > 1 for m in ("h", "l", "a", "b_g1", "b_g2"))
    assert memory.counting(0)
    planned = lay.phase_bytes()
    assert set(led.phases) >= set(planned)
    for name, want in planned.items():
        assert led.phases[name].planned == want
        assert 0 < led.phases[name].peak - before <= want, (kind, name, led.phases[name], want, before)
    if spmv:  # the device SpMV reads the witness canonical: no Montgomery copy of it in the H step
        h_step = {p.name: p for p in lay.phases()}["h_step"].buffers
        assert set(h_step) == {"witness", "NTT buffer a", "NTT buffer b", "Z inverse"}


def test_each_msm_pass_allocates_exactly_its_planned_buffers(
    small: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wrapped around MSMContext._pass: the bytes allocated inside equal ``pass_buffers`` for the pass's
    class counts, window and the sort entries its scalars really make."""
    from gpu.msm.digits import _digits_n

    seen: list[tuple[int, int]] = []
    real = msm_context.MSMContext._pass

    def counted(self: Any, bases: Any, d_s: list[Any], cls: Any, n_one: Any, n_other: Any, c: int,
                out: Any, mark: Any) -> None:
        led = memory.ledger(0)
        before = led.allocated_bytes
        real(self, bases, d_s, cls, n_one, n_other, c, out, mark)
        m = int(cls.shape[1])
        nent = 0
        for s in d_s:
            host = np.ascontiguousarray(s.copy_to_host())
            digits = np.zeros((host.shape[0], num_windows(c)), dtype=np.int32)
            classes = np.zeros(host.shape[0], dtype=np.uint8)
            _digits_n(0, host.shape[0], host, c, num_windows(c), digits, classes)
            nent += int(np.count_nonzero(digits[classes == 2]))
        pb = 4 * 4 * int(np.prod(self.group.coord_shape))
        want = sum(msm_context.pass_buffers(n_one, n_other, m, c, pb, nent=nent).values())
        seen.append((led.allocated_bytes - before, want))

    monkeypatch.setattr(msm_context.MSMContext, "_pass", counted)
    lay = _layout(small, plan.STREAM24, True)
    pk = ProvingKey(small["params"], small["r1cs"].density(), backend="cuda", device=0, layout=lay)
    got = prove(pk, Assignment.from_r1cs(small["r1cs"], small["w"], device_spmv=True), r=5, s=9)[0]
    assert got.to_bytes() == small["cpu"]
    assert len(seen) > 10 and all(a == b for a, b in seen), seen


def test_a_cap_at_the_plans_peak_passes_and_one_byte_less_fails_in_the_named_phase(
    small: dict[str, Any],
) -> None:
    lay = _layout(small, plan.RESIDENT, True)
    pk = ProvingKey(small["params"], small["r1cs"].density(), backend="cuda", device=0, layout=lay)
    asg = Assignment.from_r1cs(small["r1cs"], small["w"], device_spmv=True)
    assert prove(pk, asg, r=5, s=9, memory_bytes=lay.working())[0].to_bytes() == small["cpu"]
    largest = max(lay.phases(), key=lambda p: p.bytes).name
    with pytest.raises(memory.BudgetExceeded) as err:
        prove(pk, asg, r=5, s=9, memory_bytes=lay.working() - 1)
    assert err.value.phase == largest and err.value.need == lay.peak() and err.value.out_of_memory
    assert largest in str(err.value)


def test_the_ledger_refuses_an_allocation_past_its_cap_naming_the_phase() -> None:
    """The allocation-level guard (a plan that undercounted would meet it): an allocation past the cap is a
    BudgetExceeded naming the phase running, before the allocator is asked."""
    from numba import cuda

    led = memory.ledger(0)
    with led.capped(led.live + 1000), led.phase("msm_test", 1000):
        keep = cuda.device_array(900, dtype=np.uint8)
        with pytest.raises(memory.BudgetExceeded, match="msm_test") as err:
            cuda.device_array(200, dtype=np.uint8)
        assert err.value.phase == "msm_test"
        del keep
        cuda.device_array(1000, dtype=np.uint8)  # the dropped bytes are free again


def test_the_flush_empties_the_queue_that_frees_device_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba-cuda puts cuMemFree on the memory manager's queue; the context's own queue holds events, streams
    and modules. flush_frees empties the first (P20's prover cleared the second, freeing nothing)."""
    from types import SimpleNamespace

    cleared: list[str] = []
    ctx = SimpleNamespace(
        deallocations=SimpleNamespace(clear=lambda: cleared.append("context")),
        memory_manager=SimpleNamespace(deallocations=SimpleNamespace(clear=lambda: cleared.append("memory"))),
    )
    import numba.cuda

    monkeypatch.setattr(memory, "simulator", lambda: False)
    monkeypatch.setattr(numba.cuda, "current_context", lambda: ctx)
    monkeypatch.setattr(numba.cuda, "synchronize", lambda: None)
    memory.flush_frees()
    assert cleared == ["memory"]
