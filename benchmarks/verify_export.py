"""Check the proofs `psagent bench e2e --export DIR` wrote, independently of the engine and of our verifier.

Nothing of gpu.* is used: the verifying key's uncompressed points are read with Python integers (flags,
canonical coordinates, on the curve), turned into compressed encodings and handed to pyblst (blst, the
library Filecoin verifies with: its decoder checks the subgroup); the public inputs are recomputed in this
process from the C1 (porep.public_inputs, which never touches the circuit) and must equal the exported ones;
every partition of every proof file must satisfy
    e(A, B) == e(alpha, beta) * e(IC_0 + sum x_i IC_i, gamma) * e(C, delta)
and, as a control, must fail with its first public input changed.

Usage: python benchmarks/verify_export.py DIR --c1 C1.json [--json OUT]   (exit 0 iff every check passes)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyblst import BlstP1Element, BlstP2Element, final_verify, miller_loop  # noqa: E402

P = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
FQ = 48


def _fq(b: bytes) -> int:
    v = int.from_bytes(b, "big")
    if v >= P:
        raise ValueError("non-canonical coordinate")
    return v


def _larger(y: int) -> bool:
    return y > P - y


def g1_uncompressed(b: bytes) -> BlstP1Element:
    """96-byte zcash uncompressed G1 point -> pyblst (via its compressed form, after our own checks)."""
    if len(b) != 2 * FQ or b[0] & 0xE0:
        raise ValueError("not an uncompressed, finite G1 point")
    x, y = _fq(b[:FQ]), _fq(b[FQ:])
    if (y * y - x * x * x - 4) % P:
        raise ValueError("G1 point off the curve")
    comp = bytearray(b[:FQ])
    comp[0] |= 0x80 | (0x20 if _larger(y) else 0)
    return BlstP1Element.uncompress(bytes(comp))


def _f2mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)


def g2_uncompressed(b: bytes) -> BlstP2Element:
    """192-byte zcash uncompressed G2 point (x.c1 x.c0 y.c1 y.c0) -> pyblst."""
    if len(b) != 4 * FQ or b[0] & 0xE0:
        raise ValueError("not an uncompressed, finite G2 point")
    x = (_fq(b[FQ : 2 * FQ]), _fq(b[:FQ]))
    y = (_fq(b[3 * FQ :]), _fq(b[2 * FQ : 3 * FQ]))
    lhs = _f2mul(y, y)
    rhs = _f2mul(_f2mul(x, x), x)
    if ((lhs[0] - rhs[0] - 4) % P, (lhs[1] - rhs[1] - 4) % P) != (0, 0):
        raise ValueError("G2 point off the curve")
    sign = _larger(y[1]) if y[1] else _larger(y[0])
    comp = bytearray(b[: 2 * FQ])
    comp[0] |= 0x80 | (0x20 if sign else 0)
    return BlstP2Element.uncompress(bytes(comp))


def read_vk(raw: bytes) -> dict[str, object]:
    """bellperson's .vk: alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2 u32-BE ic_len ic."""
    g1, g2 = 2 * FQ, 4 * FQ
    pos = 0
    out: dict[str, object] = {}
    for name, size in (("alpha", g1), ("beta_g1", g1), ("beta", g2), ("gamma", g2), ("delta_g1", g1),
                       ("delta", g2)):
        chunk = raw[pos : pos + size]
        out[name] = g1_uncompressed(chunk) if size == g1 else g2_uncompressed(chunk)
        pos += size
    n = int.from_bytes(raw[pos : pos + 4], "big")
    pos += 4
    out["ic"] = [g1_uncompressed(raw[pos + i * g1 : pos + (i + 1) * g1]) for i in range(n)]
    if pos + n * g1 != len(raw):
        raise ValueError(f"vk is {len(raw)} bytes, its layout says {pos + n * g1}")
    return out


def check(vk: dict[str, object], proof: bytes, inputs: list[int]) -> bool:
    ic = vk["ic"]
    assert isinstance(ic, list)
    if len(inputs) + 1 != len(ic):
        raise ValueError(f"{len(inputs)} inputs for a key with {len(ic) - 1}")
    acc = ic[0]
    for x, p in zip(inputs, ic[1:], strict=True):
        if not 0 <= x < R:
            raise ValueError("non-canonical input")
        if x:
            acc = acc + p.scalar_mul(x)
    a = BlstP1Element.uncompress(proof[:48])
    b = BlstP2Element.uncompress(proof[48:144])
    c = BlstP1Element.uncompress(proof[144:192])
    rhs = miller_loop(vk["alpha"], vk["beta"]) * miller_loop(acc, vk["gamma"]) * miller_loop(c, vk["delta"])
    return bool(final_verify(miller_loop(a, b), rhs))


def recompute_inputs(c1_path: Path, meta: dict[str, object]) -> list[list[int]]:
    """Every partition's public inputs from the request's public values, in this process."""
    raw = c1_path.read_bytes()
    if meta.get("snap"):
        from market.proofdata import ProofData
        from porep.snap.partition import update_public_inputs

        return update_public_inputs(ProofData.parse(raw).snap)
    from porep import ids
    from porep import public_inputs as pi
    from porep.c1 import SealCommitPhase1Output

    try:
        c1 = SealCommitPhase1Output.from_json(raw)
    except ValueError:
        from market.proofdata import ProofData

        c1 = ProofData.parse(raw).porep
    miner, sector = meta.get("miner"), meta.get("sector")
    if miner is None or sector is None:
        return [list(v) for v in pi.from_c1(c1)]
    return [
        list(v)
        for v in pi.record_inputs(
            c1.proof_type, prover_id=ids.prover_id(int(miner)), sector_id=int(sector), ticket=c1.ticket,
            seed=c1.seed, comm_d=c1.comm_d, comm_r=c1.comm_r,
        )
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--c1", type=Path, required=True, help="the C1 (or ProofData) the proofs are for")
    ap.add_argument("--json", type=Path, help="write the verdicts here")
    args = ap.parse_args()
    meta = json.loads((args.dir / "meta.json").read_text())
    exported = [[int(x) for x in xs] for xs in json.loads((args.dir / "inputs.json").read_text())]
    inputs = recompute_inputs(args.c1, meta)
    same = inputs == exported
    vk = read_vk((args.dir / "vk").read_bytes())
    proofs = sorted(args.dir.glob("proof-*.bin"))
    n = int(meta["partitions"])
    verdicts: dict[str, list[bool]] = {}
    controls_rejected = True
    for pf in proofs:
        data = pf.read_bytes()
        if len(data) != 192 * n:
            verdicts[pf.name] = [False] * n
            continue
        verdicts[pf.name] = [check(vk, data[192 * k : 192 * (k + 1)], inputs[k]) for k in range(n)]
        bad = [(inputs[0][0] + 1) % R, *inputs[0][1:]]
        controls_rejected &= not check(vk, data[:192], bad)
    ok = same and bool(proofs) and controls_rejected and all(all(v) for v in verdicts.values())
    summary = {
        "proof_type": meta["proof_type"],
        "inputs_recomputed_equal_exported": same,
        "proof_files": len(proofs),
        "partitions": n,
        "verified": {k: f"{sum(v)}/{len(v)}" for k, v in verdicts.items()},
        "changed_input_rejected": controls_rejected,
        "ok": ok,
    }
    print(json.dumps(summary))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
