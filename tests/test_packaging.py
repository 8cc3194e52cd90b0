"""What the install brings: the plain install no CUDA at all, the ``cuda`` extras numba-cuda with the toolkit
wheels its compiler needs (NVVM, libdevice, NVRTC: without them a GPU host cannot compile a kernel), and
the published parameter table as package data."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())


def test_the_plain_install_has_no_cuda() -> None:
    deps = PYPROJECT["project"]["dependencies"]
    assert not [d for d in deps if "cuda" in d or "nvidia" in d]


def test_the_cuda_extras_bring_the_toolkit_wheels() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    # numba-cuda's own extras pull cuda-toolkit[...] (nvvm / nvcc, nvrtc, cudart, cccl) and nvJitLink
    assert extras["cuda"] == ["numba-cuda[cu13]>=0.30,<0.31"]
    assert extras["cuda12"] == ["numba-cuda[cu12]>=0.30,<0.31"]


def test_the_published_parameter_table_ships() -> None:
    assert "official_params.tsv" in PYPROJECT["tool"]["setuptools"]["package-data"]["porep"]
