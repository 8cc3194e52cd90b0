"""The committed generated modules are exactly what gpu/codegen.py produces now."""

from __future__ import annotations

from gpu import codegen


def test_regenerating_changes_nothing() -> None:
    stale = [str(p) for p, text in codegen.outputs().items() if not p.exists() or p.read_text() != text]
    assert not stale, f"regenerate with `python -m gpu.codegen`: {stale}"
