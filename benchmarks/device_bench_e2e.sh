#!/usr/bin/env bash
# C1 -> verified proof through the product's own pipeline (`psagent bench e2e`, the code of `psagent prove` and
# the agent: pre-compiled circuit + vectorised witness + Groth16 + pairing check), in one device call, from the
# repository root:
#   seal a SIZE (2KiB default, or 8MiB) sector -> c1 make -> params generate --backend PARAMS_BACKEND (cuda
#   default; timed) -> bench e2e --backend cuda --warm-runs WARM (cold then warm, per-stage seconds, RSS and
#   device-memory peaks) -> psagent verify of the proof in a fresh process.
# Needs the wheels of `scripts/device_wheels.sh --full` carried in .whl/. Bounded by TOTAL_S (default 420 s).
# Results: $OUT/bench_e2e.log and $OUT/bench_e2e.json.
set -uo pipefail
START=$SECONDS
TOTAL_S=${TOTAL_S:-420}
SIZE=${SIZE:-2KiB}
WARM=${WARM:-5}
OUTD=${OUT:-/tmp/psagent-out}
W=/tmp/psagent-bench-e2e
rm -rf "$W"; mkdir -p "$W" "$OUTD"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl >"$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 1; }
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 PSAGENT_REAL_CUDA=1
export PSAGENT_CACHE_DIR=$W/cache PYTHONWARNINGS=ignore
unset NUMBA_ENABLE_CUDASIM
exec > >(tee "$OUTD/bench_e2e.log") 2>&1
psagent() { python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()' "$@"; }
left() { echo $((TOTAL_S - (SECONDS - START))); }
step() { echo "== $1 ($((SECONDS - START)) s elapsed)"; }
TIMEV=(); [[ -x /usr/bin/time ]] && TIMEV=(/usr/bin/time -v)

step "seal $SIZE + c1 make"
psagent seal --registered-proof "StackedDrg${SIZE}V1_1" --sector 1 --miner 1000 \
    --ticket "$(printf '07%.0s' {1..32})" --random-piece --out "$W/sector" --no-progress || exit 1
psagent c1 make "$W/sector" --seed "$(printf '09%.0s' {1..32})" --out "$W/c1.json" || exit 1
step "params generate --sector-size $SIZE --backend ${PARAMS_BACKEND:-cuda}"
t0=$SECONDS
timeout $(( $(left) - 150 )) "${TIMEV[@]}" python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()' \
    params generate --sector-size "$SIZE" --backend "${PARAMS_BACKEND:-cuda}" --out "$W/params" \
    || { echo "params generate --backend ${PARAMS_BACKEND:-cuda} FAILED: falling back to the CPU setup"; rm -rf "$W/params"
         psagent params generate --sector-size "$SIZE" --backend cpu --out "$W/params" || exit 1; }
echo "params generate: $((SECONDS - t0)) s"
ls -la "$W/params"
step "bench e2e --backend cuda --warm-runs $WARM"
timeout $(( $(left) - 30 )) "${TIMEV[@]}" python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()' \
    bench e2e --c1 "$W/c1.json" --backend cuda --params-dir "$W/params" --warm-runs "$WARM" \
    --json-out "$OUTD/bench_e2e.json"
echo "bench e2e rc=$?"
step "psagent prove + verify in fresh processes"
FIL_PROOFS_PARAMETER_CACHE="$W/params" timeout $(( $(left) - 5 )) bash -c '
  python3 -c "import sys; from agent.cli import main; sys.argv[0] = \"psagent\"; main()" prove "$0/c1.json" --miner 1000 --sector 1 --backend cuda --out "$0/proof.bin" &&
  python3 -c "import sys; from agent.cli import main; sys.argv[0] = \"psagent\"; main()" verify "$0/c1.json" --proof "$0/proof.bin" --miner 1000 --sector 1' "$W"
echo "rc=$? total $((SECONDS - START)) s"
