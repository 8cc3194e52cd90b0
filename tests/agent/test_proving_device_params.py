"""The opt-in parameter load straight to the device (EngineOptions.params_to_device) through the agent's
pipeline, with the real Groth16Engine on the CUDA backend under the simulator, and the admission byte counts.

The key is built and compared with the host path's bases here; no proof is made at this level (the existing
agent tests prove with a reference engine; a simulated CUDA proof costs ~15-30 s): the device-loaded key's
proof equals the host-loaded key's byte for byte in tests/gpu/groth16/test_params_device_key.py."""

from __future__ import annotations

import secrets
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from _doubles import ToyCircuit, toy_circuits, toy_r1cs  # tests/agent is on sys.path

from agent.admission import Admission, BudgetExceeded
from agent.config import Settings, engine_options
from agent.proving.engine import Groth16Engine, assignment_host_bytes, resident_r1cs_bytes
from agent.proving.parameters import CheckedParams
from agent.proving.pipeline import ProofPipeline
from agent.proving.prover import AdmittedProver
from gpu.groth16 import reference
from gpu.groth16.params import Parameters
from gpu.groth16.prover import ProvingKey, permuted_h_bases
from gpu.options import EngineOptions

# A.w, B.w, C.w on the host unless a test says otherwise (the device SpMV is on by default)
TO_DEVICE = EngineOptions(params_to_device=True, device_spmv=False)
ON_HOST = EngineOptions(params_to_device=False, device_spmv=False)

PT = SimpleNamespace(name="Toy", param_stem="toy", partitions=1)


class _Files:
    """A toy circuit's parameters written to DIR/toy.params, and a read_params double that records whether
    the per-point check was asked for and returns the arrays the file holds (the host reader itself is
    tests/gpu/groth16's)."""

    def __init__(self, directory: Path) -> None:
        self.r1cs = toy_r1cs(2)
        self.params = reference.setup(
            self.r1cs, reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5)))
        )
        self.path = directory / "toy.params"
        self.params.write(self.path)
        self.checks: list[bool] = []

    def read(self, path: Path, subgroup_check: bool) -> Parameters:
        assert path == self.path
        self.checks.append(subgroup_check)
        return self.params


@pytest.fixture
def files(tmp_path: Path) -> _Files:
    return _Files(tmp_path)


def _pipe(files: _Files, cache: Path, engine: Any) -> ProofPipeline:
    return ProofPipeline(
        files.path.parent, engines=[engine], circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),
        cache=cache, read_params=files.read,
    )


