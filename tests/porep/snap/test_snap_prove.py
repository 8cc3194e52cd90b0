"""A 2KiB Snap request made by ``psagent snap make`` proven on the CPU: development parameters from
``psagent params generate --update --sector-size 2KiB`` (Filecoin's file names), the partition's assignment
from ``porep.snap.partition``, a Groth16 proof verified with pyblst (gpu.groth16.verifier) against the public
inputs computed from the request's commitments, never from the circuit; then the same request through the
agent's proof pipeline (``agent.proving.pipeline.ProofPipeline``, the update circuit behind its seam). The
setup (2^21 domain) and the proofs take minutes on 2 cores: long suite only (PSAGENT_SNAP_LONG=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import app
from gpu.groth16.params import Parameters, VerifyingKey
from gpu.groth16.prover import Assignment, ProvingKey, prove
from gpu.groth16.verifier import verify
from market.proofdata import Snap
from porep.snap.params import update_proof_type
from porep.snap.partition import (
    update_assignment,
    update_public_inputs,
    update_r1cs,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),  # the module fixture (seal, snap make, 2^21 setup) counts toward a test
    pytest.mark.skipif(not os.environ.get("PSAGENT_SNAP_LONG"), reason="long: set PSAGENT_SNAP_LONG=1"),
]


@pytest.fixture(scope="module")
def params_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("snap-params")
    res = CliRunner().invoke(
        app,
        [
            "params", "generate", "--update", "--sector-size", "2KiB", "--out", str(out),
            "--test-seed", "23", "--backend", "cpu",
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def test_2kib_update_proves_and_verifies_on_cpu(request_2kib: Snap, params_dir: Path) -> None:
    pt = update_proof_type(request_2kib.proof_type)
    params_path, vk_path = params_dir / f"{pt.param_stem}.params", params_dir / f"{pt.param_stem}.vk"
    assert params_path.is_file() and vk_path.is_file()
    vk = VerifyingKey.read(vk_path)
    assert vk.num_inputs == 5 and vk_path.stat().st_size == 1_348  # snap.md §6.5: 864 + 4 + 5·96
    r1cs = update_r1cs(pt)
    pk = ProvingKey(Parameters.read(params_path, subgroup_check=False), r1cs.density(), backend="cpu")
    (proof,) = prove(pk, Assignment.from_r1cs(r1cs, update_assignment(request_2kib, 0)))
    inputs = update_public_inputs(request_2kib)[0]
    assert verify(vk, proof.to_bytes(), inputs)
    for i in range(4):
        wrong = list(inputs)
        wrong[i] += 1
        assert not verify(vk, proof.to_bytes(), wrong)


def test_2kib_update_through_the_proving_loop(request_2kib: Snap, params_dir: Path, tmp_path: Path) -> None:
    from agent.proving.engine import Groth16Engine
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.work import Work
    from market.proofdata import ProofData, SectorID

    work = Work.from_bytes(ProofData.encode(SectorID(1000, 1), snap=request_2kib))
    pipe = ProofPipeline(
        params_dir,
        engines=[Groth16Engine("cpu")],
        cache=tmp_path,
        read_params=lambda path, check: Parameters.read(path, subgroup_check=False),
    )
    result = pipe.prove(work, job_id="snap-2kib")
    assert result.ok and result.verified == (True,) and len(result.proof) == 192
    vk = VerifyingKey.read(params_dir / f"{update_proof_type(0).param_stem}.vk")
    assert verify(vk, result.proof, update_public_inputs(request_2kib)[0])
