"""psagent doctor: what this host lacks to prove for the market (agent.doctor)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, ConfigOption, JsonOption, fail, settings_or_exit

if TYPE_CHECKING:
    from agent.config import Settings


def register(app: typer.Typer) -> None:
    @app.command()
    def doctor(
        config: ConfigOption = None,
        json_flag: JsonOption = False,
        plan: Annotated[
            bool,
            typer.Option("--plan", help="Also size a 32GiB proof's memory (records the circuit template "
                                        "once: about a minute; later runs read it from the cache)."),
        ] = False,
        market_timeout: Annotated[
            float, typer.Option(help="Seconds to wait for the market's answer.", min=0.1, max=120)
        ] = 10.0,
    ) -> None:
        """Say exactly what is missing on this host: driver, /dev/nvidia-uvm, CUDA toolkit, compute
        capability, memory, parameters (official / development / damaged / missing), clock, market. Exit 1
        when anything is missing; every finding names its fix."""
        import json

        from agent.doctor import diagnose

        settings = settings_or_exit(config)
        findings = diagnose(settings, plan=_plan(settings, force=plan), market_timeout_s=market_timeout)
        if json_flag:
            typer.echo(json.dumps({"findings": [f.as_json() for f in findings],
                                   "ok": all(f.ok is not False for f in findings)}))
        else:
            for f in findings:
                typer.echo(f.line())
        if any(f.ok is False for f in findings):
            raise typer.Exit(EXIT_FAILURE)


def _plan(settings: Settings, *, force: bool) -> tuple[int, int] | None:
    """(host, device) bytes at the peak of one 32GiB PoRep proof on a GPU with ``[prover]``'s engine options,
    from the circuit template: read from the cache, recorded only when ``force``."""
    from agent.config import ConfigError, cache_dir, engine_options
    from porep.circuit.pce import CACHE_SUBDIR, CircuitShape, cache_key
    from porep.prooftypes import proof_type

    pt = proof_type("StackedDrg32GiBV1_1")
    cached = (cache_dir() / CACHE_SUBDIR / cache_key(CircuitShape.for_proof_type(pt)) / "meta.json").exists()
    if not (cached or force):
        return None
    from agent.proving.plan import sizes_of
    from gpu.groth16.plan import memory_plan, plan_totals, smallest_layout

    try:
        options = engine_options(settings)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)

    sizes = sizes_of(pt, cache_dir())
    # the smallest card that proves it: the streamed layout in its smallest passes (the host then holds the
    # page-locked key); a larger card keeps more on the device and needs less host memory
    lay = smallest_layout(sizes, device_spmv=options.device_spmv)
    return plan_totals(memory_plan(sizes, lay, params_to_device=options.params_to_device))
