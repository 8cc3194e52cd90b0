"""``psagent doctor``: what a host lacks before it can prove for the market, one finding per thing, each with
the fix. An operator's first day on a GPU host fails on things outside psagent: no driver, no
``/dev/nvidia-uvm`` (the unit's hardening stops the driver from creating it), no CUDA toolkit for Numba's
compiler, an old GPU, too little memory, missing or non-official parameters, a clock the market's signature
check refuses, a market that cannot be reached. Each check reads the host through :class:`Probes`, which the
tests replace; nothing here changes the host.
"""

from __future__ import annotations

import ctypes
import email.utils
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import Settings

__all__ = ["Finding", "Probes", "accepted_proof_types", "diagnose"]

MIN_CC = (7, 0)  # Volta: the kernels use 64-bit integer multiply-high and warp shuffles; measured on 9.0
CLOCK_SKEW_S = 5.0  # the market refuses signatures dated more than 5 s in the future (and 60 s in the past)
MARKET_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Finding:
    """One check: ``ok`` True (fine), False (missing or wrong: ``fix`` says what to do) or None (not
    checked, because something it needs is missing)."""

    check: str
    ok: bool | None
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = {True: "ok     ", False: "MISSING", None: "-      "}[self.ok]
        return f"{mark} {self.check}: {self.detail}" + (f" -> {self.fix}" if self.fix else "")

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass
class Device:
    index: int
    name: str
    cc: tuple[int, int]
    total_bytes: int | None


@dataclass
class Probes:
    """The host as doctor reads it (each method a seam for tests)."""

    dev: Path = Path("/dev")
    proc_driver: Path = Path("/proc/driver/nvidia/version")
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def kernel_driver(self) -> str | None:
        """The NVIDIA kernel module's version line, None when it is not loaded."""
        try:
            return self.proc_driver.read_text().splitlines()[0].strip()
        except (OSError, IndexError):
            return None

    def cuda_driver_version(self) -> int | None:
        """cuDriverGetVersion from libcuda (e.g. 12080 for CUDA 12.8), None when libcuda cannot load."""
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            v = ctypes.c_int(0)
            if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
                return None
            return int(v.value)
        except OSError:
            return None

    def device_files(self) -> dict[str, bool]:
        return {name: (self.dev / name).exists() for name in ("nvidiactl", "nvidia0", "nvidia-uvm")}

    def toolkit(self) -> tuple[bool, str]:
        """(found, what): Numba's CUDA target and the NVVM / libdevice / NVRTC it compiles with."""
        try:
            import numba_cuda  # noqa: F401 - the cuda extra's package
        except ImportError:
            return False, "numba-cuda is not installed"
        try:
            from numba.cuda.cuda_paths import get_cuda_paths

            paths = get_cuda_paths()
        except Exception as exc:  # noqa: BLE001 - cuda-pathfinder raises its own error types
            return False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        nvvm, libdevice = paths.get("nvvm"), paths.get("libdevice")
        got = [f"{k} {getattr(v, 'info', v)}" for k, v in (("nvvm", nvvm), ("libdevice", libdevice)) if v]
        missing = [k for k, v in (("nvvm", nvvm), ("libdevice", libdevice)) if not getattr(v, "info", v)]
        if missing:
            return False, f"{', '.join(missing)} not found"
        return True, "; ".join(got)

    def devices(self) -> list[Device]:
        from gpu.device import devices

        out = []
        for d in devices():
            if d.simulated:
                continue
            total = None
            try:
                from numba import cuda

                with cuda.gpus[d.index]:
                    total = int(cuda.current_context().get_memory_info()[1])
            except Exception:  # noqa: BLE001 - the memory is a detail; the device was listed
                total = None
            out.append(Device(d.index, d.name, d.compute_capability, total))
        return out

    def mem_total(self) -> int | None:
        from agent.host import mem_total

        return mem_total()

    def market(self, url: str, timeout: float) -> tuple[int, str | None, float]:
        """(HTTP status, Date header, local time at the answer) of a GET of the market's base URL."""
        import httpx

        r = httpx.get(url, timeout=timeout, follow_redirects=False)
        return r.status_code, r.headers.get("date"), time.time()


