#!/usr/bin/env bash
# P20 in one machine hold: a verified 32GiB PoRep C2 on the GPU through the product's pipeline, every step bounded,
# results appended as they happen. From the repository root:
#
#   bash benchmarks/lease_32gib.sh start    # install the carried wheels, start the driver detached (setsid), poll
#   bash benchmarks/lease_32gib.sh poll     # wait for the driver (POLL_S, default 540 s), copy results to $OUT
#   bash benchmarks/lease_32gib.sh status   # one look, no waiting
#
# A device call lasts at most 10 minutes, the driver as long as its steps: `start` in the first call, then `poll`
# in each following call while the machine stays warm (the driver and its files survive between calls).
# Rehearsal on a CPU machine: SIZE=2KiB BACKEND=cpu WARM=1 STEADY=2 bash benchmarks/lease_32gib.sh start
# KIND=snap (P22): the same run for a SnapDeals update request (`psagent snap synth`, `params generate --update`);
# the path check (p2k, paths) is PoRep's and is skipped. Beside a PoRep run in the same hold (the two 32GiB
# files do not fit the disk together): remove its parameters (rm -rf /tmp/psagent-lease/params
# /dev/shm/psagent-lease-params), then
#   KIND=snap W=/tmp/psagent-snap NUMBA_DIR=/tmp/psagent-lease/numba SITE=/tmp/psagent-lease/site \
#       bash benchmarks/lease_32gib.sh start
# (NUMBA_DIR: the kernels the PoRep run compiled; SITE: the wheels it installed).
#
# P27: the proof in bounded device memory. LAYOUTS lists the e2e runs, each "LAYOUT:GIB:WARM[:STEADY]" (the
# engine's prover.device_layout, prover.device_memory_gib with 0 = the device's own budget, warm proofs after
# the cold one, steady-state proofs INFLIGHT at a time: default $STEADY), default "auto:0:$WARM auto:20.5:1 auto:13.4:0": the H100's own budget (the resident layout), a 24 GB
# card's (~22 GB left after its context and the kernels' local memory: stream24) and a 16 GB card's (~14.4 GB:
# stream16). Each run is exported to export-<i> and verified; nvidia-smi samples the device's memory beside it.
#
# Steps (STEPS to choose; default: all that apply to BACKEND):
#   env     machine, versions, disk and memory
#   msm     (cuda, not in the default list) P28's baseline: bench msm G1 2^24 and G2 2^22
#   gpucheck (cuda) tests/gpu/groth16/test_memory_plan.py and test_spmv_cuda.py on the GPU: every layout's
#           small proof equals the CPU's bytes, each phase within its plan (the counting memory manager), the
#           cap refused in the named phase; a failure stops the driver
#   c1      `psagent c1 synth` C1s: SIZE (miner 1000, sector 1) and, for the path check, 2KiB
#   prep    in the background from the start: the SIZE circuit template recorded into the cache (the plan of
#           `bench e2e --plan-only` needs it; params generate and the proof then only tile it)
#   p2k     (cuda) `params generate --sector-size 2KiB --backend cuda --test-seed 7`
#   paths   (cuda) benchmarks/device_paths.py on the 2KiB C1: host vs device parameter load, host vs device
#           SpMV (and the CPU backend with PATHS_CPU=1); all proofs the same bytes and verified. A failure turns the failing device
#           path off for the rest (PSAGENT_PROVER__DEVICE_SPMV / PSAGENT_PROVER__PARAMS_TO_DEVICE)
#   plan    `bench e2e --plan-only`: host and device bytes per stage, computed by the admission formulas
#   params  `params generate --sector-size SIZE --backend BACKEND --test-seed 7` (disk checked first)
#   e2e     `bench e2e`: cold, WARM warm proofs, STEADY more with INFLIGHT in flight, every proof verified and
#           exported (vk, public inputs, proofs)
#   verify  benchmarks/verify_export.py: the exported proofs checked with pyblst alone, inputs recomputed
#
# Results: $W/results.jsonl (one JSON line per step: rc, seconds, figures), $W/summary.log, $W/<step>.log; `poll`
# copies summary.log, results.jsonl and logs.tgz (every log and JSON, no parameter file) to $OUT.
set -uo pipefail
MODE=${1:-start}
SIZE=${SIZE:-32GiB}
KIND=${KIND:-porep}
BACKEND=${BACKEND:-cuda}
WARM=${WARM:-2}
LAYOUTS=${LAYOUTS:-auto:0:$WARM auto:20.5:1 auto:13.4:0}
STEADY=${STEADY:-0}
INFLIGHT=${INFLIGHT:-2}
POLL_S=${POLL_S:-540}
W=${W:-/tmp/psagent-lease}
SITE=${SITE:-$W/site}  # where the carried wheels are installed
REPO=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
OUTD=${OUT:-$W/out}
T=$(printf '02%.0s' {1..32})
S=$(printf '03%.0s' {1..32})

