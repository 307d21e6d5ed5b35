"""Text from outside (a VM's guest attributes, an audit entry's names) made safe to print on a terminal.

A participant is root in their VM and writes whatever bytes they like into the values an organizer's terminal shows
(`make doctor`'s guard lines, `make report`'s table): an ESC sequence moves the cursor and rubs out other lines, a
carriage return overwrites the line it is on, a bidirectional override reverses what follows. Every such character
(Unicode's control, format, surrogate, private-use and unassigned categories, and the line and paragraph
separators) is written as its Python escape instead, so the text says what it holds and nothing else; printable
characters, of any script, pass as they are.
"""

from __future__ import annotations

import unicodedata

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _shown(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` with every character that could steer a terminal written as its escape (\\x1b, \\u202e, ...)."""
    if text.isprintable():
        return text
    return "".join(_shown(char) for char in text)
