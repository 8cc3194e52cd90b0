"""Curio's golden 32GiB vanilla PoSt proof satisfies the whole 32GiB WindowPoSt R1CS (``make test-post-long``;
not in CI: ~4 min and ~14 GB on 2 cores): ``benchmarks/post_r1cs_check.py`` run as a process, and its
``--mutate`` twin, which must find the bumped value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.skipif(
    not os.environ.get("PSAGENT_POST_LONG"), reason="the 32GiB WindowPoSt R1CS: make test-post-long"
)


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("mutate", [False, True], ids=["golden", "mutated"])
def test_the_golden_32gib_witness_satisfies_the_window_post_r1cs(fixtures_dir: Path, mutate: bool) -> None:
    cmd = [sys.executable, str(REPO / "benchmarks" / "post_r1cs_check.py"), "--fixtures", str(fixtures_dir)]
    out = subprocess.run(cmd + (["--mutate"] if mutate else []), capture_output=True, text=True, check=False)
    print(out.stdout)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "strict vanilla check (StackedDrgWindow32GiBV1): ok" in out.stdout
    assert "rows 125,279,217 (+25,840 input rows), aux 126,902,376" in out.stdout
    assert "public inputs from the public values == the assignment's 25,839 inputs: True" in out.stdout
    if mutate:
        assert "UNSATISFIED: constraint" in out.stdout
    else:
        assert "all 125,279,217 constraints satisfied" in out.stdout
