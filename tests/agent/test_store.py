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
from collections.abc import Callable, Iterator

import pytest

from agent.store import (
    TERMINAL_STATES,
    TRANSITIONS,
    AskState,
    Payment,
    RequestState,
    SqliteStore,
    SqlStore,
    StoreError,
    TransitionError,
    open_store,
)

S = RequestState


BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def make_store(request, tmp_path) -> Iterator[Callable[..., SqlStore]]:
    """Opens stores on one database of the parametrised backend (several = several processes' stores)."""
    sqlite = request.param == "sqlite"
    url = f"sqlite:///{tmp_path / 'agent.db'}" if sqlite else request.getfixturevalue("pg_url")
    opened: list[SqlStore] = []

    def make(**options: object) -> SqlStore:
        s = open_store(url, **options)
        opened.append(s)
        return s

    make.url = url  # type: ignore[attr-defined]
    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(make_store):
    return make_store()


def _fetched(store: SqlStore, n: int = 1) -> int:
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


def test_claim_is_exclusive_across_threads_and_connections(make_store):
    """Four workers, each with its own store (its own connection, as on four hosts), claim and lease at once:
    every row is claimed exactly once (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one writer at a time)."""
    store = make_store()
    ids = [_fetched(store, n) for n in range(20)]
    for n in range(20, 30):
        assert store.add_request(n, f"q-{n}", 7) is not None
    got: list[int] = []
    leased: list[int] = []
    lock = threading.Lock()
    stores = [make_store() for _ in range(4)]

    def worker(i: int) -> None:
        s = stores[i]
        while (row := s.claim(f"w{i}")) is not None:
            with lock:
                got.append(row.row_id)
        while (row := s.lease(f"w{i}", S.QUEUED)) is not None:
            with lock:
                leased.append(row.row_id)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == ids  # every row claimed exactly once
    assert len(leased) == 10 and len(set(leased)) == 10  # every queued row leased exactly once
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


def test_purge_by_retention(make_store):
    clock = [1000.0]
    s = make_store(clock=lambda: clock[0])
    a = s.add_request(1, "a", 1)
    b = s.add_request(2, "b", 1)
    c = s.add_request(3, "c", 1)
    assert a and b and c
    s.transition(a.row_id, S.QUEUED, S.GONE)
    s.transition(b.row_id, S.QUEUED, S.FAILED)
    clock[0] = 2000.0
    assert s.purge(submitted_before=1500.0, failed_before=500.0) == 1  # only the gone row
    assert {r.request_cid for r in s.list_requests()} == {"b", "c"}


def _set_schema_version(make_store, version: int) -> None:
    url = make_store.url
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url[len("sqlite:///") :])
        db.execute(f"PRAGMA user_version = {version}")
        db.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE psagent_schema SET version = %s", (version,))


def test_newer_schema_is_refused(make_store):
    s = make_store()
    newer = type(s).SCHEMA_VERSION + 1
    _set_schema_version(make_store, newer)
    with pytest.raises(StoreError, match="newer than this psagent knows"):
        make_store()


def test_migrations_upgrade_an_older_schema(make_store):
    """A store at schema 2 (before fleets) gains the hosts table, its requests' proof_type column becomes
    kind (schema 4), and it keeps its rows."""
    s = make_store()
    row_id = _fetched(s)
    s.close()
    url = make_store.url
    if url.startswith("sqlite:///"):
        db = sqlite3.connect(url[len("sqlite:///") :])
        db.execute("DROP TABLE hosts")
        db.execute("DROP INDEX requests_owner")
        db.execute("ALTER TABLE requests RENAME COLUMN kind TO proof_type")
        db.execute("PRAGMA user_version = 2")
        db.close()
    else:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP TABLE hosts")
            conn.execute("DROP INDEX requests_owner")
            conn.execute("ALTER TABLE requests RENAME COLUMN kind TO proof_type")
            conn.execute("UPDATE psagent_schema SET version = 2")
    s = make_store()
    assert s.schema_version() == type(s).SCHEMA_VERSION == 4
    row = s.get(row_id)
    assert row.state is S.FETCHED and s.data(row_id) == b'{"x":1}' and row.kind == "porep"
    s.heartbeat("a", hostname="h", pid=1, capacity=1)
    assert [h.owner for h in s.hosts()] == ["a"]


def test_reopen_keeps_everything_and_schema_version(make_store):
    s = make_store()
    row_id = _fetched(s)
    s.record_ask(5, 1)
    s.close()
    s = make_store()
    assert s.schema_version() == type(s).SCHEMA_VERSION
    assert s.get(row_id).state is S.FETCHED and s.data(row_id) == b'{"x":1}'
    assert [a.ask_id for a in s.asks([AskState.ACTIVE])] == [5]


