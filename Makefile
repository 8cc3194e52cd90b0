# Two commands for a fresh clone: `make run` (dry-run demo) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PYTEST_ARGS ?=

.PHONY: run test smoke lint install install-dev clean device-wheels test-circuit-long test-agent-long test-snap-long reliability \
	test-kernel-launches test-engine-long test-post-long proto

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
$(VENV)/.stamp-run: pyproject.toml | $(PY)
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[dev]'
	@touch $@ $(VENV)/.stamp-run

install: $(VENV)/.stamp-run
install-dev: $(VENV)/.stamp-dev

# The dry run: the real agent against the mock market on loopback (throwaway wallet, 2KiB challenges), one
# proof proven, verified, submitted and paid, then a summary line. GPU when one is usable, CPU otherwise
# (prover.backend = auto). The first run makes development parameters once (cached in ~/.cache/psagent): on a
# 2-core VM about 5 min quiet, 15-25 min under load (README, "Dry-run timing"); later runs 3-4 min.
run: $(VENV)/.stamp-run
	$(VENV)/bin/psagent run --dry-run --max-proofs 1

# The agent's end-to-end tests with the real 2KiB prover on the CPU (minutes; not in CI).
test-agent-long: $(VENV)/.stamp-dev
	PSAGENT_AGENT_LONG=1 $(PY) -m pytest tests/agent/test_e2e.py tests/agent/test_crash.py -q -ra $(PYTEST_ARGS)

# The proving engine (psagent engine serve) with the real 2KiB provers on the CPU, over a Unix socket and TCP:
# a Curio-shaped PoRep C1 wrapper and a Snap request proven through Prove and verified (not in CI; development
# parameters made once in ~/.cache/psagent/params-dev, the update setup taking many minutes the first time).
test-engine-long: $(VENV)/.stamp-dev
	PSAGENT_ENGINE_LONG=1 $(PY) -m pytest tests/agent/cuzk/test_engine_long.py -q -ra $(PYTEST_ARGS)

# PoSt long suite, not in CI: the golden 32GiB vanilla PoSt's witness satisfies the 32GiB WindowPoSt R1CS (and a
# mutated one does not; ~4 min and ~14 GB each on 2 cores), then real 2KiB WinningPoSt and WindowPoSt through
# `Prove` on the CPU (development parameters made once in ~/.cache/psagent/params-dev, about a minute).
test-post-long: $(VENV)/.stamp-dev
	PSAGENT_POST_LONG=1 $(PY) -m pytest tests/porep/post/test_post_long.py tests/agent/cuzk/test_engine_post_long.py \
		-q -ra -s $(PYTEST_ARGS)

# The engine's gRPC stubs from agent/cuzk/proving.proto (grpcio-tools pinned in the dev extra; a test checks
# that the committed stubs are exactly this output).
proto: $(VENV)/.stamp-dev
	$(PY) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. agent/cuzk/proving.proto

# pytest exit code 5 means "no tests collected": that is a failure, not a pass.
test: $(VENV)/.stamp-dev
	@$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests (exit 5) - failing" >&2; exit 1; fi; \
	exit $$rc

# Long circuit tests, not in CI (minutes on 2 cores): 8MiB/512MiB/32GiB counts, every C1 mutation, blank ==
# witness matrices, CPU proving of a 2KiB C1.
test-circuit-long: $(VENV)/.stamp-dev
	PSAGENT_CIRCUIT_LONG=1 $(PY) -m pytest tests/porep/circuit -q -ra $(PYTEST_ARGS)

# Every kernel launch of a simulated proof (and of the setup) types exactly as its row of
# benchmarks/kernel_resources.py; ~1-2 min, not in CI. Run it after changing a kernel or a launch.
test-kernel-launches: $(VENV)/.stamp-dev
	PSAGENT_KERNEL_LAUNCHES=1 $(PY) -m pytest tests/gpu/test_kernel_resources.py -q -ra $(PYTEST_ARGS)

# SnapDeals long suite, not in CI (~25 min on the loaded 2-core VM, 5.4 GB peak): the 8MiB update + strict
# check, every count (16KiB/32KiB, derived 8MiB/512MiB/64GiB), witnesses of the compound and 8MiB shapes, and a
# 2KiB update proven on the CPU (params generate --update, pyblst, agent.proving.pipeline.ProofPipeline).
test-snap-long: $(VENV)/.stamp-dev
	PSAGENT_SNAP_LONG=1 $(PY) -m pytest tests/porep/snap -q -ra $(PYTEST_ARGS)

# The reliability runner (tests/reliability, RELIABILITY.md): the mock market and the agent as processes, scripted
# faults, kill -9 at every stage, disk full (tmpfs: needs root), invariants, then a soak of SOAK_S seconds
# (default 300). ~15 min; not in CI. RELIABILITY_ARGS: e.g. --only kill-9@submit soak, --json out.json.
reliability: $(VENV)/.stamp-dev
	SOAK_S=$${SOAK_S:-300} $(PY) tests/reliability/scenarios.py $(RELIABILITY_ARGS)

# The plain install as a user gets it (fresh venv, no cuda extra, no simulator, outside the tree): seal 2KiB ->
# c1 make -> c1 check -> bench prove --backend cpu. CI runs it after the tests (.ci/run).
smoke:
	scripts/cli_smoke.sh

lint: $(VENV)/.stamp-dev
	$(VENV)/bin/ruff check agent market porep gpu tests benchmarks
	$(VENV)/bin/mypy agent market porep gpu

# Wheels for the GPU machine (its python3 is 3.12 and has no package index); see scripts/device_wheels.sh.
device-wheels:
	scripts/device_wheels.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
