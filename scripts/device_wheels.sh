#!/usr/bin/env bash
# Download the cp312 manylinux wheels that the GPU machine lacks into .whl/ (git-ignored); the device suite
# installs them into /tmp/site there (it has no package index). Its own python3 (3.12) brings numba 0.68,
# numba-cuda 0.30.4 and the CUDA libraries, but NumPy 2.5.2, which breaks numba-cuda 0.30 (gpu.md §4).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkdir -p .whl
rm -f .whl/*.whl
get() {
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "$@"
}
get "numpy==2.4.6"            # < 2.5 for numba-cuda 0.30.4
get "pyblst==0.3.15"          # the independent oracle in the checks
get "pytest==9.2.0" "pluggy>=1.5" "iniconfig>=2" "packaging>=24" "pygments>=2.7" "pytest-timeout==2.4.0"
if [ "${1:-}" = "--full" ]; then
    # psagent's runtime closure minus numba/llvmlite (the GPU machine has them): enough for `psagent prove`,
    # `params generate` and the agent there. Versions are this venv's (pinned, so the set is coherent).
    VENV_PY=${VENV_PY:-.venv/bin/python}
    pins=$("$VENV_PY" - <<'PY'
import importlib.metadata as md
names = ["annotated-doc", "annotated-types", "anyio", "cbor2", "certifi", "click", "coincurve", "h11", "httpcore",
         "httpx", "idna", "markdown-it-py", "mdurl", "prometheus-client", "pydantic", "pydantic-core",
         "pydantic-settings", "python-dotenv", "rich", "shellingham", "starlette", "tenacity", "typer",
         "typing-extensions", "typing-inspection", "uvicorn", "sniffio"]
installed = {d.metadata["Name"].lower().replace("_", "-") for d in md.distributions()}
print(" ".join(f"{n}=={md.version(n)}" for n in names if n in installed))
PY
)
    # shellcheck disable=SC2086
    get $pins
fi
ls -la .whl
du -sh .whl
