"""Long work that says how long (P32 item 4): a one-shot prove printed ``setup: params (first use: point
checks)…`` and then nothing for 38 minutes; the agent logged nothing between ``matched request`` and
``verified``. agent.opsview.progress turns the pipeline's stage events into a line at a steady cadence with
the time left, the first per-point check reports its fraction, the agent's prover logs and shows on the
status page where its proof is."""

from __future__ import annotations

import io
import logging
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_circuits, toy_r1cs, toy_work

from agent.opsview.progress import StageProgress
from agent.proving.pipeline import ProofPipeline, StageEvent
from gpu.groth16 import reference


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_the_time_left_from_the_check_fraction_and_from_the_partitions() -> None:
    clock = Clock()
    p = StageProgress("prove", every_s=10, clock=clock)
    p(StageEvent("", -1, 0, "params (first use: point checks)"))
    clock.t += 5
    assert p.tick() is None  # shorter than the cadence: its own start and end lines say it
    clock.t += 25
    p(StageEvent("", -1, 0, "params (first use: point checks)", None, 0.25))
    assert p.left_s() == pytest.approx(90.0)  # a quarter in 30 s: 90 s to go
    assert p.tick() == (
        "prove: setup: params (first use: point checks) (25 %) for 30 s (30 s in all), about 2 min left"
    )
    p(StageEvent("", -1, 0, "params", 31.0))
    assert p.tick() is None  # ended
    for k in range(2):  # two of ten partitions, 60 s each
        p(StageEvent("j", k, 10, "witness"))
        clock.t += 60
        p(StageEvent("j", k, 10, "verified", 0.1))
    p(StageEvent("j", 2, 10, "prove"))
    clock.t += 12
    assert p.left_s() == pytest.approx(132 / 2 * 8)
    assert p.tick() == "prove: partition 3/10 prove for 12 s (3 min in all), about 9 min left"
    snap = p.snapshot()
    assert snap["stage"] == "partition 3/10 prove" and snap["partitions_done"] == 2
    assert snap["eta_seconds"] == 528.0


def test_a_long_stage_is_said_at_a_cadence() -> None:
    said: list[str] = []
    with StageProgress("warm-up", said.append, every_s=0.05) as p:
        p(StageEvent("", -1, 0, "key"))
        time.sleep(0.4)
    assert len(said) >= 3 and all(s.startswith("warm-up: setup: key for ") for s in said)
    assert all(s.endswith("time left not known yet") for s in said)


def _toy_file(directory: Path) -> Path:
    params = reference.setup(
        toy_r1cs(2), reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5)))
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "toy.params"
    params.write(path)
    return path


def test_the_first_point_check_reports_its_fraction(tmp_path: Path) -> None:
    """The per-point check of a file not checked before tells how far it is (the time left follows); the
    file is then recorded as checked, and the next load (trusted) reads it without the check."""
    path = _toy_file(tmp_path / "p")
    pipe = ProofPipeline(
        path.parent, engines=[ReferenceEngine()], circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),  # type: ignore[arg-type]
        cache=tmp_path / "cache",
    )
    events: list[StageEvent] = []
    res = pipe.prove(toy_work(1), job_id="j", events=events.append)
    assert res.ok
    fractions = [e.fraction for e in events if e.fraction is not None]
    assert fractions and fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(e.stage == "params (first use: point checks)" for e in events if e.fraction is not None)
    assert pipe.checked.trusted(path)


