"""Real challenge data for the mock market: sealed test sectors, from which C1s are cut on demand.

A challenge on the real market is a genuine PoRep request for miner 1000 / sector 1 with raw random 32-byte
ticket and seed (never reduced to a field element). Sealing is the slow part (~6-12 s for 2KiB on the 2-core
machine, ~30 s for 8MiB) and is done ahead, into a pool directory of ``sector-N/`` sector directories
(``psagent seal``'s layout). Cutting a C1 from a sealed sector for a fresh random seed takes milliseconds, so
every request the mock issues is new (its own CID); :meth:`ChallengePool.take` hands out ones cut ahead by a
background thread, so serving stays instant.

Snap requests: with ``snap_every=N`` every Nth request made is a SnapDeals update proof (ProofData.Snap, as
Curio's client uploads it) instead: a CC sector sealed once into ``cc-N/`` is updated with fresh random data
(a new comm_d_new / comm_r_new, so a new CID each time) and its vanilla partition proofs are bincode-encoded
like ``psagent snap make`` does. Updating a 2KiB sector takes well under a second.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
from pathlib import Path
from typing import Any

__all__ = ["CHALLENGE_MINER", "CHALLENGE_SECTOR", "ChallengePool", "SNAP_SECTOR"]

log = logging.getLogger(__name__)

CHALLENGE_MINER = 1000
CHALLENGE_SECTOR = 1
SNAP_SECTOR = 2  # the SectorID of the pool's Snap requests (names jobs only; the proof does not use it)
DEFAULT_PROOF = "StackedDrg2KiBV1_1"


class ChallengePool:
    """Sealed sectors under ``directory``; :meth:`make` gives ProofData bytes for a fresh random seed."""

    def __init__(
        self,
        directory: Path,
        sectors: list[Any],
        proof_type: str,
        *,
        ahead: int = 4,
        cc_sectors: list[Any] | None = None,
        snap_every: int = 0,
    ) -> None:
        if snap_every < 0 or (snap_every and not cc_sectors):
            raise ValueError("snap_every needs a CC sector to update (ChallengePool.open makes one)")
        self.directory = directory
        self._sectors = sectors
        self._cc = cc_sectors or []
        self.snap_every = snap_every
        self.proof_type = proof_type
        self._lock = threading.Lock()
        self._next = 0
        self._made = 0
        self._ready: queue.Queue[bytes] = queue.Queue(maxsize=max(ahead, 1))
        self._ahead = ahead
        self._filler: threading.Thread | None = None

    @classmethod
    def open(
        cls, directory: Path, *, proof_type: str = DEFAULT_PROOF, min_sectors: int = 1, snap_every: int = 0
    ) -> ChallengePool:
        """Load the pool, sealing sectors first (random ticket and data) until it holds ``min_sectors``, and
        with ``snap_every`` > 0 a CC sector to make Snap requests from."""
        from porep.sdr.seal import SealedSector

        directory.mkdir(parents=True, exist_ok=True)
        sectors = []
        for sub in sorted(directory.glob("sector-*")):
            sealed = SealedSector.load(sub)
            if sealed.info.registered_proof == proof_type:
                sectors.append(sealed)
        while len(sectors) < min_sectors:
            sub = directory / f"sector-{len(list(directory.glob('sector-*')))}"
            log.info("sealing a %s challenge sector into %s", proof_type, sub)
            sealed = seal_challenge_sector(proof_type)
            sealed.save(sub)
            sectors.append(SealedSector.load(sub))
        cc = []
        if snap_every > 0:
            for sub in sorted(directory.glob("cc-*")):
                sealed = SealedSector.load(sub)
                if sealed.info.registered_proof == proof_type:
                    cc.append(sealed)
            if not cc:
                sub = directory / f"cc-{len(list(directory.glob('cc-*')))}"
                log.info("sealing a %s CC sector for Snap requests into %s", proof_type, sub)
                seal_cc_sector(proof_type).save(sub)
                cc.append(SealedSector.load(sub))
        return cls(directory, sectors, proof_type, cc_sectors=cc, snap_every=snap_every)

    def take(self) -> bytes:
        """A new challenge request, from the ones made ahead by a background thread when there is one ready
        (an 8MiB C1 takes a noticeable time to cut), else made now."""
        if self._ahead > 0 and self._filler is None:
            self._filler = threading.Thread(target=self._fill, name="challenge-pool", daemon=True)
            self._filler.start()
        try:
            return self._ready.get_nowait()
        except queue.Empty:
            return self.make()

    def _fill(self) -> None:
        while True:
            self._ready.put(self.make())  # blocks while the queue is full

    def make(self) -> bytes:
        """A new request: every ``snap_every``-th a Snap one (:meth:`make_snap`), else a PoRep challenge."""
        with self._lock:
            self._made += 1
            snap = self.snap_every > 0 and self._made % self.snap_every == 0
        return self.make_snap() if snap else self.make_porep()

    def make_snap(self) -> bytes:
        """A new Snap request: the CC sector updated with fresh random data, ProofData JSON (Go field
        order) with the bincode partition proofs, strictly checked before it is handed out."""
        from market.proofdata import ProofData, SectorID, Snap
        from porep.fr32 import pad_to_sector, unpadded_size
        from porep.snap.update import update_sector
        from porep.snap.verify import check_partitions

        if not self._cc:
            raise ValueError("the pool has no CC sector for Snap requests (open it with snap_every > 0)")
        with self._lock:
            cc = self._cc[self._made % len(self._cc)]
        size = cc.proof_type.sector_size
        upd = update_sector(cc, pad_to_sector(secrets.token_bytes(unpadded_size(size)), size))
        assert upd.proof_type is not None
        pid = int(upd.proof_type.id)
        proofs = tuple(p.to_bytes() for p in upd.partition_proofs())
        report = check_partitions(pid, upd.comm_r_old, upd.comm_r_new, upd.comm_d_new, list(proofs))
        if not report.ok:  # a corrupt cc-N directory, not a request to hand out
            raise ValueError(f"the pool's Snap update fails the strict check: {report.failures[:3]}")
        snap = Snap(pid, upd.comm_r_old, upd.comm_r_new, upd.comm_d_new, proofs)
        return ProofData.encode(SectorID(CHALLENGE_MINER, SNAP_SECTOR), snap=snap)

    def make_porep(self) -> bytes:
        """A new challenge request: ProofData JSON (Go field order, as Curio re-marshals C1s)."""
        from market.proofdata import ProofData, SectorID
        from porep.c1 import KeyOrder
        from porep.sdr.vanilla import make_c1

        with self._lock:
            sealed = self._sectors[self._next % len(self._sectors)]
            self._next += 1
            c1 = make_c1(sealed, secrets.token_bytes(32))
        return ProofData.encode(SectorID(CHALLENGE_MINER, CHALLENGE_SECTOR), porep=c1.to_json(KeyOrder.GO))


def seal_challenge_sector(proof_type: str = DEFAULT_PROOF) -> Any:
    """Seal a sector of random data for miner 1000 / sector 1 with a raw random ticket."""
    from porep.fr32 import unpadded_size
    from porep.ids import prover_id
    from porep.prooftypes import proof_type as lookup
    from porep.sdr.seal import seal

    pt = lookup(proof_type)
    return seal(
        pt,
        prover_id(CHALLENGE_MINER),
        CHALLENGE_SECTOR,
        secrets.token_bytes(32),
        piece=secrets.token_bytes(unpadded_size(pt.sector_size)),
        miner=CHALLENGE_MINER,
    )


def seal_cc_sector(proof_type: str = DEFAULT_PROOF) -> Any:
    """Seal a committed-capacity sector (no data, zero comm_d) for miner 1000: what Snap updates."""
    from porep.ids import prover_id
    from porep.prooftypes import proof_type as lookup
    from porep.sdr.seal import seal

    pt = lookup(proof_type)
    return seal(
        pt, prover_id(CHALLENGE_MINER), SNAP_SECTOR, secrets.token_bytes(32), piece=b"", miner=CHALLENGE_MINER
    )
