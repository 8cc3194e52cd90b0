"""`psagent params generate --post winning|window`: the PoSt circuits' development parameters under their
official names (checked before any work), the option's combinations refused with one line and exit 2. The
setup itself runs in `make test-post-long` (2KiB: about a minute on 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from porep.post.params import post_proof_type

runner = CliRunner()


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--synthetic-constraints", "64", "--post", "window"], "--post winning|window goes with"),
        (["--sector-size", "2KiB", "--post", "wining"], "--post winning|window goes with"),
        (["--sector-size", "2KiB", "--post", "window", "--update"], "(and not with --update)"),
    ],
)
def test_bad_combinations_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["params", "generate", *args, "--out", str(tmp_path / "p")])
    assert res.exit_code == EXIT_USAGE and says in res.output, res.output


@pytest.mark.parametrize(("post", "pid"), [("winning", 0), ("window", 10)])
def test_the_file_is_named_after_the_circuit(post: str, pid: int, tmp_path: Path) -> None:
    """The stem is the official one (docs/post.md §7): a file of that name is named, nothing is built."""
    out = tmp_path / "p"
    out.mkdir()
    stem = post_proof_type(pid).param_stem
    (out / f"{stem}.params").write_bytes(b"x")
    args = ["params", "generate", "--sector-size", "2KiB", "--post", post, "--out", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == EXIT_USAGE
    assert f"{stem}.params exists (pass --force" in res.output
    assert not (tmp_path / "cache" / "pce").exists()  # refused before the circuit was recorded
