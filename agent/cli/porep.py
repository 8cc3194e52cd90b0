"""seal / c1 make / c1 check (test sectors, C1 generation, strict vanilla verification).

A contract others script against (docs/architecture.md): ``psagent seal`` writes a sector directory
(``sealed``, ``p_aux``, ``summary.json``, labels and trees; see :mod:`porep.seal`), ``psagent c1 make``
turns it into a C1 JSON (Rust key order) or a ProofData envelope, and ``psagent c1 check`` runs the strict
vanilla verification (:mod:`porep.vanilla_verify`) and exits 0 only if every check passes.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail

c1_app = typer.Typer(help="C1 (commit phase 1) outputs: make and strictly check.", no_args_is_help=True)


class KeyOrderOpt(StrEnum):
    rust = "rust"
    go = "go"


def _hex32(value: str, what: str) -> bytes:
    text = value[2:] if value.lower().startswith("0x") else value
    try:
        raw = bytes.fromhex(text)
    except ValueError:
        fail(f"{what} is not hex: {value!r}", EXIT_USAGE)
    if len(raw) != 32:
        fail(f"{what} must be 32 bytes (64 hex digits), got {len(raw)}", EXIT_USAGE)
    return raw


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    """A rich progress display on stderr (one bar per stage), or a no-op callback."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        TextColumn("{task.percentage:>5.1f}%"),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=False,
    ) as progress:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total)

        yield update


@c1_app.command("make")
def c1_make(
    directory: Annotated[Path, typer.Argument(help="A sealed test sector directory (psagent seal --out).")],
    seed: Annotated[str, typer.Option(help="Interactive seed, 32 bytes hex.")],
    out: Annotated[Path | None, typer.Option(help="Output file (default stdout).")] = None,
    proofdata: Annotated[bool, typer.Option("--proofdata", help="Write the ProofData envelope.")] = False,
    miner: Annotated[
        int | None, typer.Option(help="SectorID.Miner for --proofdata (default: the miner given to seal).")
    ] = None,
    key_order: Annotated[KeyOrderOpt, typer.Option(help="C1 key order: Rust (serde) or Go (Curio).")] = (
        KeyOrderOpt.rust
    ),
) -> None:
    """Write the C1 JSON of a sealed test sector."""
    from porep.c1 import KeyOrder
    from porep.seal import SealedSector
    from porep.vanilla import make_c1
    from porep.vanilla_verify import verify_c1

    seed_b = _hex32(seed, "--seed")
    try:
        sealed = SealedSector.load(directory)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"cannot read sector directory {directory}: {exc}", EXIT_USAGE)
    t0 = time.perf_counter()
    c1 = make_c1(sealed, seed_b)
    info = sealed.info
    # Like Rust's seal_commit_phase1, check what we hand out.
    report = verify_c1(c1, prover_id=info.prover_id, sector=info.sector, porep_id=info.porep_id)
    if not report.ok:
        for f in report.failures[:20]:
            typer.echo(f"psagent: {f}", err=True)
        fail("the generated C1 does not verify (corrupt sector directory?)")
    raw = c1.to_json(KeyOrder(key_order.value))
    if proofdata:
        from market.proofdata import ProofData, SectorID

        actor = miner if miner is not None else info.miner
        if actor is None:
            fail("--proofdata needs the miner actor id: seal with --miner or pass --miner", EXIT_USAGE)
        raw = ProofData.encode(SectorID(actor, info.sector), porep=raw)
    if out is None:
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
    else:
        out.write_bytes(raw)
        typer.echo(f"wrote {out} ({len(raw)} bytes, {time.perf_counter() - t0:.2f} s)", err=True)


