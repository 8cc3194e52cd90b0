"""Environment variables are read where the architecture says (docs/architecture.md): the engine (gpu), the
Filecoin layer (porep) and the market read no ``PSAGENT_*`` variable (the agent passes values, e.g.
``gpu.options.EngineOptions.kernel_cache``), and Filecoin's ``FIL_PROOFS_PARAMETER_CACHE`` is read in one
place, ``agent.config.default_params_dir``. Checked over the source (AST), so a read in code no test runs
still fails."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = ("agent", "market", "porep", "gpu")
ONE_READER = {"FIL_PROOFS_PARAMETER_CACHE": "agent/config.py"}


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def environment_reads(source: str) -> list[str]:
    """The constant names a module reads from the environment: ``os.environ.get/[...]/setdefault/pop``,
    ``os.getenv``, ``NAME in os.environ``."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        key: ast.AST | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in ("get", "setdefault", "pop") and _is_environ(node.func.value):
                key = node.args[0]
            elif node.func.attr == "getenv":
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            key = node.left
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            names.append(key.value)
    return names


def channel_problems(root: Path) -> list[str]:
    bad = []
    for top in OURS:
        for f in sorted((root / top).rglob("*.py")):
            rel = f.relative_to(root).as_posix()
            for name in environment_reads(f.read_text()):
                if top != "agent" and name.startswith("PSAGENT_"):
                    bad.append(f"{rel} reads {name}: only the agent reads PSAGENT_* (pass a value)")
                if name in ONE_READER and rel != ONE_READER[name]:
                    bad.append(f"{rel} reads {name}: {ONE_READER[name]} is its one reader")
    return bad


def test_the_tree_reads_the_environment_where_it_should() -> None:
    assert environment_reads((REPO / "agent/config.py").read_text()).count("FIL_PROOFS_PARAMETER_CACHE") == 1
    bad = channel_problems(REPO)
    assert not bad, "\n".join(bad)


def test_planted_reads_are_reported(tmp_path: Path) -> None:
    for top in OURS:
        (tmp_path / top).mkdir()
    (tmp_path / "gpu/shim.py").write_text('import os\nON = os.environ.get("PSAGENT_NUMBA_CACHE") == "1"\n')
    (tmp_path / "porep/x.py").write_text('import os\nX = "PSAGENT_PTX" in os.environ\n')
    (tmp_path / "agent/paramfiles.py").write_text(
        'from os import environ\nD = environ["FIL_PROOFS_PARAMETER_CACHE"]\n'
    )
    (tmp_path / "agent/config.py").write_text('import os\nD = os.getenv("FIL_PROOFS_PARAMETER_CACHE")\n')
    assert sorted(channel_problems(tmp_path)) == [
        "agent/paramfiles.py reads FIL_PROOFS_PARAMETER_CACHE: agent/config.py is its one reader",
        "gpu/shim.py reads PSAGENT_NUMBA_CACHE: only the agent reads PSAGENT_* (pass a value)",
        "porep/x.py reads PSAGENT_PTX: only the agent reads PSAGENT_* (pass a value)",
    ]
