"""``python -m coxswain``."""

import sys

from coxswain.cli import main

sys.exit(main())