@c1_app.command("check")
def c1_check(
    file: Annotated[Path, typer.Argument(help="C1 JSON or ProofData JSON.")],
    miner: Annotated[int | None, typer.Option(help="Miner actor id (binds replica_id).")] = None,
    sector: Annotated[int | None, typer.Option(help="Sector number (binds replica_id).")] = None,
    prover_id: Annotated[str | None, typer.Option(help="32 bytes hex, instead of --miner.")] = None,
    porep_id: Annotated[
        str | None, typer.Option(help="32 bytes hex (test sectors with arbitrary ids).")
    ] = None,
) -> None:
    """Strict vanilla verification; exit 0 only if it passes."""
    from porep.c1 import C1FormatError, parse_c1
    from porep.ids import prover_id as make_prover_id
    from porep.vanilla_verify import CHECKS, verify_c1

    try:
        raw = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc}", EXIT_USAGE)
    prover: bytes | None = _hex32(prover_id, "--prover-id") if prover_id is not None else None
    if prover is None and miner is not None:
        prover = make_prover_id(miner)
    number = sector
    if raw.lstrip().startswith(b'{"SectorID"') or b'"SectorID"' in raw[:200]:
        from market.errors import ProtocolError
        from market.proofdata import ProofData

        try:
            pd = ProofData.parse(raw)
        except ProtocolError as exc:
            fail(f"{file}: not a valid ProofData: {exc}")
        if pd.porep is None:
            fail(f"{file}: ProofData carries no PoRep C1")
        c1 = pd.porep
        if prover is None:
            prover = make_prover_id(pd.sector_id.miner)
        if number is None:
            number = pd.sector_id.number
    else:
        try:
            c1 = parse_c1(raw)
        except C1FormatError as exc:
            fail(f"{file}: not a valid C1: {exc}")
    t0 = time.perf_counter()
    report = verify_c1(
        c1,
        prover_id=prover,
        sector=number,
        porep_id=_hex32(porep_id, "--porep-id") if porep_id is not None else None,
    )
    elapsed = time.perf_counter() - t0
    for note in report.notes:
        typer.echo(f"note: {note}", err=True)
    pt = report.proof_type
    if report.ok:
        typer.echo(
            f"ok: {pt.name}, {pt.partitions} partition(s) x {pt.challenges_per_partition} challenges, "
            f"{len(CHECKS)} checks passed ({elapsed:.2f} s)"
        )
        return
    for f in report.failures[:50]:
        typer.echo(f"FAIL {f}", err=True)
    if len(report.failures) > 50:
        typer.echo(f"… and {len(report.failures) - 50} more", err=True)
    typer.echo(
        json.dumps(
            {"ok": False, "failed_checks": sorted(report.checks_failed()), "failures": len(report.failures)}
        )
    )
    raise typer.Exit(EXIT_FAILURE)


def register(app: typer.Typer) -> None:
    @app.command()
    def seal(
        registered_proof: Annotated[str, typer.Option(help="e.g. StackedDrg2KiBV1_1")],
        sector: Annotated[int, typer.Option(help="Sector number.")],
        ticket: Annotated[str, typer.Option(help="32 bytes hex.")],
        out: Annotated[Path, typer.Option(help="Output directory.")],
        miner: Annotated[int | None, typer.Option(help="Miner actor id.")] = None,
        prover_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides --miner).")] = None,
        porep_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides the derived id).")] = None,
        piece: Annotated[Path | None, typer.Option(help="Unpadded piece file.")] = None,
        random_piece: Annotated[
            bool, typer.Option("--random-piece", help="Random data filling the sector's raw capacity.")
        ] = False,
        parent_cache: Annotated[
            Path | None, typer.Option(help="Directory to keep parent caches in (reused across seals).")
        ] = None,
        progress: Annotated[
            bool, typer.Option("--progress/--no-progress", help="Progress bars on stderr.")
        ] = True,
    ) -> None:
        """Seal a test sector (2KiB, 8MiB; 512MiB if you have the time)."""
        from porep.fr32 import unpadded_size
        from porep.ids import prover_id as make_prover_id
        from porep.prooftypes import proof_type
        from porep.seal import seal as do_seal

        try:
            pt = proof_type(registered_proof)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
        if pt.tree.sub or pt.tree.top:
            fail(f"{pt.name}: only 2KiB, 8MiB and 512MiB sectors can be sealed here", EXIT_USAGE)
        if (piece is None) == (not random_piece):
            fail("give exactly one of --piece FILE and --random-piece", EXIT_USAGE)
        if prover_id is not None:
            prover = _hex32(prover_id, "--prover-id")
        elif miner is not None:
            prover = make_prover_id(miner)
        else:
            fail("give --miner or --prover-id", EXIT_USAGE)
        if not 0 <= sector < 1 << 64:
            fail("--sector must fit in a u64", EXIT_USAGE)
        ticket_b = _hex32(ticket, "--ticket")
        porep = _hex32(porep_id, "--porep-id") if porep_id is not None else None
        cap = unpadded_size(pt.sector_size)
        if piece is not None:
            try:
                data = piece.read_bytes()
            except OSError as exc:
                fail(f"cannot read {piece}: {exc}", EXIT_USAGE)
            if len(data) > cap:
                fail(
                    f"piece of {len(data)} bytes does not fit a {pt.size_label} sector ({cap} bytes)",
                    EXIT_USAGE,
                )
        else:
            data = secrets.token_bytes(cap)
        t0 = time.perf_counter()
        with _progress(progress) as cb:
            sealed = do_seal(
                pt,
                prover,
                sector,
                ticket_b,
                piece=data,
                porep_id=porep,
                miner=miner if prover_id is None else None,
                progress=cb,
                parent_cache_dir=parent_cache,
            )
        sealed.save(out)
        summary = sealed.info.to_json()
        typer.echo(
            f"sealed {pt.name} sector {sector} in {time.perf_counter() - t0:.1f} s → {out}: "
            f"comm_d {summary['comm_d_cid']}, comm_r {summary['comm_r_cid']}",
            err=True,
        )

    app.add_typer(c1_app, name="c1")
