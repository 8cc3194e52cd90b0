"""Wire identity with Curio's client, checked without our stubs: request bytes written by hand from the field
numbers of docs/cuzk.md §4 are parsed by the server, and its answers are read back by hand; the committed
stubs are exactly what grpcio-tools makes of our .proto."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from _engine import running_engine, toy_prover

from agent.cuzk import proving_pb2 as pb
from agent.proving.work import Work
from market.proofdata import ProofData

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[3]
SERVICE = "/cuzk.v1.ProvingEngine/"

# -- protobuf's wire format, by hand (https://protobuf.dev/programming-guides/encoding/) ------------------


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def vfield(number: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return varint(number << 3 | 0) + varint(value)


def lfield(number: int, data: bytes | str) -> bytes:
    """A length-delimited field (wire type 2): strings, bytes, embedded messages."""
    raw = data.encode() if isinstance(data, str) else data
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def read_varint(buf: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def fields(buf: bytes) -> dict[int, list[int | bytes]]:
    """Every field of a message: number → values (varints as int, length-delimited as bytes)."""
    out: dict[int, list[int | bytes]] = {}
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(buf, i)
            out.setdefault(number, []).append(value)
        elif wire == 2:
            n, i = read_varint(buf, i)
            out.setdefault(number, []).append(buf[i : i + n])
            i += n
        else:
            raise AssertionError(f"field {number}: wire type {wire} is not used by this API")
    return out


def raw_call(channel: grpc.aio.Channel, method: str) -> grpc.aio.UnaryUnaryMultiCallable:
    """A call that sends and receives bytes as they are (no stubs, no messages)."""
    return channel.unary_unary(SERVICE + method)


def porep_request_bytes(proofdata: bytes, request_id: str) -> bytes:
    """SubmitProofRequest as Curio's PoRepSnarkCuzk fills it, field by field."""
    pd = ProofData.parse(proofdata)
    assert pd.porep is not None and pd.porep_raw is not None
    pt = pd.porep.proof_type
    wrapper = (
        b'{"SectorNum":%d,"Phase1Out":"%s","SectorSize":%d}'
        % (pd.sector_id.number, base64.b64encode(pd.porep_raw), pt.sector_size)
    )
    return b"".join([
        lfield(1, request_id),          # request_id
        vfield(2, 1),                   # proof_kind = POREP_SEAL_COMMIT
        vfield(3, pt.sector_size),      # sector_size
        vfield(4, pt.id),               # registered_proof (RegisteredSealProof)
        vfield(5, 2),                   # priority = NORMAL
        lfield(10, wrapper),            # vanilla_proof
        vfield(20, pd.sector_id.number),  # sector_number
        vfield(21, pd.sector_id.miner),   # miner_id
    ])


def snap_request_bytes(proofdata: bytes, request_id: str) -> bytes:
    """SubmitProofRequest as ProofShare's computeSnap fills it (no sector_size)."""
    pd = ProofData.parse(proofdata)
    assert pd.snap is not None
    s = pd.snap
    return b"".join([
        lfield(1, request_id),
        vfield(2, 2),                   # SNAP_DEALS_UPDATE
        vfield(4, s.proof_type),        # registered_proof (RegisteredUpdateProof)
        vfield(5, 2),
        *(lfield(11, p) for p in s.proofs),  # vanilla_proofs, one per partition
        vfield(20, pd.sector_id.number),
        vfield(21, pd.sector_id.miner),
        lfield(30, s.old_r),            # comm_r_old
        lfield(31, s.new_r),            # comm_r_new
        lfield(32, s.new_d),            # comm_d_new
    ])


def check_answer(raw: bytes, job_id: str | None = None) -> dict[int, list[int | bytes]]:
    """An AwaitProofResponse read by hand: only the fields of §4, each with its wire type."""
    f = fields(raw)
    assert set(f) <= {1, 2, 3, 4, 10, 11, 12, 13, 14}, sorted(f)
    for n in (1, 3, 4):
        assert all(isinstance(v, bytes) for v in f.get(n, []))
    for n in (2, 10, 11, 12, 13, 14):
        assert all(isinstance(v, int) for v in f.get(n, []))
    if job_id is not None:
        assert f[1] == [job_id.encode()]
    return f


