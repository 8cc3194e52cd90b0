"""Test oracles for the C1 codec, written independently of porep.c1.layout.

* ``reference_json`` turns models into plain dicts with the key orders transcribed from the Rust structs
  (porep.md §1.2–1.6) and Curio's ``Commit1OutRaw`` (lib/proof/porep_vproof_types.go), then lets the stdlib
  ``json`` module write them compactly (porep.md §1.1: that reproduces serde_json's bytes).
* ``random_2kib_c1`` builds a StackedDrg2KiBV1_1 C1 through the validating pydantic constructors.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from porep.c1 import (
    Column,
    ColumnProof,
    EncodingProof,
    LabelingProof,
    PathElement,
    Proof,
    ReplicaColumnProof,
    SealCommitPhase1Output,
    SingleProof,
    SubProof,
    TopProof,
)

RUST_TOP = ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
GO_TOP = ["comm_d", "comm_r", "registered_proof", "replica_id", "seed", "ticket", "vanilla_proofs"]


def _dom(b: bytes) -> list[int]:
    assert len(b) == 32
    return list(b)


def _path(elements: Any) -> dict[str, Any]:
    return {"path": [{"hashes": [_dom(h) for h in e.hashes], "index": e.index} for e in elements]}


def _merkle(m: Any) -> dict[str, Any]:
    if isinstance(m, SingleProof):
        return {"data": {"Single": {"root": _dom(m.root), "leaf": _dom(m.leaf), "path": _path(m.path)}}}
    if isinstance(m, SubProof):
        body = {"base_proof": _path(m.base_proof), "sub_proof": _path(m.sub_proof)}
        return {"data": {"Sub": {**body, "root": _dom(m.root), "leaf": _dom(m.leaf)}}}
    assert isinstance(m, TopProof)
    body = {
        "base_proof": _path(m.base_proof),
        "sub_proof": _path(m.sub_proof),
        "top_proof": _path(m.top_proof),
    }
    return {"data": {"Top": {**body, "root": _dom(m.root), "leaf": _dom(m.leaf)}}}


def _column_proof(cp: ColumnProof) -> dict[str, Any]:
    column = {"index": cp.column.index, "rows": [_dom(r) for r in cp.column.rows], "_h": None}
    return {"column": column, "inclusion_proof": _merkle(cp.inclusion_proof)}


def _parents(p: Any) -> dict[str, Any]:
    return {"parents": [_dom(x) for x in p.parents], "layer_index": p.layer_index, "node": p.node}


def _proof(p: Proof) -> dict[str, Any]:
    rcp = p.replica_column_proofs
    return {
        "comm_d_proofs": _merkle(p.comm_d_proofs),
        "comm_r_last_proof": _merkle(p.comm_r_last_proof),
        "replica_column_proofs": {
            "c_x": _column_proof(rcp.c_x),
            "drg_parents": [_column_proof(c) for c in rcp.drg_parents],
            "exp_parents": [_column_proof(c) for c in rcp.exp_parents],
        },
        "labeling_proofs": [_parents(lp) for lp in p.labeling_proofs],
        "encoding_proof": _parents(p.encoding_proof),
    }


def reference_dict(c1: SealCommitPhase1Output, go: bool = False) -> dict[str, Any]:
    name = c1.registered_proof.name
    size = re.fullmatch(r"StackedDrg(\d+[KMG]iB)V.*", name)
    assert size
    values = {
        "registered_proof": name,
        "vanilla_proofs": {
            f"StackedDrg{size.group(1)}V1": [[_proof(p) for p in part] for part in c1.vanilla_proofs]
        },
        "comm_r": _dom(c1.comm_r),
        "comm_d": _dom(c1.comm_d),
        "replica_id": _dom(c1.replica_id),
        "seed": _dom(c1.seed),
        "ticket": _dom(c1.ticket),
    }
    return {k: values[k] for k in (GO_TOP if go else RUST_TOP)}


def reference_json(c1: SealCommitPhase1Output, go: bool = False) -> bytes:
    return json.dumps(reference_dict(c1, go), separators=(",", ":")).encode()


def json_roundtrip(raw: bytes) -> bytes:
    """What the stdlib writes back for a document it read (keys keep their input order)."""
    return json.dumps(json.loads(raw), separators=(",", ":")).encode()


# ----------------------------------------------------------------------------------------------- builder


def _rand_dom(rng: random.Random) -> bytes:
    b = bytearray(rng.randbytes(32))
    b[31] &= 0x3F
    return bytes(b)


def _single(rng: random.Random, arity: int, levels: int) -> SingleProof:
    path = tuple(
        PathElement(hashes=tuple(_rand_dom(rng) for _ in range(arity - 1)), index=rng.randrange(arity))
        for _ in range(levels)
    )
    return SingleProof(root=_rand_dom(rng), leaf=_rand_dom(rng), path=path)


def random_2kib_c1(seed: int) -> SealCommitPhase1Output:
    """A StackedDrg2KiBV1_1 C1 (1 partition × 2 challenges, 2 layers, tree 8-0-0) with random values."""
    rng = random.Random(seed)
    layers = 2

    def column_proof(node: int) -> ColumnProof:
        column = Column(index=node, rows=tuple(_rand_dom(rng) for _ in range(layers)))
        return ColumnProof(column=column, inclusion_proof=_single(rng, 8, 2))

    def proof() -> Proof:
        node = rng.randrange(64)
        return Proof(
            comm_d_proofs=_single(rng, 2, 6),
            comm_r_last_proof=_single(rng, 8, 2),
            replica_column_proofs=ReplicaColumnProof(
                c_x=column_proof(node),
                drg_parents=tuple(column_proof(rng.randrange(64)) for _ in range(6)),
                exp_parents=tuple(column_proof(rng.randrange(64)) for _ in range(8)),
            ),
            labeling_proofs=tuple(
                LabelingProof(parents=tuple(_rand_dom(rng) for _ in range(37)), layer_index=layer, node=node)
                for layer in range(1, layers + 1)
            ),
            encoding_proof=EncodingProof(
                parents=tuple(_rand_dom(rng) for _ in range(37)), layer_index=layers, node=node
            ),
        )

    return SealCommitPhase1Output(
        registered_proof="StackedDrg2KiBV1_1",
        vanilla_proofs=((proof(), proof()),),
        comm_r=_rand_dom(rng),
        comm_d=_rand_dom(rng),
        replica_id=_rand_dom(rng),
        seed=_rand_dom(rng),
        ticket=_rand_dom(rng),
    )
