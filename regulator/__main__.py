"""``python -m regulator``: the same as the ``regulator`` console script."""

import sys

from regulator.cli.entry import main

sys.exit(main())
