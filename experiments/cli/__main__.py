"""``python -m longctx.experiments.cli``: the ``longctx`` command line."""

import sys

from longctx.experiments.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
