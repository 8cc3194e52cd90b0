"""Agent configuration: one typed model, loaded from TOML with ``PSAGENT_…`` environment overrides.

Precedence (highest first): environment (``PSAGENT_MARKET__PRICE_FIL=0.004``; ``__`` separates nesting),
the TOML file (``--config F``, else ``/etc/psagent/config.toml`` when it exists), then the defaults below.
Every knob is documented in ``config.example.toml``; keep the two in step (a test checks that every key of
the example exists here, and that each one changes what ``agent.runtime`` builds).

The configuration layer is the only place environment variables are read for the agent's behaviour: besides
``PSAGENT_<SECTION>__<KEY>`` (one scheme: the engine's switches too, e.g. ``PSAGENT_PROVER__PTX=off``), the
debug switch ``PSAGENT_DEBUG_SUBMIT_UNVERIFIED=1`` (without it ``prover.verify_before_submit = false`` is
refused: an unverified proof is never submitted) and the kernel cache's ``PSAGENT_NUMBA_CACHE``, which
:func:`engine_options` folds with ``[prover]`` into the one ``gpu.options.EngineOptions`` value the engine is
given (commands without a configuration file get the defaults and ``PSAGENT_PROVER__<KEY>``).
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

from gpu.options import DEVICE_PATHS, EngineOptions
from market.address import Protocol as AddressProtocol
from market.address import parse_address
from porep.prooftypes import proof_type
from porep.snap.params import update_proof_type

DEFAULT_CONFIG_PATH = Path("/etc/psagent/config.toml")
MAINNET_MARKET_URL = "https://mainnet.snass.fsp.sh/v0/proofs"
ATTO_PER_FIL = 10**18
NANO_IN_ATTO = 10**9
SUBMIT_UNVERIFIED_ENV = "PSAGENT_DEBUG_SUBMIT_UNVERIFIED"


def cache_dir() -> Path:
    """psagent's cache directory: ``$PSAGENT_CACHE_DIR`` (the systemd unit sets it), else
    ``$XDG_CACHE_HOME/psagent``, else ``~/.cache/psagent``. Kernels, development parameters and the mock
    market's challenge pool live below it."""
    base = os.environ.get("PSAGENT_CACHE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "psagent"


FILECOIN_PARAMS_DIR = Path("/var/tmp/filecoin-proof-parameters")


def default_params_dir() -> Path:
    """Where Filecoin keeps Groth16 parameters (lotus, curio and rust-fil-proofs look there too):
    ``$FIL_PROOFS_PARAMETER_CACHE`` if set, else ``/var/tmp/filecoin-proof-parameters``. The one reader of
    that variable."""
    env = os.environ.get("FIL_PROOFS_PARAMETER_CACHE")
    return Path(env) if env else FILECOIN_PARAMS_DIR


SNAP_PREFIX = "snap:"  # "StackedDrg2KiBV1" names a seal proof and an update proof alike


def accepted_type(name: str) -> object:
    """The proof type an ``accepted_proof_types`` entry names: a seal proof the circuit proves (interactive
    V1 / V1_1), or ``snap:`` + an update proof; ValueError saying what is accepted otherwise."""
    if name.startswith(SNAP_PREFIX):
        try:
            return update_proof_type(name[len(SNAP_PREFIX):])
        except (ValueError, KeyError):
            raise ValueError(f"{name!r}: not an update proof (e.g. snap:StackedDrg32GiBV1)") from None

    try:
        pt = proof_type(name)
    except (ValueError, KeyError):
        raise ValueError(
            f"{name!r}: not a seal proof name (e.g. StackedDrg32GiBV1_1; SnapDeals: snap:StackedDrg32GiBV1)"
        ) from None
    if not name.endswith(("V1", "V1_1")):
        raise ValueError(f"{name!r}: only interactive PoRep (V1, V1_1) is proven here")
    return pt


class ConfigError(Exception):
    """The configuration cannot be used; ``str(err)`` is one line that names the offending key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MarketConfig(_Section):
    url: str = MAINNET_MARKET_URL
    wallet: str | None = None
    key_file: Path | None = None
    price_fil: str = "0.005"
    low_water: int = Field(default=5, ge=0)
    high_water: int = Field(default=8, ge=1)
    poll_interval_s: float = Field(default=3.0, gt=0)
    backoff_max_s: float = Field(default=120.0, gt=0)
    request_timeout_s: float = Field(default=30.0, gt=0)
    retry_budget_s: float = Field(default=1800.0, gt=0)
    max_request_bytes: int = Field(default=256 * 1024 * 1024, gt=0)
    withdraw_on_shutdown: bool = True

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not (v.startswith("http://") or v.startswith("https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")

    @field_validator("wallet")
    @classmethod
    def _wallet(cls, v: str | None) -> str | None:
        if v is None:
            return v

        try:
            addr = parse_address(v)
        except ValueError as exc:
            raise ValueError(f"not a Filecoin address ({exc})") from None
        if addr.protocol != AddressProtocol.SECP256K1:
            raise ValueError(f"{v!r} is not a secp256k1 (f1…) address, the only kind a provider key has")
        return v

    @field_validator("price_fil", mode="before")
    @classmethod
    def _price_quoted(cls, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            raise ValueError(f'quote the price (a decimal string, exact to the nanoFIL): price_fil = "{v}"')
        return v

    @field_validator("price_fil")
    @classmethod
    def _price(cls, v: str) -> str:
        try:
            d = Decimal(v)
        except InvalidOperation:
            raise ValueError(f"not a decimal FIL amount: {v[:40]!r}") from None
        if not d.is_finite():
            raise ValueError(f"not a finite FIL amount: {v[:40]!r}")
        if d <= 0 or d > 1:
            raise ValueError("must be > 0 and <= 1 FIL (the market's maximum price)")
        atto = d * ATTO_PER_FIL
        if atto != atto.to_integral_value() or int(atto) % NANO_IN_ATTO:
            raise ValueError("the market's price resolution is 1 nanoFIL (9 decimal places)")
        return v

    @model_validator(mode="after")
    def _marks(self) -> MarketConfig:
        if self.low_water > self.high_water:
            raise ValueError("low_water must not exceed high_water")
        return self

    @property
    def price_attofil(self) -> int:
        return int(Decimal(self.price_fil) * ATTO_PER_FIL)


class ProverConfig(_Section):
    backend: Literal["auto", "cuda", "cpu"] = "auto"
    devices: list[Annotated[int, Field(ge=0)]] | Literal["all"] = "all"
    partition_workers: int = Field(default=1, ge=1)
    # device memory the engine may allocate, key included, per device (GiB); 0 = what the device has free once
    # the kernels have run once, less max(1 GiB, 2 %)
    device_memory_gib: float = Field(default=0.0, ge=0)
    # where a proof's bytes live (gpu.groth16.plan): auto = the first of resident / stream24 / stream16 that
    # fits
    device_layout: Literal["auto", "resident", "stream24", "stream16"] = "auto"
    # Filecoin's convention (lotus, curio, rust-fil-proofs): $FIL_PROOFS_PARAMETER_CACHE, else its directory.
    params_dir: Path = Field(default_factory=default_params_dir)
    verify_before_submit: bool = True
    # the readiness gate (the agent's and engine serve's) opens only on the official (published-digest)
    # parameter files: the market and the chain verify with the official keys. true admits development files
    # (a test market or network of your own; never mainnet)
    allow_development_params: bool = False
    # what the readiness gate loads and the agent proves: seal proof names (PoRep), "snap:" + an update proof
    # name (SnapDeals); the market's mainnet work is the 32GiB pair
    accepted_proof_types: list[str] = Field(
        default_factory=lambda: ["StackedDrg32GiBV1_1", "snap:StackedDrg32GiBV1"], min_length=1
    )
    # the engine's options (gpu.options.EngineOptions); the device paths' default is gpu.options.DEVICE_PATHS
    device_spmv: bool = DEVICE_PATHS
    params_to_device: bool = DEVICE_PATHS
    ptx: Literal["evenodd", "cios", "off"] = "evenodd"
    cpu_threads: int = Field(default=0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: object) -> object:
        if isinstance(data, dict) and "memory_budget_gib" in data:
            raise ValueError(
                "memory_budget_gib is now device_memory_gib (GiB the engine may allocate, the key included; "
                "0 = from the device)"
            )
        return data

    @field_validator("accepted_proof_types")
    @classmethod
    def _types(cls, v: list[str]) -> list[str]:
        for name in v:
            try:
                accepted_type(name)
            except ValueError as exc:
                raise ValueError(str(exc)) from None
        return v

    @field_validator("devices")
    @classmethod
    def _devices(cls, v: list[int] | str) -> list[int] | str:
        if isinstance(v, list):
            if not v:
                raise ValueError('an empty list names no device: use "all" or ordinals, e.g. [0, 1]')
            if len(set(v)) != len(v):
                raise ValueError(f"a device is named twice in {v}")
        return v

    @field_validator("verify_before_submit")
    @classmethod
    def _verified(cls, v: bool) -> bool:
        if not v and os.environ.get(SUBMIT_UNVERIFIED_ENV) != "1":
            raise ValueError(
                "false is refused: an unverified proof is never submitted "
                f"(a debugging switch exists: {SUBMIT_UNVERIFIED_ENV}=1)"
            )
        return v

    def accepted(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(PoRep seal proof names, SnapDeals update proof names) of accepted_proof_types."""
        porep = tuple(n for n in self.accepted_proof_types if not n.startswith(SNAP_PREFIX))
        snap = tuple(n[len(SNAP_PREFIX):] for n in self.accepted_proof_types if n.startswith(SNAP_PREFIX))
        return porep, snap


class StoreConfig(_Section):
    url: str = "sqlite:////var/lib/psagent/psagent.db"

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not (v.startswith("sqlite:///") or v.startswith("postgresql://") or v.startswith("postgres://")):
            raise ValueError("must be sqlite:///PATH or postgresql://…")
        return v


class MetricsConfig(_Section):
    listen: str = "127.0.0.1:9477"  # empty string disables the exporter

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        if v == "":
            return v
        host, sep, port = v.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("must be HOST:PORT (or empty to disable)")
        return v


class RetentionConfig(_Section):
    submitted_days: float = Field(default=2.0, gt=0)
    failed_days: float = Field(default=7.0, gt=0)
    # terms of service 6.3: inputs are discarded right after the work; false keeps the inputs of ended
    # requests until their row is purged (to look into a failure)
    discard_inputs: bool = True


# agent.cuzk.request.circuit_id's names
CUZK_CIRCUITS = re.compile(r"(porep|snap|wpost|winning)-(2k|8m|512m|32g|64g)")


def parse_listen(listen: str) -> tuple[str, Path | None, bool]:
    """A cuzk server address: (the gRPC address, the socket path of a Unix socket, whether it is loopback or a
    Unix socket). ``unix:///absolute/path`` or ``unix:relative/path``; ``HOST:PORT`` (``[::1]:PORT``; port 0:
    any free one). ValueError saying what is wrong."""
    if listen.startswith("unix:"):
        rest = listen[len("unix:"):]
        path = rest[2:] if rest.startswith("//") else rest
        if not path or path.endswith("/"):
            raise ValueError(f"{listen!r} names no socket file (e.g. unix:///run/psagent/engine.sock)")
        return f"unix:{path}", Path(path), True
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{listen!r} is neither unix:///PATH nor HOST:PORT")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        loopback = bare == "localhost" or ipaddress.ip_address(bare).is_loopback
    except ValueError:
        loopback = False  # a host name: whatever it resolves to
    return listen, None, loopback


class CuzkConfig(_Section):
    """``[engine]``: the cuzk server (``psagent engine serve``, agent.cuzk), under Curio's word for it."""

    listen: str = "unix:///run/psagent/engine.sock"
    max_pending: int = Field(default=10, ge=1)
    socket_mode: str = "0660"
    preload: list[str] = Field(default_factory=list)

    @field_validator("listen")
    @classmethod
    def _listen(cls, v: str) -> str:
        parse_listen(v)
        return v

    @field_validator("socket_mode")
    @classmethod
    def _mode(cls, v: str) -> str:
        if not re.fullmatch(r"0?[0-7]{3}", v):
            raise ValueError(f"{v!r} is not an octal file mode such as \"0660\"")
        return v

    @field_validator("preload")
    @classmethod
    def _preload(cls, v: list[str]) -> list[str]:
        for cid in v:
            if not CUZK_CIRCUITS.fullmatch(cid):
                raise ValueError(
                    f"{cid!r} is not a circuit id (porep-32g, snap-32g, wpost-32g, winning-32g, …, the test "
                    "sizes 2k/8m/512m)"
                )
        if len(set(v)) != len(v):
            raise ValueError(f"a circuit is named twice in {v}")
        return v


class LoggingConfig(_Section):
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "human", "json"] = "auto"


