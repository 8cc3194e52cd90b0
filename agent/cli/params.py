"""params generate / params info (Groth16 parameters in bellperson's .params/.vk layout)."""

from __future__ import annotations

import json
import os
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Backend,
    BackendOption,
    ForceOption,
    Interrupted,
    announce_compilation,
    fail,
    interruptible,
    resolve_backend,
    sector_size_or_exit,
)
from agent.host import nearest_existing

if TYPE_CHECKING:
    from gpu.groth16.r1cs import R1CS
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

app = typer.Typer(help="Groth16 parameters (bellperson .params/.vk layout).", no_args_is_help=True)

TEST_MODE_NOTE = "TEST MODE: toxic waste derived from a public seed - INSECURE, anyone can forge proofs"
SECURE_NOTE = "toxic waste drawn from the OS CSPRNG and discarded (never written)"


@app.command()
def generate(
    sector_size: Annotated[
        str | None, typer.Option(help="The PoRep circuit of one partition: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB.")
    ] = None,
    r1cs: Annotated[
        Path | None, typer.Option("--r1cs", help="An R1CS directory (psagent-r1cs format).")
    ] = None,
    synthetic_constraints: Annotated[
        int | None, typer.Option(help="A synthetic circuit of N constraints.")
    ] = None,
    public_inputs: Annotated[int, typer.Option(help="Public inputs of the synthetic circuit.")] = 2,
    out: Annotated[Path, typer.Option(help="Output directory (created if missing).")] = Path("params"),
    name: Annotated[str | None, typer.Option(help="File stem (default from the circuit).")] = None,
    test_seed: Annotated[
        int | None, typer.Option(help="Derive the toxic waste from this seed (INSECURE).")
    ] = None,
    force: ForceOption = False,
    backend: BackendOption = Backend.auto,
    update: Annotated[
        bool, typer.Option("--update", help="With --sector-size: the SnapDeals update circuit, not PoRep.")
    ] = False,
    post: Annotated[
        str | None,
        typer.Option("--post", help="With --sector-size: a PoSt circuit, winning or window (not PoRep)."),
    ] = None,
) -> None:
    """Development parameters for an R1CS: NAME.params, NAME.vk and NAME.meta.json (which records how the
    toxic waste was handled). The fixed-base products run on the GPU (--backend cuda, or auto with a GPU) or
    the CPU; the file is streamed to disk as it is computed and is the same bytes either way."""
    if sum(x is not None for x in (sector_size, r1cs, synthetic_constraints)) != 1:
        fail("give exactly one of --sector-size SIZE, --r1cs DIR or --synthetic-constraints N", EXIT_USAGE)
    from agent.host import disk_free, gb
    from agent.proving.plan import sizes_of
    from gpu.groth16 import plan
    from gpu.groth16.r1cs import R1CS
    from gpu.groth16.setup import UnconstrainedVariable, estimate
    from gpu.groth16.synthetic import SyntheticCircuit
    from gpu.placement import GpuError

    if update and sector_size is None:
        fail("--update goes with --sector-size SIZE", EXIT_USAGE)
    if post is not None and (sector_size is None or update or post not in ("winning", "window")):
        fail("--post winning|window goes with --sector-size SIZE (and not with --update)", EXIT_USAGE)
    pt: Any = None
    if sector_size is not None:  # the proof type first: its file name is checked before any work
        label = sector_size_or_exit(sector_size)
        if post is not None:
            from porep.post.params import POST_PROOF_TYPES, PoStKind

            pt = [t for t in POST_PROOF_TYPES if t.kind is PoStKind(post) and t.size_label == label][-1]
        elif update:
            from porep.snap.params import UPDATE_PROOF_TYPES

            pt = next(t for t in UPDATE_PROOF_TYPES if t.size_label == label)
        else:
            from porep.prooftypes import proof_type

            pt = proof_type(f"StackedDrg{label}V1_1")
        stem = name or pt.param_stem
    elif r1cs is not None:
        stem = name or r1cs.name
    else:
        stem = name or f"synthetic-{synthetic_constraints}-{public_inputs}"
    _check_outputs(out, stem, force)
    chosen = resolve_backend(backend)  # --backend cuda without a GPU: exit 2 before the circuit is built
    if pt is not None:  # disk and memory from the circuit template's counts, before the circuit is built
        sizes = sizes_of(pt)
        _check_resources(out, stem, estimate(sizes), circuit_bytes=plan.compact_r1cs_host_bytes(sizes))
    if pt is not None:
        system = _blank_r1cs(pt)
        key = f"{post}_post_sector_size" if post else "update_sector_size" if update else "porep_sector_size"
        circuit: dict[str, object] = {key: pt.size_label}
    elif r1cs is not None:
        try:
            system = R1CS.load(r1cs)
        except (OSError, ValueError, KeyError) as exc:
            fail(f"cannot load R1CS from {r1cs}: {exc}", EXIT_USAGE)
        circuit = {"r1cs": str(r1cs)}
    else:
        assert synthetic_constraints is not None
        try:
            system = SyntheticCircuit(synthetic_constraints, public_inputs).r1cs()
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
        circuit = {"synthetic_constraints": synthetic_constraints, "public_inputs": public_inputs}
    if pt is None:  # the circuit is in memory already: its counts
        _check_resources(out, stem, estimate(plan.ProofSizes.of_r1cs(system)))
    device = None
    if chosen is Backend.cuda:
        from gpu.device import devices

        device = devices()[0]
    announce_compilation()
    from agent.config import cache_dir
    from agent.proving.parameters import IN_PLACE, write_dev_params

    meta = {
        "circuit": circuit,
        "toxic_waste": TEST_MODE_NOTE if test_seed is not None else SECURE_NOTE,
        "test_mode": test_seed is not None,
        "backend": str(chosen),
    }
    params_path = out / f"{stem}.params"
    reached: list[str] = []  # the setup's stages that write the file (its temporary file open), IN_PLACE

    def progress_of(shown: Callable[[str, float, float], None]) -> Callable[[str, float, float], None]:
        def progress(stage: str, done: float, total: float) -> None:
            if stage in ("h", "l", "a", "b_g1", "b_g2", "write", IN_PLACE) and stage not in reached:
                reached.append(stage)
            shown(stage, done, total)

        return progress

    try:
        with interruptible(), _setup_progress() as shown:
            write_dev_params(
                system, out, stem, cache=cache_dir(), meta=meta, backend=chosen, device=device,
                test_seed=test_seed, progress=progress_of(shown),
            )
    except UnconstrainedVariable as exc:
        fail(str(exc), EXIT_FAILURE)
    except GpuError as exc:
        fail(f"setup on the GPU failed: {exc}", EXIT_FAILURE)
    except Interrupted as exc:
        fail(f"{exc.name}: stopped; {_cleanup(params_path, reached)}", 128 + exc.signum)
    except OSError as exc:  # a full disk, an I/O error: one line, nothing partial left
        free = disk_free(out)
        fail(
            f"writing the parameters in {out}: {exc.strerror or exc} ({gb(free)} free there); "
            f"{_cleanup(params_path, reached)}",
            EXIT_FAILURE,
        )
    print(f"wrote {params_path} / .vk ({meta['toxic_waste']})", file=sys.stderr, flush=True)


