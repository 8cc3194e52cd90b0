"""agent.proving: the one proof pipeline (parameters checked once per file, the R1CS cached per shape,
synthesis ahead of the prover within the host budget, every partition pairing-checked once as it is proven,
stage times), the admitted prover, and the host verifier.

Real Groth16 proofs of a toy circuit (gpu.groth16.reference: Python integers + pyblst, milliseconds) stand in
for the StackedDRG circuit, whose proof needs minutes of CPU (the dry run, ``make run`` and
``make test-agent-long`` prove it through this same pipeline). Where a real request is used, the toy
circuit's public inputs are that request's Work's, so a proof is bound to the request."""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from _doubles import (  # tests/agent is on sys.path
    ReferenceEngine,
    ToyCircuit,
    toy_circuits,
    toy_r1cs,
    toy_sample,
    toy_work,
)

from agent.admission import CPU_SLOT, Admission, BudgetExceeded, HostBudget
from agent.proving.engine import assignment_host_bytes
from agent.proving.parameters import CheckedParams, ensure_dev_params, params_paths
from agent.proving.pipeline import Circuits, ProofPipeline
from agent.proving.prover import AdmittedProver
from agent.proving.verifier import HostVerifier
from agent.proving.work import Work
from agent.stages import StageSettings, WorkHandoff, fetch_one, prove_one
from agent.store import RequestState, SqliteStore
from gpu.groth16 import reference


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


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> _Params:
    return _Params(tmp_path_factory.mktemp("params"), 2)


def _pipeline(toy: _Params, tmp_path: Path, circuit: ToyCircuit | None = None, **kw: Any) -> ProofPipeline:
    kw.setdefault("engines", [ReferenceEngine()])
    kw.setdefault("circuits", toy_circuits(circuit or ToyCircuit(2, lambda c1: c1.xs)))
    return ProofPipeline(toy.path.parent, cache=tmp_path / "cache", read_params=toy.read, **kw)


def test_pipeline_proves_verifies_and_keeps_the_shape(toy: _Params, tmp_path: Path) -> None:
    circuit = ToyCircuit(2, lambda c1: c1.xs)
    pipe = _pipeline(toy, tmp_path, circuit)
    engine = pipe.engine
    work = toy_work(3)
    events: list[Any] = []
    res = pipe.prove(work, job_id="job-1", events=events.append)
    assert res.ok and res.verified == (True, True, True) and len(res.proof) == 3 * 192
    assert set(res.setup) >= {"synthesis", "params", "key"}
    for p in res.partitions:
        assert {"witness", "a/b/c", "groth16", "msm_h", "verify"} <= set(p.stages)
    assert {e.job_id for e in events if e.partition >= 0} == {"job-1"}
    assert [e.stage for e in events if e.partition == 2 and e.seconds is not None][-1] == "verified"
    assert isinstance(res.rss_peak_bytes, int) and res.device_peak_bytes is None
    j = res.as_json()
    assert j["verified"] == "3/3" and len(j["per_partition"]) == 3  # type: ignore[arg-type]
    # the second proof of the shape reuses circuit, parameters and key; fresh randomness, still verified
    res2 = pipe.prove(work, job_id="job-2")
    assert res2.ok and res2.setup == {} and res2.proof != res.proof
    assert circuit.r1cs_calls == 1 and engine.keys == 1 and len(toy.checks) == 1  # type: ignore[attr-defined]
    assert engine.released == 6  # type: ignore[attr-defined]
    # a partition whose proof does not match the Work's public inputs is diagnosed by index
    wrong = list(work.public_inputs)
    wrong[1] = (wrong[1][0] + 1, wrong[1][1])
    bad = pipe.prove(dataclasses.replace(work, public_inputs=tuple(wrong)), job_id="job-3")
    assert bad.verified == (True, False, True) and not bad.ok
    assert "partitions [1] of 3 did not verify" in bad.report().diagnosis()
    # without the pairing check (the debug switch of verify_before_submit): no verdict, not ok
    unchecked = pipe.prove(work, job_id="job-4", verify=False)
    assert unchecked.verified == (None, None, None) and not unchecked.ok
    assert "not verified" in unchecked.report().diagnosis()


