"""seal / c1 make / c1 synth / c1 check (test sectors, C1 generation, strict vanilla verification).

A contract others script against (docs/architecture.md): ``psagent seal`` writes a sector directory
(``sealed``, ``p_aux``, ``summary.json``, labels and trees; see :mod:`porep.sdr.seal`), ``psagent c1 make``
turns it into a C1 JSON (Rust key order) or a ProofData envelope, ``psagent c1 synth`` makes a valid C1 of any
size without sealing (:mod:`porep.sdr.sparse`), and ``psagent c1 check`` runs the strict
vanilla verification (:mod:`porep.sdr.vanilla_verify`) and exits 0 only if every check passes.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from agent.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    CheckOption,
    ForceOption,
    JsonOption,
    MinerOption,
    ProgressOption,
    announce_compilation,
    check_output_dir,
    check_output_file,
    fail,
    fail_check,
    parse_hex,
    parse_miner,
    parse_u64,
    write_or_exit,
)

c1_app = typer.Typer(
    help="C1 (commit phase 1) outputs: make, synthesise and strictly check.", no_args_is_help=True
)


class KeyOrderOpt(StrEnum):
    rust = "rust"
    go = "go"


def _hex32(value: str, what: str) -> bytes:
    return parse_hex(value, what, 32)


def _proof_type(name: str) -> Any:
    """The proof type of a Rust name, or exit 2 listing the valid names."""
    from porep.prooftypes import PROOF_TYPES, proof_type

    try:
        return proof_type(name)
    except ValueError:
        names = ", ".join(pt.name for pt in PROOF_TYPES)
        fail(f"unknown proof type {name[:80]!r}; valid: {names}", EXIT_USAGE)



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


def _stage_timer(cb: Any, times: dict[str, float]) -> Callable[..., AbstractContextManager[None]]:
    """``timed(name, bar=True)``: a stage's seconds into ``times`` (the --json result's ``stages``) and, with
    ``bar``, its bar on the progress callback ``cb`` (``bar=False``: a stage that draws its own bars)."""

    @contextmanager
    def timed(name: str, bar: bool = True) -> Iterator[None]:
        if cb is not None and bar:
            cb(name, 0, 1)
        t = time.perf_counter()
        yield
        times[name] = round(time.perf_counter() - t, 3)
        if cb is not None and bar:
            cb(name, 1, 1)

    return timed


def _written(result: dict[str, Any], json_out: bool, line: str) -> None:
    """``--json``: the result on stdout; else ``line`` ("wrote …") on stderr, where progress goes
    everywhere."""
    if json_out:
        typer.echo(json.dumps(result))
    else:
        typer.echo(line, err=True)


@c1_app.command("make")
def c1_make(
    directory: Annotated[Path, typer.Argument(help="A sealed test sector directory (psagent seal --out).")],
    seed: Annotated[str, typer.Option(help="Interactive seed (the chain randomness), 32 bytes hex.")],
    out: Annotated[Path | None, typer.Option(help="Output file (default: stdout).")] = None,
    proofdata: Annotated[
        bool, typer.Option("--proofdata", help="Write the market's ProofData envelope instead of a bare C1.")
    ] = False,
    miner: Annotated[
        str | None,
        typer.Option(
            "--miner",
            help="SectorID.Miner for --proofdata: 1000, f01000 or t01000 (default: the seal's miner).",
        ),
    ] = None,
    key_order: Annotated[KeyOrderOpt, typer.Option(help="C1 key order: rust (serde) or go (Curio).")] = (
        KeyOrderOpt.rust
    ),
    force: ForceOption = False,
) -> None:
    """Write the C1 JSON of a sealed test sector."""
    from porep.c1 import KeyOrder
    from porep.sdr.seal import SealedSector
    from porep.sdr.vanilla import make_c1
    from porep.sdr.vanilla_verify import verify_c1

    seed_b = _hex32(seed, "--seed")
    actor = parse_miner(miner) if miner is not None else None
    if out is not None:
        check_output_file(out, force)
    try:
        sealed = SealedSector.load(directory)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"cannot read sector directory {directory}: {exc}", EXIT_USAGE)
    if proofdata and actor is None:
        actor = sealed.info.miner
        if actor is None:
            fail("--proofdata needs the miner actor id: seal with --miner or pass --miner", EXIT_USAGE)
    announce_compilation()
    t0 = time.perf_counter()
    c1 = make_c1(sealed, seed_b)
    info = sealed.info
    # Like Rust's seal_commit_phase1, check what we hand out.
    report = verify_c1(c1, prover_id=info.prover_id, sector=info.sector, porep_id=info.porep_id)
    if not report.ok:
        fail_check(report.failures, "the generated C1 does not verify (corrupt sector directory?)")
    raw = c1.to_json(KeyOrder(key_order.value))
    if proofdata:
        from market.proofdata import ProofData, SectorID

        assert actor is not None
        raw = ProofData.encode(SectorID(actor, info.sector), porep=raw)
    if out is None:
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
    else:
        try:
            out.write_bytes(raw)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror}", EXIT_USAGE)
        typer.echo(f"wrote {out} ({len(raw)} bytes, {time.perf_counter() - t0:.2f} s)", err=True)


@c1_app.command("synth")
def c1_synth(
    registered_proof: Annotated[
        str, typer.Option(help="Interactive proof type, 2KiB to 64GiB: V1 or V1_1, e.g. StackedDrg32GiBV1_1.")
    ],
    sector: Annotated[int, typer.Option(help="Sector number.")],
    ticket: Annotated[str, typer.Option(help="Sealing ticket, 32 bytes hex.")],
    seed: Annotated[str, typer.Option(help="Interactive seed, 32 bytes hex.")],
    out: Annotated[Path, typer.Option(help="Output C1 JSON file.")],
    miner: MinerOption = None,
    prover_id: Annotated[str | None, typer.Option(help="32 bytes hex, instead of --miner.")] = None,
    zero_data: Annotated[
        bool,
        typer.Option(
            "--zero-data", help="All-zero data (a committed-capacity sector: comm_d is the zero commitment)."
        ),
    ] = False,
    key_order: Annotated[KeyOrderOpt, typer.Option(help="C1 key order: rust (serde) or go (Curio).")] = (
        KeyOrderOpt.rust
    ),
    check: CheckOption = True,
    progress: ProgressOption = True,
    force: ForceOption = False,
    json_out: JsonOption = False,
) -> None:
    """A valid C1 of any size without sealing: a sector that is constant except at the challenged nodes
    (porep.sdr.sparse). The C1 passes the strict check and the circuit like a sealed sector's."""
    from porep.c1 import KeyOrder, encode
    from porep.ids import prover_id as make_prover_id
    from porep.sdr.sparse import sparse_c1_arrays, sparse_sector, supports
    from porep.sdr.vanilla_verify import verify_c1

    pt = _proof_type(registered_proof)
    why = supports(pt)
    if why is not None:
        fail(why, EXIT_USAGE)
    if (miner is None) == (prover_id is None):
        fail("give exactly one of --miner and --prover-id", EXIT_USAGE)
    if prover_id is not None:
        prover = _hex32(prover_id, "--prover-id")
    else:
        prover = make_prover_id(parse_miner(miner or ""))
    parse_u64(sector, "--sector")
    ticket_b, seed_b = _hex32(ticket, "--ticket"), _hex32(seed, "--seed")
    check_output_file(out, force)
    announce_compilation()
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    with _progress(progress) as cb:
        timed = _stage_timer(cb, times)
        with timed("sector", bar=False):  # its own stages: challenges, labels, trees
            data = {"data": bytes(32)} if zero_data else {}
            sparse = sparse_sector(pt, prover, sector, ticket_b, seed_b, progress=cb, **data)
        with timed("c1"):
            arrays = sparse_c1_arrays(sparse)
            raw = encode(arrays, KeyOrder(key_order.value))
        if check:
            with timed("check"):
                report = verify_c1(arrays, prover_id=prover, sector=sector)
            if not report.ok:
                why = "the synthesised C1 does not pass the strict check (a bug: please report it)"
                fail_check(report.failures, why)
        with timed("write"):
            write_or_exit(out, raw)
    elapsed = time.perf_counter() - t0
    result = {
        "out": str(out),
        "proof": pt.name,
        "bytes": len(raw),
        "checked": check,
        "prover_id": prover.hex(),
        "sector": sector,
        "challenges": int(sparse.challenges.size),
        "replica_id": sparse.replica_id.hex(),
        "comm_d": sparse.comm_d.hex(),
        "comm_r": sparse.comm_r.hex(),
        "seconds": round(elapsed, 3),
        "stages": times,
    }
    _written(
        result,
        json_out,
        f"wrote {out}: {pt.name} C1, {len(raw)} bytes, {sparse.challenges.size} challenges"
        f"{', strict check passed' if check else ''} ({elapsed:.1f} s)",
    )


