"""make doctor's look at the Get help shortcut (tools/doctor/shortcuts.py): the manifest the app is made from declares
the global shortcut whose callback_id the Slack app serves; a manifest without it, or with it as a message shortcut,
fails with the fix."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from shared.core.tickets import SHORTCUT
from tools.doctor.deployment import ROOT
from tools.doctor.shortcuts import shortcut_check

MANIFEST: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yaml").read_text())


def test_the_manifest_declares_the_shortcut_the_app_serves() -> None:
    assert shortcut_check().status == "ok"


def test_a_manifest_without_it_or_with_another_kind_fails_with_the_fix() -> None:
    gone = copy.deepcopy(MANIFEST)
    del gone["features"]["shortcuts"]
    message = copy.deepcopy(MANIFEST)
    message["features"]["shortcuts"][0]["type"] = "message"
    for manifest in (gone, message):
        result = shortcut_check(manifest)
        assert result.status == "fail" and SHORTCUT in result.fix and "App Manifest" in result.fix
