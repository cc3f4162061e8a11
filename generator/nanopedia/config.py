"""Site settings from `nanopedia.toml`: the title, the public base URL and the repository URL.

Every setting has a default, so a checkout without the file builds a working site; a base URL only
adds canonical links and `sitemap.xml`, which need absolute addresses.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from nanopedia.errors import NanopediaError, fail, problem

CONFIG_FILE = "nanopedia.toml"


@dataclass(frozen=True, slots=True)
class Config:
    """The `[site]` table of `nanopedia.toml`."""

    title: str = "Nanopedia"
    """Site name, shown in the header and in every page title."""
    description: str = "The open encyclopedia of ML training failures: symptoms, causes and fixes."
    """One sentence for the home page and the `description` meta tag."""
    base_url: str = ""
    """Public https address of the site root (with a trailing slash); empty means unknown."""
    repo_url: str = ""
    """https address of the repository's entries folder, for "Edit this entry" links."""
    feeds: bool = True
    """Whether the site has Atom feeds. Not a setting of the file: the build turns them off when
    no entry has a date (outside git, without `SOURCE_DATE_EPOCH`), as every feed would be empty
    and could only be dated by inventing a date."""


def parse(text: str, path: str) -> Config:
    """Read the `[site]` table from TOML text; unknown keys and wrong types are located errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        fail(path, "E050", f"invalid TOML: {err}")
    site = data.get("site", {})
    known = {f.name for f in fields(Config)} - {"feeds"}
    found = []
    if set(data) - {"site"} or not isinstance(site, dict):
        found.append(problem(path, "E050", "the configuration has one table, [site]"))
        site = {}
    for key, value in site.items():
        if key not in known:
            found.append(
                problem(
                    path,
                    "E050",
                    f"unknown setting '{key}' in [site]",
                    f"known settings: {', '.join(sorted(known))}",
                )
            )
        elif not isinstance(value, str):
            found.append(problem(path, "E050", f"setting '{key}' must be a string"))
    for key in ("base_url", "repo_url"):
        value = site.get(key, "")
        if isinstance(value, str) and value and not value.startswith("https://"):
            found.append(problem(path, "E050", f"'{key}' must start with https://"))
    if found:
        raise NanopediaError(found)
    base = site.get("base_url", "")
    if base and not base.endswith("/"):
        site = {**site, "base_url": base + "/"}
    return Config(**site)


def read(path: Path | None) -> Config:
    """The configuration at `path`, or defaults when no file was named and none exists."""
    if path is None:
        path = Path(CONFIG_FILE)
        if not path.exists():
            return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        fail(path.as_posix(), "E050", f"cannot read the configuration: {err}")
    return parse(text, path.as_posix())
