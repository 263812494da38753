"""``python -m regulator``: the same as the ``regulator`` console script."""

import sys

from regulator.cli.main import main

sys.exit(main())
