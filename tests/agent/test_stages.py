"""agent.stages: fetch → check → prove (verified) → store → submit with a real 2KiB C1, the real strict
check and real store; the prover (and its verdict) is a double here (the real ones are exercised
end to end elsewhere), so the stage logic — never store an unverified proof, retries, deadlines, 410,
409-after-a-lost-answer, vouchers — is tested in seconds."""

from __future__ import annotations

import pytest
from _doubles import FakeProver  # tests/agent is on sys.path

from agent.stages import (
    StageCounters,
    StageSettings,
    WorkHandoff,
    fetch_one,
    prove_one,
    submit_one,
)
from agent.store import RequestState, SqliteStore
from market.cid import RequestCid
from market.errors import ContentMismatch, Rejected, TransportError, WorkGone
from market.models import ProofReward

pytestmark = pytest.mark.anyio
S = RequestState


class FakeMarket:
    def __init__(self, data: dict[str, bytes]) -> None:
        self.data = data
        self.completed: list[tuple[str, bytes]] = []
        self.complete_error: Exception | None = None
        self.nonce = 0
        self.cumulative = 0

    async def fetch_request_bytes(self, request_cid: str) -> bytes:
        raw = self.data[request_cid]
        if not RequestCid.parse(request_cid).matches(raw):
            raise ContentMismatch(request_cid, b"\0" * 32)
        return raw

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward:
        if self.complete_error is not None:
            raise self.complete_error
        self.completed.append((request_cid, proof))
        self.nonce += 1
        self.cumulative += 10**15
        return ProofReward("ok", False, self.nonce, 10**15, self.cumulative, b"sig")


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(tmp_path / "p.db")
    yield s
    s.close()


def _queue(store: SqliteStore, raw: bytes, deadline: float | None = None) -> str:
    cid = str(RequestCid.of(raw))
    assert store.add_request(1, cid, 1, deadline=deadline) is not None
    return cid


async def test_happy_path_pays_and_erases_inputs(store, work_bytes):
    cid = _queue(store, work_bytes)
    m, c = FakeMarket({cid: work_bytes}), StageCounters()
    assert await fetch_one(m, store, counters=c)
    row = store.by_cid(cid)
    assert row is not None and row.state is S.FETCHED and row.kind == "porep"
    prover = FakeProver()
    row = await prove_one(store, prover, StageSettings(owner="me"), counters=c)
    assert row is not None and row.state is S.COMPUTED and row.job_id == prover.job_ids[0]
    assert prover.job_ids[0] == f"ps-porep-1000-1-{row.row_id}-1"
    row = await submit_one(m, store, counters=c)
    assert row is not None and row.state is S.SUBMITTED and not row.has_data
    assert [p.cumulative_amount for p in store.payments()] == [10**15] and c.paid_attofil == 10**15
    assert m.completed == [(cid, row.proof)]
    assert (
        await fetch_one(m, store) is False
        and await prove_one(store, prover, StageSettings()) is None
    )


async def test_a_corrupt_partition_is_never_stored_or_submitted(store, work_bytes):
    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    c = StageCounters()
    prover = FakeProver(corrupt=0)
    settings = StageSettings(max_attempts=2)
    row = await prove_one(store, prover, settings, counters=c)
    assert (
        row is not None
        and row.state is S.FETCHED
        and "partitions [0] of 1 did not verify" in (row.last_error or "")
    )
    row = await prove_one(store, prover, settings, counters=c)
    assert row is not None and row.state is S.FAILED and "after 2 attempts" in (row.last_error or "")
    assert row.proof is None and c.verify_failed == 2 and c.proofs_failed == 1
    assert len(set(prover.job_ids)) == 2  # a job id per attempt
    assert await submit_one(m, store) is None and m.completed == []


async def test_prover_fault_is_retried_and_then_succeeds(store, work_bytes):
    cid = _queue(store, work_bytes)
    await fetch_one(FakeMarket({cid: work_bytes}), store)
    prover = FakeProver(fail=1)
    row = await prove_one(store, prover, StageSettings())
    assert row is not None and row.state is S.FETCHED and "CUDA_ERROR_LAUNCH_FAILED" in (row.last_error or "")
    row = await prove_one(store, prover, StageSettings())
    assert row is not None and row.state is S.COMPUTED and row.attempts == 2