def test_open_store_urls(tmp_path):
    assert isinstance(open_store(f"sqlite:///{tmp_path / 'a.db'}"), SqliteStore)
    with pytest.raises(StoreError, match="unknown store URL"):
        open_store("mysql://x")
    # nothing listens there: one line naming the URL without its password
    refused = r"cannot open the store postgresql://u:\*\*\*@127\.0\.0\.1:1/x"
    with pytest.raises(StoreError, match=refused) as e:
        open_store("postgresql://u:secret@127.0.0.1:1/x", connect_timeout_s=2)
    assert "secret" not in str(e.value)


def test_lease_release_and_owner_fencing(store):
    a = store.add_request(1, "q1", 7)
    assert a is not None
    held = store.lease("h1", S.QUEUED)
    assert held is not None and held.owner == "h1"
    assert store.lease("h2", S.QUEUED) is None  # held: nobody else fetches it
    assert not store.release(a.row_id, "h2") and store.release(a.row_id, "h1")
    assert store.lease("h2", S.QUEUED) is not None
    store.store_data(a.row_id, b"d", "porep")  # a state change drops the hold
    row = store.claim("h2")
    assert row is not None and row.owner == "h2"
    with pytest.raises(TransitionError, match="held by h2"):  # a stale claimant's late result is refused
        store.transition(row.row_id, S.PROVING, S.COMPUTED, proof=b"p" * 192, owner="h1")
    done = store.transition(row.row_id, S.PROVING, S.COMPUTED, proof=b"p" * 192, owner="h2")
    assert done.owner is None
    assert store.lease("h3", S.COMPUTED) is not None and store.lease("h1", S.COMPUTED) is None
    with pytest.raises(TransitionError, match="leased"):
        store.lease("h1", S.FETCHED)


def test_claims_respect_the_members_capacity(store):
    for n in range(4):
        _fetched(store, n)
    store.heartbeat("h1", hostname="a", pid=1, capacity=2)
    assert store.claim("h1") is not None and store.claim("h1") is not None
    assert store.claim("h1") is None  # two devices, two proofs at once
    assert store.claim("h2") is not None  # (an unregistered claimant is not limited)


def test_heartbeats_reap_and_fleet_capacity(make_store):
    clock = [1000.0]
    s = make_store(clock=lambda: clock[0], heartbeat_s=1.0, stale_after_s=3.0)
    ids = [_fetched(s, n) for n in range(3)]
    devices = ["0: H200", "1: H200"]
    s.heartbeat("h1", hostname="a", pid=1, capacity=2, devices=devices)
    s.heartbeat("h2", hostname="b", pid=2, capacity=1)
    assert s.fleet_capacity() == 3
    r1, r2 = s.claim("h1"), s.claim("h2")
    assert r1 is not None and r2 is not None
    q = s.add_request(50, "q", 7)
    assert q is not None and s.lease("h2", S.QUEUED) is not None
    clock[0] += 2.0
    s.heartbeat("h1", hostname="a", pid=1, capacity=2, devices=devices, last_error="prover0: GpuError: OOM")
    assert s.reap("h1") == 0  # h2 was heard 2 s ago: alive, its claims stay
    clock[0] += 2.0  # h2 silent for 4 s > 3 s
    assert s.fleet_capacity() == 2
    assert s.reap("h1") == 1
    assert s.get(r2.row_id).state is S.FETCHED and s.get(r2.row_id).has_data  # never lost
    assert "h2" in (s.get(r2.row_id).last_error or "")
    assert s.get(q.row_id).owner is None  # its fetch lease is free again
    assert s.get(r1.row_id).state is S.PROVING and s.get(r1.row_id).owner == "h1"
    again = s.claim("h1")  # the oldest free row is the one re-queued: its second attempt, a new job id
    assert again is not None and again.row_id == r2.row_id == ids[1] and again.attempts == 2
    hosts = {h.owner: h for h in s.hosts()}
    assert hosts["h1"].alive and not hosts["h2"].alive
    assert hosts["h1"].devices == ("0: H200", "1: H200") and hosts["h1"].proving == 2
    assert hosts["h1"].last_error == "prover0: GpuError: OOM" and hosts["h1"].last_error_at == 1002.0
    s.heartbeat("h1", hostname="a", pid=1, capacity=2, devices=devices)  # no new error: the last one is kept
    assert s.hosts()[0].last_error == "prover0: GpuError: OOM"
    assert s.leave("h1") == 2  # a clean exit hands back both claims
    h1 = next(h for h in s.hosts() if h.owner == "h1")
    assert not h1.alive and h1.stopped_at is not None and h1.proving == 0
    assert len(s.list_requests([S.FETCHED])) == 3 and s.fleet_capacity() == 0