def _cleanup(params: Path, reached: list[str]) -> str:
    """What a failed or interrupted run left, said in one phrase. ``write_dev_params`` leaves a whole set or
    none (the setup's writer removes its temporary file; a new .params whose .vk could not follow is removed
    too); ``reached``: the writing stages begun, ``IN_PLACE`` once the new .params was renamed into place."""
    from agent.proving.parameters import IN_PLACE

    tmp = params.with_name(params.name + ".tmp")  # gpu.groth16.params.ParamsWriter's
    if tmp.exists():
        try:
            tmp.unlink()
        except OSError:
            return f"could not remove {tmp}: remove by hand"
    if not reached:
        return "nothing was written"
    if IN_PLACE in reached:
        return f"removed the new {params.name} (its .vk and .meta.json could not follow)"
    return f"removed the partial {tmp.name}"


def _blank_r1cs(pt: ProofType | UpdateProofType | PoStProofType) -> R1CS:
    """The blank circuit of one partition (``agent.proving.parameters.blank_r1cs``: the update circuit for an
    update proof type, the FallbackPoSt circuit for a PoSt one; the StackedDRG one from the pre-compiled
    circuit, cached under the agent's cache directory: a 32GiB partition in minutes, not the hours of direct
    synthesis)."""
    import time

    from agent.config import cache_dir
    from agent.proving.kind import WorkKind
    from agent.proving.parameters import blank_r1cs

    t = time.perf_counter()
    system = blank_r1cs(pt, cache_dir())
    what = {
        WorkKind.POREP: "circuit",
        WorkKind.SNAP: "update circuit",
        WorkKind.WINNING_POST: "winning PoSt circuit",
        WorkKind.WINDOW_POST: "window PoSt circuit",
    }[WorkKind.of(pt)]
    print(
        f"{what} {pt.size_label}: {system.num_constraints:,} constraints, {system.num_aux:,} aux, "
        f"{system.num_inputs} inputs ({time.perf_counter() - t:.1f}s)",
        file=sys.stderr,
        flush=True,
    )
    return system


