"""Where the theme and the shipped entries are: every module that reads templates, assets or the
bundled encyclopedia takes the path from here.

A checkout keeps the theme at the repository root, beside `generator/` which holds this package
(an editable install runs from there). A wheel or sdist install ships the same files inside the
package, as `nanopedia/theme/` (`[tool.setuptools]` in pyproject.toml maps the root `theme/`
there). The copy inside the package wins, so an installed generator never reads the theme of some
other checkout.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def locate(package: Path = _PACKAGE) -> Path:
    """The theme of the package in `package`: its installed copy, else the checkout's `theme/`."""
    installed = package / "theme"
    return installed if installed.is_dir() else package.parent.parent / "theme"


THEME = locate()
"""The theme folder: `templates/`, `static/`, `single/`, `serve/`, `skeleton/`, `mkdocs/`."""


def locate_entries(package: Path = _PACKAGE) -> Path:
    """The encyclopedia the package ships (as `nanopedia/entries/`), else the checkout's
    `entries/`: what `diagnose` reads when no `--entries` is given, in any directory."""
    installed = package / "entries"
    return installed if installed.is_dir() else package.parent.parent / "entries"
