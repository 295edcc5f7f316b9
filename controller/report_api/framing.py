"""The report API's door: the HTTP/1.1 framing rules a request must keep before it is routed.

`http.server` parses header lines with the e-mail parser, which is lenient where RFC 9112 is
strict, and the leniencies are the request-smuggling patterns: it splits a line at a bare CR
(so `X: a<CR>Content-Length: 5` becomes two fields), unfolds continuation lines, keeps two
`Content-Length` fields that disagree and hands on a `Content-Length` of non-ASCII digits
(`"\\xb2".isdigit()` is true). A proxy in front may frame such a request differently from us;
every such request is refused with 400 and its connection closed. The raw header lines are kept
while the standard library reads them, so that the checks see the bytes that were sent.
"""

from __future__ import annotations

import re
from email.message import Message
from typing import BinaryIO

__all__ = ["HeaderLines", "framing_problem"]

# RFC 9110 section 5.1 and 5.5: a token, a colon, then visible characters, spaces and tabs.
_FIELD_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(rb"[\t\x20-\x7e\x80-\xff]*")
_DIGITS = re.compile(r"[0-9]+")


class HeaderLines:
    """Reads through to the request's stream, keeping the lines read (the header section)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.lines: list[bytes] = []

    def readline(self, limit: int = -1) -> bytes:
        line = self._stream.readline(limit)
        self.lines.append(line)
        return line


def framing_problem(lines: list[bytes], headers: Message) -> str | None:
    """Why this header section breaks RFC 9112's framing rules, or None if it keeps them."""
    for number, line in enumerate(lines, start=1):
        field = line.removesuffix(b"\n").removesuffix(b"\r")
        if not field:
            break  # the empty line that ends the header section
        problem = _line_problem(field, number)
        if problem is not None:
            return problem
    lengths = {value.strip(" \t") for value in headers.get_all("Content-Length") or []}
    for length in lengths:
        if not _DIGITS.fullmatch(length):
            return f"Content-Length {length!r} is not a byte count in ASCII digits"
    if len(lengths) > 1:
        shown = " and ".join(sorted(lengths))
        return f"Content-Length fields disagree ({shown}): the body's end is ambiguous"
    return None


def _line_problem(field: bytes, number: int) -> str | None:
    if field[:1] in (b" ", b"\t"):
        return f"header line {number} is folded onto the one before (obsolete: RFC 9112 5.2)"
    name, colon, value = field.partition(b":")
    if not colon or not _FIELD_NAME.fullmatch(name):
        return f"header line {number} is not `name: value` with a token name (RFC 9112 5.1)"
    shown = name.decode("ascii")
    if b"\r" in value:
        return f"header {shown} holds a CR that does not end the line (RFC 9112 2.2)"
    if not _FIELD_VALUE.fullmatch(value):
        return f"header {shown} holds a control character (RFC 9110 5.5)"
    return None
