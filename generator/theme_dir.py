"""Where the theme is: every module that reads templates or assets takes the path from here.

A checkout keeps the theme at the repository root, next to `generator/` (an editable install runs
from there). A wheel or sdist install ships the same files inside the package, as
`generator/theme/` (`[tool.setuptools]` in pyproject.toml maps the root `theme/` there). The copy
inside the package wins, so an installed generator never reads the theme of some other checkout.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def locate(package: Path = _PACKAGE) -> Path:
    """The theme of the package in `package`: its installed copy, else the checkout's `theme/`."""
    installed = package / "theme"
    return installed if installed.is_dir() else package.parent / "theme"


THEME = locate()
"""The theme folder: `templates/`, `static/`, `single/`, `serve/`, `skeleton/`, `mkdocs/`."""