def test_synthesis_runs_one_partition_ahead_within_the_host_budget(toy: _Params, tmp_path: Path) -> None:
    circuit = ToyCircuit(2, lambda c1: c1.xs, delay_s=0.02)
    engine = ReferenceEngine(delay_s=0.05)
    order: list[str] = []
    lock = threading.Lock()

    def note(ev: Any) -> None:
        with lock:
            order.append(f"{ev.stage}{'' if ev.seconds is None else ' done'} {ev.partition}")

    pipe = _pipeline(toy, tmp_path, circuit, engines=[engine])
    work = toy_work(4)
    res = pipe.prove(work, job_id="ahead", events=note)
    assert res.ok
    per = assignment_host_bytes(pipe.shape(work.proof_type).r1cs)
    assert res.host_reserved_peak_bytes == 2 * per  # the partition proving and the one synthesised ahead
    for k in range(4):
        if k >= 1:  # partition k's synthesis overlapped partition k-1's proof
            assert order.index(f"witness {k}") < order.index(f"prove done {k - 1}")
        if k >= 2:  # ...but never two ahead
            assert order.index(f"witness {k}") > order.index(f"prove done {k - 2}")
    # a budget of one partition serialises synthesis and proof; nothing is left reserved
    tight = _pipeline(toy, tmp_path, circuit, engines=[engine], host=HostBudget(per))
    res = tight.prove(work, job_id="tight")
    assert res.ok and res.host_reserved_peak_bytes == per and tight.host.used == 0
    small = _pipeline(toy, tmp_path, host=HostBudget(per - 1))
    with pytest.raises(BudgetExceeded):
        small.prove(work, job_id="small")
    assert small.host.used == 0


def test_partition_workers_prove_partitions_of_one_proof_at_once(toy: _Params, tmp_path: Path) -> None:
    """``workers`` (config prover.partition_workers): that many partitions of one proof are proven at once on
    the engine, each one more synthesised ahead, still within the host budget, every one verified; a job
    reserves one partition's device bytes per worker."""
    circuit = ToyCircuit(2, lambda c1: c1.xs)
    engine = ReferenceEngine(delay_s=0.1)
    inflight, peak = [0], [0]
    lock = threading.Lock()
    orig = engine.prove

    def counting(*a: Any, **kw: Any) -> bytes:
        with lock:
            inflight[0] += 1
            peak[0] = max(peak[0], inflight[0])
        try:
            return orig(*a, **kw)
        finally:
            with lock:
                inflight[0] -= 1

    engine.prove = counting  # type: ignore[method-assign]
    work = toy_work(6)
    one = _pipeline(toy, tmp_path, circuit, engines=[engine])
    assert one.prove(work, job_id="one").ok and peak[0] == 1
    peak[0] = 0
    three = _pipeline(toy, tmp_path, circuit, engines=[engine], workers=3)
    res = three.prove(work, job_id="three", memory_bytes=3000)
    assert res.ok and res.verified == (True,) * 6 and peak[0] == 3
    # each partition in flight may use the whole grant: the engine holds its device for a partition's whole
    # device part, so two partitions' device buffers are never held at once
    assert engine.memory[-1] == 3000
    per = assignment_host_bytes(three.shape(work.proof_type).r1cs)
    assert res.host_reserved_peak_bytes <= 6 * per and three.host.used == 0
    # a job reserves one partition's working bytes however many lanes it has (the lanes share them)
    assert three.job_device_bytes(work.proof_type) == one.device_bytes(work.proof_type)
    # a host budget of one partition still finishes (reservations are taken in partition order)
    tight = _pipeline(toy, tmp_path, circuit, engines=[engine], workers=3, host=HostBudget(per))
    assert tight.prove(work, job_id="tight").ok and tight.host.used == 0


