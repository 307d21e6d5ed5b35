"""The job: one request and all the worker learned about it, as one frozen value passed to every action."""

from __future__ import annotations

from dataclasses import dataclass, replace

from shared.core.history import History
from shared.core.models import InstanceRef, InstanceView, RestartRequest, Trigger
from shared.core.policy import Decision


@dataclass(frozen=True)
class Job:
    """`view` is the instance as last read (or as its labels were last written); `history` what its labels
    say, with this request's own marks (the wait it ends, the Slack request it records) already applied;
    `deadline` is on the worker's clock's monotonic scale."""

    request: RestartRequest
    ref: InstanceRef
    view: InstanceView
    history: History
    decision: Decision
    deadline: float

    @property
    def automatic(self) -> bool:
        """An OOM kill or an outage the health sweep found, not a person: counted toward the crash loop, and told
        to the owner by DM."""
        return self.request.trigger in (Trigger.OOM, Trigger.SWEEP)

    def with_labels(self, labels: dict[str, str]) -> Job:
        return replace(self, view=replace(self.view, labels=labels))
