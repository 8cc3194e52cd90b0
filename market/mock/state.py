"""The mock market's books and rules, kept in SQLite (a file with ``--state``, else in memory).

Rules (Curio's Snark Market guide, market-protocol.md "Market rules"), and where the mock had to choose:
* work slots = completed challenge proofs ÷ ``slot_divisor`` (50); a slot holds one active ask or one assigned
  paid proof. An ask while a slot is free becomes an active ask. An ask while none is free is answered with a
  challenge (PoW) assignment — the ask is created and at once matched to a fresh challenge — unless the wallet
  already has ``max_challenges`` challenges outstanding: then 429;
* paid requests (demand the mock makes itself: ``demand_open`` requests kept open at ``demand_price``, or
  added with :meth:`MarketState.add_paid_request`) are matched to active asks whose price is at most the
  request's, cheapest ask first, then oldest; the provider is paid the request's price (a PoRep is 10
  deci-units, so the per-proof price is the price);
* every assignment has a deadline (``deadline_s``, 45 min). A paid assignment past it costs the provider
  ``deadline_penalty`` (50) challenge proofs — the balance may go negative: trust must be re-earned — and the
  request is reassigned to another wallet (never back to the late one); an expired challenge is dropped
  without penalty. A late submit gets 410, like one for work that went to someone else;
* a second submit of work already accepted from the same wallet gets 409 ("already submitted");
* withdrawing an active ask costs ``withdraw_penalty`` (1) challenge proof;
* a valid challenge proof adds one to the balance and answers ``pow: true`` without a voucher; a valid paid
  proof raises the wallet's voucher nonce by one and its cumulative amount by the payment, and the voucher is
  signed with the market's key (:mod:`market.mock.vouchers`).
An invalid proof is refused with 400 and counted; the assignment stays open until its deadline.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from market.mock.vouchers import sign_voucher

__all__ = ["MarketRules", "MarketState", "Refusal", "request_cid"]

ATTO_PER_NANO = 10**9
ATTO_PER_FIL = 10**18
PROVIDER_ID_BASE = 10_000  # the mock's actor ids of provider wallets start here


@dataclass(frozen=True, slots=True)
class MarketRules:
    slot_divisor: int = 50
    deadline_s: float = 45 * 60.0
    deadline_penalty: int = 50
    withdraw_penalty: int = 1
    max_challenges: int = 8  # outstanding challenge assignments per wallet before asks get 429
    initial_challenges: int = 0  # a new wallet's balance
    demand_open: int = 0  # paid requests the mock keeps open (0: only those added explicitly)
    demand_price: int = 5 * 10**15  # attoFIL, the guide's suggested 0.005 FIL


class Refusal(Exception):
    """A request the market refuses by its rules: ``status`` to answer, ``reason`` for the counters."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


