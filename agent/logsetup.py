"""Logging, configured once per process: human-readable on a TTY, JSON lines otherwise (journald, files)."""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any, TextIO

from rich.console import Console
from rich.logging import RichHandler

_STD_ATTRS = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
_configured = False
# Request signatures travel in query strings; one that never reached the market stays replayable for 60 s.
_SECRET_QUERY = re.compile(r"((?:signature|sig|key|token)=)[^&\s'\"\\]+", re.IGNORECASE)
# Hex runs this long are secrets or worse in a log: a signature is ~190 hex digits, a lotus key export ~160;
# digests (64) and CIDs (base32) stay readable.
_LONG_HEX = re.compile(r"(?<![0-9a-fA-F])[0-9a-fA-F]{128,}(?![0-9a-fA-F])")
# Libraries that log every request URL (query included) at INFO, and numba-cuda's driver, which logs every
# pending and done deallocation at INFO (thousands of lines a 32GiB proof).
_CHATTY = ("httpx", "httpcore", "hpack", "uvicorn.access", "numba.cuda.cudadrv.driver")


def redact(text: str) -> str:
    """``text`` with signature/key query values and long hex runs replaced."""
    return _LONG_HEX.sub("<hex redacted>", _SECRET_QUERY.sub(r"\1<redacted>", text))


class RedactFilter(logging.Filter):
    """Scrubs secrets from every part of a record that reaches a handler (any logger, any level): the
    message, string ``extra=`` fields, the traceback and the stack. Handlers format what is left."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        for k, v in list(vars(record).items()):
            if k not in _STD_ATTRS and isinstance(v, str):
                setattr(record, k, redact(v))
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; extra= fields are kept as top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for k, v in list(vars(record).items()):
            if k not in _STD_ATTRS and not k.startswith("_"):
                out[k] = v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)
        if record.exc_text:
            out["exc"] = record.exc_text
        elif record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))


def make_handler(fmt: str = "auto", stream: TextIO | None = None) -> logging.Handler:
    """The root handler for ``logging.format``: human-readable lines (rich) or JSON lines, redacted."""
    stream = stream or sys.stderr
    human = fmt == "human" or (fmt == "auto" and stream.isatty())
    handler: logging.Handler
    if human:
        handler = RichHandler(console=Console(file=stream), show_path=False, rich_tracebacks=False)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(JsonFormatter())
    handler.addFilter(RedactFilter())
    return handler


def setup_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """Install the root handler. Later calls only change the level (one setup per process)."""
    global _configured
    root = logging.getLogger()
    root.setLevel(level.upper())
    if _configured:
        return
    root.handlers[:] = [make_handler(fmt, stream)]
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    _configured = True
