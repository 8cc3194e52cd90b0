"""WinningPoSt and WindowPoSt through ``engine serve`` over the wire, from real vanilla proofs of the
fixtures' sealed 2KiB sectors (rust-fil-proofs' sector 255; venus' two genesis sectors of miner 106), with
the CI prover double (the agent's pipeline with a toy circuit over each request's own public inputs, computed
from its public values; real Groth16 proofs by the reference engine, pairing-checked before the answer). Bad
requests (a changed randomness, a flipped Merkle node, wrong kinds, sizes, counts) FAIL with one line before
anything is loaded. The real FallbackPoSt circuit proves in the long suite (test_engine_long.py)."""

from __future__ import annotations

import secrets
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_r1cs
from _engine import assert_refused_in_one_line, running_engine
from _engine_post import RANDOMNESS, replicas, window_message, winning_message

from agent.cuzk import proving_pb2 as pb
from agent.proving.pipeline import Circuits, ProofPipeline
from agent.proving.prover import AdmittedProver
from agent.proving.work import Work, WorkKind
from gpu.groth16 import reference
from porep.post.params import post_proof_type
from porep.post.partition import post_public_inputs
from porep.post.proof import decode_sector_proof
from porep.post.vanilla import post_request

pytestmark = pytest.mark.anyio
COMPLETED = pb.AwaitProofResponse.COMPLETED
@cache
def _toy_params(n_inputs: int) -> Any:
    """The toy circuit's parameters (the reference setup: seconds for 132 inputs), once per session."""
    waste = reference.ToxicWaste(*[secrets.randbelow(2**200) + 2 for _ in range(5)])
    return reference.setup(toy_r1cs(n_inputs), waste)


def post_toy_prover(directory: Path) -> AdmittedProver:
    """The agent's prover with toy circuits: the PoSt one's inputs are the request's public inputs
    (porep.post.partition.post_public_inputs of the checked request), one parameter set per PoSt circuit."""
    directory.mkdir(parents=True, exist_ok=True)
    readers: dict[Path, Any] = {}
    for pid in (0, 10):  # 2KiB WinningPoSt; 2KiB WindowPoSt (V1 and V1_1 share it)
        pt = post_proof_type(pid)
        params = _toy_params((1 + pt.circuit_challenges) * pt.circuit_sectors)
        path = directory / f"{pt.param_stem}.params"
        params.write(path)
        readers[path] = params
    unused = ToyCircuit(1, lambda c1: [[1]])
    post = ToyCircuit(0, lambda checked: [post_public_inputs(checked)])  # its witness: [1, *inputs, 9]

    class PostCircuit:
        def r1cs(self, pt: Any) -> Any:
            return toy_r1cs((1 + pt.circuit_challenges) * pt.circuit_sectors)

        def assignment(self, checked: Any, k: int) -> Any:
            return post.assignment(checked, k)

    pipe = ProofPipeline(
        directory, engines=[ReferenceEngine()], circuits=Circuits(unused, unused, PostCircuit()),  # type: ignore[arg-type]
        cache=directory / "cache", read_params=lambda p, check: readers[p],
    )
    return AdmittedProver(pipe)


