"""Import baseline: a functions-framework function that imports every SDK the functions use, eagerly."""

from __future__ import annotations

import functions_framework
import slack_bolt  # noqa: F401
import slack_sdk  # noqa: F401
from google.cloud import notebooks_v2, pubsub_v1  # type: ignore[attr-defined]  # noqa: F401
from google.cloud.logging_v2 import handlers  # noqa: F401


@functions_framework.http
def eager(request: object) -> tuple[str, int]:
    return ("", 204)
