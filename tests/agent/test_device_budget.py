"""P27 at the agent's level: one device budget, the engine's, honoured by admission and the prover alike.

The engine (Groth16Engine, CUDA backend under the simulator) decides its budget (``prover.device_memory_gib``,
or the device's free memory once its kernels have run, less a reserve: the simulator has no figure, so a test
names one), caps its device ledger with it, and picks the layout of each circuit under it; admission takes
the same figures: the budget from the engine, each key's resident bytes (the layout's) charged once, each
job's working bytes (the layout's largest phase) reserved. A budget no layout fits is refused in one line
before any parameter is read."""

from __future__ import annotations

import secrets
from pathlib import Path
from types import SimpleNamespace

import pytest
from _doubles import ToyCircuit, toy_circuits, toy_r1cs  # tests/agent is on sys.path

from agent.config import Settings, engine_options
from agent.proving.engine import Groth16Engine
from agent.proving.pipeline import ProofPipeline
from agent.proving.prover import AdmittedProver
from gpu import memory
from gpu.groth16 import plan, reference
from gpu.options import EngineOptions

PT = SimpleNamespace(name="Toy", param_stem="toy", partitions=1, size_label="2KiB")


@pytest.fixture
def files(tmp_path: Path) -> SimpleNamespace:
    r1cs = toy_r1cs(2)
    params = reference.setup(r1cs, reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5))))
    path = tmp_path / "toy.params"
    params.write(path)
    return SimpleNamespace(r1cs=r1cs, params=params, path=path)


def _pipe(files: SimpleNamespace, tmp_path: Path, engine: Groth16Engine) -> ProofPipeline:
    return ProofPipeline(
        files.path.parent, engines=[engine], circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),
        cache=tmp_path / "cache", read_params=lambda path, check: files.params,
    )


def test_the_configured_budget_and_layout_reach_the_engine() -> None:
    s = Settings(prover={"device_memory_gib": 1.5, "device_layout": "stream16"})
    options = engine_options(s)
    assert options.device_memory == int(1.5 * 2**30) and options.layout == "stream16"
    engine = Groth16Engine("cuda", 0, options=options)
    assert engine.memory_budget() == int(1.5 * 2**30)
    assert memory.ledger(0).cap == int(1.5 * 2**30)  # an allocation past it is refused, naming its phase
    lay = engine.layout(toy_r1cs(2))
    assert lay is not None and lay.name == "stream16" and not lay.key_on_device and not lay.device_spmv
    assert Groth16Engine("cpu", options=options).memory_budget() is None
    memory.ledger(0).cap = None


def test_a_budget_no_layout_fits_is_refused_naming_what_would_fit(files: SimpleNamespace) -> None:
    engine = Groth16Engine("cuda", 0, options=EngineOptions(device_memory=1000))
    with pytest.raises(plan.LayoutError, match="no layout fits") as err:
        engine.layout(files.r1cs)
    sizes = plan.ProofSizes.of_r1cs(files.r1cs)
    assert err.value.need == plan.smallest_layout(sizes, device_spmv=engine.options.device_spmv).peak()
    memory.ledger(0).cap = None


@pytest.mark.parametrize("layout", ["resident", "stream24", "stream16"])
def test_admission_reserves_the_plans_figures(files: SimpleNamespace, tmp_path: Path, layout: str) -> None:
    """Admission's budget is the engine's; a key's resident bytes and a job's reservation are its layout's."""
    budget = 2 * 10**9
    engine = Groth16Engine("cuda", 0, options=EngineOptions(device_memory=budget, layout=layout))  # type: ignore[arg-type]
    prover = AdmittedProver(_pipe(files, tmp_path, engine))
    nbytes = prover._ready(PT)  # type: ignore[arg-type]
    key = prover.pipeline.shape(PT).key  # type: ignore[arg-type]
    lay = key.layout
    assert lay is not None and lay.name == layout and key.streamed == (layout != "resident")
    assert nbytes == lay.working() == prover.pipeline.job_device_bytes(PT)  # type: ignore[arg-type]
    assert prover.admission.budgets[0].total == budget - sum(lay.resident().values())
    assert prover.admission.serialized  # the device's jobs take turns: a job's bytes beside the keys only
    memory.ledger(0).cap = None


def test_a_streamed_key_is_one_host_copy_for_every_engine(files: SimpleNamespace, tmp_path: Path) -> None:
    """Two engines (the device seam doubled: the simulator has one device) streaming the same proof type read
    the parameters once; both keys stream from the same page-locked arrays (on a GPU, allocated portable: one
    copy serves every context); evicting the type drops it."""
    # the host reader (its double counts the reads); the device load shares the same way
    options = EngineOptions(device_memory=2 * 10**9, layout="stream16", params_to_device=False)
    engines = [Groth16Engine("cuda", 0, options=options) for _ in range(2)]
    reads: list[Path] = []

    def read(path: Path, check: bool) -> object:
        reads.append(path)
        return files.params

    pipe = ProofPipeline(
        files.path.parent, engines=list(engines), circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),
        cache=tmp_path / "cache", read_params=read,
    )
    first = pipe.shape(PT, engine=0).key  # type: ignore[arg-type]
    setup: dict[str, float] = {}
    second = pipe.shape(PT, engine=1, setup=setup).key  # type: ignore[arg-type]
    assert first.streamed and second.streamed and first is not second
    assert first.host_bases is not None and second.host_bases is not None
    assert all(first.host_bases[k] is second.host_bases[k] for k in first.host_bases)
    assert len(reads) == 1 and "params_shared" in setup
    pipe.evict(PT)  # type: ignore[arg-type]
    pipe.shape(PT, engine=1)  # type: ignore[arg-type]
    assert len(reads) == 2
    memory.ledger(0).cap = None
