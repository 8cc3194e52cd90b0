"""Groth16 keys and proofs in bellperson's binary layouts (porep.md §8), as Montgomery point arrays.

VerifyingKey (.vk): alpha_g1 ‖ beta_g1 ‖ beta_g2 ‖ gamma_g2 ‖ delta_g1 ‖ delta_g2 ‖ u32-BE ic_len ‖ ic, every
  point uncompressed zcash (G1 96 bytes, G2 192 bytes).
Parameters (.params): vk ‖ (u32-BE len ‖ G1...) h ‖ l ‖ a ‖ b_g1 ‖ (len ‖ G2...) b_g2, uncompressed; h has
  domain_size - 1 points, l one per aux variable, a / b_g1 / b_g2 omit the variables whose polynomial is zero.
  Points at infinity are rejected on read (bellperson's reader does the same); trailing bytes are ignored.
Proof: A (G1 compressed, 48) ‖ B (G2 compressed, 96) ‖ C (G1 compressed, 48) = 192 bytes; a multi-partition
  proof is the concatenation in partition order.
Reading decodes straight from a memory map into the final arrays, several chunks at a time (no second copy of
the file); the curve check always runs, the subgroup check unless ``subgroup_check=False`` (a file already
checked against a published digest). gpu.groth16.params_device loads a file onto a GPU without a host decode.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpu.curves import G1, G2, EncodingError
from gpu.curves._host import Group
from gpu.files import atomic_file, atomic_write
from gpu.groth16 import PROOF_BYTES

G1_UNC = 96
G2_UNC = 192
VK_FIXED = 3 * G1_UNC + 3 * G2_UNC  # before ic_len
CHUNK_POINTS = 1 << 18
READ_THREADS = 4  # chunks decoded at once by the reader (each also uses the CPU pool for its field work)


def _one(group: Group, a: np.ndarray) -> np.ndarray:
    return group.check_array(np.asarray(a), 2).reshape((1,) + group.affine_shape)


@dataclass
class VerifyingKey:
    """[alpha]_1, [beta]_1, [beta]_2, [gamma]_2, [delta]_1, [delta]_2 and
    ic_j = [(beta u_j + alpha v_j + w_j) / gamma]_1 for the public inputs (ONE first); each a (1, 2, ...) or
    (k, 2, ...) affine Montgomery array."""

    alpha_g1: np.ndarray
    beta_g1: np.ndarray
    beta_g2: np.ndarray
    gamma_g2: np.ndarray
    delta_g1: np.ndarray
    delta_g2: np.ndarray
    ic: np.ndarray

    @property
    def num_inputs(self) -> int:
        """Public inputs including ONE (= len(ic))."""
        return int(self.ic.shape[0])

    def to_bytes(self) -> bytes:
        return b"".join(
            [
                G1.to_bytes(_one(G1, self.alpha_g1), compressed=False),
                G1.to_bytes(_one(G1, self.beta_g1), compressed=False),
                G2.to_bytes(_one(G2, self.beta_g2), compressed=False),
                G2.to_bytes(_one(G2, self.gamma_g2), compressed=False),
                G1.to_bytes(_one(G1, self.delta_g1), compressed=False),
                G2.to_bytes(_one(G2, self.delta_g2), compressed=False),
                struct.pack(">I", self.ic.shape[0]),
                G1.to_bytes(self.ic, compressed=False),
            ]
        )

    @staticmethod
    def from_bytes(data: bytes | memoryview, subgroup_check: bool = True) -> VerifyingKey:
        vk, end = _read_vk(memoryview(data), 0, subgroup_check)
        if end != len(data):
            raise EncodingError(f"{len(data) - end} trailing bytes after the verifying key")
        return vk

    def write(self, path: str | os.PathLike[str]) -> None:
        atomic_write(path, self.to_bytes(), fsync=True)

    @staticmethod
    def read(path: str | os.PathLike[str], subgroup_check: bool = True) -> VerifyingKey:
        return VerifyingKey.from_bytes(Path(path).read_bytes(), subgroup_check)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VerifyingKey) and self.to_bytes() == other.to_bytes()


@dataclass(eq=False)
class Parameters:
    """The proving key: vk plus the h, l, a, b_g1 (G1) and b_g2 (G2) queries, affine Montgomery arrays."""

    vk: VerifyingKey
    h: np.ndarray
    l: np.ndarray  # noqa: E741 - the name of the query in the paper and in bellperson
    a: np.ndarray
    b_g1: np.ndarray
    b_g2: np.ndarray

    @property
    def domain_log(self) -> int:
        return int(self.h.shape[0]).bit_length()  # h has n - 1 points

    def sections(self) -> list[tuple[str, Group, np.ndarray]]:
        return [
            ("h", G1, self.h),
            ("l", G1, self.l),
            ("a", G1, self.a),
            ("b_g1", G1, self.b_g1),
            ("b_g2", G2, self.b_g2),
        ]

    def write(self, path: str | os.PathLike[str]) -> None:
        """bellperson layout, streamed in chunks, written atomically (temporary file + rename)."""

        def parts() -> Any:
            yield self.vk.to_bytes()
            for _, group, arr in self.sections():
                yield struct.pack(">I", arr.shape[0])
                for lo in range(0, arr.shape[0], CHUNK_POINTS):
                    yield group.to_bytes(arr[lo : lo + CHUNK_POINTS], compressed=False)

        with atomic_file(path, fsync=True) as f:
            for part in parts():
                f.write(part)

    def to_bytes(self) -> bytes:
        import io

        buf = io.BytesIO()
        buf.write(self.vk.to_bytes())
        for _, group, arr in self.sections():
            buf.write(struct.pack(">I", arr.shape[0]))
            buf.write(group.to_bytes(arr, compressed=False))
        return buf.getvalue()

    @staticmethod
    def read(path: str | os.PathLike[str], subgroup_check: bool = True) -> Parameters:
        """Decode from a read-only memory map of the file."""
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise EncodingError(f"{path}: empty parameter file")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    return Parameters.from_buffer(view, subgroup_check)
                finally:
                    view.release()

    @staticmethod
    def from_buffer(view: memoryview, subgroup_check: bool = True) -> Parameters:
        vk, pos = _read_vk(view, 0, subgroup_check)
        out = []
        for _name, group in (("h", G1), ("l", G1), ("a", G1), ("b_g1", G1), ("b_g2", G2)):
            arr, pos = _read_section(view, pos, group, subgroup_check)
            out.append(arr)
        return Parameters(vk, *out)


def _read_u32(view: memoryview, pos: int) -> tuple[int, int]:
    if pos + 4 > len(view):
        raise EncodingError("truncated: missing a length field")
    return struct.unpack(">I", view[pos : pos + 4])[0], pos + 4


def _decode(
    view: memoryview, pos: int, count: int, group: Group, subgroup_check: bool, out: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    size = G2_UNC if group.fq2 else G1_UNC
    end = pos + count * size
    if end > len(view):
        raise EncodingError(f"truncated: {count} {group.name} points need {count * size} bytes")
    if out is None:
        out = np.empty((count,) + group.affine_shape, dtype=np.uint32)
    dst = out

    def chunk(lo: int) -> None:
        hi = min(count, lo + CHUNK_POINTS)
        pts = group.from_bytes(
            bytes(view[pos + lo * size : pos + hi * size]), compressed=False, subgroup_check=subgroup_check
        )
        if not np.all(np.any(pts.reshape(hi - lo, -1), axis=1)):
            raise EncodingError(f"point at infinity in a {group.name} query")
        dst[lo:hi] = pts

    starts = list(range(0, count, CHUNK_POINTS))
    if len(starts) <= 1:
        for lo in starts:
            chunk(lo)
    else:  # chunks side by side: the byte shuffles are NumPy (GIL released), the field work Numba (nogil)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
            for f in [pool.submit(chunk, lo) for lo in starts]:
                f.result()
    return out, end


def _read_section(view: memoryview, pos: int, group: Group, subgroup_check: bool) -> tuple[np.ndarray, int]:
    n, pos = _read_u32(view, pos)
    return _decode(view, pos, n, group, subgroup_check)


def _read_vk(view: memoryview, pos: int, subgroup_check: bool) -> tuple[VerifyingKey, int]:
    if len(view) < pos + VK_FIXED + 4:
        raise EncodingError("truncated verifying key")
    fixed = []
    for group in (G1, G1, G2, G2, G1, G2):
        p, pos = _decode(view, pos, 1, group, subgroup_check)
        fixed.append(p)
    n, pos = _read_u32(view, pos)
    ic, pos = _decode(view, pos, n, G1, subgroup_check)
    return VerifyingKey(fixed[0], fixed[1], fixed[2], fixed[3], fixed[4], fixed[5], ic), pos


def check_file(path: str | os.PathLike[str], progress: Any = None) -> int:
    """Every point of a .params or .vk file decoded with the curve and subgroup checks, chunk by chunk (the
    file is never held decoded: a 47 GB file checks in bounded memory); EncodingError on the first bad point
    or layout error. ``progress(done_bytes, total_bytes)`` after each chunk. Returns the points checked."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise EncodingError(f"{path}: empty parameter file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                vk, pos = _read_vk(view, 0, True)
                points = 6 + vk.num_inputs
                if str(path).endswith(".vk"):
                    if pos != size:
                        raise EncodingError(f"{size - pos} trailing bytes after the verifying key")
                    return points
                step = READ_THREADS * CHUNK_POINTS
                for group in (G1, G1, G1, G1, G2):
                    n, pos = _read_u32(view, pos)
                    unit = G2_UNC if group.fq2 else G1_UNC
                    for lo in range(0, n, step):
                        _decode(view, pos + lo * unit, min(step, n - lo), group, True)
                        if progress is not None:
                            progress(pos + min(n, lo + step) * unit, size)
                    pos += n * unit
                    points += n
                return points
            finally:
                view.release()


