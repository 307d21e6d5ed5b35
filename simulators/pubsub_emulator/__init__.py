"""Google's own Pub/Sub emulator, the reference tests/contract holds simulators/pubsub/ to: its process, and our push
sender over its pull path.

Where the emulator is installed (the gcloud SDK's `pubsub-emulator` component, the Debian package
google-cloud-cli-pubsub-emulator, or $PUBSUB_EMULATOR_LAUNCHER) `process` starts it (one JVM per test run, started by
pytest-xdist's controller, else one per process: `shared_emulator`); `push_agent` pushes its subscriptions as
Pub/Sub's push sender does (the emulator decides every delivery; its own push path lacks what the bot depends on:
docs/fidelity.md, "Issue 29").
"""

from simulators.pubsub_emulator.process import PubSubEmulator, emulator_launcher, shared_emulator, start_for_workers
from simulators.pubsub_emulator.push_agent import PushAgent, Route

__all__ = [
    "PubSubEmulator",
    "PushAgent",
    "Route",
    "emulator_launcher",
    "shared_emulator",
    "start_for_workers",
]
