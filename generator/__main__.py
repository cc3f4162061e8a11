"""`python -m generator`: the same as the `nanopedia` console script."""

from .cli import run

run()
