"""What a proof is of: a PoRep C2 (the StackedDRG circuit) or a SnapDeals update proof. The one place that
tells the two apart, for a request (:class:`~agent.proving.work.Work` carries its kind) and for a proof type
(:meth:`WorkKind.of`: seal and update proof types share names such as "StackedDrg2KiBV1", never types)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from porep.snap.params import UpdateProofType

if TYPE_CHECKING:
    from porep.prooftypes import ProofType

__all__ = ["WorkKind", "for_kind"]

T = TypeVar("T")


class WorkKind(StrEnum):
    """What a request asks for: a PoRep C2 (the StackedDRG circuit) or a SnapDeals update proof."""

    POREP = "porep"
    SNAP = "snap"

    @classmethod
    def of(cls, pt: ProofType | UpdateProofType) -> WorkKind:
        """The kind of proof ``pt`` is a proof type of."""
        return cls.SNAP if isinstance(pt, UpdateProofType) else cls.POREP


def for_kind(
    pt: ProofType | UpdateProofType, *, porep: Callable[[ProofType], T], snap: Callable[[UpdateProofType], T]
) -> T:
    """``porep(pt)`` for a seal proof type, ``snap(pt)`` for an update proof type."""
    if isinstance(pt, UpdateProofType):
        return snap(pt)
    return porep(pt)
