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
    chatty = {n: logging.getLogger(n).level for n in ("httpx", "httpcore", "hpack", "uvicorn.access")}
    monkeypatch.setattr(logsetup, "_configured", False)
    yield
    root.handlers[:], _ = saved[0], root.setLevel(saved[1])
    for name, level in chatty.items():
        logging.getLogger(name).setLevel(level)


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


SIG = "a36353696758420" + "1f" * 66 + "674e6f6e6365494"  # the shape of a request signature's hex


@pytest.mark.parametrize("fmt", ["json", "human"])
def test_signatures_are_redacted_in_messages_extras_and_tracebacks(fmt: str) -> None:
    """A signature whose request never arrived stays replayable for 60 s: it must not reach any log line,
    whichever part of the record carries it."""
    buf = io.StringIO()
    logsetup.setup_logging("debug", fmt, stream=buf)
    log = logging.getLogger("someone.else")
    url = f"https://m.test/v0/proofs/provider/work/ask/f1abc?price=5&signature={SIG}"
    log.info('HTTP Request: POST %s "HTTP/1.1 200 OK"', url)
    log.info("request sent", extra={"url": url})
    try:
        raise RuntimeError(f"failed: {url}")
    except RuntimeError:
        log.exception("call failed")
    out = buf.getvalue()
    flat = "".join(out.split())  # the human format wraps long lines
    assert SIG[:40] not in flat and SIG[-40:] not in flat
    assert flat.count("signature=<redacted>") >= 2 + (fmt == "json") and "price=5" in flat  # only the secret
    if fmt == "json":
        for line in out.splitlines():
            json.loads(line)  # redaction keeps every line valid JSON


def test_key_exports_are_redacted_anywhere() -> None:
    from market.wallet import Wallet

    w = Wallet.generate()
    buf = io.StringIO()
    logsetup.setup_logging("info", "json", stream=buf)
    logging.getLogger("z").warning("bad key file content %s", w.export_lotus())
    logging.getLogger("z").warning("sha256 %s", "ab" * 32)  # a digest (64 hex) is not a secret
    logging.getLogger("z").warning("sig 0x%s_end", SIG)  # glued to word characters
    out = buf.getvalue()
    assert w.export_lotus() not in out and w.export_lotus()[:40] not in out
    assert SIG[:40] not in out and "sig 0x<hex redacted>_end" in out
    assert "ab" * 32 in out


def test_chatty_http_loggers_are_held_at_warning() -> None:
    """The HTTP clients' request lines, and numba-cuda's driver, which logs every deallocation at INFO (the
    32GiB lease's logs were thousands of them), stay out of the agent's log below a warning."""
    logsetup.setup_logging("debug", "json", stream=io.StringIO())
    for name in ("httpx", "httpcore", "numba.cuda.cudadrv.driver"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING
