"""What a proof is of: a PoRep C2 (the StackedDRG circuit), a SnapDeals update proof, or a WinningPoSt or
WindowPoSt partition (the FallbackPoSt circuit). The one place that tells them apart, for a request
(:class:`~agent.proving.work.Work` carries its kind) and for a proof type (:meth:`WorkKind.of`: seal and
update proof types share names such as "StackedDrg2KiBV1", never types)."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from porep.post.params import PoStKind, PoStProofType
from porep.snap.params import UpdateProofType

if TYPE_CHECKING:
    from porep.prooftypes import ProofType

__all__ = ["WorkKind", "for_kind"]

T = TypeVar("T")


class WorkKind(StrEnum):
    """What a request asks for: a PoRep C2 (the StackedDRG circuit), a SnapDeals update proof, or (Curio's
    cuzk calls only) a WinningPoSt or one WindowPoSt partition (the FallbackPoSt circuit)."""

    POREP = "porep"
    SNAP = "snap"
    WINNING_POST = "winning-post"
    WINDOW_POST = "window-post"

    @classmethod
    def of(cls, pt: ProofType | UpdateProofType | PoStProofType) -> WorkKind:
        """The kind of proof ``pt`` is a proof type of."""
        if isinstance(pt, PoStProofType):
            return next(k for k, post in _POST_KINDS.items() if post is pt.kind)
        return cls.SNAP if isinstance(pt, UpdateProofType) else cls.POREP

    @property
    def post_kind(self) -> PoStKind | None:
        """A PoSt's kind (winning or window: the FallbackPoSt circuit); None for PoRep and Snap."""
        return _POST_KINDS.get(self)


_POST_KINDS = {WorkKind.WINNING_POST: PoStKind.WINNING, WorkKind.WINDOW_POST: PoStKind.WINDOW}


def for_kind(
    pt: ProofType | UpdateProofType | PoStProofType,
    *,
    porep: Callable[[ProofType], T],
    snap: Callable[[UpdateProofType], T],
    post: Callable[[PoStProofType], T],
) -> T:
    """``porep(pt)`` for a seal proof type, ``snap(pt)`` for an update proof type, ``post(pt)`` for a PoSt
    proof type."""
    if isinstance(pt, UpdateProofType):
        return snap(pt)
    if isinstance(pt, PoStProofType):
        return post(pt)
    return porep(pt)
