"""`python -m simulators.slack`: a simulator that prints one line per request, to poke at by hand."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from datetime import datetime

from simulators.slack.model import ApiCall
from simulators.slack.rest import SlackSimulator


def _transcript_line(call: ApiCall) -> str:
    stamp = datetime.fromtimestamp(call.time).strftime("%H:%M:%S.%f")[:-3]
    parts = []
    for key, value in call.args.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        parts.append(f"{key}={shown!r}")
    outcome = f"{call.status} {call.error}" if call.error else str(call.status)
    return f"{stamp} {call.method} {' '.join(parts)} -> {outcome}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local Slack Web API + response_url simulator")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--token", default="xoxb-test-token", help="bot token to accept")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument(
        "--user", action="append", default=[], metavar="ID:NAME:EMAIL", help="add a user"
    )
    parser.add_argument(
        "--channel", action="append", default=[], metavar="ID:NAME", help="add a channel"
    )
    opts = parser.parse_args(argv)

    def echo(call: ApiCall) -> None:
        print(_transcript_line(call), flush=True)

    sim = SlackSimulator(bot_token=opts.token, latency_s=opts.latency, on_call=echo)
    for spec in opts.user:
        uid, name, email = [*spec.split(":", 2), "", ""][:3]
        sim.add_user(uid, name or uid.lower(), email or None)
    for spec in opts.channel or ["C0GENERAL:general", "C0ALERTS:alerts"]:
        cid, _, name = spec.partition(":")
        sim.add_channel(cid, name or cid.lower())
    sim.start(opts.port)
    print(f"Slack simulator on {sim.base_url}  (WebClient base_url={sim.api_url})", flush=True)
    print(f"  token: {opts.token}   new response_url: GET {sim.base_url}/_sim/new_response_url")
    print(f"  example response_url: {sim.new_response_url()}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
