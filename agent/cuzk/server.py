"""The cuzk server (``psagent engine serve``): the ``cuzk.v1.ProvingEngine`` gRPC service over the agent's own
prover.

The service translates messages (``agent/cuzk/proving.proto``) to and from the job table
(:mod:`agent.cuzk.jobs`), which proves through :class:`~agent.proving.prover.AdmittedProver`: the admission,
pipeline and pairing check the agent uses, nothing else. A bad request is an answer (``FAILED`` with one
line), never an RPC error; RPC errors are kept for what is not an answer: an unknown job (NOT_FOUND), a
full job table (RESOURCE_EXHAUSTED), an unknown circuit id (INVALID_ARGUMENT), parameters missing
(FAILED_PRECONDITION), a message over 256 MiB (RESOURCE_EXHAUSTED, from gRPC itself).

:class:`CuzkServer` binds a Unix socket (made ``socket_mode``, for Curio's user) or a TCP address;
:func:`serve` is the service's life: warm-up, bind, systemd READY, watchdog pings, and on SIGTERM the calls
in flight cancelled (their jobs with them: Curio retries the task) before exit.

gRPC's aio server runs on asyncio and runs each call in a task of its own; every task of ours is owned by an
anyio task group: the jobs' by :meth:`~agent.cuzk.jobs.Jobs.running` (open from :meth:`CuzkServer.start` to
:meth:`CuzkServer.stop`), the watchdog's and the stop watcher's by :func:`serve`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio
import grpc

from agent.admission import CPU_SLOT
from agent.config import parse_listen
from agent.cuzk import proving_pb2 as pb
from agent.cuzk import proving_pb2_grpc as pb_grpc
from agent.cuzk.jobs import AmbiguousJob, Job, JobNotFound, Jobs, JobState, Outcome, TooManyJobs
from agent.cuzk.request import SERVED, ProofRequest, RequestError, circuit_id, circuit_proof_type
from agent.sdnotify import Notifier

if TYPE_CHECKING:
    from anyio.abc import TaskGroup, TaskStatus
    from grpc.aio import ServicerContext as Context  # a call's: Context[request type, response type]

    from agent.proving.prover import AdmittedProver
    from gpu.device import Device
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = [
    "CuzkServer",
    "CuzkService",
    "MAX_MESSAGE_BYTES",
    "answer_of",
    "check_listen",
    "request_of",
    "serve",
]

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 << 20  # what Curio's client sends and receives at most (docs/cuzk.md §4)
STATUS_DEVICE_S = 2.0  # a device that does not answer its memory query in this long is reported without it


def request_of(msg: pb.SubmitProofRequest) -> ProofRequest:
    return ProofRequest(
        request_id=msg.request_id,
        proof_kind=int(msg.proof_kind),
        sector_size=msg.sector_size,
        registered_proof=msg.registered_proof,
        priority=int(msg.priority),
        vanilla_proof=bytes(msg.vanilla_proof),
        vanilla_proofs=tuple(bytes(p) for p in msg.vanilla_proofs),
        sector_number=msg.sector_number,
        miner_id=msg.miner_id,
        randomness=bytes(msg.randomness),
        partition_index=msg.partition_index,
        comm_r_old=bytes(msg.comm_r_old),
        comm_r_new=bytes(msg.comm_r_new),
        comm_d_new=bytes(msg.comm_d_new),
    )


def answer_of(job_id: str, outcome: Outcome) -> pb.AwaitProofResponse:
    return pb.AwaitProofResponse(
        job_id=job_id,
        status=int(outcome.status),  # type: ignore[arg-type]
        proof=outcome.proof,
        error_message=outcome.error,
        queue_wait_ms=outcome.queue_wait_ms,
        srs_load_ms=outcome.srs_load_ms,
        synthesis_ms=outcome.synthesis_ms,
        gpu_compute_ms=outcome.gpu_compute_ms,
        total_ms=outcome.total_ms,
    )


class CuzkService:
    """The eight methods of ``cuzk.v1.ProvingEngine`` (registered with the generated
    ``add_ProvingEngineServicer_to_server``)."""

    def __init__(
        self,
        jobs: Jobs,
        prover: AdmittedProver,
        *,
        memory_info: Callable[[Device], tuple[int, int] | None] | None = None,
    ) -> None:
        """``memory_info``: (free, total) device bytes of a device (default: ``Device.memory_info``, from
        the driver)."""
        self.jobs = jobs
        self.prover = prover
        self.memory_info = memory_info or (lambda d: d.memory_info())
        self.warming: str | None = None  # while set, proofs are refused UNAVAILABLE (GetStatus answers)

    async def _not_warming(self, context: Context[Any, Any]) -> None:
        if self.warming is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"warming up: {self.warming}; try again")

    async def SubmitProof(
        self, request: pb.SubmitProofRequest, context: Context[pb.SubmitProofRequest, pb.SubmitProofResponse]
    ) -> pb.SubmitProofResponse:
        await self._not_warming(context)
        try:
            job, _ = self.jobs.submit(request_of(request), pinned=True)
        except TooManyJobs as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        return pb.SubmitProofResponse(
            job_id=job.job_id, queue_position=self.jobs.queue_position(job), assigned_gpu=_device_name(job)
        )

    async def AwaitProof(
        self, request: pb.AwaitProofRequest, context: Context[pb.AwaitProofRequest, pb.AwaitProofResponse]
    ) -> pb.AwaitProofResponse:
        job = await self._find(request.job_id, context)
        timeout = request.timeout_ms / 1000 if request.timeout_ms else None
        outcome = await self.jobs.wait(job, timeout)
        return answer_of(job.job_id, outcome)

    async def Prove(
        self, request: pb.ProveRequest, context: Context[pb.ProveRequest, pb.ProveResponse]
    ) -> pb.ProveResponse:
        await self._not_warming(context)
        try:
            job, outcome = await self.jobs.prove(request_of(request.submit))
        except TooManyJobs as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        return pb.ProveResponse(result=answer_of(job.job_id, outcome))

    async def CancelProof(
        self, request: pb.CancelProofRequest, context: Context[pb.CancelProofRequest, pb.CancelProofResponse]
    ) -> pb.CancelProofResponse:
        job = await self._find(request.job_id, context)
        return pb.CancelProofResponse(was_running=self.jobs.cancel(job))

    async def GetStatus(
        self, request: pb.GetStatusRequest, context: Context[pb.GetStatusRequest, pb.GetStatusResponse]
    ) -> pb.GetStatusResponse:
        open_jobs = self.jobs.open_jobs()
        running = [j for j in open_jobs if j.state is JobState.RUNNING]
        gpus = []
        for slot in self.prover.slots:
            if slot is CPU_SLOT:
                continue
            mem = await self._memory(slot)
            here = [j for j in running if j.device is not None and j.device.index == slot.index]
            gpus.append(pb.GPUStatus(
                ordinal=slot.index,
                name=slot.name,
                vram_total_bytes=mem[1] if mem else 0,
                vram_free_bytes=mem[0] if mem else 0,
                current_job_id=",".join(j.job_id for j in here),
                current_proof_kind=",".join(sorted({j.kind_label for j in here})),
            ))
        loaded: dict[str, int] = {}
        for _, pt, nbytes in self.prover.pipeline.loaded_shapes():
            cid = circuit_id(pt)
            loaded[cid] = loaded.get(cid, 0) + nbytes
        srs = [
            pb.SRSStatus(
                circuit_id=cid, tier=pb.SRSStatus.HOT, size_bytes=nbytes,
                ref_count=sum(1 for j in running if j.circuit == cid),
            )
            for cid, nbytes in sorted(loaded.items())
        ]
        queues = []
        for kind in SERVED:
            mine = [j for j in open_jobs if j.kind is kind]
            queues.append(pb.QueueStatus(
                proof_kind=kind.label,
                pending=sum(1 for j in mine if j.state is not JobState.RUNNING),
                in_progress=sum(1 for j in mine if j.state is JobState.RUNNING),
            ))
        completed, failed = self.jobs.totals()
        host = self.prover.pipeline.host
        return pb.GetStatusResponse(
            gpus=gpus, loaded_srs=srs, queues=queues, total_proofs_completed=completed,
            total_proofs_failed=failed, uptime_seconds=int(self.jobs.uptime_s()),
            pinned_memory_bytes=host.used, pinned_memory_limit_bytes=host.total,
        )

    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: Context[pb.GetMetricsRequest, pb.GetMetricsResponse]
    ) -> pb.GetMetricsResponse:
        return pb.GetMetricsResponse(prometheus_text=self.jobs.metrics_text())

    async def PreloadSRS(
        self, request: pb.PreloadSrsRequest, context: Context[pb.PreloadSrsRequest, pb.PreloadSrsResponse]
    ) -> pb.PreloadSrsResponse:
        pt = await self._circuit(request.circuit_id, context)
        if self.prover.loaded(pt):
            return pb.PreloadSrsResponse(already_loaded=True, load_time_ms=0)
        try:
            seconds = await self.prover.preload(pt)
        except FileNotFoundError as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        log.info("PreloadSRS %s: loaded in %.1f s", request.circuit_id, seconds)
        return pb.PreloadSrsResponse(already_loaded=False, load_time_ms=round(seconds * 1000))

    async def EvictSRS(
        self, request: pb.EvictSrsRequest, context: Context[pb.EvictSrsRequest, pb.EvictSrsResponse]
    ) -> pb.EvictSrsResponse:
        pt = await self._circuit(request.circuit_id, context)
        cid = circuit_id(pt)
        users = [j.job_id for j in self.jobs.open_jobs() if j.circuit == cid]
        if users:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{cid} is in use by {len(users)} open job(s) ({', '.join(users[:5])}): not evicted",
            )
        if not self.prover.loaded(pt) and not any(p.param_stem == pt.param_stem
                                                  for _, p, _ in self.prover.pipeline.loaded_shapes()):
            return pb.EvictSrsResponse(was_loaded=False, freed_bytes=0)
        freed = await anyio.to_thread.run_sync(self.prover.evict, pt)
        log.info("EvictSRS %s: %d device bytes freed", cid, freed)
        return pb.EvictSrsResponse(was_loaded=True, freed_bytes=freed)

    async def _find(self, job_id: str, context: Context[Any, Any]) -> Job:
        try:
            return self.jobs.find(job_id)
        except JobNotFound as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except AmbiguousJob as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise AssertionError("unreachable")  # context.abort raises

    async def _circuit(
        self, cid: str, context: Context[Any, Any]
    ) -> ProofType | UpdateProofType | PoStProofType:
        try:
            return circuit_proof_type(cid)
        except RequestError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        raise AssertionError("unreachable")  # context.abort raises

    async def _memory(self, slot: Device) -> tuple[int, int] | None:
        with anyio.move_on_after(STATUS_DEVICE_S):
            try:
                return await anyio.to_thread.run_sync(self.memory_info, slot, abandon_on_cancel=True)
            except Exception as exc:  # noqa: BLE001 - a status page reports what it can
                log.warning("GetStatus: device %d memory unknown: %s", slot.index, exc)
        return None


def _device_name(job: Job) -> str:
    if job.device is None:
        return ""
    return "cpu" if job.device is CPU_SLOT else f"cuda:{job.device.index}"


# -- binding ---------------------------------------------------------------------------------------------


def check_listen(listen: str) -> None:
    """Before any warm-up: OSError (one line) when ``listen`` cannot be bound — a missing or read-only socket
    directory, a file in the socket's place, a TCP address in use or not on this host."""
    address, path, _ = parse_listen(listen)
    if path is not None:
        parent = path.parent
        if not parent.is_dir():
            raise OSError(f"directory {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OSError(f"directory {parent} is not writable")
        if path.is_symlink() or (path.exists() and not stat.S_ISSOCK(path.stat().st_mode)):
            raise OSError(f"{path} exists and is not a socket")
        return
    host, _, port = address.rpartition(":")
    try:
        infos = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"{host}: {exc.strerror}") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(addr)
        except OSError as exc:
            raise OSError(exc.strerror) from None


