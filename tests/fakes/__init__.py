"""In-process fakes behind the adapters' own interfaces, on a FakeClock: the fault matrix in seconds.

Each fake does what its adapter does as seen from the worker (shared/adapters/workbench.py, slack_notify.py,
queue.py), with the Workbench simulator's state machine and fault families (simulators/workbench) and the
project's errors (shared/adapters/errors.py). They claim nothing new: every behaviour names the simulator code or
the adapter code it mirrors, and each fault family keeps a wire test against the simulators (docs/fault-matrix.md).
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
