"""The SDR parent graph: 6 DRG ("bucket") parents and 8 expander parents per node, and the parent cache.

Exactly rust-fil-proofs' ``StackedBucketGraph`` (docs porep.md §4.1–4.3):

* Seeds from the porep_id: DRG seed = SHA256("Filecoin_DRSample" ‖ porep_id)[:28]; Feistel keys =
  SHA256("Filecoin_Feistel" ‖ porep_id) as four u64 LE words (the first three are used).
* DRG parents of v ≥ 2: ChaCha8Rng seeded with drg_seed ‖ u32_le(v); 5 bucket-sampled parents
  (meta = 5v, n_buckets = ceil(log2 meta) in f64; bucket = rng % n_buckets + 1, largest = min(meta,
  2^bucket), smallest = max(2, largest >> 1), dist = smallest + rng % (largest − smallest + 1),
  p = (meta − dist) / 5, p == v → v − 1) plus the predecessor v − 1: first for api ≥ 1.1, last for 1.0.
  Nodes 0 and 1 have six parents 0.
* Expander parent i of v: feistel_permute(8N, 8v + i) / 8 (3 Feistel rounds over an even-bit domain,
  round function = first 8 bytes (BE) of BLAKE2b-512(u64_be(R) ‖ u64_be(key)), cycle-walking into range);
  api 1.0 truncates the permuted value to u32 first.
* Parent cache (SPP ``vanilla/cache.rs``): per node the 14 parents as u32 LE, 6 DRG then 8 expander; its
  SHA-256 is the digest published in rust-fil-proofs ``parent_cache.json``.

Numba kernels compute the parents of any array of nodes (the whole cache for sealing, a few hundred nodes
for verifying a 32GiB C1). The plain-Python :func:`drg_parents_reference` / :func:`exp_parents_reference`
(hashlib BLAKE2b, :func:`porep.hashes.chacha.chacha8_rng_words`) are the oracles in the tests.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.files import atomic_file
from porep.hashes.chacha import SIGMA, block, chacha8_rng_words
from porep.prooftypes import DRG_DEGREE, EXP_DEGREE, ProofType

DRSAMPLE_DST = b"Filecoin_DRSample"
FEISTEL_DST = b"Filecoin_Feistel"
FEISTEL_ROUNDS = 3
PARENTS = DRG_DEGREE + EXP_DEGREE  # 14 per node in the cache

U64 = np.uint64
_MASK64 = (1 << 64) - 1


def derive_porep_domain_seed(tag: bytes, porep_id: bytes) -> bytes:
    return hashlib.sha256(tag + porep_id).digest()


def drg_seed(porep_id: bytes) -> bytes:
    return derive_porep_domain_seed(DRSAMPLE_DST, porep_id)[:28]


def feistel_keys(porep_id: bytes) -> tuple[int, int, int, int]:
    raw = derive_porep_domain_seed(FEISTEL_DST, porep_id)
    return tuple(int.from_bytes(raw[i : i + 8], "little") for i in range(0, 32, 8))  # type: ignore[return-value]


def feistel_precompute(num_elements: int) -> tuple[int, int, int]:
    """(left_mask, right_mask, half_bits) for the smallest power of 4 (≥ 4) that is ≥ num_elements."""
    next_pow4, log4 = 4, 1
    while next_pow4 < num_elements:
        next_pow4 *= 4
        log4 += 1
    right = (1 << log4) - 1
    return right << log4, right, log4


# ================================================================================================ references


def drg_parents_reference(node: int, seed28: bytes, legacy: bool) -> list[int]:
    """The 6 DRG parents of ``node`` (plain Python; the oracle)."""
    if node < 2:
        return [0] * DRG_DEGREE
    words = chacha8_rng_words(seed28 + node.to_bytes(4, "little"), 20)
    rng = iter(int(words[2 * i]) | (int(words[2 * i + 1]) << 32) for i in range(10))
    meta = node * (DRG_DEGREE - 1)
    n_buckets = math.ceil(math.log2(meta))
    out = []
    for _ in range(DRG_DEGREE - 1):
        bucket = next(rng) % n_buckets + 1
        largest = min(meta, 1 << bucket)
        smallest = max(2, largest >> 1)
        dist = smallest + next(rng) % (largest - smallest + 1)
        p = (meta - dist) // (DRG_DEGREE - 1)
        out.append(node - 1 if p == node else p)
    return out + [node - 1] if legacy else [node - 1] + out


def _feistel_f(right: int, key: int, right_mask: int) -> int:
    digest = hashlib.blake2b(right.to_bytes(8, "big") + key.to_bytes(8, "big")).digest()
    return int.from_bytes(digest[:8], "big") & right_mask


def feistel_permute_reference(num_elements: int, index: int, keys: tuple[int, ...]) -> int:
    left_mask, right_mask, half = feistel_precompute(num_elements)

    def encode(x: int) -> int:
        left, right = (x & left_mask) >> half, x & right_mask
        for key in keys[:FEISTEL_ROUNDS]:
            left, right = right, left ^ _feistel_f(right, key, right_mask)
        return (left << half) | right

    u = encode(index)
    while u >= num_elements:
        u = encode(u)
    return u


def exp_parents_reference(node: int, nodes: int, keys: tuple[int, ...], legacy: bool) -> list[int]:
    out = []
    for i in range(EXP_DEGREE):
        t = feistel_permute_reference(nodes * EXP_DEGREE, node * EXP_DEGREE + i, keys)
        if legacy:
            t &= 0xFFFFFFFF
        out.append(t // EXP_DEGREE)
    return out


# ================================================================================================ kernels


@njit(nogil=True, cache=cache_enabled())
def _drg_rows(lo, hi, nodes, seed_words, legacy, out):
    """out[j, 0:6] = DRG parents of nodes[j] (seed_words = the 7 LE words of the 28-byte DRG seed)."""
    state = np.empty(16, np.uint32)
    work = np.empty(16, np.uint32)
    ks = np.empty(32, np.uint32)
    blk = np.empty(16, np.uint32)
    for i in range(4):
        state[i] = SIGMA[i]
    for i in range(7):
        state[4 + i] = seed_words[i]
    state[14] = np.uint32(0)
    state[15] = np.uint32(0)
    for j in range(lo, hi):
        v = nodes[j]
        if v < 2:
            for k in range(6):
                out[j, k] = np.uint32(0)
            continue
        state[11] = np.uint32(v)
        for b in range(2):
            state[12] = np.uint32(b)
            state[13] = np.uint32(0)
            block(state, 8, blk, work)
            for i in range(16):
                ks[b * 16 + i] = blk[i]
        meta = np.uint64(v) * np.uint64(5)
        n_buckets = np.uint64(math.ceil(math.log2(np.float64(meta))))
        pos = 0
        first = 0 if legacy else 1
        for k in range(5):
            r1 = np.uint64(ks[pos]) | (np.uint64(ks[pos + 1]) << np.uint64(32))
            r2 = np.uint64(ks[pos + 2]) | (np.uint64(ks[pos + 3]) << np.uint64(32))
            pos += 4
            bucket = r1 % n_buckets + np.uint64(1)
            largest = min(meta, np.uint64(1) << bucket)
            smallest = max(np.uint64(2), largest >> np.uint64(1))
            dist = smallest + r2 % (largest - smallest + np.uint64(1))
            p = (meta - dist) // np.uint64(5)
            if p == np.uint64(v):
                p = np.uint64(v - 1)
            out[j, first + k] = np.uint32(p)
        out[j, 5 if legacy else 0] = np.uint32(v - 1)


_IV = np.array(
    [
        0x6A09E667F3BCC908,
        0xBB67AE8584CAA73B,
        0x3C6EF372FE94F82B,
        0xA54FF53A5F1D36F1,
        0x510E527FADE682D1,
        0x9B05688C2B3E6C1F,
        0x1F83D9ABFB41BD6B,
        0x5BE0CD19137E2179,
    ],
    dtype=np.uint64,
)
_SIGMA_B = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ],
    dtype=np.int64,
)


@njit(nogil=True, inline="always")
def _rotr64(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(nogil=True, inline="always")
def _g(v, a, b, c, d, x, y):
    v[a] = v[a] + v[b] + x
    v[d] = _rotr64(v[d] ^ v[a], 32)
    v[c] = v[c] + v[d]
    v[b] = _rotr64(v[b] ^ v[c], 24)
    v[a] = v[a] + v[b] + y
    v[d] = _rotr64(v[d] ^ v[a], 16)
    v[c] = v[c] + v[d]
    v[b] = _rotr64(v[b] ^ v[c], 63)


@njit(nogil=True, inline="always")
def _bswap64(x):
    r = np.uint64(0)
    for i in range(8):
        r = (r << np.uint64(8)) | ((x >> np.uint64(8 * i)) & np.uint64(0xFF))
    return r


@njit(nogil=True, cache=cache_enabled())
def _feistel_f_nb(right, key, right_mask, v, m):
    """First 8 digest bytes (big-endian) of BLAKE2b-512(u64_be(right) ‖ u64_be(key)), masked."""
    # One 16-byte block: h = IV with the parameter block (digest 64, key 0, fanout 1, depth 1) folded in.
    for i in range(8):
        v[i] = _IV[i]
        v[8 + i] = _IV[i]
    v[0] ^= np.uint64(0x01010040)
    h0 = v[0]
    v[12] ^= np.uint64(16)  # t0 = bytes so far
    v[14] ^= np.uint64(0xFFFFFFFFFFFFFFFF)  # last block
    for i in range(16):
        m[i] = np.uint64(0)
    m[0] = _bswap64(right)
    m[1] = _bswap64(key)
    for r in range(12):
        s = _SIGMA_B[r % 10]
        _g(v, 0, 4, 8, 12, m[s[0]], m[s[1]])
        _g(v, 1, 5, 9, 13, m[s[2]], m[s[3]])
        _g(v, 2, 6, 10, 14, m[s[4]], m[s[5]])
        _g(v, 3, 7, 11, 15, m[s[6]], m[s[7]])
        _g(v, 0, 5, 10, 15, m[s[8]], m[s[9]])
        _g(v, 1, 6, 11, 12, m[s[10]], m[s[11]])
        _g(v, 2, 7, 8, 13, m[s[12]], m[s[13]])
        _g(v, 3, 4, 9, 14, m[s[14]], m[s[15]])
    out0 = h0 ^ v[0] ^ v[8]
    return _bswap64(out0) & right_mask


@njit(nogil=True, cache=cache_enabled())
def _exp_rows(lo, hi, nodes, keys, num_elements, left_mask, right_mask, half, legacy, out):
    """out[j, 6:14] = expander parents of nodes[j]."""
    v = np.empty(16, np.uint64)
    m = np.empty(16, np.uint64)
    for j in range(lo, hi):
        for i in range(8):
            x = np.uint64(nodes[j]) * np.uint64(8) + np.uint64(i)
            while True:
                left = (x & left_mask) >> half
                right = x & right_mask
                for k in range(3):
                    nl = right
                    right = left ^ _feistel_f_nb(right, keys[k], right_mask, v, m)
                    left = nl
                x = (left << half) | right
                if x < num_elements:
                    break
            if legacy:
                x = x & np.uint64(0xFFFFFFFF)
            out[j, 6 + i] = np.uint32(x // np.uint64(8))


# ================================================================================================ graph


@dataclass(frozen=True)
class StackedGraph:
    """The SDR graph of one (size, porep_id, api version)."""

    nodes: int
    porep_id: bytes
    legacy: bool  # api_version 1.0.0: predecessor last, expander value truncated to u32
    _cache: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.porep_id) != 32:
            raise ValueError("porep_id must be 32 bytes")
        if self.nodes < 3 or self.nodes >= 1 << 32:
            raise ValueError(f"unsupported graph size {self.nodes}")

    @classmethod
    def for_proof(cls, pt: ProofType, porep_id: bytes | None = None) -> StackedGraph:
        """The graph of a proof type; ``porep_id`` overrides the derived one (test sectors use others)."""
        return cls(pt.nodes, pt.porep_id if porep_id is None else bytes(porep_id), pt.uses_legacy_graph)

    @property
    def drg_seed(self) -> bytes:
        return drg_seed(self.porep_id)

    @property
    def feistel_keys(self) -> tuple[int, int, int, int]:
        return feistel_keys(self.porep_id)

    @property
    def identifier(self) -> str:
        return (
            f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: {DRG_DEGREE}; hasher: poseidon_hasher}} }}"
        )

    @property
    def cache_id(self) -> str:
        """Hex id of the parent-cache file (SPP ``vanilla/cache.rs``)."""
        h = hashlib.sha256(b"poseidon_hasher" + self.identifier.encode())
        for k in self.feistel_keys:
            h.update(k.to_bytes(8, "little"))
        h.update(self.nodes.to_bytes(4, "little"))
        return h.hexdigest()

    def parents_of(self, nodes: np.ndarray | list[int]) -> np.ndarray:
        """``uint32[k, 14]``: 6 DRG then 8 expander parents of each of ``nodes``."""
        arr = np.ascontiguousarray(nodes, dtype=np.int64).reshape(-1)
        if arr.size and (arr.min() < 0 or arr.max() >= self.nodes):
            raise IndexError(f"node out of range [0, {self.nodes})")
        out = np.empty((arr.size, PARENTS), dtype=np.uint32)
        seed_words = np.frombuffer(self.drg_seed, dtype="<u4").astype(np.uint32)
        parallel_for(_drg_rows, arr.size, arr, seed_words, self.legacy, out, min_chunk=256)
        left_mask, right_mask, half = feistel_precompute(self.nodes * EXP_DEGREE)
        keys = np.array(self.feistel_keys, dtype=np.uint64)
        parallel_for(
            _exp_rows,
            arr.size,
            arr,
            keys,
            U64(self.nodes * EXP_DEGREE),
            U64(left_mask),
            U64(right_mask),
            U64(half),
            self.legacy,
            out,
            min_chunk=256,
        )
        return out

    def parent_cache(self, cache_dir: Path | None = None) -> np.ndarray:
        """``uint32[nodes, 14]`` for every node (memoized; read from / written to ``cache_dir`` if given)."""
        if "all" in self._cache:
            return self._cache["all"]
        path = cache_dir / f"v28-sdr-parent-{self.cache_id}.cache" if cache_dir is not None else None
        arr: np.ndarray | None = None
        if path is not None and path.is_file() and path.stat().st_size == self.nodes * PARENTS * 4:
            arr = np.fromfile(path, dtype="<u4").astype(np.uint32).reshape(self.nodes, PARENTS)
        if arr is None:
            arr = self.parents_of(np.arange(self.nodes))
            if path is not None:
                with atomic_file(path) as f:
                    f.write(arr.astype("<u4").tobytes())
        arr.flags.writeable = False
        self._cache["all"] = arr
        return arr

    def drg_parents(self, node: int) -> list[int]:
        return [int(x) for x in self.parents_of([node])[0, :DRG_DEGREE]]

    def exp_parents(self, node: int) -> list[int]:
        return [int(x) for x in self.parents_of([node])[0, DRG_DEGREE:]]


def cache_digest(cache: np.ndarray) -> str:
    """SHA-256 (hex) of a parent cache as the file stores it (u32 LE)."""
    return hashlib.sha256(np.ascontiguousarray(cache, dtype="<u4").tobytes()).hexdigest()


@lru_cache(maxsize=4)
def graph(nodes: int, porep_id: bytes, legacy: bool) -> StackedGraph:
    """A shared graph object (its parent cache is memoized on it)."""
    return StackedGraph(nodes, bytes(porep_id), legacy)