async def test_bad_input_fails_before_any_proving(store, work_bytes):
    bad = bytearray(work_bytes)
    i = bad.index(b'"comm_d":[') + len(b'"comm_d":[')
    bad[i] = ord("9") if bad[i] != ord("9") else ord("8")  # a different comm_d: the strict check fails
    cid = _queue(store, bytes(bad))
    c = StageCounters()
    assert await fetch_one(FakeMarket({cid: bytes(bad)}), store, counters=c)
    row = store.by_cid(cid)
    assert row is not None and row.state is S.FAILED and (row.last_error or "").startswith("check:")
    assert c.fetch_failed == 1 and not row.has_data


def test_request_work_accepts_a_valid_snap_request_and_only_proofdata(snap_bytes, work_bytes):
    from agent.proving.work import WorkError, WorkKind
    from agent.stages import request_work
    from market.proofdata import ProofData

    work = request_work(snap_bytes)
    assert work.kind is WorkKind.SNAP and work.update is not None and work.c1 is None
    assert work.raw == snap_bytes and work.partitions == 1
    bare_c1 = ProofData.parse(work_bytes).porep_raw
    assert bare_c1 is not None
    with pytest.raises(WorkError, match="not a valid ProofData"):  # the market sends ProofData only
        request_work(bare_c1)


async def test_snap_work_is_fetched_and_a_mutated_one_failed_by_name(store, snap_bytes, caplog):
    """A valid Snap request passes the strict check into fetched (kind "snap"); one field changed (new_d, the
    new data's commitment) fails it before any proving, the failed check named in the row's error."""
    import dataclasses

    from agent.proving.work import WorkError
    from agent.stages import request_work
    from market.proofdata import ProofData

    cid = _queue(store, snap_bytes)
    assert await fetch_one(FakeMarket({cid: snap_bytes}), store)
    row = store.by_cid(cid)
    assert row is not None and row.state is S.FETCHED and row.kind == "snap" and row.has_data

    good = ProofData.parse(snap_bytes)
    assert good.snap is not None
    new_d = bytearray(good.snap.new_d)
    new_d[0] ^= 0x01  # still a sha254 value (top bits untouched): only the commitment checks can object
    bad_snap = dataclasses.replace(good.snap, new_d=bytes(new_d))
    bad = ProofData.encode(good.sector_id, snap=bad_snap)
    with pytest.raises(WorkError, match="tree_d.root"):
        request_work(bad)
    cid = _queue(store, bad)
    c = StageCounters()
    assert await fetch_one(FakeMarket({cid: bad}), store, counters=c)
    row = store.by_cid(cid)
    assert row is not None and row.state is S.FAILED and not row.has_data and c.fetch_failed == 1
    assert (row.last_error or "").startswith("check:") and "tree_d.root" in (row.last_error or "")
    assert any("failed the strict check" in r.message for r in caplog.records)

    # a request with no partition proofs at all is named too (it used to be refused as "unsupported")
    empty = ProofData.encode(good.sector_id, snap=dataclasses.replace(good.snap, proofs=()))
    with pytest.raises(WorkError, match="header.partitions"):
        request_work(empty)


async def test_hash_mismatch_fails_the_request(store, work_bytes):
    cid = _queue(store, work_bytes)
    await fetch_one(FakeMarket({cid: work_bytes + b" "}), store)
    row = store.by_cid(cid)
    assert row is not None and row.state is S.FAILED and (row.last_error or "").startswith("fetch:")


async def test_transient_fetch_error_keeps_the_row_queued(store, work_bytes):
    cid = _queue(store, work_bytes)

    class Down(FakeMarket):
        async def fetch_request_bytes(self, request_cid: str) -> bytes:
            raise TransportError("connection reset")

    with pytest.raises(TransportError):
        await fetch_one(Down({}), store)
    assert store.by_cid(cid).state is S.QUEUED  # type: ignore[union-attr]


async def test_deadline_passed_drops_instead_of_proving(store, work_bytes):
    cid = _queue(store, work_bytes, deadline=100.0)
    await fetch_one(FakeMarket({cid: work_bytes}), store)
    prover = FakeProver()
    row = await prove_one(store, prover, StageSettings(), clock=lambda: 101.0)
    assert row is not None and row.state is S.GONE and prover.job_ids == []


@pytest.mark.parametrize(
    ("error", "end"),
    [
        (WorkGone("x", "reassigned"), S.GONE),
        (Rejected("POST", "http://m/complete", 400, "invalid proof"), S.FAILED),
    ],
)
async def test_submit_outcomes(store, work_bytes, error, end):
    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    await prove_one(store, FakeProver(), StageSettings())
    m.complete_error = error
    row = await submit_one(m, store)
    assert row is not None and row.state is end and row.proof is not None  # kept for the record
    assert store.payments() == []


