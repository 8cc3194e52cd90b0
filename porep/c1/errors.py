"""The one exception a malformed C1 raises."""

from __future__ import annotations


class C1FormatError(ValueError):
    """A C1 document (or model) is malformed, out of range, or not in a byte-exact canonical encoding.

    ``path`` is the JSON path of the offending value (``vanilla_proofs.StackedDrg2KiBV1[0][1].….rows[1]``)
    where one is known, ``offset`` the byte offset in the input where one is known. The message starts
    with the path, so ``str(err)`` alone says where and what.
    """

    def __init__(self, message: str, *, path: str | None = None, offset: int | None = None):
        self.path = path
        self.offset = offset
        self.reason = message
        where = path if path else "<document>"
        at = f" (byte {offset})" if offset is not None else ""
        super().__init__(f"{where}{at}: {message}")
