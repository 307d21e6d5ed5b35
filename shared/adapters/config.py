"""Configuration: environment variables only, checked once at start-up, into one frozen Settings.

A function that is missing something fails at import with one message naming every missing or malformed variable,
instead of failing on the first event. Secrets (SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, AUDIT_SEAL_KEY) are held out
of repr() so they can't reach a log line by accident."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.adapters.audit import use_seal_key
from shared.adapters.sweep_settings import sweep_policy
from shared.core.identity import identity
from shared.core.machines import DEFAULT_LADDER, memory_kib, vcpus
from shared.core.models import MACHINE_TYPE_RE
from shared.core.policy import PolicyConfig, RestartPolicy
from shared.core.seal import MIN_KEY_CHARS

# Where Slack's response_urls point (api.slack.com/interactivity/handling#message_responses: "https://hooks.slack.com/
# actions/…"; slash commands "https://hooks.slack.com/commands/…"). SLACK_RESPONSE_URL_BASE says otherwise only for
# a local Slack (the simulator's /response/): the one place a response_url may lead.
SLACK_RESPONSE_URL_BASE = "https://hooks.slack.com/"
GOOGLE_CERTS_URL = "https://www.googleapis.com/oauth2/v1/certs"  # google-auth's own for Google-signed ID tokens


class ConfigError(RuntimeError):
    pass


class Need(StrEnum):
    """What a function needs beyond the defaults; each function names its own."""

    PUBLISH = "publish"  # on_oom, slack_app: the restart topic
    WORKBENCH = "workbench"
    SLACK = "slack"  # bot token and alert channel
    SLACK_APP = "slack-app"  # signing secret, organizers, zones
    SCOPE = "scope"  # on_oom, restart_worker: the project and zones whose instances the bot may act on
    PUSH = "push"  # restart_worker: the push's OIDC token, its audience and service account (push_auth.py)


@dataclass(frozen=True)
class SlackBudget:
    """Slack's 3 seconds for the HTTP answer, shared out (seconds; shared/app/slack/budget.py). Production keeps
    the defaults; the local stack's wire tests give generous ones, so that the machine's speed decides nothing."""

    ack: float = 2.5  # everything before the answer; the rest of the 3 s is the way there and back
    reads: float = 1.2  # users.info and instances.list, made at once: past it, acknowledge first (worker answers)
    publish: float = 1.0  # the publish to the restart topic: one attempt, the RPC and the wait for its id
    reply: float = 1.0  # one response_url post before the ack (WebhookClient's own default is 30 s)
    call: int = 1  # the app's WebClient timeout (whole seconds): any other Slack call before the ack
    # The Home tab's one Cloud Monitoring read (memory in use across the fleet), made at once with the reads: past
    # it the tab is published with "memory: unknown" rather than late or with a guessed number.
    memory: float = 1.0
    # The worker, finishing a request acknowledged first: how long a read that failed in a way that may pass
    # (a 503, no answer) is redelivered before the person is told what failed.
    retry: float = 60.0


@dataclass(frozen=True)
class Settings:
    project: str = ""
    restart_topic: str = ""  # full path projects/p/topics/t
    workbench_api_endpoint: str = ""
    compute_api_endpoint: str = ""  # on_oom's and on_memory_alert's VM-id lookup; empty: the live Compute Engine API
    monitoring_api_endpoint: str = ""  # the worker's memory curves (grpc://host:port locally); empty: the live API
    memory_charts: bool = True  # the memory picture in kill alerts, warnings and owners' messages
    slack_bot_token: str = field(default="", repr=False)
    slack_signing_secret: str = field(default="", repr=False)
    audit_seal_key: str = field(default="", repr=False)  # seals the audit records (shared/core/seal.py); '': unsealed
    slack_alert_channel: str = ""
    slack_api_url: str = ""
    slack_response_url_base: str = SLACK_RESPONSE_URL_BASE  # response_urls are used only under it
    push_audience: str = ""  # the restart subscription's OIDC audience (infra: the worker's run.app URL)
    push_service_account: str = ""  # the account Pub/Sub signs the worker's pushes as
    push_certs_url: str = GOOGLE_CERTS_URL  # Google's; the local stack's issuer (simulators/oidc.py) in tests
    schedule_subscription: str = ""  # the one subscription schedule messages are taken from ('': none is)
    organizer_emails: frozenset[str] = frozenset()
    organizer_usergroup: str = ""
    workbench_zones: tuple[str, ...] = ()
    owner_dm: bool = True
    message_language: str = "en"
    display_timezone: str = "UTC"
    console_url: str = "https://console.cloud.google.com"
    worker_budget: timedelta = timedelta(seconds=420)
    stockout_patience: timedelta = timedelta(hours=2)  # a start in a stockout is tried again this long (capacity.py)
    # A restart is reported once it ends; one still running after this long is announced then (updated at its end).
    slow_restart_alert: timedelta = timedelta(seconds=90)
    manual_restart_interval: timedelta = timedelta(seconds=60)
    slack_timeout: timedelta = timedelta(seconds=5)
    workbench_timeout: timedelta = timedelta(seconds=20)
    workbench_retry: timedelta = timedelta(seconds=30)  # how long a transient error is retried within one call
    slack_budget: SlackBudget = field(default_factory=SlackBudget)
    home_fleet_ttl: timedelta = timedelta(seconds=30)  # one read of the fleet serves the Home tab's opens this long
    home_opens_per_minute: int = 6  # a person's Home tab opens a minute (shared/app/slack/fleet_cache.py)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    machine_ladder: tuple[str, ...] = DEFAULT_LADDER
    machine_prices: dict[str, float] = field(default_factory=dict)  # USD per hour, when configured
    resize_suggest_kills: int = 3  # kills in a day that make the alert offer a bigger machine
    # Alerts about input the bot can't act on (alert_groups.py): one message per group per window, then counted.
    alert_group_window: timedelta = timedelta(minutes=5)
    alert_daily_limit: int = 20
    # The contest window (Terraform's contest_start / contest_end, both or neither): stopped inside it needs attention.
    contest_start: datetime | None = None
    contest_end: datetime | None = None

    @property
    def reset_settle(self) -> timedelta:
        """How long after an intent a reset sent under it can still appear in the API's operations: the
        intent's confirmation and the reset's own retries, each call with its timeout, and a margin."""
        return 2 * self.workbench_retry + self.workbench_timeout + timedelta(seconds=5)

    def in_scope(self, project: str, zone: str) -> str:
        """Why an instance in this project and zone is none of the bot's business, or "" when it is."""
        if project != self.project:
            return f"the project {project[:40]!r} is not this bot's ({self.project})"
        if zone not in self.workbench_zones and "-" not in self.workbench_zones:
            return f"the zone {zone[:40]!r} is not one of WORKBENCH_ZONES ({', '.join(self.workbench_zones)})"
        return ""

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.display_timezone)


_EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")
_TOPIC = re.compile(r"^[A-Za-z][\w.~+%-]{2,254}$")
_TOPIC_PATH = re.compile(r"^projects/[^/]+/topics/[A-Za-z][\w.~+%-]{2,254}$")
_CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{6,}$")  # as infra/variables.tf checks slack_alert_channel
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$|^-$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class _Reader:
    """The environment, and every problem found in it so far: all of them are reported at once."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def get(self, name: str, default: str = "", *, required: bool = False) -> str:
        value = self.env.get(name, "").strip()
        if required and not value:
            self.problems.append(f"{name} is required")
        return value or default

    def parse(self, name: str, default: Any, convert: Callable[[str], Any], what: str) -> Any:
        raw = self.env.get(name, "").strip()
        if not raw:
            return default
        try:
            return convert(raw)
        except (ValueError, ZoneInfoNotFoundError):
            self.problems.append(f"{name}={raw[:40]!r} is not {what}")
            return default

    def seconds(self, name: str, default: timedelta) -> timedelta:
        return self.parse(name, default, _seconds, "seconds")  # type: ignore[no-any-return]

    def positive(self, name: str, default: int) -> int:
        return self.parse(name, default, _positive_int, "a positive whole number")  # type: ignore[no-any-return]

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def unless(self, fine: object, problem: str) -> None:
        if not fine:
            self.problem(problem)


def load_settings(needs: Collection[Need], env: Mapping[str, str] | None = None) -> Settings:
    """Read and validate; raise ConfigError listing every problem at once."""
    read = _Reader(os.environ if env is None else env)
    publish, scope, app = Need.PUBLISH in needs, Need.SCOPE in needs, Need.SLACK_APP in needs
    project = read.get("GOOGLE_CLOUD_PROJECT", required=publish or scope)
    settings = Settings(
        project=project,
        restart_topic=_topic(read, project, required=publish),
        **_endpoints(read),
        **_slack(read, required=Need.SLACK in needs or app),
        **_organizers_and_zones(read, app=app, scope=scope),
        **_push(read, required=Need.PUSH in needs),
        **_display(read),
        policy=_policy(read),
        **_machines(read),
        **_timings(read),
        **_contest(read),
        audit_seal_key=read.get("AUDIT_SEAL_KEY"),
    )
    read.unless(not settings.audit_seal_key or len(settings.audit_seal_key) >= MIN_KEY_CHARS,
                f"AUDIT_SEAL_KEY: {MIN_KEY_CHARS} characters at least (openssl rand -hex 32)")
    if read.problems:
        raise ConfigError(
            "notebook-medic cannot start; fix these environment variables: " + "; ".join(read.problems)
        )
    return settings


def _topic(read: _Reader, project: str, *, required: bool) -> str:
    """RESTART_TOPIC as a full path: a bare topic name is taken to be in the project."""
    topic = read.get("RESTART_TOPIC", required=required)
    if topic and not _TOPIC_PATH.fullmatch(topic):
        if _TOPIC.fullmatch(topic) and project:
            topic = f"projects/{project}/topics/{topic}"
        else:
            read.problem(f"RESTART_TOPIC={topic[:60]!r} is not a topic name or path")
    return topic


def _endpoints(read: _Reader) -> dict[str, Any]:
    endpoint = read.get("WORKBENCH_API_ENDPOINT")
    read.unless(not endpoint or re.fullmatch(r"(https?://[\w.-]+(:\d+)?/?|grpc://[\w.-]+:\d+)", endpoint),
                f"WORKBENCH_API_ENDPOINT={endpoint[:60]!r} is neither http(s)://host[:port] nor grpc://host:port")
    compute_endpoint = read.get("COMPUTE_API_ENDPOINT")
    read.unless(not compute_endpoint or re.fullmatch(r"https?://[\w.-]+(:\d+)?/?", compute_endpoint),
                f"COMPUTE_API_ENDPOINT={compute_endpoint[:60]!r} is not http(s)://host[:port]")
    monitoring = read.get("MONITORING_API_ENDPOINT")
    read.unless(not monitoring or re.fullmatch(r"grpc://[\w.-]+:\d+", monitoring),
                f"MONITORING_API_ENDPOINT={monitoring[:60]!r} is not grpc://host:port")
    return {"workbench_api_endpoint": endpoint.rstrip("/"), "compute_api_endpoint": compute_endpoint.rstrip("/"),
            "monitoring_api_endpoint": monitoring}


def _slack(read: _Reader, *, required: bool) -> dict[str, Any]:
    token = read.get("SLACK_BOT_TOKEN", required=required)
    read.unless(not token or token.startswith("xoxb-"), "SLACK_BOT_TOKEN does not look like a bot token (xoxb-...)")
    channel = read.get("SLACK_ALERT_CHANNEL", required=required)
    read.unless(not channel or _CHANNEL_ID.fullmatch(channel),
                f"SLACK_ALERT_CHANNEL={channel[:40]!r} is not a channel ID: Slack's API needs the ID "
                "(C... or G..., at the bottom of the channel's details), not its name")
    api_url = read.get("SLACK_API_URL")
    read.unless(not api_url or re.fullmatch(r"https?://\S+/", api_url),
                f"SLACK_API_URL={api_url[:60]!r} must be a URL ending in /")
    response_base = read.get("SLACK_RESPONSE_URL_BASE", SLACK_RESPONSE_URL_BASE)
    read.unless(re.fullmatch(r"https?://[^/\s@]+/\S*/|https?://[^/\s@]+/", response_base),
                f"SLACK_RESPONSE_URL_BASE={response_base[:60]!r} must be a URL ending in /")
    return {"slack_bot_token": token, "slack_alert_channel": channel, "slack_api_url": api_url,
            "slack_response_url_base": response_base}


def _organizers_and_zones(read: _Reader, *, app: bool, scope: bool) -> dict[str, Any]:
    secret = read.get("SLACK_SIGNING_SECRET", required=app)
    written = [e.strip() for e in read.get("ORGANIZER_EMAILS", required=app).split(",") if e.strip()]
    organizers = frozenset(e for e in map(identity, written) if e)  # compared as identities (shared/core/identity.py)
    bad = sorted(e for e in written if identity(e) is None or not _EMAIL.fullmatch(e))
    # Only slack_app reads them: a typo must not stop on_oom from starting.
    read.unless(not (bad and app), f"ORGANIZER_EMAILS has entries that are not emails: {', '.join(bad)[:80]}")
    zones = tuple(z.strip() for z in read.get("WORKBENCH_ZONES", required=app or scope).split(",") if z.strip())
    bad_zones = [z for z in zones if not _ZONE.fullmatch(z)]
    read.unless(not bad_zones, f"WORKBENCH_ZONES has entries that are not zones: {bad_zones[:3]}")
    return {"slack_signing_secret": secret, "organizer_emails": organizers, "workbench_zones": zones,
            "organizer_usergroup": read.get("ORGANIZER_USERGROUP")}


def _push(read: _Reader, *, required: bool) -> dict[str, Any]:
    """The worker verifies every push's token itself (issue 25): without an audience it would check nothing."""
    account = read.get("PUSH_SERVICE_ACCOUNT", required=required)
    read.unless(not account or _EMAIL.fullmatch(account), f"PUSH_SERVICE_ACCOUNT={account[:60]!r} is not an email")
    return {"push_audience": read.get("PUSH_AUDIENCE", required=required), "push_service_account": account,
            "push_certs_url": read.get("PUSH_CERTS_URL", GOOGLE_CERTS_URL),
            "schedule_subscription": read.get("SCHEDULE_SUBSCRIPTION")}  # issue 44: Cloud Scheduler's alone


