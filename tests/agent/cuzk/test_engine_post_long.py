"""WinningPoSt and WindowPoSt with the real 2KiB FallbackPoSt circuits on the CPU through ``engine serve``
(``make test-post-long``; not in CI): the engine built by the composition root as ``psagent engine serve``
builds it, warmed up with ``preload = ["winning-2k", "wpost-2k"]`` (development parameters made by the same
setup as ``psagent params generate --post``), then Curio-shaped requests from real vanilla proofs of the
fixtures' sealed sectors proven through ``Prove`` over a Unix socket. Each proof is verified again outside the
engine against the ``.vk`` files and the public inputs computed from the request's public values; a flipped
byte is refused; a request with a changed randomness FAILS before any proving."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest
from _engine import assert_checks_outside, engine_serve
from _engine_post import RANDOMNESS, replicas, window_message, winning_message

from agent.cuzk import proving_pb2 as pb
from agent.proving.work import Work
from porep.post.params import post_proof_type
from porep.post.vanilla import post_request

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not os.environ.get("PSAGENT_POST_LONG"), reason="real 2KiB PoSt: make test-post-long"),
]


@pytest.mark.timeout(3600)
async def test_real_2kib_winning_and_window_post_through_prove(fixtures_dir: Path, tmp_path: Path) -> None:
    from agent.config import Settings, cache_dir
    from agent.proving.parameters import ensure_dev_params
    from agent.proving.verifier import HostVerifier

    params_dir = cache_dir() / "params-dev"
    for pid in (0, 10):
        t = post_proof_type(pid)
        await anyio.to_thread.run_sync(lambda t=t: ensure_dev_params(t, params_dir, cache=cache_dir()))
    s255, venus = replicas(fixtures_dir)
    settings = Settings(
        prover={"backend": "cpu", "params_dir": str(params_dir), "allow_development_params": True},
        engine={"listen": f"unix://{tmp_path}/engine.sock", "preload": ["winning-2k", "wpost-2k"]},
    )
    lines: list[str] = []
    async with engine_serve(settings, 1800) as (stub, _, warm):
        verifier = HostVerifier(params_dir)  # reads the .vk files: not the engine's keys in memory
        win = post_request(post_proof_type(0), RANDOMNESS, [s255])
        wwork = Work.from_post(0, RANDOMNESS, win, winning=True)
        requests = [("winning", winning_message(win), wwork)]
        requests.append(("winning again (warm)", winning_message(win), wwork))
        for registered, partition in ((10, 0), (5, 3)):
            wd = post_request(post_proof_type(registered), RANDOMNESS, venus, partition)
            work = Work.from_post(registered, RANDOMNESS, wd, partition_index=partition, winning=False)
            msg = window_message(wd, partition, registered)
            requests.append((f"window {registered}/{partition}", msg, work))
        for what, msg, work in requests:
            t1 = time.perf_counter()
            r = (await stub.Prove(pb.ProveRequest(submit=msg), timeout=1200)).result
            wall = time.perf_counter() - t1
            assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
            assert len(r.proof) == 192
            assert_checks_outside(verifier, work, r.proof)
            lines.append(f"{what}: {wall:.2f} s wall; queue {r.queue_wait_ms} ms, synthesis "
                         f"{r.synthesis_ms} ms, groth16 {r.gpu_compute_ms} ms, total {r.total_ms} ms")
        changed = bytes([RANDOMNESS[0] ^ 1]) + RANDOMNESS[1:]
        r = (await stub.Prove(pb.ProveRequest(submit=winning_message(win, randomness=changed)),
                              timeout=60)).result
        assert r.status == pb.AwaitProofResponse.FAILED and "tree_r.index" in r.error_message
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert (status.total_proofs_completed, status.total_proofs_failed) == (4, 1)
        assert sorted(s.circuit_id for s in status.loaded_srs) == ["winning-2k", "wpost-2k"]
    print(f"\nwarm-up {warm:.1f} s\n" + "\n".join(lines))
