"""Shared CLI pieces: exit codes, config loading, argument parsing that fails in one line, output checks,
the prover backend choice and the Numba kernel cache."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from agent.config import ConfigError, Settings, cache_dir, load_settings
from agent.host import nearest_existing
from agent.logsetup import setup_logging
from gpu.options import EngineOptions  # imports nothing: numba stays unloaded here
from gpu.placement import Backend  # the engine's enum (imports nothing either)

EXIT_FAILURE = 1  # the command ran and its check failed (e.g. a proof did not verify)
EXIT_USAGE = 2  # bad arguments or bad configuration
EXIT_NOT_IMPLEMENTED = 3  # the command is part of the contract but not built yet

U64 = 1 << 64

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="TOML config file (default /etc/psagent/config.toml if present)."),
]
JsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print the result as one JSON object on stdout (progress stays on stderr)."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Replace existing output.")]
CheckOption = Annotated[
    bool, typer.Option("--check/--no-check", help="Run the strict vanilla check on the result.")
]
ProgressOption = Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bars on stderr.")]
MinerOption = Annotated[str | None, typer.Option("--miner", help="Miner actor id: 1000, f01000 or t01000.")]
SectorOption = Annotated[int | None, typer.Option("--sector", help="Sector number.")]


BackendOption = Annotated[
    Backend, typer.Option("--backend", help="auto (CUDA if a GPU is usable, else CPU), cuda or cpu.")
]


def fail(message: str, code: int = EXIT_FAILURE) -> NoReturn:
    typer.echo(f"psagent: {message}", err=True)
    raise typer.Exit(code)


def fail_check(failures: Sequence[object], message: str) -> NoReturn:
    """A strict check's first 20 failures, a line each on stderr, then ``message``; exit 1."""
    for f in failures[:20]:
        typer.echo(f"psagent: {f}", err=True)
    fail(message)


def write_or_exit(path: Path, data: bytes) -> None:
    """``data`` into the file ``path``, or one line saying why not and exit 2."""
    try:
        path.write_bytes(data)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}", EXIT_USAGE)


def settings_or_exit(config: Path | None) -> Settings:
    try:
        settings = load_settings(config)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    setup_logging(settings.logging.level, settings.logging.format)
    use_engine_options(settings)
    return settings


def parse_hex(value: str, what: str, length: int = 32) -> bytes:
    """``length`` bytes of hex (an optional 0x prefix), or exit 2 saying what is wrong with it."""
    text = value[2:] if value.lower().startswith("0x") else value
    if any(c not in "0123456789abcdefABCDEF" for c in text):
        fail(f"{what} is not hex: {value[:80]!r}", EXIT_USAGE)
    if len(text) % 2:
        fail(f"{what} has an odd number of hex digits ({len(text)}): {length} bytes are {2 * length}",
             EXIT_USAGE)
    raw = bytes.fromhex(text)
    if len(raw) != length:
        fail(f"{what} must be {length} bytes ({2 * length} hex digits), got {len(raw)}", EXIT_USAGE)
    return raw


def parse_u64(value: int, what: str) -> int:
    if not 0 <= value < U64:
        fail(f"{what} must be an integer from 0 to 2^64-1, got {value}", EXIT_USAGE)
    return value


def parse_miner(value: str, what: str = "--miner") -> int:
    """A miner actor id: ``1000``, ``f01000`` or ``t01000`` (an ID address), 0 ≤ id < 2^64."""
    text = value.strip()
    if len(text) > 2 and text[0] in "ft" and text[1] == "0":
        text = text[2:]
    if not text.isascii() or not text.isdigit():
        fail(f"{what} must be an actor id such as 1000, f01000 or t01000, got {value[:80]!r}", EXIT_USAGE)
    return parse_u64(int(text), what)


def sector_size_or_exit(value: str, what: str = "--sector-size") -> str:
    """The sector size label (2KiB … 64GiB) of any spelling (``porep.prooftypes.parse_sector_size``: 2KiB,
    lotus's 2K / 32G, bytes), or exit 2 in one line."""
    from porep.prooftypes import parse_sector_size

    try:
        return parse_sector_size(value)
    except ValueError as exc:
        fail(f"{what} {exc}", EXIT_USAGE)


def check_output_file(path: Path, force: bool, what: str = "--out") -> None:
    """Refuse, before any work, an output file that cannot be written or would silently be replaced."""
    if path.is_dir():
        fail(f"{what} {path} is a directory", EXIT_USAGE)
    if path.exists() and not force:
        fail(f"{what} {path} exists (pass --force to replace it)", EXIT_USAGE)
    parent = path.parent
    if not parent.is_dir():
        fail(f"{what} {path}: directory {parent} does not exist", EXIT_USAGE)
    if path.exists() and not os.access(path, os.W_OK):
        fail(f"{what} {path} is not writable", EXIT_USAGE)
    if not os.access(parent, os.W_OK):
        fail(f"{what} {path}: directory {parent} is not writable", EXIT_USAGE)
    try:  # the permission bits can say yes where the file system says no (root, read-only mounts, sysfs)
        probe = parent / f".{path.name}.{os.getpid()}.probe"
        probe.touch(exist_ok=False)
        probe.unlink()
    except OSError as exc:
        fail(f"{what} {path}: cannot write in {parent} ({exc.strerror or exc})", EXIT_USAGE)


