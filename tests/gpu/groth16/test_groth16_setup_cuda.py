"""The setup's GPU path (gpu.groth16.fixed_base_cuda, setup.generate_file) under the CUDA simulator: the bytes
of every product equal blst's k * G (independent oracle), and a whole .params file written through the GPU
path equals the CPU path's and the in-memory setup's byte for byte; the parallel QAP column sums equal the
R1CS's serial ones; the streaming writer refuses a section of the wrong length; a file loaded straight to
the device (params_device) equals the host reader's arrays.

Sizes are tiny (the simulator runs a thread as Python: ~0.2 s per G1 product with 8-bit windows)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agent.cli import app
from gpu.arith.fields import fr_encode, fr_from_ints, fr_from_mont
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2, EncodingError
from gpu.curves._host import Group
from gpu.device import devices
from gpu.groth16 import params as params_mod
from gpu.groth16 import setup
from gpu.groth16.fixed_base import FixedBase
from gpu.groth16.fixed_base_cuda import CudaFixedBase
from gpu.groth16.params import G1_UNC, G2_UNC, Parameters, ParamsWriter, VerifyingKey
from gpu.groth16.params_device import load_to_device
from gpu.groth16.prover import permuted_h_bases
from tests.gpu._circuits import random_circuit
from tests.gpu._points import blst_points, random_points

pytestmark = pytest.mark.slow  # CPU table kernels compile (~20 s) and the simulator runs every thread


@pytest.mark.parametrize(("group", "extra"), [(G1, 3), (G2, 1)], ids=["g1", "g2"])
def test_cuda_products_are_blst_bytes(group: Group, extra: int, seed: int) -> None:
    """Edge scalars of the 8-bit signed recoding (a digit of exactly 2^7, carries through every window, r - 1)
    and the identity (0 -> the 0x40 flag), in chunks smaller than the input (the buffer reuse)."""
    rnd = random.Random(seed)
    w = 8
    ks = [0, 1, R - 1, 1 << (w - 1), sum(129 << (w * k) for k in range(31)) % R]
    ks += [rnd.randrange(R) for _ in range(extra)]
    fb = FixedBase(group, group.generator(), window=w)
    got = CudaFixedBase(fb, devices()[0], chunk=3).mul_bytes(fr_from_ints(ks))
    want = group.to_bytes(group.from_blst(blst_points(group.name, ks)), compressed=False)
    size = 2 * group.compressed_size
    bad = [k for i, k in enumerate(ks) if got[i * size : (i + 1) * size] != want[i * size : (i + 1) * size]]
    assert len(got) == len(want) and not bad, f"seed {seed}: wrong {group.name} products for {bad[:2]}"
    assert got[:size] == b"\x40" + bytes(size - 1)


def test_generate_file_cuda_equals_cpu(tmp_path: Path) -> None:
    """``params generate --backend cuda`` (simulated GPU) and ``--backend cpu`` from the same test seed give
    the same .params and .vk bytes, equal to the in-memory setup's; the file reads back."""
    r1cs, _, _ = random_circuit(11, num_public=1, num_constraints=5)
    r1cs.save(tmp_path / "r1cs")
    files = {}
    for backend in ("cpu", "cuda"):
        out = tmp_path / backend
        res = CliRunner().invoke(
            app,
            ["params", "generate", "--r1cs", str(tmp_path / "r1cs"), "--test-seed", "9", "--out", str(out)]
            + ["--name", "t", "--backend", backend],
        )
        assert res.exit_code == 0, res.output
        files[backend] = ((out / "t.params").read_bytes(), (out / "t.vk").read_bytes())
        assert f'"backend": "{backend}"' in (out / "t.meta.json").read_text()
    assert files["cuda"] == files["cpu"]
    params = setup.generate(r1cs, test_seed=9)
    assert files["cpu"] == (params.to_bytes(), params.vk.to_bytes())
    back = Parameters.read(tmp_path / "cuda" / "t.params")
    assert back.to_bytes() == files["cuda"][0] and back.vk == VerifyingKey.read(tmp_path / "cuda" / "t.vk")


