"""The "Get help" shortcut (issue 46): manifest.yaml must declare the global shortcut whose callback_id the Slack app
serves (shared/core/tickets.SHORTCUT). Slack tells a bot token nothing of an installed app's shortcuts (auth.test's
x-oauth-scopes names scopes only, which the scopes check reads), so this checks the manifest the app is made from,
and its fix says how to bring Slack's configuration in line."""

from __future__ import annotations

from typing import Any

import yaml

from shared.core.tickets import SHORTCUT
from tools.doctor.deployment import ROOT
from tools.doctor.model import CheckResult, fail, ok
from tools.doctor.verdicts import SLACK_APPS


def declared_shortcuts(manifest: dict[str, Any]) -> dict[str, str]:
    """callback_id -> type of each shortcut manifest.yaml declares (features.shortcuts)."""
    listed = (manifest.get("features") or {}).get("shortcuts") or []
    return {str(s.get("callback_id", "")): str(s.get("type", "")) for s in listed if isinstance(s, dict)}


def shortcut_check(manifest: dict[str, Any] | None = None) -> CheckResult:
    """✓ when manifest.yaml declares the global Get help shortcut, ✗ saying what is missing."""
    manifest = manifest if manifest is not None else yaml.safe_load((ROOT / "manifest.yaml").read_text())
    if declared_shortcuts(manifest).get(SHORTCUT) != "global":
        return fail("slack.shortcut", f"manifest.yaml has no global shortcut {SHORTCUT} (\"Get help\"): "
                    "participants cannot ask for help from the shortcuts menu",
                    f"declare it in manifest.yaml (features.shortcuts: type global, callback_id {SHORTCUT}), then "
                    f"update the app from it ({SLACK_APPS} -> your app -> App Manifest) and reinstall it")
    return ok("slack.shortcut", f"manifest.yaml declares the global Get help shortcut ({SHORTCUT}); Slack shows it "
              "once the app is updated from the manifest")