environment() {
    if [[ -d $SITE ]]; then
        export PYTHONPATH=$SITE:$REPO${PYTHONPATH:+:$PYTHONPATH}
    else
        export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
    fi
    export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
    export PSAGENT_CACHE_DIR=$W/cache PSAGENT_NUMBA_CACHE=1 NUMBA_CACHE_DIR=${NUMBA_DIR:-$W/numba}
    if [[ $BACKEND == cuda ]]; then
        export PSAGENT_REAL_CUDA=1
        unset NUMBA_ENABLE_CUDASIM
    fi
    PY=${PY:-python3}
    PSAGENT=("$PY" -c 'import sys; from agent.cli import main; sys.argv[0] = "psagent"; main()')
}


# ---------------------------------------------------------------------------------------------- the driver

note() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$W/summary.log"; }

result() {  # result STEP RC SECONDS [JSON fields without braces]
    local extra=${4:-}
    echo "{\"step\": \"$1\", \"rc\": $2, \"s\": $3, \"size\": \"$SIZE\", \"backend\": \"$BACKEND\"${extra:+, $extra}}" \
        >>"$W/results.jsonl"
}

step() {  # step NAME MAX_S CMD...: bounded, logged, its result appended
    local name=$1 max=$2; shift 2
    note "step $name: start (limit ${max}s): $*"
    local t0=$SECONDS
    timeout --kill-after=15 "$max" "$@" >"$W/$name.log" 2>&1
    local rc=$?
    local dt=$((SECONDS - t0))
    result "$name" "$rc" "$dt"
    note "step $name: rc=$rc in ${dt}s"
    grep -v $'^\t' "$W/$name.log" | tail -n 25 | sed 's/^/    /' >>"$W/summary.log"
    grep -E $'^\t(Elapsed|Maximum resident)' "$W/$name.log" | sed 's/^\t/    time: /' >>"$W/summary.log"
    return $rc
}

peak_rss() {  # the max resident size GNU time reported in a step's log, in GiB
    grep -o "Maximum resident set size (kbytes): [0-9]*" "$W/$1.log" 2>/dev/null | awk '{printf "%.2f", $NF/1048576}'
}

has() { [[ " ${STEPS} " == *" $1 "* ]]; }

