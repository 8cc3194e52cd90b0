"""Every module's and package's public surface: ``__all__`` sorted, without repeats, naming only what the
module defines or imports; and for every package, its ``__all__`` importable from the package itself (or, for
a package whose own import loads nothing, no public name at all: its modules are the surface). Read from the
source (AST), so the check covers modules no test imports; the packages are imported in one subprocess (their
import is cheap and loads no kernel)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OURS = ("agent", "market", "porep", "gpu")
GENERATED = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi")  # protoc's output (agent/cuzk): not ours to shape


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for top in OURS:
        for f in sorted((REPO / top).rglob("*.py")):
            if f.name.endswith(GENERATED):
                continue
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


MODULES = _modules()
PACKAGES = sorted(m for m, f in MODULES.items() if f.name == "__init__.py")


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (definitions, assignments, imports; also under if / try)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for h in getattr(node, "handlers", []):
                    visit(h.body)
    visit(tree.body)
    return names


def _all_of(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            value = node.value
            assert isinstance(value, (ast.List, ast.Tuple)), "__all__ is a literal list"
            return [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None


def surface_problems(name: str, path: Path) -> list[str]:
    """What is wrong with the ``__all__`` of module ``name`` at ``path`` (nothing when it has none)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    exported = _all_of(tree)
    if exported is None:
        return []
    bad = []
    if exported != sorted(exported):
        bad.append(f"{name}.__all__ is not sorted")
    if len(set(exported)) != len(exported):
        bad.append(f"{name}.__all__ repeats a name")
    bound = _top_level_names(tree)
    unbound = sorted(set(exported) - bound) if "*" not in bound else []  # a star import: checked at import
    if unbound:
        bad.append(f"{name}.__all__ names what it does not define or import: {unbound}")
    return bad


def test_every_all_is_sorted_unique_and_bound() -> None:
    assert len(MODULES) > 100
    bad = [p for name, path in MODULES.items() for p in surface_problems(name, path)]
    assert not bad, "\n".join(bad)


def test_a_planted_unsorted_or_unbound_all_is_reported(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('from x import b\n__all__ = ["b", "a"]\n')
    assert surface_problems("m", f) == [
        "m.__all__ is not sorted",
        "m.__all__ names what it does not define or import: ['a']",
    ]
    f.write_text('def a(): ...\n__all__ = ["a", "a"]\n')
    assert surface_problems("m", f) == ["m.__all__ repeats a name"]


_PROBE = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    mod = importlib.import_module(name)
    exported = getattr(mod, "__all__", None)
    public = sorted(n for n in vars(mod) if not n.startswith("_"))
    subs = {n for n in public if type(getattr(mod, n)).__name__ == "module" and
            getattr(getattr(mod, n), "__name__", "").startswith(name + ".")}
    out[name] = {
        "all": exported,
        "missing": [n for n in (exported or []) if not hasattr(mod, n)],
        "public": [n for n in public if n not in subs and n != "annotations"],
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def package_surfaces() -> dict[str, dict[str, list[str] | None]]:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *PACKAGES], capture_output=True, text=True, cwd=REPO, check=True
    )
    return json.loads(run.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_exports_what_it_lists_and_nothing_unlisted(
    package: str, package_surfaces: dict[str, dict[str, list[str] | None]]
) -> None:
    """A package with ``__all__``: every name importable from it. A package without one: nothing public bound
    by its own import (so ``from pkg import name`` always means a submodule)."""
    got = package_surfaces[package]
    if got["all"] is None:
        assert got["public"] == [], f"{package} binds public names without an __all__: {got['public']}"
    else:
        assert got["missing"] == [], f"{package}.__all__ names what it lacks: {got['missing']}"
