"""Import baseline: a functions-framework function that imports nothing else."""

from __future__ import annotations

import functions_framework


@functions_framework.http
def bare(request: object) -> tuple[str, int]:
    return ("", 204)