def request_cid(data: bytes) -> str:
    """CIDv1 raw (0x55) sha2-256 in base32-lower multibase ('b'), as ``clientctl.go`` names uploads."""
    import base64

    raw = bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(data).digest()
    return "b" + base64.b32encode(raw).decode().lower().rstrip("=")


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fil_string(atto: int) -> str:
    """lotus ``types.FIL.String()``: decimal FIL without trailing zeros, then " FIL"."""
    whole, frac = divmod(atto, ATTO_PER_FIL)
    text = str(whole) if frac == 0 else f"{whole}.{frac:018d}".rstrip("0")
    return f"{text} FIL"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS providers(
    wallet TEXT PRIMARY KEY, actor_id INTEGER NOT NULL UNIQUE, challenges INTEGER NOT NULL,
    voucher_nonce INTEGER NOT NULL, cumulative TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS data(cid TEXT PRIMARY KEY, bytes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
    id INTEGER PRIMARY KEY, cid TEXT NOT NULL, pow INTEGER NOT NULL, price TEXT NOT NULL,
    state TEXT NOT NULL, created_at REAL NOT NULL, for_wallet TEXT);
CREATE TABLE IF NOT EXISTS exclusions(
    job_id INTEGER NOT NULL, wallet TEXT NOT NULL, PRIMARY KEY(job_id, wallet));
CREATE TABLE IF NOT EXISTS asks(
    id INTEGER PRIMARY KEY, wallet TEXT NOT NULL, price TEXT NOT NULL, created_at REAL NOT NULL,
    state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS assignments(
    id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, wallet TEXT NOT NULL, ask_id INTEGER NOT NULL,
    assigned_at REAL NOT NULL, deadline REAL NOT NULL, state TEXT NOT NULL, finished_at REAL);
CREATE INDEX IF NOT EXISTS assignments_by_wallet ON assignments(wallet, state);
CREATE INDEX IF NOT EXISTS assignments_by_state ON assignments(state, deadline);
CREATE INDEX IF NOT EXISTS asks_by_wallet ON asks(wallet, state);
CREATE INDEX IF NOT EXISTS asks_by_state ON asks(state);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs(state, pow);
CREATE INDEX IF NOT EXISTS jobs_by_cid ON jobs(cid);
CREATE TABLE IF NOT EXISTS vouchers(
    wallet TEXT NOT NULL, nonce INTEGER NOT NULL, amount TEXT NOT NULL, cumulative TEXT NOT NULL,
    signature BLOB NOT NULL, request_cid TEXT NOT NULL, PRIMARY KEY(wallet, nonce));
CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class PendingProof:
    """What a submission is checked against (read before the slow proof check, re-checked after)."""

    assignment_id: int
    job_id: int
    pow: bool
    data: bytes


class MarketState:
    """All market state behind one lock; every public method is one transaction."""

    def __init__(
        self,
        path: Path | None,
        rules: MarketRules,
        *,
        challenge_source: Callable[[], bytes] | None = None,
    ) -> None:
        self.rules = rules
        self.path = path
        self.challenge_source = challenge_source
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            str(path) if path else ":memory:", check_same_thread=False, isolation_level=None
        )
        if path:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        key = self._meta("market_key")
        if key is None:
            key = secrets.token_bytes(32).hex()
            self._db.execute("INSERT INTO meta VALUES ('market_key', ?)", (key,))
        self.market_key = bytes.fromhex(key)
        self._counters: dict[str, int] = dict(self._db.execute("SELECT name, value FROM counters").fetchall())
        self._dirty: set[str] = set()

    def close(self) -> None:
        with self._lock:
            try:
                with self._tx():
                    pass  # writes the counters
            except sqlite3.ProgrammingError:
                return  # closed already
            self._db.close()

    # -- helpers -----------------------------------------------------------------------------------------

    def _meta(self, k: str) -> str | None:
        row = self._db.execute("SELECT v FROM meta WHERE k = ?", (k,)).fetchone()
        return None if row is None else str(row[0])

    def _one(self, sql: str, *args: Any) -> Any:
        row = self._db.execute(sql, args).fetchone()
        return None if row is None else row[0]

    def count(self, name: str, n: int = 1) -> None:
        """Counters live in memory and are written with the next transaction (and at close)."""
        with self._lock:
            self._counters[name] = self._counters.get(name, 0) + n
            self._dirty.add(name)

    def _flush_counters(self) -> None:
        if self._dirty:
            self._db.executemany(
                "INSERT INTO counters VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                [(k, self._counters[k]) for k in self._dirty],
            )
            self._dirty.clear()

    def _provider(self, wallet: str) -> tuple[int, int, int, int]:
        row = self._db.execute(
            "SELECT actor_id, challenges, voucher_nonce, cumulative FROM providers WHERE wallet = ?",
            (wallet,),
        ).fetchone()
        if row is None:
            actor = PROVIDER_ID_BASE + int(self._one("SELECT COUNT(*) FROM providers"))
            self._db.execute(
                "INSERT INTO providers VALUES (?, ?, ?, 0, '0')",
                (wallet, actor, self.rules.initial_challenges),
            )
            return actor, self.rules.initial_challenges, 0, 0
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])

    def _store_data(self, data: bytes) -> str:
        cid = request_cid(data)
        self._db.execute("INSERT OR IGNORE INTO data VALUES (?, ?)", (cid, data))
        return cid

    def _ask_json(self, row: tuple[Any, ...]) -> dict[str, Any]:
        ask_id, price, created = int(row[0]), int(row[1]), float(row[2])
        return {
            "id": ask_id,
            "min_price_nfil": price // ATTO_PER_NANO,
            "created_at": rfc3339(created),
            "min_price_fil": fil_string(price),
        }

    def _tx(self) -> Any:
        return _Transaction(self._db, self._lock, self._flush_counters)

    # -- the rules ---------------------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Expire overdue assignments (penalty, reassignment), keep demand open, match asks."""
        with self._tx():
            self._expire(now)
            self._refill_demand(now)
            self._match(now)

    def _expire(self, now: float) -> None:
        overdue = self._db.execute(
            "SELECT a.id, a.job_id, a.wallet, j.pow FROM assignments a JOIN jobs j ON j.id = a.job_id "
            "WHERE a.state = 'active' AND a.deadline < ?",
            (now,),
        ).fetchall()
        for aid, job_id, wallet, pow_ in overdue:
            self._db.execute(
                "UPDATE assignments SET state = 'expired', finished_at = ? WHERE id = ?", (now, aid)
            )
            if pow_:
                self._db.execute("UPDATE jobs SET state = 'expired' WHERE id = ?", (job_id,))
                self.count("challenges_expired")
                continue
            self._provider(wallet)
            self._db.execute(
                "UPDATE providers SET challenges = challenges - ? WHERE wallet = ?",
                (self.rules.deadline_penalty, wallet),
            )
            self._db.execute("INSERT OR IGNORE INTO exclusions VALUES (?, ?)", (job_id, wallet))
            self._db.execute("UPDATE jobs SET state = 'open' WHERE id = ?", (job_id,))
            self.count("penalties")
            self.count("reassigned")

    def _refill_demand(self, now: float) -> None:
        if self.rules.demand_open <= 0 or self.challenge_source is None:
            return
        open_jobs = int(self._one("SELECT COUNT(*) FROM jobs WHERE pow = 0 AND state = 'open'"))
        for _ in range(self.rules.demand_open - open_jobs):
            self._add_paid(self.challenge_source(), self.rules.demand_price, now)

    def _add_paid(self, data: bytes, price: int, now: float) -> str:
        cid = self._store_data(data)
        self._db.execute(
            "INSERT INTO jobs(cid, pow, price, state, created_at) VALUES (?, 0, ?, 'open', ?)",
            (cid, str(price), now),
        )
        self.count("paid_requests")
        return cid

    def _match(self, now: float) -> None:
        jobs = self._db.execute(
            "SELECT id, price FROM jobs WHERE pow = 0 AND state = 'open' ORDER BY created_at, id"
        ).fetchall()
        for job_id, price in jobs:
            asks = self._db.execute(
                "SELECT id, wallet, price FROM asks WHERE state = 'active' AND wallet NOT IN "
                "(SELECT wallet FROM exclusions WHERE job_id = ?)",
                (job_id,),
            ).fetchall()
            fitting = [(int(p), aid, w) for aid, w, p in asks if int(p) <= int(price)]
            if not fitting:
                continue
            _, ask_id, wallet = min(fitting)
            self._db.execute("UPDATE asks SET state = 'matched' WHERE id = ?", (ask_id,))
            self._db.execute("UPDATE jobs SET state = 'assigned' WHERE id = ?", (job_id,))
            self._assign(job_id, wallet, ask_id, now)

    def _assign(self, job_id: int, wallet: str, ask_id: int, now: float) -> None:
        self._db.execute(
            "INSERT INTO assignments(job_id, wallet, ask_id, assigned_at, deadline, state) "
            "VALUES (?, ?, ?, ?, ?, 'active')",
            (job_id, wallet, ask_id, now, now + self.rules.deadline_s),
        )
        self.count("assigned")

    # -- provider calls ----------------------------------------------------------------------------------

    def add_paid_request(self, data: bytes, price: int, now: float) -> str:
        """A client's paid request (its request data and the price it pays); returns the request CID."""
        with self._tx():
            cid = self._add_paid(data, price, now)
            self._match(now)
            return cid

    def create_ask(self, wallet: str, price: int, now: float) -> dict[str, Any]:
        with self._tx():
            self._expire(now)
            _, balance, _, _ = self._provider(wallet)
            slots = max(balance, 0) // self.rules.slot_divisor
            used = int(
                self._one("SELECT COUNT(*) FROM asks WHERE wallet = ? AND state = 'active'", wallet)
            ) + int(
                self._one(
                    "SELECT COUNT(*) FROM assignments a JOIN jobs j ON j.id = a.job_id "
                    "WHERE a.wallet = ? AND a.state = 'active' AND j.pow = 0",
                    wallet,
                )
            )
            if used < slots:
                cur = self._db.execute(
                    "INSERT INTO asks(wallet, price, created_at, state) VALUES (?, ?, ?, 'active')",
                    (wallet, str(price), now),
                )
                self.count("asks_active")
                ask = self._ask_json((cur.lastrowid, price, now))
                self._refill_demand(now)
                self._match(now)
                return ask
            outstanding = int(
                self._one(
                    "SELECT COUNT(*) FROM assignments a JOIN jobs j ON j.id = a.job_id "
                    "WHERE a.wallet = ? AND a.state = 'active' AND j.pow = 1",
                    wallet,
                )
            )
            if self.challenge_source is None or outstanding >= self.rules.max_challenges:
                raise Refusal(
                    429,
                    "no_slot",
                    f"no free work slot ({used} of {slots} used, balance {balance}) and "
                    f"{outstanding} challenges outstanding",
                )
            cur = self._db.execute(
                "INSERT INTO asks(wallet, price, created_at, state) VALUES (?, ?, ?, 'challenge')",
                (wallet, str(price), now),
            )
            ask_id = int(cur.lastrowid or 0)
            cid = self._store_data(self.challenge_source())
            job = self._db.execute(
                "INSERT INTO jobs(cid, pow, price, state, created_at, for_wallet) "
                "VALUES (?, 1, '0', 'assigned', ?, ?)",
                (cid, now, wallet),
            )
            self._assign(int(job.lastrowid or 0), wallet, ask_id, now)
            self.count("asks_challenge")
            return self._ask_json((ask_id, price, now))

    def poll(self, wallet: str, now: float) -> dict[str, Any]:
        with self._tx():
            self._expire(now)
            self._refill_demand(now)
            self._match(now)
            rows = self._db.execute(
                "SELECT a.id, j.cid, a.ask_id FROM assignments a JOIN jobs j ON j.id = a.job_id "
                "WHERE a.wallet = ? AND a.state = 'active' ORDER BY a.id",
                (wallet,),
            ).fetchall()
            asks = self._db.execute(
                "SELECT id, price, created_at FROM asks WHERE wallet = ? AND state = 'active' ORDER BY id",
                (wallet,),
            ).fetchall()
        return {
            # Go marshals a nil slice as null: an empty answer comes as null, as from a Go server
            "requests": [
                {"id": aid, "request_cid": cid, "done": False, "work_ask_id": ask} for aid, cid, ask in rows
            ]
            or None,
            "active_asks": [self._ask_json(a) for a in asks] or None,
        }

    def request_data(self, cid: str) -> bytes | None:
        with self._lock:
            row = self._db.execute("SELECT bytes FROM data WHERE cid = ?", (cid,)).fetchone()
        return None if row is None else bytes(row[0])

    def begin_complete(self, wallet: str, cid: str, now: float) -> PendingProof:
        """The open assignment this submission answers, or the refusal: 404 unknown, 409 already accepted,
        410 reassigned / past its deadline."""
        with self._tx():
            self._expire(now)
            rows = self._db.execute(
                "SELECT a.id, a.job_id, a.state, j.pow FROM assignments a JOIN jobs j ON j.id = a.job_id "
                "WHERE a.wallet = ? AND j.cid = ? ORDER BY a.id DESC",
                (wallet, cid),
            ).fetchall()
            if not rows:
                raise Refusal(404, "unknown_request", f"no work {cid} was assigned to {wallet}")
            for aid, job_id, state, pow_ in rows:
                if state == "done":
                    raise Refusal(409, "duplicate", f"proof for {cid} already submitted")
                if state == "active":
                    data = self._one("SELECT bytes FROM data WHERE cid = ?", cid)
                    return PendingProof(int(aid), int(job_id), bool(pow_), bytes(data))
            raise Refusal(410, "gone", f"work {cid} is no longer assigned to {wallet} (deadline passed)")

    def finish_complete(self, wallet: str, pending: PendingProof, valid: bool, now: float) -> dict[str, Any]:
        """Record a checked submission; returns the ProofReward JSON (or raises the refusal)."""
        with self._tx():
            self._expire(now)
            state = self._one("SELECT state FROM assignments WHERE id = ?", pending.assignment_id)
            if state == "done":
                raise Refusal(409, "duplicate", "proof already submitted")
            if state != "active":
                raise Refusal(410, "gone", "work is no longer assigned (deadline passed)")
            if not valid:
                raise Refusal(400, "invalid_proof", "proof does not verify")
            self._db.execute(
                "UPDATE assignments SET state = 'done', finished_at = ? WHERE id = ?",
                (now, pending.assignment_id),
            )
            self._db.execute("UPDATE jobs SET state = 'done' WHERE id = ?", (pending.job_id,))
            actor, _, nonce, cumulative = self._provider(wallet)
            cid = request_cid(pending.data)
            if pending.pow:
                self._db.execute(
                    "UPDATE providers SET challenges = challenges + 1 WHERE wallet = ?", (wallet,)
                )
                self.count("completed_challenges")
                return {
                    "status": "accepted",
                    "pow": True,
                    "nonce": nonce,
                    "amount": "0",
                    "cumulative_amount": str(cumulative),
                    "signature": None,
                }
            amount = int(self._one("SELECT price FROM jobs WHERE id = ?", pending.job_id))
            nonce += 1
            cumulative += amount
            sig = sign_voucher(self.market_key, actor, cumulative, nonce)
            self._db.execute(
                "UPDATE providers SET voucher_nonce = ?, cumulative = ? WHERE wallet = ?",
                (nonce, str(cumulative), wallet),
            )
            self._db.execute(
                "INSERT INTO vouchers VALUES (?, ?, ?, ?, ?, ?)",
                (wallet, nonce, str(amount), str(cumulative), sig, cid),
            )
            self.count("completed_paid")
            self.count("vouchers")
            import base64

            return {
                "status": "accepted",
                "pow": False,
                "nonce": nonce,
                "amount": str(amount),
                "cumulative_amount": str(cumulative),
                "signature": base64.b64encode(sig).decode(),
            }

    def withdraw(self, wallet: str, ask_id: int, now: float) -> None:
        with self._tx():
            row = self._db.execute("SELECT wallet, state FROM asks WHERE id = ?", (ask_id,)).fetchone()
            if row is None or row[0] != wallet:
                raise Refusal(404, "unknown_ask", f"no ask {ask_id} of {wallet}")
            if row[1] != "active":
                raise Refusal(409, "ask_not_active", f"ask {ask_id} is {row[1]}, not active")
            self._provider(wallet)
            self._db.execute("UPDATE asks SET state = 'withdrawn' WHERE id = ?", (ask_id,))
            self._db.execute(
                "UPDATE providers SET challenges = challenges - ? WHERE wallet = ?",
                (self.rules.withdraw_penalty, wallet),
            )
            self.count("withdrawals")

    # -- inspection --------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            counters = dict(sorted(self._counters.items()))
            providers = {
                w: {
                    "actor_id": a,
                    "challenges": c,
                    "slots": max(c, 0) // self.rules.slot_divisor,
                    "voucher_nonce": n,
                    "cumulative_amount": cum,
                }
                for w, a, c, n, cum in self._db.execute("SELECT * FROM providers ORDER BY wallet").fetchall()
            }
            jobs = dict(self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
            asks = dict(self._db.execute("SELECT state, COUNT(*) FROM asks GROUP BY state").fetchall())
        return {"counters": counters, "providers": providers, "jobs": jobs, "asks": asks}

    def vouchers(self, wallet: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT nonce, amount, cumulative, signature, request_cid FROM vouchers WHERE wallet = ? "
                "ORDER BY nonce",
                (wallet,),
            ).fetchall()
        return [
            {
                "nonce": n,
                "amount": int(a),
                "cumulative": int(c),
                "signature": bytes(s).hex(),
                "request_cid": r,
            }
            for n, a, c, s, r in rows
        ]

    def provider_id(self, wallet: str) -> int:
        with self._tx():
            return self._provider(wallet)[0]


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error) under the state's lock."""

    def __init__(
        self, db: sqlite3.Connection, lock: threading.RLock, before_commit: Callable[[], None]
    ) -> None:
        self._db = db
        self._lock = lock
        self._before_commit = before_commit
        self._outer = False

    def __enter__(self) -> _Transaction:
        self._lock.acquire()
        self._outer = not self._db.in_transaction
        if self._outer:
            self._db.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._outer:
                # A refusal is an answer, not a failure: what led to it (an expiry, a penalty) stays recorded.
                if exc_type is None or issubclass(exc_type, Refusal):
                    self._before_commit()
                    self._db.execute("COMMIT")
                else:
                    self._db.execute("ROLLBACK")
        finally:
            self._lock.release()
