"""bellperson binary layouts: .vk and .params written by us read back identically, a .vk checked by an
independent parser written here from porep.md §8 (struct offsets + deps.md §1.5 conversions + pyblst), proofs
(192 bytes) with their rejections. (Partition assembly, device admission: tests/agent/test_admission.py.)"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from _circuits import random_circuit  # tests/gpu is on sys.path
from pyblst import BlstP1Element, BlstP2Element

from gpu.arith.fields.constants import P_MODULUS as P
from gpu.curves import G1, G2, EncodingError
from gpu.groth16.params import PROOF_BYTES, Parameters, Proof, VerifyingKey, split_proofs
from gpu.groth16.setup import generate


@pytest.fixture(scope="module")
def params() -> Parameters:
    r1cs, _, _ = random_circuit(7, num_public=3, num_constraints=10)
    return generate(r1cs, test_seed=7)


def _g1_unc_to_comp(u: bytes) -> bytes:
    if u[0] & 0x40:
        return bytes([0xC0]) + bytes(47)
    y = int.from_bytes(u[48:], "big")
    b = bytearray(u[:48])
    b[0] |= 0x80 | (0x20 if y > (P - 1) // 2 else 0)
    return bytes(b)


def _g2_unc_to_comp(u: bytes) -> bytes:
    y1, y0 = int.from_bytes(u[96:144], "big"), int.from_bytes(u[144:], "big")
    sign = (y1 > (P - 1) // 2) if y1 else (y0 > (P - 1) // 2)
    b = bytearray(u[:96])
    b[0] |= 0x80 | (0x20 if sign else 0)
    return bytes(b)


def independent_vk_parse(data: bytes) -> dict[str, object]:
    """porep.md §8: alpha_g1 | beta_g1 | beta_g2 | gamma_g2 | delta_g1 | delta_g2 | u32 BE ic_len | ic."""
    pos, out = 0, {}
    for name, size in (
        ("alpha_g1", 96),
        ("beta_g1", 96),
        ("beta_g2", 192),
        ("gamma_g2", 192),
        ("delta_g1", 96),
        ("delta_g2", 192),
    ):
        raw = data[pos : pos + size]
        out[name] = (
            BlstP1Element.uncompress(_g1_unc_to_comp(raw))
            if size == 96
            else BlstP2Element.uncompress(_g2_unc_to_comp(raw))
        )
        # the stored y must be the curve's y for that x (compression threw it away): y^2 = x^3 + 4 for G1
        if size == 96:
            x, y = int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big")
            assert y * y % P == (x**3 + 4) % P
        pos += size
    (n,) = struct.unpack(">I", data[pos : pos + 4])
    pos += 4
    out["ic"] = [
        BlstP1Element.uncompress(_g1_unc_to_comp(data[pos + 96 * i : pos + 96 * (i + 1)])) for i in range(n)
    ]
    assert pos + 96 * n == len(data)
    return out


def test_vk_layout_independent_parser(params: Parameters, tmp_path: Path) -> None:
    vk = params.vk
    vk.write(tmp_path / "x.vk")
    data = (tmp_path / "x.vk").read_bytes()
    assert len(data) == 3 * 96 + 3 * 192 + 4 + 96 * vk.num_inputs  # 2KiB PoRep (40 ic): 4708 bytes
    parsed = independent_vk_parse(data)
    assert parsed["alpha_g1"].compress() == G1.to_bytes(vk.alpha_g1)  # type: ignore[attr-defined]
    assert parsed["delta_g2"].compress() == G2.to_bytes(vk.delta_g2)  # type: ignore[attr-defined]
    assert [p.compress() for p in parsed["ic"]] == [
        G1.to_bytes(vk.ic[i : i + 1]) for i in range(vk.num_inputs)
    ]  # type: ignore[attr-defined]
    assert VerifyingKey.read(tmp_path / "x.vk") == vk
    with pytest.raises(EncodingError):
        VerifyingKey.from_bytes(data + b"\0")
    with pytest.raises(EncodingError):
        VerifyingKey.from_bytes(data[:-1])


def test_params_round_trip(params: Parameters, tmp_path: Path) -> None:
    path = tmp_path / "x.params"
    params.write(path)
    raw = path.read_bytes()
    assert raw == params.to_bytes()
    back = Parameters.read(path)
    assert back.to_bytes() == raw
    for name in ("h", "l", "a", "b_g1", "b_g2"):
        np.testing.assert_array_equal(getattr(back, name), getattr(params, name))
    assert Parameters.from_buffer(memoryview(raw + b"trailing")).to_bytes() == raw  # trailing bytes ignored
    # a point at infinity in a query is rejected, as bellperson's reader does
    vk_len = len(params.vk.to_bytes())
    bad = bytearray(raw)
    bad[vk_len + 4 : vk_len + 4 + 96] = bytes([0x40]) + bytes(95)
    with pytest.raises(EncodingError, match="infinity"):
        Parameters.from_buffer(memoryview(bytes(bad)))
    # a coordinate changed: off the curve
    bad = bytearray(raw)
    bad[vk_len + 4 + 95] ^= 1
    with pytest.raises(EncodingError):
        Parameters.from_buffer(memoryview(bytes(bad)))


def test_proof_bytes(params: Parameters) -> None:
    g1, g2 = G1.generator(), G2.generator()
    p = Proof(g1, g2, G1.double(g1))
    raw = p.to_bytes()
    assert len(raw) == PROOF_BYTES and Proof.from_bytes(raw) == p
    with pytest.raises(EncodingError):
        Proof.from_bytes(raw[:191])
    with pytest.raises(EncodingError, match="infinity"):
        Proof.from_bytes(bytes([0xC0]) + bytes(47) + raw[48:])
    assert split_proofs(raw * 3) == [raw] * 3
    with pytest.raises(EncodingError):
        split_proofs(raw + b"x")
