"""`python -m simulators.workbench`: the simulator seeded with a few instances, to poke at by hand."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

from simulators.workbench.model import HEALTH_REPORT_SECONDS
from simulators.workbench.rest import WorkbenchSimulator


def seed_demo(sim: WorkbenchSimulator, project: str = "demo-project") -> list[str]:
    """A few instances to poke at by hand."""
    zone, other = "europe-west4-a", "us-central1-a"
    names = [
        sim.add_instance(project, zone, "alice-nb", owner_email="alice@example.com",
                         labels={"team": "ml"}),
        sim.add_instance(project, zone, "bob-nb", owner_email="bob@example.com",
                         machine_type="n2-highmem-8"),
        sim.add_instance(project, zone, "carol-nb", owner_email="carol@example.com",
                         state="STOPPED"),
        sim.add_instance(project, other, "shared-nb", owner_email=None),
    ]
    sim.oom_kill(names[1], jupyter_survives=False, health_delay_s=0.0)
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simulators.workbench",
        description="Local Vertex AI Workbench (notebooks v2) API simulator, REST and gRPC.",
    )
    parser.add_argument("--port", type=int, default=8085, help="REST")
    parser.add_argument("--grpc-port", type=int, default=8086)
    parser.add_argument("--seed", choices=["demo", "none"], default="demo")
    parser.add_argument("--project", default="demo-project")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--reset-seconds", type=float, default=5.0)
    parser.add_argument("--start-seconds", type=float, default=5.0)
    parser.add_argument("--stop-seconds", type=float, default=5.0)
    parser.add_argument("--health-delay", type=float, default=2.0)
    parser.add_argument("--health-interval", type=float, default=HEALTH_REPORT_SECONDS,
                        help="the health agent's cadence (live: about 30 s); 0 for none")
    parser.add_argument("--no-unknown-fields", action="store_true",
                        help="only return fields the installed protos know")
    args = parser.parse_args(argv)
    sim = WorkbenchSimulator(
        latency_s=args.latency,
        reset_seconds=args.reset_seconds,
        start_seconds=args.start_seconds,
        stop_seconds=args.stop_seconds,
        health_delay_s=args.health_delay,
        health_interval_s=args.health_interval or None,
        unknown_fields=not args.no_unknown_fields,
    )
    names = seed_demo(sim, args.project) if args.seed == "demo" else []
    sim.start(args.port, args.grpc_port)
    print(f"Workbench simulator on {sim.endpoint} (REST) and {sim.grpc_endpoint} (gRPC)", flush=True)
    for n in names:
        inst = sim.get(n)
        print(f"  {n}  {inst['state']}  {inst.get('healthState', '-')}", flush=True)
    if names:
        print(f"  try: curl {sim.endpoint}/v2/projects/{args.project}/locations/-/instances", flush=True)
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not done.wait(0.5):
        pass
    sim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
