"""Sealing a test sector (PC1 + PC2) and the sector directory that C1 generation reads.

Order as in rust-fil-proofs ``seal_pre_commit_phase1/2`` (docs porep.md §4): fr32-padded data → tree D →
comm_d → replica_id → SDR labels (all layers) → key = last layer → replica = key + data (mod r) → tree C
over the Poseidon column hashes of the labels → comm_c; tree R_last over the replica → comm_r_last;
comm_r = Poseidon2(comm_c, comm_r_last). Only single-tree shapes (8-0-0: 2KiB, 8MiB, 512MiB) are sealed.

Sector directory (``psagent seal --out DIR``):

* ``sealed`` — the replica (N × 32 bytes, what Filecoin calls the sealed file);
* ``p_aux`` — comm_c ‖ comm_r_last (64 bytes, Rust's bincode ``PersistentAux``);
* ``summary.json`` — ids and commitments (lowercase hex), CIDs, sizes;
* ``sc-02-data-layer-<l>.dat`` — the labels of layer l (N × 32);
* ``sc-02-data-tree-{d,c,r-last}.dat`` — every level of each tree, leaves first. Unlike Rust's files these
  keep all rows (tree D's leaves are the padded data, tree R_last's the replica), so a C1 can be made
  from the directory alone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpu.arith.fields import fr_add_batch, fr_sub_batch
from porep.commcid import comm_d_to_cid, comm_r_to_cid
from porep.fr32 import pad_to_sector
from porep.hashes.merkle import MerkleTree, build_poseidon_tree_mont, build_tree_d
from porep.hashes.poseidon import hash2
from porep.hashes.poseidon_batch import domains_to_mont, hash_mont
from porep.ids import replica_id as make_replica_id
from porep.prooftypes import ProofType, proof_type
from porep.sdr.graph import StackedGraph, graph
from porep.sdr.labels import label_layers

NODE = 32
Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): "graph", "tree_d", "labels L<l>", "encode", "columns", "tree_c", "tree_r"."""

SUMMARY = "summary.json"
SEALED = "sealed"
P_AUX = "p_aux"


def _layer_file(layer: int) -> str:
    return f"sc-02-data-layer-{layer}.dat"


TREE_FILES = {"d": "sc-02-data-tree-d.dat", "c": "sc-02-data-tree-c.dat", "r": "sc-02-data-tree-r-last.dat"}


