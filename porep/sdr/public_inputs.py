"""The Groth16 public inputs of the StackedDRG PoRep circuit, computed without the circuit.

The verifier must not trust the prover's circuit for these: they are what binds a proof to its sector.
Per partition k (docs porep.md §7.1, circuit.md §9.3 "Input indices"), ONE excluded:

* x_1 = replica_id, x_2 = comm_d, x_3 = comm_r (little-endian field elements);
* for challenge i, at base = 3 + 18·i (4 + 18·i counting ONE): the tree-D path index (= the challenge:
  its path bits packed LE), the 6 DRG and 8 expander parents' tree-C indices, the challenge (UInt64),
  the tree-R_last index and the c_x tree-C index (both the challenge again).

Two derivations:

* :func:`sector_inputs` / :func:`from_c1` (the verifier's): challenges from (replica_id, seed[, comm_r])
  by :mod:`porep.sdr.challenges`, parents from the graph of the porep_id (:mod:`porep.sdr.graph`). Nothing of
  the vanilla proofs is read.
* :func:`from_c1_paths` (the circuit's view): the indices the C1's own Merkle paths and labeling proofs
  carry, i.e. what the circuit's input assignment will hold for that C1. An honest C1 gives the same
  vector; comparing the two is how a test ties the circuit's inputs to the verifier's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from porep import ids
from porep.c1 import C1Arrays, SealCommitPhase1Output
from porep.prooftypes import DRG_DEGREE, EXP_DEGREE, ProofType
from porep.sdr import challenges
from porep.sdr.graph import graph

R_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
HEADER_INPUTS = 3
INPUTS_PER_CHALLENGE = 1 + DRG_DEGREE + EXP_DEGREE + 3  # 18

# offsets within one challenge's block
OFF_TREE_D = 0
OFF_DRG = 1
OFF_EXP = 1 + DRG_DEGREE
OFF_CHALLENGE = OFF_EXP + EXP_DEGREE  # 15
OFF_TREE_R = OFF_CHALLENGE + 1
OFF_C_X = OFF_CHALLENGE + 2


def num_inputs(pt: ProofType) -> int:
    """Public inputs of one partition, ONE excluded (39 for 2KiB–512MiB, 327 for 32/64GiB)."""
    return HEADER_INPUTS + INPUTS_PER_CHALLENGE * pt.challenges_per_partition


def input_index(challenge: int, offset: int) -> int:
    """Index of a challenge's input in the vector *with* ONE at 0 (circuit.md: base = 4 + 18·i)."""
    if not 0 <= offset < INPUTS_PER_CHALLENGE:
        raise ValueError(f"offset {offset} outside a challenge's {INPUTS_PER_CHALLENGE} inputs")
    return 1 + HEADER_INPUTS + INPUTS_PER_CHALLENGE * challenge + offset


def fr(value: bytes, name: str) -> int:
    """A 32-byte little-endian domain as a field element; a non-canonical one is refused, not reduced."""
    value = bytes(value)
    if len(value) != 32:
        raise ValueError(f"{name} must be 32 bytes, got {len(value)}")
    x = int.from_bytes(value, "little")
    if x >= R_MODULUS:
        raise ValueError(f"{name} {value.hex()} is not a canonical Fr element")
    return x


def assemble(
    replica_id: bytes, comm_d: bytes, comm_r: bytes, nodes: Sequence[int] | np.ndarray, parents: np.ndarray
) -> list[int]:
    """One partition's vector from its challenged ``nodes`` and their ``parents`` ([n, 14]: DRG, expander).

    The tree-D, challenge, tree-R and c_x inputs are all the node: the circuit packs the same index bits
    (binary for tree D, octal digits for tree C/R, the u64 bits for the challenge)."""
    nodes_arr = np.asarray(nodes, dtype=np.int64).reshape(-1)
    par = np.asarray(parents, dtype=np.int64)
    if par.shape != (nodes_arr.size, DRG_DEGREE + EXP_DEGREE):
        raise ValueError(
            f"parents must be [{nodes_arr.size}, {DRG_DEGREE + EXP_DEGREE}], got {list(par.shape)}"
        )
    block = np.empty((nodes_arr.size, INPUTS_PER_CHALLENGE), dtype=np.int64)
    block[:, OFF_TREE_D] = nodes_arr
    block[:, OFF_DRG:OFF_CHALLENGE] = par
    block[:, OFF_CHALLENGE] = nodes_arr
    block[:, OFF_TREE_R] = nodes_arr
    block[:, OFF_C_X] = nodes_arr
    head = [fr(replica_id, "replica_id"), fr(comm_d, "comm_d"), fr(comm_r, "comm_r")]
    return head + [int(v) for v in block.reshape(-1)]


