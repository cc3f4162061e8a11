"""`python -m generator`: the same as the `nanopedia` console script."""

import sys

from .cli import main

sys.exit(main())
