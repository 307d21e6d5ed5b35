"""What the guard inside each notebook's VM publishes as guest attributes, as the bot names it.

The guard (infra/contest/guard) writes its state under one guest-attributes namespace of its VM's metadata server;
the bot and `make doctor` read it with instances.getGuestAttributes (queryPath `notebook-medic/`). Each value is
written by the VM's root, that is by the participant: it is evidence about that one notebook only, parsed before
use and escaped before it is printed (shared/core/printable.py).
"""

from __future__ import annotations

GUARD_NAMESPACE = "notebook-medic"  # the guard's guest-attributes namespace (infra/contest/guard, docs/fidelity.md)
