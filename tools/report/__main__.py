"""python -m tools.report --project P --since T --until T [--zones Z] [--csv out.csv] [--post] [--local]"""

import sys

from tools.report.cli import main

sys.exit(main())
