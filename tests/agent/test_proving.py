"""agent.proving: the one proving pipeline (parameters checked once per file, the R1CS cached per shape,
synthesis one partition ahead within the host budget, every partition pairing-checked, stage times), the
agent's adapter through agent.admission, and the pairing checker.

Real Groth16 proofs of a toy circuit (gpu.groth16.reference: Python integers + pyblst, milliseconds) stand in
for the StackedDRG circuit, whose proof needs minutes of CPU (the dry run, ``make run`` and
``make test-agent-long`` prove it through this same pipeline). Where a real request is used, the toy
circuit's public inputs are that request's, computed from the C1; the checker derives its own from the
request's public values, so a proof is bound to the request."""

from __future__ import annotations

import os
import secrets
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_r1cs, toy_sample  # tests/agent is on sys.path

from agent.admission import CPU_SLOT, Admission, BudgetExceeded, HostBudget
from agent.pipeline import PipelineSettings, prove_one
from agent.proving import (
    CheckedParams,
    CircuitProver,
    PairingChecker,
    ProofPipeline,
    assignment_host_bytes,
    ensure_dev_params,
    params_paths,
)
from agent.store import RequestState, SqliteStore
from gpu.groth16 import reference
from market.proofdata import ProofData
from porep.public_inputs import from_c1


def _setup(r1cs: Any) -> Any:
    return reference.setup(r1cs, reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5))))


class _Params:
    """The parameters of a toy shape in a directory, and a read_params double that returns them and records
    whether the pipeline asked for the per-point check."""

    def __init__(self, directory: Path, n_inputs: int, stem: str = "toy") -> None:
        self.params = _setup(toy_r1cs(n_inputs))
        self.path = directory / f"{stem}.params"
        self.params.write(self.path)
        self.checks: list[bool] = []

    def read(self, path: Path, subgroup_check: bool) -> Any:
        assert path == self.path
        self.checks.append(subgroup_check)
        return self.params


def _toy_c1(partitions: int) -> Any:
    pt = SimpleNamespace(name="Toy", param_stem="toy", partitions=partitions)
    xs = [[secrets.randbelow(2**250), 11 + k] for k in range(partitions)]
    return SimpleNamespace(proof_type=pt, vanilla_proofs=[None] * partitions, xs=xs)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> _Params:
    return _Params(tmp_path_factory.mktemp("params"), 2)


def _pipeline(toy: _Params, tmp_path: Path, **kw: Any) -> ProofPipeline:
    kw.setdefault("engine", ReferenceEngine())
    kw.setdefault("circuit", ToyCircuit(2, lambda c1: c1.xs))
    return ProofPipeline(toy.path.parent, cache=tmp_path / "cache", read_params=toy.read, **kw)


def test_pipeline_proves_verifies_and_keeps_the_shape(toy: _Params, tmp_path: Path) -> None:
    pipe = _pipeline(toy, tmp_path)
    c1 = _toy_c1(3)
    events: list[Any] = []
    res = pipe.prove(c1, c1.xs, job_id="job-1", events=events.append)
    assert res.ok and res.verified == (True, True, True) and len(res.proof) == 3 * 192
    assert set(res.setup) >= {"synthesis", "params", "key"}
    for p in res.partitions:
        assert {"witness", "a/b/c", "groth16", "msm_h", "verify"} <= set(p.stages)
    assert {e.job_id for e in events if e.partition >= 0} == {"job-1"}
    assert [e.stage for e in events if e.partition == 2 and e.seconds is not None][-1] == "verified"
    assert isinstance(res.rss_peak_bytes, int) and res.device_peak_bytes is None
    j = res.as_json()
    assert j["verified"] == "3/3" and j["stages_s"]["verify"] >= 0 and len(j["per_partition"]) == 3
    # the second proof of the shape reuses circuit, parameters and key; fresh randomness, still verified
    res2 = pipe.prove(c1, c1.xs, job_id="job-2")
    assert res2.ok and res2.setup == {} and res2.proof != res.proof
    assert pipe.circuit.r1cs_calls == 1 and pipe.engine.keys == 1 and len(toy.checks) == 1  # type: ignore[attr-defined]
    assert pipe.engine.released == 6  # type: ignore[attr-defined]
    # a partition whose public inputs do not match is diagnosed by index, the others still verify
    wrong = [c1.xs[0], [c1.xs[1][0] + 1, c1.xs[1][1]], c1.xs[2]]
    bad = pipe.prove(c1, wrong, job_id="job-3")
    assert bad.verified == (True, False, True) and not bad.ok
    assert "partitions [1] of 3 did not verify" in bad.report().diagnosis()


