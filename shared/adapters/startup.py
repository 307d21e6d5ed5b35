"""A function's settings checked at its start-up: a configuration error is one CRITICAL line and exit status 1, so it
is found at deploy, not at the first request that reads them (the settings modules beside config.py use it)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from shared.adapters.config import ConfigError

T = TypeVar("T")


def or_exit(load: Callable[[], T]) -> T:
    """`load()`, or, for a ConfigError, its one logged line and SystemExit(1)."""
    try:
        return load()
    except ConfigError as exc:
        logging.getLogger(load.__module__).critical("%s", exc)
        raise SystemExit(1) from None
