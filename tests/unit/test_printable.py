"""shared/core/printable.py: what a terminal would obey becomes its escape; text of any script stays as it is."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from shared.core.printable import printable

HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def test_controls_formats_and_separators_become_escapes() -> None:
    assert printable("a\x1b[2Kb\rc\nd\x00\x7f\x9b") == "a\\x1b[2Kb\\x0dc\\x0ad\\x00\\x7f\\x9b"
    assert printable("x\u202ey\u2066\u2028\U000e0001") == "x\\u202ey\\u2066\\u2028\\U000e0001"


def test_printable_text_of_any_script_is_left_alone() -> None:
    for text in ("nb-01", "山田 太郎", "ålice@example.com", "a b\u00a0c", "✓ ⚠ ✗", ""):
        assert printable(text) == text


@given(st.text())
def test_nothing_hidden_is_left_and_every_visible_character_is_kept_in_order(text: str) -> None:
    shown = printable(text)
    assert not [c for c in shown if unicodedata.category(c) in HIDDEN], shown
    rest = iter(shown)
    assert all(c in rest for c in text if unicodedata.category(c) not in HIDDEN)
