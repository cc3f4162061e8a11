"""The pinned repro environment: the exact releases of the package's `repro` extra.

Pages say "Reproduced with PyTorch X.Y.Z" and `verify` compares the installed libraries with the
pins, so both read them from one place: the installed package's metadata (from `pyproject.toml`).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import metadata

_PIN = re.compile(
    r"^\s*([A-Za-z0-9._-]+)\s*==\s*([A-Za-z0-9.+!_-]+)\s*;.*extra\s*==\s*['\"]repro['\"]"
)


@cache
def repro_pins() -> dict[str, str]:
    """Distribution name (lower case) to pinned version, e.g. `{"torch": "2.13.0"}`; empty when
    the package is not installed (a plain checkout on `sys.path`)."""
    try:
        required = metadata.requires("nanopedia") or []
    except metadata.PackageNotFoundError:
        return {}
    found = (_PIN.match(line) for line in required)
    return {m.group(1).lower(): m.group(2) for m in found if m}


def installed_mismatches() -> list[str]:
    """`torch 2.14.1 is installed, the repro environment pins 2.13.0`, per differing pin."""
    out = []
    for name, pinned in sorted(repro_pins().items()):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if have.split("+")[0] != pinned:
            out.append(f"{name} {have} is installed, the repro environment pins {pinned}")
    return out
