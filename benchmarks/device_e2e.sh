#!/usr/bin/env bash
# PoRep C2 end to end on the GPU machine (SIZE=2KiB default, or 8MiB), in one device call, from the repository root:
#   seal a SIZE sector -> c1 make -> params generate --sector-size SIZE (timed, 16 cores) -> in ONE process:
#   prove on CUDA (cold, then warm, median of REPS), every proof checked with the pairing against public inputs
#   computed without the circuit, and by `psagent verify` in a fresh process -> CPU proofs of the same C1 until
#   CPU_S seconds are spent (fresh r, s each; all must verify).
# Needs the wheels of `scripts/device_wheels.sh --full` carried in .whl/. Bounded by TOTAL_S (default 540 s).
# Results: $OUT/e2e.log and $OUT/e2e.json.
set -uo pipefail
START=$SECONDS
SIZE=${SIZE:-2KiB}
TOTAL_S=${TOTAL_S:-540}
OUTD=${OUT:-/tmp/psagent-out}
W=/tmp/psagent-e2e
rm -rf "$W"; mkdir -p "$W" "$OUTD"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl >"$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 PSAGENT_REAL_CUDA=1
export PSAGENT_NUMBA_CACHE=1 NUMBA_CACHE_DIR=/tmp/psagent-numba-e2e
unset NUMBA_ENABLE_CUDASIM
exec > >(tee "$OUTD/e2e.log") 2>&1
psagent() { python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()' "$@"; }
left() { echo $((TOTAL_S - (SECONDS - START))); }
step() { echo "== $1 ($(($SECONDS - START)) s elapsed)"; }

step seal
psagent seal --registered-proof "StackedDrg${SIZE}V1_1" --sector 1 --miner 1000 --ticket "$(printf '07%.0s' {1..32})" \
    --random-piece --out "$W/sector" --no-progress || exit 1
psagent c1 make "$W/sector" --seed "$(printf '09%.0s' {1..32})" --out "$W/c1.json" || exit 1
step "params generate --sector-size $SIZE"
t0=$SECONDS
timeout $(( $(left) - 200 )) python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()' \
    params generate --sector-size "$SIZE" --out "$W/params" || exit 1
echo "params generate: $((SECONDS - t0)) s"
ls -la "$W/params"
step "prove (one process: CUDA cold/warm, then CPU)"
timeout $(( $(left) - 40 )) python3 - "$W" "${REPS:-3}" "${CPU_S:-90}" "$OUTD/e2e.json" <<'PY'
# The loop of agent.cli.prove.prove_work, with each stage timed and printed as it ends. The parameters were
# generated above in this run, so they are read without the per-point subgroup check (an official file is
# checked once, not per process: measured here, the check of ~10M points is minutes on the CPU).
import json, statistics, sys, time
from pathlib import Path
from agent.cli.common import Backend
from agent.cli.prove import load_work
from agent.proving.parameters import params_paths
from gpu.groth16.params import Parameters
from gpu.groth16.prover import Assignment, ProvingKey, prove
from gpu.groth16.verifier import verify
from porep.circuit.stacked import synthesize_c1

def say(*a):
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)

w, reps, cpu_s, out = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
work = load_work(w / "c1.json", "1000", 1)
path, _ = params_paths(w / "params", work.proof_type)
t = time.perf_counter(); params = Parameters.read(path, subgroup_check=False); say(f"params read {time.perf_counter() - t:.1f} s")
inputs = [list(v) for v in work.public_inputs]  # computed once, when the input was read
res = {"cuda": [], "cuda_ok": [], "cpu": [], "cpu_ok": [], "stages": []}
keys = {}

def one(backend):
    t0 = time.perf_counter()
    cs = synthesize_c1(work.c1, 0); t1 = time.perf_counter()
    r1cs = cs.to_r1cs(); wit = cs.witness_array(); del cs; t2 = time.perf_counter()
    if backend not in keys:
        keys[backend] = ProvingKey(params, r1cs.density(), backend=backend.value, device=0 if backend is Backend.cuda else None)
        say(f"{backend.value} proving key ready {time.perf_counter() - t2:.1f} s")
    t3 = time.perf_counter()
    asg = Assignment.from_r1cs(r1cs, wit); t4 = time.perf_counter()
    timings = []
    (proof,) = prove(keys[backend], asg, timings=timings); t5 = time.perf_counter()
    ok = verify(params.vk, proof.to_bytes(), inputs[0]); t6 = time.perf_counter()
    st = {"synthesis": t1 - t0, "r1cs+witness": t2 - t1, "a/b/c": t4 - t3, "prove": t5 - t4, "verify": t6 - t5,
          "total_excl_key": (t6 - t0) - (t3 - t2)}
    st.update({k: v for k, v in timings[0].items() if isinstance(v, float)})
    return proof.to_bytes(), bool(ok), st

for i in range(reps + 1):
    data, ok, st = one(Backend.cuda)
    res["cuda"].append(st["prove"]); res["cuda_ok"].append(ok); res["stages"].append(st)
    say(f"cuda proof {i}: verified={ok} " + ", ".join(f"{k} {v:.3f}" for k, v in st.items()))
    if i == 0:
        (w / "proof.bin").write_bytes(data)
t_end = time.perf_counter() + cpu_s
while time.perf_counter() < t_end:
    data, ok, st = one(Backend.cpu)
    res["cpu"].append(st["prove"]); res["cpu_ok"].append(ok)
    say(f"cpu proof {len(res['cpu'])}: verified={ok} prove {st['prove']:.2f} s")
warm = res["cuda"][1:]
res["summary"] = {"cuda_prove_cold_s": res["cuda"][0], "cuda_prove_warm_median_s": statistics.median(warm) if warm else None,
                  "cuda_verified": f"{sum(res['cuda_ok'])}/{len(res['cuda_ok'])}",
                  "cpu_verified": f"{sum(res['cpu_ok'])}/{len(res['cpu_ok'])}",
                  "cpu_prove_median_s": statistics.median(res["cpu"]) if res["cpu"] else None}
say(json.dumps(res["summary"]))
Path(out).write_text(json.dumps(res, indent=1))
PY
step "psagent verify in a fresh process"
FIL_PROOFS_PARAMETER_CACHE="$W/params" psagent verify "$W/c1.json" --proof "$W/proof.bin" --miner 1000 --sector 1
echo "rc=$? total $((SECONDS - START)) s"
