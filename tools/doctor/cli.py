"""The command line: settings from flags or the functions' own environment variables, a progress line on
stderr while the reads run, one line per check on stdout (or JSON), exit 1 on any ✗."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from shared.core.machines import DEFAULT_LADDER
from tools.doctor.bigquery import ContestData, contest_data, contest_from_tfvars, contest_lines
from tools.doctor.checks import run_checks
from tools.doctor.deployment import Deployment, Endpoints, Names, packaged_sources
from tools.doctor.gather import read_all
from tools.doctor.model import CheckResult, Status
from tools.doctor.preflight import ContestPlan, check_plan, plan_from, read_plan
from tools.doctor.readers import CALLER_PERMISSIONS


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(
        prog="python -m tools.doctor",
        description="Check a notebook-medic deployment against everything the bot assumes (read-only unless "
                    "--probe). Defaults come from the functions' environment variables.")
    parser.add_argument("--project", default=env.get("GOOGLE_CLOUD_PROJECT", ""))
    parser.add_argument("--zones", default=env.get("WORKBENCH_ZONES", ""), help="comma-separated")
    parser.add_argument("--region", default=env.get("FUNCTION_REGION", "us-central1"),
                        help="the functions' region (Terraform variable region)")
    parser.add_argument("--name-prefix", default="", help="Terraform variable name_prefix; wins over RESTART_TOPIC "
                        "(default: from RESTART_TOPIC, a topic id or projects/P/topics/ID, else notebook-medic)")
    parser.add_argument("--channel", default=env.get("SLACK_ALERT_CHANNEL", ""))
    parser.add_argument("--organizers", default=env.get("ORGANIZER_EMAILS", ""), help="comma-separated emails")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout, for CI")
    parser.add_argument("--probe", metavar="INSTANCE", help="also write and remove a test label on this "
                        "instance (NAME or projects/P/locations/ZONE/instances/NAME) and read its operations")
    parser.add_argument("--local", action="store_true", help="start the local stack and check it")
    parser.add_argument("--fleet", type=int, default=50, help="--local: how many notebooks to seed")
    parser.add_argument("--contest", metavar="TFVARS", type=Path, help="infra/contest/terraform.tfvars: also "
                        "check the contest's BigQuery datasets (who could read the test labels)")
    parser.add_argument("--preflight", action="store_true", help="before terraform apply of the contest: check "
                        "the --contest inputs (Slack members, network path, names, APIs, quotas) and nothing else")
    return parser.parse_args(argv)


def prefix_of(restart_topic: str) -> str:
    """name_prefix from RESTART_TOPIC in either form the functions read (config.py: a bare id is in the project)."""
    match = re.fullmatch(r"(?:projects/[^/]+/topics/)?([^/]+)-restart", restart_topic.strip())
    return match.group(1) if match else "notebook-medic"


def deployment_from(args: argparse.Namespace, env: Mapping[str, str]) -> Deployment:
    prefix = args.name_prefix or prefix_of(env.get("RESTART_TOPIC", ""))
    return Deployment(
        names=Names.for_prefix(args.project, args.region, prefix),
        zones=tuple(z.strip() for z in args.zones.split(",") if z.strip()),
        alert_channel=args.channel,
        organizer_emails=frozenset(e.strip().lower() for e in args.organizers.split(",") if e.strip()),
        organizer_usergroup=env.get("ORGANIZER_USERGROUP", "").strip(),
        bot_token=env.get("SLACK_BOT_TOKEN", ""),
        signing_secret=env.get("SLACK_SIGNING_SECRET", ""),
        endpoints=Endpoints(workbench=env.get("WORKBENCH_API_ENDPOINT", ""),
                            slack_api_url=env.get("SLACK_API_URL", ""), compute=env.get("COMPUTE_API_ENDPOINT", "")),
        packaged=packaged_sources(),
    )


class Progress:
    """One line on stderr, rewritten in place on a terminal (a line per read otherwise, e.g. in CI logs)."""

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.stream, self.quiet = stream, quiet
        self.tty = stream.isatty()
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, label: str) -> None:
        if self.quiet:
            return
        with self._lock:
            self.count += 1
            text = f"doctor: {self.count} reads done ({label[:50]})"
            self.stream.write(f"\r\x1b[K{text}" if self.tty else f"{text}\n")
            self.stream.flush()

    def done(self) -> None:
        if self.tty and not self.quiet:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def report(results: list[CheckResult], seconds: float, as_json: bool) -> str:
    counts = {status: sum(1 for r in results if r.status is status) for status in Status}
    if as_json:
        return json.dumps({"ok": counts[Status.FAIL] == 0, "seconds": round(seconds, 2),
                           "counts": {s.value: n for s, n in counts.items()},
                           "checks": [r.as_json() for r in results]}, indent=2, ensure_ascii=False)
    lines = [r.line() for r in results]
    lines.append(f"\n{counts[Status.OK]} ✓  {counts[Status.WARN]} ⚠  {counts[Status.FAIL]} ✗   ({seconds:.1f} s)")
    return "\n".join(lines)


def diagnose(dep: Deployment, progress: Progress, probe: str | None = None,
             now: datetime | None = None, contest: ContestData | None = None) -> list[CheckResult]:
    seen = read_all(dep, progress, now=now)
    results = run_checks(dep, seen, now or datetime.now(UTC), CALLER_PERMISSIONS)
    if contest is not None:
        results += contest_lines(dep, contest, seen.project_policy, progress)
    if probe:
        from tools.doctor.probe import run_probe  # noqa: PLC0415 - the only code that writes

        results += run_probe(dep, probe)
    return results


@contextlib.contextmanager
def _target(args: argparse.Namespace) -> Iterator[tuple[Deployment, ContestData | None, ContestPlan | None]]:
    if not args.local:
        inputs = contest_from_tfvars(args.contest) if args.contest else None
        contest = contest_data(*inputs) if inputs else None
        plan = plan_from(*inputs, ladder=ladder_from(os.environ)) if inputs else None
        if plan is not None:  # the contest's own project and zone, unless given
            args.project, args.zones = args.project or plan.project, args.zones or plan.zone
        scheduled = bool(inputs and (inputs[0].get("contest_start") or inputs[0].get("contest_end")))
        yield dataclasses.replace(deployment_from(args, os.environ), schedule=scheduled), contest, plan
        return
    from tools.doctor.local import local_deployment  # noqa: PLC0415 - simulators only with --local

    with local_deployment(args.fleet) as local:
        yield local.deployment, local.contest, local.plan


def ladder_from(env: Mapping[str, str]) -> tuple[str, ...]:
    """The bot's resize ladder (MACHINE_LADDER, as the functions read it), else the default."""
    return tuple(m.strip() for m in env.get("MACHINE_LADDER", "").split(",") if m.strip()) or DEFAULT_LADDER


