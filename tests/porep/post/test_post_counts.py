"""FallbackPoSt counts: rust-fil-proofs' published test shapes reproduced by direct synthesis, and every
production circuit's counts from the recorded sector (docs post.md §6) against the cost model of §5.1 and the
published figures (rust-fil-proofs' 32GiB/64GiB WindowPoSt comments, cuzk's measured WinningPoSt)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from porep.circuit.cs import ConstraintSystem
from porep.post.circuit import PoStShape, synthesize
from porep.post.params import POST_PROOF_TYPES, post_proof_type
from porep.post.partition import post_template as _record

_BY_STEM = {p.param_stem: p for p in POST_PROOF_TYPES}


@cache
def _template(stem: str) -> Any:
    return _record(_BY_STEM[stem])


def post_template(pt: Any) -> Any:
    """One recording per circuit for the whole module (a 32GiB sector: ~1-2 s)."""
    return _template((post_proof_type(pt) if isinstance(pt, int) else pt).param_stem)


# storage-proofs-post/tests/fallback_circuit.rs: (tree arities of 64 leaves per base tree, total sectors,
# sectors per partition, partitions, expected inputs, expected constraints); 5 challenges per sector
PUBLISHED = [
    ((8, 8), 3, 19, 16_869),
    ((8, 8, 4), 3, 19, 22_674),
    ((8, 8, 4, 2), 3, 19, 27_384),
    ((8, 8), 2, 13, 11_246),
]


@pytest.mark.parametrize(("arities", "sectors", "inputs", "rows"), PUBLISHED)
def test_rust_test_shapes(arities: tuple[int, ...], sectors: int, inputs: int, rows: int) -> None:
    cs = ConstraintSystem(witness=False, record=False)
    synthesize(cs, PoStShape(arities, sectors, 5))
    assert (cs.num_inputs, cs.num_constraints) == (inputs, rows)


def test_the_32gib_bench_shape() -> None:
    """fallback_circuit.rs' ignored bench: 32GiB, 5 sectors × 10 challenges → 266,665."""
    t = post_template(8)  # the 32GiB WindowPoSt sector
    assert 5 * t.layout.c_rows == 266_665


def _model(arities: tuple[int, ...], challenges: int) -> tuple[int, int]:
    """docs post.md §5.1: (rows, aux) of one sector."""
    level_rows = {8: 530, 4: 387, 2: 314}
    level_aux = {8: 537, 4: 390, 2: 315}
    por_rows = sum(level_rows[a] for a in arities) + 2
    por_aux = 1 + sum(level_aux[a] for a in arities)
    return 313 + challenges * por_rows, 314 + challenges * por_aux


CIRCUITS = sorted({p.param_stem: p for p in POST_PROOF_TYPES}.values(), key=lambda p: p.id)


@pytest.mark.parametrize("pt", CIRCUITS, ids=lambda p: p.name)
def test_every_production_circuit(pt: object) -> None:
    t = post_template(pt)  # type: ignore[arg-type]
    s = t.stats()
    rows, aux = _model(pt.path_arities, pt.circuit_challenges)  # type: ignore[attr-defined]
    n = pt.circuit_sectors  # type: ignore[attr-defined]
    assert (t.layout.c_rows, t.layout.c_aux, t.layout.c_inputs) == (rows, aux, 1 + pt.circuit_challenges)  # type: ignore[attr-defined]
    inputs = 1 + n * (1 + pt.circuit_challenges)  # type: ignore[attr-defined]
    assert (s.num_constraints, s.num_aux, s.num_inputs) == (n * rows, n * aux, inputs)
    assert s.b_input == 1  # ONE only


def test_published_totals() -> None:
    assert post_template(8).stats().num_constraints == 125_279_217  # constants.rs, 32GiB WindowPoSt
    assert post_template(9).stats().num_constraints == 129_887_900  # constants.rs, 64GiB WindowPoSt
    win = post_template(3).stats()
    assert win.num_constraints == 370_590  # cuzk: "≈370K" measured
    assert (win.num_constraints + win.num_inputs - 1).bit_length() == 19
    w32 = post_template(13).stats()
    assert (w32.num_constraints + w32.num_inputs - 1).bit_length() == 27  # a 2^27 domain, as PoRep's
    assert post_proof_type(13).param_stem == post_proof_type(8).param_stem
