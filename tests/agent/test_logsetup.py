from __future__ import annotations

import io
import json
import logging

import pytest

from agent import logsetup


@pytest.fixture(autouse=True)
def fresh_logging(monkeypatch: pytest.MonkeyPatch):
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    monkeypatch.setattr(logsetup, "_configured", False)
    yield
    root.handlers[:], _ = saved[0], root.setLevel(saved[1])


def test_json_lines_when_not_a_tty() -> None:
    buf = io.StringIO()  # isatty() is False, like journald's pipe
    logsetup.setup_logging("info", "auto", stream=buf)
    logging.getLogger("psagent.test").info("proof %s verified", "abc", extra={"partition": 3})
    logging.getLogger("psagent.test").debug("hidden at info level")
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["msg"] == "proof abc verified"
    assert rec["level"] == "info" and rec["logger"] == "psagent.test" and rec["partition"] == 3
    assert rec["ts"].endswith("Z")


def test_human_format_is_not_json() -> None:
    buf = io.StringIO()
    logsetup.setup_logging("info", "human", stream=buf)
    logging.getLogger("x").warning("disk almost full")
    out = buf.getvalue()
    assert "disk almost full" in out
    with pytest.raises(json.JSONDecodeError):
        json.loads(out.splitlines()[0])


def test_setup_is_once_per_process() -> None:
    a, b = io.StringIO(), io.StringIO()
    logsetup.setup_logging("info", "json", stream=a)
    logsetup.setup_logging("debug", "json", stream=b)  # only the level changes
    logging.getLogger("y").debug("now visible")
    assert "now visible" in a.getvalue() and b.getvalue() == ""
