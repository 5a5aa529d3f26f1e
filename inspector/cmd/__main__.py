"""`python -m inspector.cmd`: the same as the `inspector` console script."""

import sys

from inspector.cmd import main

sys.exit(main())
