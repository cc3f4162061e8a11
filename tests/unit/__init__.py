"""Unit tests, one file per module of `nanopedia/` (a package, so that a file may share its name
with an older test beside `tests/`, such as `test_load.py`)."""
