"""Bugs the reliability scenarios found: failing tests (xfail, strict) until fixed, then regression tests.

gpu-errors-3-in-a-row: three unverified proofs in a row close the readiness gate ("unhealthy",
agent.service.UNHEALTHY_AFTER), and only a proof that verifies opens it again. When those three failures are
the three attempts of the only request in the queue (a GPU fault that lasted a few seconds, ``max_attempts``
= 3), the request fails, nothing is left to prove, no ask is made, so no proof can ever verify: the agent
stays up, asks for nothing and earns nothing until it is restarted. Fix (agent/service.py, PIPELINE's): let
the unhealthy gate half-open after a cool-down (e.g. remember ``monotonic()`` of the last failure and treat
the failures as stale after ``error_backoff_max_s``, or re-run the warm-up's self-test proof when the gate is
unhealthy and nothing is fetched), so one new request is asked for and a verified proof closes the incident.

submit-outage (two bugs) and disk-full (fixed in 723d675 by FLEET): see the other tests.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent.proving.prover import Proven
from agent.proving.verifier import VerifyReport
from agent.proving.work import InputFormat, Work, WorkKind
from agent.requester import RequestLoopSettings
from agent.service import Agent, AgentSettings
from agent.stages import StageSettings
from agent.store import RequestRow, RequestState, SqliteStore
from gpu.placement import GpuError
from market.errors import Rejected, TransportError
from market.models import ProofReward, WorkAsk, WorkRequest, WorkResponse
from market.proofdata import ProofData

pytestmark = pytest.mark.slow

# Request data the service can carry through its stages without a sealed sector: the prover and checker
# doubles below never look inside it (the strict C1 check is not what this test is about).
WORK = json.dumps(
    {
        "SectorID": {"Miner": 1000, "Number": 1},
        "PoRep": None,
        "Snap": {"ProofType": 7, "old_r": [0] * 32, "new_r": [0] * 32, "new_d": [0] * 32, "Proofs": []},
    }
).encode()


def unchecked(raw: bytes) -> Work:
    """The request's Work without the strict check (its data is no real request): one partition."""
    from types import SimpleNamespace

    pd = ProofData.parse(raw)
    pt = SimpleNamespace(name="Unchecked", param_stem="unchecked", partitions=1, size_label="-")
    return Work(
        WorkKind.SNAP, pt, None, None, ((0,),), raw, InputFormat.PROOFDATA,  # type: ignore[arg-type]
        pd.sector_id.miner, pd.sector_id.number,
    )


class FlakyGpuProver:
    """Raises the GPU error of a launch failure ``fail`` times, then returns a 'valid' 192-byte proof."""

    def __init__(self, fail: int) -> None:
        self.fail = fail

    async def prove(self, work: Work, job_id: str) -> Proven:
        if self.fail:
            self.fail -= 1
            raise GpuError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure", device=0)
        return Proven(b"\xa5" * 192, VerifyReport((True,)))


class OneAtATimeMarket:
    """Each ask is matched on the next poll to a request of its own (one C1 served under distinct CIDs)."""

    clock_offset_s: float | None = None  # never measured (agent.service.Market)

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pending: list[int] = []
        self.requests: list[WorkRequest] = []
        self.asks = 0
        self.completed: list[str] = []

    async def poll(self) -> WorkResponse:
        for ask_id in self.pending:
            cid = f"bafkrei{ask_id:052d}"
            self.requests.append(WorkRequest(id=ask_id, request_cid=cid, done=None, work_ask_id=ask_id))
        self.pending = []
        return WorkResponse(requests=tuple(self.requests), active_asks=())

    async def create_ask(self, price_attofil: int) -> WorkAsk:
        self.asks += 1
        self.pending.append(self.asks)
        return WorkAsk(id=self.asks)

    async def fetch_request_bytes(self, request_cid: str) -> bytes:
        return self.data

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward:
        self.completed.append(request_cid)
        return ProofReward("ok", True, 0, 0, 0, b"")

    async def withdraw(self, ask_id: int) -> None:
        raise AssertionError("not asked to withdraw")


