"""The mock market as its own process for the reliability runner: ``python market_process.py SPEC.json``.

The production mock (market.mock: MockMarketApp on uvicorn, SQLite books, fault plan, challenge pool of real
2KiB C1s) with the stand-in proof check, plus one control route the runner needs and the mock lacks:

    POST /_rel/inject?price=   body: request data → a paid request with exactly these bytes (their own CID)

which is how adversarial request data (deep nesting, huge arrays, wrong lengths, …) reaches the agent with a
CID that matches, so it gets past the hash check and tests the parser and the strict C1 check. It prints
``ready <base url>`` once listening; SIGTERM stops it gracefully (the books are flushed).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agent.cli.common import use_engine_options

use_engine_options()  # before numba loads: cutting C1s uses the hashing kernels

from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402

from market.mock.app import MockMarketApp  # noqa: E402
from market.mock.checker import DigestStandInChecker  # noqa: E402
from market.mock.faults import FaultPlan  # noqa: E402
from market.mock.pool import ChallengePool  # noqa: E402
from market.mock.server import base_url, bind, serve_forever  # noqa: E402
from market.mock.state import MarketRules, MarketState  # noqa: E402


class ReliabilityMarket:
    """ASGI: ``/_rel/…`` here, everything else to the mock market."""

    def __init__(self, inner: MockMarketApp) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/_rel/inject":
            request = Request(scope, receive)
            data = await request.body()
            price = int(request.query_params.get("price", str(self.inner.state.rules.demand_price)))
            cid = self.inner.state.add_paid_request(data, price, self.inner.now())
            await JSONResponse({"request_cid": cid})(scope, receive, send)
            return
        await self.inner(scope, receive, send)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    pool = ChallengePool.open(Path(spec["pool"]))
    pool.make()  # compile before serving: the first poll refills demand with fresh C1s in the event loop
    rules = MarketRules(
        slot_divisor=int(spec.get("slot_divisor", 1)),
        deadline_s=float(spec.get("deadline_s", 45 * 60.0)),
        deadline_penalty=int(spec.get("deadline_penalty", 50)),
        initial_challenges=int(spec.get("initial_challenges", 0)),
        demand_open=int(spec.get("demand", 4)),
    )
    state = MarketState(Path(spec["state"]), rules, challenge_source=pool.take)
    plan = FaultPlan.parse(spec.get("faults"), seed=spec.get("seed"))
    app = MockMarketApp(state, DigestStandInChecker(), plan)
    sock = bind("127.0.0.1", int(spec.get("port", 0)))
    print(f"ready {base_url(sock)}", flush=True)
    try:
        serve_forever(ReliabilityMarket(app), sock, log_level="warning")  # type: ignore[arg-type]
    finally:
        state.close()
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
