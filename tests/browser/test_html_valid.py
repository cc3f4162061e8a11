"""Every page type of the built site is valid HTML: zero errors from the W3C Nu checker.

One Java run checks every HTML page of the repository's site (about 50 pages, a few seconds) and a
page that is invalid on purpose, so the test also proves that the checker ran and reports errors.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tools import npm_package, page_types, unavailable

INVALID = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>invalid</title></head>
<body><input type="search" role="combobox" aria-expanded="false"></body></html>
"""
"""The header search box as it was before issue #20: an error the checker must report."""


def nu_errors(files: list[Path]) -> dict[Path, list[str]]:
    """Errors per file from `vnu --errors-only`, as `line:column: message`."""
    java = shutil.which("java")
    if java is None:
        unavailable("Java is not installed: the Nu checker (vnu.jar) needs it")
    jar = npm_package("vnu-jar") / "build" / "dist" / "vnu.jar"
    done = subprocess.run(
        [str(java), "-jar", str(jar), "--errors-only", "--format", "json", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    try:
        messages = json.loads(done.stderr or done.stdout)["messages"]
    except (ValueError, KeyError) as exc:
        raise AssertionError(f"vnu gave no JSON report ({exc}): {done.stderr[-2000:]}") from exc
    found: dict[Path, list[str]] = {path: [] for path in files}
    for m in messages:
        path = Path(m.get("url", "").removeprefix("file:"))
        where = f"{m.get('lastLine', '?')}:{m.get('firstColumn', m.get('lastColumn', '?'))}"
        found.setdefault(path.resolve(), []).append(f"{where}: {m['type']}: {m['message']}")
    return found


def test_every_page_of_the_site_is_valid_html(repo_site: Path, tmp_path: Path) -> None:
    bad = tmp_path / "invalid.html"
    bad.write_text(INVALID, encoding="utf-8")
    pages = sorted(p.resolve() for p in repo_site.rglob("*.html"))
    kinds = page_types(repo_site)
    assert {p.resolve() for p in kinds.values()} <= set(pages)
    errors = nu_errors([bad.resolve(), *pages])
    assert any("element “input”" in e for e in errors.pop(bad.resolve())), "vnu missed the bad page"
    report = [
        f"{path.relative_to(repo_site.resolve())}:{line}"
        for path, lines in sorted(errors.items())
        for line in lines
    ]
    assert report == [], f"{len(report)} Nu checker errors:\n" + "\n".join(report)
