"""SnapDeals end to end on one machine, each stage timed: seal a CC sector, update it with random data
(porep.snap.update), strict check, development parameters for the update circuit (GPU or CPU setup), then
per partition the assignment (porep.snap.partition, Python synthesis), a Groth16 proof and a pyblst check
against the public inputs computed from the request's commitments (never from the circuit).

    python benchmarks/snap_e2e.py --size 2KiB --backend cuda [--params-dir DIR] [--partitions N]

Prints one JSON line per stage and a final summary line; exits 1 if any partition fails to verify. With
``--params-dir`` the parameters are reused when present (Filecoin's names, ``UpdateProofType.param_stem``).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path


def _say(**row: object) -> None:
    print(json.dumps(row), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="2KiB", choices=["2KiB", "8MiB"])
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--params-dir", type=Path, default=Path("/tmp/psagent-snap-params"))
    ap.add_argument("--partitions", type=int, default=None, help="prove only the first N partitions")
    args = ap.parse_args()

    from gpu.device import get_device, resolve_backend
    from gpu.groth16.params import Parameters, VerifyingKey
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.setup import generate_file
    from gpu.groth16.verifier import verify
    from gpu.placement import Backend
    from market.proofdata import Snap
    from porep.fr32 import pad_to_sector, unpadded_size
    from porep.ids import prover_id
    from porep.seal import seal
    from porep.snap.partition import update_assignment, update_public_inputs, update_r1cs
    from porep.snap.update import update_sector
    from porep.snap.verify import check_request

    backend = resolve_backend(args.backend)
    device = get_device(0) if backend is Backend.cuda else None
    t = time.perf_counter()
    ticket = secrets.token_bytes(32)
    cc = seal(f"StackedDrg{args.size}V1_1", prover_id(1000), 2, ticket, piece=b"", miner=1000)
    size = cc.proof_type.sector_size
    _say(stage="seal_cc", seconds=round(time.perf_counter() - t, 2))
    t = time.perf_counter()
    upd = update_sector(cc, pad_to_sector(secrets.token_bytes(unpadded_size(size)), size))
    assert upd.proof_type is not None
    pt = upd.proof_type
    snap = Snap(int(pt.id), upd.comm_r_old, upd.comm_r_new, upd.comm_d_new,
                tuple(p.to_bytes() for p in upd.partition_proofs()))
    check_request(snap)
    _say(stage="update+vanilla+check", seconds=round(time.perf_counter() - t, 2), proof=pt.name)

    t = time.perf_counter()
    r1cs = update_r1cs(pt)
    _say(stage="blank_r1cs", seconds=round(time.perf_counter() - t, 2), constraints=r1cs.num_constraints,
         aux=r1cs.num_aux, domain_log=r1cs.domain_log)
    args.params_dir.mkdir(parents=True, exist_ok=True)
    params_path = args.params_dir / f"{pt.param_stem}.params"
    vk_path = args.params_dir / f"{pt.param_stem}.vk"
    if not (params_path.is_file() and vk_path.is_file()):
        t = time.perf_counter()
        vk = generate_file(r1cs, params_path, backend=backend, device=device).vk
        vk.write(vk_path)
        _say(stage="setup", seconds=round(time.perf_counter() - t, 2), backend=str(backend))
    t = time.perf_counter()
    pk = ProvingKey(Parameters.read(params_path, subgroup_check=False), r1cs.density(), backend=backend,
                    device=device)
    vk = VerifyingKey.read(vk_path)
    _say(stage="load_key", seconds=round(time.perf_counter() - t, 2))

    inputs = update_public_inputs(snap)
    ok = []
    n = pt.partitions if args.partitions is None else min(args.partitions, pt.partitions)
    for k in range(n):
        t = time.perf_counter()
        w = update_assignment(snap, k)
        tw = time.perf_counter() - t
        t = time.perf_counter()
        (proof,) = prove(pk, Assignment.from_r1cs(r1cs, w))
        tp = time.perf_counter() - t
        good = bool(verify(vk, proof.to_bytes(), inputs[k]))
        ok.append(good)
        _say(stage="partition", k=k, witness_s=round(tw, 2), groth16_s=round(tp, 3), verified=good)
    _say(summary=pt.name, partitions=n, verified=sum(ok), backend=str(backend))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
