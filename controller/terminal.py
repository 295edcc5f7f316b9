"""Text from a server as a terminal may show it. A name, a message, a version or a Status is the
server's to choose: printed raw, an escape sequence in it could clear the screen, move the
cursor or recolour what follows, and a line break or a carriage return could forge a line of
the command's own (a ✔ nobody checked). Every string from a server goes through `escaped` on
its way to a terminal; JSON and YAML outputs escape them already."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["escaped"]

_HOSTILE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL and C1: ESC, CSI, CR, LF, backspace, ...
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional controls reorder a line
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff]"  # lone surrogates (JSON can carry them; no terminal encoding can)
)


def escaped(text: object) -> str:
    """`text` with each control character written out (`\\x1b`, `\\u202e`), never sent raw."""
    shown = str(text)
    if shown.isascii() and shown.isprintable():  # nearly every string: no search needed
        return shown
    return _HOSTILE.sub(_written_out, shown)


def _written_out(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
