#!/usr/bin/env bash
# Runs on the GPU machine (device tool), from the repository root, with .whl/ carried (scripts/device_wheels.sh):
#   bash benchmarks/device_suite.sh STAGE...      stages: env ptx tests field curve msm20 msm22 msm24 sweep24 bits27 g2
# Logs and JSON are packed into $OUT/results.tgz (the device tool returns at most 8 files) with summary.log
# beside it. Kernels compiled by one stage are cached (fresh NUMBA_CACHE_DIR) for the next.
set -uo pipefail
FINAL_OUT=${OUT:-/tmp/psagent-out}
OUT=/tmp/psagent-work
rm -rf "$OUT"
mkdir -p "$OUT" "$FINAL_OUT"
trap 'tar czf "$FINAL_OUT/results.tgz" -C "$OUT" . ; cp "$OUT/summary.log" "$FINAL_OUT/" 2>/dev/null' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >"$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PSAGENT_REAL_CUDA=1 PSAGENT_NUMBA_CACHE=1
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/psagent-numba-cache}
unset NUMBA_ENABLE_CUDASIM
B="python3 benchmarks/gpu_bench.py"
T=${STAGE_TIMEOUT:-420}
run() {  # run NAME CMD...: time-limited, tee'd to $OUT/NAME.log, status line in $OUT/summary.log
    local name=$1; shift
    local t0=$SECONDS
    timeout "$T" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "stage $name rc=$rc $((SECONDS - t0))s" | tee -a "$OUT/summary.log"
    tail -n 6 "$OUT/$name.log"
}
for stage in "$@"; do
    case $stage in
        env) { nvidia-smi; python3 -c "import numba, numpy, numba_cuda; print(numba.__version__, numpy.__version__, numba_cuda.__version__)"; } >"$OUT/env.log" 2>&1; head -20 "$OUT/env.log" ;;
        ptx) run ptx python3 benchmarks/kernel_resources.py --device-check --no-probes --json "$OUT/kernel_resources.json" ;;
        tests) run tests python3 -m pytest -p no:cacheprovider -q -x tests/gpu/arith/test_fields_cuda.py \
                   tests/gpu/curves/test_curves_cuda.py tests/gpu/msm/test_msm_cuda.py --durations=15 ;;
        field) run field $B field --json "$OUT/field.json" ;;
        curve) run curve $B curve --json "$OUT/curve.json" ;;
        msm20) run msm20 $B msm --log2n 20 --cpu-check --json "$OUT/msm20.json" ;;
        msm22) run msm22 $B msm --log2n 22 --json "$OUT/msm22.json" ;;
        msm24) run msm24 $B msm --log2n 24 --json "$OUT/msm24.json" ;;
        sweep24) run sweep24 $B msm --log2n 24 --windows ${SWEEP:-14 15 16 17 18} --reps 5 --json "$OUT/sweep24.json" ;;
        bits27) run bits27 $B msm --log2n 27 --kind bits --json "$OUT/bits27.json" ;;
        final) run final $B msm --log2n 20 22 24 --period-log2 20 --reps 5 --json "$OUT/final.json"
               run bits $B msm --log2n 27 --kind bits --period-log2 20 --reps 5 --json "$OUT/bits.json" ;;
        g2) run g2 $B msm --group g2 --log2n ${G2LOG:-22} --json "$OUT/g2.json" ;;
        *) echo "unknown stage $stage"; exit 2 ;;
    esac
done
cat "$OUT/summary.log"
