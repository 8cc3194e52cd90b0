"""The design knowledge the code cites lives in the repository: every ``<doc>.md §N.M`` in the tracked
sources and documents names a file of docs/ and a numbered heading in it, and nothing points at the steering
documents outside the repository (``../shared/docs``) for a fact."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"\b([a-z][a-z_-]*)\.md ?§ ?([0-9]+(?:\.[0-9]+)*)")
HEADING = re.compile(r"#+\s+([0-9]+(?:\.[0-9]+)*)\.?\s")
TEXT = {".py", ".md", ".sh", ".toml", ".service"}


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    here = Path(__file__).resolve()  # this file plants bad citations on purpose
    return [REPO / f for f in out.split() if Path(f).suffix in TEXT and (REPO / f).resolve() != here]


def _sections() -> dict[str, set[str]]:
    return {
        d.stem: {m.group(1) for line in d.read_text().splitlines() if (m := HEADING.match(line))}
        for d in (REPO / "docs").glob("*.md")
    }


def unresolved(files: list[Path], sections: dict[str, set[str]]) -> list[str]:
    bad = []
    for f in files:
        for m in CITATION.finditer(f.read_text(errors="replace")):
            doc, sec = m.group(1), m.group(2)
            if sec not in sections.get(doc, set()):
                where = f.relative_to(REPO) if f.is_relative_to(REPO) else f.name
                bad.append(f"{where}: {m.group(0)}")
    return bad


def test_every_citation_resolves_inside_the_repository() -> None:
    files = _tracked()
    sections = _sections()
    count = sum(len(CITATION.findall(f.read_text(errors="replace"))) for f in files)
    assert count > 100  # the code does cite the documents
    bad = unresolved(files, sections)
    assert not bad, "citations without a docs/ section:\n" + "\n".join(bad)


def test_an_unknown_section_is_reported(tmp_path: Path) -> None:
    planted = tmp_path / "x.py"
    planted.write_text("# see snap.md §6.5 and snap.md §99.1 and nowhere.md §1\n")
    got = [line.split(": ", 1)[1] for line in unresolved([planted], _sections())]
    assert got == ["snap.md §99.1", "nowhere.md §1"]


def test_no_fact_is_cited_from_outside_the_repository() -> None:
    outside = [
        str(f.relative_to(REPO))
        for f in _tracked()
        if "shared/docs/" in f.read_text(errors="replace") and f.name != "TEAM.md"
    ]
    assert not outside, f"cite docs/ instead of ../shared/docs in: {outside}"