def test_synthesis_runs_one_partition_ahead_within_the_host_budget(toy: _Params, tmp_path: Path) -> None:
    circuit = ToyCircuit(2, lambda c1: c1.xs, delay_s=0.02)
    engine = ReferenceEngine(delay_s=0.05)
    order: list[str] = []
    lock = threading.Lock()

    def note(ev: Any) -> None:
        with lock:
            order.append(f"{ev.stage}{'' if ev.seconds is None else ' done'} {ev.partition}")

    pipe = _pipeline(toy, tmp_path, engine=engine, circuit=circuit)
    c1 = _toy_c1(4)
    res = pipe.prove(c1, c1.xs, job_id="ahead", events=note)
    assert res.ok
    per = assignment_host_bytes(pipe.shape(c1.proof_type).r1cs)
    assert res.host_reserved_peak_bytes == 2 * per  # the partition proving and the one synthesised ahead
    for k in range(4):
        if k >= 1:  # partition k's synthesis overlapped partition k-1's proof
            assert order.index(f"witness {k}") < order.index(f"prove done {k - 1}")
        if k >= 2:  # ...but never two ahead
            assert order.index(f"witness {k}") > order.index(f"prove done {k - 2}")
    # a budget of one partition serialises synthesis and proof; nothing is left reserved
    tight = _pipeline(toy, tmp_path, engine=engine, circuit=circuit, host=HostBudget(per))
    res = tight.prove(c1, c1.xs, job_id="tight")
    assert res.ok and res.host_reserved_peak_bytes == per and tight.host.used == 0
    small = _pipeline(toy, tmp_path, host=HostBudget(per - 1))
    with pytest.raises(BudgetExceeded):
        small.prove(c1, c1.xs, job_id="small")
    assert small.host.used == 0


def test_a_failing_partition_leaves_nothing_reserved(toy: _Params, tmp_path: Path) -> None:
    class Failing(ReferenceEngine):
        def prove(self, key: tuple, asg: list[int], *, memory_bytes: int | None, timings: dict) -> bytes:
            if asg[-1] == 9 + 1:  # partition 1
                raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
            return super().prove(key, asg, memory_bytes=memory_bytes, timings=timings)

    engine = Failing()
    pipe = _pipeline(toy, tmp_path, engine=engine)
    c1 = _toy_c1(3)
    with pytest.raises(RuntimeError, match="LAUNCH_FAILED"):
        pipe.prove(c1, c1.xs, job_id="fails")
    # partitions 0 and 1, and 2 if its synthesis had started: every assignment given back, no bytes held
    assert pipe.host.used == 0 and engine.released == engine.assigned >= 2


