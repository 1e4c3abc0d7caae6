"""``python -m mirror.cli``: the ``mirror`` command."""

import sys

from mirror.cli.main import main

sys.exit(main())