@contextmanager
def _setup_progress() -> Iterator[Callable[[str, float, float], None]]:
    """The setup's progress on stderr: a bar on a terminal, else one line per stage (logs stay short)."""
    if not sys.stderr.isatty():
        import time

        seen: set[str] = set()
        t0 = last = time.perf_counter()

        def line(stage: str, done: float, total: float) -> None:
            nonlocal last
            if stage not in seen:  # a log line per stage, with the time the previous one took
                now = time.perf_counter()
                seen.add(stage)
                print(
                    f"setup: {stage} ({100 * done / max(total, 1):.0f}%, {now - t0:.1f} s elapsed, "
                    f"previous stage {now - last:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
                last = now

        yield line
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("setup {task.description:<8}"), BarColumn(), TextColumn("{task.percentage:>5.1f}%"))
    with Progress(
        *columns, TimeElapsedColumn(), TimeRemainingColumn(), console=Console(file=sys.stderr)
    ) as bar:
        task = bar.add_task("", total=1.0)

        def update(stage: str, done: float, total: float) -> None:
            bar.update(task, description=stage, completed=done, total=total)

        yield update


def _check_outputs(out: Path, stem: str, force: bool) -> None:
    """Refuse, before the (long) setup, to write into a non-directory or over existing parameters."""
    import os

    from agent.paramfiles import official_dir_of

    official = official_dir_of(out)
    if official is not None:
        fail(
            f"--out {out}: {official} is Filecoin's official parameter directory (lotus and curio load it "
            "before sealing); development parameters go elsewhere, e.g. --out ./params, with "
            "prover.params_dir / --params-dir pointing there",
            EXIT_USAGE,
        )
    if out.exists() and not out.is_dir():
        fail(f"--out {out} exists and is not a directory", EXIT_USAGE)
    existing = [p for ext in (".params", ".vk", ".meta.json") if (p := out / f"{stem}{ext}").exists()]
    if existing and not force:
        fail(f"{existing[0]} exists (pass --force to replace the parameters)", EXIT_USAGE)
    anchor = nearest_existing(out)
    if not os.access(anchor, os.W_OK):
        fail(f"--out {out}: {anchor} is not writable", EXIT_USAGE)


# temporary files of gpu.groth16.params.ParamsWriter (NAME.params.tmp) and of gpu.files (.NAME.PID.TID.tmp:
# the .vk and .meta.json), left only by a run killed outright
LEFTOVER_GLOBS = ("*.params.tmp", ".*.tmp")


