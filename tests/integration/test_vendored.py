"""Vendored third-party files are exactly the published ones.

`VENDORED.json` beside each vendored folder records the npm tarball's integrity and every file's
sha256. The hashes are always checked; with `npm` on the PATH (as in CI) the published tarball is
packed again, its integrity compared with the record and each file compared byte for byte, so a
hand edit or a wrong copy cannot hide behind an updated checksum.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

VENDOR = ROOT / "theme" / "static" / "vendor"
RECORDS = sorted(VENDOR.glob("*/VENDORED.json"))


def _record(path: Path) -> dict[str, object]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_minisearch_is_vendored() -> None:
    assert VENDOR / "minisearch" / "VENDORED.json" in RECORDS


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.parent.name)
def test_vendored_files_match_their_recorded_sha256(record: Path) -> None:
    files = _record(record)["files"]
    assert isinstance(files, dict)
    for name, info in files.items():
        digest = hashlib.sha256((record.parent / name).read_bytes()).hexdigest()
        assert digest == info["sha256"], f"{record.parent.name}/{name} differs from its record"


@pytest.mark.parametrize("record", RECORDS, ids=lambda p: p.parent.name)
def test_vendored_files_match_the_published_tarball(record: Path, tmp_path: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    info = _record(record)
    spec = f"{info['name']}@{info['version']}"
    done = subprocess.run(
        [npm, "pack", spec, "--silent", "--pack-destination", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    tarball = tmp_path / done.stdout.strip().splitlines()[-1]
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    assert integrity == info["integrity"], f"{spec}: the registry's tarball is not the recorded one"
    files = info["files"]
    assert isinstance(files, dict)
    with tarfile.open(tarball) as tar:
        for name, entry in files.items():
            member = tar.extractfile(entry["from"])
            assert member is not None, f"{entry['from']} is not a file in {spec}"
            assert member.read() == (record.parent / name).read_bytes(), f"{name} was edited"