@c1_app.command("check")
def c1_check(
    file: Annotated[
        Path, typer.Argument(help="C1 JSON, ProofData JSON or lotus-bench c1out.json; - reads stdin.")
    ],
    miner: Annotated[
        str | None,
        typer.Option("--miner", help="Miner actor id, 1000 or f01000 (binds replica_id; with --sector)."),
    ] = None,
    sector: Annotated[
        int | None, typer.Option(help="Sector number (binds replica_id; with --miner).")
    ] = None,
    prover_id: Annotated[str | None, typer.Option(help="32 bytes hex, instead of --miner.")] = None,
    porep_id: Annotated[
        str | None, typer.Option(help="32 bytes hex (test sectors with arbitrary ids).")
    ] = None,
    json_out: JsonOption = False,
    canonical: Annotated[
        bool,
        typer.Option(
            "--canonical",
            help="Also demand the canonical bytes (compact, Rust's or Go's key order) real producers write.",
        ),
    ] = False,
) -> None:
    """Strict vanilla verification; exit 0 only if it passes, 1 if it does not, 2 if the input is no C1."""
    from agent.proving.work import InputFormat, WorkError, recognise
    from porep.c1 import noncanonical_error
    from porep.ids import prover_id as make_prover_id
    from porep.sdr.vanilla_verify import CHECKS, verify_c1

    if miner is not None and prover_id is not None:
        fail("give --miner or --prover-id, not both", EXIT_USAGE)
    prover: bytes | None = _hex32(prover_id, "--prover-id") if prover_id is not None else None
    if prover is None and miner is not None:
        prover = make_prover_id(parse_miner(miner))
    number = parse_u64(sector, "--sector") if sector is not None else None
    porep_b = _hex32(porep_id, "--porep-id") if porep_id is not None else None
    try:
        raw = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}", EXIT_USAGE)
    try:
        got = recognise(raw)
    except WorkError as exc:  # not a C1 at all: bad input (exit 2), as prove and snap check say it
        fail(f"{file}: {exc}", EXIT_USAGE)
    if got.c1 is None:
        fail(f"{file}: ProofData carries no PoRep C1 (a SnapDeals request? psagent snap check)", EXIT_USAGE)
    c1, c1_raw = got.c1, got.c1_raw
    if got.format is InputFormat.PROOFDATA:  # its SectorID binds the replica_id unless overridden
        if prover is None and got.miner is not None:
            prover = make_prover_id(got.miner)
        if number is None:
            number = got.sector
    elif got.format is InputFormat.LOTUS_BENCH and number is None and prover is not None:
        number = got.sector  # lotus-bench records the sector, not the miner
    difference = noncanonical_error(c1, c1_raw)
    if difference is not None:
        if canonical:
            fail(f"{file}: a valid C1, but --canonical demands the canonical bytes: {difference}")
        typer.echo(f"note: valid C1, not in a canonical encoding: {difference}", err=True)
    if (prover is None) != (number is None):
        given, missing = ("--sector", "--miner or --prover-id") if prover is None else ("--miner", "--sector")
        fail(f"{given} binds the replica_id only together with {missing}: give both or neither", EXIT_USAGE)
    announce_compilation()
    t0 = time.perf_counter()
    report = verify_c1(c1, prover_id=prover, sector=number, porep_id=porep_b)
    elapsed = time.perf_counter() - t0
    for note in report.notes:
        typer.echo(f"note: {note}", err=True)
    pt = report.proof_type
    if not report.ok:
        for f in report.failures[:50]:
            typer.echo(f"FAIL {f}", err=True)
        if len(report.failures) > 50:
            typer.echo(f"… and {len(report.failures) - 50} more", err=True)
    result = {
        "ok": report.ok,
        "proof": pt.name,
        "partitions": pt.partitions,
        "challenges_per_partition": pt.challenges_per_partition,
        "checks": len(CHECKS),
        "failed_checks": sorted(report.checks_failed()),
        "failures": len(report.failures),
        "notes": list(report.notes),
        "canonical": c1.canonical,
        "seconds": round(elapsed, 3),
    }
    if json_out:
        typer.echo(json.dumps(result))
    elif report.ok:
        typer.echo(
            f"ok: {pt.name}, {pt.partitions} partition(s) x {pt.challenges_per_partition} challenges, "
            f"{len(CHECKS)} checks passed ({elapsed:.2f} s)"
        )
    else:
        typer.echo(
            f"FAILED: {pt.name}, {len(report.failures)} failure(s) in check(s) "
            f"{', '.join(result['failed_checks'])} ({elapsed:.2f} s)"  # type: ignore[arg-type]
        )
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)


