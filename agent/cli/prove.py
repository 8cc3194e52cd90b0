"""``psagent prove`` / ``psagent verify``: a C1, a market ProofData (PoRep or SnapDeals) or a lotus-bench
``c1out.json`` to a verified proof, and a proof file checked against its input.

Argument parsing and output only: the input becomes an ``agent.proving.work.Work`` (recognised, strictly
checked, public inputs computed once; bad input is one line and exit 2 before any proving), the proof comes
from the one proof pipeline (``agent.runtime.build_pipeline``: ``[prover]``'s backend, devices, engine options
and partition workers, as ``psagent run`` builds it; also behind ``bench e2e``), and the pairing check is the
one host verifier (``agent.proving.verifier``). The configuration is ``--config`` (else
``/etc/psagent/config.toml`` when present) with ``PSAGENT_PROVER__*`` overrides; ``--params-dir`` and
``--backend`` override it. Progress goes to stderr: a live view per partition on a terminal, else one log
line per stage with an estimate of the time left. The proof file is the raw bytes, 192 per partition
(``--hex``: ``proof: <hex>`` on stdout, as lotus-bench prints it). ``-`` reads the input (or, for
``verify``, the proof) from stdin.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import typer

from agent.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Backend,
    check_output_file,
    fail,
    parse_miner,
    parse_u64,
)
from agent.opsview.progress import StageProgress, duration

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from agent.config import Settings
    from agent.proving.pipeline import ProofResult, StageEvent
    from agent.proving.prover import AdmittedProver
    from agent.proving.work import Work

STDIN = "-"


def read_input(path: Path, what: str = "") -> bytes:
    """The bytes of ``path`` (``-``: stdin), or one line and exit 2."""
    if str(path) == STDIN:
        if sys.stdin.isatty():
            fail(f"{what or 'INPUT'} is - (stdin), but stdin is a terminal: pipe the file in", EXIT_USAGE)
        return sys.stdin.buffer.read()
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE)


def load_work(path: Path, miner: str | None, sector: int | None) -> Work:
    """The Work of the file at ``path`` (``-``: stdin); one line and exit 2 on anything that is not provable
    input."""
    from agent.proving.work import Work, WorkError

    raw = read_input(path)
    m = parse_miner(miner) if miner is not None else None
    n = parse_u64(sector, "--sector") if sector is not None else None
    try:
        return Work.from_bytes(raw, miner=m, sector=n)
    except WorkError as exc:
        fail(f"{'stdin' if str(path) == STDIN else path}: {exc}", EXIT_USAGE)


def require_params(path: Path, work: Work) -> None:
    if not path.exists():
        from agent.paramfiles import fetch_hint

        hint = fetch_hint(work.proof_type.size_label, path.parent, update=work.update is not None)
        fail(f"missing parameter file {path} ({hint})", EXIT_USAGE)


class Pace:
    """The proof's time left from its partitions: done so far, at the pace since the first began."""

    def __init__(self, partitions: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.partitions = partitions
        self.clock = clock
        self.first: float | None = None
        self.done = 0

    def began(self) -> None:
        if self.first is None:
            self.first = self.clock()

    def finished(self) -> str:
        """Count one partition done; ``(k/n partitions[, about T left])``."""
        self.done += 1
        left = None
        if self.first is not None and self.done < self.partitions:
            left = (self.clock() - self.first) / self.done * (self.partitions - self.done)
        tail = f", about {duration(left)} left" if left else ""
        return f"({self.done}/{self.partitions} partitions{tail})"


class ProgressView:
    """The live view of one proof on stderr: a setup row (circuit, parameters, key: once per process) and a
    row per partition showing the stage in progress and the times of those done. Fed by the pipeline's
    StageEvents, from the proving and the synthesis threads (rich's Progress takes its own lock)."""

    def __init__(self, partitions: int, console: Console) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
            transient=False,
        )
        self.partitions = partitions
        self.pace = Pace(partitions)
        self._tasks: dict[int, TaskID] = {}
        self._done: dict[int, list[str]] = {}

    def __enter__(self) -> ProgressView:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def _label(self, k: int) -> str:
        return "setup" if k < 0 else f"partition {k + 1}/{self.partitions}"

    def __call__(self, ev: StageEvent) -> None:
        k = ev.partition
        if ev.fraction is not None:  # the per-point check's progress: the setup row shows its percentage
            task = self._tasks.get(k)
            if task is not None:
                text = f"{self._label(k)}: {ev.stage} {100 * ev.fraction:.0f} %…"
                self.progress.update(task, description=text)
            return
        task = self._tasks.get(k)
        if task is None:
            task = self._tasks[k] = self.progress.add_task(self._label(k), total=1)
            self._done[k] = []
        done = self._done[k]
        if ev.seconds is None:
            if k >= 0:
                self.pace.began()
            text = f"{self._label(k)}: {ev.stage}…  " + ", ".join(done)
            self.progress.update(task, description=text)
            return
        done.append(f"{ev.stage} {ev.seconds:.2f}s")
        finished = ev.stage in ("key", "verified", "NOT VERIFIED")
        text = f"{self._label(k)}: " + ", ".join(done)
        if k >= 0 and finished:
            text += "  " + self.pace.finished()
        self.progress.update(task, description=text, completed=1 if finished else 0)


