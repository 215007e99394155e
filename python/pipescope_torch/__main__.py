"""`python3 -m pipescope_torch ...`: runs the command line; see cli.py."""

import sys

from pipescope_torch.cli import main

sys.exit(main())
