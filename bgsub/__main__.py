"""``python -m bgsub``: the same as the ``bgsub`` command."""

import sys

from bgsub.cli import main

if __name__ == "__main__":
    sys.exit(main())
