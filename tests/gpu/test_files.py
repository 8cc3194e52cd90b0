"""gpu.files: a file or directory appears whole or not at all; a failed write leaves the old one and no
temporary behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu.files import atomic_dir, atomic_file, atomic_write


def test_a_file_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "f.bin"
    atomic_write(target, b"old", fsync=True)
    assert target.read_bytes() == b"old"
    with pytest.raises(RuntimeError):
        with atomic_file(target) as f:
            f.write(b"half of the new")
            raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old" and sorted(p.name for p in target.parent.iterdir()) == ["f.bin"]
    atomic_write(target, "new")
    assert target.read_text() == "new"


def test_a_directory_is_replaced_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "cache"
    with atomic_dir(target) as d:
        (d / "a").write_text("1")
    with pytest.raises(OSError):
        with atomic_dir(target) as d:
            (d / "a").write_text("2")
            raise OSError("disk full")
    assert (target / "a").read_text() == "1" and [p.name for p in tmp_path.iterdir()] == ["cache"]
    with atomic_dir(target) as d:
        (d / "b").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["b"]
