"""`python -m nanopedia`: the same as the `nanopedia` console script."""

from nanopedia.cli import run

run()
