"""Hostile request data for the adversarial scenario, each cut from a genuine 2KiB challenge (``template``).

Every payload is served under its own CID (so it passes the hash check and reaches the parser and the strict
C1 check) and must end as a failed request with a recorded reason, without hurting the agent. A C1 holds no
curve points (commitments and Merkle nodes are field elements, the rest is bytes and integers), so "invalid
points" has no C1 form; its nearest relative here is a Merkle path node that does not hash to the root.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["PAYLOADS", "R"]

# The BLS12-381 scalar field modulus: a 32-byte little-endian commitment at or above it is not canonical.
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001


def _edit(template: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    doc = json.loads(template)
    change(doc)
    return json.dumps(doc, separators=(",", ":")).encode()


def deep_nesting(template: bytes) -> bytes:
    depth = 200_000
    return b'{"SectorID":{"Miner":1000,"Number":1},"PoRep":' + b"[" * depth + b"]" * depth + b',"Snap":null}'


def huge_array(template: bytes) -> bytes:
    """vanilla_proofs of 10^7 elements (20 MB of JSON, under the 32 MiB cap the scenarios configure)."""
    head, _, _ = template.partition(b'"vanilla_proofs":')
    return head + b'"vanilla_proofs":{"StackedDrg2KiBV1":[' + b"0," * (10**7 - 1) + b'0]}},"Snap":null}'


def oversized(template: bytes) -> bytes:
    """40 MB: over the 32 MiB request cap (market.max_request_bytes), refused while streaming."""
    return template[:-1] + b',"Padding":"' + b"A" * (40 * 1024 * 1024) + b'"}'


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return change


def _first_proof(doc: dict[str, Any]) -> dict[str, Any]:
    proofs: dict[str, Any] = doc["PoRep"]["vanilla_proofs"]
    first: dict[str, Any] = next(iter(proofs.values()))[0][0]
    return first


def _flip_path_node(doc: dict[str, Any]) -> None:
    hashes = _first_proof(doc)["comm_d_proofs"]["data"]["Single"]["path"]["path"][0]["hashes"][0]
    hashes[0] ^= 0x01


PAYLOADS: dict[str, Callable[[bytes], bytes]] = {
    "deep nesting (200k levels)": deep_nesting,
    "10^7-element array": huge_array,
    "over the size cap (40 MB)": oversized,
    "not JSON": lambda t: b"\x00\xff" * 512,
    "comm_r 31 bytes": lambda t: _edit(t, _set(["PoRep", "comm_r"], [1] * 31)),
    "seed 33 bytes": lambda t: _edit(t, _set(["PoRep", "seed"], [1] * 33)),
    "comm_r = r (non-canonical)": lambda t: _edit(
        t, _set(["PoRep", "comm_r"], list(R.to_bytes(32, "little")))
    ),
    "comm_d all 0xff": lambda t: _edit(t, _set(["PoRep", "comm_d"], [255] * 32)),
    "byte value 256": lambda t: _edit(t, _set(["PoRep", "ticket"], [256] * 32)),
    "Merkle node altered": lambda t: _edit(t, _flip_path_node),
    "proof type 32GiB on 2KiB data": lambda t: _edit(
        t, _set(["PoRep", "registered_proof"], "StackedDrg32GiBV1_1")
    ),
    "unknown proof type": lambda t: _edit(t, _set(["PoRep", "registered_proof"], "StackedDrg2KiBV9")),
    "SnapDeals instead of PoRep": lambda t: _edit(
        t,
        lambda d: d.update(
            PoRep=None,
            Snap={"ProofType": 7, "old_r": [0] * 32, "new_r": [0] * 32, "new_d": [0] * 32, "Proofs": []},
        ),
    ),
    "SectorID mismatched (sector 2)": lambda t: _edit(t, _set(["SectorID", "Number"], 2)),
    "miner id 2^64": lambda t: _edit(t, _set(["SectorID", "Miner"], 2**64)),
    "SectorID missing": lambda t: _edit(t, lambda d: d.pop("SectorID")),
}