def _check_resources(out: Path, stem: str, est: Any, *, circuit_bytes: int = 0) -> None:
    """Before the setup: print what it will take (file size, memory), name files left over by earlier runs
    that did not finish, and refuse (exit 2, one line) when the disk or the memory cannot hold it.
    ``circuit_bytes``: the circuit still to be built (held through the setup)."""
    from agent.host import disk_free, existing_anchor, gb, mem_available, mem_available_source

    own_tmp = out / f"{stem}.params.tmp"
    reclaimed = 0
    if out.is_dir():
        for pattern in LEFTOVER_GLOBS:
            for p in sorted(out.glob(pattern)):
                size = p.stat().st_size
                if p == own_tmp:
                    reclaimed = size
                    what = "it is replaced now"
                else:
                    what = f"remove it (rm {p}) unless another run is writing it"
                print(f"psagent: {p} ({gb(size)}) is left over from an earlier run that did not finish; "
                      f"{what}", file=sys.stderr, flush=True)
    need = est.file_bytes + est.vk_bytes + (1 << 20)
    free = disk_free(out) + reclaimed
    memory = est.host_bytes + circuit_bytes
    avail = mem_available()
    print(
        f"psagent: the parameters take {gb(est.file_bytes)} on disk ({gb(free)} free in "
        f"{existing_anchor(out)}) and about {gb(memory)} of memory for the "
        + ("circuit and the setup" if circuit_bytes else "setup")
        + (f" ({gb(avail)} available)" if avail is not None else ""),
        file=sys.stderr, flush=True,
    )
    if need > free:
        fail(f"--out {out}: the parameters need {gb(need)} on disk, {gb(free)} is free there", EXIT_USAGE)
    short = avail is not None and memory > avail
    source = mem_available_source() if short else ""  # MemAvailable, or a cgroup limit less its use
    if short and os.environ.get("PSAGENT_SETUP_MEMORY_CHECK") == "warn":
        print(f"psagent: warning: the setup needs about {gb(memory)}, {gb(avail or 0)} is available "
              f"({source}); going on (PSAGENT_SETUP_MEMORY_CHECK=warn)", file=sys.stderr, flush=True)
    elif short:
        fail(
            f"the setup needs about {gb(memory)} of memory, {gb(avail or 0)} is available ({source}): "
            "free memory, raise the memory limit or use a larger host",
            EXIT_USAGE,
        )


def _scan(path: Path) -> dict[str, object]:
    """Section sizes of a .params or .vk file from its length fields (no point decoding)."""
    from gpu.groth16.params import G1_UNC, G2_UNC, VK_FIXED

    size = path.stat().st_size
    with open(path, "rb") as f:
        f.seek(VK_FIXED)
        raw = f.read(4)
        if len(raw) < 4:
            raise ValueError("truncated")
        (ic,) = struct.unpack(">I", raw)
        pos = VK_FIXED + 4 + ic * G1_UNC
        info: dict[str, object] = {"file": path.name, "bytes": size, "public_inputs_with_one": ic}
        if path.suffix == ".vk":
            if pos != size:
                raise ValueError(f"vk is {size} bytes, layout says {pos}")
            return info
        for sec, unit in (("h", G1_UNC), ("l", G1_UNC), ("a", G1_UNC), ("b_g1", G1_UNC), ("b_g2", G2_UNC)):
            f.seek(pos)
            raw = f.read(4)
            if len(raw) < 4:
                raise ValueError(f"truncated before section {sec}")
            (n,) = struct.unpack(">I", raw)
            info[sec] = n
            pos += 4 + n * unit
        if pos > size:
            raise ValueError(f"truncated: layout needs {pos} bytes, file has {size}")
        info["domain_log"] = int(info["h"]).bit_length()  # type: ignore[call-overload]
        info["trailing_bytes"] = size - pos
        return info


def _param_files(directory: Path) -> list[Path]:
    if not directory.exists():
        fail(f"{directory} does not exist", EXIT_USAGE)
    if not directory.is_dir():
        fail(f"{directory} is not a directory", EXIT_USAGE)
    files = sorted([*directory.glob("*.params"), *directory.glob("*.vk")])
    if not files:
        fail(f"no .params or .vk files in {directory}", EXIT_USAGE)
    return files


