"""Valid C1s of any sector size without sealing: the sparse sector.

The vanilla proofs and the circuit look at the challenged nodes only: a challenged node's labels are
recomputed from its parents' columns, the columns are opened against comm_c, the replica node against
comm_r_last and the data node against comm_d (porep.md §6, §7). Nothing checks that an *unchallenged*
node's label follows from its own parents. So a sector in which

* every data node is one fr32 value ``data`` (all zero: a committed-capacity sector, whose comm_d is
  Filecoin's published zero commitment),
* every unchallenged node has the label ``label`` in every layer (so its column and replica node are
  constants too),
* every challenged node ``x`` has the real labels: label_l(x) = create_label(replica_id, l, x, the 37
  labels of its parents — DRG parents in layer l, expander parents in layer l − 1 — which are ``label``
  unless that parent is itself challenged), and replica(x) = label_L(x) + data mod r,

yields a C1 that every check accepts, with trees whose untouched subtrees are all equal
(:class:`porep.hashes.sparse_merkle.SparseMerkleTree`: one hash per level plus the challenged nodes'
ancestors). A 32GiB C1 then costs seconds instead of a 32 GiB seal.

Order of construction (each step needs the one before): data → comm_d → replica_id → challenges (from
replica_id and the seed; this is why only interactive proof types are possible: NI and synthetic
challenges depend on comm_r, which depends on the challenged labels) → the challenged labels, layer by
layer in increasing node order (DRG parents precede their child; expander parents are in the layer below)
→ tree C and tree R_last → comm_r.

This is the generator of *valid* C1s (``psagent c1 synth``). :mod:`porep.c1.synth` is the other one:
random values in exact shapes, for the codec benchmarks; those C1s do not verify.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from porep import ids
from porep.c1 import C1Arrays, KeyOrder, SealCommitPhase1Output, encode
from porep.hashes.poseidon import R, hash2
from porep.hashes.poseidon_batch import hash_domains_batch
from porep.hashes.sparse_merkle import SparseMerkleTree
from porep.prooftypes import DRG_DEGREE, ProofType, proof_type
from porep.sdr import challenges
from porep.sdr.graph import graph
from porep.sdr.labels import create_label, parent_slots

NODE = 32
Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): "challenges", "labels", "trees", "c1"."""


def _sha254(tag: bytes) -> bytes:
    d = bytearray(hashlib.sha256(tag).digest())
    d[31] &= 0x3F
    return bytes(d)


DEFAULT_LABEL = _sha254(b"psagent sparse sector: the label of every unchallenged node")
DEFAULT_DATA = _sha254(b"psagent sparse sector: every data node")
"""Both are sha254 values (top two bits clear): valid labels, valid fr32 data nodes and canonical Fr."""


class SparseSectorError(ValueError):
    """The inputs cannot make a sparse sector (proof type, sizes)."""


def supports(pt: ProofType) -> str | None:
    """Why ``pt`` cannot have a sparse sector, or None if it can."""
    if pt.is_non_interactive or pt.is_synthetic:
        return (
            f"{pt.name}: its challenges depend on comm_r, which depends on the challenged labels; "
            "only interactive proof types (V1, V1_1) can be synthesised"
        )
    return None


def _fr_add(a: bytes, b: bytes) -> bytes:
    return ((int.from_bytes(a, "little") + int.from_bytes(b, "little")) % R).to_bytes(NODE, "little")


def tree_arities(pt: ProofType) -> tuple[int, ...]:
    """Arity per level of tree C / tree R_last, leaf level first: the base levels, then sub, then top."""
    t = pt.tree
    return (t.base,) * pt.base_depth + ((t.sub,) if t.sub else ()) + ((t.top,) if t.top else ())


@dataclass(frozen=True)
class SparseSector:
    """A sector that is constant except at its challenged nodes (see the module docstring)."""

    proof_type: ProofType
    prover_id: bytes
    sector: int
    ticket: bytes
    seed: bytes
    porep_id: bytes
    replica_id: bytes
    data: bytes  # every data node
    label: bytes  # every unchallenged label
    challenges: np.ndarray  # int64[P, C]
    parents: dict[int, np.ndarray]  # challenged node -> its 14 parents (6 DRG, 8 expander)
    labels: dict[int, tuple[bytes, ...]]  # challenged node -> its label in layers 1..L
    tree_d: SparseMerkleTree
    tree_c: SparseMerkleTree
    tree_r_last: SparseMerkleTree

    @property
    def comm_d(self) -> bytes:
        return self.tree_d.root

    @property
    def comm_c(self) -> bytes:
        return self.tree_c.root

    @property
    def comm_r_last(self) -> bytes:
        return self.tree_r_last.root

    @property
    def comm_r(self) -> bytes:
        return hash2(self.comm_c, self.comm_r_last)

    def column_rows(self, nodes: np.ndarray) -> np.ndarray:
        """``uint8[..., L, 32]``: the labels of ``nodes`` in every layer."""
        flat = np.asarray(nodes, dtype=np.int64).reshape(-1)
        L = self.proof_type.layers
        out = np.empty((flat.size, L, NODE), dtype=np.uint8)
        out[:] = np.frombuffer(self.label, dtype=np.uint8)
        for j, v in enumerate(flat.tolist()):
            rows = self.labels.get(v)
            if rows is not None:
                out[j] = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(L, NODE)
        return out.reshape(*np.shape(nodes), L, NODE)