async def test_transient_submit_error_keeps_it_computed(store, work_bytes):
    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    await prove_one(store, FakeProver(), StageSettings())
    m.complete_error = TransportError("timeout")
    with pytest.raises(TransportError):
        await submit_one(m, store)
    assert store.by_cid(cid).state is S.COMPUTED  # type: ignore[union-attr]
    m.complete_error = None
    row = await submit_one(m, store)
    assert row is not None and row.state is S.SUBMITTED


async def test_already_accepted_outcome_marks_submitted_without_a_voucher(store, work_bytes):
    from market.client import AlreadyAccepted

    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    await prove_one(store, FakeProver(), StageSettings())

    async def complete(request_cid: str, proof: bytes) -> AlreadyAccepted:
        return AlreadyAccepted(request_cid, 409, "already submitted")

    m.complete = complete  # type: ignore[method-assign]
    c = StageCounters()
    row = await submit_one(m, store, counters=c)
    assert row is not None and row.state is S.SUBMITTED and c.already_accepted == 1 and store.payments() == []


async def test_409_after_a_crash_between_submit_and_record(store, work_bytes):
    """The process sent the proof, then died before storing the answer: on restart the row is still computed
    with a submit attempt noted, and the market's 409 means it has the proof."""
    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    row = await prove_one(store, FakeProver(), StageSettings())
    assert row is not None
    store.note_submit_attempt(row.row_id)  # what the dead process did before sending
    m.complete_error = Rejected("POST", "http://m/complete", 409, "already submitted")
    row = await submit_one(m, store)
    assert row is not None and row.state is S.SUBMITTED and row.submit_attempts == 2


async def test_409_without_an_earlier_submission_is_a_failure(store, work_bytes):
    cid = _queue(store, work_bytes)
    m = FakeMarket({cid: work_bytes})
    await fetch_one(m, store)
    await prove_one(store, FakeProver(), StageSettings())
    m.complete_error = Rejected("POST", "http://m/complete", 409, "conflict")
    row = await submit_one(m, store)
    assert row is not None and row.state is S.FAILED


async def test_the_fetched_work_is_handed_to_the_prove_stage(store, work_bytes):
    """The fetch stage's Work goes to the prove stage as it is (no second parse); without a handoff (another
    process fetched it) the stored bytes are parsed; a bounded handoff drops its oldest entry."""
    from agent.proving.work import Work

    seen: list[Work] = []

    def check(raw: bytes) -> Work:
        work = Work.from_bytes(raw, request_only=True)
        seen.append(work)
        return work

    cid = _queue(store, work_bytes)
    handoff = WorkHandoff()
    assert await fetch_one(FakeMarket({cid: work_bytes}), store, check=check, handoff=handoff)
    prover = FakeProver()
    row = await prove_one(store, prover, StageSettings(), handoff=handoff, check=check)
    assert row is not None and row.state is S.COMPUTED
    assert len(seen) == 1 and prover.works == seen and handoff.take(row.row_id) is None
    small = WorkHandoff(limit=2)
    for i in range(3):
        small.put(i, seen[0])
    assert small.take(0) is None and small.take(1) is seen[0] and small.take(1) is None


async def test_an_unchecked_proof_is_stored_only_under_the_debug_switch(store, work_bytes):
    """prover.verify_before_submit = false (its debug switch set): a proof whose partitions were not checked
    is stored as computed; without the switch it is not; a proof whose check failed never is."""
    from agent.proving.prover import Proven
    from agent.proving.verifier import VerifyReport

    class Unchecked(FakeProver):
        def __init__(self, verdict: bool | None) -> None:
            super().__init__()
            self.verdict = verdict

        async def prove(self, work, job_id):
            proven = await super().prove(work, job_id)
            return Proven(proven.proof, VerifyReport((self.verdict,) * work.partitions))

    cid = _queue(store, work_bytes)
    await fetch_one(FakeMarket({cid: work_bytes}), store)
    row = await prove_one(store, Unchecked(None), StageSettings())
    assert row is not None and row.state is S.FETCHED and "not verified" in (row.last_error or "")
    row = await prove_one(store, Unchecked(False), StageSettings(submit_unverified=True))
    assert row is not None and row.state is S.FETCHED and "did not verify" in (row.last_error or "")
    row = await prove_one(store, Unchecked(None), StageSettings(submit_unverified=True))
    assert row is not None and row.state is S.COMPUTED and row.proof is not None


