"""The C1 output (``SealCommitPhase1Output``): typed models, bulk arrays and a strict byte-exact JSON codec.

Typical use::

    from porep.c1 import SealCommitPhase1Output, C1FormatError, KeyOrder

    c1 = SealCommitPhase1Output.from_json(raw)        # values strictly; C1FormatError names the JSON path
    c1.registered_proof, c1.proof_type, c1.comm_r     # RegisteredSealProof, ProofType, 32 bytes
    c1.vanilla_proofs[k][i].replica_column_proofs.c_x.column.rows
    c1.arrays["col.rows"]                              # uint8[P, C, 15, L, 32], all challenges at once
    c1.canonical                                       # were the bytes exactly Rust's or Go's encoding?
    assert c1.to_json() == raw                         # if so: same bytes, same key order (Rust or Go)
    c1.to_json(KeyOrder.GO)                            # or pick the order explicitly

Formatting: any JSON that serde_json reads as a ``SealCommitPhase1Output`` is accepted (whitespace,
key order, unknown keys, escapes; duplicate or missing fields, NaN, leading zeros, floats are refused)
and ``canonical`` reports whether the bytes were exactly a real producer's; ``canonical=True`` demands it
(see :mod:`porep.c1.codec`). Values are always checked strictly. Limits: ``max_bytes`` (default 128 MiB;
raise it for NI-PoRep 32/64GiB C1s of ~0.5 GB), nesting depth 127, every array length fixed by the proof
type, every integer < 2^32.
"""

from porep.c1.arrays import C1Arrays, MerkleArrays, as_ints, as_limbs, is_canonical_fr
from porep.c1.codec import (
    DEFAULT_MAX_BYTES,
    Decoded,
    decode,
    decode_document,
    detect,
    encode,
    report_noncanonical,
)
from porep.c1.errors import C1FormatError
from porep.c1.layout import KeyOrder
from porep.c1.models import (
    Column,
    ColumnProof,
    Domain,
    EncodingProof,
    LabelingProof,
    MerkleProof,
    PathElement,
    Proof,
    ReplicaColumnProof,
    SealCommitPhase1Output,
    SingleProof,
    SubProof,
    TopProof,
    domain_to_int,
    domains_array,
    int_to_domain,
)


def parse_c1(
    data: bytes | bytearray | memoryview | str, *, max_bytes: int = DEFAULT_MAX_BYTES, canonical: bool = False
) -> SealCommitPhase1Output:
    """Parse a C1 JSON document (same as :meth:`SealCommitPhase1Output.from_json`)."""
    return SealCommitPhase1Output.from_json(data, max_bytes=max_bytes, canonical=canonical)


def noncanonical_error(c1: SealCommitPhase1Output, raw: bytes) -> C1FormatError | None:
    """Where ``raw`` (the bytes ``c1`` was parsed from) first differs from its canonical encoding."""
    if c1.canonical:
        return None
    try:
        report_noncanonical(Decoded(c1.arrays, c1.key_order, False), raw)
    except C1FormatError as exc:
        return exc
    return None  # pragma: no cover - a non-canonical input always differs somewhere


def dump_c1(c1: SealCommitPhase1Output, order: KeyOrder | str | None = None) -> bytes:
    """Serialise a C1 (same as :meth:`SealCommitPhase1Output.to_json`)."""
    return c1.to_json(order)


__all__ = [
    "C1Arrays",
    "C1FormatError",
    "Column",
    "ColumnProof",
    "DEFAULT_MAX_BYTES",
    "Decoded",
    "Domain",
    "EncodingProof",
    "KeyOrder",
    "LabelingProof",
    "MerkleArrays",
    "MerkleProof",
    "PathElement",
    "Proof",
    "ReplicaColumnProof",
    "SealCommitPhase1Output",
    "SingleProof",
    "SubProof",
    "TopProof",
    "as_ints",
    "as_limbs",
    "decode",
    "decode_document",
    "detect",
    "domain_to_int",
    "domains_array",
    "dump_c1",
    "encode",
    "int_to_domain",
    "is_canonical_fr",
    "noncanonical_error",
    "parse_c1",
]
