"""Encoding new_replica = key + data·rho (docs snap.md §2.3) against Python integers, and its inverses."""

from __future__ import annotations

import random

import numpy as np
import pytest

from porep.hashes.poseidon import R
from porep.snap.encoding import decode, encode, recover_key, rho_per_node_mont
from porep.snap.randomness import rho


def _nodes(values: list[int]) -> np.ndarray:
    return np.frombuffer(b"".join(v.to_bytes(32, "little") for v in values), np.uint8).reshape(-1, 32)


def _ints(nodes: np.ndarray) -> list[int]:
    return [int.from_bytes(nodes[i].tobytes(), "little") for i in range(nodes.shape[0])]


@pytest.mark.parametrize(("n", "h"), [(64, 1), (256, 3)])
def test_encode_matches_integers_and_round_trips(n: int, h: int) -> None:
    rnd = random.Random(n)
    key = [rnd.randrange(R) for _ in range(n)]
    data = [rnd.getrandbits(254) for _ in range(n)]
    phi = rnd.randrange(R)
    new = encode(_nodes(key), _nodes(data), phi, h)
    shift = n.bit_length() - 1 - h
    rhos = {high: rho(phi, high) for high in range(1 << h)}
    assert _ints(new) == [
        (k + d * rhos[i >> shift]) % R for i, (k, d) in enumerate(zip(key, data, strict=True))
    ]
    assert _ints(decode(_nodes(key), new, phi, h)) == data
    assert _ints(recover_key(new, _nodes(data), phi, h)) == key


def test_zero_data_leaves_the_replica_unchanged() -> None:
    key = _nodes([random.Random(3).randrange(R) for _ in range(64)])
    assert np.array_equal(encode(key, np.zeros((64, 32), np.uint8), 12345, 1), key)


def test_non_canonical_input_is_refused() -> None:
    key = _nodes([1] * 64)
    bad = _nodes([1] * 63 + [R])
    with pytest.raises(ValueError, match="node 63"):
        encode(key, bad, 5, 1)
    with pytest.raises(ValueError, match="sector key"):
        encode(bad, key, 5, 1)
    with pytest.raises(ValueError):
        rho_per_node_mont(5, 7, 64)
