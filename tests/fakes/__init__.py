"""In-process stand-ins behind the adapters' own interfaces, on a FakeClock: the fault matrix in seconds.

FakeWorkbench and FakeSlack are the Workbench and Slack simulators' own state in process (simulators/workbench,
simulators/slack, on the FakeClock), with the adapters' loops around them mirrored (shared/adapters/workbench.py's and
slack_notify.py's constants imported). FakeTopic is the restart topic as RestartQueue publishes to it, a face over the
Pub/Sub simulator's own state (simulators/pubsub/state.py); the rig redelivers with the Pub/Sub simulator's backoff.
Errors are the project's (shared/adapters/errors.py), and each fault family keeps a wire test against the simulators
(docs/fault-matrix.md).
"""

from tests.fakes.rig import Rig, build_worker, oom_request
from tests.fakes.slack import FakeSlack, SlackFault
from tests.fakes.topic import FakeTopic
from tests.fakes.workbench import FakeOperation, FakeWorkbench, WorkbenchFault

__all__ = [
    "FakeOperation",
    "FakeSlack",
    "FakeTopic",
    "FakeWorkbench",
    "Rig",
    "SlackFault",
    "WorkbenchFault",
    "build_worker",
    "oom_request",
]