drive() {
    environment
    TIMEV=(); [[ -x /usr/bin/time ]] && TIMEV=(/usr/bin/time -v)
    local default="env c1 prep plan params e2e verify"
    [[ $BACKEND == cuda ]] && default="env c1 prep gpucheck plan params e2e verify"
    STEPS=${STEPS:-$default}
    note "driver: KIND=$KIND SIZE=$SIZE BACKEND=$BACKEND STEPS='$STEPS' WARM=$WARM STEADY=$STEADY INFLIGHT=$INFLIGHT"
    local update=() sector=(--miner 1000 --sector 1)
    [[ $KIND == snap ]] && update=(--update) && sector=()
    local pt="StackedDrg${SIZE}V1_1"
    export PSAGENT_PROVER__DEVICE_SPMV=${PSAGENT_PROVER__DEVICE_SPMV:-1} PSAGENT_PROVER__PARAMS_TO_DEVICE=${PSAGENT_PROVER__PARAMS_TO_DEVICE:-1}
    # a lent machine's memory may show as available only as it is used (device README): the setup's memory
    # check warns instead of refusing there; the plan step prints the figures
    export PSAGENT_SETUP_MEMORY_CHECK=${PSAGENT_SETUP_MEMORY_CHECK:-warn}
    [[ $BACKEND == cpu ]] && export PSAGENT_PROVER__DEVICE_SPMV=0 PSAGENT_PROVER__PARAMS_TO_DEVICE=0

    if has env; then
        { date -u; nvidia-smi 2>&1 | head -15; "$PY" -c "import sys, numpy, numba; print(sys.version); \
print('numpy', numpy.__version__, 'numba', numba.__version__)"; "$PY" -c "import numba_cuda; \
print('numba-cuda', numba_cuda.__version__)" 2>&1 | tail -1; nproc; free -g; df -h "$W"; \
git -C "$REPO" log --oneline -1 2>/dev/null; } >"$W/env.log" 2>&1
        # the disk's write rate decides where a 47 GB file goes: a slow disk would make the setup wait on it
        local t0=$SECONDS
        dd if=/dev/zero of="$W/ddtest" bs=1M count=1024 conv=fdatasync 2>"$W/dd.log"
        rm -f "$W/ddtest"
        local ddrate; ddrate=$(grep -o '[0-9.]* [GM]B/s' "$W/dd.log" | tail -1)
        result env 0 $((SECONDS - t0)) "\"disk_free_gb\": $(df -B1G --output=avail "$W" | tail -1 | tr -d ' '), \
\"disk_write\": \"$ddrate\", \"shm_free_gb\": $(df -B1G --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')"
        cat "$W/env.log" >>"$W/summary.log"
        note "disk write (1 GiB, fdatasync): $ddrate"
        DISK_MBS=$(echo "$ddrate" | awk '{v=$1; if ($2 == "GB/s") v *= 1000; printf "%d", v}')
    fi
    DISK_MBS=${DISK_MBS:-0}
    if has c1 && [[ $KIND == snap ]]; then
        step c1 300 "${PSAGENT[@]}" snap synth --sector-size "$SIZE" --miner 1000 --sector 1 --rng-seed 3 \
            --out "$W/c1.json" --no-progress || { note "no Snap request: stopping"; return 1; }
    elif has c1; then
        step c1 300 "${PSAGENT[@]}" c1 synth --registered-proof "$pt" --miner 1000 --sector 1 --ticket "$T" --seed "$S" \
            --out "$W/c1.json" --no-progress || { note "no C1: stopping"; return 1; }
        if has paths && [[ $SIZE != 2KiB ]]; then
            step c1_2k 120 "${PSAGENT[@]}" c1 synth --registered-proof StackedDrg2KiBV1_1 --miner 1000 --sector 1 \
                --ticket "$T" --seed "$S" --out "$W/c1_2k.json" --no-progress
        fi
    fi
    [[ -f $W/c1_2k.json ]] || cp -f "$W/c1.json" "$W/c1_2k.json" 2>/dev/null
    local prep_pid=""
    if has prep; then  # CPU work beside the GPU steps: record the template the plan and the setup read
        note "prep: recording the $SIZE circuit template in the background"
        ( t0=$SECONDS; timeout 900 "${TIMEV[@]}" "${PSAGENT[@]}" bench e2e --c1 "$W/c1.json" --backend cpu --plan-only >"$W/prep.log" 2>&1
          rc=$?; result prep $rc $((SECONDS - t0)) "\"rss_gib\": \"$(peak_rss prep)\""
          # the witness programs of the size, compiled and cached once (the first partition of a process
          # otherwise records them: ~65 CPU-s at 32GiB)
          [[ $KIND == snap ]] && exit 0
          t0=$SECONDS; timeout 600 "$PY" -c "import sys, time; from porep.c1 import SealCommitPhase1Output as C; \
from porep.circuit.partition import partition_assignment as pa; c1 = C.from_json(open(sys.argv[1], 'rb').read()); \
t = time.perf_counter(); pa(c1, 0, cache_dir=sys.argv[2]); print(f'witness 0: {time.perf_counter() - t:.1f} s')" \
              "$W/c1.json" "$W/cache" >"$W/prep_witness.log" 2>&1
          result prep_witness $? $((SECONDS - t0)) ) &
        prep_pid=$!
    fi
    if has gpucheck && [[ $BACKEND == cuda ]]; then
        step gpucheck 600 env PSAGENT_REAL_CUDA=1 "$PY" -m pytest -q -x -p no:cacheprovider \
            tests/gpu/groth16/test_memory_plan.py tests/gpu/groth16/test_spmv_cuda.py \
            || { note "gpucheck failed: stopping before the 32GiB runs"; return 1; }
    fi
    if has p2k; then
        step p2k 300 "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size 2KiB --backend cuda --test-seed 7 \
            --out "$W/p2k"
    fi
    if has paths; then
        local f; f=$(ls "$W"/p2k/*.params 2>/dev/null | head -1)
        if [[ -n $f ]]; then
            step paths 420 "$PY" benchmarks/device_paths.py --c1 "$W/c1_2k.json" --params "$f" --miner 1000 \
                --sector 1 --cache "$W/cache" ${PATHS_CPU:+--cpu} --json "$W/paths.json"
            if [[ -f $W/paths.json ]]; then
                "$PY" - "$W/paths.json" >"$W/paths.flags" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ok = lambda k: r["equal"].get(k) and r["verified"].get(k)
spmv = ok("host key + device SpMV") and ok("device key + device SpMV")
load = ok("device key + host SpMV") and ok("device key + device SpMV")
print(f"PSAGENT_PROVER__DEVICE_SPMV={1 if spmv else 0} PSAGENT_PROVER__PARAMS_TO_DEVICE={1 if load else 0}")
EOF
                export $(cat "$W/paths.flags")
                note "device paths: $(cat "$W/paths.flags")"
            else
                export PSAGENT_PROVER__DEVICE_SPMV=0 PSAGENT_PROVER__PARAMS_TO_DEVICE=0
                note "device paths: no result, both off"
            fi
        else
            note "paths: no 2KiB parameter file: skipped"
        fi
        rm -rf "$W/p2k"
    fi
    if [[ -n $prep_pid ]]; then wait "$prep_pid"; note "prep done: $(tail -n 1 "$W/results.jsonl")"; fi
    if has plan; then
        local spec lay gib i=0
        for spec in $LAYOUTS; do
            IFS=: read -r lay gib _ <<<"$spec"
            step "plan-$i" 300 env PSAGENT_PROVER__DEVICE_LAYOUT="$lay" PSAGENT_PROVER__DEVICE_MEMORY_GIB="$gib" \
                "${PSAGENT[@]}" bench e2e --c1 "$W/c1.json" --backend "$BACKEND" --plan-only
            i=$((i + 1))
        done
    fi
    if has params; then
        local need stem
        read -r need stem < <("$PY" - "$SIZE" "$KIND" 2>>"$W/summary.log" <<'EOF'
import sys
from agent.proving.plan import sizes_of
from gpu.groth16.plan import params_file_bytes
if sys.argv[2] == "snap":
    from porep.snap.params import update_proof_type
    pt = update_proof_type(f"StackedDrg{sys.argv[1]}V1")
else:
    from porep.prooftypes import proof_type
    pt = proof_type(f"StackedDrg{sys.argv[1]}V1_1")
sizes = sizes_of(pt)  # the circuit follows the proof type
print(params_file_bytes(sizes), pt.param_stem)  # the stem: a PoRep and a Snap file may share the directory
EOF
)
        if [[ -z ${PARAMS_DIR:-} ]]; then  # the disk unless it is short of room or slow and memory can hold it
            local dfree sfree; dfree=$(df -B1 --output=avail "$W" | tail -1 | tr -d ' ')
            sfree=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' '); sfree=${sfree:-0}
            PARAMS_DIR=$W/params
            if (( (dfree < need + 3000000000 || (DISK_MBS > 0 && DISK_MBS < 700)) && sfree > need + 4000000000 )); then
                PARAMS_DIR=/dev/shm/$(basename "$W")-params
                note "params: into memory (/dev/shm): disk ${dfree} bytes free at ${DISK_MBS} MB/s"
            fi
        fi
        mkdir -p "$PARAMS_DIR"
        local free; free=$(df -B1 --output=avail "$PARAMS_DIR" | tail -1 | tr -d ' ')
        note "params: the $SIZE file needs ${need} bytes, ${free} free under $PARAMS_DIR"
        if [[ -n $need && $need -gt 0 && $free -lt $((need + 2000000000)) ]]; then
            result params 1 0 "\"why\": \"disk: need $need, free $free\""
            note "params: not enough disk: stopping"; return 1
        fi
        step params 1500 "${TIMEV[@]}" "${PSAGENT[@]}" params generate --sector-size "$SIZE" "${update[@]}" \
            --backend "$BACKEND" --test-seed 7 --out "$PARAMS_DIR" || { note "params failed: stopping"; return 1; }
        result params_file 0 0 "\"bytes\": $(stat -c %s "$PARAMS_DIR/$stem.params"), \
\"dir\": \"$PARAMS_DIR\", \"rss_gib\": \"$(peak_rss params)\""
    fi
    if has e2e && [[ $SIZE == 32GiB || $SIZE == 64GiB ]] && [[ $BACKEND == cuda && $PSAGENT_PROVER__PARAMS_TO_DEVICE != 1 ]]; then
        note "e2e: skipped: without the device parameter load the host decodes ~47 GB (~1000 s at 2KiB's rate)"
        result e2e 1 0 "\"why\": \"device parameter load failed its check\""
        STEPS=${STEPS/e2e/}
    fi
    PARAMS_DIR=${PARAMS_DIR:-$W/params}
    if has e2e; then
        local spec lay gib warm steady i=0
        for spec in $LAYOUTS; do
            IFS=: read -r lay gib warm steady <<<"$spec"
            rm -rf "$W/export-$i"
            local smi=""
            if command -v nvidia-smi >/dev/null 2>&1 && [[ $BACKEND == cuda ]]; then
                nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv,noheader \
                    -lms 500 >"$W/smi-$i.csv" 2>/dev/null &
                smi=$!
            fi
            step "e2e-$i" 1500 env PSAGENT_PROVER__DEVICE_LAYOUT="$lay" PSAGENT_PROVER__DEVICE_MEMORY_GIB="$gib" \
                "${TIMEV[@]}" "${PSAGENT[@]}" bench e2e --c1 "$W/c1.json" "${sector[@]}" \
                --backend "$BACKEND" --params-dir "$PARAMS_DIR" --warm-runs "${warm:-0}" --steady "${steady:-$STEADY}" \
                --in-flight "$INFLIGHT" --plan --export "$W/export-$i" --jsonl "$W/e2e-$i.jsonl" \
                --json-out "$W/e2e-$i.json"
            local rc=$?
            [[ -n $smi ]] && kill "$smi" 2>/dev/null
            local peak; peak=$(awk -F', ' '{gsub(/ MiB/, "", $2); if ($2 > m) m = $2} END {print m + 0}' "$W/smi-$i.csv" 2>/dev/null)
            result "e2e-$i-mem" 0 0 "\"layout\": \"$lay\", \"gib\": \"$gib\", \"rss_gib\": \"$(peak_rss "e2e-$i")\", \"smi_peak_mib\": ${peak:-0}"
            if has verify && [[ -d $W/export-$i ]]; then
                step "verify-$i" 300 "$PY" benchmarks/verify_export.py "$W/export-$i" --c1 "$W/c1.json" \
                    --json "$W/verify-$i.json"
            fi
            i=$((i + 1))
            (( rc == 0 )) || note "e2e-$i: rc=$rc (the next layout still runs)"
        done
    fi
    if has msm && [[ $BACKEND == cuda ]]; then  # P28's baseline on the same card: MSM 2^24 G1, the G2 MSM 2^22
        step msm-g1 240 "${PSAGENT[@]}" bench msm --backend cuda --log2n 24 --group g1 --reps 5 \
            --json-out "$W/msm-g1.json"
        step msm-g2 240 "${PSAGENT[@]}" bench msm --backend cuda --log2n 22 --group g2 --reps 3 \
            --json-out "$W/msm-g2.json"
    fi
    note "driver: done"
}

# ---------------------------------------------------------------------------------------------- start / poll

collect() {
    mkdir -p "$OUTD"
    cp -f "$W/summary.log" "$W/results.jsonl" "$OUTD/" 2>/dev/null
    tar czf "$OUTD/logs.tgz" -C "$W" --exclude='*.params' --exclude='params' --exclude='cache' --exclude='numba' \
        --exclude='site' --exclude='out' --exclude='repo' --exclude='*.json.gz' --exclude='c1*.json' . 2>/dev/null
}

finished() { [[ -f $W/driver.done ]]; }

poll() {
    local t0=$SECONDS
    while ! finished && (( SECONDS - t0 < POLL_S )); do
        sleep 5
        collect
    done
    collect
    echo "---- summary ($( finished && echo done || echo 'still running'), $((SECONDS - t0)) s polled)"
    tail -n 60 "$W/summary.log" 2>/dev/null
    echo "---- results"
    cat "$W/results.jsonl" 2>/dev/null
}

case $MODE in
    start)
        if [[ -f $W/driver.pid ]] && kill -0 "$(cat "$W/driver.pid")" 2>/dev/null; then
            echo "a driver is running already (pid $(cat "$W/driver.pid")): polling"; poll; exit 0
        fi
        rm -rf "$W/summary.log" "$W/results.jsonl" "$W/driver.done" "$W/export" "$W/e2e.jsonl"
        mkdir -p "$W"
        # the carried wheels (scripts/device_wheels.sh --full), where python3 lacks what psagent needs
        if ! PYTHONPATH=$SITE "${PY:-python3}" -c "import numpy, pyblst, typer, pydantic_settings; \
assert numpy.__version__ < '2.5'" 2>/dev/null && ls "$REPO"/.whl/*.whl >/dev/null 2>&1; then
            python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
                "$REPO"/.whl/*.whl >"$W/pip.log" 2>&1 || { cat "$W/pip.log"; exit 1; }
        fi
        # the driver runs from a copy of the tree under $W: each device call lays the working tree anew (a
        # driver polled in a later call found its directory gone); `SYNC=1 ... poll` copies a newer tree over
        # it, which the steps not started yet then run
        mkdir -p "$W/repo"
        cp -a "$REPO"/. "$W/repo/" 2>/dev/null; rm -rf "$W/repo/.whl"
        cd "$W/repo"
        cp "$0" "$W/lease.sh"  # the driver runs a copy: bash reads a script as it goes, so an edit would reach it
        REPO=$W/repo setsid bash -c "bash '$W/lease.sh' drive; touch '$W/driver.done'" >"$W/driver.log" 2>&1 </dev/null &
        echo $! >"$W/driver.pid"
        echo "driver started (pid $(cat "$W/driver.pid")), state in $W"
        poll ;;
    drive) cd "$REPO"; drive ;;
    poll)
        if [[ ${SYNC:-0} == 1 && -d $W/repo ]]; then
            cp -a "$REPO"/. "$W/repo/" 2>/dev/null; rm -rf "$W/repo/.whl"
            echo "synced the tree into $W/repo (steps not started yet run it)"
        fi
        poll ;;
    status) POLL_S=0 poll ;;
    *) echo "usage: $0 start|poll|status" >&2; exit 2 ;;
esac
