"""python -m tools.doctor --project P --zones Z1,Z2 [--json] [--probe INSTANCE] [--local]"""

import sys

from tools.doctor.cli import main

sys.exit(main())