def sparse_sector(
    registered_proof: ProofType | str | int,
    prover_id: bytes,
    sector: int,
    ticket: bytes,
    seed: bytes,
    *,
    data: bytes = DEFAULT_DATA,
    label: bytes = DEFAULT_LABEL,
    porep_id: bytes | None = None,
    progress: Progress | None = None,
) -> SparseSector:
    """The sparse sector of (prover, sector, ticket) for the challenges that ``seed`` selects."""
    pt = registered_proof if isinstance(registered_proof, ProofType) else proof_type(registered_proof)
    why = supports(pt)
    if why is not None:
        raise SparseSectorError(why)
    seed, ticket, prover_id = bytes(seed), bytes(ticket), bytes(prover_id)
    for name, value in (("seed", seed), ("ticket", ticket), ("prover_id", prover_id)):
        if len(value) != NODE:
            raise SparseSectorError(f"{name} must be 32 bytes, got {len(value)}")
    data, label = bytes(data), bytes(label)
    for name, value in (("data", data), ("label", label)):
        if len(value) != NODE or value[31] & 0xC0:
            raise SparseSectorError(f"{name} must be 32 bytes with its top two bits clear")
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    L = pt.layers

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    report("challenges", 0, 1)
    tree_d = SparseMerkleTree.build("sha254", (2,) * pt.tree_d_depth, data, {})
    rid = ids.replica_id(prover_id, sector, ticket, tree_d.root, porep)
    chal = np.array(challenges.derive_all(pt, rid, seed, None), dtype=np.int64)
    nodes = sorted({int(v) for v in chal.reshape(-1)})
    g = graph(pt.nodes, porep, pt.uses_legacy_graph)
    parent_rows = g.parents_of(nodes).astype(np.int64)
    parents = {v: parent_rows[j] for j, v in enumerate(nodes)}
    report("challenges", 1, 1)

    # Labels, layer by layer; within a layer in increasing node order, since DRG parents precede the node.
    computed: dict[int, list[bytes]] = {v: [] for v in nodes}
    for layer in range(1, L + 1):
        slots = parent_slots(layer)
        for v in nodes:
            p37 = []
            for slot in slots.tolist():
                p = int(parents[v][slot])
                src = layer if slot < DRG_DEGREE else layer - 1
                mine = computed.get(p)
                p37.append(mine[src - 1] if mine is not None else label)
            computed[v].append(create_label(rid, layer, v, b"".join(p37)))
        report("labels", layer, L)
    labels = {v: tuple(rows) for v, rows in computed.items()}

    report("trees", 0, 2)
    arities = tree_arities(pt)
    columns = np.frombuffer(b"".join(b"".join(labels[v]) for v in nodes), dtype=np.uint8).reshape(-1, L, NODE)
    leaf_c = hash_domains_batch(columns)
    default_c = hash_domains_batch(np.frombuffer(label * L, dtype=np.uint8).reshape(1, L, NODE))[0].tobytes()
    tree_c = SparseMerkleTree.build(
        "poseidon", arities, default_c, {v: leaf_c[j].tobytes() for j, v in enumerate(nodes)}
    )
    report("trees", 1, 2)
    tree_r = SparseMerkleTree.build(
        "poseidon", arities, _fr_add(label, data), {v: _fr_add(labels[v][-1], data) for v in nodes}
    )
    report("trees", 2, 2)
    return SparseSector(
        proof_type=pt,
        prover_id=prover_id,
        sector=sector,
        ticket=ticket,
        seed=seed,
        porep_id=porep,
        replica_id=rid,
        data=data,
        label=label,
        challenges=chal,
        parents=parents,
        labels=labels,
        tree_d=tree_d,
        tree_c=tree_c,
        tree_r_last=tree_r,
    )


Level = tuple[np.ndarray, np.ndarray]  # one path level: siblings [k, arity-1, 32], positions [k]


