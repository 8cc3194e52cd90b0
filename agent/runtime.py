"""The composition root: the agent built from its configuration, one way for ``psagent run``, the dry run and
the reliability harness, and the cuzk server for ``psagent engine serve``.

Every key of ``[market]``, ``[prover]``, ``[store]``, ``[metrics]``, ``[retention]`` and ``[engine]`` is read
here and nowhere else in the agent (``[logging]`` by the CLI's set-up): the wallet, the market client
(timeouts, retry budget, size cap), the store (and whether ended requests keep their inputs), the prover
(backend, every configured device with an admission slot, partitions in flight per device, the memory
budget, the parameters directory, whether proofs are verified), the loops' settings, the metrics exporter
and the cuzk server's (``[engine]``) address, job limit, socket mode and preloaded circuits. Callers that
need a different piece (the dry run's mock market and throwaway wallet, the harness's fault seams) pass it
in; everything else comes from here. Kept apart from the CLI so that nothing here prints or exits (a bad
value is a :class:`~agent.config.ConfigError` naming its key), and apart from :mod:`agent.service` so the
service stays free of configuration parsing.

Also where the running agent's gate file lives (:func:`gate_file`, from ``store.url``); what is in it is
:mod:`agent.opsview.gate`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent.config import ConfigError, Settings
from agent.opsview.gate import read_gate
from agent.preflight import load_wallet, preflight, proving_devices
from agent.requester import RequestLoopSettings
from agent.service import Agent, AgentSettings, Market, RunSummary
from agent.stages import Prover, StageSettings, accepting
from agent.store import Store, open_store

if TYPE_CHECKING:
    from agent.opsview.document import StatusView
    from agent.opsview.exporter import Exporter
    from agent.opsview.metrics import AgentMetrics, ProverMetrics
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver
    from agent.proving.work import Work
    from gpu.device import Device
    from market.client import MarketClient, RetryPolicy
    from market.wallet import Wallet

__all__ = [
    "CuzkUnavailable",
    "SERVICE_CACHE_DIR",
    "ServedProver",
    "agent_settings",
    "build_agent",
    "build_pipeline",
    "build_prover",
    "cuzk_listen",
    "cuzk_prover",
    "cuzk_server",
    "find_gate",
    "gate_file",
    "gate_files",
    "load_wallet",
    "market_client",
    "open_configured_store",
    "proving_devices",
    "retry_policy",
    "run",
    "serve_cuzk",
    "start_metrics",
]

log = logging.getLogger(__name__)


class ServedProver(Prover, Protocol):
    """What the service needs of its prover beyond proving: how many jobs it runs at once (one prove loop
    each) and the readiness gate's warm-up (``agent.proving.prover.AdmittedProver``; a double in the
    reliability harness)."""

    @property
    def capacity(self) -> int: ...
    def warm_up(self) -> None: ...


def open_configured_store(settings: Settings, *, create: bool = True, **options: Any) -> Store:
    """``store.url``, ended requests keeping their inputs only when ``retention.discard_inputs`` is false;
    ``create`` False: a missing SQLite file is an error (``psagent status`` never creates a store);
    ``options`` (heartbeat_s, stale_after_s, clock) go to the backend."""
    from agent.store import StoreError

    try:
        return open_store(
            settings.store.url, create=create, discard_inputs=settings.retention.discard_inputs, **options
        )
    except StoreError as e:
        raise ConfigError(f"store.url: {e}") from None


def retry_policy(
    settings: Settings,
    *,
    initial_s: float | None = None,
    max_s: float | None = None,
    attempt_s: float | None = None,
    fetch_attempt_s: float | None = None,
) -> RetryPolicy:
    """The market client's retries: ``market.retry_budget_s`` in all; the others (None: the client's
    defaults) set the backoff and per-try limits (the reliability harness shortens them)."""
    from market.client import RetryPolicy

    p = RetryPolicy(budget_s=settings.market.retry_budget_s)
    return RetryPolicy(
        initial_s=p.initial_s if initial_s is None else initial_s,
        max_s=p.max_s if max_s is None else max_s,
        budget_s=p.budget_s,
        attempt_s=p.attempt_s if attempt_s is None else attempt_s,
        fetch_attempt_s=p.fetch_attempt_s if fetch_attempt_s is None else fetch_attempt_s,
    )


def market_client(
    settings: Settings, signer: Wallet, *, url: str | None = None, retry: RetryPolicy | None = None
) -> MarketClient:
    """The market client of ``market.url`` (or ``url``: the dry run's mock), ``request_timeout_s`` per
    request, ``retry_budget_s`` of retries, ``max_request_bytes`` of request data at most."""
    from market.client import MarketClient

    m = settings.market
    return MarketClient(
        url or m.url, signer, timeout_s=m.request_timeout_s, retry=retry or retry_policy(settings),
        max_request_bytes=m.max_request_bytes,
    )


def build_pipeline(
    settings: Settings,
    *,
    params_dir: Path | None = None,
    cache: Path | None = None,
    list_devices: Callable[[], Sequence[Device]] | None = None,
) -> ProofPipeline:
    """The proof pipeline of ``[prover]`` (also ``psagent prove``'s and ``bench e2e``'s): one engine per
    configured device (one CPU engine on the CPU), each with the engine options of ``[prover]`` (device SpMV,
    parameters to the device, PTX, CPU threads), ``partition_workers`` partitions of a proof in flight per
    device, parameters from ``params_dir`` (default ``prover.params_dir``)."""
    from agent.config import cache_dir, engine_options
    from agent.proving.engine import Engine, Groth16Engine
    from agent.proving.pipeline import ProofPipeline
    from gpu.options import configure

    p = settings.prover
    backend, devices = proving_devices(settings, list_devices)
    options = engine_options(settings)
    try:
        configure(options)  # the per-process part: the PTX product, the CPU threads
    except RuntimeError as exc:
        raise ConfigError(f"prover.ptx: {exc}") from None
    engines: list[Engine] = (
        [Groth16Engine(backend, d, options=options) for d in devices]
        if devices
        else [Groth16Engine(backend, options=options)]
    )
    return ProofPipeline(
        params_dir if params_dir is not None else p.params_dir,
        engines=engines,
        cache=cache if cache is not None else cache_dir(),
        workers=p.partition_workers,
    )


def build_prover(
    settings: Settings,
    *,
    params_dir: Path | None = None,
    cache: Path | None = None,
    list_devices: Callable[[], Sequence[Device]] | None = None,
    metrics: ProverMetrics | None = None,
    jobs_per_device: int = 1,
    official_only: bool | None = None,
) -> AdmittedProver:
    """The agent's prover from ``[prover]``: :func:`build_pipeline` behind admission, each device with its
    slot and its engine's device budget (``device_memory_gib``), every partition verified unless
    ``verify_before_submit`` is false (its debug switch set), the readiness gate loading the parameters of
    ``accepted_proof_types``;
    ``metrics``: where the prover records proofs, partition stages, devices and loaded parameters;
    ``official_only``: whether the gate refuses parameter files that are not the official ones (None: unless
    ``allow_development_params``; the dry run and the mock market pass False); ``jobs_per_device``: proofs
    admitted to a device at once (``bench e2e``'s steady state)."""
    p = settings.prover
    pipeline = build_pipeline(settings, params_dir=params_dir, cache=cache, list_devices=list_devices)
    porep, snap = p.accepted()
    return _admitted(
        settings, pipeline, (porep, snap, ()), metrics, jobs_per_device=jobs_per_device,
        official_only=official_only,
    )


def _admitted(
    settings: Settings,
    pipeline: ProofPipeline,
    accepted: tuple[Sequence[str], Sequence[str], Sequence[str]],
    metrics: ProverMetrics | None,
    *,
    jobs_per_device: int = 1,
    official_only: bool | None = None,
) -> AdmittedProver:
    """``pipeline`` behind admission as ``[prover]`` says (each device's budget its engine's, the pairing
    check unless ``verify_before_submit``'s debug switch is set); ``accepted``: the (PoRep, update, PoSt)
    proof type names whose parameters the warm-up loads; ``jobs_per_device`` and ``official_only`` as
    ``AdmittedProver``'s (None: official files only unless ``prover.allow_development_params``)."""
    from agent.proving.prover import AdmittedProver

    porep, snap, post = accepted
    if official_only is None:
        official_only = not settings.prover.allow_development_params
    return AdmittedProver(
        pipeline,
        accepted=porep,
        accepted_update=snap,
        accepted_post=post,
        verify=settings.prover.verify_before_submit,
        metrics=metrics,
        jobs_per_device=jobs_per_device,
        official_only=official_only,
    )


def agent_settings(settings: Settings, *, prover_slots: int = 1, max_attempts: int = 3) -> AgentSettings:
    """The loops' settings from ``[market]`` and ``[retention]``; ``prover_slots``: the prover's capacity
    (one prove loop per admission slot)."""
    m, r = settings.market, settings.retention
    return AgentSettings(
        requests=RequestLoopSettings(
            price_attofil=m.price_attofil,
            low_water=m.low_water,
            high_water=m.high_water,
            poll_interval_s=m.poll_interval_s,
            backoff_max_s=m.backoff_max_s,
        ),
        stages=StageSettings(
            max_attempts=max_attempts, submit_unverified=not settings.prover.verify_before_submit
        ),
        prover_slots=prover_slots,
        withdraw_on_shutdown=m.withdraw_on_shutdown,
        retention_submitted_s=r.submitted_days * 86400.0,
        retention_failed_s=r.failed_days * 86400.0,
    )


def start_metrics(
    settings: Settings, metrics: AgentMetrics, view: StatusView | None = None
) -> Exporter | None:
    """The operator's listener on ``metrics.listen`` (an empty value: none): /metrics, and with ``view`` the
    /status document and the status page at /. Returns it, or None when none is configured."""
    listen = settings.metrics.listen
    if not listen:
        return None
    try:
        if view is None:
            return metrics.serve(listen)
        return metrics.serve(listen, status=view.document, page=view.page)
    except OSError as exc:
        raise ConfigError(f"metrics.listen = {listen}: {exc}") from None


def build_agent(
    settings: Settings,
    market: Market,
    store: Store,
    prover: ServedProver,
    *,
    metrics: AgentMetrics | None = None,
    gate: Path | None = None,
    agent_type: type[Agent] = Agent,
    check: Callable[[bytes], Work] | None = None,
    warm_up: Callable[[], None] | None = None,
    tune: Callable[[AgentSettings], AgentSettings] | None = None,
) -> Agent:
    """The service over ``market``, ``store`` and ``prover``: as many prove loops as the prover has admission
    slots, the loops' settings from the configuration (``tune`` adjusts them: the dry run's and the
    harness's shorter intervals), work checked and limited to ``prover.accepted_proof_types`` unless
    ``check`` is given, the prover's warm-up as the readiness gate unless ``warm_up`` is given."""
    s = agent_settings(settings, prover_slots=prover.capacity)
    if tune is not None:
        s = tune(s)
    return agent_type(
        market, store, prover, s, check=check or accepting(*settings.prover.accepted()),
        warm_up=warm_up or prover.warm_up, metrics=metrics, gate_file=gate,
    )


def run(settings: Settings, *, max_proofs: int | None = None) -> RunSummary:
    """``psagent run``: the agent built from ``settings``, run until a signal (or ``max_proofs`` accepted
    proofs). ConfigError (one line naming the key) before anything starts when a value cannot be used."""
    import anyio

    from agent.config import SUBMIT_UNVERIFIED_ENV
    from agent.opsview.document import StatusView
    from agent.opsview.metrics import AgentMetrics

    wallet = preflight(settings)  # what `psagent status --config` checks too
    metrics = AgentMetrics()
    prover = build_prover(settings, metrics=metrics)
    store = open_configured_store(settings)
    if not settings.prover.verify_before_submit:
        log.warning("prover.verify_before_submit = false (%s=1): proofs are submitted unverified",
                    SUBMIT_UNVERIFIED_ENV)
    try:
        view = StatusView(store, metrics, price_attofil=settings.market.price_attofil)
        start_metrics(settings, metrics, view)

        async def main() -> RunSummary:
            async with market_client(settings, wallet) as client:
                gate = gate_file(settings)
                agent = build_agent(settings, client, store, prover, metrics=metrics, gate=gate)
                view.attach(agent)
                return await agent.run(max_proofs=max_proofs)

        return anyio.run(main)
    finally:
        store.close()


class CuzkUnavailable(RuntimeError):
    """grpcio (the ``engine`` extra) is missing or older than the committed stubs; one line."""


def _cuzk_server_module() -> Any:
    """agent.cuzk.server (which imports grpcio and the generated stubs); CuzkUnavailable without them."""
    try:
        from agent.cuzk import server
    except ImportError as exc:
        raise CuzkUnavailable(
            f"psagent engine serve needs grpcio and protobuf (pip install 'psagent[engine]'): {exc}"
        ) from None
    except RuntimeError as exc:  # the generated stubs' own version check
        raise CuzkUnavailable(f"psagent engine serve: {str(exc).splitlines()[0]}") from None
    return server


def cuzk_listen(settings: Settings, listen: str | None = None) -> str:
    """The cuzk server's address (``--listen``, else ``engine.listen``), checked to be bindable: ConfigError
    naming the option or key before anything is loaded."""
    from agent.config import parse_listen

    where = "--listen" if listen is not None else "engine.listen"
    listen = settings.engine.listen if listen is None else listen
    try:
        parse_listen(listen)
        _cuzk_server_module().check_listen(listen)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{where} = {listen}: {exc}") from None
    return listen


def cuzk_server(settings: Settings, prover: AdmittedProver, listen: str, *, memory_info: Any = None) -> Any:
    """``psagent engine serve``'s server (``agent.cuzk.server.CuzkServer``) over ``prover``: at most
    ``engine.max_pending`` open jobs, the Unix socket made ``engine.socket_mode``."""
    from agent.cuzk.jobs import Jobs
    from agent.cuzk.metrics import CuzkMetrics

    server = _cuzk_server_module()
    e = settings.engine
    registry = prover.metrics.registry if prover.metrics is not None else None
    jobs = Jobs(prover, max_pending=e.max_pending, metrics=CuzkMetrics(registry))
    service = server.CuzkService(jobs, prover, memory_info=memory_info)
    return server.CuzkServer(service, listen, socket_mode=int(e.socket_mode, 8))


def cuzk_prover(settings: Settings, *, metrics: ProverMetrics | None = None, **kw: Any) -> AdmittedProver:
    """The agent's pipeline (:func:`build_pipeline`, ``[prover]``) behind admission, as :func:`build_prover`
    makes it, except that the warm-up loads ``engine.preload``'s parameters and nothing restricts the proof
    types (``prover.accepted_proof_types`` is the market agent's: the cuzk server proves what Curio sends, for
    every size whose parameters it has). Its gate refuses development parameter files, as the agent's
    does, unless ``prover.allow_development_params``: Curio submits what the engine proves to the chain,
    which verifies against the official keys (preloaded types at the warm-up, any other at its first
    proof). ``metrics``: where the prover records (GetMetrics serves them); ``kw`` as build_pipeline's
    (tests: devices, cache)."""
    from agent.cuzk.request import circuit_proof_type
    from agent.proving.kind import WorkKind

    pts = [circuit_proof_type(c) for c in settings.engine.preload]
    accepted = (
        [pt.name for pt in pts if WorkKind.of(pt) is WorkKind.POREP],
        [pt.name for pt in pts if WorkKind.of(pt) is WorkKind.SNAP],
        [pt.name for pt in pts if WorkKind.of(pt).post_kind is not None],
    )
    return _admitted(settings, build_pipeline(settings, **kw), accepted, metrics)


def serve_cuzk(settings: Settings, *, listen: str | None = None) -> None:
    """``psagent engine serve``: the cuzk server on the agent's prover (``[prover]``), the parameters
    of ``engine.preload`` loaded and a self-test proof verified before READY, until SIGTERM. ConfigError /
    CuzkUnavailable (one line) before anything is loaded; ParamsRefused (one line) when the warm-up's gate
    refuses a preloaded proof type's parameter files (a configuration fault: exit 2, no restart loop)."""
    import anyio

    from agent.cuzk.request import circuit_proof_type

    listen = cuzk_listen(settings, listen)
    if not settings.prover.verify_before_submit:
        raise ConfigError(
            "prover.verify_before_submit = false: psagent engine serve answers only proofs whose every "
            "partition verified"
        )
    from agent.opsview.metrics import ProverMetrics

    prover = cuzk_prover(settings, metrics=ProverMetrics(role="engine"))  # the label dashboards already read
    for pt in map(circuit_proof_type, settings.engine.preload):
        try:
            prover.pipeline.params_file(pt)  # a missing parameter file is named now, not after the self-test
        except FileNotFoundError as exc:
            raise ConfigError(f"engine.preload: {exc}") from None
    server = cuzk_server(settings, prover, listen)

    async def main() -> None:
        await _cuzk_server_module().serve(server, warm_up=prover.warm_up)

    anyio.run(main, backend="asyncio")  # grpc.aio runs on asyncio


SERVICE_CACHE_DIR = Path("/var/cache/psagent")  # the units' %C/psagent (CacheDirectory=psagent)


def gate_file(settings: Settings) -> Path:
    """Where the agent writes its readiness gate for ``psagent status``: beside a SQLite store, else in the
    cache directory."""
    from agent.config import cache_dir

    url = settings.store.url
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :] + ".gate.json")
    return cache_dir() / "gate.json"


def gate_files(settings: Settings) -> list[Path]:
    """Where ``psagent status`` looks for the agent's gate: where this process would write it, and, for a
    store that is no SQLite file (the gate then lives in the cache directory), the service's cache directory:
    the unit sets PSAGENT_CACHE_DIR=%C/psagent (/var/cache/psagent), while the operator's shell (``sudo -u
    psagent psagent status``, README step 5) has its own ~/.cache/psagent."""
    own = gate_file(settings)
    if settings.store.url.startswith("sqlite:///"):
        return [own]
    return list(dict.fromkeys([own, SERVICE_CACHE_DIR / "gate.json"]))


def find_gate(settings: Settings, *, now: float | None = None) -> dict[str, Any]:
    """The gate of :func:`gate_files` that tells most, with the file it was read from (``file``): a running
    agent's, else one that cannot be read (it may be running), else the one written last, else the first
    place (none written yet)."""
    read = [(path, read_gate(path, now=now)) for path in gate_files(settings)]
    rank = {"not running": 2, "unknown": 1}

    def written(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return float("-inf")

    path, gate = min(read, key=lambda pg: (rank.get(pg[1]["state"], 0), -written(pg[0])))
    return {**gate, "file": str(path)}
