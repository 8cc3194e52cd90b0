"""The dependency direction is a contract (docs/architecture.md): agent → market/porep → gpu, nothing upward.

Checked statically over every module's imports (including function-local and TYPE_CHECKING imports),
so a violation fails even if it sits in code no other test executes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = {"agent", "market", "porep", "gpu"}
FORBIDDEN = {
    "gpu": {"agent", "market", "porep"},
    "porep": {"agent", "market"},
    "market": {"agent"},
    "agent": set(),
}
# market.mock may use gpu (it checks proofs); market proper may import porep but not gpu.
EXTRA_FORBIDDEN = {"market": {"gpu"}}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & OURS


@pytest.mark.parametrize("package", sorted(OURS))
def test_no_upward_imports(package: str) -> None:
    files = sorted((REPO / package).rglob("*.py"))
    assert files, f"package {package} has no modules"
    bad = []
    for f in files:
        rel = f.relative_to(REPO)
        forbidden = set(FORBIDDEN[package])
        if package == "market" and not rel.parts[1].startswith("mock"):
            forbidden |= EXTRA_FORBIDDEN["market"]
        hits = imported_packages(f) & forbidden
        if hits:
            bad.append(f"{rel} imports {sorted(hits)}")
    assert not bad, "dependency direction violated:\n" + "\n".join(bad)


def test_checker_catches_a_violation(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from agent.config import Settings\n    import porep.x\n")
    assert imported_packages(f) == {"agent", "porep"}