def _driver(p: Probes) -> list[Finding]:
    line = p.kernel_driver()
    cuda = p.cuda_driver_version()
    if line is None and cuda is None:
        return [Finding("driver", False, "no NVIDIA kernel module loaded and no libcuda.so.1",
                        "install the NVIDIA driver (e.g. apt install nvidia-driver-570-server) and reboot")]
    if cuda is None:
        return [Finding("driver", False, f"{line}; libcuda.so.1 cannot be loaded",
                        "install the driver's user-space libraries (libnvidia-compute)")]
    ver = f"CUDA {cuda // 1000}.{cuda % 1000 // 10}"
    return [Finding("driver", True, f"{line or 'kernel module version unknown'}; driver API {ver}")]


def _uvm(p: Probes) -> list[Finding]:
    files = p.device_files()
    missing = [f"/dev/{n}" for n, ok in files.items() if not ok]
    if not missing:
        return [Finding("uvm device", True, "/dev/nvidiactl, /dev/nvidia0, /dev/nvidia-uvm present")]
    return [Finding(
        "uvm device", False, f"{', '.join(missing)} missing",
        "sudo nvidia-modprobe -u -c=0 (the unit runs it as ExecStartPre=-+/usr/bin/nvidia-modprobe -u -c=0: "
        "its hardening keeps the driver from loading nvidia-uvm itself)",
    )]


def _toolkit(p: Probes) -> list[Finding]:
    ok, what = p.toolkit()
    if ok:
        return [Finding("toolkit", True, what)]
    return [Finding("toolkit", False, what,
                    "pip install 'psagent[cuda]' (CUDA 13 wheels, driver >= 580) or 'psagent[cuda12]'")]


def _devices(p: Probes, devices: list[Device] | None) -> list[Finding]:
    if devices is None:
        return [Finding("compute capability", None, "no usable GPU to look at")]
    if not devices:
        return [Finding("compute capability", False, "no CUDA device visible",
                        "check nvidia-smi; CUDA_VISIBLE_DEVICES; the driver and /dev/nvidia* above")]
    out = []
    for d in devices:
        ok = d.cc >= MIN_CC
        fix = "" if ok else f"a GPU of compute capability {MIN_CC[0]}.{MIN_CC[1]} or newer"
        out.append(Finding("compute capability", ok, f"GPU {d.index} {d.name}: {d.cc[0]}.{d.cc[1]}", fix))
    return out


def _memory(p: Probes, devices: list[Device] | None, plan: tuple[int, int] | None) -> list[Finding]:
    """Host memory and each GPU's against the 32GiB proof's plan (host, device bytes) when it is known."""
    from agent.host import gb

    total = p.mem_total()
    out = []
    if plan is None:
        out.append(Finding("memory", None, f"host {gb(total) if total else 'unknown'}; the requirement comes "
                           "from the circuit template, not recorded yet (psagent doctor --plan records it)"))
        return out
    host_need, dev_need = plan
    if total is not None:
        ok = total >= host_need
        out.append(Finding("memory", ok, f"host {gb(total)}, a 32GiB proof needs about {gb(host_need)}",
                           "" if ok else "more host memory"))
    for d in devices or []:
        if d.total_bytes is None:
            continue
        ok = d.total_bytes >= dev_need
        out.append(Finding("memory", ok, f"GPU {d.index} {gb(d.total_bytes)}, a 32GiB proof needs about "
                           f"{gb(dev_need)}", "" if ok else "a GPU with more memory"))
    return out


def accepted_proof_types(settings: Settings) -> list[tuple[str, Any]]:
    """(label, proof type) of ``prover.accepted_proof_types``: the parameters the readiness gate loads."""
    from porep.prooftypes import proof_type
    from porep.snap.params import update_proof_type

    porep, snap = settings.prover.accepted()
    return [(n, proof_type(n)) for n in porep] + [(f"{n} (update)", update_proof_type(n)) for n in snap]


