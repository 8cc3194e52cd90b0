"""A mock ProofShare market that plays by the real market's rules, for dry runs and end-to-end tests.

Written from docs/market-protocol.md and Curio's sources, not from our client (``market.client`` /
``market.signing`` appear only in the tests, as the client under test): a bug shared by both sides would
otherwise pass every test.

    auth       signature decoding (cbor-gen rules), verification, replay cache, f1 addresses
    state      the books (SQLite) and rules: slots, challenges, matching, deadlines, penalties, vouchers
    vouchers   provider payment vouchers signed with the market's key (the router contract's byte layout)
    pool       sealed challenge sectors; each challenge is a fresh C1 (random seed) cut from one
    checker    ProofChecker: Groth16 pairing verification, or an explicit stand-in for tests
    faults     per-endpoint fault injection (status, latency, dropped connections, bad data, skew)
    app        the Starlette app (provider endpoints under /v0/proofs, /_mock/ inspection and control)
    server     uvicorn on a loopback socket: MockMarket (background thread) and the CLI's foreground server
"""

from market.mock.checker import (
    CheckResult,
    DigestStandInChecker,
    PairingChecker,
    ProofChecker,
    stand_in_proof,
)
from market.mock.faults import FaultPlan, FaultSpecError
from market.mock.server import MockMarket
from market.mock.state import MarketRules

__all__ = [
    "CheckResult",
    "DigestStandInChecker",
    "FaultPlan",
    "FaultSpecError",
    "MarketRules",
    "MockMarket",
    "PairingChecker",
    "ProofChecker",
    "stand_in_proof",
]