def _display(read: _Reader) -> dict[str, Any]:
    language = read.get("MESSAGE_LANGUAGE", "en")
    read.unless(language in ("en", "ja"), f"MESSAGE_LANGUAGE={language[:10]!r} is not en or ja")
    timezone = read.parse("DISPLAY_TIMEZONE", "UTC", _zone, "an IANA time zone (e.g. Asia/Tokyo)")
    return {"message_language": language, "display_timezone": timezone,
            "console_url": read.get("CONSOLE_URL", "https://console.cloud.google.com").rstrip("/")}


def _policy(read: _Reader) -> PolicyConfig:
    return PolicyConfig(
        restart_policy=read.parse("RESTART_POLICY", RestartPolicy.WHEN_UNHEALTHY, RestartPolicy,
                                  "when-unhealthy or always"),
        health_grace=read.seconds("HEALTH_GRACE_SECONDS", timedelta(minutes=3)),
        health_poll=read.seconds("HEALTH_POLL_SECONDS", timedelta(seconds=15)),
        health_settle=read.seconds("HEALTH_SETTLE_SECONDS", timedelta(seconds=10)),
        incident_cooldown=read.seconds("INCIDENT_COOLDOWN_SECONDS", timedelta(minutes=2)),
        backoff_initial=read.seconds("BACKOFF_INITIAL_SECONDS", timedelta(seconds=10)),
        backoff_cap=read.seconds("BACKOFF_CAP_SECONDS", timedelta(minutes=5)),
        crashloop_limit=read.positive("CRASHLOOP_LIMIT", 3),
        crashloop_window=read.seconds("CRASHLOOP_WINDOW_SECONDS", timedelta(hours=1)),
        crashloop_reset_after=read.seconds("CRASHLOOP_RESET_AFTER_SECONDS", timedelta(minutes=10)),
        max_event_age=read.seconds("MAX_EVENT_AGE_SECONDS", timedelta(hours=1)),
        dry_run=read.parse("DRY_RUN", False, _bool, "true or false"),
        memory_warning_quiet=read.seconds("MEMORY_WARNING_QUIET_SECONDS", timedelta(minutes=30)),
        guard_restart_wait=read.seconds("GUARD_RESTART_WAIT_SECONDS", timedelta(seconds=90)),
        **sweep_policy(read),  # the health sweep, its causes, and outages told instead of reset
    )