def test_a_failing_partition_leaves_nothing_reserved(toy: _Params, tmp_path: Path) -> None:
    class Failing(ReferenceEngine):
        def prove(self, key: tuple, asg: list[int], *, memory_bytes: int | None, timings: dict) -> bytes:
            if asg[-1] == 9 + 1:  # partition 1
                raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
            return super().prove(key, asg, memory_bytes=memory_bytes, timings=timings)

    for workers in (1, 2):
        engine = Failing()
        pipe = _pipeline(toy, tmp_path, engines=[engine], workers=workers)
        with pytest.raises(RuntimeError, match="LAUNCH_FAILED"):
            pipe.prove(toy_work(4), job_id="fails")
        # every assignment that was made was given back, no host bytes held
        assert pipe.host.used == 0 and engine.released == engine.assigned >= 2


def test_a_cancelled_proof_stops_at_the_next_partition_boundary(toy: _Params, tmp_path: Path) -> None:
    """``cancel`` set while partition 1 is proven: partition 1 ends, nothing after it is proven, what was
    synthesised ahead is given back (host bytes, assignments), and ProofCancelled names the boundary. Set
    after the last partition was taken, the proof is returned whole.

    The test waits on the boundaries themselves, never on wall time: the cancel is set once partitions 0 and
    1 have both started proving, and with two workers partition 0's proof waits for the cancel (so it cannot
    end, and its lane take partition 2, before partition 1 starts, however loaded the machine)."""
    from agent.proving.pipeline import ProofCancelled

    def reached(boundary: threading.Event, what: str) -> None:
        assert boundary.wait(30), f"never reached: {what}"  # a guard against a hang, not a timing

    for workers in (1, 2):
        engine = ReferenceEngine()
        cancel = threading.Event()
        started = threading.Event()  # partition 0 started proving
        after: list[int] = []  # partitions that started proving once the cancel was set

        def note(
            ev: Any,
            cancel: threading.Event = cancel,
            started: threading.Event = started,
            after: list[int] = after,
            workers: int = workers,
        ) -> None:
            if ev.stage != "prove" or ev.seconds is not None:
                return
            if cancel.is_set():
                after.append(ev.partition)
            if ev.partition == 0:
                started.set()
                if workers > 1:
                    reached(cancel, "the cancel, while partition 0 is proven")
            elif ev.partition == 1:
                reached(started, "partition 0's proof")
                cancel.set()

        pipe = _pipeline(toy, tmp_path, engines=[engine], workers=workers)
        with pytest.raises(ProofCancelled, match="cancelled before partition"):
            pipe.prove(toy_work(6), job_id="cancelled", events=note, cancel=cancel)
        assert after == [] and 2 <= len(engine.memory) <= 1 + workers  # the partitions in flight ended
        assert pipe.host.used == 0 and engine.released == engine.assigned

    cancel = threading.Event()

    def late(ev: Any) -> None:
        if ev.stage == "prove" and ev.seconds is None and ev.partition == 1:
            cancel.set()

    res = _pipeline(toy, tmp_path).prove(toy_work(2), job_id="whole", events=late, cancel=cancel)
    assert res.ok and len(res.proof) == 2 * 192


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_admitted_prover_reports_admission_and_honours_cancel(toy: _Params, tmp_path: Path) -> None:
    """``admitted`` hears the grant before the pipeline runs; a job cancelled while it waited for its slot
    never proves and leaves the slot free; the result's stage times come back with the proof."""
    from agent.proving.pipeline import ProofCancelled

    engine = ReferenceEngine()
    prover = AdmittedProver(_pipeline(toy, tmp_path, engines=[engine]))
    grants: list[Any] = []
    proven = await prover.prove(toy_work(2), "seen", admitted=grants.append)
    assert [g.device for g in grants] == [CPU_SLOT] and proven.result is not None
    assert {"witness", "groth16"} <= set(proven.result.stages()) and proven.setup_s >= 0
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ProofCancelled, match="before it started"):
        await prover.prove(toy_work(2), "never", cancel=cancel)
    assert len(engine.memory) == 2 and prover.admission.running(CPU_SLOT) == 0


