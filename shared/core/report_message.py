"""The report's Slack message: its totals, the participants with the most kills, the minutes down by cause and those
with the most on the platform's side, what the audit trail could not attribute, worded in the organizers' language
(the rows themselves go in the CSV beside it)."""

from __future__ import annotations

from shared.core import messages
from shared.core.downtime import SIDE_ORDER, Side
from shared.core.report import Report, Row

MOST_KILLS = 5  # participants named in the message; every one is in the CSV


def _when(report: Report) -> tuple[str, str]:
    return report.since.strftime("%Y-%m-%d %H:%M UTC"), report.until.strftime("%Y-%m-%d %H:%M UTC")


def _totals(total: Row, unpriced: tuple[str, ...], say: messages.For) -> str:
    common = {"kills": total.kills, "kept": total.kernels_kept, "automatic": total.automatic_restarts,
              "manual": total.manual_restarts, "failed": total.failed_restarts, "minutes": round(total.minutes_down),
              "resizes": total.resizes, "hours": f"{total.hours_run:.1f}"}
    if total.cost_usd is None:
        return say("report.totals.unpriced", types=messages.escape(", ".join(unpriced)), **common)
    return say("report.totals", cost=f"{total.cost_usd:.2f}", **common)


def _gaps(report: Report, say: messages.For) -> list[str]:
    gaps = report.gaps
    lines: list[str] = []
    if gaps.duplicates:
        lines.append(say("report.gap.duplicates", count=gaps.duplicates))
    if gaps.unsealed:
        lines.append(say("report.gap.unsealed", count=gaps.unsealed))
    if gaps.unnamed_kills:
        lines.append(say("report.gap.unnamed_kills", count=gaps.unnamed_kills))
    if gaps.kills_without_outcome:
        lines.append(say("report.gap.without_outcome", count=len(gaps.kills_without_outcome),
                         instances=messages.escape(", ".join(sorted(set(gaps.kills_without_outcome))))))
    if gaps.restarts_without_kill:
        lines.append(say("report.gap.restarts_without_kill", count=gaps.restarts_without_kill))
    if gaps.unknown_owner:
        lines.append(say("report.gap.unknown_owner", instances=messages.escape(", ".join(gaps.unknown_owner))))
    return [say("report.gaps"), *lines] if lines else []


def _split(row: Row) -> tuple[int, int, int]:
    """A row's minutes down, platform, own, unknown, rounded."""
    platform, own, unknown = (round(row.down_minutes[side]) for side in SIDE_ORDER)
    return platform, own, unknown


def _downtime(report: Report, say: messages.For) -> list[str]:
    """The day's minutes down by side, and the participants with the most on the platform's, when any."""
    total = report.totals
    if not any(total.down_minutes.values()) and not total.open_outages:
        return []
    platform, own, unknown = _split(total)
    lines = [say("report.downtime", platform=platform, own=own, unknown=unknown, open=total.open_outages)]
    most = sorted((row for row in report.rows if row.down_minutes[Side.PLATFORM] > 0),
                  key=lambda row: (-row.down_minutes[Side.PLATFORM], row.participant))[:MOST_KILLS]
    if most:
        lines.append(say("report.most_platform"))
    for row in most:
        platform, own, unknown = _split(row)
        lines.append(say("report.row.platform", participant=messages.escape(row.participant), platform=platform,
                         own=own, unknown=unknown))
    return lines


def slack_text(report: Report, say: messages.For, csv_name: str) -> str:
    """The message that carries the CSV named csv_name."""
    since, until = _when(report)
    total = report.totals
    lines = [say("report.title", since=since, until=until, notebooks=len(total.notebooks),
                 participants=len(report.rows)),
             _totals(total, report.gaps.unpriced, say)]
    if total.gpu_freed:
        lines.append(say("report.gpu_freed", count=total.gpu_freed))
    killed = [row for row in report.rows if row.kills][:MOST_KILLS]
    if killed:
        lines.append(say("report.most_kills"))
        lines += [say("report.row", participant=messages.escape(row.participant), kills=row.kills,
                      restarts=row.automatic_restarts + row.manual_restarts, minutes=round(row.minutes_down))
                  for row in killed]
    lines += _downtime(report, say)
    lines += _gaps(report, say)
    lines.append(say("report.csv", file=csv_name))
    return "\n".join(lines)