def _machines(read: _Reader) -> dict[str, Any]:
    ladder = tuple(m.strip() for m in read.get("MACHINE_LADDER").split(",") if m.strip()) or DEFAULT_LADDER
    if any(not MACHINE_TYPE_RE.fullmatch(m) for m in ladder) or len(set(ladder)) != len(ladder):
        read.problem("MACHINE_LADDER must list distinct machine types, smallest first")
    elif unknown := [m for m in ladder if memory_kib(m) is None or vcpus(m) is None]:
        # A rung whose size is unknown could never be shown to be bigger: it would silently never be offered.
        read.problem(f"MACHINE_LADDER: the memory or vCPUs of {', '.join(unknown)} are unknown to "
                    "notebook-medic (shared/core/machines.py); use known or custom-CPUS-MIB types")
    prices = read.parse("MACHINE_PRICES", {}, _prices, "type=USD_per_hour pairs, comma-separated")
    return {"machine_ladder": ladder, "machine_prices": prices}


def _timings(read: _Reader) -> dict[str, Any]:
    """The worker's, Slack's and the APIs' times, and the alert limits (with OWNER_DM, read here in its turn)."""
    return {
        "owner_dm": read.parse("OWNER_DM", True, _bool, "true or false"),
        "memory_charts": read.parse("MEMORY_CHARTS", True, _bool, "true or false"),
        "worker_budget": read.seconds("WORKER_BUDGET_SECONDS", timedelta(seconds=420)),
        "stockout_patience": read.seconds("STOCKOUT_PATIENCE_SECONDS", timedelta(hours=2)),
        "slow_restart_alert": read.seconds("SLOW_RESTART_ALERT_SECONDS", timedelta(seconds=90)),
        "manual_restart_interval": read.seconds("MANUAL_RESTART_INTERVAL_SECONDS", timedelta(seconds=60)),
        "slack_timeout": read.seconds("SLACK_TIMEOUT_SECONDS", timedelta(seconds=5)),
        "workbench_timeout": read.seconds("WORKBENCH_TIMEOUT_SECONDS", timedelta(seconds=20)),
        "workbench_retry": read.seconds("WORKBENCH_RETRY_SECONDS", timedelta(seconds=30)),
        "slack_budget": SlackBudget(
            ack=read.seconds("SLACK_ACK_BUDGET_SECONDS", timedelta(seconds=2.5)).total_seconds(),
            reads=read.seconds("SLACK_READS_SECONDS", timedelta(seconds=1.2)).total_seconds(),
            publish=read.seconds("SLACK_PUBLISH_SECONDS", timedelta(seconds=1.0)).total_seconds(),
            reply=read.seconds("SLACK_REPLY_SECONDS", timedelta(seconds=1.0)).total_seconds(),
            call=read.positive("SLACK_APP_CALL_SECONDS", 1),
            memory=read.seconds("HOME_MEMORY_SECONDS", timedelta(seconds=1.0)).total_seconds(),
            retry=read.seconds("SLACK_ANSWER_RETRY_SECONDS", timedelta(seconds=60)).total_seconds(),
        ),
        "home_fleet_ttl": read.seconds("HOME_FLEET_TTL_SECONDS", timedelta(seconds=30)),
        "home_opens_per_minute": read.positive("HOME_OPENS_PER_MINUTE", 6),
        "resize_suggest_kills": read.positive("RESIZE_SUGGEST_KILLS", 3),
        "alert_group_window": read.seconds("ALERT_GROUP_WINDOW_SECONDS", timedelta(minutes=5)),
        "alert_daily_limit": read.positive("ALERT_DAILY_LIMIT", 20),
    }


