"""Long work that says how long: the proof pipeline's stage events turned into a line at a steady cadence.

A 2KiB parameter file's first per-point check took 38 minutes on a loaded CPU, a 32GiB partition's Groth16
takes minutes: without a terminal nothing was said between the stage's start and its end. A
:class:`StageProgress` follows one piece of work (a proof, a warm-up) through its
:class:`~agent.proving.pipeline.StageEvent` s and, from a daemon thread, says every ``every_s`` what runs,
for how long, and the time left when it can be told: from the stage's own fraction (the per-point check
reports bytes checked) or from the partitions done so far. :meth:`StageProgress.snapshot` is the same for
the status page.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["StageProgress", "duration"]

EVERY_S = 10.0  # the cadence; a stage shorter than this is said only by its own start and end lines


def duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class StageProgress:
    """Where ``name`` is (its last stage event), since when, and how long is left. Feed it the pipeline's
    events (it is an ``Events`` callable); :meth:`start` says :meth:`line` through ``say`` every ``every_s``
    while a stage runs longer than that; :meth:`stop` ends the thread. Thread-safe (events come from the
    proving and the synthesis threads)."""

    def __init__(
        self,
        name: str,
        say: Callable[[str], None] | None = None,
        *,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.say = say
        self.every_s = every_s
        self.clock = clock
        self.t0 = clock()
        self._lock = threading.Lock()
        self._stage: str | None = None
        self._partition = -1
        self._partitions = 0
        self._since = self.t0
        self._fraction: float | None = None
        self._first_partition: float | None = None
        self._done = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, ev: Any) -> None:
        """One ``agent.proving.pipeline.StageEvent`` (a leaf module: typed by duck)."""
        now = self.clock()
        with self._lock:
            fraction = getattr(ev, "fraction", None)
            if fraction is not None:  # progress within the running stage
                self._fraction = fraction
                return
            if ev.partitions:
                self._partitions = ev.partitions
            if ev.seconds is None:  # a stage starts
                self._stage, self._partition, self._since, self._fraction = ev.stage, ev.partition, now, None
                if ev.partition >= 0 and self._first_partition is None:
                    self._first_partition = now
                return
            if ev.partition >= 0 and ev.stage in ("verified", "NOT VERIFIED"):
                self._done += 1
            running = self._stage.split(" (")[0] if self._stage is not None else None
            if ev.partition == self._partition and ev.stage == running:
                self._stage = None  # ended; the next start names what comes

    def left_s(self) -> float | None:
        """Seconds left: the running stage's fraction for the setup (a per-point check), else the pace of
        the partitions done so far; None while it cannot be told."""
        now = self.clock()
        with self._lock:
            if self._partition < 0 and self._fraction is not None and self._fraction > 0:
                return (now - self._since) * (1 - self._fraction) / self._fraction
            if self._done and self._first_partition is not None and self._partitions > self._done:
                return (now - self._first_partition) / self._done * (self._partitions - self._done)
            return None

    def snapshot(self) -> dict[str, Any]:
        """The work now, for ``/status``: its stage (``partition 3/10 groth16``), seconds in it, the whole
        work's seconds so far and the estimate of those left (None: not known yet)."""
        left = self.left_s()
        now = self.clock()
        with self._lock:
            stage = self._where()
            return {
                "stage": stage,
                "stage_seconds": round(now - self._since, 1) if self._stage is not None else None,
                "elapsed_seconds": round(now - self.t0, 1),
                "eta_seconds": None if left is None else round(left, 1),
                "partitions_done": self._done,
                "partitions": self._partitions,
            }

    def _where(self) -> str:
        if self._stage is None:
            return "between stages"
        if self._partition < 0:
            pct = f" ({100 * self._fraction:.0f} %)" if self._fraction is not None else ""
            return f"setup: {self._stage}{pct}"
        return f"partition {self._partition + 1}/{self._partitions} {self._stage}"

    def line(self) -> str:
        """``NAME: WHERE for T (T in all), about T left`` (or ``time left not known yet``)."""
        s = self.snapshot()
        in_stage = f" for {duration(s['stage_seconds'])}" if s["stage_seconds"] is not None else ""
        left = s["eta_seconds"]
        tail = f"about {duration(left)} left" if left is not None else "time left not known yet"
        return f"{self.name}: {s['stage']}{in_stage} ({duration(s['elapsed_seconds'])} in all), {tail}"

    def tick(self) -> str | None:
        """The line to say now: a stage has run for at least ``every_s``; None otherwise."""
        with self._lock:
            running = self._stage is not None and self.clock() - self._since >= self.every_s
        return self.line() if running else None

    def start(self) -> StageProgress:
        if self.say is None or self._thread is not None:
            return self

        def loop() -> None:
            while not self._stop.wait(self.every_s):
                text = self.tick()
                if text is not None and self.say is not None:
                    self.say(text)

        self._thread = threading.Thread(target=loop, name=f"psagent-progress-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StageProgress:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