class ParamsWriter:
    """A .params file written section by section as the points are computed (the setup's streaming output:
    a 32GiB file is ~47 GB, more than the host should hold). Bytes go to a temporary file from a writer thread
    (``write`` returns once the chunk is queued, so computing the next chunk overlaps the disk), fsynced and
    renamed on a clean exit; on an exception the temporary file is removed. A second thread computes the
    file's BLAKE2b-256 (``blake2b``, hex, set on a clean exit) from the same chunks as they are written, so a
    caller that records the file by digest never reads 47 GB back (hashlib releases the GIL: hashing and
    writing overlap).

        with ParamsWriter(path) as w:
            w.write(vk.to_bytes())
            w.section(count); w.write(bytes_of_points) ...   # h, l, a, b_g1 (G1), b_g2 (G2), in order
    """

    QUEUE = 3  # chunks in flight: bounds the host memory held for the disk

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.written = 0
        self.blake2b: str | None = None  # hex digest of the whole file, once it is complete
        self._end: int | None = None  # where the current section's points must end

    def __enter__(self) -> ParamsWriter:
        import hashlib
        import queue
        import threading

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.tmp, "wb")  # noqa: SIM115 - closed in __exit__
        self._q: queue.Queue[Any] = queue.Queue(maxsize=self.QUEUE)
        self._hq: queue.Queue[Any] = queue.Queue(maxsize=self.QUEUE)
        self._hash = hashlib.blake2b(digest_size=32)
        self._err: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name="params-writer", daemon=True)
        self._hasher = threading.Thread(target=self._digest, name="params-hasher", daemon=True)
        self._thread.start()
        self._hasher.start()
        return self

    def _drain(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                self._hq.put(None)
                return
            if self._err is None:
                self._hq.put(item)
                try:
                    self._f.write(item)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the producer's thread
                    self._err = exc

    def _digest(self) -> None:
        while (item := self._hq.get()) is not None:
            self._hash.update(item.data.cast("B") if isinstance(item, np.ndarray) else item)

    def write(self, data: bytes | memoryview | np.ndarray) -> None:
        if self._err is not None:
            raise self._err
        self.written += len(data) if not isinstance(data, np.ndarray) else data.nbytes
        self._q.put(data)

    def section(self, count: int, group: Group) -> None:
        """Start a section of ``count`` points of ``group`` (its u32-BE length field)."""
        self._check_end()
        self.write(struct.pack(">I", count))
        self._end = self.written + count * (G2_UNC if group.fq2 else G1_UNC)

    def _check_end(self) -> None:
        if self._end is not None and self._end != self.written:
            raise ValueError(f"a parameter section ended at byte {self.written}, its length says {self._end}")

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._q.put(None)
        self._thread.join()
        self._hasher.join()
        try:  # a full disk can surface here too (buffered bytes): the temporary file must still go
            if exc_type is None and self._err is None:
                self._f.flush()
                os.fsync(self._f.fileno())
        except OSError as e:
            self._err = e
        finally:
            try:
                self._f.close()
            except OSError as e:
                self._err = self._err or e
        if exc_type is not None or self._err is not None:
            self.tmp.unlink(missing_ok=True)
            if exc_type is None and self._err is not None:
                raise self._err
            return
        try:
            self._check_end()
        except ValueError:
            self.tmp.unlink(missing_ok=True)
            raise
        self.blake2b = self._hash.hexdigest()
        os.replace(self.tmp, self.path)


# ------------------------------------------------------------------------------------------- proofs


@dataclass
class Proof:
    """(A, B, C): A, C in G1 (1, 2, 12), B in G2 (1, 2, 2, 12), affine Montgomery."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    def to_bytes(self) -> bytes:
        out = G1.to_bytes(_one(G1, self.a)) + G2.to_bytes(_one(G2, self.b)) + G1.to_bytes(_one(G1, self.c))
        assert len(out) == PROOF_BYTES
        return out

    @staticmethod
    def from_bytes(data: bytes) -> Proof:
        """Decode 192 bytes; rejects bad encodings, non-subgroup points and the identity (EncodingError)."""
        if len(data) != PROOF_BYTES:
            raise EncodingError(f"a Groth16 proof is {PROOF_BYTES} bytes, got {len(data)}")
        a = G1.from_bytes(data[:48])
        b = G2.from_bytes(data[48:144])
        c = G1.from_bytes(data[144:])
        for name, p in (("A", a), ("B", b), ("C", c)):
            if not p.any():
                raise EncodingError(f"proof element {name} is the point at infinity")
        return Proof(a, b, c)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proof) and self.to_bytes() == other.to_bytes()


def split_proofs(data: bytes) -> list[bytes]:
    """A multi-partition proof (concatenation) -> its 192-byte parts."""
    if len(data) % PROOF_BYTES or not data:
        raise EncodingError(f"{len(data)} bytes is not a positive multiple of {PROOF_BYTES}")
    return [data[i : i + PROOF_BYTES] for i in range(0, len(data), PROOF_BYTES)]