def test_the_switch_is_a_value_filled_in_the_configuration_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine takes its options as a value; the environment is read once, by agent.config.engine_options
    (the documented overrides over [prover]); a bad override is a ConfigError naming the variable."""
    from agent.config import ConfigError
    from gpu.options import DEVICE_PATHS

    monkeypatch.delenv("PSAGENT_PROVER__PARAMS_TO_DEVICE", raising=False)
    assert engine_options().params_to_device is DEVICE_PATHS
    assert Groth16Engine("cuda", options=engine_options()).params_to_device is DEVICE_PATHS
    assert engine_options(Settings(prover={"params_to_device": True})).params_to_device
    for value, on in (("0", False), ("1", True)):
        monkeypatch.setenv("PSAGENT_PROVER__PARAMS_TO_DEVICE", value)  # beats the file
        assert engine_options(Settings(prover={"params_to_device": not on})).params_to_device is on
        assert Groth16Engine("cuda").params_to_device is DEVICE_PATHS  # the engine reads no environment
    monkeypatch.setenv("PSAGENT_PROVER__PARAMS_TO_DEVICE", "maybe")
    with pytest.raises(ConfigError, match="environment: prover.params_to_device: must be true or false"):
        engine_options()
    monkeypatch.delenv("PSAGENT_PROVER__PARAMS_TO_DEVICE")
    monkeypatch.setenv("PSAGENT_PARAMS_TO_DEVICE", "1")  # the retired name: refused, naming the one to use
    with pytest.raises(ConfigError, match="PARAMS_TO_DEVICE is no longer read: use PSAGENT_PROVER__PARAMS"):
        engine_options()
    assert not Groth16Engine("cpu", options=TO_DEVICE).params_to_device  # CUDA only
    assert Groth16Engine("cuda", options=TO_DEVICE).params_to_device
    with pytest.raises(ValueError, match="CUDA backend"):
        Groth16Engine("cpu").load_params(Path("x.params"), toy_r1cs(2))


@pytest.mark.slow
def test_device_load_is_gated_by_the_point_check_record(
    files: _Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """First use: the host reader's full check, recorded, then the device load; a later start: the device
    load only. The key's resident bases are the host path's (H bit-reversed), with no host copy."""
    cache = tmp_path / "cache"
    setup: dict[str, float] = {}
    shape = _pipe(files, cache, Groth16Engine("cuda", options=TO_DEVICE)).shape(PT, setup=setup)
    assert files.checks == [True] and CheckedParams(cache).trusted(files.path)
    assert {"params", "params_point_check", "params_device_load", "key"} <= setup.keys()
    key = shape.key
    assert isinstance(key, ProvingKey) and key.params is None and key.vk == files.params.vk
    p = files.params
    want = {"h": permuted_h_bases(p.h, p.domain_log), "l": p.l, "a": p.a, "b_g1": p.b_g1, "b_g2": p.b_g2}
    for name, arr in want.items():
        assert np.array_equal(key.ctx[name]._bases.copy_to_host(), arr), name
    setup2: dict[str, float] = {}
    _pipe(files, cache, Groth16Engine("cuda", options=TO_DEVICE)).shape(PT, setup=setup2)  # a later start
    assert files.checks == [True] and "params_point_check" not in setup2 and "params_device_load" in setup2
    # the host reader, trusted, no check
    assert _pipe(files, cache, Groth16Engine("cuda", options=ON_HOST)).shape(PT).key.params is not None
    assert files.checks == [True, False]


def test_a_file_failing_its_check_is_never_loaded_to_the_device(
    files: _Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Groth16Engine("cuda", options=TO_DEVICE)
    loads: list[Path] = []
    monkeypatch.setattr(engine, "load_params", lambda path, r1cs: loads.append(path))

    def failing(path: Path, subgroup_check: bool) -> Parameters:
        files.checks.append(subgroup_check)
        raise ValueError("point 3 is not in the subgroup")

    files.read = failing  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="subgroup"):
        _pipe(files, tmp_path / "cache", engine).shape(PT)
    assert files.checks == [True] and loads == []
    assert not CheckedParams(tmp_path / "cache").trusted(files.path)


def test_admission_byte_counts(files: _Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host: no A·w, B·w, C·w with the device SpMV on a CUDA engine (the CPU engine still holds them).
    Device: the resident bytes are the key's arrays (plus the resident R1CS with the SpMV switch, its estimate
    equal to DeviceR1CS.upload's for interned matrices, an upper bound for a plain CSR), taken off the budget
    once."""
    from gpu.groth16.spmv_cuda import DeviceR1CS

    r1cs = files.r1cs
    full, wit = assignment_host_bytes(r1cs), assignment_host_bytes(r1cs, device_spmv=True)
    assert wit == 32 * r1cs.num_vars and full == wit + 3 * 32 * r1cs.num_constraints_total
    both = EngineOptions(device_spmv=True, params_to_device=True)
    cuda_pipe = _pipe(files, tmp_path / "cache", Groth16Engine("cuda", options=both))
    assert cuda_pipe.shape(PT).host_bytes == wit
    assert _pipe(files, tmp_path / "cache", Groth16Engine("cpu", options=both)).shape(PT).host_bytes == full
    key = cuda_pipe.shape(PT).key
    from gpu.groth16.plan import ntt_table_bytes

    # the bases, the gather indices and the H step's NTT tables (uploaded with the key)
    bases = sum(c._bases.nbytes for c in key.ctx.values()) + key.d_a_idx.nbytes + key.d_b_idx.nbytes
    bases += ntt_table_bytes(key.logn)
    compact = r1cs.compact()
    assert resident_r1cs_bytes(compact) == DeviceR1CS.upload(compact, 0).nbytes
    assert resident_r1cs_bytes(r1cs) >= DeviceR1CS.upload(r1cs, 0).nbytes
    assert cuda_pipe.resident_bytes(PT) == bases + resident_r1cs_bytes(r1cs)
    assert key.layout is not None and cuda_pipe.resident_bytes(PT) == sum(key.layout.resident().values())
    host_spmv = _pipe(files, tmp_path / "cache", Groth16Engine("cuda", options=TO_DEVICE))
    assert host_spmv.resident_bytes(PT) == bases
    engine = host_spmv.engine
    adm = Admission([engine.device], budget_bytes={engine.device.index: 10**6})  # type: ignore[attr-defined]
    prover = AdmittedProver(host_spmv, admission=adm)
    assert prover.charge_resident(PT, 0) == bases and adm.budgets[0].total == 10**6 - bases
    assert prover.charge_resident(PT, 0) == 0 and adm.budgets[0].total == 10**6 - bases  # once
    small = Admission([engine.device], budget_bytes={0: bases})  # type: ignore[attr-defined]
    with pytest.raises(BudgetExceeded, match="resident"):
        AdmittedProver(host_spmv, admission=small).charge_resident(PT, 0)
