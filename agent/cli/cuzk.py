"""``psagent engine serve``: the cuzk server (``agent.cuzk``), psagent as Curio's proving engine.

The command keeps Curio's word ("engine", like the ``[engine]`` section and the ``engine`` extra): that is
what an operator sets Curio's ``[Cuzk]`` to. In the code the server is the cuzk server; "engine" there means
the Groth16 engine (``agent.proving.engine``, ``gpu``)."""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli.common import EXIT_USAGE, ConfigOption, fail, settings_or_exit

app = typer.Typer(
    help="psagent as Curio's proving engine: the cuzk gRPC API (set Curio's [Cuzk] Address to it).",
    no_args_is_help=True,
)


@app.command()
def serve(
    config: ConfigOption = None,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            help="unix:///run/psagent/engine.sock or HOST:PORT (default: engine.listen; loopback or a Unix "
            "socket unless configured otherwise).",
        ),
    ] = None,
) -> None:
    """Serve cuzk.v1.ProvingEngine (PoRep C2, SnapDeals, WindowPoSt, WinningPoSt) until SIGTERM, on the prover
    section's devices and memory budget; engine.preload's parameters and a self-test proof before READY."""
    try:
        import grpc  # noqa: F401 - the engine extra
    except ImportError:
        fail("psagent engine serve needs grpcio: pip install 'psagent[engine]'", EXIT_USAGE)
    settings = settings_or_exit(config)
    from agent import runtime
    from agent.config import ConfigError
    from agent.proving.prover import ParamsRefused

    try:
        runtime.serve_cuzk(settings, listen=listen)
    except (ConfigError, runtime.CuzkUnavailable, ParamsRefused) as exc:
        fail(str(exc), EXIT_USAGE)
