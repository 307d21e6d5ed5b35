"""`make demo` (python -m demo): a contest day; start all, then OOM kills detected, notebooks reset, alerts
posted, /restart-notebook; then the warning before the scheduled stop, the stop, and the report (demo/day.py).

Everything runs here: simulators of the Workbench API, Pub/Sub and Slack, and the
five functions under the real functions-framework, talking over sockets.
`make replay FILE=…` pushes what you have (a LogEntry, `gcloud logging read --format=json` output, a
CloudEvent or a Pub/Sub message) through the same stack.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from demo.replay import ReplayFileError, load_entries


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replay", type=Path, metavar="FILE",
                        help="replay a LogEntry, an array of them, a CloudEvent or a Pub/Sub message")
    parser.add_argument("--keep-time", action="store_true", help="with --replay: keep the entries' own timestamps")
    args = parser.parse_args(argv)
    entries = None
    if args.replay:
        try:  # before anything starts: a wrong file is one line and a second, not a stack start and a traceback
            entries = load_entries(args.replay)
        except ReplayFileError as exc:
            print(f"make replay: {exc}", file=sys.stderr)
            return 2
    from demo.story import run  # noqa: PLC0415 - the simulators and the stack: only once the file is good

    return run(entries, keep_time=args.keep_time)


if __name__ == "__main__":
    sys.exit(main())