def make_prover(
    settings: Settings, params_dir: Path, backend: Backend | None, *, jobs_per_device: int = 1
) -> AdmittedProver:
    """The agent's prover as it builds it from ``settings`` (``agent.runtime.build_prover``: the pipeline
    behind admission, with each engine's device budget and memory layout), its parameters from
    ``params_dir``, on ``backend`` when given (else ``prover.backend``); a backend or device that is not there
    is one line and exit 2 before any work. ``jobs_per_device``: proofs admitted to a device at once. Its gate
    names each parameter file's kind (official, development, damaged) and refuses none: a proof made here goes
    to a file or stdout, not to a market (``psagent run`` and ``engine serve`` refuse development files)."""
    from agent import runtime
    from agent.cli.common import announce_compilation, resolve_backend
    from agent.config import ConfigError

    if backend is not None:  # the option's words for a GPU that is not there, before any work
        chosen = resolve_backend(backend)
        prover = settings.prover.model_copy(update={"backend": chosen.value})
        settings = settings.model_copy(update={"prover": prover})
    try:
        admitted = runtime.build_prover(
            settings, params_dir=params_dir, jobs_per_device=jobs_per_device, official_only=False
        )
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    announce_compilation()
    return admitted


class ProgressLog:
    """Progress without a terminal: one line on ``out`` per stage as it ends (the setup's also as they
    start: a 32GiB circuit or parameter load takes minutes), each partition's last line with the proof's time
    left (:class:`Pace`), and, while a stage runs longer than ``every_s``, a line every ``every_s`` with its
    time so far and the time left (:class:`agent.opsview.progress.StageProgress`: a first per-point check of
    the parameters said nothing for 38 minutes)."""

    def __init__(
        self, partitions: int, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
        every_s: float = 10.0,
    ) -> None:
        self.partitions = partitions
        self.out = out
        self.clock = clock
        self.t0 = clock()
        self.pace = Pace(partitions, clock)
        self._lock = threading.Lock()
        self.ticker = StageProgress("still", self._say, every_s=every_s, clock=clock)

    def __enter__(self) -> ProgressLog:
        self.ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ticker.stop()

    def _say(self, text: str) -> None:
        print(f"prove: {self.clock() - self.t0:7.1f} s  {text}", file=self.out or sys.stderr, flush=True)

    def __call__(self, ev: StageEvent) -> None:
        self.ticker(ev)
        if ev.fraction is not None:  # progress inside a stage: the ticker's lines say it
            return
        with self._lock:
            if ev.partition < 0:
                if ev.seconds is None:
                    self._say(f"setup: {ev.stage}…")
                else:
                    self._say(f"setup: {ev.stage} done in {ev.seconds:.2f} s")
                return
            if ev.seconds is None:
                self.pace.began()
                return
            where = f"partition {ev.partition + 1}/{self.partitions}: {ev.stage}"
            if ev.stage not in ("verified", "NOT VERIFIED"):
                self._say(f"{where} done in {ev.seconds:.2f} s")
                return
            self._say(f"{where} {self.pace.finished()}")


def run_pipeline(prover: AdmittedProver, work: Work, *, job_id: str, live: bool) -> ProofResult:
    """One proof through ``prover`` (the agent's admitted path) with its progress on stderr (``live``: the
    view on a terminal, else log lines); a parameter file that does not fit the circuit, or a device budget
    no layout fits, is one line and exit 2."""
    from rich.console import Console

    from gpu.memory import BudgetExceeded

    try:
        if not live:
            with ProgressLog(work.partitions) as progress:
                return prover.prove_now(work, job_id, events=progress)
        with ProgressView(work.partitions, Console(stderr=True)) as view:
            return prover.prove_now(work, job_id, events=view)
    except (ValueError, FileNotFoundError, BudgetExceeded) as exc:
        fail(str(exc).splitlines()[0], EXIT_USAGE)


