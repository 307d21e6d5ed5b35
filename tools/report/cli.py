"""The report's command line: read the audit entries, the fleet and the prices; print the table, write the CSV,
and with --post send the message and the CSV to the organizers' channel.

Settings come from the functions' environment variables where they apply (GOOGLE_CLOUD_PROJECT, WORKBENCH_ZONES,
MACHINE_PRICES, MESSAGE_LANGUAGE, SLACK_BOT_TOKEN, SLACK_ALERT_CHANNEL, and AUDIT_SEAL_KEY, without which no record
counts: `AUDIT_SEAL_KEY=$(gcloud secrets versions access latest --secret notebook-medic-audit-seal-key)`), each
overridable by a flag; `--local`
answers from simulators.logging_api seeded with simulators.audit_day's contest day instead.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from shared.adapters.audit_log import make_client, read_audit
from shared.adapters.config import Settings, load_settings
from shared.adapters.slack_notify import SlackNotifier
from shared.core import messages
from shared.core.report import Notebook, Report, build, to_csv, to_table
from shared.core.report_message import slack_text
from shared.core.ticket_report import TicketStats, ticket_lines, ticket_stats
from tools.report.source import AUDITED, DEFAULT_PREFIX, Source


def _time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make report ARGS=", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", default=os.environ.get("GOOGLE_CLOUD_PROJECT", ""))
    parser.add_argument("--zones", default=os.environ.get("WORKBENCH_ZONES", ""),
                        help="comma-separated: where the fleet (owners, machine types) is listed")
    parser.add_argument("--prefix", default=DEFAULT_PREFIX, help="infra's name_prefix: names the functions")
    parser.add_argument("--since", type=_time, help="ISO 8601, UTC unless a zone is given (default: until - 24 h)")
    parser.add_argument("--until", type=_time, help="ISO 8601 (default: now)")
    parser.add_argument("--csv", type=Path, help="where the CSV goes (default: notebook-medic-report-<since>.csv)")
    parser.add_argument("--post", action="store_true",
                        help="send the message with the CSV to the organizers' channel (SLACK_BOT_TOKEN, "
                        "SLACK_ALERT_CHANNEL; bot scope files:write)")
    parser.add_argument("--lang", choices=("en", "ja"), help="the message's language (default: MESSAGE_LANGUAGE)")
    parser.add_argument("--local", action="store_true",
                        help="a seeded contest day on the local Logging stand-in (no Google account needed)")
    parser.add_argument("--notebooks", type=int, default=40, help="--local: the day's notebooks")
    parser.add_argument("--forged", type=int, default=0,
                        help="--local: also that many entries a participant wrote in the bot's words (none counts)")
    args = parser.parse_args(argv)
    if not args.local and not args.project:
        parser.error("--project (or GOOGLE_CLOUD_PROJECT) is required, or --local")
    if args.notebooks < 2:
        parser.error("--notebooks: at least 2 (the local day's gaps need two kills)")
    return args


@contextlib.contextmanager
def _cloud(args: argparse.Namespace, settings: Settings) -> Iterator[tuple[Source, None]]:
    """The deployment: Logging and Workbench with Application Default Credentials; Slack with the bot's token."""
    from shared.adapters.workbench import Workbench  # noqa: PLC0415 - only a real deployment lists its fleet

    zones = tuple(zone.strip() for zone in args.zones.split(",") if zone.strip())
    views = Workbench().list(args.project, zones) if zones else []
    fleet = {view.ref.name: Notebook(view.owner_email or "", view.machine_type) for view in views}
    services = tuple(f"{args.prefix}-{suffix}" for suffix in AUDITED)
    slack = SlackNotifier(token=settings.slack_bot_token, base_url=settings.slack_api_url) if args.post else None
    yield Source(args.project, make_client(args.project), services, fleet, settings.machine_prices, slack,
                 settings.slack_alert_channel, settings.audit_seal_key.encode()), None


def window(args: argparse.Namespace, now: datetime, day: tuple[datetime, datetime] | None) -> tuple[datetime, datetime]:
    """--since/--until; what is missing from the local day's own window, else the 24 hours before now."""
    if day is not None:
        return args.since or day[0], args.until or day[1]
    until = args.until or now
    return args.since or until - timedelta(hours=24), until


def run(source: Source, since: datetime, until: datetime) -> Report:
    return run_with_tickets(source, since, until)[0]


def run_with_tickets(source: Source, since: datetime, until: datetime) -> tuple[Report, TicketStats]:
    """The report and the help tickets' numbers (issue 46), from one read of the audit records."""
    records = list(read_audit(source.client, source.project, source.services, since, until))
    report = build(records, since=since, until=until, seal_key=source.seal_key, fleet=source.fleet,
                   prices=source.prices)
    return report, ticket_stats(records, since=since, until=until, seal_key=source.seal_key)


def main(argv: list[str] | None = None, out: Any = None) -> int:
    out = out or sys.stdout
    args = parse_args(argv)
    settings = load_settings((), os.environ)
    if not args.local and not settings.audit_seal_key:
        print("AUDIT_SEAL_KEY is needed: only the records the functions sealed with it count (docs/security.md); "
              "AUDIT_SEAL_KEY=$(gcloud secrets versions access latest --secret <prefix>-audit-seal-key)", file=out)
        return 2
    say = messages.For(args.lang or settings.message_language)
    context: contextlib.AbstractContextManager[tuple[Source, tuple[datetime, datetime] | None]]
    if args.local:
        from tools.report.local import local_source  # noqa: PLC0415 - the simulators, only for --local

        context = local_source(args.notebooks, post=args.post, forged=args.forged)
    else:
        context = _cloud(args, settings)
    with context as (source, day):
        since, until = window(args, datetime.now(UTC), day)
        report, tickets = run_with_tickets(source, since, until)
        path = args.csv or Path(f"notebook-medic-report-{since:%Y%m%dT%H%M}.csv")
        path.write_text(to_csv(report))
        print(to_table(report), file=out)
        text = "\n".join([slack_text(report, say, path.name), *ticket_lines(tickets, say)])
        print(f"\n{text}\n\nCSV: {path.resolve()}", file=out)
        if args.post:
            from tools.report.post import post  # noqa: PLC0415 - only when asked

            if source.slack is None or not source.channel:
                print("--post: SLACK_BOT_TOKEN and SLACK_ALERT_CHANNEL are needed", file=out)
                return 2
            print(post(source.slack, source.channel, text, path, say), file=out)
    return 0
