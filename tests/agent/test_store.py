"""agent.store: the request state machine, claims, orphan reset, vouchers, asks, migrations, durability."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from agent.store import (
    TERMINAL_STATES,
    TRANSITIONS,
    AskState,
    Payment,
    RequestState,
    SqliteStore,
    StoreError,
    TransitionError,
    open_store,
)

S = RequestState


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(tmp_path / "agent.db")
    yield s
    s.close()


def _fetched(store: SqliteStore, n: int = 1) -> int:
    row = store.add_request(100 + n, f"bafk-{n}", 7)
    assert row is not None
    return store.store_data(row.row_id, b'{"x":1}', "porep").row_id


def test_add_dedupes_and_matches_the_ask(store):
    store.record_ask(7, 5 * 10**15)
    row = store.add_request(1, "bafk-a", 7, deadline=123.0)
    assert row is not None and row.state is S.QUEUED and row.deadline == 123.0 and not row.has_data
    assert store.add_request(2, "bafk-a", 7) is None  # same cid: dedupe
    assert [a.state for a in store.asks()] == [AskState.MATCHED]
    assert store.counts()[S.QUEUED] == 1


def test_every_edge_of_the_state_machine_and_no_other(store):
    """Each (src, dst) pair is either an edge (allowed once) or refused without changing the row."""
    for src in RequestState:
        for dst in RequestState:
            row = store.add_request(1, f"cid-{src}-{dst}", 1)
            assert row is not None
            # walk the row to src along edges
            path = {
                S.QUEUED: [],
                S.FETCHED: [S.FETCHED],
                S.PROVING: [S.FETCHED, S.PROVING],
                S.COMPUTED: [S.FETCHED, S.PROVING, S.COMPUTED],
                S.SUBMITTED: [S.FETCHED, S.PROVING, S.COMPUTED, S.SUBMITTED],
                S.GONE: [S.GONE],
                S.FAILED: [S.FAILED],
            }[src]
            cur = S.QUEUED
            for step in path:
                store.transition(row.row_id, cur, step, proof=b"p" * 192 if step is S.COMPUTED else None)
                cur = step
            before = store.get(row.row_id)
            proof = b"p" * 192 if dst is S.COMPUTED else None
            if dst in TRANSITIONS[src]:
                after = store.transition(row.row_id, src, dst, proof=proof)
                assert after.state is dst
            else:
                with pytest.raises(TransitionError):
                    store.transition(row.row_id, src, dst, proof=proof)
                assert store.get(row.row_id) == before
    for t in TERMINAL_STATES:
        assert not TRANSITIONS[t]


def test_transition_is_compare_and_set(store):
    row_id = _fetched(store)
    store.transition(row_id, S.FETCHED, S.GONE)
    with pytest.raises(TransitionError, match="is gone, not fetched"):
        store.transition(row_id, S.FETCHED, S.PROVING)


def test_computed_needs_a_proof_and_ending_erases_the_data(store):
    row_id = _fetched(store)
    assert store.data(row_id) == b'{"x":1}'
    store.transition(row_id, S.FETCHED, S.PROVING)
    with pytest.raises(TransitionError, match="only with its"):
        store.transition(row_id, S.PROVING, S.COMPUTED)
    store.transition(row_id, S.PROVING, S.COMPUTED, proof=b"\1" * 1920, pow=False)
    row = store.transition(row_id, S.COMPUTED, S.SUBMITTED)
    assert row.proof == b"\1" * 1920 and row.pow is False and not row.has_data
    with pytest.raises(StoreError, match="holds no data"):
        store.data(row_id)


def test_claim_is_exclusive_across_threads(store):
    ids = [_fetched(store, n) for n in range(20)]
    got: list[int] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (row := store.claim(name)) is not None:
            with lock:
                got.append(row.row_id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == ids  # every row claimed exactly once
    rows = store.list_requests([S.PROVING])
    assert len(rows) == 20 and all(r.attempts == 1 and r.job_id == f"{r.row_id}-1" for r in rows)


def test_job_id_is_unique_per_attempt(store):
    row_id = _fetched(store)
    first = store.claim("a")
    assert first is not None
    store.transition(row_id, S.PROVING, S.FETCHED, error="verification failed")
    second = store.claim("a")
    assert second is not None and second.job_id != first.job_id and second.attempts == 2
    assert second.last_error == "verification failed"


def test_orphan_reset_requeues_dead_claims_only(store):
    mine, theirs = _fetched(store, 1), _fetched(store, 2)
    assert store.claim("me") is not None  # takes `mine` (oldest)
    assert store.claim("dead") is not None
    queued = store.add_request(9, "bafk-q", 1)
    assert queued is not None
    assert store.reset_orphans("me") == 1
    assert store.get(mine).state is S.PROVING and store.get(mine).owner == "me"
    assert store.get(theirs).state is S.FETCHED and store.get(theirs).owner is None
    assert store.get(theirs).has_data  # the fetched data is kept: nothing to download again
    assert store.get(queued.row_id).state is S.QUEUED


def test_vouchers_are_kept_once_and_must_not_shrink(store):
    p1 = Payment(1, 10, 10, b"s1", "c1", 1.0)
    p2 = Payment(2, 5, 15, b"s2", "c2", 2.0)
    assert store.record_payment(p1) and store.record_payment(p2)
    assert not store.record_payment(p2)  # the same voucher again
    with pytest.raises(StoreError, match="below"):
        store.record_payment(Payment(3, 1, 14, b"s3", "c3", 3.0))
    assert [p.cumulative_amount for p in store.payments()] == [10, 15]
    big = Payment(4, 10**30, 10**30 + 15, b"s4", "c4", 4.0)  # beyond int64: kept exactly
    assert store.record_payment(big) and store.payments()[-1].cumulative_amount == 10**30 + 15


def test_purge_by_retention(store):
    clock = [1000.0]
    s = SqliteStore(store.path + "2", clock=lambda: clock[0])
    a = s.add_request(1, "a", 1)
    b = s.add_request(2, "b", 1)
    c = s.add_request(3, "c", 1)
    assert a and b and c
    s.transition(a.row_id, S.QUEUED, S.GONE)
    s.transition(b.row_id, S.QUEUED, S.FAILED)
    clock[0] = 2000.0
    assert s.purge(submitted_before=1500.0, failed_before=500.0) == 1  # only the gone row
    assert {r.request_cid for r in s.list_requests()} == {"b", "c"}
    s.close()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "x.db"
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SqliteStore.SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer than this psagent knows"):
        SqliteStore(path)


def test_reopen_keeps_everything_and_schema_version(tmp_path):
    path = tmp_path / "y.db"
    s = SqliteStore(path)
    row_id = _fetched(s)
    s.record_ask(5, 1)
    s.close()
    s = open_store(f"sqlite:///{path}")
    assert s.schema_version() == SqliteStore.SCHEMA_VERSION
    assert s.get(row_id).state is S.FETCHED and s.data(row_id) == b'{"x":1}'
    assert [a.ask_id for a in s.asks([AskState.ACTIVE])] == [5]
    s.close()


def test_open_store_urls(tmp_path):
    with pytest.raises(StoreError, match="PostgreSQL"):
        open_store("postgresql://localhost/x")
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mysql://x")


@pytest.mark.skipif(sys.platform != "linux", reason="uses kill -9 semantics of Linux")
def test_kill_9_between_transitions_loses_nothing(tmp_path):
    """A process killed (SIGKILL) in a tight loop of state changes leaves every row in a valid state with its
    data intact: each change is one committed transaction or none."""
    path = tmp_path / "crash.db"
    s = SqliteStore(path)
    for n in range(50):
        _fetched(s, n)
    s.close()
    script = textwrap.dedent(
        f"""
        import sys
        from agent.store import SqliteStore, RequestState as S
        s = SqliteStore({str(path)!r})
        print("ready", flush=True)
        while True:
            row = s.claim("victim")
            if row is None:
                break
            s.transition(row.row_id, S.PROVING, S.COMPUTED, proof=b"p" * 192)
            s.transition(row.row_id, S.COMPUTED, S.SUBMITTED)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=dict(os.environ))
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    time.sleep(0.15)  # let it commit some changes, then kill it mid-loop
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    s = SqliteStore(path)
    rows = s.list_requests()
    assert len(rows) == 50
    for r in rows:
        assert r.state in (S.FETCHED, S.PROVING, S.COMPUTED, S.SUBMITTED)
        assert r.has_data == (r.state not in TERMINAL_STATES)
        if r.state in (S.COMPUTED, S.SUBMITTED):
            assert r.proof == b"p" * 192
    s.reset_orphans("new-process")
    assert not s.list_requests([S.PROVING])  # the victim's claim went back to fetched
    s.close()