def _segments(pt: ProofType, paths: list[Level]) -> dict[str, list[Level]]:
    """Split per-level paths into the C1's base, sub and top segments."""
    d = pt.base_depth
    out = {"base": paths[:d]}
    if pt.tree.sub:
        out["sub"] = paths[d : d + 1]
    if pt.tree.top:
        out["top"] = paths[d + 1 : d + 2]
    return out


def _put_paths(
    f: dict[str, np.ndarray], prefix: str, segs: dict[str, list[Level]], lead: tuple[int, ...]
) -> None:
    for part, levels in segs.items():
        hashes = np.stack([h for h, _ in levels], axis=1)  # [k, levels, sib, 32]
        pos = np.stack([p for _, p in levels], axis=1)  # [k, levels]
        f[f"{prefix}.{part}.hashes"] = hashes.reshape(*lead, *hashes.shape[1:])
        f[f"{prefix}.{part}.index"] = pos.reshape(*lead, pos.shape[1])


def _const(value: bytes, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(value, dtype=np.uint8), (*shape, NODE)).copy()


def sparse_c1_arrays(s: SparseSector) -> C1Arrays:
    """The C1 of a sparse sector, as bulk arrays (the same fields :func:`porep.sdr.vanilla.make_c1_arrays`
    gathers from a sealed sector)."""
    pt = s.proof_type
    P, C, L = pt.partitions, pt.challenges_per_partition, pt.layers
    flat = s.challenges.reshape(-1)
    parents = np.stack([s.parents[int(v)] for v in flat])  # [P·C, 14]
    f: dict[str, np.ndarray] = {}

    f["d.root"] = _const(s.comm_d, (P, C))
    f["d.leaf"] = s.tree_d.nodes(0, flat).reshape(P, C, NODE)
    _put_paths(f, "d", {"base": s.tree_d.paths(flat)}, (P, C))

    f["r.root"] = _const(s.comm_r_last, (P, C))
    f["r.leaf"] = s.tree_r_last.nodes(0, flat).reshape(P, C, NODE)
    _put_paths(f, "r", _segments(pt, s.tree_r_last.paths(flat)), (P, C))

    cols = np.concatenate([flat[:, None], parents], axis=1)  # [P·C, 15]: c_x, 6 DRG, 8 expander
    rows = s.column_rows(cols)  # [P·C, 15, L, 32]
    f["col.index"] = cols.reshape(P, C, 15)
    f["col.rows"] = rows.reshape(P, C, 15, L, NODE)
    f["col.root"] = _const(s.comm_c, (P, C, 15))
    f["col.leaf"] = s.tree_c.nodes(0, cols.reshape(-1)).reshape(P, C, 15, NODE)
    _put_paths(f, "col", _segments(pt, s.tree_c.paths(cols.reshape(-1))), (P, C, 15))

    # labeling proofs: layer l hashes the DRG parents' labels of layer l and the expander parents' of l − 1
    lab = np.empty((P * C, L, 37, NODE), dtype=np.uint8)
    for layer in range(1, L + 1):
        for j, slot in enumerate(parent_slots(layer).tolist()):
            src = layer if slot < DRG_DEGREE else layer - 1
            lab[:, layer - 1, j] = rows[:, 1 + slot, src - 1]
    f["lab.parents"] = lab.reshape(P, C, L, 37, NODE)
    f["lab.layer_index"] = np.broadcast_to(np.arange(1, L + 1, dtype=np.int64), (P, C, L)).copy()
    f["lab.node"] = np.repeat(s.challenges[:, :, None], L, axis=2)
    f["enc.parents"] = lab[:, L - 1].reshape(P, C, 37, NODE).copy()
    f["enc.layer_index"] = np.full((P, C), L, dtype=np.int64)
    f["enc.node"] = s.challenges.copy()

    for name, value in (
        ("comm_r", s.comm_r),
        ("comm_d", s.comm_d),
        ("replica_id", s.replica_id),
        ("seed", s.seed),
        ("ticket", s.ticket),
    ):
        f[name] = np.frombuffer(value, dtype=np.uint8).copy()
    for arr in f.values():
        arr.flags.writeable = False
    return C1Arrays(pt, f)


def sparse_c1(s: SparseSector) -> SealCommitPhase1Output:
    """The C1 of a sparse sector as models (validated; builds ~40k objects at 32GiB)."""
    return SealCommitPhase1Output.from_arrays(sparse_c1_arrays(s))


def sparse_c1_json(s: SparseSector, order: KeyOrder | str = KeyOrder.RUST) -> bytes:
    """The canonical C1 document of a sparse sector, straight from the arrays (no models)."""
    return encode(sparse_c1_arrays(s), KeyOrder(order))
