"""The two opt-in device paths against the host paths, on one real circuit, in one process (P20 step 1):

  key     host: Parameters.read (no subgroup check) + ProvingKey's upload
          device: params_device.load_to_device (decoded on the GPU, H bit-reversed) + from_device_parameters
  A.w, B.w, C.w   host: R1CS.evaluate; device: spmv_cuda from the matrices resident on the key

Every combination proves the same assignment with the same r, s; all proofs must be the same bytes, equal to
the CPU backend's (``--cpu``), and verify against public inputs computed without the circuit. Times of the
load, the key and each proof's stages are reported. Exit 0 iff all equal and verified.

    python benchmarks/device_paths.py --c1 C1.json --params FILE.params --miner 1000 --sector 1 [--cpu]
        # a PoRep partition (partition 0 of the C1; its witness from the vectorised witness)
    python benchmarks/device_paths.py --synthetic 4096      # a synthetic circuit, setup.generate (test seed)

JSON on stdout (``--json F`` writes it too). Runs under NUMBA_ENABLE_CUDASIM=1 at small sizes (rehearsal).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

R_FIXED, S_FIXED = 5, 9


def _circuit(args: argparse.Namespace, tmp: Path) -> tuple[Any, Any, list[int], Path, str]:
    """(R1CS, witness, public inputs, .params path, label)."""
    if args.synthetic:
        from gpu.groth16.setup import generate_file
        from gpu.groth16.synthetic import SyntheticCircuit

        sc = SyntheticCircuit(args.synthetic, 2, seed=11)
        r1cs = sc.r1cs()
        path = tmp / "syn.params"
        generate_file(r1cs, path, test_seed=7)
        return r1cs, sc.witness(), sc.public_inputs(), path, f"synthetic {args.synthetic}"
    from agent.cli.prove import load_work, public_inputs
    from porep.circuit.partition import partition_assignment, partition_r1cs

    work = load_work(args.c1, args.miner, args.sector)
    pt = work.c1.proof_type
    cache = args.cache
    r1cs = partition_r1cs(pt, cache)
    witness = partition_assignment(work.c1, 0, cache_dir=cache)
    return r1cs, witness, public_inputs(work)[0], args.params, f"{pt.name} partition 0"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c1", type=Path)
    ap.add_argument("--params", type=Path)
    ap.add_argument("--miner")
    ap.add_argument("--sector", type=int)
    ap.add_argument("--cache", type=Path, help="PCE / witness template cache (default: none)")
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--cpu", action="store_true", help="also prove on the CPU backend (same r, s)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not args.synthetic and (args.c1 is None or args.params is None):
        ap.error("give --c1 and --params, or --synthetic N")

    from numba import cuda

    from gpu.device import devices
    from gpu.groth16.params import Parameters, VerifyingKey
    from gpu.groth16.params_device import load_to_device
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.verifier import verify

    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as td:
        t0 = time.perf_counter()
        r1cs, witness, inputs, params_path, label = _circuit(args, Path(td))
        res["circuit"] = label
        res["circuit_s"] = round(time.perf_counter() - t0, 3)
        res["constraints"] = r1cs.num_constraints_total
        dev = devices()[0]
        density = r1cs.density()
        vk_file = params_path.with_suffix(".vk")
        vk = VerifyingKey.read(vk_file) if vk_file.exists() else None

        t0 = time.perf_counter()
        host_params = Parameters.read(params_path, subgroup_check=False)
        res["host_read_s"] = round(time.perf_counter() - t0, 3)
        vk = vk or host_params.vk
        t0 = time.perf_counter()
        key_host = ProvingKey(host_params, density, backend="cuda", device=dev)
        res["host_key_s"] = round(time.perf_counter() - t0, 3)

        t0 = time.perf_counter()
        dparams = load_to_device(params_path, dev, h_bitrev=True)
        with dev.use():
            cuda.synchronize()
        res["device_load_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        key_dev = ProvingKey.from_device_parameters(dparams, density, device=dev)
        res["device_key_s"] = round(time.perf_counter() - t0, 3)

        t0 = time.perf_counter()
        asg_host = Assignment.from_r1cs(r1cs, witness, device_spmv=False)
        res["host_spmv_s"] = round(time.perf_counter() - t0, 3)
        asg_dev = Assignment.on_device(r1cs, witness)

        proofs: dict[str, bytes] = {}
        stages: dict[str, dict[str, float]] = {}
        combos = [
            ("host key + host SpMV", key_host, asg_host),
            ("host key + device SpMV", key_host, asg_dev),
            ("device key + host SpMV", key_dev, asg_host),
            ("device key + device SpMV", key_dev, asg_dev),
        ]
        for name, key, asg in combos:
            for rep in range(2):  # the first run of a combination compiles; the second is timed
                ts: list[dict[str, float]] = []
                (p,) = prove(key, asg, r=R_FIXED, s=S_FIXED, timings=ts)
                stages[name] = {k: round(v, 4) for k, v in ts[0].items()}
                proofs[name] = bytes(p.to_bytes())
                if rep == 0 and args.synthetic:
                    break  # the simulator: one run is enough
        if args.cpu:
            t0 = time.perf_counter()
            key_cpu = ProvingKey(host_params, density, backend="cpu")
            ts = []
            (p,) = prove(key_cpu, asg_host, r=R_FIXED, s=S_FIXED, timings=ts)
            proofs["cpu backend"] = bytes(p.to_bytes())
            stages["cpu backend"] = {k: round(v, 4) for k, v in ts[0].items()}
            res["cpu_prove_s"] = round(time.perf_counter() - t0, 3)
        ref = proofs["host key + host SpMV"]
        res["equal"] = {k: v == ref for k, v in proofs.items()}
        res["verified"] = {k: bool(verify(vk, v, inputs)) for k, v in proofs.items()}
        res["wrong_input_rejected"] = not verify(vk, ref, [(inputs[0] + 1), *inputs[1:]])
        res["stages"] = stages
    res["ok"] = all(res["equal"].values()) and all(res["verified"].values()) and res["wrong_input_rejected"]
    text = json.dumps(res)
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