def _contest(read: _Reader) -> dict[str, Any]:
    """CONTEST_START / CONTEST_END as Terraform's contest variables write them (RFC 3339 with a zone)."""
    start = read.parse("CONTEST_START", None, _moment, "an RFC 3339 time with a zone (e.g. 2026-12-01T09:00:00Z)")
    end = read.parse("CONTEST_END", None, _moment, "an RFC 3339 time with a zone (e.g. 2026-12-01T18:00:00Z)")
    read.unless(start is None or end is None or start < end, "CONTEST_START must be before CONTEST_END")
    return {"contest_start": start, "contest_end": end}


def settings_or_exit(needs: Collection[Need]) -> Settings:
    """load_settings for a function's start-up: a configuration error is one logged line and exit status 1,
    not a traceback through functions-framework's import machinery that hides the one line that matters."""
    try:
        settings = load_settings(needs)
    except ConfigError as exc:
        logging.getLogger(__name__).critical("%s", exc)
        raise SystemExit(1) from None
    use_seal_key(settings.audit_seal_key)  # every function's audit records sealed from its start
    return settings


def _seconds(raw: str) -> timedelta:
    value = float(raw)
    if not 0 <= value <= 7 * 24 * 3600:
        raise ValueError(raw)
    return timedelta(seconds=value)


def _positive_int(raw: str) -> int:
    if (value := int(raw)) < 1:
        raise ValueError(raw)
    return value


def _prices(raw: str) -> dict[str, float]:
    prices: dict[str, float] = {}
    for pair in raw.split(","):
        machine, _, price = pair.strip().partition("=")
        if not MACHINE_TYPE_RE.fullmatch(machine.strip()) or float(price) < 0:
            raise ValueError(pair)
        prices[machine.strip()] = float(price)
    return prices


def _bool(raw: str) -> bool:
    if raw.lower() not in _TRUE | _FALSE:
        raise ValueError(raw)
    return raw.lower() in _TRUE


def _moment(raw: str) -> datetime:
    moment = datetime.fromisoformat(raw)
    if moment.tzinfo is None:
        raise ValueError(raw)
    return moment


def _zone(raw: str) -> str:
    ZoneInfo(raw)
    return raw
