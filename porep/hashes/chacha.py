"""The ChaCha block function (RFC 8439 §2.3) in Numba, with the two state layouts Filecoin uses.

* ``rand_chacha`` 0.3 ``ChaCha8Rng`` (the DRG's RNG, SPC ``drgraph.rs``): words 12–13 are a 64-bit block
  counter, words 14–15 a 64-bit stream id (0); 8 rounds. ``gen::<u64>()`` reads the keystream as
  consecutive little-endian u32 words, two per u64, low word first.
* IETF ChaCha20 (the ``chacha20`` crate; synthetic PoRep challenges): word 12 is a 32-bit block counter,
  words 13–15 a 96-bit nonce; 20 rounds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpu.arith.cudashim import cache_enabled

SIGMA = np.frombuffer(b"expand 32-byte k", dtype="<u4").astype(np.uint32)


@njit(nogil=True, inline="always")
def _rotl(x, n):
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


@njit(nogil=True, inline="always")
def _qr(x, a, b, c, d):
    x[a] += x[b]
    x[d] = _rotl(x[d] ^ x[a], 16)
    x[c] += x[d]
    x[b] = _rotl(x[b] ^ x[c], 12)
    x[a] += x[b]
    x[d] = _rotl(x[d] ^ x[a], 8)
    x[c] += x[d]
    x[b] = _rotl(x[b] ^ x[c], 7)


@njit(nogil=True, cache=cache_enabled())
def block(state, rounds, out, work):
    """out[0:16] = ChaCha_rounds(state) + state (uint32[16] each; ``work`` is uint32[16] scratch)."""
    for i in range(16):
        work[i] = state[i]
    for _ in range(rounds // 2):
        _qr(work, 0, 4, 8, 12)
        _qr(work, 1, 5, 9, 13)
        _qr(work, 2, 6, 10, 14)
        _qr(work, 3, 7, 11, 15)
        _qr(work, 0, 5, 10, 15)
        _qr(work, 1, 6, 11, 12)
        _qr(work, 2, 7, 8, 13)
        _qr(work, 3, 4, 9, 14)
    for i in range(16):
        out[i] = work[i] + state[i]


@njit(nogil=True, cache=cache_enabled())
def _ietf_keystream(key_words, nonce_words, first_block, nblocks, rounds, out):
    state = np.empty(16, np.uint32)
    work = np.empty(16, np.uint32)
    blk = np.empty(16, np.uint32)
    for i in range(4):
        state[i] = SIGMA[i]
    for i in range(8):
        state[4 + i] = key_words[i]
    for i in range(3):
        state[13 + i] = nonce_words[i]
    for b in range(nblocks):
        state[12] = np.uint32(first_block + b)
        block(state, rounds, blk, work)
        for i in range(16):
            out[b * 16 + i] = blk[i]


def chacha20_keystream(key: bytes, nonce: bytes, offset: int, length: int) -> bytes:
    """``length`` bytes of the IETF ChaCha20 keystream starting at byte ``offset`` (a multiple of 64)."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("ChaCha20 takes a 32-byte key and a 12-byte nonce")
    if offset % 64:
        raise ValueError("keystream offset must be block aligned")
    first = offset // 64
    nblocks = -(-length // 64)
    if first + nblocks > 1 << 32:
        raise ValueError("beyond the 32-bit block counter")
    out = np.empty(nblocks * 16, dtype=np.uint32)
    _ietf_keystream(
        np.frombuffer(key, dtype="<u4").astype(np.uint32),
        np.frombuffer(nonce, dtype="<u4").astype(np.uint32),
        first,
        nblocks,
        20,
        out,
    )
    return out.astype("<u4").tobytes()[:length]


def chacha8_rng_words(seed: bytes, nwords: int) -> np.ndarray:
    """The first ``nwords`` u32 outputs of ``ChaCha8Rng::from_seed(seed)`` (one seed, for tests and
    single nodes; the graph kernels inline the same layout)."""
    if len(seed) != 32:
        raise ValueError("ChaCha8Rng seeds are 32 bytes")
    state = np.zeros(16, dtype=np.uint32)
    state[:4] = SIGMA
    state[4:12] = np.frombuffer(seed, dtype="<u4")
    out = np.empty(-(-nwords // 16) * 16, dtype=np.uint32)
    blk, work = np.empty(16, np.uint32), np.empty(16, np.uint32)
    for b in range(out.size // 16):
        state[12] = np.uint32(b & 0xFFFFFFFF)
        state[13] = np.uint32(b >> 32)
        block(state, 8, blk, work)
        out[b * 16 : (b + 1) * 16] = blk
    return out[:nwords]