def test_the_requester_is_one_member(make_store):
    a, b = make_store(), make_store()
    for who, s in (("a", a), ("b", b)):
        s.heartbeat(who, hostname=who, pid=1, capacity=1)
    first = a.try_lead("a")
    second = b.try_lead("b")
    if make_store.url.startswith("sqlite:///"):
        assert first and second  # one agent per SQLite file: it always asks
        return
    assert first and not second and a.try_lead("a")  # held, and kept
    assert [h.owner for h in a.hosts() if h.requester] == ["a"]
    a.close()  # the holder's sessions end (as when its process dies): the lock is free
    assert b.try_lead("b")
    assert [h.owner for h in b.hosts() if h.requester] == ["b"]


@pytest.mark.skipif(sys.platform != "linux", reason="uses kill -9 semantics of Linux")
def test_kill_9_between_transitions_loses_nothing(make_store):
    """A process killed (SIGKILL) in a tight loop of state changes leaves every row in a valid state with its
    data intact: each change is one committed transaction or none."""
    s = make_store()
    for n in range(50):
        _fetched(s, n)
    s.close()
    script = textwrap.dedent(
        f"""
        import sys
        from agent.store import open_store
        from agent.store import RequestState as S
        s = open_store({make_store.url!r})
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
    s = make_store()
    rows = s.list_requests()
    assert len(rows) == 50
    for r in rows:
        assert r.state in (S.FETCHED, S.PROVING, S.COMPUTED, S.SUBMITTED)
        assert r.has_data == (r.state not in TERMINAL_STATES)
        if r.state in (S.COMPUTED, S.SUBMITTED):
            assert r.proof == b"p" * 192
    s.reset_orphans("new-process")
    assert not s.list_requests([S.PROVING])  # the victim's claim went back to fetched


def test_a_late_let_go_of_the_fetch_does_not_drop_the_claim_that_followed_it(make_store):
    """A row fetched by this process can be claimed by its prove loop before the fetch step's ``finally:
    let_go`` runs (two tasks of one event loop). That late let_go ends the fetch's hold only: the claim stays
    in flight, so this member's own reap does not re-queue a proof it is running (the fleet test caught a
    live member's fresh claim re-queued and proven a second time by another member)."""
    store = make_store()
    store.heartbeat("me", hostname="h", pid=1, capacity=1)
    q = store.add_request(5, "late", 7)
    assert q is not None
    leased = store.lease("me", S.QUEUED)  # the fetch step
    assert leased is not None and leased.row_id == q.row_id
    store.store_data(q.row_id, b"c1", "porep")  # queued → fetched: the fetch step's last write...
    claimed = store.claim("me")  # ...and the prove loop claims the row before the fetch step lets go
    assert claimed is not None and claimed.row_id == q.row_id
    store.let_go(q.row_id)  # the fetch step's finally
    assert store.reap("me") == 0 and store.get(q.row_id).state is S.PROVING
    assert store.claim("me") is None  # the claim still counts against the capacity
    store.let_go(q.row_id)  # the prove step ends without recording: now the row is dropped and re-queued
    store.let_go(q.row_id)  # an extra let_go is harmless
    assert store.reap("me") == 1 and store.get(q.row_id).state is S.FETCHED


def test_a_step_that_could_not_record_its_end_does_not_strand_the_row(make_store):
    """A step whose last write failed (disk full, lost connection) leaves its row held by this owner; once
    the step lets go, the owner's next claim or lease takes the row up again and reap re-queues it, and the
    registered capacity counts only rows a step still works on."""
    store = make_store()
    store.heartbeat("me", hostname="h", pid=1, capacity=1)
    a, b = _fetched(store, 1), _fetched(store, 2)
    first = store.claim("me")
    assert first is not None and first.row_id == a
    assert store.claim("me") is None  # capacity 1, and the step on row a is running
    store.let_go(a)  # ...it ended without recording (PROVING → COMPUTED failed)
    again = store.claim("me")
    assert again is not None and again.row_id == a and again.attempts == 2 and again.job_id == f"{a}-2"
    other = make_store()  # another live member: row a is not free for it, row b is
    other.heartbeat("someone-else", hostname="h2", pid=2, capacity=2)
    assert other.claim("someone-else") is not None and other.claim("someone-else") is None
    store.let_go(a)
    assert store.reap("me") == 1 and store.get(a).state is S.FETCHED and store.get(a).has_data
    q = store.add_request(9, "q", 7)
    assert q is not None
    assert store.lease("me", S.QUEUED) is not None and store.lease("me", S.QUEUED) is None
    store.let_go(q.row_id)  # the fetch's store_data failed
    assert store.lease("me", S.QUEUED) is not None  # taken up again by the next fetch
    assert store.get(b).owner == "someone-else"
