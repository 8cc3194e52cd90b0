"""The circuit seam: the two questions the proof pipeline asks of a circuit (the R1CS of a proof type, the
assignment of one partition of a Work), one protocol per kind of work (``porep.circuit.partition``,
``porep.snap.partition``, ``porep.post.partition``), so that the pipeline is tested with doubles in their
place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from agent.proving.kind import for_kind
from agent.proving.work import Work
from porep.circuit.partition import StackedCircuit
from porep.post.partition import PoStCircuit as RealPoStCircuit
from porep.snap.partition import UpdateCircuit as RealUpdateCircuit

if TYPE_CHECKING:
    from gpu.groth16.r1cs import R1CS
    from porep.c1 import SealCommitPhase1Output
    from porep.post.params import PoStProofType
    from porep.post.verify import CheckedPoSt
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType
    from porep.snap.partition import UpdateWork

__all__ = ["Circuits", "PoStCircuit", "SealCircuit", "UpdateCircuit"]


class SealCircuit(Protocol):
    """The StackedDRG circuit's two answers (``porep.circuit.partition.StackedCircuit``)."""

    def r1cs(self, pt: ProofType) -> R1CS: ...
    def assignment(self, c1: SealCommitPhase1Output, k: int) -> np.ndarray: ...


class UpdateCircuit(Protocol):
    """The SnapDeals update circuit's two answers (``porep.snap.partition.UpdateCircuit``)."""

    def r1cs(self, pt: UpdateProofType) -> R1CS: ...
    def assignment(self, work: UpdateWork, k: int) -> np.ndarray: ...


class PoStCircuit(Protocol):
    """The FallbackPoSt circuit's two answers (``porep.post.partition.PoStCircuit``)."""

    def r1cs(self, pt: PoStProofType) -> R1CS: ...
    def assignment(self, checked: CheckedPoSt, k: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Circuits:
    """The circuit of each kind of work; ``default``: the real ones (compiled templates under ``cache``)."""

    seal: SealCircuit
    update: UpdateCircuit
    post: PoStCircuit | None = None

    @classmethod
    def default(cls, cache: Path | None) -> Circuits:
        return cls(StackedCircuit(cache), RealUpdateCircuit(cache), RealPoStCircuit(cache))

    def r1cs(self, pt: ProofType | UpdateProofType | PoStProofType) -> R1CS:
        return for_kind(pt, porep=self.seal.r1cs, snap=self.update.r1cs, post=lambda q: self._post().r1cs(q))

    def _post(self) -> PoStCircuit:
        if self.post is None:
            raise ValueError("no PoSt circuit behind this pipeline")
        return self.post

    def assignment(self, work: Work, k: int) -> np.ndarray:
        if work.update is not None:
            return self.update.assignment(work.update, k)
        if work.post is not None:
            return self._post().assignment(work.post, k)
        assert work.c1 is not None
        return self.seal.assignment(work.c1, k)