class CuzkServer:
    """The gRPC server of one :class:`CuzkService` on one address. :meth:`start` and :meth:`stop` are called
    from one task (the owner of the jobs' task group, :meth:`~agent.cuzk.jobs.Jobs.running`)."""

    def __init__(self, service: CuzkService, listen: str, *, socket_mode: int = 0o660) -> None:
        self.service = service
        self.address, self.socket, self.loopback = parse_listen(listen)
        self.socket_mode = socket_mode
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self._jobs: AsyncExitStack | None = None  # the jobs' task group while serving

    @property
    def target(self) -> str:
        """Where a client connects (the real port when 0 was asked for)."""
        if self.socket is not None:
            return f"unix:{self.socket}"
        host = self.address.rpartition(":")[0]
        return f"{host}:{self.port}"

    def check(self) -> None:
        """:func:`check_listen` of this server's address."""
        check_listen(self.address)

    async def start(self) -> str:
        """Bind and serve, the jobs' task group open; the target. OSError saying why the address cannot be
        bound."""
        self.check()
        if self.socket is not None and self.socket.exists():
            self.socket.unlink()  # a socket left by a server that did not stop cleanly
        if self.socket is None and not self.loopback:
            log.warning(
                "listening on %s: not loopback; anyone who reaches it can submit proofs (there is no "
                "authentication: firewall it to Curio's hosts)", self.address
            )
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ])
        pb_grpc.add_ProvingEngineServicer_to_server(self.service, server)
        try:
            self.port = server.add_insecure_port(self.address)
        except RuntimeError as exc:
            raise OSError(f"{self.address}: cannot bind ({exc})") from None
        if self.socket is None and not self.port:
            raise OSError(f"{self.address}: cannot bind")
        jobs = AsyncExitStack()
        await jobs.enter_async_context(self.service.jobs.running())
        try:
            await server.start()
        except BaseException:
            await jobs.aclose()
            raise
        self.server, self._jobs = server, jobs
        if self.socket is not None:
            os.chmod(self.socket, self.socket_mode)
        log.info("serving cuzk.v1.ProvingEngine on %s", self.target)
        return self.target

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, cancel the calls still in flight after ``grace_s``, then cancel every open job and
        wait for it (a running one stops at its next partition boundary)."""
        if self.server is not None:
            await self.server.stop(grace_s)
            self.server = None
        if self._jobs is not None:
            jobs, self._jobs = self._jobs, None
            await jobs.aclose()
        if self.socket is not None:
            try:
                self.socket.unlink()
            except FileNotFoundError:
                pass


async def serve(
    server: CuzkServer,
    *,
    warm_up: Callable[[], None] | None = None,
    notifier: Notifier | None = None,
    stop: asyncio.Event | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Bind, warm up (in a thread), tell systemd READY and serve until SIGTERM / SIGINT (or ``stop``); then
    stop accepting, cancel the calls in flight (and so their jobs) and return. systemd's watchdog is pinged
    from the start, warm-up included. The port is bound before the warm-up (minutes for 32GiB): GetStatus
    answers meanwhile, so Curio sees the server alive, and a proof asked for is refused UNAVAILABLE until
    the warm-up has passed. The watchdog and the stop watcher are tasks of one task group, the jobs of the
    server's own (:meth:`CuzkServer.start`): none outlives this call."""
    notifier = notifier or Notifier()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    handled = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as tasks:
            pings = await tasks.start(_watchdog, notifier, name="psagent-cuzk-watchdog")
            try:
                await _serve_until(
                    stop, server, tasks, pings, warm_up=warm_up, notifier=notifier, ready=ready
                )
            except Exception as exc:  # raised below as it is, not inside the task group's ExceptionGroup
                failure = exc
            tasks.cancel_scope.cancel()  # the watchdog and the stop watcher end with the service
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)
    if failure is not None:
        raise failure


