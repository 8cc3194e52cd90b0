"""What the install brings: the plain install no CUDA at all, the ``cuda`` extras numba-cuda with the toolkit
wheels its compiler needs (NVVM, libdevice, NVRTC: without them a GPU host cannot compile a kernel), and
the published parameter table as package data; and what it leaves: nothing in the clone it was built from."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_the_plain_install_has_no_cuda() -> None:
    deps = PYPROJECT["project"]["dependencies"]
    assert not [d for d in deps if "cuda" in d or "nvidia" in d]


def test_the_cuda_extras_bring_the_toolkit_wheels() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    # numba-cuda's own extras pull cuda-toolkit[...] (nvvm / nvcc, nvrtc, cudart, cccl) and nvJitLink
    assert extras["cuda"] == ["numba-cuda[cu13]>=0.30,<0.31"]
    assert extras["cuda12"] == ["numba-cuda[cu12]>=0.30,<0.31"]


def _clone(dest: Path) -> Path:
    """What a clone holds of the build's inputs: the tracked files of the packages, pyproject.toml, the
    README and .gitignore (git ls-files; the tree as it is where there is no git)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
        files = [f for f in out.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git checkout to copy")
    tops = {"agent", "market", "porep", "gpu", "pyproject.toml", "README.md", ".gitignore"}
    for f in files:
        if f.split("/", 1)[0] in tops and (REPO / f).is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, dest / f)
    return dest


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str], set[str]]:
    """A wheel built from a copy of the clone as `pip install .` builds it (in place, with the declared
    backend; offline: the backend from the dev extra), and the copy's files before and after."""
    src = _clone(tmp_path_factory.mktemp("clone"))
    before = _tree(src)
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out)]
    res = subprocess.run([*cmd, str(src)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    (wheel,) = out.glob("psagent-*.whl")
    return wheel, before, _tree(src)


def test_pip_install_leaves_nothing_in_the_clone(built: tuple[Path, set[str], set[str]]) -> None:
    """setuptools wrote build/ and psagent.egg-info/ into the clone (root-owned after `sudo pip install`)."""
    _, before, after = built
    assert sorted(after - before) == []


def test_the_wheel_holds_the_packages_and_the_published_parameter_table(
    built: tuple[Path, set[str], set[str]]
) -> None:
    wheel, _, _ = built
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "porep/official_params.tsv" in names  # read by porep.official_params
    for pkg in ("agent", "market", "porep", "gpu"):
        assert f"{pkg}/__init__.py" in names
    assert not [n for n in names if n.split("/", 1)[0] in {"tests", "benchmarks", "scripts", "docs"}]
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc"))]
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "psagent = agent.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
