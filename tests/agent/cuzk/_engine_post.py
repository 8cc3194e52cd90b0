"""Curio-shaped PoSt requests from real vanilla proofs of the fixtures' sealed 2KiB sectors, shared by the
engine's PoSt tests (CI and long)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.cuzk import proving_pb2 as pb
from porep.post.vanilla import SealedReplica

RANDOMNESS = bytes(range(100, 131)) + bytes([131 & 0x3F])


def replicas(fixtures_dir: Path) -> tuple[SealedReplica, list[SealedReplica]]:
    d = fixtures_dir / "rust-fil-proofs" / "winning_post"
    s255 = SealedReplica(255, (d / ".tmp9BsHuZ").read_bytes(), (d / ".tmp0dbYDb" / "p_aux").read_bytes()[:32])
    v = fixtures_dir / "venus-genesis-sectors"
    venus = [SealedReplica(i, (v / "sealed" / f"s-t0106-{i}").read_bytes(),
                           (v / "cache" / f"s-t0106-{i}" / "p_aux").read_bytes()[:32]) for i in (0, 1)]
    return s255, venus


def winning_message(
    vanilla: list[bytes], rid: str = "winpost-1000-64656667", **over: Any
) -> pb.SubmitProofRequest:
    """As Curio's WinningPoStCuzk builds it (CRITICAL, the sector size, the miner, the randomness)."""
    fields: dict[str, Any] = {
        "request_id": rid, "proof_kind": pb.WINNING_POST, "sector_size": 2048, "registered_proof": 0,
        "priority": pb.CRITICAL, "vanilla_proofs": vanilla, "miner_id": 1000, "randomness": RANDOMNESS,
    }
    fields.update(over)
    return pb.SubmitProofRequest(**fields)


def window_message(
    vanilla: list[bytes], partition: int, registered: int = 10, **over: Any
) -> pb.SubmitProofRequest:
    """As Curio's WindowPoStCuzk builds it (HIGH, one partition per request)."""
    fields: dict[str, Any] = {
        "request_id": f"wdpost-106-{partition}-[100 101]", "proof_kind": pb.WINDOW_POST_PARTITION,
        "sector_size": 2048, "registered_proof": registered, "priority": pb.HIGH, "vanilla_proofs": vanilla,
        "miner_id": 106, "randomness": RANDOMNESS, "partition_index": partition,
    }
    fields.update(over)
    return pb.SubmitProofRequest(**fields)
