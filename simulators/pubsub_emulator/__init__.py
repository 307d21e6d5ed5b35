"""Google's own Pub/Sub emulator as the local Pub/Sub: its process, our push sender over its pull path, one stack's bus.

Where the emulator is installed (the gcloud SDK's `pubsub-emulator` component, or $PUBSUB_EMULATOR_LAUNCHER) it is
the real part the tests measure simulators/pubsub/ against (tests/contract/). `process` starts it (one JVM per test
run, started by pytest-xdist's controller, else one per process: `shared_emulator`); `push_agent` pushes its
subscriptions as Pub/Sub's push sender does (the emulator's own push path lacks what the bot depends on:
docs/fidelity.md, "Issue 29"); `bus` is one stack's Pub/Sub on it (`EmulatorPubSub`, what simulators/stack.py asks
of a Pub/Sub).
"""

from simulators.pubsub_emulator.bus import EmulatorPubSub
from simulators.pubsub_emulator.process import PubSubEmulator, emulator_launcher, shared_emulator, start_for_workers
from simulators.pubsub_emulator.push_agent import PushAgent, Route

__all__ = [
    "EmulatorPubSub",
    "PubSubEmulator",
    "PushAgent",
    "Route",
    "emulator_launcher",
    "shared_emulator",
    "start_for_workers",
]
