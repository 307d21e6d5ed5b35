"""`python -m simulators.pubsub`: runs the command line of simulators/pubsub/cli.py."""

from __future__ import annotations

import sys

from simulators.pubsub.cli import main

sys.exit(main())
