"""The engine with the real 2KiB provers on the CPU (``make test-engine-long``; not in CI): built by the
composition root from a configuration as ``psagent engine serve`` builds it, warmed up (parameters loaded, a
self-test proof), then a Curio-shaped PoRep C1 wrapper and a Snap request (both real: a sealed sector's C1,
a CC sector updated with fresh data) proven through ``Prove`` over a Unix socket and over TCP. Each proof is
verified again outside the engine, against the verifying keys read from the ``.vk`` files, and a flipped
byte is refused. Development parameters come from the user's cache (made once; the update setup takes many
minutes the first time)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from _engine import assert_checks_outside, engine_serve, porep_message, snap_message

from agent.cuzk import proving_pb2 as pb
from agent.proving.work import Work

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not os.environ.get("PSAGENT_ENGINE_LONG"), reason="real 2KiB provers: make test-engine-long"
    ),
]


@pytest.mark.timeout(5400)
async def test_real_2kib_porep_and_snap_through_prove(mixed_pool: Any, tmp_path: Path) -> None:
    from agent.config import Settings, cache_dir
    from agent.proving.parameters import ensure_dev_params
    from agent.proving.verifier import HostVerifier
    from porep.prooftypes import proof_type
    from porep.snap.params import for_sector_size

    params_dir = cache_dir() / "params-dev"
    pt = proof_type("StackedDrg2KiBV1_1")
    for t in (pt, for_sector_size(pt.sector_size)):
        await anyio.to_thread.run_sync(lambda t=t: ensure_dev_params(t, params_dir, cache=cache_dir()))
    lines: list[str] = []
    for listen in (f"unix://{tmp_path}/engine.sock", "127.0.0.1:0"):
        settings = Settings(
            prover={"backend": "cpu", "params_dir": str(params_dir), "allow_development_params": True},
            engine={"listen": listen, "preload": ["porep-2k", "snap-2k"]},
        )
        async with engine_serve(settings, 3600) as (stub, target, warm):
            verifier = HostVerifier(params_dir)  # reads the .vk files: not the engine's keys in memory
            for raw, msg in (
                (p := mixed_pool.make_porep(), porep_message(p, "porep-1000-1")),
                (s := mixed_pool.make_snap(), snap_message(s, "ps-snap-1000-2-1")),
            ):
                t1 = time.perf_counter()
                r = (await stub.Prove(pb.ProveRequest(submit=msg), timeout=1800)).result
                wall = time.perf_counter() - t1
                assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
                work = Work.from_bytes(raw)
                assert len(r.proof) == 192 * work.partitions
                assert_checks_outside(verifier, work, r.proof)
                assert r.synthesis_ms > 0 and r.gpu_compute_ms > 0 and r.total_ms >= r.synthesis_ms
                lines.append(
                    f"{target.split(':')[0]} {work.kind.value}: {wall:.1f} s wall; "
                    f"queue {r.queue_wait_ms} ms, synthesis {r.synthesis_ms} ms, "
                    f"groth16 {r.gpu_compute_ms} ms, total {r.total_ms} ms "
                    f"(warm-up {warm:.1f} s)"
                )
            status = await stub.GetStatus(pb.GetStatusRequest())
            assert status.total_proofs_completed == 2 and status.total_proofs_failed == 0
            assert sorted(s.circuit_id for s in status.loaded_srs) == ["porep-2k", "snap-2k"]
    print("\n" + "\n".join(lines))
