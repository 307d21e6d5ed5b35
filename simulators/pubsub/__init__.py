"""A local Pub/Sub simulator: gRPC in (the real client via PUBSUB_EMULATOR_HOST), HTTP push out.

The one Pub/Sub stand-in of the local stacks, the demo, the bench and the doctor. Google's own emulator, pushed by
our agent over its pull path (simulators/pubsub_emulator/), is the reference where it is installed: tests/contract
runs the same tests on both, and they agree on every push behaviour the bot depends on (docs/fidelity.md, "Issue
29"; docs/testing.md, "Which Pub/Sub", says why the stacks run here). What it implements:

* faults (`faults`: publish faults, a latency on every RPC): the emulator cannot inject them; the tests of a failed
  or slow publish (tests/unit/test_queue.py, tests/integration/test_faults_slack_pubsub.py) and the bench need them.
* push delivery (`push`: ordering keys one at a time, redelivery with backoff, the ack deadline, the success codes,
  ``deliveryAttempt``, dead-lettering; the Pub/Sub and the Eventarc CloudEvent body), which the contract suite
  holds to the emulator's.
* the records (`state`: ``deliveries``, ``dead_lettered``, ``published``, ``wait_idle``): what a test reads of
  what went through Pub/Sub.
* the gRPC surface (`grpc_api`): only the RPCs the bot, its doctor and the stacks call (CreateTopic, GetTopic,
  Publish; Create/Get/DeleteSubscription), plus the IAM RPCs other simulators add on its port (`extra_handlers`),
  which the emulator does not serve. ListTopics and DeleteTopic were retired (issue 29): nothing here calls them.
* the command line (`cli`): a Pub/Sub to poke at by hand.

Pull subscriptions can be created (for GetSubscription) but nothing is queued for them: Pull and StreamingPull are
the emulator's. The package's parts (each module's docstring says what it owns): errors (imports nothing of the
simulator), checks, model, subscriptions, state, push, faults, grpc_api, simulator, cli, __main__. Everything the
tests, the stacks, the demo and the benchmarks import is re-exported here.
"""

from __future__ import annotations

from simulators.pubsub.cli import main
from simulators.pubsub.errors import PubSubError
from simulators.pubsub.model import ACK_STATUSES, DeadLetter, Delivery, DeliveryStatus, PublishedMessage
from simulators.pubsub.push import http_post
from simulators.pubsub.simulator import PubSubSimulator
from simulators.pubsub_body import format_publish_time, push_message

__all__ = [
    "ACK_STATUSES",
    "DeadLetter",
    "Delivery",
    "DeliveryStatus",
    "PubSubError",
    "PubSubSimulator",
    "PublishedMessage",
    "format_publish_time",
    "http_post",
    "main",
    "push_message",
]