def _params(settings: Settings, proof_types: list[tuple[str, Any]]) -> list[Finding]:
    """Each accepted proof type's .params / .vk in prover.params_dir: official, development, damaged or
    missing. A large file whose digest is not on record yet is not hashed here (minutes for 47 GB). Unless
    ``prover.allow_development_params``, a development file is a finding as the gate refuses it, and the
    fix for a missing one is the official file (never a development one)."""
    from agent.config import cache_dir
    from agent.paramfiles import ParamDigests, fetch_hint, verdict
    from agent.proving.kind import WorkKind
    from agent.proving.parameters import params_paths
    from porep.official_params import DAMAGED, DEVELOPMENT, OFFICIAL, registry

    d = settings.prover.params_dir
    official_only = not settings.prover.allow_development_params
    digests = ParamDigests(cache_dir())
    out = []
    for label, pt in proof_types:
        update = WorkKind.of(pt) is WorkKind.SNAP
        for path in params_paths(d, pt):
            what = f"{label} {path.suffix[1:]}"
            if not path.is_file():
                hint = fetch_hint(pt.size_label, d, update=update, official=official_only)
                out.append(Finding("parameters", False, f"{what}: {path} missing", hint))
                continue
            big = path.stat().st_size > 1 << 30
            if big and registry().get(path.name) is not None and digests.known(path) is None:
                out.append(Finding("parameters", None, f"{what}: {path.name} present, digest not known yet",
                                   f"psagent params check {d} (once per file)"))
                continue
            v = verdict(path, digests)
            fix = {DAMAGED: "fetch it again (lotus fetch-params / curio fetch-params)"}.get(v.kind, "")
            ok = v.kind != DAMAGED
            note = "" if v.kind == OFFICIAL else "; the market checks official keys"
            if official_only and v.kind == DEVELOPMENT:
                ok = False
                note = "; the readiness gate refuses it: the market checks official keys"
                fix = (fetch_hint(pt.size_label, d, update=update, official=True)
                       + " (a test market only: prover.allow_development_params = true)")
            out.append(Finding("parameters", ok, f"{what}: {v.kind} ({v.reason}){note}", fix))
    return out


def _market(settings: Settings, p: Probes, timeout: float) -> list[Finding]:
    url = settings.market.url
    try:
        status, date, now = p.market(url, timeout)
    except Exception as exc:  # noqa: BLE001 - any transport failure is "unreachable"
        return [
            Finding("market", False, f"{url} unreachable: {type(exc).__name__}: {str(exc)[:120]}",
                    "check DNS, the firewall and market.url"),
            Finding("clock", None, "not compared: the market did not answer"),
        ]
    out = [Finding("market", True, f"{url} answered HTTP {status}")]
    if date is None:
        out.append(Finding("clock", None, "the market's answer had no Date header"))
        return out
    theirs = email.utils.parsedate_to_datetime(date).timestamp()
    skew = now - theirs
    ok = abs(skew) <= CLOCK_SKEW_S
    out.append(Finding("clock", ok, f"ours minus the market's: {skew:+.1f} s (Date has 1 s resolution)",
                       "" if ok else "synchronise the clock (systemd-timesyncd / chrony): the market refuses "
                       "signatures dated more than 5 s ahead or 60 s behind"))
    return out


def diagnose(
    settings: Settings,
    probes: Probes | None = None,
    *,
    proof_types: list[tuple[str, Any]] | None = None,
    plan: tuple[int, int] | None = None,
    market_timeout_s: float = MARKET_TIMEOUT_S,
) -> list[Finding]:
    """Every finding, in the order an operator fixes them. ``proof_types``: (label, proof type) whose
    parameters are needed (default: the configuration's ``prover.accepted_proof_types``, what the readiness
    gate loads); ``plan``: (host, device) bytes of one proof when known."""
    p = probes or Probes()
    if proof_types is None:
        proof_types = accepted_proof_types(settings)
    out = _driver(p)
    driver_ok = out[0].ok
    out += _uvm(p)
    out += _toolkit(p)
    devices: list[Device] | None = None
    if driver_ok and out[-1].ok:
        try:
            devices = p.devices()
        except Exception as exc:  # noqa: BLE001 - a GpuError: the driver and toolkit findings say why
            out.append(Finding("compute capability", False, f"cannot list devices: {exc}"))
    if not any(f.check == "compute capability" for f in out):
        out += _devices(p, devices)
    out += _memory(p, devices, plan)
    out += _params(settings, proof_types)
    out += _market(settings, p, market_timeout_s)
    return out
