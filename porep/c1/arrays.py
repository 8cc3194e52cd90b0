"""Bulk (numpy) view of a C1: one array per field, all challenges at once.

Vanilla verification and witness generation work on all challenges together, so the natural form of a C1
for them is columnar: ``col.rows`` is one ``uint8[P, C, 15, L, 32]`` array rather than 2,700 Column objects.
Leading axes are always ``p`` (partition) and ``c`` (challenge within the partition).

Field names (axes in brackets; 32-byte values end in ``byte`` and are ``uint8``, the rest ``int64``):

* ``comm_r``, ``comm_d``, ``replica_id``, ``seed``, ``ticket`` [byte]
* tree D proof ``d.*``, tree R_last proof ``r.*`` and the 15 tree-C proofs ``col.*`` (extra ``col`` axis:
  0 = c_x, 1..6 = drg_parents, 7..14 = exp_parents) share one layout:
  ``root``, ``leaf`` [byte]; ``base.hashes`` [level, sib, byte]; ``base.index`` [level]; and for Sub/Top
  shapes also ``sub.hashes``/``sub.index`` and ``top.hashes``/``top.index`` (one level each).
* ``col.index`` [col] (the column's node), ``col.rows`` [col, layer, byte] (``rows[l]`` = label in layer l+1)
* ``lab.parents`` [layer, parent, byte], ``lab.layer_index`` [layer], ``lab.node`` [layer]
* ``enc.parents`` [parent, byte], ``enc.layer_index``, ``enc.node``
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass

import numpy as np

from porep.prooftypes import ProofType

FR_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
_FR_LIMBS = [np.uint64((FR_MODULUS >> (64 * i)) & (2**64 - 1)) for i in range(4)]


def as_limbs(domains: np.ndarray) -> np.ndarray:
    """``uint8[..., 32]`` little-endian values → ``uint64[..., 4]`` limbs, low limb first (a copy)."""
    if domains.dtype != np.uint8 or domains.shape[-1:] != (32,):
        raise ValueError(f"expected uint8[..., 32], got {domains.dtype}{list(domains.shape)}")
    return np.ascontiguousarray(domains).view("<u8").astype(np.uint64)


def as_ints(domains: np.ndarray) -> list[int]:
    """The integers of ``uint8[..., 32]`` little-endian values, flattened in C order."""
    raw = np.ascontiguousarray(domains, dtype=np.uint8).tobytes()
    return [int.from_bytes(raw[i : i + 32], "little") for i in range(0, len(raw), 32)]


def is_canonical_fr(domains: np.ndarray) -> np.ndarray:
    """Which values are canonical BLS12-381 scalars (< r): every Poseidon domain of an honest C1 is.

    The JSON does not enforce it (serde reads a raw repr), so verification code should check."""
    v = as_limbs(domains)
    r0, r1, r2, r3 = _FR_LIMBS
    below = v[..., 0] < r0
    below = (v[..., 1] < r1) | ((v[..., 1] == r1) & below)
    below = (v[..., 2] < r2) | ((v[..., 2] == r2) & below)
    return (v[..., 3] < r3) | ((v[..., 3] == r3) & below)


@dataclass(frozen=True)
class MerkleArrays:
    """One kind of merkle proof for every challenge: ``hashes`` exclude the node on the path, ``index`` is
    where the running hash is inserted among the ``arity`` children (element 0 = leaf level)."""

    root: np.ndarray
    leaf: np.ndarray
    base_hashes: np.ndarray
    base_index: np.ndarray
    sub_hashes: np.ndarray | None
    sub_index: np.ndarray | None
    top_hashes: np.ndarray | None
    top_index: np.ndarray | None

    def leaf_index(self) -> np.ndarray:
        """The challenged leaf of every proof (``MerkleProof::path_index``), int64."""
        arity = self.base_hashes.shape[-2] + 1
        acc = np.zeros(self.base_index.shape[:-1], dtype=np.int64)
        for level in range(self.base_index.shape[-1] - 1, -1, -1):
            acc = acc * arity + self.base_index[..., level]
        span = arity ** self.base_index.shape[-1]
        for hashes, index in ((self.sub_hashes, self.sub_index), (self.top_hashes, self.top_index)):
            if index is None or hashes is None:
                continue
            acc = acc + index[..., 0] * span
            span *= hashes.shape[-2] + 1
        return acc


@dataclass(frozen=True, eq=False)
class C1Arrays:
    """All integers of a C1, by field (see the module docstring). Arrays are read-only."""

    proof_type: ProofType
    fields: Mapping[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    def keys(self) -> KeysView[str]:
        return self.fields.keys()

    def domain(self, name: str) -> bytes:
        """A header value (``comm_r``, ``comm_d``, ``replica_id``, ``seed``, ``ticket``) as 32 bytes."""
        return self.fields[name].tobytes()

    def merkle(self, prefix: str) -> MerkleArrays:
        """``"d"`` (tree D), ``"r"`` (tree R_last) or ``"col"`` (tree C, one per column)."""
        f = self.fields
        return MerkleArrays(
            root=f[f"{prefix}.root"],
            leaf=f[f"{prefix}.leaf"],
            base_hashes=f[f"{prefix}.base.hashes"],
            base_index=f[f"{prefix}.base.index"],
            sub_hashes=f.get(f"{prefix}.sub.hashes"),
            sub_index=f.get(f"{prefix}.sub.index"),
            top_hashes=f.get(f"{prefix}.top.hashes"),
            top_index=f.get(f"{prefix}.top.index"),
        )

    def same_as(self, other: C1Arrays) -> bool:
        """Equal proof type and equal contents in every field."""
        return (
            self.proof_type == other.proof_type
            and self.fields.keys() == other.fields.keys()
            and all(np.array_equal(v, other.fields[k]) for k, v in self.fields.items())
        )
