"""Shared values of the PoSt tests (a module of its own: test modules must not import ``conftest``, whose name
other test directories share)."""

from __future__ import annotations

from dataclasses import dataclass

RANDOMNESS = bytes(range(31)) + bytes([31 & 0x3F])  # a canonical Fr, as Curio masks the chain's


@dataclass(frozen=True)
class Golden:
    """Curio's golden 32GiB vanilla proof (post.vproof) and its public data (postpub.json)."""

    vproof: bytes
    randomness: bytes
    proof_type: int
    sector: int
    comm_r: bytes
    prover: int