@dataclass(frozen=True)
class SectorInfo:
    """What identifies a sealed sector and its commitments (``summary.json``)."""

    registered_proof: str
    prover_id: bytes
    sector: int
    ticket: bytes
    porep_id: bytes
    replica_id: bytes
    comm_d: bytes
    comm_c: bytes
    comm_r_last: bytes
    comm_r: bytes
    miner: int | None = None  # the actor id, when prover_id was derived from one

    @property
    def proof_type(self) -> ProofType:
        return proof_type(self.registered_proof)

    def to_json(self) -> dict[str, Any]:
        pt = self.proof_type
        return {
            "registered_proof": self.registered_proof,
            "sector_size": pt.sector_size,
            "nodes": pt.nodes,
            "layers": pt.layers,
            "api_version": pt.api_version,
            "miner": self.miner,
            "prover_id": self.prover_id.hex(),
            "sector": self.sector,
            "ticket": self.ticket.hex(),
            "porep_id": self.porep_id.hex(),
            "replica_id": self.replica_id.hex(),
            "comm_d": self.comm_d.hex(),
            "comm_r": self.comm_r.hex(),
            "comm_c": self.comm_c.hex(),
            "comm_r_last": self.comm_r_last.hex(),
            "comm_d_cid": comm_d_to_cid(self.comm_d),
            "comm_r_cid": comm_r_to_cid(self.comm_r),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SectorInfo:
        b = bytes.fromhex
        return cls(
            registered_proof=obj["registered_proof"],
            prover_id=b(obj["prover_id"]),
            sector=int(obj["sector"]),
            ticket=b(obj["ticket"]),
            porep_id=b(obj["porep_id"]),
            replica_id=b(obj["replica_id"]),
            comm_d=b(obj["comm_d"]),
            comm_c=b(obj["comm_c"]),
            comm_r_last=b(obj["comm_r_last"]),
            comm_r=b(obj["comm_r"]),
            miner=obj.get("miner"),
        )


@dataclass
class SealedSector:
    """A sealed sector with everything needed to make C1s: labels and all three trees."""

    info: SectorInfo
    labels: np.ndarray  # uint8[layers, N, 32]
    tree_d: MerkleTree
    tree_c: MerkleTree
    tree_r_last: MerkleTree
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def proof_type(self) -> ProofType:
        return self.info.proof_type

    @property
    def graph(self) -> StackedGraph:
        pt = self.proof_type
        return graph(pt.nodes, self.info.porep_id, pt.uses_legacy_graph)

    @property
    def replica(self) -> bytes:
        return self.tree_r_last.leaves.tobytes()

    @property
    def p_aux(self) -> bytes:
        return self.info.comm_c + self.info.comm_r_last

    def save(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / SEALED).write_bytes(self.replica)
        (out / P_AUX).write_bytes(self.p_aux)
        for layer in range(self.labels.shape[0]):
            self.labels[layer].tofile(out / _layer_file(layer + 1))
        self.tree_d.save(out / TREE_FILES["d"])
        self.tree_c.save(out / TREE_FILES["c"])
        self.tree_r_last.save(out / TREE_FILES["r"])
        (out / SUMMARY).write_text(json.dumps(self.info.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> SealedSector:
        """Read a sector directory back (labels and trees memory-mapped read-only where possible)."""
        info = SectorInfo.from_json(json.loads((directory / SUMMARY).read_text()))
        pt = info.proof_type
        n = pt.nodes
        labels = np.empty((pt.layers, n, NODE), dtype=np.uint8)
        for layer in range(pt.layers):
            raw = np.fromfile(directory / _layer_file(layer + 1), dtype=np.uint8)
            if raw.size != n * NODE:
                raise ValueError(f"{_layer_file(layer + 1)}: {raw.size} bytes, expected {n * NODE}")
            labels[layer] = raw.reshape(n, NODE)
        tree_d = MerkleTree.load(directory / TREE_FILES["d"], "sha254", 2, n)
        tree_c = MerkleTree.load(directory / TREE_FILES["c"], "poseidon", pt.tree.base, n)
        tree_r = MerkleTree.load(directory / TREE_FILES["r"], "poseidon", pt.tree.base, n)
        sealed = cls(info, labels, tree_d, tree_c, tree_r)
        if (directory / SEALED).read_bytes() != sealed.replica:
            raise ValueError(f"{directory / SEALED} differs from the tree R_last leaves")
        if (directory / P_AUX).read_bytes() != sealed.p_aux:
            raise ValueError(f"{directory / P_AUX} differs from summary.json")
        for name, tree, want in (
            ("tree D", tree_d, info.comm_d),
            ("tree C", tree_c, info.comm_c),
            ("tree R_last", tree_r, info.comm_r_last),
        ):
            if tree.root != want:
                raise ValueError(f"{name} root differs from summary.json")
        return sealed


def column_hashes_mont(labels: np.ndarray, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """Poseidon_L(label_1(v), …, label_L(v)) for every node v, Montgomery ``uint32[N, 8]``."""
    layers, n = labels.shape[0], labels.shape[1]
    if layers not in (2, 11):
        raise ValueError(f"column hashes exist for 2 or 11 layers, not {layers}")
    out = np.empty((n, 8), dtype=np.uint32)
    step = 1 << 15
    for lo in range(0, n, step):
        cols = np.ascontiguousarray(labels[:, lo : lo + step].transpose(1, 0, 2))  # [step, L, 32]
        hash_mont(domains_to_mont(cols), out=out[lo : lo + step])
        if progress is not None:
            progress(min(lo + step, n), n)
    return out


def encode(key: np.ndarray, data: np.ndarray) -> np.ndarray:
    """replica = key + data mod r, node-wise on ``uint8[N, 32]`` LE values (both < r)."""
    k = np.ascontiguousarray(key).view("<u4").astype(np.uint32, copy=False).reshape(-1, 8)
    d = np.ascontiguousarray(data).view("<u4").astype(np.uint32, copy=False).reshape(-1, 8)
    return fr_add_batch(k, d).astype("<u4").view(np.uint8).reshape(-1, NODE)


def decode(key: np.ndarray, replica: np.ndarray) -> np.ndarray:
    """data = replica − key mod r (unsealing)."""
    k = np.ascontiguousarray(key).view("<u4").astype(np.uint32, copy=False).reshape(-1, 8)
    r = np.ascontiguousarray(replica).view("<u4").astype(np.uint32, copy=False).reshape(-1, 8)
    return fr_sub_batch(r, k).astype("<u4").view(np.uint8).reshape(-1, NODE)


def seal(
    registered_proof: ProofType | str | int,
    prover_id: bytes,
    sector: int,
    ticket: bytes,
    padded: bytes | None = None,
    *,
    piece: bytes | None = None,
    porep_id: bytes | None = None,
    miner: int | None = None,
    progress: Progress | None = None,
    parent_cache_dir: Path | None = None,
) -> SealedSector:
    """Seal one sector from its fr32-padded image ``padded`` (or an unpadded ``piece``, zero-extended).

    ``porep_id`` overrides the proof type's (published test sectors use arbitrary ids).
    """
    pt = registered_proof if isinstance(registered_proof, ProofType) else proof_type(registered_proof)
    if pt.tree.sub or pt.tree.top:
        raise ValueError(f"{pt.name}: only single-tree shapes (2KiB, 8MiB, 512MiB) can be sealed here")
    if (padded is None) == (piece is None):
        raise ValueError("give exactly one of padded and piece")
    if piece is not None:
        padded = pad_to_sector(piece, pt.sector_size)
    assert padded is not None
    if len(padded) != pt.sector_size:
        raise ValueError(f"padded data is {len(padded)} bytes, a {pt.size_label} sector is {pt.sector_size}")
    data = np.frombuffer(padded, dtype=np.uint8).reshape(-1, NODE)
    if (data[:, 31] & 0xC0).any():
        raise ValueError("padded data has a node with its top two bits set (not fr32-padded)")
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    timings: dict[str, float] = {}

    def tick(stage: str, t0: float) -> float:
        t1 = time.perf_counter()
        timings[stage] = timings.get(stage, 0.0) + t1 - t0
        return t1

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    t = time.perf_counter()
    report("graph", 0, 1)
    g = graph(pt.nodes, porep, pt.uses_legacy_graph)
    parents = g.parent_cache(parent_cache_dir)
    report("graph", 1, 1)
    t = tick("graph", t)

    report("tree_d", 0, 1)
    tree_d = build_tree_d(data)
    comm_d = tree_d.root
    rid = make_replica_id(prover_id, sector, ticket, comm_d, porep)
    report("tree_d", 1, 1)
    t = tick("tree_d", t)

    labels = label_layers(rid, parents, pt.layers, lambda l, d, n: report(f"labels L{l}", d, n))
    t = tick("labels", t)

    report("encode", 0, 1)
    replica = encode(labels[-1], data)
    report("encode", 1, 1)
    t = tick("encode", t)

    report("columns", 0, pt.nodes)
    columns = column_hashes_mont(labels, lambda d, n: report("columns", d, n))
    t = tick("columns", t)
    tree_c = build_poseidon_tree_mont(columns, pt.tree.base, lambda d, n: report("tree_c", d, n))
    t = tick("tree_c", t)
    tree_r = build_poseidon_tree_mont(
        domains_to_mont(replica), pt.tree.base, lambda d, n: report("tree_r", d, n)
    )
    t = tick("tree_r", t)

    comm_c, comm_r_last = tree_c.root, tree_r.root
    info = SectorInfo(
        registered_proof=pt.name,
        prover_id=bytes(prover_id),
        sector=sector,
        ticket=bytes(ticket),
        porep_id=porep,
        replica_id=rid,
        comm_d=comm_d,
        comm_c=comm_c,
        comm_r_last=comm_r_last,
        comm_r=hash2(comm_c, comm_r_last),
        miner=miner,
    )
    return SealedSector(info, labels, tree_d, tree_c, tree_r, timings)


def unseal(
    registered_proof: ProofType | str | int,
    replica: bytes,
    replica_id: bytes,
    porep_id: bytes | None = None,
) -> tuple[bytes, np.ndarray]:
    """Recover the padded data of a replica: relabel with ``replica_id`` and subtract the key.

    Returns (padded data, labels). The caller checks comm_d of the result (a wrong replica_id gives
    garbage, not an error).
    """
    pt = registered_proof if isinstance(registered_proof, ProofType) else proof_type(registered_proof)
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    g = graph(pt.nodes, porep, pt.uses_legacy_graph)
    labels = label_layers(replica_id, g.parent_cache(), pt.layers)
    rep = np.frombuffer(bytes(replica), dtype=np.uint8).reshape(-1, NODE)
    if rep.shape[0] != pt.nodes:
        raise ValueError(f"replica of {rep.shape[0]} nodes, {pt.name} has {pt.nodes}")
    return decode(labels[-1], rep).tobytes(), labels
