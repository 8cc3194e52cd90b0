"""snap make / synth / check: SnapDeals update test data and the strict vanilla check of Snap requests.

``psagent snap make SECTOR_DIR`` updates a CC sector sealed by ``psagent seal --cc`` with a piece and writes
the update directory; ``psagent snap synth --sector-size 32GiB --out F`` writes a valid Snap ProofData of any
size without a sector (:mod:`porep.snap.synth`, the Snap counterpart of ``c1 synth``); ``psagent snap check
FILE`` runs :mod:`porep.snap.verify` on a Snap ProofData (the market's request JSON) and exits 0 only if
every check passes (1 if one fails, 2 on unusable input).

Update directory: ``sealed`` (the new replica), ``unsealed`` (the fr32-padded new data), ``snap-vproof.json``
(Curio's file: a JSON array of standard base64 bincode PartitionProofs, in partition order),
``proofdata.json`` (``{"SectorID", "PoRep": null, "Snap": {ProofType, old_r, new_r, new_d, Proofs}}``) and
``summary.json`` (commitments as lowercase hex, CIDs, sizes).
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    CheckOption,
    ForceOption,
    JsonOption,
    ProgressOption,
    announce_compilation,
    check_output_dir,
    check_output_file,
    fail,
    fail_check,
    parse_miner,
    parse_u64,
    sector_size_or_exit,
    write_or_exit,
)

app = typer.Typer(
    help="SnapDeals update proofs: make test updates and strictly check them.", no_args_is_help=True
)

PROOFDATA = "proofdata.json"
VPROOF = "snap-vproof.json"


@app.command("make")
def make(
    sector_dir: Annotated[Path, typer.Argument(help="A CC sector directory (psagent seal --cc --out DIR).")],
    out: Annotated[Path, typer.Option(help="Output directory (must be new or empty unless --force).")],
    piece: Annotated[
        Path | None, typer.Option(help="Unpadded piece file (zero-extended to the sector).")
    ] = None,
    random_piece: Annotated[
        bool, typer.Option("--random-piece", help="Random data filling the sector's raw capacity.")
    ] = False,
    miner: Annotated[
        str | None,
        typer.Option(
            "--miner", help="SectorID.Miner of the ProofData: 1000, f01000 or t01000 (default: the seal's)."
        ),
    ] = None,
    force: ForceOption = False,
    json_out: JsonOption = False,
) -> None:
    """Update a CC test sector with a piece; write the new replica, the vanilla proofs and the ProofData."""
    from market.proofdata import ProofData, SectorID, Snap
    from porep.commcid import comm_d_to_cid, comm_r_to_cid
    from porep.fr32 import pad_to_sector, unpadded_size
    from porep.sdr.seal import SealedSector
    from porep.snap.update import update_sector
    from porep.snap.verify import check_partitions

    if (piece is None) == (not random_piece):
        fail("give exactly one of --piece FILE and --random-piece", EXIT_USAGE)
    actor = parse_miner(miner) if miner is not None else None
    check_output_dir(out, force)
    try:
        sealed = SealedSector.load(sector_dir)
    except (OSError, ValueError, KeyError) as exc:
        fail(f"cannot read sector directory {sector_dir}: {exc}", EXIT_USAGE)
    info = sealed.info
    size = sealed.proof_type.sector_size
    if actor is None:
        actor = info.miner
        if actor is None:
            fail("the ProofData needs the miner actor id: seal with --miner or pass --miner", EXIT_USAGE)
    cap = unpadded_size(size)
    if piece is not None:
        try:
            data = piece.read_bytes()
        except OSError as exc:
            fail(f"cannot read {piece}: {exc.strerror or exc}", EXIT_USAGE)
        if len(data) > cap:
            fail(
                f"piece of {len(data)} bytes does not fit a {sealed.proof_type.size_label} sector "
                f"({cap} bytes)",
                EXIT_USAGE,
            )
    else:
        data = secrets.token_bytes(cap)
    announce_compilation()
    t0 = time.perf_counter()
    try:
        upd = update_sector(sealed, pad_to_sector(data, size))
    except ValueError as exc:
        fail(f"{sector_dir}: {exc}", EXIT_USAGE)
    proofs = [p.to_bytes() for p in upd.partition_proofs()]
    upt = upd.proof_type
    assert upt is not None  # a sealed sector's size always has an update proof id
    pid = int(upt.id)
    # Like Rust's generate_update_vanilla_proofs + Curio's VerifyVanillaProofs: check what we hand out.
    report = check_partitions(pid, upd.comm_r_old, upd.comm_r_new, upd.comm_d_new, proofs)
    if not report.ok:
        why = "the generated update proofs do not pass the strict check (corrupt sector directory?)"
        fail_check(report.failures, why)
    snap = Snap(pid, upd.comm_r_old, upd.comm_r_new, upd.comm_d_new, tuple(proofs))
    assert actor is not None
    proofdata = ProofData.encode(SectorID(actor, info.sector), snap=snap)
    summary = {
        "update_proof": upt.name,
        "update_proof_id": pid,
        "sector_size": size,
        "miner": actor,
        "sector": info.sector,
        "h": upd.h,
        "partitions": upt.partitions,
        "challenges_per_partition": upt.challenges_per_partition,
        "comm_c": upd.comm_c.hex(),
        "comm_r_old": upd.comm_r_old.hex(),
        "comm_d_new": upd.comm_d_new.hex(),
        "comm_r_last_new": upd.comm_r_last_new.hex(),
        "comm_r_new": upd.comm_r_new.hex(),
        "comm_d_new_cid": comm_d_to_cid(upd.comm_d_new),
        "comm_r_new_cid": comm_r_to_cid(upd.comm_r_new),
        "comm_r_old_cid": comm_r_to_cid(upd.comm_r_old),
        "partition_proof_bytes": [len(p) for p in proofs],
    }
    vproof = json.dumps([base64.b64encode(p).decode() for p in proofs], separators=(",", ":"))
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "sealed").write_bytes(upd.replica)
        (out / "unsealed").write_bytes(upd.data)
        (out / VPROOF).write_text(vproof)
        (out / PROOFDATA).write_bytes(proofdata)
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}", EXIT_USAGE)
    elapsed = time.perf_counter() - t0
    if json_out:
        typer.echo(json.dumps({"out": str(out), "seconds": round(elapsed, 3), **summary}))
    else:
        typer.echo(
            f"updated {upt.name} sector {info.sector} in {elapsed:.1f} s → {out}: "
            f"comm_d_new {summary['comm_d_new_cid']}, comm_r_new {summary['comm_r_new_cid']}"
        )


@app.command("synth")
def synth(
    sector_size: Annotated[str, typer.Option(help="Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.")],
    out: Annotated[Path, typer.Option(help="Output ProofData JSON file (the market's Snap request).")],
    rng_seed: Annotated[
        int, typer.Option("--rng-seed", help="Seed of the keys, data and comm_c (0 to 2^64-1).")
    ] = 0,
    miner: Annotated[
        str, typer.Option("--miner", help="SectorID.Miner: 1000, f01000 or t01000 (names jobs only).")
    ] = "1000",
    sector: Annotated[int, typer.Option(help="SectorID.Number (names jobs only).")] = 1,
    check: CheckOption = True,
    progress: ProgressOption = True,
    force: ForceOption = False,
    json_out: JsonOption = False,
) -> None:
    """A valid Snap request of any size without a sector: a blockwise update whose challenged leaves and
    paths are read from sparse trees (porep.snap.synth). It passes the strict check and the circuit like
    an update made by snap make."""
    from agent.cli.porep import _progress, _stage_timer, _written
    from market.proofdata import ProofData, SectorID, Snap
    from porep.snap.params import UPDATE_PROOF_TYPES
    from porep.snap.synth import sparse_update
    from porep.snap.verify import UpdateProofError, check_request

    label = sector_size_or_exit(sector_size)
    pt = next(t for t in UPDATE_PROOF_TYPES if t.size_label == label)
    parse_u64(rng_seed, "--rng-seed")
    parse_u64(sector, "--sector")
    actor = parse_miner(miner)
    check_output_file(out, force)
    announce_compilation()
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    with _progress(progress) as cb:
        timed = _stage_timer(cb, times)
        with timed("update", bar=False):  # its own stages: trees, challenges
            upd = sparse_update(pt, rng_seed, progress=cb)
        with timed("proofs"):
            req = upd.request()
        snap = Snap(req.proof_type, req.old_r, req.new_r, req.new_d, req.proofs)
        raw = ProofData.encode(SectorID(actor, sector), snap=snap)
        if check:
            with timed("check"):
                try:
                    check_request(ProofData.parse(raw).snap)  # what the agent checks: the parsed request
                except UpdateProofError as exc:
                    why = "the synthesised Snap request does not pass the strict check"
                    fail_check(exc.report.failures, f"{why} (a bug: please report it)")
        with timed("write", bar=False):
            write_or_exit(out, raw)
    elapsed = time.perf_counter() - t0
    result = {
        "out": str(out),
        "update_proof": pt.name,
        "update_proof_id": int(pt.id),
        "sector_size": pt.sector_size,
        "rng_seed": rng_seed,
        "miner": actor,
        "sector": sector,
        "partitions": pt.partitions,
        "challenges_per_partition": pt.challenges_per_partition,
        "bytes": len(raw),
        "partition_proof_bytes": sum(len(p) for p in req.proofs),
        "checked": check,
        "comm_r_old": req.old_r.hex(),
        "comm_d_new": req.new_d.hex(),
        "comm_r_new": req.new_r.hex(),
        "seconds": round(elapsed, 3),
        "stages": times,
    }
    _written(
        result,
        json_out,
        f"wrote {out}: {pt.name} Snap request, {pt.partitions} partition(s) x "
        f"{pt.challenges_per_partition} challenges, {len(raw):,} bytes"
        f"{', strict check passed' if check else ''} ({elapsed:.1f} s: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
        + ")",
    )


@app.command("check")
def check(
    file: Annotated[Path, typer.Argument(help="Snap ProofData JSON (the market's request); - reads stdin.")],
    json_out: JsonOption = False,
) -> None:
    """Strict vanilla check of a Snap request; exit 0 only if it passes, 1 if it does not."""
    from market.errors import ProtocolError
    from market.proofdata import ProofData
    from porep.snap.verify import CHECKS, check_partitions

    try:
        raw = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror or exc}", EXIT_USAGE)
    try:
        pd = ProofData.parse(raw)
    except ProtocolError as exc:
        fail(f"{file}: not a valid ProofData: {exc}", EXIT_USAGE)
    if pd.snap is None:
        fail(f"{file}: ProofData carries no Snap request (use psagent c1 check for PoRep)", EXIT_USAGE)
    s = pd.snap
    t0 = time.perf_counter()
    report = check_partitions(s.proof_type, s.old_r, s.new_r, s.new_d, list(s.proofs))
    elapsed = time.perf_counter() - t0
    if not report.ok:
        for f in report.failures[:50]:
            typer.echo(f"FAIL {f}", err=True)
        if len(report.failures) > 50:
            typer.echo(f"… and {len(report.failures) - 50} more", err=True)
    pt = report.proof_type
    name = pt.name if pt is not None else f"ProofType {s.proof_type}"
    failed = sorted(report.checks_failed())
    result = {
        "ok": report.ok,
        "proof": name,
        "partitions": len(s.proofs),
        "challenges_per_partition": pt.challenges_per_partition if pt is not None else None,
        "checks": len(CHECKS),
        "failed_checks": failed,
        "failures": len(report.failures),
        "seconds": round(elapsed, 3),
    }
    if json_out:
        typer.echo(json.dumps(result))
    elif report.ok:
        assert pt is not None
        typer.echo(
            f"ok: {name}, {pt.partitions} partition(s) x {pt.challenges_per_partition} challenges, "
            f"{len(CHECKS)} checks passed ({elapsed:.2f} s)"
        )
    else:
        typer.echo(
            f"FAILED: {name}, {len(report.failures)} failure(s) in check(s) {', '.join(failed)} "
            f"({elapsed:.2f} s)"
        )
    if not report.ok:
        raise typer.Exit(EXIT_FAILURE)