def test_the_subgroup_check_runs_once_per_file(tmp_path: Path) -> None:
    toy = _Params(tmp_path / "params", 2)  # a file of its own: its record is kept beside it
    pt = toy_work(1).proof_type
    _pipeline(toy, tmp_path).shape(pt)
    assert toy.checks[-1] is True  # first use: the full per-point check
    _pipeline(toy, tmp_path).shape(pt)  # a later start (new pipeline, same cache)
    assert toy.checks[-1] is False
    st = toy.path.stat()
    os.utime(toy.path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # touched, same bytes: still trusted
    _pipeline(toy, tmp_path).shape(pt)
    assert toy.checks[-1] is False
    data = bytearray(toy.path.read_bytes())
    data[-1] ^= 1  # changed bytes, same size: checked again
    toy.path.write_bytes(bytes(data))
    try:
        _pipeline(toy, tmp_path).shape(pt)
        assert toy.checks[-1] is True
        assert CheckedParams(tmp_path / "cache").trusted(toy.path)  # ...and recorded once it passed
    finally:
        toy.params.write(toy.path)


def test_the_subgroup_check_is_recorded_per_file_not_per_cache(tmp_path: Path) -> None:
    """A second user, or the service with its own cache directory, finds the owner's record beside the file
    and does not check a 47 GB file again (each cache directory paid the check before)."""
    toy = _Params(tmp_path / "params", 2)
    pt = toy_work(1).proof_type
    ProofPipeline(toy.path.parent, cache=tmp_path / "operator", engines=[ReferenceEngine()],
                  circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)), read_params=toy.read).shape(pt)
    assert toy.checks == [True]
    ProofPipeline(toy.path.parent, cache=tmp_path / "service", engines=[ReferenceEngine()],
                  circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)), read_params=toy.read).shape(pt)
    assert toy.checks == [True, False]  # another cache directory: no second check
    beside = CheckedParams.beside(toy.path)
    assert beside.is_file() and beside.stat().st_mode & 0o777 == 0o644
    assert not (tmp_path / "operator" / "params-checked.json").exists()  # one record, beside the file
    via_link = tmp_path / "elsewhere" / toy.path.name
    via_link.parent.mkdir()
    via_link.symlink_to(toy.path)  # the same file reached through a link: the same record
    assert CheckedParams(tmp_path / "third").trusted(via_link)