@pytest.mark.slow
async def test_winning_and_window_post_over_the_wire(fixtures_dir: Path, tmp_path: Path) -> None:
    s255, venus = replicas(fixtures_dir)
    prover = post_toy_prover(tmp_path / "p")
    win_vanilla = post_request(post_proof_type(0), RANDOMNESS, [s255])
    async with running_engine(prover, f"unix://{tmp_path}/e.sock") as (svc, stub, _):
        r = (await stub.Prove(pb.ProveRequest(submit=winning_message(win_vanilla)), timeout=60)).result
        assert r.status == COMPLETED, r.error_message
        assert len(r.proof) == 192
        work = Work.from_post(0, RANDOMNESS, win_vanilla, winning=True, miner=1000)
        assert work.kind is WorkKind.WINNING_POST and work.partitions == 1
        verifier = prover.pipeline.verifier
        assert verifier.verify(work, r.proof).ok
        other = bytes([RANDOMNESS[0] ^ 1]) + RANDOMNESS[1:]
        moved = Work.from_post(0, other, post_request(post_proof_type(0), other, [s255]), winning=True)
        assert not verifier.verify(moved, r.proof).ok  # bound to its randomness (its challenges)

        for registered, partition in ((10, 3), (5, 3), (5, 0)):  # V1_1 and V1; the partition matters for V1
            pt = post_proof_type(registered)
            vanilla = post_request(pt, RANDOMNESS, venus, partition)
            msg = window_message(vanilla, partition, registered)
            r = (await stub.Prove(pb.ProveRequest(submit=msg), timeout=60)).result
            assert r.status == COMPLETED, r.error_message
            w = Work.from_post(registered, RANDOMNESS, vanilla, partition_index=partition, winning=False)
            assert verifier.verify(w, r.proof).ok
        # one sector in a partition of two: padded as Rust pads it (the last sector repeated)
        one = post_request(post_proof_type(10), RANDOMNESS, venus[:1], 1)
        r = (await stub.Prove(pb.ProveRequest(submit=window_message(one, 1)), timeout=60)).result
        assert r.status == COMPLETED, r.error_message
        xs = Work.from_post(10, RANDOMNESS, one, partition_index=1, winning=False).public_inputs[0]
        assert xs[:11] == xs[11:]
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert status.total_proofs_completed == 5
        assert sorted(s.circuit_id for s in status.loaded_srs) == ["winning-2k", "wpost-2k"]
        text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
        assert 'psagent_engine_jobs_total{proof_kind="window-post",status="COMPLETED"} 4.0' in text
        assert 'psagent_engine_partitions_verified_total{proof_kind="winning-post"} 1.0' in text
        assert svc.jobs.scheduler.order() == []


def _flip_node(vanilla: bytes) -> bytes:
    p, _ = decode_sector_proof(vanilla)
    raw = bytearray(vanilla)
    sib = p.sectors[0].inclusion_proofs[5].base[1].hashes[3]
    at = raw.index(sib)
    raw[at] ^= 1
    return bytes(raw)


async def test_bad_post_requests_fail_with_one_line_before_any_work(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    s255, venus = replicas(fixtures_dir)
    prover = post_toy_prover(tmp_path / "p")
    win = post_request(post_proof_type(0), RANDOMNESS, [s255])
    win_b = post_request(post_proof_type(0), RANDOMNESS, [venus[0]])
    wd = post_request(post_proof_type(10), RANDOMNESS, venus, 2)
    changed = bytes([RANDOMNESS[0] ^ 1]) + RANDOMNESS[1:]
    golden = (fixtures_dir / "curio" / "testgolden" / "post.vproof").read_bytes()
    cases = [
        ("changed randomness", winning_message(win, randomness=changed), "tree_r.index"),
        ("flipped Merkle node", winning_message([_flip_node(win[0])]), "tree_r.path"),
        ("flipped node, window", window_message([wd[0], _flip_node(wd[1])], 2), "tree_r.path"),
        ("wrong partition", window_message(wd, 3, registered=5), "tree_r.index"),
        ("two winning sectors", winning_message([*win, *win_b]), "header.sectors"),
        ("three window sectors", window_message([*wd, win[0]], 2), "header.sectors"),
        ("no vanilla proofs", window_message([], 0), "header.sectors"),
        ("short randomness", winning_message(win, randomness=RANDOMNESS[:31]),
         "randomness must be 32 raw bytes"),
        ("non-canonical randomness", winning_message(win, randomness=b"\xff" * 32), "header.randomness"),
        ("a window type", winning_message(win, registered_proof=10),
         "is a window PoSt, the request is WINNING"),
        ("not a PoSt type", winning_message(win, registered_proof=15), "is not a RegisteredPoStProof"),
        ("sector size", winning_message(win, sector_size=8 << 20), "sector_size 8388608 is not that of"),
        ("winning partition", winning_message(win, partition_index=1), "WinningPoSt has one partition"),
        ("a C1 field", winning_message(win, vanilla_proof=b"{}"), "not a vanilla_proof"),
        ("trailing bytes", winning_message([win[0] + b"\0"]), "format.trailing"),
        ("truncated", winning_message([win[0][:-1]]), "format: vanilla proof 0: truncated"),
        ("a 32GiB proof at 2KiB", window_message([golden], 0), "shape.tree_r"),
    ]
    async with running_engine(prover, "127.0.0.1:0") as (_, stub, _):
        await assert_refused_in_one_line(stub, prover, cases)
        ok = (await stub.Prove(pb.ProveRequest(submit=winning_message(win)), timeout=60)).result
        assert ok.status == COMPLETED, ok.error_message