async def test_hand_written_requests_are_understood_and_answers_read_by_hand(
    mixed_pool: object, porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    verifier = prover.pipeline.verifier
    async with running_engine(prover, "127.0.0.1:0") as (_, _, channel):
        # Prove: ProveRequest{submit = 1}, ProveResponse{result = 1}
        porep = mixed_pool.make_porep()  # type: ignore[attr-defined]
        raw = await raw_call(channel, "Prove")(lfield(1, porep_request_bytes(porep, "porep-1000-1")))
        top = fields(raw)
        assert set(top) == {1}
        answer = check_answer(top[1][0])  # type: ignore[arg-type]
        assert answer[2] == [1], answer.get(4)  # status COMPLETED
        proof = answer[3][0]
        assert isinstance(proof, bytes) and len(proof) == 192
        assert verifier.verify(Work.from_bytes(porep), proof).ok  # the proof of the request sent by hand
        job_id = answer[1][0]
        assert isinstance(job_id, bytes) and job_id.startswith(b"porep-1000-1#")
        assert answer.get(14, [0])[0] >= answer.get(13, [0])[0]  # total_ms >= gpu_compute_ms

        # SubmitProof → SubmitProofResponse{job_id = 1, queue_position = 2, assigned_gpu = 3}
        snap = mixed_pool.make_snap()  # type: ignore[attr-defined]
        sub = fields(await raw_call(channel, "SubmitProof")(snap_request_bytes(snap, "ps-snap-1000-2-9")))
        assert set(sub) <= {1, 2, 3} and sub[1][0].startswith(b"ps-snap-1000-2-9#")  # type: ignore[union-attr]
        snap_job = sub[1][0].decode()  # type: ignore[union-attr]
        # AwaitProof{job_id = 1, timeout_ms = 2}
        awaited = check_answer(
            await raw_call(channel, "AwaitProof")(lfield(1, snap_job) + vfield(2, 60_000)), snap_job
        )
        assert awaited[2] == [1], awaited.get(4)
        assert verifier.verify(Work.from_bytes(snap), awaited[3][0]).ok  # type: ignore[arg-type]

        # a PoSt kind written by hand (WINDOW_POST_PARTITION = 3, registered_proof 0 = a WinningPoSt type):
        # FAILED = 2, saying so
        post = lfield(1, "wdpost-1000-0-[1 2 3]") + vfield(2, 3) + vfield(5, 3) + lfield(22, bytes(32))
        refused = check_answer(fields(await raw_call(channel, "Prove")(lfield(1, post)))[1][0])  # type: ignore[arg-type]
        assert refused[2] == [2] and b"is a winning PoSt, the request is WINDOW" in refused[4][0]  # type: ignore[operator]

        # CancelProof{job_id = 1} → {was_running = 1}; GetStatus's repeated messages by hand
        done = fields(await raw_call(channel, "CancelProof")(lfield(1, snap_job)))
        assert done.get(1, [0]) == [0]  # an ended job was not running (false is the empty message)
        status = fields(await raw_call(channel, "GetStatus")(b""))
        assert set(status) <= {1, 2, 3, 4, 5, 6, 7, 8}
        queues = [fields(q) for q in status[3]]  # type: ignore[arg-type]
        assert sorted(q[1][0] for q in queues) == [  # type: ignore[type-var]
            b"porep-c2", b"snap-update", b"window-post", b"winning-post"
        ]
        srs = sorted(fields(s)[1][0] for s in status[2])  # type: ignore[arg-type,type-var]
        assert srs == [b"porep-2k", b"snap-2k"]
        assert status[4] == [2] and status[5] == [1]  # completed, failed (the bad PoSt)


def test_the_stubs_carry_the_numbers_of_the_facts() -> None:
    """The generated descriptor against docs/cuzk.md §4 (names, numbers, enum values)."""
    d = pb.DESCRIPTOR
    assert d.package == "cuzk.v1"
    service = d.services_by_name["ProvingEngine"]
    assert {m.name: (m.input_type.name, m.output_type.name) for m in service.methods} == {
        "SubmitProof": ("SubmitProofRequest", "SubmitProofResponse"),
        "AwaitProof": ("AwaitProofRequest", "AwaitProofResponse"),
        "Prove": ("ProveRequest", "ProveResponse"),
        "CancelProof": ("CancelProofRequest", "CancelProofResponse"),
        "GetStatus": ("GetStatusRequest", "GetStatusResponse"),
        "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse"),
        "PreloadSRS": ("PreloadSrsRequest", "PreloadSrsResponse"),
        "EvictSRS": ("EvictSrsRequest", "EvictSrsResponse"),
    }
    numbers = {
        "SubmitProofRequest": {"request_id": 1, "proof_kind": 2, "sector_size": 3, "registered_proof": 4,
                               "priority": 5, "vanilla_proof": 10, "vanilla_proofs": 11, "sector_number": 20,
                               "miner_id": 21, "randomness": 22, "partition_index": 23, "comm_r_old": 30,
                               "comm_r_new": 31, "comm_d_new": 32},
        "SubmitProofResponse": {"job_id": 1, "queue_position": 2, "assigned_gpu": 3},
        "AwaitProofRequest": {"job_id": 1, "timeout_ms": 2},
        "AwaitProofResponse": {"job_id": 1, "status": 2, "proof": 3, "error_message": 4, "queue_wait_ms": 10,
                               "srs_load_ms": 11, "synthesis_ms": 12, "gpu_compute_ms": 13, "total_ms": 14},
        "ProveRequest": {"submit": 1},
        "ProveResponse": {"result": 1},
        "CancelProofRequest": {"job_id": 1},
        "CancelProofResponse": {"was_running": 1},
        "GetStatusRequest": {},
        "GetStatusResponse": {"gpus": 1, "loaded_srs": 2, "queues": 3, "total_proofs_completed": 4,
                              "total_proofs_failed": 5, "uptime_seconds": 6, "pinned_memory_bytes": 7,
                              "pinned_memory_limit_bytes": 8},
        "GPUStatus": {"ordinal": 1, "name": 2, "vram_total_bytes": 3, "vram_free_bytes": 4,
                      "current_job_id": 5, "current_proof_kind": 6},
        "SRSStatus": {"circuit_id": 1, "tier": 2, "size_bytes": 3, "ref_count": 4},
        "QueueStatus": {"proof_kind": 1, "pending": 2, "in_progress": 3},
        "PreloadSrsRequest": {"circuit_id": 1},
        "PreloadSrsResponse": {"already_loaded": 1, "load_time_ms": 2},
        "EvictSrsRequest": {"circuit_id": 1},
        "EvictSrsResponse": {"was_loaded": 1, "freed_bytes": 2},
        "GetMetricsRequest": {},
        "GetMetricsResponse": {"prometheus_text": 1},
    }
    assert set(d.message_types_by_name) == set(numbers)
    for name, want in numbers.items():
        assert {f.name: f.number for f in d.message_types_by_name[name].fields} == want, name
    enums = {e.name: {v.name: v.number for v in e.values} for e in d.enum_types_by_name.values()}
    assert enums == {
        "ProofKind": {"PROOF_KIND_UNSPECIFIED": 0, "POREP_SEAL_COMMIT": 1, "SNAP_DEALS_UPDATE": 2,
                      "WINDOW_POST_PARTITION": 3, "WINNING_POST": 4},
        "Priority": {"PRIORITY_UNSPECIFIED": 0, "LOW": 1, "NORMAL": 2, "HIGH": 3, "CRITICAL": 4},
    }
    status = d.message_types_by_name["AwaitProofResponse"].enum_types_by_name["Status"]
    assert {v.name: v.number for v in status.values} == {
        "UNKNOWN": 0, "COMPLETED": 1, "FAILED": 2, "CANCELLED": 3, "TIMEOUT": 4
    }
    tier = d.message_types_by_name["SRSStatus"].enum_types_by_name["Tier"]
    assert {v.name: v.number for v in tier.values} == {"HOT": 0, "WARM": 1, "COLD": 2}
    from agent.cuzk.jobs import Status
    from agent.cuzk.request import ProofKind

    assert {k.name: int(k) for k in ProofKind} == enums["ProofKind"]
    assert {s.name: int(s) for s in Status} == {v.name: v.number for v in status.values}


def test_regenerating_the_stubs_changes_nothing(tmp_path: Path) -> None:
    """``make proto``'s command into a scratch directory gives the committed files byte for byte."""
    out = tmp_path / "gen"
    out.mkdir()
    cmd = [sys.executable, "-m", "grpc_tools.protoc", "-I.", f"--python_out={out}", f"--pyi_out={out}",
           f"--grpc_python_out={out}", "agent/cuzk/proving.proto"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("proving_pb2.py", "proving_pb2.pyi", "proving_pb2_grpc.py"):
        made = (out / "agent" / "cuzk" / name).read_bytes()
        assert made == (REPO / "agent" / "cuzk" / name).read_bytes(), f"{name} differs: run make proto"
