"""One agent process as a member of a fleet that shares one store (PostgreSQL) and one wallet.

Every member runs the fetcher, provers and submitter; the store hands each row to one member at a time
(claims and leases, ``FOR UPDATE SKIP LOCKED``). What this module adds around the service's loops:

* membership: a ``hosts`` row per process, refreshed every ``store.heartbeat_s`` with its capacity (device
  slots), its devices and its last error, and marked stopped on a clean exit (its holds handed back);
* the janitor of the fleet: on every heartbeat the claims of members silent for ``store.stale_after_s`` are
  re-queued (proving → fetched with the data kept), so a host that dies mid-proof loses nothing and its work
  is finished by another; owner-fenced transitions refuse the late result of a member presumed dead, so a
  request is never proven into the store twice;
* one requester: only the member holding the store's requester lock polls and asks (the others wait); the
  lock moves to another member when its holder dies;
* sizing: the queue target (low/high water) is per this member's capacity, scaled by the whole fleet's live
  capacity, so a fleet of three equal hosts keeps three times the work of one.

With the SQLite store the fleet is this process alone: it always leads and the scale is 1.

``gpu.device`` is imported where the devices are listed, not at the top: ``psagent status`` imports this
module before it reads its configuration, which places Numba's kernel cache
(``agent.cli.common.enable_kernel_cache``: numba reads that once, when it is first imported).
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Sequence
from dataclasses import replace

import anyio

from agent.requester import RequestLoopSettings
from agent.store import Store, in_worker

__all__ = ["FleetMember", "fleet_lines", "fleet_marks", "fleet_report", "local_devices"]

log = logging.getLogger(__name__)


def local_devices() -> tuple[str, ...]:
    """This host's CUDA devices as 'index: name', or ('cpu',) when there is no usable GPU."""
    try:
        from gpu.device import devices  # numba: after the kernel-cache set-up

        found = tuple(f"{d.index}: {d.name}" for d in devices() if not d.simulated)
    except Exception:  # noqa: BLE001 - no driver means CPU proving
        found = ()
    return found or ("cpu",)


def fleet_marks(settings: RequestLoopSettings, fleet_capacity: int, own_capacity: int) -> RequestLoopSettings:
    """The request loop's water marks for the whole fleet: this member's marks times the fleet's live capacity
    over its own (never below its own: the requester's own row may not be visible yet)."""
    if own_capacity < 1 or fleet_capacity <= own_capacity:
        return settings
    scale = fleet_capacity / own_capacity
    return replace(
        settings,
        low_water=math.ceil(settings.low_water * scale),
        high_water=math.ceil(settings.high_water * scale),
    )


class FleetMember:
    """This process's membership: heartbeat, reap, requester election, fleet-sized queue target."""

    def __init__(
        self,
        store: Store,
        owner: str,
        *,
        capacity: int,
        devices: Sequence[str] | None = None,
        hostname: str | None = None,
    ) -> None:
        self.store = store
        self.owner = owner
        self.capacity = max(1, capacity)
        self.devices: tuple[str, ...] | None = None if devices is None else tuple(devices)
        self.hostname = hostname or socket.gethostname()
        self.pid = os.getpid()
        self.leading = False
        self._error: str | None = None

    @property
    def heartbeat_s(self) -> float:
        return self.store.heartbeat_s

    def note_error(self, text: str) -> None:
        """A loop's error, sent with the next heartbeat (``psagent status`` shows each member's last one)."""
        self._error = " ".join(text.split())[:500]

    async def _beat(self) -> None:
        if self.devices is None:
            self.devices = await anyio.to_thread.run_sync(local_devices)
        error, self._error = self._error, None
        await in_worker(
            self.store.heartbeat,
            self.owner,
            hostname=self.hostname,
            pid=self.pid,
            capacity=self.capacity,
            devices=self.devices,
            last_error=error,
        )

    async def join(self) -> int:
        """Register (heartbeat) and re-queue what dead processes held; returns how many were re-queued."""
        n = await in_worker(self.store.reset_orphans, self.owner)
        await self._beat()
        return n

    async def run(self) -> None:
        """Heartbeat and reap every ``heartbeat_s`` until cancelled; a failed beat is logged and retried."""
        while True:
            await anyio.sleep(self.heartbeat_s)
            try:
                await self._beat()
                n = await in_worker(self.store.reap, self.owner)
            except Exception as e:  # the store is unreachable for now: the next beat tries again
                log.warning("fleet heartbeat failed: %s: %s", type(e).__name__, e)
                continue
            if n:
                log.warning("re-queued %d request(s) held by fleet members that stopped heartbeating", n)

    async def leave(self) -> None:
        """Mark this member stopped and hand back anything it still holds (a clean exit)."""
        try:
            n = await in_worker(self.store.leave, self.owner)
        except Exception as e:  # noqa: BLE001 - the heartbeat's timeout re-queues it anyway
            log.warning("leaving the fleet failed (its claims are re-queued after the timeout): %s", e)
            return
        if n:
            log.info("handed back %d request(s) on exit", n)

    async def may_request(self) -> bool:
        """Whether this member is the fleet's requester now (taking the lock when it is free)."""
        leading = await in_worker(self.store.try_lead, self.owner)
        if leading != self.leading:
            log.info("%s the fleet's requester", "became" if leading else "is no longer")
            self.leading = leading
        return leading

    async def request_settings(self, settings: RequestLoopSettings) -> RequestLoopSettings:
        """The request loop's settings sized for the fleet's live capacity."""
        fleet = await in_worker(self.store.fleet_capacity)
        return fleet_marks(settings, fleet, self.capacity)


def fleet_report(store: Store) -> dict[str, object]:
    """The fleet as ``psagent status`` shows it: members (alive or not), their devices, claims, heartbeats
    and last errors, the requester, and the live capacity the request loop sizes its asks by."""
    hosts = store.hosts()
    leader = next((h.owner for h in hosts if h.alive and h.requester), None)
    return {
        "capacity": store.fleet_capacity(),
        "alive": sum(h.alive for h in hosts),
        "requester": leader,
        "members": [
            {
                "owner": h.owner,
                "hostname": h.hostname,
                "pid": h.pid,
                "state": "alive" if h.alive else ("stopped" if h.stopped_at is not None else "silent"),
                "requester": h.owner == leader,
                "capacity": h.capacity,
                "devices": list(h.devices),
                "proving": h.proving,
                "leased": h.leased,
                "heartbeat_age_s": round(h.age_s, 1),
                "last_error": h.last_error,
                "last_error_age_s": (
                    None if h.last_error_at is None else round(h.heartbeat_at - h.last_error_at + h.age_s, 1)
                ),
            }
            for h in hosts
        ],
    }


def fleet_lines(report: dict[str, object]) -> list[str]:
    """``fleet_report`` for people: one line for the fleet, one per member, one per member's last error."""
    members = report["members"]
    assert isinstance(members, list)
    head = f"fleet:    {report['alive']} of {len(members)} member(s) alive, capacity {report['capacity']}"
    lines = [head + (f", requester {report['requester']}" if report["requester"] else ", no requester")]
    for m in members:
        role = " requester" if m["requester"] else ""
        lines.append(
            f"  {m['owner']} ({m['hostname']} pid {m['pid']}): {m['state']}{role}, heartbeat "
            f"{m['heartbeat_age_s']:.1f} s ago, capacity {m['capacity']}, proving {m['proving']}, "
            f"held {m['leased']}, devices {', '.join(m['devices']) or 'none'}"
        )
        if m["last_error"]:
            lines.append(f"    last error {m['last_error_age_s']:.0f} s ago: {m['last_error']}")
    return lines