@pytest.mark.parametrize("compact", [False, True], ids=["csr", "interned"])
def test_parallel_column_sums(compact: bool, seed: int) -> None:
    """setup.column_sums (canonical, column ranges in parallel) == R1CS.column_sums (Montgomery, serial)."""
    r1cs, _, _ = random_circuit(seed % 1000, num_public=2, num_constraints=40)
    if compact:
        if not hasattr(r1cs, "compact"):
            pytest.skip("this R1CS has no interned-coefficient form yet")
        r1cs = r1cs.compact()
    rows = r1cs.num_constraints_total
    lag = fr_encode([random.Random(seed).randrange(R) for _ in range(rows)])
    want = r1cs.column_sums(lag)
    got = setup.column_sums(r1cs, lag)
    for name, g, w in zip("uvw", got, want, strict=True):
        assert np.array_equal(g, fr_from_mont(w)), f"seed {seed}: {name} differs"


def test_params_writer_checks_lengths(tmp_path: Path) -> None:
    path = tmp_path / "x.params"
    with pytest.raises(ValueError, match="length says"), ParamsWriter(path) as w:
        w.section(2, G1)
        w.write(bytes(G1_UNC))  # one point short
        w.section(0, G2)
    assert not path.exists() and not path.with_name("x.params.tmp").exists()
    with ParamsWriter(path) as w:
        w.section(1, G1)
        w.write(bytes(G1_UNC))
    assert path.read_bytes() == b"\0\0\0\1" + bytes(G1_UNC)


def test_params_writer_digest_is_the_files(tmp_path: Path) -> None:
    """The digest computed while writing (bytes and numpy chunks, several sections) equals hashlib's
    BLAKE2b-256 of the file read back; a failed write leaves no digest."""
    import hashlib

    path = tmp_path / "d.params"
    rnd = np.random.default_rng(3)
    with ParamsWriter(path) as w:
        w.write(bytes(range(7)))
        w.section(3, G1)
        w.write(rnd.integers(0, 256, 2 * G1_UNC, dtype=np.uint8))
        w.write(rnd.integers(0, 2**32, G1_UNC // 4, dtype=np.uint32).view(np.uint8))
        w.section(1, G2)
        w.write(bytes(G2_UNC))
        assert w.blake2b is None  # not before the file is complete
    assert w.blake2b == hashlib.blake2b(path.read_bytes(), digest_size=32).hexdigest()
    with pytest.raises(ValueError), ParamsWriter(tmp_path / "e.params") as w2:
        w2.section(1, G1)
    assert w2.blake2b is None


def _small_params(seed: int) -> Parameters:
    """A parameter file's shape with random points (not a setup's: the loader does not care)."""
    rnd = random.Random(seed)

    def g1(n: int) -> np.ndarray:
        return random_points("g1", n, rnd)[0]

    vk = VerifyingKey(
        g1(1),
        g1(1),
        random_points("g2", 1, rnd)[0],
        random_points("g2", 1, rnd)[0],
        g1(1),
        random_points("g2", 1, rnd)[0],
        g1(2),
    )
    return Parameters(vk, g1(7), g1(3), g1(2), g1(2), random_points("g2", 2, rnd)[0])


def test_load_to_device_equals_host_read(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The device decoder gives the host reader's arrays (H in the prover's bit-reversed slots), in chunks
    smaller than a section, as does the host reader decoding chunks side by side; a flipped coordinate bit is
    refused."""
    params = _small_params(seed)
    path = tmp_path / "p.params"
    params.write(path)
    monkeypatch.setattr(params_mod, "CHUNK_POINTS", 2)
    assert Parameters.read(path, subgroup_check=False).to_bytes() == params.to_bytes()
    dev = load_to_device(path, devices()[0], h_bitrev=True, chunk_points=3)
    assert dev.vk == params.vk and dev.domain_log == params.domain_log == 3
    assert np.array_equal(dev.h.copy_to_host(), permuted_h_bases(params.h, 3)), f"seed {seed}"
    for name in ("l", "a", "b_g1", "b_g2"):
        assert np.array_equal(getattr(dev, name).copy_to_host(), getattr(params, name)), (
            f"seed {seed}: {name}"
        )
    data = bytearray(path.read_bytes())
    data[-G1_UNC - 2 * 192 - 5] ^= 1  # a coordinate of the last b_g1 point: off the curve (or >= p)
    (tmp_path / "bad.params").write_bytes(bytes(data))
    with pytest.raises(EncodingError, match="1 point"):
        load_to_device(tmp_path / "bad.params", devices()[0])
