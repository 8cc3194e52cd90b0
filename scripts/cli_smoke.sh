#!/usr/bin/env bash
# CPU smoke test of the plain install, as a new user gets it: `pip install` of the clone into a fresh venv
# (no `cuda` extra, no dev extras, no CUDA simulator), run from outside the source tree:
#   seal a 2KiB sector -> c1 make -> c1 check -> bench prove --backend cpu (small synthetic circuit).
# The test suite cannot catch a broken base install: it runs with the dev extras and the simulator on.
#
# Usage: scripts/cli_smoke.sh [SOURCE_DIR]   (default: this checkout; PYTHON picks the interpreter)
set -euo pipefail

SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd)
PYTHON=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/psagent-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n== smoke: %s\n' "$*" >&2; }

# The simulator or a GPU setting from the caller's shell would hide exactly what this checks.
unset NUMBA_ENABLE_CUDASIM PSAGENT_REAL_CUDA NUMBA_CACHE_DIR PSAGENT_NUMBA_CACHE
export XDG_CACHE_HOME="$work/cache"   # a cold kernel cache, as on a first run

# Copy the checkout (tracked and untracked files, not ignored ones) so that the build sees what a clone holds
# (not a venv, caches or an older build/ directory left by a setuptools build).
step "copy $SRC"
mkdir "$work/src"
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard) |
    tar -C "$SRC" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$work/src" -xf -

step "pip install (base dependencies only) into a fresh venv"
"$PYTHON" -m venv "$work/venv"
if ! "$work/venv/bin/python" -m pip install -q "$work/src" >"$work/pip.log" 2>&1; then
    grep -v "^WARNING: Location 'file:" "$work/pip.log" >&2
    echo "smoke: pip install failed" >&2
    exit 1
fi
"$work/venv/bin/python" - <<'EOF'
import importlib.util, sys
if importlib.util.find_spec("agent") is None:
    sys.exit("smoke: the package did not install")
if importlib.util.find_spec("numba_cuda") is not None:
    sys.exit("smoke: numba-cuda is installed: this is not the base install")
EOF
ps="$work/venv/bin/psagent"
cd "$work"   # outside the source tree: nothing may be read from the checkout

HEX=0101010101010101010101010101010101010101010101010101010101010101
step "seal 2KiB"
"$ps" seal --registered-proof StackedDrg2KiBV1_1 --miner 1000 --sector 1 --ticket "$HEX" --random-piece \
    --no-progress --out sector
step "c1 make"
"$ps" c1 make sector --seed "$HEX" --out c1.json
step "c1 check"
"$ps" c1 check c1.json --miner f01000 --sector 1
step "bench prove --backend cpu"
"$ps" bench prove --backend cpu --synthetic-constraints 1024 --reps 1 --warmup 0
step "params generate + params check (the published table ships with the package)"
"$ps" params generate --synthetic-constraints 64 --test-seed 1 --backend cpu --out params
"$ps" params check params
step "engine serve without the engine extra: one line, exit 2"
rc=0
"$ps" engine serve 2>engine.err || rc=$?
cat engine.err >&2
if [ "$rc" -ne 2 ] || [ "$(wc -l <engine.err)" -ne 1 ] || ! grep -q "needs grpcio" engine.err; then
    echo "smoke: psagent engine serve without grpcio: expected one line and exit 2, got exit $rc" >&2
    exit 1
fi
step "psagent --version"
"$ps" --version
printf '\n== smoke: passed\n' >&2
