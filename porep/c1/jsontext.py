"""Vectorised facts about JSON text without parsing it: where strings are, how deep it nests, its whitespace.

The C1 codec needs these at 40 MB sizes before (or instead of) ``json.loads``: the nesting depth, so that a
hostile document is refused before the recursive parser sees it, and the document without insignificant
whitespace, so that a pretty-printed C1 still takes the fast byte-template path. Escapes are honoured
(a quote after an odd run of backslashes does not end a string). Everything works in chunks, so memory
stays a small multiple of the input.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CHUNK = 4 << 20
MAX_NESTING = 127  # serde_json refuses the 128th level (remaining_depth starts at 128)

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[0x09, 0x0A, 0x0D, 0x20]] = True
# Bytes that may end one bare token (number, true/false/null) and start the next: whitespace between two of
# them separates tokens, so removing it would change the document ("1 2" is not "12").
_TOKEN = np.zeros(256, dtype=bool)
_TOKEN[list(b"0123456789+-.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")] = True


def _string_chunks(buf: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(chunk, in_string) per chunk; ``in_string`` covers string contents and their delimiting quotes."""
    parity = 0  # 1 while inside a string at the chunk boundary
    carry = 0  # backslashes ending the previous chunk
    for s in range(0, buf.size, CHUNK):
        c = buf[s : s + CHUNK]
        n = c.size
        bs = c == 92
        if carry == 0 and not bs.any():  # the common case: no escapes, every quote delimits
            delim = c == 34
        else:
            idx = np.arange(n, dtype=np.int64)
            last = np.maximum.accumulate(np.where(bs, -1 - carry, idx))  # last non-backslash at or before i
            before = np.empty(n, dtype=np.int64)  # backslashes directly before i
            before[0] = carry
            before[1:] = idx[1:] - 1 - last[:-1]
            delim = (c == 34) & ((before & 1) == 0)
            carry = int(n - 1 - last[-1])
        count = np.cumsum(delim, dtype=np.int32) + np.int32(parity)
        in_string = ((count & 1) == 1) | delim
        parity = int(count[-1] & 1)
        yield c, in_string


def nesting(data: bytes | np.ndarray) -> int:
    """Deepest ``[`` / ``{`` nesting outside strings (of well-formed text; garbage gets some number)."""
    buf = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
    depth = best = 0
    for c, in_string in _string_chunks(buf):
        step = ((c == ord("[")) | (c == ord("{"))).astype(np.int32) - ((c == ord("]")) | (c == ord("}")))
        step[in_string] = 0
        run = np.cumsum(step, dtype=np.int64) + depth
        best = max(best, int(run.max()))
        depth = int(run[-1])
    return best


def strip_whitespace(buf: np.ndarray) -> np.ndarray | None:
    """``buf`` without the whitespace outside strings, or None where removing it would join two tokens.

    The result has the same JSON meaning as the input (or is as invalid as it was)."""
    parts = []
    prev_token = False  # the last kept byte can end a bare token
    gap = False  # whitespace was removed after the last kept byte
    for c, in_string in _string_chunks(buf):
        removed = _WHITESPACE[c] & ~in_string
        if not removed.any():
            parts.append(c)
            gap = False
            prev_token = bool(_TOKEN[c[-1]] and not in_string[-1])
            continue
        keep = ~removed
        pos = np.flatnonzero(keep)
        if pos.size == 0:
            gap = True
            continue
        kept = c[pos]
        gaps = np.empty(pos.size, dtype=bool)
        gaps[0] = gap or pos[0] > 0
        gaps[1:] = np.diff(pos) > 1
        token = _TOKEN[kept] & ~in_string[pos]
        prev = np.empty(pos.size, dtype=bool)
        prev[0] = prev_token
        prev[1:] = token[:-1]
        if (gaps & token & prev).any():
            return None
        prev_token = bool(token[-1])
        gap = bool(pos[-1] < c.size - 1)
        parts.append(kept)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)