async def _serve_until(
    stop: asyncio.Event,
    server: CuzkServer,
    tasks: TaskGroup,
    pings: anyio.CancelScope,
    *,
    warm_up: Callable[[], None] | None,
    notifier: Notifier,
    ready: Callable[[str], None] | None,
) -> None:
    """:func:`serve`'s life between bind and stop; ``tasks`` owns the stop watcher. However this ends, the
    watchdog's pings (``pings``) end and then the server is stopped."""
    serving = False
    try:
        if warm_up is not None:
            server.service.warming = "parameters, kernels, self-test proof"
        target = await server.start()
        with anyio.CancelScope() as until_stopped:
            tasks.start_soon(_cancel_when_set, stop, until_stopped, name="psagent-cuzk-stop")
            if warm_up is not None:
                notifier.status(f"warming up on {target}: parameters, kernels, self-test proof")
                log.info("listening on %s (GetStatus answers; proofs once warmed up); warming up", target)
                t0 = time.perf_counter()
                await anyio.to_thread.run_sync(warm_up, abandon_on_cancel=True)
                server.service.warming = None
                log.info("warm-up done in %.1f s", time.perf_counter() - t0)
            notifier.ready(f"serving cuzk.v1.ProvingEngine on {target}")
            serving = True
            if ready is not None:
                ready(target)
            await anyio.sleep_forever()
        if serving:
            notifier.stopping("stopping: calls in flight are cancelled")
        else:
            log.info("stopping during warm-up (its thread ends on its own)")
    finally:
        pings.cancel()
        await server.stop()


async def _watchdog(notifier: Notifier, *, task_status: TaskStatus[anyio.CancelScope]) -> None:
    """systemd's WATCHDOG=1 every interval (half systemd's WatchdogSec) until its scope, handed to the
    starter, is cancelled."""
    interval = notifier.watchdog_interval_s or 5.0
    with anyio.CancelScope() as pings:
        task_status.started(pings)
        while True:
            notifier.watchdog()
            await anyio.sleep(interval)


async def _cancel_when_set(stop: asyncio.Event, scope: anyio.CancelScope) -> None:
    await stop.wait()
    scope.cancel()