def sector_inputs(
    pt: ProofType,
    *,
    replica_id: bytes,
    seed: bytes,
    comm_d: bytes,
    comm_r: bytes,
    porep_id: bytes | None = None,
    partitions: Sequence[int] | None = None,
) -> list[list[int]]:
    """The vectors of ``partitions`` (default: all) of a sector, from its public values only.

    ``porep_id`` overrides the proof type's (test sectors are sealed with arbitrary ids)."""
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    ks = list(range(pt.partitions)) if partitions is None else [int(k) for k in partitions]
    chal = np.array(
        [challenges.derive(pt, bytes(replica_id), bytes(seed), bytes(comm_r), k) for k in ks], dtype=np.int64
    ).reshape(len(ks), pt.challenges_per_partition)
    par = graph(pt.nodes, porep, pt.uses_legacy_graph).parents_of(chal.reshape(-1))
    par = par.reshape(len(ks), pt.challenges_per_partition, DRG_DEGREE + EXP_DEGREE)
    return [assemble(replica_id, comm_d, comm_r, chal[j], par[j]) for j in range(len(ks))]


def record_inputs(
    pt: ProofType,
    *,
    prover_id: bytes,
    sector_id: int,
    ticket: bytes,
    seed: bytes,
    comm_d: bytes,
    comm_r: bytes,
    porep_id: bytes | None = None,
) -> list[list[int]]:
    """Every partition's vector from what a chain verifier has: prover, sector, ticket, seed, comm_d, comm_r
    (replica_id is derived, as ``verify_seal`` does)."""
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    rid = ids.replica_id(prover_id, sector_id, ticket, comm_d, porep)
    return sector_inputs(pt, replica_id=rid, seed=seed, comm_d=comm_d, comm_r=comm_r, porep_id=porep)


def _arrays(c1: SealCommitPhase1Output | C1Arrays) -> C1Arrays:
    return c1.arrays if isinstance(c1, SealCommitPhase1Output) else c1


def from_c1(
    c1: SealCommitPhase1Output | C1Arrays,
    *,
    porep_id: bytes | None = None,
    partitions: Sequence[int] | None = None,
) -> list[list[int]]:
    """The verifier's vectors for a C1: its header values (replica_id, seed, comm_d, comm_r) only."""
    arr = _arrays(c1)
    return sector_inputs(
        arr.proof_type,
        replica_id=arr.domain("replica_id"),
        seed=arr.domain("seed"),
        comm_d=arr.domain("comm_d"),
        comm_r=arr.domain("comm_r"),
        porep_id=porep_id,
        partitions=partitions,
    )


def from_c1_paths(c1: SealCommitPhase1Output | C1Arrays) -> list[list[int]]:
    """The vectors as the circuit sees a C1: indices packed from its own paths and labeling proofs.

    Tree D: the path's index bits; columns: each tree-C path's leaf index; challenge: the first labeling
    proof's node; tree R: its path's leaf index. Matches :func:`from_c1` exactly when the C1 is honest."""
    arr = _arrays(c1)
    pt = arr.proof_type
    tree_d = arr.merkle("d").leaf_index()  # [P, C]
    cols = arr.merkle("col").leaf_index()  # [P, C, 15]: c_x, 6 DRG, 8 expander
    tree_r = arr.merkle("r").leaf_index()
    chal = arr["lab.node"][:, :, 0]
    P, C = pt.partitions, pt.challenges_per_partition
    block = np.empty((P, C, INPUTS_PER_CHALLENGE), dtype=np.int64)
    block[..., OFF_TREE_D] = tree_d
    block[..., OFF_DRG:OFF_CHALLENGE] = cols[..., 1:]
    block[..., OFF_CHALLENGE] = chal
    block[..., OFF_TREE_R] = tree_r
    block[..., OFF_C_X] = cols[..., 0]
    head = [fr(arr.domain("replica_id"), "replica_id"), fr(arr.domain("comm_d"), "comm_d")]
    head.append(fr(arr.domain("comm_r"), "comm_r"))
    return [head + [int(v) for v in block[k].reshape(-1)] for k in range(P)]


def differences(want: Sequence[int], got: Sequence[int]) -> list[str]:
    """Human-readable differences between two vectors of one partition (ONE excluded), by input name."""
    if len(want) != len(got):
        return [f"{len(got)} inputs, expected {len(want)}"]
    return [f"{input_name(i)}: {g} != {w}" for i, (w, g) in enumerate(zip(want, got, strict=True)) if w != g]


def input_name(i: int) -> str:
    """The name of input x_{i+1} (index ``i`` in a vector without ONE)."""
    if i < HEADER_INPUTS:
        return ("replica_id", "comm_d", "comm_r")[i]
    c, off = divmod(i - HEADER_INPUTS, INPUTS_PER_CHALLENGE)
    if off == OFF_TREE_D:
        what = "tree_d index"
    elif off < OFF_EXP:
        what = f"drg parent {off - OFF_DRG}"
    elif off < OFF_CHALLENGE:
        what = f"expander parent {off - OFF_EXP}"
    else:
        what = ("challenge", "tree_r index", "c_x index")[off - OFF_CHALLENGE]
    return f"challenge {c}: {what}"