def test_a_record_beside_the_file_vouches_only_for_that_version(tmp_path: Path) -> None:
    """The record names the file's device, inode, size, mtime and ctime: bytes changed in place with the mtime
    set back (ctime moves; nobody but root sets it), or another file renamed into its place (a new inode),
    no longer match; the digest then decides, and changed bytes are not trusted."""
    path = tmp_path / "p.params"
    path.write_bytes(os.urandom(4096))
    CheckedParams(tmp_path / "a").record(path)
    assert CheckedParams(tmp_path / "b").trusted(path)
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    with open(path, "r+b") as f:  # in place: same inode and size
        f.write(bytes(data[:1]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime set back
    assert path.stat().st_ino == st.st_ino and path.stat().st_mtime_ns == st.st_mtime_ns
    assert not CheckedParams(tmp_path / "b").trusted(path)
    data[0] ^= 1
    other = tmp_path / "other"
    other.write_bytes(bytes(data))  # the checked bytes again, as a new file renamed into place
    os.replace(other, path)
    assert CheckedParams(tmp_path / "c").trusted(path)  # by digest: the same bytes as checked


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another owner need root to make")
def test_a_record_beside_the_file_speaks_only_for_its_owner(tmp_path: Path) -> None:
    """Nobody but the file's owner vouches for it: a record owned by another user (or writable by others) is
    not read, and a user who does not own the file keeps its record in its own cache directory."""
    path = tmp_path / "p.params"
    path.write_bytes(os.urandom(4096))
    CheckedParams(tmp_path / "owner").record(path)
    beside = CheckedParams.beside(path)
    os.chown(beside, 4242, -1)  # another user's record (or one put there in its place)
    assert not CheckedParams(tmp_path / "b").trusted(path)
    os.chown(beside, 0, -1)
    os.chmod(beside, 0o666)  # anyone could have written it
    assert not CheckedParams(tmp_path / "b").trusted(path)
    os.chmod(beside, 0o644)
    assert CheckedParams(tmp_path / "b").trusted(path)
    beside.unlink()
    os.chown(path, 4242, -1)  # the operator's file, read by the service (root here, another uid there)
    CheckedParams(tmp_path / "service").record(path)
    assert not beside.exists() and (tmp_path / "service" / "params-checked.json").is_file()
    assert CheckedParams(tmp_path / "service").trusted(path)
    assert not CheckedParams(tmp_path / "b").trusted(path)  # the service's record is its own


def test_no_record_is_written_into_filecoins_parameter_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    official = tmp_path / "filecoin-proof-parameters"
    official.mkdir()
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(official))
    path = official / "p.params"
    path.write_bytes(os.urandom(4096))
    CheckedParams(tmp_path / "cache").record(path)
    assert sorted(p.name for p in official.iterdir()) == ["p.params"]  # lotus' and curio's directory
    assert CheckedParams(tmp_path / "cache").trusted(path)


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
def real_work(work_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> tuple[Work, _Params]:
    work = Work.from_bytes(work_bytes)
    n = len(work.public_inputs[0])
    return work, _Params(tmp_path_factory.mktemp("p"), n, stem=work.proof_type.param_stem)


def _real_pipeline(par: _Params, cache: Path, engine: ReferenceEngine | None = None) -> ProofPipeline:
    """The pipeline with the toy circuit over a real request's public inputs (the Work's, read back from
    the C1 the circuit is given: its header binds them, as the real circuit's witness does)."""
    from porep.sdr.public_inputs import from_c1

    circuit = ToyCircuit(par.params.vk.num_inputs - 1, from_c1)
    return ProofPipeline(
        par.path.parent, engines=[engine or ReferenceEngine()], circuits=toy_circuits(circuit), cache=cache,
        read_params=par.read,
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_parse_and_one_pairing_check_per_proof(
    real_work: tuple[Work, _Params], work_bytes: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request through the agent's stages (fetch → prove) is parsed once, strictly checked once, given its
    public inputs once and pairing-checked once per partition: the fetch stage hands its Work to the prove
    stage, and the pipeline's verdict is the one the stage stores by. A proof taken up from the store (a
    restart) parses the stored bytes once instead."""
    import gpu.groth16.verifier as groth16_verifier
    import porep.sdr.public_inputs
    import porep.sdr.vanilla_verify
    from market.cid import RequestCid
    from market.proofdata import ProofData

    work, par = real_work
    counts = {"parse": 0, "check": 0, "inputs": 0, "pairing": 0}

    def counted(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **kw: Any) -> Any:
            counts[name] += 1
            return fn(*a, **kw)

        return wrapper

    monkeypatch.setattr(ProofData, "parse", staticmethod(counted("parse", ProofData.parse)))
    check = counted("check", porep.sdr.vanilla_verify.check_c1)
    monkeypatch.setattr(porep.sdr.vanilla_verify, "check_c1", check)
    inputs = counted("inputs", porep.sdr.public_inputs.record_inputs)
    monkeypatch.setattr(porep.sdr.public_inputs, "record_inputs", inputs)
    monkeypatch.setattr(groth16_verifier, "verify", counted("pairing", groth16_verifier.verify))

    class Market:
        async def fetch_request_bytes(self, cid: str) -> bytes:
            return work_bytes

    prover = AdmittedProver(_real_pipeline(par, tmp_path))
    store = SqliteStore(tmp_path / "s.db")
    handoff = WorkHandoff()
    settings = StageSettings(owner="me")
    for restart in (False, True):
        counts.update(dict.fromkeys(counts, 0))
        cid = str(RequestCid.of(work_bytes)) + ("-again" if restart else "")
        assert store.add_request(1, cid, 1) is not None
        assert await fetch_one(Market(), store, owner="me", handoff=handoff)
        if restart:  # a new process: nothing handed over, the stored bytes are parsed (once)
            handoff = WorkHandoff()
            counts.update(dict.fromkeys(counts, 0))
        row = await prove_one(store, prover, settings, handoff=handoff)
        assert row is not None and row.state is RequestState.COMPUTED
        assert counts == {"parse": 1, "check": 1, "inputs": 1, "pairing": work.partitions}, (restart, counts)
    store.close()


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_agent_proves_through_admission_and_the_pipeline(
    real_work: tuple[Work, _Params], tmp_path: Path
) -> None:
    from porep.ids import prover_id
    from porep.sdr.public_inputs import record_inputs

    work, par = real_work
    engine = ReferenceEngine(device_bytes=1000, delay_s=0.1)
    pipe = _real_pipeline(par, tmp_path, engine)
    admission = Admission([CPU_SLOT], jobs_per_device=2, budget_bytes={CPU_SLOT.index: 1500})
    prover = AdmittedProver(pipe, admission=admission)
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
            tg.start_soon(prover.prove, work, f"job-{i}")
    assert peak[0] == 1 and engine.memory == [1000, 1000] and admission.budgets[CPU_SLOT.index].used == 0
    # the stage awaits the prover and stores by its verdict; the host verifier accepts the proof again
    store = SqliteStore(tmp_path / "s.db")
    row = store.add_request(1, "bafyreal", 1)
    assert row is not None
    store.store_data(row.row_id, work.raw, "porep")
    done = await prove_one(store, prover, StageSettings(owner="me"))
    assert done is not None and done.state is RequestState.COMPUTED and done.proof is not None
    assert prover.last is not None and prover.last.ok and prover.last.job_id == done.job_id
    verifier = HostVerifier(par.path.parent, keys={work.proof_type.param_stem: par.params.vk})
    assert verifier.verify(work, done.proof).ok
    arr = work.c1.arrays  # type: ignore[union-attr]
    other = record_inputs(
        work.proof_type, prover_id=prover_id(1001), sector_id=1, ticket=arr.domain("ticket"),  # type: ignore[arg-type]
        seed=arr.domain("seed"), comm_d=arr.domain("comm_d"), comm_r=arr.domain("comm_r"),
    )
    moved = dataclasses.replace(work, public_inputs=tuple(tuple(v) for v in other))
    assert not verifier.verify(moved, done.proof).ok  # bound to the request's sector
    store.close()


def test_missing_parameters_named_before_synthesis(work_bytes: bytes, tmp_path: Path) -> None:
    work = Work.from_bytes(work_bytes)
    circuit = ToyCircuit(2, lambda c1: [])
    pipe = ProofPipeline(tmp_path, engines=[ReferenceEngine()], circuits=toy_circuits(circuit))
    prover = AdmittedProver(pipe)
    name = params_paths(tmp_path, work.proof_type)[0].name
    with pytest.raises(FileNotFoundError, match=name):
        anyio.run(prover.prove, work, "ps-porep-1000-1-1-1")
    prover.accepted = (work.proof_type.name,)
    with pytest.raises(FileNotFoundError, match=name):
        prover.warm_up()
    assert circuit.r1cs_calls == 0  # named before any synthesis
    with pytest.raises(FileNotFoundError, match="verifying key"):
        HostVerifier(tmp_path).verify(work, b"\0" * 192)
    # a device budget given to the prover is what admission grants from
    budgeted = AdmittedProver(pipe, device_budget_bytes=123)
    assert budgeted.admission.budgets[CPU_SLOT.index].total == 123
    # without one, the engine's (Groth16Engine.memory_budget: prover.device_memory_gib, else the device's free
    # memory once its kernels ran), asked once, before a key is charged to the device
    asked: list[int] = []

    class Budgeted(ReferenceEngine):
        def memory_budget(self) -> int | None:
            asked.append(1)
            return 456

    budgeted_pipe = ProofPipeline(tmp_path, engines=[Budgeted()], circuits=toy_circuits(circuit))
    engine_budget = AdmittedProver(budgeted_pipe)
    assert engine_budget.admission.budgets[CPU_SLOT.index].total != 456
    engine_budget._set_budget(0)
    engine_budget._set_budget(0)
    assert engine_budget.admission.budgets[CPU_SLOT.index].total == 456 and asked == [1]


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

    bad = _pipeline(toy, tmp_path, engines=[Corrupting()], setup=lambda r1cs: toy.params, sample=sample)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="self-test: the .*-constraint proof on reference did not verify"):
        bad.self_test()
    assert time.perf_counter() - t0 < 30


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_snap_work_goes_to_the_update_circuit(
    work_bytes: bytes, snap_bytes: bytes, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A Snap request's Work (kind snap: UpdateWork, one vanilla proof per partition) goes to the update
    circuit, its public inputs from the request's commitments; a PoRep one to the StackedDRG circuit. Toy
    circuits over each request's own public inputs stand in for the two circuits (a real 2KiB update proof
    takes minutes); the verifier picks the verifying key by the update proof's parameter stem."""
    from porep.sdr.public_inputs import from_c1
    from porep.snap.params import update_proof_type
    from porep.snap.partition import UpdateCircuit, UpdateWork, update_public_inputs

    porep_work, snap_work = Work.from_bytes(work_bytes), Work.from_bytes(snap_bytes)
    assert snap_work.update is not None and isinstance(snap_work.update, UpdateWork)
    upt = snap_work.proof_type
    assert upt == update_proof_type(snap_work.update.snap.proof_type) and snap_work.partitions == 1
    n_porep, n_snap = len(porep_work.public_inputs[0]), len(snap_work.public_inputs[0])
    directory = tmp_path_factory.mktemp("both")
    seal_par = _Params(directory, n_porep, stem=porep_work.proof_type.param_stem)
    update_par = _Params(directory, n_snap, stem=upt.param_stem)
    assert seal_par.path != update_par.path
    readers = {seal_par.path: seal_par, update_par.path: update_par}
    seal_circuit = ToyCircuit(n_porep, from_c1)
    update_circuit = ToyCircuit(n_snap, lambda item: update_public_inputs(item.snap))
    pipe = ProofPipeline(
        directory, engines=[ReferenceEngine()], circuits=Circuits(seal_circuit, update_circuit),  # type: ignore[arg-type]
        cache=tmp_path, read_params=lambda p, check: readers[p].read(p, check),
    )
    prover = AdmittedProver(pipe, accepted_update=(upt.name,), accepted=())
    snap_proven = await prover.prove(snap_work, "ps-snap-1")
    assert snap_proven.report.ok and prover.last is not None and prover.last.proof_type == upt.name
    assert update_circuit.log == ["synth 0"] and seal_circuit.log == []
    porep_proven = await prover.prove(porep_work, "ps-porep-1")
    assert prover.last.proof_type == porep_work.proof_type.name and seal_circuit.log == ["synth 0"]
    assert update_circuit.log == ["synth 0"]

    keys = {porep_work.proof_type.param_stem: seal_par.params.vk, upt.param_stem: update_par.params.vk}
    verifier = HostVerifier(directory, keys=keys)
    assert verifier.verify(snap_work, snap_proven.proof).ok
    assert verifier.verify(porep_work, porep_proven.proof).ok
    # bound to the request: another Snap request's commitments do not verify this proof
    assert snap_work.update is not None
    snap = snap_work.update.snap
    other = dataclasses.replace(snap, new_d=bytes([snap.new_d[0] ^ 1]) + snap.new_d[1:])
    moved = dataclasses.replace(snap_work, public_inputs=tuple(tuple(v) for v in update_public_inputs(other)))
    assert not verifier.verify(moved, snap_proven.proof).ok
    short = verifier.verify(snap_work, snap_proven.proof[:100])  # wrong length: named, not raised
    assert not short.ok and "100 bytes" in short.diagnosis()

    # the readiness gate loads the accepted update type's shape (and not the seal type's)
    gated = AdmittedProver(
        ProofPipeline(
            directory, engines=[ReferenceEngine()], cache=tmp_path, sample=toy_sample,
            circuits=Circuits(ToyCircuit(n_porep, from_c1), ToyCircuit(n_snap, update_public_inputs)),  # type: ignore[arg-type]
            read_params=lambda p, check: readers[p].read(p, check),
        ),
        accepted=(),
        accepted_update=(upt.name,),
    )
    gated.warm_up()
    assert gated.pipeline.loaded(upt) and not gated.pipeline.loaded(porep_work.proof_type)
    # by default: the real circuits
    default = ProofPipeline(directory, engines=[ReferenceEngine()], cache=tmp_path)  # type: ignore[list-item]
    assert isinstance(default.circuits.update, UpdateCircuit)


def test_blank_r1cs_of_an_update_type_is_the_update_circuit(monkeypatch: pytest.MonkeyPatch) -> None:
    """ensure_dev_params' setup circuit: an update proof type gets the update circuit's R1CS, a seal proof
    type the StackedDRG one, though "StackedDrg2KiBV1" names both (the real synthesis is tested in porep)."""
    import porep.circuit.partition as seal_partition
    import porep.snap.partition as snap_partition
    from agent.proving.parameters import blank_r1cs
    from porep.prooftypes import proof_type
    from porep.snap.params import update_proof_type

    asked: list[tuple[str, str]] = []
    def asking(kind: str, answer: str) -> Any:
        return lambda pt, cache=None: asked.append((kind, pt.name)) or answer

    monkeypatch.setattr(snap_partition, "update_r1cs", asking("update", "U"))
    monkeypatch.setattr(seal_partition, "partition_r1cs", asking("seal", "S"))
    assert blank_r1cs(update_proof_type("StackedDrg2KiBV1")) == "U"
    assert blank_r1cs(proof_type("StackedDrg2KiBV1")) == "S"
    assert asked == [("update", "StackedDrg2KiBV1"), ("seal", "StackedDrg2KiBV1")]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_device_gets_a_slot_and_proves_at_once(toy: _Params, tmp_path: Path) -> None:
    """Two engines on two (simulated) devices: the admitted prover has two slots, two jobs prove at the same
    time, one on each device, each with its own key (the R1CS is shared); a third job waits for a slot."""
    from gpu.device import Device

    engines = [ReferenceEngine(delay_s=0.2), ReferenceEngine(delay_s=0.2)]
    for i, e in enumerate(engines):
        e.device = Device(i, f"sim {i}", (0, 0), True)  # type: ignore[misc]
    circuit = ToyCircuit(2, lambda c1: c1.xs)
    pipe = _pipeline(toy, tmp_path, circuit, engines=engines)
    prover = AdmittedProver(pipe)
    assert prover.capacity == 2 and [s.index for s in prover.slots] == [0, 1]
    busy: list[int] = []
    peak = [0]
    lock = threading.Lock()

    def watch(i: int, orig: Any) -> Any:
        def prove(*a: Any, **kw: Any) -> bytes:
            with lock:
                busy.append(i)
                peak[0] = max(peak[0], len(busy))
            try:
                return orig(*a, **kw)
            finally:
                with lock:
                    busy.remove(i)

        return prove

    for i, e in enumerate(engines):
        e.prove = watch(i, e.prove)  # type: ignore[method-assign]
    results: list[Any] = []

    async def job(n: int) -> None:
        results.append(await prover.prove(toy_work(1), f"job-{n}"))

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for n in range(3):
            tg.start_soon(job, n)
    assert len(results) == 3 and all(r.report.ok for r in results)
    assert peak[0] == 2 and sorted(e.keys for e in engines) == [1, 1] and circuit.r1cs_calls == 1
    assert sum(len(e.memory) for e in engines) == 3 and all(e.memory for e in engines)
    assert time.perf_counter() - t0 < 3 * 0.2 + 0.5  # not one after the other on one device
