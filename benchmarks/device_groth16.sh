#!/usr/bin/env bash
# P5 (NTT) and P6 (Groth16) on the GPU machine, from the repository root, in one device call:
#   bash benchmarks/device_groth16.sh [STEP...]     steps (default: all, in this order):
#     env      nvidia-smi + versions
#     tests    GPU correctness (TESTS_EXTRA: more test files; TESTS_NTT="" leaves the NTT tests out; TESTS_K: -k), PSAGENT_REAL_CUDA=1, -k "cuda or large", Groth16 first (2026-12-03: the old NTT-first
#              order spent the 230 s on compiling NTT tests): tests/gpu/groth16/test_groth16_prove.py (CUDA == CPU proof
#              bytes; a 300,000-constraint synthetic circuit set up, proved on the GPU and verified with pyblst),
#              then tests/gpu/ntt/test_ntt.py (CUDA vs CPU up to 2^22, every order/direction/coset); TESTS_S = limit
#     ab       Fq/Fr mul and G1 madd throughput with PSAGENT_PROVER__PTX=off and =evenodd (generated limb code vs PTX
#              carry chains; runs named 0 and 1)
#     mul      the same with PSAGENT_PROVER__PTX=cios and =evenodd (row-wise CIOS vs even/odd split PTX product)
#     xfer     host -> device copy rates (benchmarks/transfer_bench.py, XFER_GIB GiB): memcpy, pageable, staging, pinned
#     ntt      psagent bench ntt --backend cuda, 2^20 2^22 2^24 2^27 with the H step (checked vs CPU <= 2^22)
#     prove20  psagent bench prove, 2^20 - 16 constraints (domain 2^20), real setup, proofs verified (pyblst)
#     batch20  4 circuits of 2^20 - 16 constraints per batch (real setup, all proofs verified)
#     prove24  same at 2^24 - 16 with PSEUDO-RANDOM BASES (timing only, proof not valid)
#     batch24  4 circuits of 2^24 - 16 per batch, pseudo-random bases
#     prove27  same at 2^27 - 16 (PoRep partition scale), pseudo-random bases; skipped below 120 GB GPU memory
#     prove27p the same with the assignment in pageable host memory (uploads through staging); the other prove
#              steps keep it in pinned memory (the default of bench prove --host-memory)
#     spmv     A.w, B.w, C.w on the device (gpu.groth16.spmv_cuda; not in the default list): its tests on the GPU
#              (== R1CS.evaluate, device-path proof == CPU bytes; SPMV_TESTS_S), then benchmarks/spmv_bench.py on a
#              real 2KiB partition and synthetic 32GiB-like systems of SPMV_ROWS rows (default 16000000,130278869),
#              device vs CPU time, results checked equal (spmv.json)
# Assumes the wheels of scripts/device_wheels.sh: installed into /tmp/site with PYTHONPATH set, or carried in .whl/
# (then installed here). Every step is bounded by `timeout` and by a global deadline (TOTAL_S, default 530 s), so
# the whole run stays under 9 minutes; logs + JSON are packed into $OUT/groth16-results.tgz, with summary.log.
set -uo pipefail
START=$SECONDS
TOTAL_S=${TOTAL_S:-530}
FINAL_OUT=${OUT:-/tmp/psagent-out}
WORK=/tmp/psagent-groth16
rm -rf "$WORK"
mkdir -p "$WORK" "$FINAL_OUT"
trap 'tar czf "$FINAL_OUT/groth16-results.tgz" -C "$WORK" . ; cp "$WORK/summary.log" "$FINAL_OUT/" 2>/dev/null' EXIT
if ! python3 -c "import numpy, pyblst, pytest; assert numpy.__version__ < '2.5'" 2>/dev/null; then
    if ls .whl/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            .whl/*.whl >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; exit 1; }
    fi
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 PSAGENT_REAL_CUDA=1 PSAGENT_NUMBA_CACHE=1
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/psagent-numba-cache-ptx-${PSAGENT_PROVER__PTX:-evenodd}}  # the cache does not see the PTX choice
unset NUMBA_ENABLE_CUDASIM
B=(python3 benchmarks/groth16_bench.py)  # the code of `psagent bench ntt|prove`, without typer/pydantic

run() {  # run NAME MAX_S CMD...: bounded by MAX_S and by what is left of TOTAL_S
    local name=$1 max=$2; shift 2
    local left=$((TOTAL_S - (SECONDS - START) - 5))
    local lim=$(( max < left ? max : left ))
    if (( lim < 20 )); then echo "step $name SKIPPED (time budget spent)" | tee -a "$WORK/summary.log"; return; fi
    local t0=$SECONDS
    timeout --kill-after=10 "$lim" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    echo "step $name rc=$rc $((SECONDS - t0))s (limit ${lim}s)" | tee -a "$WORK/summary.log"
    tail -n 25 "$WORK/$name.log"
}

gpu_mem_gb() {
    nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1 | awk '{print int($1/1024)}'
}

STEPS=("$@")
(( ${#STEPS[@]} )) || STEPS=(env tests ntt prove20 prove24 prove27)
for step in "${STEPS[@]}"; do
    case $step in
        env) { nvidia-smi; python3 -c "import numba, numpy, numba_cuda, sys; print(sys.version); \
print('numba', numba.__version__, 'numpy', numpy.__version__, 'numba-cuda', numba_cuda.__version__)"; \
               git log --oneline -1 2>/dev/null; nproc; free -g; } >"$WORK/env.log" 2>&1; head -30 "$WORK/env.log" ;;
        tests) PSAGENT_TEST_NPOW=22 PSAGENT_TEST_CONSTRAINTS=300000 \
               run tests ${TESTS_S:-230} python3 -m pytest -p no:cacheprovider -v tests/gpu/test_transfer.py \
                   tests/gpu/groth16/test_groth16_prove.py ${TESTS_EXTRA:-} ${TESTS_NTT-tests/gpu/ntt/test_ntt.py} \
                   -k "${TESTS_K:-cuda or large or upload or batch or pinned}" \
                   --durations=15 ;;
        ab) for v in 0 1; do  # PTX carry-chain Montgomery product off/on (gpu.arith.montgomery_ptx); own Numba caches
                ptx=off; [[ $v == 1 ]] && ptx=evenodd
                run field$v 90 env PSAGENT_PROVER__PTX=$ptx NUMBA_CACHE_DIR=/tmp/psagent-ab$v python3 benchmarks/gpu_bench.py \
                    field --json "$WORK/field$v.json"
                run madd$v 90 env PSAGENT_PROVER__PTX=$ptx NUMBA_CACHE_DIR=/tmp/psagent-ab$v python3 benchmarks/madd_quick.py 20 32
            done ;;
        mul) for v in cios evenodd; do  # the two PTX Montgomery products (gpu.arith.montgomery_ptx); own Numba caches
                run field-$v 90 env PSAGENT_PROVER__PTX=$v NUMBA_CACHE_DIR=/tmp/psagent-mul-$v python3 benchmarks/gpu_bench.py \
                    field --json "$WORK/field-$v.json"
                run madd-$v 90 env PSAGENT_PROVER__PTX=$v NUMBA_CACHE_DIR=/tmp/psagent-mul-$v python3 benchmarks/madd_quick.py 20 32
            done ;;
        xfer) run xfer 90 python3 benchmarks/transfer_bench.py --gib ${XFER_GIB:-2} --reps 3 --json "$WORK/xfer.json" ;;
        ntt) run ntt 120 "${B[@]}" ntt --backend cuda --sizes 20,22,24,27 --h-step --reps 5 --warmup 1 \
                 --check-max 22 --json "$WORK/ntt.json" ;;
        prove20) run prove20 150 "${B[@]}" prove --backend cuda --constraints 1048560 --reps 3 \
                     --real-setup --export "$WORK/export20" --json "$WORK/prove20.json" ;;
        batch20) run batch20 ${B20_S:-200} "${B[@]}" prove --backend cuda --constraints 1048560 --reps 2 \
                     --real-setup --circuits 4 --json "$WORK/batch20.json" ;;
        batch24) run batch24 ${B24_S:-200} "${B[@]}" prove --backend cuda --constraints 16777200 --reps 1 \
                     --pseudo-random-bases --circuits 4 --json "$WORK/batch24.json" ;;
        prove24) run prove24 120 "${B[@]}" prove --backend cuda --constraints 16777200 --reps 2 \
                     --pseudo-random-bases --json "$WORK/prove24.json" ;;
        prove27) if (( $(gpu_mem_gb) >= 120 )); then
                     run prove27 ${P27_S:-240} "${B[@]}" prove --backend cuda --constraints 134217712 \
                         --reps 1 --warmup 1 --pseudo-random-bases --json "$WORK/prove27.json"
                 else
                     echo "step prove27 SKIPPED: $(gpu_mem_gb) GB GPU memory < 120 GB (resident 2^27 SRS ~50 GB +" \
                          "NTT 12 GiB + MSM buffers)" | tee -a "$WORK/summary.log"
                 fi ;;
        prove27p) run prove27p ${P27_S:-240} "${B[@]}" prove --backend cuda --constraints 134217712 \
                      --reps 1 --warmup 1 --pseudo-random-bases --host-memory pageable --json "$WORK/prove27p.json" ;;
        spmv) run spmv-tests ${SPMV_TESTS_S:-240} python3 -m pytest -p no:cacheprovider -v \
                  tests/gpu/groth16/test_spmv_cuda.py --durations=10
              run spmv ${SPMV_S:-300} python3 benchmarks/spmv_bench.py --porep 2KiB \
                  --rows ${SPMV_ROWS:-16000000,130278869} --reps 3 --json "$WORK/spmv.json" ;;
        *) echo "unknown step $step"; exit 2 ;;
    esac
done
echo "total $((SECONDS - START))s" | tee -a "$WORK/summary.log"
cat "$WORK/summary.log"