def _hashing(path: Path, digests: Any) -> None:
    """Say so before reading a large file whose digest is not on record yet (a 47 GB file: minutes)."""
    from porep.official_params import registry

    size = path.stat().st_size
    if size > 1 << 30 and registry().get(path.name) is not None and digests.known(path) is None:
        print(f"psagent: computing the digest of {path.name} ({size / 1e9:.1f} GB, once per file)…",
              file=sys.stderr, flush=True)


@app.command()
def info(
    directory: Annotated[Path, typer.Argument(help="A directory of .params / .vk files.")],
) -> None:
    """Describe the .params / .vk files in a directory, one JSON object per file on stdout: sizes from the
    layout's length fields, and ``kind``: official (a published name with the published digest),
    development (ours, or a name Filecoin does not publish) or damaged (a published name, another digest).
    Exit 1 when a file is damaged or does not parse."""
    from agent.config import cache_dir
    from agent.paramfiles import ParamDigests, official_dir_of, verdict
    from porep.official_params import DAMAGED, DEVELOPMENT

    files = _param_files(directory)
    digests = ParamDigests(cache_dir())
    in_official = official_dir_of(directory) is not None
    bad = False
    for p in files:
        _hashing(p, digests)
        v = verdict(p, digests)
        try:
            row = _scan(p)
        except (OSError, ValueError) as exc:
            typer.echo(f"{p.name}: INVALID ({exc}; {v.kind}: {v.reason})")
            bad = True
            continue
        row["kind"], row["reason"] = v.kind, v.reason
        if v.published is not None:
            row["cid"] = v.published.cid
        meta = p.with_name(p.name.rsplit(".", 1)[0] + ".meta.json")
        if meta.exists():
            row["toxic_waste"] = json.loads(meta.read_text()).get("toxic_waste")
        if in_official and v.kind == DEVELOPMENT:
            row["warning"] = "development file in Filecoin's official parameter directory: move it elsewhere"
        bad |= v.kind == DAMAGED
        typer.echo(json.dumps(row))
    if bad:
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def check(
    directory: Annotated[Path, typer.Argument(help="A directory of .params / .vk files.")],
) -> None:
    """Check every .params / .vk file as the prover would trust it: a published file by its digest (as
    paramfetch does), any other file point by point (curve and subgroup checks; once per .params file, the
    success remembered by digest as the prover does). One line per file on stdout; exit 1 when any fails."""
    from agent.config import cache_dir
    from agent.paramfiles import ParamDigests, verdict
    from agent.proving.parameters import CheckedParams
    from gpu.curves import EncodingError
    from gpu.groth16.params import check_file
    from porep.official_params import DAMAGED, OFFICIAL

    files = _param_files(directory)
    digests = ParamDigests(cache_dir())
    checked = CheckedParams(cache_dir())
    failed = 0
    for p in files:
        _hashing(p, digests)
        v = verdict(p, digests)
        if v.kind == OFFICIAL:
            typer.echo(f"ok      {v.line(p.name)}")
            continue
        if v.kind == DAMAGED:
            typer.echo(f"FAILED  {v.line(p.name)}")
            failed += 1
            continue
        if p.suffix == ".params" and checked.trusted(p):
            typer.echo(f"ok      {p.name}: {v.kind}, every point checked earlier (same bytes)")
            continue
        print(f"psagent: checking every point of {p.name} ({p.stat().st_size / 1e6:.1f} MB)…",
              file=sys.stderr, flush=True)
        try:
            n = check_file(p)
        except (EncodingError, ValueError, OSError) as exc:
            typer.echo(f"FAILED  {p.name}: {v.kind}, {exc}")
            failed += 1
            continue
        if p.suffix == ".params":
            checked.record(p, digests.digests(p)[1] if digests.known(p) else None)
        typer.echo(f"ok      {p.name}: {v.kind}, {n:,} points on the curve and in the subgroup")
    if failed:
        fail(f"{failed} of {len(files)} file(s) failed the check", EXIT_FAILURE)
