"""gpu.groth16.plan: the byte formulas equal what the engine really allocates and writes (simulated CUDA)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu.device import devices
from gpu.groth16 import plan, setup
from gpu.groth16.params import Parameters
from gpu.groth16.prover import ProvingKey, device_bytes
from gpu.groth16.spmv_cuda import DeviceR1CS
from gpu.groth16.synthetic import SyntheticCircuit


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    sc = SyntheticCircuit(300, 3, seed=5)
    r1cs = sc.r1cs()
    path = tmp_path_factory.mktemp("plan") / "syn.params"
    setup.generate_file(r1cs, path, test_seed=3)
    return r1cs, path


def test_sizes_of_a_key_equal_the_circuits(small: tuple[object, Path]) -> None:
    r1cs, path = small
    key = ProvingKey(Parameters.read(path, subgroup_check=False), r1cs.density(), backend="cpu")  # type: ignore[attr-defined]
    s = plan.ProofSizes.of_r1cs(r1cs)  # type: ignore[arg-type]
    k = key.sizes
    assert (k.logn, k.num_inputs, k.num_aux, k.a_aux, k.b_input, k.b_aux) == (
        s.logn, s.num_inputs, s.num_aux, s.a_aux, s.b_input, s.b_aux
    )
    assert s.rows == r1cs.num_constraints_total  # type: ignore[attr-defined]


def test_file_bytes_equal_the_written_file(small: tuple[object, Path]) -> None:
    r1cs, path = small
    assert plan.params_file_bytes(plan.ProofSizes.of_r1cs(r1cs)) == path.stat().st_size  # type: ignore[arg-type]


def test_device_bytes_equal_the_keys_arrays(small: tuple[object, Path]) -> None:
    """The resident bases and gather indices of a CUDA key, and DeviceR1CS.upload's matrices (compact and
    plain), are exactly what the plan counts."""
    r1cs, path = small
    dev = devices()[0]
    key = ProvingKey(Parameters.read(path, subgroup_check=False), r1cs.density(), backend="cuda", device=dev)  # type: ignore[attr-defined]
    s = plan.ProofSizes.of_r1cs(r1cs)  # type: ignore[arg-type]
    want = plan.key_device_bytes(s, device_spmv=False)
    got = {f"bases.{name}": int(np.asarray(c._bases).nbytes) for name, c in key.ctx.items()}
    got["gather indices"] = int(key.d_a_idx.nbytes) + int(key.d_b_idx.nbytes)
    from gpu.ntt import cuda as ntt_cuda
    from gpu.ntt.tables import NO_SCALE, scale

    tables = [ntt_cuda.device_twiddles(dev, s.logn)]  # the key uploaded them; this reads the cache
    for sc in (NO_SCALE, scale(s.logn, "coset_ninv"), scale(s.logn, "inv_coset", canonical=True)):
        tables += list(ntt_cuda._device_scale(dev, sc))
    got["NTT tables"] = sum(int(t.nbytes) for t in tables)
    assert got == want
    for system in (r1cs.compact(), r1cs):  # type: ignore[attr-defined]
        sized = plan.ProofSizes.of_r1cs(system)
        uploaded = DeviceR1CS.upload(system, dev).nbytes
        if system is r1cs:
            assert plan.resident_r1cs_bytes(sized) >= uploaded  # a plain CSR: an upper bound
        else:
            assert plan.resident_r1cs_bytes(sized) == uploaded
    resident = plan.Layout.resident_of(s, device_spmv=False)
    assert device_bytes(key, device_spmv=False) == resident.working()
    shared, per = plan.batch_device_bytes(s)
    assert device_bytes(key, 3, device_spmv=False) == shared + 3 * per
    # the device SpMV reads the witness in the H step, so it is uploaded first: never less working memory
    assert device_bytes(key, device_spmv=True) >= device_bytes(key, device_spmv=False)


def test_plan_stages_and_totals(small: tuple[object, Path]) -> None:
    r1cs, _ = small
    s = plan.ProofSizes.of_r1cs(r1cs.compact())  # type: ignore[attr-defined]
    on = plan.memory_plan(s, plan.Layout.resident_of(s, device_spmv=True), params_to_device=True)
    off = plan.memory_plan(s, plan.Layout.resident_of(s, device_spmv=False), params_to_device=False)
    streamed = plan.memory_plan(s, plan.candidates(s, plan.STREAM16, device_spmv=False)[0])
    cpu = plan.memory_plan(s, None)
    names = {st.name for st in on}
    assert "key: resident R1CS" in names and "parameters on the host" not in names
    h_on, d_on = plan.plan_totals(on)
    h_off, d_off = plan.plan_totals(off)
    assert d_on == plan.Layout.resident_of(s, device_spmv=True).peak()
    assert d_off == plan.Layout.resident_of(s, device_spmv=False).peak()
    # the host keeps the parameters and A.w, B.w, C.w when the device does not
    bases = sum(v for k, v in plan.key_device_bytes(s, device_spmv=False).items() if k.startswith("bases."))
    assert h_off - h_on == bases - plan.G1_AFFINE + 2 * 3 * plan.FR * s.rows  # H has n - 1 points on the host
    # streamed: the bases are page-locked on the host, none on the device
    assert plan.plan_totals(streamed)[1] < d_off and plan.plan_totals(streamed)[0] >= bases - plan.G1_AFFINE
    assert plan.plan_totals(cpu)[1] == 0 and plan.plan_totals(cpu)[0] > h_off  # + the permuted H copy


@pytest.mark.slow
def test_template_stats_give_the_tiled_systems_sizes(tmp_path: Path) -> None:
    """The plan of a PoRep partition from its template's counts (nothing tiled) equals the tiled R1CS's."""
    from porep.circuit.partition import partition_r1cs, partition_template
    from porep.prooftypes import proof_type

    pt = proof_type("StackedDrg2KiBV1_1")
    t = partition_template(pt, tmp_path)
    from_stats = plan.ProofSizes.of_stats(
        t.stats(), coeff_bytes=int(t.coeff[0].dtype.itemsize), table_rows=int(t.table.shape[0])
    )
    assert from_stats == plan.ProofSizes.of_r1cs(partition_r1cs(pt, tmp_path))
    assert (from_stats.n_a, from_stats.n_b) == (2_674_948, 685_522)  # the 2KiB A / B query lengths