class Settings(BaseSettings):
    """The whole agent configuration."""

    model_config = SettingsConfigDict(
        env_prefix="PSAGENT_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    market: MarketConfig = Field(default_factory=MarketConfig)
    prover: ProverConfig = Field(default_factory=ProverConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    engine: CuzkConfig = Field(default_factory=CuzkConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment beats the file; the file's values arrive as init kwargs (see load_settings).
        return (env_settings, init_settings)


def _our_words(error: Any) -> str:
    """Pydantic's message for one error, said the way this project says it (no "Input should be")."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    if kind == "string_type":
        return "must be a quoted string"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind in ("float_parsing", "float_type"):
        return "must be a number"
    if kind in ("bool_parsing", "bool_type"):
        return "must be true or false"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
        return f"must be {op[kind]} {next(iter(ctx.values()))}"
    if kind in ("model_type", "dict_type"):
        return "must be a table ([section])"
    msg = str(error["msg"])
    return msg.replace("Input should be", "must be").replace("Value error, ", "")


def _error_line(err: ValidationError, source: str) -> str:
    errors = err.errors()
    first = errors[0]
    loc = [str(p) for p in first["loc"]]
    # A union (devices = "all" or a list) reports its failed branch in the location: keep the key only.
    while loc and (loc[-1].startswith(("list[", "literal[")) or loc[-1].isdigit()):
        loc.pop()
    key = ".".join(loc) or "<root>"
    msg = _our_words(first)
    if key == "prover.devices":
        msg = 'must be "all" or a list of device ordinals >= 0, e.g. [0, 1]'
    more = len(err.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"invalid configuration in {source}: {key}: {msg}{tail}"


def _check_environment() -> None:
    """``PSAGENT_<SECTION>__<KEY>`` with an unknown section would be silently ignored (pydantic-settings
    only reads the names it knows), while an unknown key in a known section is refused: refuse both, and the
    retired engine variables (:data:`RETIRED_ENVIRONMENT`) with the name that replaced each."""
    sections = sorted(Settings.model_fields)
    for name in sorted(os.environ):
        if name in RETIRED_ENVIRONMENT:
            use = RETIRED_ENVIRONMENT[name]
            raise ConfigError(f"invalid configuration in environment: {name} is no longer read: use {use}")
        if not name.startswith("PSAGENT_") or "__" not in name:
            continue
        section = name[len("PSAGENT_"):].split("__", 1)[0].lower()
        if section not in sections:
            raise ConfigError(
                f"invalid configuration in environment: {name}: unknown section {section!r} "
                f"(sections: {', '.join(sections)})"
            )


def _undecodable_line(exc: SettingsError) -> str:
    """An environment value pydantic-settings cannot decode (``PSAGENT_PROVER={``), in one line."""
    m = re.search(r'field "(\w+)"', str(exc))
    name = f"PSAGENT_{m[1].upper()}" if m else "a PSAGENT_ variable"
    return (
        f"invalid configuration in environment: {name}: not a JSON value for its key (set one key at a "
        f"time: {name}__KEY=value)"
    )


def load_settings(path: Path | None = None) -> Settings:
    """Load the configuration; raise ConfigError with one line naming the bad key.

    ``path`` None means ``/etc/psagent/config.toml`` if that file exists, else defaults only.
    """
    data: dict[str, Any] = {}
    source = "defaults"
    if path is None and DEFAULT_CONFIG_PATH.is_file():
        path = DEFAULT_CONFIG_PATH
    if path is not None:
        source = str(path)
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(f"configuration file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {path}: {exc}") from None
        except UnicodeDecodeError as exc:  # TOML is UTF-8: a Latin-1 comment, a UTF-16 editor's save
            raise ConfigError(
                f"invalid TOML in {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start}); save the file as UTF-8"
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot read configuration {path}: {exc.strerror}") from None
    _check_environment()
    try:
        return Settings(**data)
    except SettingsError as exc:  # an environment value pydantic-settings cannot decode (PSAGENT_PROVER={)
        raise ConfigError(_undecodable_line(exc)) from None
    except ValidationError as exc:
        env_keys = [k for k in os.environ if k.startswith("PSAGENT_")]
        where = source if not env_keys else f"{source} + environment"
        raise ConfigError(_error_line(exc, where)) from None


# The engine variables of earlier versions, beside the configuration's own names for the same keys: refused
# with the name to use, so that an old script is not silently ignored.
RETIRED_ENVIRONMENT = {
    "PSAGENT_DEVICE_SPMV": "PSAGENT_PROVER__DEVICE_SPMV=true|false",
    "PSAGENT_PARAMS_TO_DEVICE": "PSAGENT_PROVER__PARAMS_TO_DEVICE=true|false",
    "PSAGENT_PTX": "PSAGENT_PROVER__PTX=evenodd|cios|off",
    "PSAGENT_PTX_MUL": "PSAGENT_PROVER__PTX=evenodd|cios",
    "PSAGENT_CPU_THREADS": "PSAGENT_PROVER__CPU_THREADS=N",
}
KERNEL_CACHE_ENV = "PSAGENT_NUMBA_CACHE"  # 1: Numba's on-disk kernel cache on (agent.cli.common sets it up)


class _ProverFromEnvironment(BaseSettings):
    """``[prover]`` from the environment alone (``PSAGENT_PROVER__<KEY>``), for commands without a
    configuration file; the other sections' variables are not read here."""

    model_config = SettingsConfigDict(
        env_prefix="PSAGENT_", env_nested_delimiter="__", extra="ignore", frozen=True
    )

    prover: ProverConfig = Field(default_factory=ProverConfig)


def engine_options(settings: Settings | None = None) -> EngineOptions:
    """The engine's options: ``[prover]``'s device_spmv, params_to_device, ptx, cpu_threads, device_memory_gib
    and device_layout (without ``settings``: the defaults and ``PSAGENT_PROVER__<KEY>``, as a configuration
    would read them; a bad value is a ConfigError naming the key), and the kernel cache
    (``PSAGENT_NUMBA_CACHE=1``)."""
    if settings is not None:
        p = settings.prover
    else:
        _check_environment()
        try:
            p = _ProverFromEnvironment().prover
        except SettingsError as exc:
            raise ConfigError(_undecodable_line(exc)) from None
        except ValidationError as exc:
            raise ConfigError(_error_line(exc, "environment")) from None
    return EngineOptions(
        device_spmv=p.device_spmv,
        params_to_device=p.params_to_device,
        ptx=p.ptx,
        cpu_threads=p.cpu_threads,
        kernel_cache=os.environ.get(KERNEL_CACHE_ENV) == "1",
        device_memory=int(p.device_memory_gib * 2**30),
        layout=p.device_layout,
    )