def stage_summary(stages: dict[str, float]) -> str:
    keep = (
        "witness", "a/b/c", "upload", "NTT/H", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "verify"
    )
    return ", ".join(f"{k} {stages[k]:.2f}s" for k in keep if k in stages)


def prove_cmd(
    input: Path, miner: str | None, sector: int | None, out: Path | None, backend: Backend | None,
    params_dir: Path | None, *, config: Path | None = None, json_flag: bool = False, hex_flag: bool = False,
    force: bool = False,
) -> None:
    """Every output is checked before the input is read: ``--out`` (default INPUT.proof; from stdin only
    with --out or --hex) must be a writable file that does not exist yet unless ``force``."""
    import json

    from agent.cli.common import settings_or_exit
    from agent.proving.parameters import params_paths
    from agent.proving.work import JobId

    if json_flag and hex_flag:
        fail("--json and --hex both print the result on stdout: give one", EXIT_USAGE)
    target = out
    if target is None and not hex_flag:
        if str(input) == STDIN:
            fail("the input is stdin: give --out FILE for the proof (or --hex to print it)", EXIT_USAGE)
        target = input.with_name(input.name + ".proof")
    if target is not None:
        check_output_file(target, force)
    settings = settings_or_exit(config)
    work = load_work(input, miner, sector)
    params_path, _ = params_paths(params_dir or settings.prover.params_dir, work.proof_type)
    require_params(params_path, work)
    prover = make_prover(settings, params_path.parent, backend)
    live = not json_flag and sys.stderr.isatty()
    result = run_pipeline(prover, work, job_id=JobId.fresh("prove"), live=live)
    report = result.report()
    if not report.ok:
        if json_flag:
            typer.echo(json.dumps({**result.as_json(), "out": None}))
        fail(f"{report.diagnosis()}; nothing written", EXIT_FAILURE)
    if target is not None:
        from gpu.files import atomic_write

        atomic_write(target, result.proof)  # whole or not at all
    if json_flag:
        typer.echo(json.dumps({**result.as_json(), "out": str(target)}))
        return
    summary = (
        f"{result.proof_type}: {work.partitions} partition(s) proven and verified in {result.wall_s:.1f}s on "
        f"{result.backend} ({stage_summary(result.stages())}), {len(result.proof)} bytes"
    )
    if hex_flag:  # stdout is the proof, as lotus-bench prints it; the summary goes to stderr
        typer.echo(f"proof: {result.proof.hex()}")
        typer.echo(summary + (f" -> {target}" if target is not None else ""), err=True)
        return
    typer.echo(f"{summary} -> {target}")


def read_proof(proof: Path, work: Work) -> bytes:
    """The proof bytes of ``proof`` (``-``: stdin): raw (192 bytes per partition), or hex as ``prove --hex``
    and lotus-bench print it (``proof: <hex>``, or the bare hex); one line and exit 2 otherwise."""
    data = read_input(proof, "--proof")
    if len(data) == work.proof_bytes:
        return data
    text = data.strip()
    text = text[len(b"proof:"):].strip() if text.lower().startswith(b"proof:") else text
    try:
        decoded = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        decoded = b""
    if len(decoded) == work.proof_bytes:
        return decoded
    where = "stdin" if str(proof) == STDIN else str(proof)
    fail(f"{where}: {len(data)} bytes, a {work.proof_type.name} proof is {work.proof_bytes} (or that in hex)",
         EXIT_USAGE)


def verify_cmd(
    input: Path, proof: Path, miner: str | None, sector: int | None, params_dir: Path | None,
    *, config: Path | None = None,
) -> None:
    from agent.cli.common import settings_or_exit
    from agent.proving.verifier import HostVerifier

    if str(input) == STDIN and str(proof) == STDIN:
        fail("INPUT and --proof cannot both be - (stdin): give one of them as a file", EXIT_USAGE)
    settings = settings_or_exit(config)
    work = load_work(input, miner, sector)
    verifier = HostVerifier(params_dir or settings.prover.params_dir)
    require_params(verifier.vk_file(work.proof_type), work)
    data = read_proof(proof, work)
    try:
        report = verifier.verify(work, data)
    except (ValueError, OSError) as exc:  # an unreadable verifying key file
        fail(f"{verifier.vk_file(work.proof_type)}: {str(exc).splitlines()[0]}", EXIT_USAGE)
    if not report.ok:
        fail(report.diagnosis(), EXIT_FAILURE)
    typer.echo(f"{work.proof_type.name}: {work.partitions} partition(s) verified")