def test_agent_asks_again_after_its_only_request_failed_on_gpu_errors(tmp_path: Path) -> None:
    market = OneAtATimeMarket(WORK)
    store = SqliteStore(tmp_path / "agent.db")
    settings = AgentSettings(
        requests=RequestLoopSettings(1, low_water=1, high_water=1, poll_interval_s=0.02, backoff_max_s=0.1),
        stages=StageSettings(max_attempts=3),
        idle_s=0.01,
        error_backoff_s=0.05,
        error_backoff_max_s=0.2,
        drain_s=2.0,
    )
    agent = Agent(market, store, FlakyGpuProver(fail=3), settings, check=unchecked)

    async def main() -> None:
        with anyio.move_on_after(8):
            await agent.run(max_proofs=1, handle_signals=False)

    anyio.run(main)
    rows = store.list_requests()
    store.close()
    first = rows[0]
    assert (
        first.state is RequestState.FAILED
        and first.last_error
        and "CUDA_ERROR_LAUNCH_FAILED" in first.last_error
    )
    assert market.completed, (
        f"no proof after the failed request: {market.asks} ask(s), rows {[r.state for r in rows]}"
    )


class StuckSubmitMarket(OneAtATimeMarket):
    """Every submission fails as the market's complete endpoint does during an outage (503 after retries)."""

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward:
        raise TransportError("POST complete: 503 Service Unavailable (outage)")


def test_agent_stops_asking_while_its_proofs_cannot_be_submitted(tmp_path: Path) -> None:
    """Found by the submit-outage scenario: while the complete endpoint fails, every proof ends computed and
    leaves the queue target (queued, fetched, proving), so the agent asks for more work, proves it and piles
    up proofs that then miss their deadlines (50 challenge proofs each). Fix (agent/requester.py, one line):
    ``UNFINISHED = (QUEUED, FETCHED, PROVING, COMPUTED)``."""
    market = StuckSubmitMarket(WORK)
    store = SqliteStore(tmp_path / "agent.db")
    settings = AgentSettings(
        requests=RequestLoopSettings(1, low_water=1, high_water=2, poll_interval_s=0.02, backoff_max_s=0.1),
        idle_s=0.01,
        error_backoff_s=0.05,
        error_backoff_max_s=0.1,
        drain_s=0.5,
    )
    agent = Agent(market, store, FlakyGpuProver(fail=0), settings, check=unchecked)

    async def main() -> None:
        with anyio.move_on_after(4):
            await agent.run(max_proofs=1, handle_signals=False)

    anyio.run(main)
    computed = store.counts()[RequestState.COMPUTED]
    store.close()
    assert computed >= 1  # the proofs were made; only their submission is stuck
    assert market.asks <= settings.requests.high_water, f"{market.asks} asks, {computed} proofs stuck"


class OnceFullStore(SqliteStore):
    """The production store whose first write of request data and first write of a verified proof fail the
    way SQLite fails on a full disk (the scenario's tmpfs), as the disk-full scenario saw them fail."""

    full_data = True
    full_proof = True

    def store_data(self, row_id: int, data: bytes, proof_type: str) -> RequestRow:
        if self.full_data:
            self.full_data = False
            raise sqlite3.OperationalError("database or disk is full")
        return super().store_data(row_id, data, proof_type)

    def transition(self, row_id: int, src: RequestState, dst: RequestState, **kw: Any) -> RequestRow:
        if dst is RequestState.COMPUTED and self.full_proof:
            self.full_proof = False
            raise sqlite3.OperationalError("database or disk is full")
        return super().transition(row_id, src, dst, **kw)


def test_requests_whose_store_write_failed_are_taken_up_again(tmp_path: Path) -> None:
    """Found by the disk-full scenario: fetch_one leases a queued row and prove_one claims a fetched one for
    this process; when the write that should end the step fails (disk full), the exception leaves the hold in
    place. The fetcher then skips the row for good (lease() takes unheld rows only) and the prover, holding
    its capacity in a row nobody proves, claims nothing more: the agent stays up and proves nothing until it
    is restarted. Fixed (FLEET): every step ends with store.let_go (no write, cannot fail); the store keeps
    the rows whose step is running (an in-flight set), so this owner's next claim or lease takes up a row it
    still holds but no step works on, and reap re-queues it; capacity counts running steps only."""
    market = OneAtATimeMarket(WORK)
    store = OnceFullStore(tmp_path / "agent.db")
    settings = AgentSettings(
        requests=RequestLoopSettings(1, low_water=1, high_water=2, poll_interval_s=0.02, backoff_max_s=0.1),
        idle_s=0.01,
        error_backoff_s=0.05,
        error_backoff_max_s=0.1,
        drain_s=1.0,
    )
    agent = Agent(market, store, FlakyGpuProver(fail=0), settings, check=unchecked)

    async def main() -> None:
        with anyio.move_on_after(6):
            await agent.run(max_proofs=6, handle_signals=False)

    anyio.run(main)
    rows = store.list_requests()
    store.close()
    assert not store.full_data and not store.full_proof  # both faults happened
    stuck = [(r.row_id, r.state.value, r.owner is not None) for r in rows if r.row_id <= 2]
    assert all(r.state is RequestState.SUBMITTED for r in rows if r.row_id <= 2), stuck


