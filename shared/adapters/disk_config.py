"""A bigger disk's settings (issue 43, part 3), read from the environment beside config.py's: the largest disk the bot
asks for, how many asks a notebook may make a day, the disks' prices, and how long the grown filesystem is waited
for (docs/configuration.md). The worker reads them
(shared/app/worker/disks.py); a bad value stops it as config.py's do."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from shared.adapters.config import ConfigError, _Reader
from shared.adapters.startup import or_exit
from shared.core.disk_asks import API_MAX_GB, DISK_TYPES


@dataclass(frozen=True)
class DiskAskSettings:
    max_gb: int = 500  # MAX_DISK_GB: the largest size an ask proposes (a disk at it or above is not asked for)
    per_day: int = 2  # DISK_ASKS_PER_DAY: asks one notebook may make in any 24 hours
    # WORKBENCH_REST_ENDPOINT: where resizeDisk is sent when WORKBENCH_API_ENDPOINT is a local simulator's grpc://
    # (the gRPC face has no such method: disk_resize.py); "": WORKBENCH_API_ENDPOINT itself (live: the REST API)
    rest_endpoint: str = ""
    # DISK_PRICES: USD per provisioned GB a month by disk type (pd-standard, pd-balanced, pd-ssd, pd-extreme), as
    # MACHINE_PRICES prices machines: none by default (prices differ by region; disk_asks.PRICE_SOURCE)
    prices: dict[str, float] = field(default_factory=dict)
    # DISK_GROWTH_WAIT_SECONDS: how long after a resize the guard's disk report is waited for to show the grown
    # filesystem before both are told it did not grow (the report is written every 10 minutes)
    growth_wait: timedelta = timedelta(minutes=30)


def load_disk_settings(env: Mapping[str, str] | None = None) -> DiskAskSettings:
    """The disk asks' settings; ConfigError naming every bad one."""
    read = _Reader(os.environ if env is None else env)
    rest = read.get("WORKBENCH_REST_ENDPOINT")
    read.unless(not rest or re.fullmatch(r"https?://[\w.-]+(:\d+)?/?", rest),
                f"WORKBENCH_REST_ENDPOINT={rest[:60]!r} is not http(s)://host[:port]")
    settings = DiskAskSettings(max_gb=read.positive("MAX_DISK_GB", 500), per_day=read.positive("DISK_ASKS_PER_DAY", 2),
                               rest_endpoint=rest,
                               prices=read.parse("DISK_PRICES", {}, _prices, "disk-type=USD_per_GB_month pairs, "
                                                 f"comma-separated, the types among {', '.join(DISK_TYPES)}"),
                               growth_wait=read.seconds("DISK_GROWTH_WAIT_SECONDS", timedelta(minutes=30)))
    read.unless(settings.max_gb <= API_MAX_GB, f"MAX_DISK_GB={settings.max_gb} is above resizeDisk's {API_MAX_GB}")
    if read.problems:
        raise ConfigError("notebook-medic cannot start; fix these environment variables: " + "; ".join(read.problems))
    return settings


def disk_settings_or_exit() -> DiskAskSettings:
    """load_disk_settings for restart_worker's start-up, as config.settings_or_exit: one CRITICAL line and exit
    status 1 for a bad value, so it is found at deploy, not at the first ask."""
    return or_exit(load_disk_settings)


def _prices(raw: str) -> dict[str, float]:
    """`pd-balanced=0.1,pd-ssd=0.17`: a known disk type each, a price not below zero."""
    prices: dict[str, float] = {}
    for pair in raw.split(","):
        kind, _, price = (part.strip() for part in pair.partition("="))
        if kind not in DISK_TYPES or float(price) < 0:
            raise ValueError(pair)
        prices[kind] = float(price)
    return prices
