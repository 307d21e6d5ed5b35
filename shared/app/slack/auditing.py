"""The audit line of a Slack request, so that every decision the command and the buttons make is on record alike."""

from __future__ import annotations

from typing import Any

from shared.adapters.audit import audit


def audit_request(message: str, fields: dict[str, Any], **extra: Any) -> None:
    """One audit line under the command's name, so a day's report finds every Slack decision by one prefix."""
    audit(f"/restart-notebook: {message}", trigger="slack", **fields, **extra)