def test_the_subgroup_check_runs_once_per_file(toy: _Params, tmp_path: Path) -> None:
    c1 = _toy_c1(1)
    _pipeline(toy, tmp_path).shape(c1.proof_type)
    assert toy.checks[-1] is True  # first use: the full per-point check
    _pipeline(toy, tmp_path).shape(c1.proof_type)  # a later start (new pipeline, same cache)
    assert toy.checks[-1] is False
    st = toy.path.stat()
    os.utime(toy.path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched, same bytes: still trusted
    _pipeline(toy, tmp_path).shape(c1.proof_type)
    assert toy.checks[-1] is False
    data = bytearray(toy.path.read_bytes())
    data[-1] ^= 1  # changed bytes, same size: checked again
    toy.path.write_bytes(bytes(data))
    try:
        _pipeline(toy, tmp_path).shape(c1.proof_type)
        assert toy.checks[-1] is True
        assert CheckedParams(tmp_path / "cache").trusted(toy.path)  # ...and recorded once it passed
    finally:
        toy.params.write(toy.path)


def test_dev_params_made_here_are_recorded_not_checked(tmp_path: Path) -> None:
    from porep.prooftypes import proof_type

    pt = proof_type("StackedDrg2KiBV1_1")
    params, vk = params_paths(tmp_path, pt)
    params.write_bytes(os.urandom(1000))
    vk.write_bytes(b"vk")
    checked = CheckedParams(tmp_path / "cache")
    assert not checked.trusted(params)
    ensure_dev_params(pt, tmp_path, cache=tmp_path / "cache")  # no meta file: not ours, not recorded
    assert not checked.trusted(params)
    (tmp_path / f"{pt.param_stem}.meta.json").write_text("{}")
    ensure_dev_params(pt, tmp_path, cache=tmp_path / "cache")
    assert checked.trusted(params)


@pytest.fixture(scope="module")
def real_work(work_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> tuple[ProofData, _Params]:
    work = ProofData.parse(work_bytes)
    assert work.porep is not None
    n = len(from_c1(work.porep)[0])
    return work, _Params(tmp_path_factory.mktemp("p"), n, stem=work.porep.proof_type.param_stem)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_agent_proves_through_admission_and_the_pipeline(
    real_work: tuple[ProofData, _Params], tmp_path: Path
) -> None:
    work, par = real_work
    assert work.porep is not None
    engine = ReferenceEngine(device_bytes=1000, delay_s=0.1)
    circuit = ToyCircuit(len(from_c1(work.porep)[0]), lambda c1: from_c1(c1))
    pipe = ProofPipeline(
        par.path.parent, engine=engine, circuit=circuit, cache=tmp_path, read_params=par.read
    )
    admission = Admission([CPU_SLOT], jobs_per_device=2, budget_bytes={CPU_SLOT.index: 1500})
    prover = CircuitProver(par.path.parent, pipeline=pipe, admission=admission)
    checker = PairingChecker(par.path.parent, keys={work.porep.proof_type.param_stem: par.params.vk})
    inflight, peak = [0], [0]
    orig = engine.prove

    def counting(*a: Any, **kw: Any) -> bytes:
        inflight[0] += 1
        peak[0] = max(peak[0], inflight[0])
        try:
            return orig(*a, **kw)
        finally:
            inflight[0] -= 1

    engine.prove = counting  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:  # two jobs: slots for both, device memory for one
        for i in range(2):
            tg.start_soon(prover.prove_async, work, f"job-{i}")
    assert peak[0] == 1 and engine.memory == [1000, 1000] and admission.budgets[CPU_SLOT.index].used == 0
    # the pipeline stage awaits the adapter; the independent checker accepts the proof for this request
    store = SqliteStore(tmp_path / "s.db")
    row = store.add_request(1, "bafyreal", 1)
    assert row is not None
    store.store_data(row.row_id, work.raw, "porep")
    done = await prove_one(store, prover, checker, PipelineSettings(owner="me"))
    assert done is not None and done.state is RequestState.COMPUTED and done.proof is not None
    assert prover.last is not None and prover.last.ok and prover.last.job_id == done.job_id
    assert checker.verify(work, done.proof).ok
    other = ProofData.parse(work.raw.replace(b'"Miner":1000', b'"Miner":1001'))
    assert not checker.verify(other, done.proof).ok  # bound to the request's sector
    store.close()


def test_missing_parameters_named_before_synthesis(work_bytes: bytes, tmp_path: Path) -> None:
    work = ProofData.parse(work_bytes)
    assert work.porep is not None
    circuit = ToyCircuit(2, lambda c1: [])
    pipe = ProofPipeline(tmp_path, engine=ReferenceEngine(), circuit=circuit)
    prover = CircuitProver(tmp_path, pipeline=pipe)
    name = params_paths(tmp_path, work.porep.proof_type)[0].name
    with pytest.raises(FileNotFoundError, match=name):
        anyio.run(prover.prove_async, work, "ps-porep-1000-1-1-1")
    prover.accepted = (work.porep.proof_type.name,)
    with pytest.raises(FileNotFoundError, match=name):
        prover.warm_up()
    assert circuit.r1cs_calls == 0  # named before any synthesis
    with pytest.raises(FileNotFoundError, match="verifying key"):
        PairingChecker(tmp_path).verify(work, b"\0" * 192)
    # the configured device budget (prover.memory_budget_gib) is what admission grants from
    budgeted = CircuitProver(tmp_path, pipeline=pipe, device_budget_bytes=123)
    assert budgeted.admission.budgets[CPU_SLOT.index].total == 123


def test_self_test_proves_on_the_engine_and_fails_loudly(toy: _Params, tmp_path: Path) -> None:
    def sample() -> tuple[Any, Any, list[int]]:
        from gpu.arith.fields import fr_from_ints

        xs = [secrets.randbelow(2**250), 5]
        return toy_r1cs(2), fr_from_ints([1, *xs, 9]), xs

    pipe = _pipeline(toy, tmp_path, setup=lambda r1cs: toy.params, sample=sample)
    assert pipe.self_test() >= 0

    class Corrupting(ReferenceEngine):
        def prove(self, key: tuple, asg: list[int], *, memory_bytes: int | None, timings: dict) -> bytes:
            p = bytearray(super().prove(key, asg, memory_bytes=memory_bytes, timings=timings))
            p[100] ^= 1
            return bytes(p)

    bad = _pipeline(toy, tmp_path, engine=Corrupting(), setup=lambda r1cs: toy.params, sample=sample)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="self-test: the .*-constraint proof on reference did not verify"):
        bad.self_test()
    assert time.perf_counter() - t0 < 30


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_snap_work_is_routed_to_the_update_pipeline(
    work_bytes: bytes, snap_bytes: bytes, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A Snap request goes to the update pipeline (UpdateWork: its proof type and one vanilla proof per
    partition), its public inputs from the request's commitments; a PoRep one to the PoRep pipeline. Toy
    circuits over each request's own public inputs stand in for the two circuits (a real 2KiB update proof
    takes minutes); the checker picks the verifying key by the update proof's parameter stem."""
    import dataclasses

    from porep.snap.params import update_proof_type
    from porep.snap.partition import UpdateCircuit, UpdateWork, update_public_inputs

    porep_work, snap_work = ProofData.parse(work_bytes), ProofData.parse(snap_bytes)
    assert porep_work.porep is not None and snap_work.snap is not None
    upt = update_proof_type(snap_work.snap.proof_type)
    n_porep = len(from_c1(porep_work.porep)[0])
    n_snap = len(update_public_inputs(snap_work.snap)[0])
    directory = tmp_path_factory.mktemp("both")
    seal_par = _Params(directory, n_porep, stem=porep_work.porep.proof_type.param_stem)
    update_par = _Params(directory, n_snap, stem=upt.param_stem)
    assert seal_par.path != update_par.path
    engine = ReferenceEngine()
    seal_circuit = ToyCircuit(n_porep, lambda c1: from_c1(c1))
    update_circuit = ToyCircuit(n_snap, lambda item: update_public_inputs(item.snap))
    pipe = ProofPipeline(
        directory, engine=engine, circuit=seal_circuit, cache=tmp_path, read_params=seal_par.read
    )
    upipe = ProofPipeline(
        directory, engine=engine, circuit=update_circuit, cache=tmp_path, read_params=update_par.read
    )
    prover = CircuitProver(
        directory, pipeline=pipe, update_pipeline=upipe, accepted_update=(upt.name,), accepted=()
    )
    chosen, item = prover.route(snap_work)
    assert chosen is upipe and isinstance(item, UpdateWork) and item.proof_type is upt
    assert len(item.vanilla_proofs) == upt.partitions == 1
    chosen, item = prover.route(porep_work)
    assert chosen is pipe and item is porep_work.porep

    snap_proof = await prover.prove_async(snap_work, "ps-snap-1")
    assert prover.last is not None and prover.last.ok and prover.last.proof_type == upt.name
    assert update_circuit.log == ["synth 0"] and seal_circuit.log == []
    porep_proof = await prover.prove_async(porep_work, "ps-porep-1")
    assert prover.last.proof_type == porep_work.porep.proof_type.name and seal_circuit.log == ["synth 0"]
    assert update_circuit.log == ["synth 0"]

    keys = {porep_work.porep.proof_type.param_stem: seal_par.params.vk, upt.param_stem: update_par.params.vk}
    checker = PairingChecker(directory, keys=keys)
    assert checker.verify(snap_work, snap_proof).ok and checker.verify(porep_work, porep_proof).ok
    # bound to the request: another Snap request's commitments do not verify this proof
    new_d = bytes([snap_work.snap.new_d[0] ^ 1]) + snap_work.snap.new_d[1:]
    other = ProofData.parse(
        ProofData.encode(snap_work.sector_id, snap=dataclasses.replace(snap_work.snap, new_d=new_d))
    )
    assert not checker.verify(other, snap_proof).ok
    assert not checker.verify(snap_work, snap_proof[:100]).ok  # wrong length: named, not raised

    # the readiness gate loads the accepted update type's shape in the update pipeline
    gated = CircuitProver(
        directory,
        pipeline=ProofPipeline(
            directory, engine=ReferenceEngine(), circuit=ToyCircuit(n_porep, from_c1), cache=tmp_path,
            read_params=seal_par.read, sample=toy_sample,
        ),
        update_pipeline=ProofPipeline(
            directory, engine=ReferenceEngine(), circuit=ToyCircuit(n_snap, update_public_inputs),
            cache=tmp_path, read_params=update_par.read,
        ),
        accepted=(),
        accepted_update=(upt.name,),
    )
    gated.warm_up()
    assert gated.update_pipeline.loaded(upt) and not gated.pipeline.loaded(porep_work.porep.proof_type)

    # by default: the real update circuit, on the PoRep pipeline's engine and host budget
    default = CircuitProver(directory, pipeline=pipe)
    assert isinstance(default.update_pipeline.circuit, UpdateCircuit)
    assert default.update_pipeline.engine is engine and default.update_pipeline.host is pipe.host
    assert default.update_pipeline is not pipe and default.accepted_update == ()


def test_blank_r1cs_of_an_update_type_is_the_update_circuit(monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure_dev_params' setup circuit: an update proof type gets the update circuit's R1CS, a seal proof
    type the StackedDRG one, though "StackedDrg2KiBV1" names both (the real synthesis is tested in porep)."""
    import porep.circuit.partition as seal_partition
    import porep.snap.partition as snap_partition
    from agent.proving import blank_r1cs
    from porep.prooftypes import proof_type
    from porep.snap.params import update_proof_type

    asked: list[tuple[str, str]] = []
    monkeypatch.setattr(snap_partition, "update_r1cs", lambda pt: asked.append(("update", pt.name)) or "U")
    monkeypatch.setattr(seal_partition, "partition_r1cs", lambda pt: asked.append(("seal", pt.name)) or "S")
    assert blank_r1cs(update_proof_type("StackedDrg2KiBV1")) == "U"
    assert blank_r1cs(proof_type("StackedDrg2KiBV1")) == "S"
    assert asked == [("update", "StackedDrg2KiBV1"), ("seal", "StackedDrg2KiBV1")]