def check_output_dir(path: Path, force: bool, what: str = "--out") -> None:
    """Refuse, before any work, an output directory that is a file or already holds data (unless forced)."""
    if path.exists() and not path.is_dir():
        fail(f"{what} {path} exists and is not a directory", EXIT_USAGE)
    if path.is_dir() and any(path.iterdir()) and not force:
        fail(f"{what} {path} is not empty (pass --force to replace its files)", EXIT_USAGE)
    anchor = nearest_existing(path)
    if not os.access(anchor, os.W_OK):
        fail(f"{what} {path}: {anchor} is not writable", EXIT_USAGE)


class Interrupted(BaseException):
    """SIGTERM / SIGINT inside :func:`interruptible`: raised in the main thread like KeyboardInterrupt, so
    every ``with``/``finally`` on the way out runs (temporary files are removed) before the one-line exit.
    A BaseException: no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` while the block runs (Python's default SIGTERM ends the
    process without unwinding: a 47 GB ``.params.tmp`` stayed behind); the handlers are restored after."""
    import signal

    def handler(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def resolve_backend(backend: Backend) -> Backend:
    """``auto`` becomes cuda when a real GPU is usable, else cpu (:func:`gpu.device.resolve_backend`, the one
    place that decides); ``cuda`` without a usable GPU exits 2 before any work."""
    from gpu.device import resolve_backend as decide
    from gpu.placement import GpuError

    try:
        return decide(backend)
    except GpuError as exc:
        fail(f"--backend cuda: {exc}", EXIT_USAGE)


# --- the Numba on-disk kernel cache -------------------------------------------------------------------------

def _source_digest() -> str:
    """A hash of the gpu and porep sources: Numba's cache key sees only the caching function's own file, not
    the code it inlines, so every edit of these packages must get a fresh cache directory."""
    from importlib.util import find_spec

    h = hashlib.sha256()
    for name in ("gpu", "porep"):  # located, not imported: numba must not be loaded yet
        spec = find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root.parent)).encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def kernel_cache_dir(options: EngineOptions) -> Path:
    """:func:`agent.config.cache_dir` / ``numba/<version>-<source hash>-<options.cache_tag()>``: one directory
    per package version, source and PTX product (the engine options' part that compiled code depends on)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("psagent")
    except PackageNotFoundError:
        ver = "0"
    return cache_dir() / "numba" / f"{ver}-{_source_digest()}-{options.cache_tag()}"


_ours: list[str | None] = [None]  # the NUMBA_CACHE_DIR set here (a later call may move it; not the user's)


def enable_kernel_cache(options: EngineOptions) -> None:
    """Turn Numba's on-disk cache on for this process unless the user chose (PSAGENT_NUMBA_CACHE or
    NUMBA_CACHE_DIR set by them), in the directory of ``options``: NUMBA_CACHE_DIR (numba's) and
    PSAGENT_NUMBA_CACHE=1, which ``agent.config.engine_options`` reads into the options' ``kernel_cache`` (the
    value ``gpu`` compiles by) and a ``psagent`` started from this one inherits. Only before numba is imported
    (numba reads NUMBA_CACHE_DIR once): the CLI calls it at start with the environment's options, and again
    once a configuration file is read."""
    chosen = "PSAGENT_NUMBA_CACHE" in os.environ or "NUMBA_CACHE_DIR" in os.environ
    if chosen and (_ours[0] is None or os.environ.get("NUMBA_CACHE_DIR") != _ours[0]):
        return
    try:
        path = kernel_cache_dir(options)
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no writable cache directory: compile every time, as before
    os.environ["PSAGENT_NUMBA_CACHE"] = "1"
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    _ours[0] = str(path)


def use_engine_options(settings: Settings | None = None) -> EngineOptions:
    """The engine options of ``settings`` (or of the defaults and the environment: ``agent.config.
    engine_options``) with this process's kernel cache switched on where the user did not choose, set for the
    process (PTX product, CPU threads, kernel cache: ``gpu.options``); a bad value is one line and exit 2."""
    from agent.config import engine_options
    from gpu.options import configure

    try:
        enable_kernel_cache(engine_options(settings))  # the options' directory; on: PSAGENT_NUMBA_CACHE=1
        options = engine_options(settings)  # which the options then carry to gpu.options, as a value
        configure(options)
    except (ConfigError, RuntimeError) as exc:
        fail(str(exc), EXIT_USAGE)
    return options


def announce_compilation() -> None:
    """Say so on stderr when this command is about to fill an empty kernel cache (the silent seconds)."""
    if os.environ.get("PSAGENT_NUMBA_CACHE") != "1":
        return
    d = os.environ.get("NUMBA_CACHE_DIR")
    # Numba makes its per-module directories when the decorated modules are imported: look for index files.
    if d and not any(Path(d).rglob("*.nbi")):
        print("psagent: compiling kernels (first run only)…", file=sys.stderr, flush=True)
