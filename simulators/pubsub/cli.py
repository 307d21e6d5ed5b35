"""`python -m simulators.pubsub`: a simulator with topics and push subscriptions from the command line, to poke at
by hand where Google's emulator is not installed.

    python -m simulators.pubsub --port 8681 \
        --topic projects/p/topics/t \
        --push projects/p/subscriptions/s=projects/p/topics/t=http://127.0.0.1:8080/[=cloudevent]
"""

from __future__ import annotations

import argparse
import signal
import threading

from simulators.pubsub.simulator import PubSubSimulator


def _parse_push(spec: str) -> tuple[str, str, str, str]:
    parts = spec.split("=", 2)  # the endpoint may itself contain "=" (query string)
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("expected SUBSCRIPTION=TOPIC=ENDPOINT[=FORMAT]")
    name, topic, endpoint = parts
    fmt = "pubsub"
    for candidate in ("pubsub", "cloudevent"):
        if endpoint.endswith("=" + candidate):
            endpoint, fmt = endpoint[: -len(candidate) - 1], candidate
    return name, topic, endpoint, fmt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.pubsub", description="Local Pub/Sub simulator (gRPC + push)."
    )
    parser.add_argument("--port", type=int, default=8681)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each RPC")
    parser.add_argument("--topic", action="append", default=[], help="topic to create")
    parser.add_argument(
        "--push",
        action="append",
        default=[],
        type=_parse_push,
        help="SUBSCRIPTION=TOPIC=ENDPOINT[=pubsub|cloudevent] push subscription to create",
    )
    args = parser.parse_args(argv)
    sim = PubSubSimulator(latency_s=args.latency).start(args.port)
    for topic in args.topic:
        sim.create_topic(topic)
    for name, topic, endpoint, fmt in args.push:
        sim.create_push_subscription(name, topic, endpoint, push_format=fmt)
    print(f"export PUBSUB_EMULATOR_HOST={sim.host}", flush=True)
    done = threading.Event()

    def _stop(*_args: object) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        while not done.wait(0.5):
            pass
    finally:
        sim.stop()
    return 0
