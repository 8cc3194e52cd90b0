#!/usr/bin/env bash
# P15 development parameters on the GPU (gpu.groth16.fixed_base_cuda), from the repository root, in one device call:
#   bash benchmarks/device_setup.sh [STEP...]     steps (default: env kernel p2k read2k):
#     env     nvidia-smi + versions
#     kernel  the fixed-base kernel alone: G1 at 2^20, 2^24, 2^27 and G2 at 2^22 (16-bit table, random scalars,
#             bytes produced and dropped), CHECK sampled products per size compared with pyblst
#             (benchmarks/setup_bench.py kernel; exit 1 on any mismatch)
#     p2k     psagent params generate --sector-size 2KiB --test-seed 7 with --backend cuda, then --backend cpu
#             (same toxic waste), both timed; the .params and .vk files must be equal byte for byte (cmp)
#     read2k  Parameters.read(subgroup_check=False) of the 2KiB file (host decode) and load_to_device (raw
#             bytes by mmap, decoded on the GPU), timed, checked equal
#     p32     (not default: ~47 GB on disk) params generate --sector-size 32GiB --backend cuda --test-seed 7
#     load2k  (not default) benchmarks/params_load_bench.py on the 2KiB file (p2k's, else generated on the GPU
#             here): load_to_device + ProvingKey.from_device_parameters vs Parameters.read + upload, each in its
#             own process (load cold/warm, key, one proof each: equal bytes required, host RSS peak of each)
#     p8m     (not default) params generate --sector-size 8MiB --backend cuda --test-seed 7
#     load8m  (not default) the same bench on the 8MiB file (p8m's, else generated on the GPU here)
#     loadsyn (not default) the same bench on a synthetic circuit of SYN_N (default 200000) constraints whose
#             parameters setup.generate makes on the CPU: both proofs verified as well
# Installs the wheels carried in .whl/ (scripts/device_wheels.sh) into /tmp/site. Every step is bounded by
# `timeout` and by TOTAL_S (default 560 s). Logs and JSON: $OUT/setup-results.tgz, summary in $OUT/summary.log.
set -uo pipefail
START=$SECONDS
TOTAL_S=${TOTAL_S:-560}
FINAL_OUT=${OUT:-/tmp/psagent-out}
WORK=/tmp/psagent-setup
rm -rf "$WORK"
mkdir -p "$WORK" "$FINAL_OUT"
trap 'tar czf "$FINAL_OUT/setup-results.tgz" --exclude="*.params" -C "$WORK" . ; cp "$WORK/summary.log" "$FINAL_OUT/" 2>/dev/null' EXIT
if ! python3 -c "import numpy, pyblst, typer; assert numpy.__version__ < '2.5'" 2>/dev/null; then
    if ls .whl/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            .whl/*.whl >"$WORK/pip.log" 2>&1 || { cat "$WORK/pip.log"; exit 1; }
    fi
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 PSAGENT_REAL_CUDA=1
export PSAGENT_NUMBA_CACHE=1 NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/psagent-numba-setup}
export PSAGENT_CACHE_DIR=$WORK/cache  # the PCE template cache of params generate --sector-size
unset NUMBA_ENABLE_CUDASIM
PSAGENT=(python3 -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()')
TIMEV=(); [[ -x /usr/bin/time ]] && TIMEV=(/usr/bin/time -v)  # peak RSS when GNU time is there

run() {  # run NAME MAX_S CMD...: bounded by MAX_S and by what is left of TOTAL_S
    local name=$1 max=$2; shift 2
    local left=$((TOTAL_S - (SECONDS - START) - 5))
    local lim=$(( max < left ? max : left ))
    if (( lim < 20 )); then echo "step $name SKIPPED (time budget spent)" | tee -a "$WORK/summary.log"; return 1; fi
    local t0=$SECONDS
    timeout --kill-after=10 "$lim" "$@" >"$WORK/$name.log" 2>&1
    local rc=$?
    echo "step $name rc=$rc $((SECONDS - t0))s (limit ${lim}s)" | tee -a "$WORK/summary.log"
    tail -n 20 "$WORK/$name.log"
    return $rc
}

STEPS=("$@")
(( ${#STEPS[@]} )) || STEPS=(env kernel p2k read2k)
for step in "${STEPS[@]}"; do
    case $step in
        env) { nvidia-smi; python3 -c "import numba, numpy, numba_cuda, sys; print(sys.version); \
print('numba', numba.__version__, 'numpy', numpy.__version__, 'numba-cuda', numba_cuda.__version__)"; \
               git log --oneline -1 2>/dev/null; nproc; free -g; df -h /tmp; } >"$WORK/env.log" 2>&1
             head -30 "$WORK/env.log" ;;
        kernel) run kernel ${KERNEL_S:-240} python3 benchmarks/setup_bench.py kernel --g1 "${G1_SIZES:-20,24,27}" \
                    --g2 "${G2_SIZES:-22}" --check "${CHECK:-48}" --json "$WORK/kernel.json" ;;
        p2k) for b in cuda cpu; do
                 run "p2k_$b" ${P2K_S:-200} "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size 2KiB \
                     --backend $b --test-seed 7 --out "$WORK/p2k_$b"
                 grep -E "Elapsed|Maximum resident" "$WORK/p2k_$b.log" | tee -a "$WORK/summary.log"
             done
             for f in params vk; do
                 a=$(ls "$WORK"/p2k_cuda/*.$f 2>/dev/null | head -1); b=$(ls "$WORK"/p2k_cpu/*.$f 2>/dev/null | head -1)
                 if [[ -n $a && -n $b ]] && cmp "$a" "$b"; then
                     echo "p2k .$f: cuda == cpu ($(stat -c %s "$a") bytes, sha256 $(sha256sum <"$a" | cut -c1-16))" \
                         | tee -a "$WORK/summary.log"
                 else
                     echo "p2k .$f: DIFFERENT or missing ($a vs $b)" | tee -a "$WORK/summary.log"
                 fi
             done ;;
        read2k) f=$(ls "$WORK"/p2k_cuda/*.params "$WORK"/p2k_cpu/*.params 2>/dev/null | head -1)
                if [[ -z $f ]]; then echo "step read2k SKIPPED (no 2KiB file)" | tee -a "$WORK/summary.log"; continue; fi
                run read2k 150 python3 benchmarks/setup_bench.py read "$f" --device-load ;;
        load2k|load8m) if [[ $step == load2k ]]; then size=2KiB; d=p2k_cuda; else size=8MiB; d=p8m; fi
                pt=StackedDrg${size}V1_1
                f=$(ls "$WORK"/$d/*.params 2>/dev/null | head -1)
                if [[ -z $f ]]; then  # not made by p2k / p8m in this call: generate it on the GPU now
                    run gen_$step ${GEN_S:-300} "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size $size \
                        --backend cuda --test-seed 7 --out "$WORK/$d"
                    f=$(ls "$WORK"/$d/*.params 2>/dev/null | head -1)
                fi
                if [[ -z $f ]]; then echo "step $step SKIPPED (no $size parameter file)" | tee -a "$WORK/summary.log"
                    continue; fi
                run $step ${LOAD_S:-300} python3 benchmarks/params_load_bench.py --params "$f" --proof-type $pt \
                    --json "$WORK/$step.json"
                grep -E "^(host|device) *:|proof bytes" "$WORK/$step.log" | tee -a "$WORK/summary.log" ;;
        loadsyn) run loadsyn ${LOAD_S:-300} python3 benchmarks/params_load_bench.py --synthetic "${SYN_N:-200000}" \
                     --json "$WORK/loadsyn.json"
                 grep -E "^(host|device) *:|proof bytes|verifies" "$WORK/loadsyn.log" | tee -a "$WORK/summary.log" ;;
        p8m) run p8m ${P8M_S:-400} "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size 8MiB --backend cuda \
                 --test-seed 7 --out "$WORK/p8m"
             grep -E "Elapsed|Maximum resident" "$WORK/p8m.log" | tee -a "$WORK/summary.log"
             ls -la "$WORK/p8m" | tee -a "$WORK/summary.log" ;;
        p32) run p32 ${P32_S:-560} "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size 32GiB --backend cuda \
                 --test-seed 7 --out "$WORK/p32"
             grep -E "Elapsed|Maximum resident" "$WORK/p32.log" | tee -a "$WORK/summary.log"
             ls -la "$WORK/p32" | tee -a "$WORK/summary.log"; rm -f "$WORK"/p32/*.params ;;
        *) echo "unknown step $step"; exit 2 ;;
    esac
done
echo "total $((SECONDS - START))s" | tee -a "$WORK/summary.log"
cat "$WORK/summary.log"