class Outage503Market:
    """What market.client.complete raises when the complete endpoint answered 503 for the whole retry
    budget: Rejected with status 503 (retryable), the proof still valid and the work still assigned."""

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward:
        raise Rejected("POST", f"http://market/complete/{request_cid}", 503, "Service Unavailable")


def test_a_verified_proof_survives_a_submit_outage_longer_than_the_retry_budget(tmp_path: Path) -> None:
    """Found by the submit-outage scenario: after the client's retry budget ran out on 503s, submit_one takes
    the Rejected(503) for a refusal and fails the request, throwing away a verified proof whose deadline is
    still ahead. Fix (agent/stages.py, submit_one): ``except Rejected as e: if e.retryable: raise`` before
    the 409 / refusal branches (the row stays computed; the submitter's loop backs off and tries again)."""
    from agent.stages import submit_one

    store = SqliteStore(tmp_path / "agent.db")
    row = store.add_request(1, "bafkrei" + "0" * 52, 1)
    assert row is not None
    store.store_data(row.row_id, WORK, "snap")
    claimed = store.claim("me")
    assert claimed is not None
    store.transition(row.row_id, RequestState.PROVING, RequestState.COMPUTED, proof=b"\xa5" * 192)

    async def main() -> None:
        try:
            await submit_one(Outage503Market(), store)
        except Rejected:
            pass  # re-raised for the loop's backoff: fine, as long as the row stays computed

    anyio.run(main)
    after = store.get(row.row_id)
    store.close()
    assert after.state is RequestState.COMPUTED, f"{after.state.value}: {after.last_error}"


class FullAtCommitStore(SqliteStore):
    """The production store whose next transaction fails at its end, rolled back, the way SQLite's COMMIT
    fails on a full disk."""

    fail_next_commit = False

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with super()._tx() as db:
            yield db
            if self.fail_next_commit:
                self.fail_next_commit = False
                raise sqlite3.OperationalError("database or disk is full")


def test_a_lease_whose_commit_failed_does_not_strand_the_row(tmp_path: Path) -> None:
    """Found by the disk-full scenario after 723d675: lease() and claim() put the row into the in-flight set
    inside the transaction; when the COMMIT then fails (disk full) the exception reaches the caller, which
    never got the row and so never calls let_go: the row stays "in flight" in this process for good and
    _dropped() never offers it again (disk-full: 1 request still queued at the end). Fix (agent/store.py):
    add to ``_in_flight`` after the ``with self._tx()`` block has committed, in lease() and claim()."""
    from agent.stages import fetch_one

    class Data:
        async def fetch_request_bytes(self, request_cid: str) -> bytes:
            return WORK

    store = FullAtCommitStore(tmp_path / "agent.db")
    row = store.add_request(1, "bafkrei" + "0" * 52, 1)
    assert row is not None

    async def main() -> None:
        def full(*a: Any, **k: Any) -> RequestRow:
            raise sqlite3.OperationalError("database or disk is full")

        store.store_data = full  # type: ignore[method-assign]  # the first fetch cannot keep its data
        with pytest.raises(sqlite3.OperationalError):
            await fetch_one(Data(), store, check=unchecked, owner="me")
        del store.store_data  # the row is still ours; the next lease (its first write) fails at COMMIT
        store.fail_next_commit = True
        with pytest.raises(sqlite3.OperationalError):
            await fetch_one(Data(), store, check=unchecked, owner="me")
        assert await fetch_one(Data(), store, check=unchecked, owner="me"), "the row is never offered"

    anyio.run(main)
    assert store.get(row.row_id).state is RequestState.FETCHED
    store.close()
