"""Parameter load straight to the device (gpu.groth16.params_device.load_to_device +
ProvingKey.from_device_parameters, the agent's prover.params_to_device path) against the host reader
(Parameters.read without the subgroup check + ProvingKey's upload, the default): load and key times, one proof
with each key for the same r, s and the same assignment (the bytes must be equal: exit 1 otherwise), and the
host RSS peak of each, each mode in its own process so that the peaks are its own.

    python benchmarks/params_load_bench.py --params FILE.params --proof-type StackedDrg2KiBV1_1 [--json F]
        # a PoRep parameter file (psagent params generate): the partition R1CS, a random assignment
        # (94 % bits; not satisfying, so the proofs are compared but not verified)
    python benchmarks/params_load_bench.py --synthetic 100000 [--json F]
        # gpu.groth16.synthetic's circuit, parameters from setup.generate (test seed) written to a temp file:
        # the proofs are compared and both verified

Each mode loads the file twice (first: cold, kernels compiling on first use; second: warm page cache); the key
is built on the second load. ``--backend cpu`` proves on the CPU (the device mode needs CUDA).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _kernel_cache  # noqa: F401  (PSAGENT_NUMBA_CACHE as an engine option, before gpu compiles)


def _peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(mode: str, params: Path, work: Path, out: Path) -> None:
    """One mode in this process: two loads, the key, one proof; results as JSON in ``out``."""
    import numpy as np

    from gpu.device import devices
    from gpu.groth16.params import Parameters
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.r1cs import R1CS

    r1cs = R1CS.load(work / "r1cs")
    witness = np.load(work / "witness.npy")
    density = r1cs.density()
    dev = devices()[0]
    res: dict[str, object] = {"mode": mode, "rss_start": _peak_rss()}
    loads = []
    loaded = None
    for _ in range(2):
        loaded = None  # the first load's arrays are freed before the second
        t0 = time.perf_counter()
        if mode == "device":
            from gpu.groth16.params_device import load_to_device

            loaded = load_to_device(params, dev, h_bitrev=True)
            from numba import cuda

            with dev.use():
                cuda.synchronize()
        else:
            loaded = Parameters.read(params, subgroup_check=False)
        loads.append(time.perf_counter() - t0)
    res["load_s"] = loads
    res["rss_after_load"] = _peak_rss()
    t0 = time.perf_counter()
    if mode == "device":
        pk = ProvingKey.from_device_parameters(loaded, density, device=dev)  # type: ignore[arg-type]
    else:
        pk = ProvingKey(loaded, density, backend="cuda", device=dev)  # type: ignore[arg-type]  # keeps host
    res["key_s"] = time.perf_counter() - t0
    res["rss_after_key"] = _peak_rss()
    res["bases_points"] = int(sum(c.n for c in pk.ctx.values()))
    del loaded
    asg = Assignment.from_r1cs(r1cs, witness, device_spmv=False)
    ts: list[dict[str, float]] = []
    t0 = time.perf_counter()
    proof = prove(pk, asg, r=5, s=9, timings=ts)[0].to_bytes()
    res["prove_s"] = time.perf_counter() - t0  # includes kernel compilation in a cold process
    res["prove_phases"] = {k: round(v, 4) for k, v in ts[0].items() if "." not in k}
    res["proof"] = bytes(proof).hex()
    res["rss_peak"] = _peak_rss()
    free = dev.free_memory()
    res["device_free_after"] = free
    out.write_text(json.dumps(res))


def _prepare(args: argparse.Namespace, work: Path) -> tuple[Path, object, list[int] | None]:
    """The R1CS and witness (saved for the children) and the parameter file; the vk and public inputs when the
    witness satisfies the circuit."""
    import numpy as np

    if args.synthetic:
        from gpu.groth16.setup import generate
        from gpu.groth16.synthetic import SyntheticCircuit

        sc = SyntheticCircuit(args.synthetic, num_public=1, seed=1)
        r1cs = sc.r1cs()
        t0 = time.perf_counter()
        params = generate(r1cs, test_seed=7)
        path = work / "synthetic.params"
        params.write(path)
        print(f"setup.generate {args.synthetic} constraints: {time.perf_counter() - t0:.1f} s", flush=True)
        witness = sc.witness()
        vk: object = params.vk
        xs: list[int] | None = sc.public_inputs()
    else:
        from porep.circuit.partition import partition_r1cs
        from porep.prooftypes import proof_type

        t0 = time.perf_counter()
        r1cs = partition_r1cs(proof_type(args.proof_type), work / "cache")
        print(f"partition R1CS {args.proof_type}: {time.perf_counter() - t0:.1f} s", flush=True)
        rng = np.random.default_rng(1)
        n = r1cs.num_inputs + r1cs.num_aux
        witness = np.zeros((n, 8), dtype=np.uint32)
        witness[:, 0] = rng.integers(0, 2, size=n, dtype=np.uint32)  # bits
        full = rng.random(n) < 0.06
        witness[full] = rng.integers(0, 1 << 32, size=(int(full.sum()), 8), dtype=np.uint32)
        witness[full, 7] &= 0x0FFFFFFF  # canonical: below r
        witness[0] = 0
        witness[0, 0] = 1  # ONE
        path, vk, xs = Path(args.params), None, None
    r1cs.save(work / "r1cs")
    np.save(work / "witness.npy", witness)
    return path, vk, xs


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", help="a .params file (with --proof-type)")
    ap.add_argument("--proof-type", help="e.g. StackedDrg2KiBV1_1 (the partition R1CS of that type)")
    ap.add_argument("--synthetic", type=int, help="constraints of a synthetic circuit (parameters made here)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, params, work, out = args.child
        _child(mode, Path(params), Path(work), Path(out))
        return 0
    if not args.synthetic and not (args.params and args.proof_type):
        print("params_load_bench: give --params FILE --proof-type NAME, or --synthetic N", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="psagent-paramsload-") as tmp:
        work = Path(tmp)
        path, vk, xs = _prepare(args, work)
        size = path.stat().st_size
        print(f"parameter file {path}: {size / 1e9:.3f} GB", flush=True)
        results = {}
        for mode in ("host", "device"):
            out = work / f"{mode}.json"
            t0 = time.perf_counter()
            rc = subprocess.run(
                [sys.executable, __file__, "--child", mode, str(path), str(work), str(out)], env=os.environ
            ).returncode
            if rc != 0 or not out.is_file():
                print(f"{mode}: the child failed (rc {rc})", flush=True)
                return 1
            results[mode] = json.loads(out.read_text())
            r = results[mode]
            print(
                f"{mode:6}: load {r['load_s'][0]:.2f} s cold / {r['load_s'][1]:.2f} s warm, "
                f"key {r['key_s']:.2f} s, prove {r['prove_s']:.2f} s; host RSS peak after load "
                f"{r['rss_after_load'] / 2**30:.2f} GiB, after key {r['rss_after_key'] / 2**30:.2f} GiB, "
                f"whole run {r['rss_peak'] / 2**30:.2f} GiB (process {time.perf_counter() - t0:.1f} s)",
                flush=True,
            )
            print(f"        phases {r['prove_phases']}", flush=True)
        same = results["host"]["proof"] == results["device"]["proof"]
        print(f"proof bytes: {'EQUAL' if same else 'DIFFERENT'}", flush=True)
        verified = None
        if vk is not None and xs is not None:
            from gpu.groth16.verifier import verify

            verified = bool(verify(vk, bytes.fromhex(results["device"]["proof"]), xs))
            print(f"device-key proof verifies: {verified}", flush=True)
        if args.json:
            summary = {"file_bytes": size, "equal": same, "verified": verified, **results}
            Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
        return 0 if same and verified is not False else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
