"""Where the report reads from, apart from the command line so that --local's simulated source can build one too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.adapters.slack_notify import SlackNotifier
from shared.core.report import Notebook
from tools.doctor.deployment import FUNCTION_SUFFIX

DEFAULT_PREFIX = "notebook-medic"
AUDITED = tuple(FUNCTION_SUFFIX.values())  # every function writes audit lines


@dataclass(frozen=True)
class Source:
    """Where the entries, the fleet and the prices come from."""

    project: str
    client: Any
    services: tuple[str, ...]
    fleet: Mapping[str, Notebook]
    prices: Mapping[str, float]
    slack: SlackNotifier | None = None  # --post: where the message goes, and its channel
    channel: str = ""
    seal_key: bytes = field(default=b"", repr=False)  # AUDIT_SEAL_KEY: only records it seals count (b"": none)