# --- P32: a proof the market took back is stopped ---------------------------------------------------------


class SlowProver:
    """A prover double that proves ``partitions`` partitions (a 32GiB proof has 10; the 2KiB work here has
    one), one per ``per_partition_s``, and, like the pipeline, looks at its cancel event only between
    partitions (ProofCancelled at the next boundary)."""

    def __init__(self, per_partition_s: float = 0.15, partitions: int = 10) -> None:
        self.per_partition_s = per_partition_s
        self.partitions = partitions
        self.partitions_done = 0
        self.cancelled = False

    async def prove(self, work, job_id, *, cancel=None):
        import anyio
        from _doubles import MARK, mark_report

        from agent.proving.pipeline import ProofCancelled
        from agent.proving.prover import Proven

        for k in range(self.partitions):
            if cancel is not None and cancel.is_set():
                self.cancelled = True
                raise ProofCancelled(f"{job_id}: cancelled before partition {k} of {self.partitions}")
            await anyio.sleep(self.per_partition_s)
            self.partitions_done += 1
        proof = bytes([MARK]) * 192 * work.partitions
        return Proven(proof, mark_report(proof))


class Poll:
    """The market's poll listing nothing: the request was reassigned (or its deadline passed)."""

    async def poll(self):
        from market.models import WorkResponse

        return WorkResponse(requests=[], active_asks=[])

    async def create_ask(self, price_attofil):  # pragma: no cover - asks are not wanted here
        raise AssertionError("no ask in this test")


async def test_work_taken_back_while_proving_is_stopped_and_never_submitted(store, work_bytes):
    """The poll stops listing a request being proven: the request loop marks the row gone, the proof's
    look-out sees it and the proof stops at its next partition boundary (it ran to the end, 248 s of Groth16
    in a run from outside, and was then submitted for a 410). The row ends gone, nothing is submitted."""
    import anyio

    from agent.requester import RequestLoopSettings, request_round

    cid = _queue(store, work_bytes)
    market = FakeMarket({cid: work_bytes})
    await fetch_one(market, store)
    prover = SlowProver(per_partition_s=0.3)
    settings = StageSettings(watch_s=0.05)
    counters = StageCounters()
    ended = []
    async with anyio.create_task_group() as tg:

        async def prove() -> None:
            ended.append(await prove_one(store, prover, settings, counters=counters))

        tg.start_soon(prove)
        await anyio.sleep(0.1)  # the first partition is being proven
        assert store.get(1).state is S.PROVING
        r = await request_round(Poll(), store, RequestLoopSettings(price_attofil=1, low_water=0))
        assert r.gone == 1
    row = ended[0]
    assert row.state is S.GONE and "taken back while it was proven" in (row.last_error or "")
    assert prover.cancelled and prover.partitions_done == 1  # stopped at the first boundary, of 10
    assert counters.gone == 1 and counters.proofs_ok == 0
    assert await submit_one(market, store) is None and market.completed == []


async def test_deadline_passing_while_proving_stops_the_proof(store, work_bytes):
    """The deadline passes during the proof: it stops at the next partition boundary and the row goes gone
    (a late proof is answered 410 and a missed deadline is already paid for)."""
    import time

    cid = _queue(store, work_bytes, deadline=time.time() + 0.4)
    market = FakeMarket({cid: work_bytes})
    await fetch_one(market, store)
    prover = SlowProver(per_partition_s=0.2)
    row = await prove_one(store, prover, StageSettings(watch_s=0.05))
    assert row is not None and row.state is S.GONE
    assert "deadline passed while proving; proof stopped" in (row.last_error or "")
    assert prover.cancelled and 1 <= prover.partitions_done <= 4
    assert await submit_one(market, store) is None and market.completed == []


async def test_a_prover_that_cannot_stop_still_never_submits_taken_back_work(store, work_bytes):
    """A prover without ``cancel`` (FakeProver) runs to the end; the row the request loop marked gone
    meanwhile is left gone, never computed or submitted."""
    cid = _queue(store, work_bytes)
    market = FakeMarket({cid: work_bytes})
    await fetch_one(market, store)

    class Late(FakeProver):
        async def prove(self, work, job_id):
            store.transition(1, S.PROVING, S.GONE, error="gone: taken back")  # the request loop, meanwhile
            return await super().prove(work, job_id)

    row = await prove_one(store, Late(), StageSettings())
    assert row is not None and row.state is S.GONE and row.proof is None
    assert await submit_one(market, store) is None and market.completed == []