def test_prove_without_a_terminal_says_where_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """`psagent prove` without a terminal: the stage lines and, while a stage runs on, a line at the cadence
    with the time so far (its 38 silent minutes)."""
    from agent.cli.prove import ProgressLog

    out = io.StringIO()
    with ProgressLog(1, out=out, every_s=0.05) as log:
        log(StageEvent("", -1, 0, "params (first use: point checks)"))
        log(StageEvent("", -1, 0, "params (first use: point checks)", None, 0.5))
        time.sleep(0.3)
        log(StageEvent("", -1, 0, "params", 0.3))
    lines = out.getvalue().splitlines()
    assert "setup: params (first use: point checks)…" in lines[0]
    still = [ln for ln in lines if "still: setup: params (first use: point checks) (50 %) for" in ln]
    assert still and "left" in still[0]
    assert "setup: params done in 0.30 s" in lines[-1]
    assert sum("setup: params (first use" in ln and "…" in ln for ln in lines) == 1  # a fraction is no start


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_agents_prover_logs_and_shows_its_proof_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A proof of minutes logs where it is at the cadence, and /status (the device's current_progress) and
    the status page show its stage and the time left while it runs."""
    import agent.proving.prover as prover_mod
    from agent.opsview.document import StatusView
    from agent.opsview.metrics import AgentMetrics
    from agent.opsview.page import render
    from agent.proving.prover import AdmittedProver
    from agent.store import SqliteStore

    monkeypatch.setattr(prover_mod, "PROGRESS_EVERY_S", 0.05)
    path = _toy_file(tmp_path / "p")
    pipe = ProofPipeline(
        path.parent, engines=[ReferenceEngine(delay_s=0.25)], cache=tmp_path / "cache",
        circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),  # type: ignore[arg-type]
    )
    metrics = AgentMetrics()
    prover = AdmittedProver(pipe, metrics=metrics)
    seen: list[dict[str, Any]] = []
    pages: list[str] = []
    store = SqliteStore(tmp_path / "a.db")
    view = StatusView(store, metrics)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            d = metrics.devices.snapshot()[0]
            if d["busy"] and d["current_progress"] and d["current_progress"]["stage"].startswith("partition"):
                seen.append(d["current_progress"])
                pages.append(render(view.document()))
            time.sleep(0.02)

    t = threading.Thread(target=watch)
    t.start()
    try:
        with caplog.at_level(logging.INFO, logger="agent.proving.prover"):
            proven = await prover.prove(toy_work(4), "job-7")
    finally:
        done.set()
        t.join()
        store.close()
    assert proven.report.ok
    assert seen and any(s["partitions_done"] >= 1 and s["eta_seconds"] is not None for s in seen)
    assert any("partition" in p and "left" in p and "proving porep" in p for p in pages)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("job-7: ")]
    assert lines and any("partition" in ln and ("left" in ln) for ln in lines)
    assert metrics.devices.snapshot()[0]["current_progress"] is None  # nothing running now
    await anyio.sleep(0)


def test_the_status_page_names_the_cpu_once_and_clips_long_errors() -> None:
    """The CPU slot was ``cpu cpu (cpu)`` with ``0 of 1024.00 GiB``; ``jobs`` showed jobs_done while a job
    ran; whether the loaded parameters are official was not said; a long loop error and a long earnings
    label ran out of their boxes."""
    from agent.opsview.page import render

    hours = [{"start": 3600.0 * i, "proofs": 0, "earned_attofil": "0"} for i in range(24)]
    hours[-1] = {"start": 3600.0 * 23, "proofs": 1, "earned_attofil": str(123456789 * 10**9)}
    doc: dict[str, Any] = {
        "gate": {"state": "open", "reason": "", "since": 0.0, "ready": True},
        "last_24h": {"proofs": 1, "earned_attofil": "0", "hours": hours},
        "totals": {"proofs_completed": 1, "earned_attofil": "0", "proofs_failed": 0, "proofs_gone": 0},
        "uptime_seconds": 10, "version": "x", "now": 86400.0, "requests": {}, "queues": [],
        "oldest_unfinished_s": None, "asks": {}, "recent_failures": [],
        "devices": [{
            "device": "cpu", "name": "cpu", "backend": "cpu", "busy": True, "busy_seconds": 3.0,
            "jobs_running": 1, "jobs_done": 4, "current_proof_kind": "porep",
            "current_progress": {"stage": "partition 2/10 prove", "eta_seconds": 480.0},
            "memory_total_bytes": 0, "memory_budget_bytes": 1024 * 2**30, "memory_reserved_bytes": 0,
            "memory_peak_bytes": 0,
        }],
        "loaded_parameters": [
            {"proof_type": "StackedDrg2KiBV1_1", "kind": "porep", "loaded_at": 0.0, "origin": "development"}
        ],
        "loops": {"requester": {"errors": 3, "last_error": "x" * 2000, "last_error_at": 0.0}},
    }
    page = render(doc)
    assert "cpu cpu" not in page and "1024.00 GiB" not in page
    assert "<td>CPU</td>" in page and "host memory" in page
    assert 'data-k="devices.cpu.jobs_running" data-v="1">1</span> running' in page
    assert "partition 2/10 prove, about 8 min left" in page
    assert 'data-k="loaded_parameters.StackedDrg2KiBV1_1.origin" data-v="development"' in page
    assert "x" * 240 not in page.split("title=")[0] and "x" * 239 + "…" in page
    import re

    left = int(re.search(r'<text x="(\d+)" y="\d+" class="ylab">0.123456789 FIL', page)[1])  # type: ignore[index]
    assert left - 6 >= 6.5 * len("0.123456789 FIL")  # the label's width fits left of the axis