def register(app: typer.Typer) -> None:
    @app.command()
    def seal(
        registered_proof: Annotated[
            str, typer.Option(help="Proof type, e.g. StackedDrg2KiBV1_1 or StackedDrg8MiBV1_1.")
        ],
        sector: Annotated[int, typer.Option(help="Sector number.")],
        ticket: Annotated[str, typer.Option(help="Sealing ticket, 32 bytes hex.")],
        out: Annotated[Path, typer.Option(help="Output directory (must be new or empty unless --force).")],
        miner: MinerOption = None,
        prover_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides --miner).")] = None,
        porep_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides the derived id).")] = None,
        piece: Annotated[Path | None, typer.Option(help="Unpadded piece file.")] = None,
        random_piece: Annotated[
            bool, typer.Option("--random-piece", help="Random data filling the sector's raw capacity.")
        ] = False,
        cc: Annotated[
            bool,
            typer.Option("--cc", help="A committed-capacity sector: all zeros (for snap make)."),
        ] = False,
        parent_cache: Annotated[
            Path | None,
            typer.Option(
                envvar="FIL_PROOFS_PARENT_CACHE",
                help="Directory of SDR parent caches (v28-sdr-parent-*.cache, rust-fil-proofs' layout), "
                "reused across seals; default $FIL_PROOFS_PARENT_CACHE, else none (computed per seal).",
            ),
        ] = None,
        progress: ProgressOption = True,
        force: ForceOption = False,
        json_out: JsonOption = False,
    ) -> None:
        """Seal a test sector (2KiB, 8MiB; 512MiB if you have the time)."""
        from porep.fr32 import unpadded_size
        from porep.ids import prover_id as make_prover_id
        from porep.sdr.seal import seal as do_seal

        pt = _proof_type(registered_proof)
        if pt.tree.sub or pt.tree.top:
            fail(f"{pt.name}: only 2KiB, 8MiB and 512MiB sectors can be sealed here", EXIT_USAGE)
        if sum((piece is not None, random_piece, cc)) != 1:
            fail("give exactly one of --piece FILE, --random-piece and --cc", EXIT_USAGE)
        actor = parse_miner(miner) if miner is not None else None
        if prover_id is not None:
            prover = _hex32(prover_id, "--prover-id")
        elif actor is not None:
            prover = make_prover_id(actor)
        else:
            fail("give --miner or --prover-id", EXIT_USAGE)
        parse_u64(sector, "--sector")
        check_output_dir(out, force)
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
        elif cc:
            data = b""  # zero-extended to the sector: comm_d is the zero commitment, as for a CC sector
        else:
            data = secrets.token_bytes(cap)
        announce_compilation()
        t0 = time.perf_counter()
        with _progress(progress) as cb:
            sealed = do_seal(
                pt,
                prover,
                sector,
                ticket_b,
                piece=data,
                porep_id=porep,
                miner=actor if prover_id is None else None,
                progress=cb,
                parent_cache_dir=parent_cache,
            )
        try:
            sealed.save(out)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}", EXIT_USAGE)
        summary = sealed.info.to_json()
        elapsed = time.perf_counter() - t0
        if json_out:
            typer.echo(json.dumps({"out": str(out), "seconds": round(elapsed, 3), **summary}))
        else:
            typer.echo(
                f"sealed {pt.name} sector {sector} in {elapsed:.1f} s → {out}: "
                f"comm_d {summary['comm_d_cid']}, comm_r {summary['comm_r_cid']}"
            )

    app.add_typer(c1_app, name="c1")
