"""Help tickets' settings (shared/adapters/ticket_config.py): the defaults docs/configuration.md states, each one
read, and a bad one refused with its name (restart_worker stops at start-up with one line)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.adapters.config import ConfigError
from shared.adapters.ticket_config import load_ticket_settings, ticket_settings_or_exit
from shared.core.tickets import Timers


def test_the_defaults_and_each_setting_read() -> None:
    assert load_ticket_settings({}).per_hour == 3 and load_ticket_settings({}).timers == Timers()
    read = load_ticket_settings({"TICKETS_PER_HOUR": "5", "TICKET_REPOST_SECONDS": "60",
                                 "TICKET_ESCALATE_SECONDS": "120", "TICKET_REMIND_SECONDS": "900",
                                 "TICKET_ESCALATE_TO": "C0ESCALATE"})
    assert (read.per_hour, read.escalate_to) == (5, "C0ESCALATE")
    assert read.timers == Timers(timedelta(seconds=60), timedelta(seconds=120), timedelta(seconds=900))


def test_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigError, match="TICKET_ESCALATE_TO") as raised:
        load_ticket_settings({"TICKET_ESCALATE_TO": "#help", "TICKETS_PER_HOUR": "0"})
    assert "TICKETS_PER_HOUR" in str(raised.value)
    monkeypatch.setenv("TICKETS_PER_HOUR", "many")
    with pytest.raises(SystemExit):
        ticket_settings_or_exit()
    assert "TICKETS_PER_HOUR" in caplog.text
