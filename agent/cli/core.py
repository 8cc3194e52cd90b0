"""run / prove / verify / status."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent.cli.common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Backend,
    ConfigOption,
    ForceOption,
    JsonOption,
    MinerOption,
    SectorOption,
    fail,
    settings_or_exit,
)

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.service import RunSummary

ConfiguredBackendOption = Annotated[
    Backend | None,
    typer.Option(
        "--backend", help="auto (CUDA if a GPU is usable, else CPU), cuda or cpu (default: prover.backend)."
    ),
]
ParamsDirOption = Annotated[
    Path | None,
    typer.Option(
        help="Groth16 parameters directory (default: prover.params_dir, or $FIL_PROOFS_PARAMETER_CACHE)."
    ),
]


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        config: ConfigOption = None,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Embedded mock market on loopback, throwaway wallet.")
        ] = False,
        max_proofs: Annotated[int | None, typer.Option(help="Stop after this many proofs.")] = None,
    ) -> None:
        """The long-running agent (systemd service); exits 0 after --max-proofs accepted proofs."""
        if max_proofs is not None and max_proofs < 1:
            fail(f"--max-proofs must be at least 1, got {max_proofs}", EXIT_USAGE)
        settings = settings_or_exit(config)
        if dry_run:
            from agent.config import ConfigError
            from agent.dryrun import run_dry

            try:
                summary = run_dry(settings, max_proofs=max_proofs or 1)
            except ConfigError as exc:
                fail(str(exc), EXIT_USAGE)
        else:
            summary = _run_agent(settings, max_proofs)
        typer.echo(summary.line())
        if max_proofs is not None and summary.submitted < max_proofs:
            raise typer.Exit(EXIT_FAILURE)

    @app.command()
    def prove(
        input: Annotated[
            Path, typer.Argument(help="C1 JSON, ProofData JSON or lotus-bench c1out.json; - reads stdin.")
        ],
        miner: MinerOption = None,
        sector: SectorOption = None,
        out: Annotated[
            Path | None,
            typer.Option(help="Where to write the proof (default INPUT.proof; checked before any work)."),
        ] = None,
        force: ForceOption = False,
        hex_flag: Annotated[
            bool,
            typer.Option(
                "--hex", help="Print the proof as hex on stdout (proof: <hex>, as lotus-bench does); no file "
                "unless --out."
            ),
        ] = False,
        backend: ConfiguredBackendOption = None,
        params_dir: ParamsDirOption = None,
        config: ConfigOption = None,
        json_flag: JsonOption = False,
    ) -> None:
        """One-shot proof of a C1 or ProofData through the agent's proof pipeline (the prover section of
        the configuration); exit 0 only if every partition verified."""
        from agent.cli.prove import prove_cmd

        prove_cmd(
            input, miner, sector, out, backend, params_dir, config=config, json_flag=json_flag,
            hex_flag=hex_flag, force=force,
        )

    @app.command()
    def verify(
        input: Annotated[Path, typer.Argument(help="C1 JSON or ProofData JSON; - reads stdin.")],
        proof: Annotated[
            Path,
            typer.Option(help="Proof bytes (192 per partition) or their hex (prove --hex); - reads stdin."),
        ],
        miner: MinerOption = None,
        sector: SectorOption = None,
        params_dir: ParamsDirOption = None,
        config: ConfigOption = None,
    ) -> None:
        """Verify a proof for a C1/ProofData."""
        from agent.cli.prove import verify_cmd

        verify_cmd(input, proof, miner, sector, params_dir, config=config)

    @app.command()
    def status(config: ConfigOption = None, json_flag: JsonOption = False) -> None:
        """Queue, asks, payments, devices, the fleet (read from the store; works while the service runs).
        Checks the configuration as `run` does (key file, wallet, backend, metrics address, store: exit 2
        and one line for each thing `run` would refuse) and never creates a store."""
        import json

        from agent.config import ConfigError
        from agent.fleet import fleet_lines, fleet_report
        from agent.opsview.report import status_report
        from agent.preflight import check_store_creatable, preflight, sqlite_path
        from agent.runtime import find_gate, open_configured_store

        settings = settings_or_exit(config)
        gate = find_gate(settings)  # the service's, where its cache directory differs from this shell's
        running = gate["state"] != "not running"
        path = sqlite_path(settings)
        try:
            preflight(settings, agent_running=running)
            if path is not None and not path.is_file():
                check_store_creatable(path)
                store = None
            else:
                store = open_configured_store(settings, create=False)
        except ConfigError as exc:
            fail(str(exc), EXIT_USAGE)
        if store is None:  # not created yet: say so, never report an empty queue from a new file
            report: dict[str, Any] = {
                "gate": gate,
                "store": {"url": settings.store.url, "exists": False},
                "queue": None, "asks": None, "payments": None, "recent_failures": [],
                "oldest_unfinished_s": None, "fleet": None,
            }
        else:
            try:
                report = status_report(store).as_json()
                report["gate"] = gate
                report["store"] = {"url": settings.store.url, "exists": True}
                report["fleet"] = fleet_report(store)
            finally:
                store.close()
        report["devices"] = _devices()
        if json_flag:
            typer.echo(json.dumps(report))
            return
        g = report["gate"]
        reason = f": {g['reason']}" if g.get("reason") else ""
        typer.echo(f"gate:     {g['state']}{reason} ({g['file']})")
        if store is None:
            typer.echo(f"store:    {path} does not exist yet (psagent run creates it)")
            typer.echo("devices:  " + (", ".join(report["devices"]) or "none (CPU proving)"))
            return
        typer.echo("queue:    " + (", ".join(f"{k} {v}" for k, v in report["queue"].items() if v) or "empty"))
        typer.echo("asks:     " + (", ".join(f"{k} {v}" for k, v in report["asks"].items() if v) or "none"))
        p = report["payments"]
        typer.echo(f"payments: {p['vouchers']} voucher(s), cumulative {p['cumulative_attofil']} attoFIL")
        if report["oldest_unfinished_s"] is not None:
            typer.echo(f"oldest unfinished request: {report['oldest_unfinished_s']:.0f} s")
        for f in report["recent_failures"]:
            typer.echo(f"failed:   {f['request_cid']}: {f['error']}")
        typer.echo("devices:  " + (", ".join(report["devices"]) or "none (CPU proving)"))
        for line in fleet_lines(report["fleet"]):
            typer.echo(line)


def _devices() -> list[str]:
    """CUDA devices as 'index: name' (none when there is no usable GPU); enters no device context."""
    try:
        from gpu.device import devices

        return [f"{d.index}: {d.name}" for d in devices() if not d.simulated]
    except Exception:  # noqa: BLE001 - no driver is "no devices" for a status page
        return []


def _run_agent(settings: Settings, max_proofs: int | None) -> RunSummary:
    """The agent built from the configuration (agent.runtime), run until a signal (or --max-proofs); a value
    that cannot be used is one line and exit 2 before anything starts."""
    from agent import runtime
    from agent.config import ConfigError

    try:
        return runtime.run(settings, max_proofs=max_proofs)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