def adc_missing() -> str:
    """What google.auth says when Application Default Credentials are not found ('' when they are): every Google
    read would fail on it, each line with its own, wrong, fix."""
    import google.auth  # noqa: PLC0415
    from google.auth.exceptions import DefaultCredentialsError  # noqa: PLC0415

    try:
        google.auth.default()
    except DefaultCredentialsError as exc:
        return str(exc).split(". ", 1)[0]
    return ""


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = parse_args(argv)
    if not args.local and not args.preflight and (not args.project or not args.zones):
        err.write("doctor: give --project and --zones (or GOOGLE_CLOUD_PROJECT and WORKBENCH_ZONES), or --local\n")
        return 2
    if args.preflight and not (args.contest or args.local):
        err.write("doctor: --preflight checks the contest's inputs: give --contest infra/contest/terraform.tfvars\n")
        return 2
    if not args.local and not args.preflight and not any(env_endpoint in os.environ for env_endpoint in (
            "WORKBENCH_API_ENDPOINT", "COMPUTE_API_ENDPOINT", "SLACK_API_URL")) and (missing := adc_missing()):
        err.write(f"doctor: no Application Default Credentials ({missing}); run gcloud auth application-default "
                  "login (infra/README step 1), then make doctor again\n")
        return 2
    with _target(args) as (dep, contest, plan):
        started = time.monotonic()
        progress = Progress(err)
        if args.preflight and plan is not None:
            results = check_plan(plan, read_plan(plan, dep, progress))
        else:
            results = diagnose(dep, progress, args.probe, contest=contest)
        progress.done()
        out.write(report(results, time.monotonic() - started, args.json) + "\n")
    return 1 if any(r.status is Status.FAIL for r in results) else 0
