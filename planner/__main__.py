"""``python -m planner …``: the same command line as the ``kvplan`` script."""

import sys

from planner.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
