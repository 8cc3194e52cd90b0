"""gpu.transfer.Staging: chunked copies through pinned buffers land every byte where it belongs."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from gpu.transfer import PinnedPool, Staging, is_pinned, pinned_copy, pinned_empty


@pytest.mark.parametrize("chunk", [4, 40, 100, 1 << 20])
def test_upload_into_slice_of_larger_array(chunk: int) -> None:
    rng = np.random.default_rng(chunk)
    host = rng.integers(0, 2**32, size=(37, 8), dtype=np.uint32)
    d = cuda.to_device(np.zeros((3, 50, 8), dtype=np.uint32))
    st = Staging(chunk_bytes=chunk, buffers=2)
    st.upload(host, d[1, :37])
    st.upload(host[::-1].copy(), d[2, 13:])
    out = d.copy_to_host()
    assert np.array_equal(out[1, :37], host)
    assert not out[1, 37:].any() and not out[0].any()
    assert np.array_equal(out[2, 13:], host[::-1])
    assert not out[2, :13].any()


def test_reused_buffers_and_other_dtypes() -> None:
    st = Staging(chunk_bytes=24, buffers=3)
    for seed in range(3):
        host = np.random.default_rng(seed).integers(0, 255, size=1001, dtype=np.uint8)
        d = cuda.device_array(1001, dtype=np.uint8)
        st.upload(host, d)
        assert np.array_equal(d.copy_to_host(), host)
    st.upload(np.zeros((0, 8), np.uint32), cuda.device_array((0, 8), dtype=np.uint32))


def test_rejects_mismatch() -> None:
    st = Staging(chunk_bytes=64)
    with pytest.raises(ValueError, match="cannot copy"):
        st.upload(np.zeros((4, 8), np.uint32), cuda.device_array((5, 8), dtype=np.uint32))
    with pytest.raises(ValueError, match="cannot copy"):
        st.upload(np.zeros((4, 8), np.uint64), cuda.device_array((4, 8), dtype=np.uint32))
    with pytest.raises(ValueError):
        Staging(buffers=1)


def test_pinned_arrays_go_up_directly() -> None:
    """Arrays from pinned_empty/pinned_copy (and contiguous views into them) skip the staging copy; other
    arrays, and strided views of pinned ones, take the staging path; both land the same bytes."""
    rng = np.random.default_rng(7)
    host = rng.integers(0, 2**32, size=(64, 8), dtype=np.uint32)
    pinned = pinned_copy(host)
    assert np.array_equal(pinned, host) and is_pinned(pinned) and is_pinned(pinned[10:20])
    assert not is_pinned(host) and not is_pinned(pinned[::2]) and not is_pinned(pinned[:, :4])
    st = Staging(chunk_bytes=100, buffers=2)
    d = cuda.device_array((64, 8), dtype=np.uint32)
    st.upload(pinned, d)
    assert np.array_equal(d.copy_to_host(), host)
    assert (st.direct_bytes, st.staged_bytes) == (host.nbytes, 0)
    d2 = cuda.to_device(np.zeros((20, 8), dtype=np.uint32))
    st.upload(pinned[10:20], d2[5:15])
    st.upload(np.ascontiguousarray(pinned[::2][:5]), d2[:5])
    out = d2.copy_to_host()
    assert np.array_equal(out[5:15], host[10:20]) and np.array_equal(out[:5], host[::2][:5])
    assert not out[15:].any()
    assert (st.direct_bytes, st.staged_bytes) == (host.nbytes + 320, 160)
    e = pinned_empty((3, 5), np.uint8)
    assert e.shape == (3, 5) and e.dtype == np.uint8 and is_pinned(e)
    assert pinned_copy(np.zeros((0, 8), np.uint32)).shape == (0, 8)


def test_pinned_pool_reuses_and_refuses_strangers() -> None:
    pool = PinnedPool()
    a = pool.take((4, 8))
    b = pool.take(16, np.uint8)
    assert is_pinned(a) and is_pinned(b) and pool.held_bytes == 128 + 16
    pool.give(a)
    assert pool.take((4, 8)) is a  # reused, not reallocated
    assert pool.take((4, 8)) is not a and pool.held_bytes == 2 * 128 + 16  # a is in use: a new one
    pool.give(a, b)
    with pytest.raises(ValueError, match="twice"):
        pool.give(a)
    with pytest.raises(ValueError, match="not taken"):
        pool.give(np.zeros((4, 8), np.uint32))
    pool.clear()
    assert pool.held_bytes == 128  # the array still in use stays owned
