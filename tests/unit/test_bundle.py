"""The offline zip (`commands/bundle.py`) from a small site folder made here: byte-for-byte
reproducible, readable by everyone who unpacks it, and published whole with its checksum."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from nanopedia.commands import bundle
from nanopedia.errors import NanopediaError
from nanopedia.incremental.write import MARKER


def make_site(root: Path, mtime: float = 1_700_000_000) -> Path:
    files = {
        "index.html": b"<h1>home</h1>",
        "entries/b.html": b"b",
        "entries/a.html": b"a",
        "static/deep/x.js": b"x",
        MARKER: b"marker",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (mtime, mtime))
    return root


def test_the_zip_is_byte_for_byte_the_same_whatever_the_files_times(tmp_path: Path) -> None:
    one = make_site(tmp_path / "one", mtime=1_600_000_000)
    two = make_site(tmp_path / "two", mtime=1_800_000_000)
    (two / "index.html").chmod(0o600)
    bundle.write_zip(one, tmp_path / "one.zip", "top", 1_700_000_000)
    bundle.write_zip(two, tmp_path / "two.zip", "top", 1_700_000_000)
    assert (tmp_path / "one.zip").read_bytes() == (tmp_path / "two.zip").read_bytes()
    bundle.write_zip(one, tmp_path / "later.zip", "top", 1_700_000_100)
    assert (tmp_path / "later.zip").read_bytes() != (tmp_path / "one.zip").read_bytes()


def test_members_are_sorted_under_one_top_folder_with_their_folders(tmp_path: Path) -> None:
    bundle.write_zip(make_site(tmp_path / "s"), tmp_path / "b.zip", "top", bundle.DEFAULT_EPOCH)
    with zipfile.ZipFile(tmp_path / "b.zip") as archive:
        assert archive.namelist() == [
            "top/",
            "top/entries/",
            "top/entries/a.html",
            "top/entries/b.html",
            "top/index.html",
            "top/static/",
            "top/static/deep/",
            "top/static/deep/x.js",
        ]
        assert archive.read("top/entries/a.html") == b"a"


def test_every_member_is_readable_by_all_and_dated_from_the_epoch(tmp_path: Path) -> None:
    bundle.write_zip(make_site(tmp_path / "s"), tmp_path / "b.zip", "top", 1_700_000_000)
    with zipfile.ZipFile(tmp_path / "b.zip") as archive:
        for info in archive.infolist():
            mode = info.external_attr >> 16
            assert info.create_system == bundle.UNIX, info.filename
            assert info.date_time == time.gmtime(1_700_000_000)[:6]
            if info.filename.endswith("/"):
                assert mode == stat.S_IFDIR | 0o755 and info.external_attr & 0x10
            else:
                assert mode == stat.S_IFREG | 0o644 and not info.external_attr & 0x10
                assert info.compress_type == zipfile.ZIP_DEFLATED


def test_a_symlink_in_the_site_is_refused(tmp_path: Path) -> None:
    site = make_site(tmp_path / "s")
    (site / "link.html").symlink_to(site / "index.html")
    with pytest.raises(NanopediaError, match="the site contains a symlink: link.html"):
        list(bundle.site_files(site))


EPOCHS = [
    (None, bundle.DEFAULT_EPOCH),
    ("", bundle.DEFAULT_EPOCH),
    ("  ", bundle.DEFAULT_EPOCH),
    ("0", bundle.DEFAULT_EPOCH),  # a zip cannot record a time before 1980
    ("1700000000", 1_700_000_000),
    (" 1700000000 ", 1_700_000_000),
]


@pytest.mark.parametrize(
    "raw, epoch", EPOCHS, ids=["unset", "empty", "blank", "zero", "seconds", "padded"]
)
def test_source_date_epoch_sets_every_time(
    raw: str | None, epoch: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if raw is None:
        monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    else:
        monkeypatch.setenv("SOURCE_DATE_EPOCH", raw)
    assert bundle.source_epoch() == epoch


@pytest.mark.parametrize("raw", ["soon", "-5", "1.5"])
def test_a_source_date_epoch_that_is_not_seconds_is_an_error(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", raw)
    with pytest.raises(NanopediaError, match=f"must be whole seconds, not {raw!r}"):
        bundle.source_epoch()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_published_zip_and_its_checksum_are_readable_by_all(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch.zip"
    scratch.write_bytes(b"zip bytes")
    scratch.chmod(0o600)  # as tempfile makes them
    out = bundle._publish(scratch, tmp_path / "out" / "nanopedia.zip")
    checksum = tmp_path / "out" / "nanopedia.zip.sha256"
    assert mode(out.path) == 0o644 and mode(checksum) == 0o644
    digest = hashlib.sha256(b"zip bytes").hexdigest()
    assert (out.sha256, out.size) == (digest, 9)
    assert checksum.read_text() == f"{digest}  nanopedia.zip\n"
    assert not scratch.exists()


def test_a_published_single_file_is_readable_by_all(tmp_path: Path) -> None:
    out = bundle._publish(b"<html>", tmp_path / "nanopedia.html")
    assert mode(out.path) == 0o644 and out.path.read_bytes() == b"<html>"
    assert mode(tmp_path / "nanopedia.html.sha256") == 0o644
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_checksum_checks_with_sha256sum(tmp_path: Path) -> None:
    bundle._publish(b"data", tmp_path / "n.zip")
    bundle._publish(b"new data", tmp_path / "n.zip")
    run = subprocess.run(
        ["sha256sum", "-c", "n.zip.sha256"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_scratch_folders_of_dead_runs_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folders = {
        "dead": tmp_path / f"{bundle.SCRATCH_PREFIX}{dead}-abc",
        "live": tmp_path / f"{bundle.SCRATCH_PREFIX}{os.getpid()}-abc",
        "odd": tmp_path / f"{bundle.SCRATCH_PREFIX}x1-abc",
    }
    for folder in folders.values():
        (folder / "site").mkdir(parents=True)
    link = tmp_path / f"{bundle.SCRATCH_PREFIX}{dead}-link"
    link.symlink_to(folders["odd"])
    bundle._sweep(tmp_path)
    assert not folders["dead"].exists()
    assert folders["live"].is_dir() and folders["odd"].is_dir() and link.is_symlink()


def test_sweeping_only_asks_whether_a_run_lives_and_goes_on_past_live_ones(tmp_path: Path) -> None:
    """A live run's process is only probed (signal 0): it keeps running; and every dead run's
    folder is swept wherever the live ones come in the folder's order."""
    live = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    dead = []
    for _ in range(3):
        done = subprocess.Popen(["true"])
        done.wait()
        dead.append(done.pid)
    try:
        for pid in [p.pid for p in live] + dead:
            (tmp_path / f"{bundle.SCRATCH_PREFIX}{pid}-abc" / "site").mkdir(parents=True)
        bundle._sweep(tmp_path)
        left = sorted(int(p.name.split("-")[2]) for p in tmp_path.iterdir())
        assert left == sorted(p.pid for p in live)
        assert all(p.poll() is None for p in live)  # not signalled
    finally:
        for p in live:
            p.kill()
            p.wait()


@pytest.mark.parametrize(
    ("text", "element"),
    [
        ("a = '</script>'", "script"),
        ("a = '</SCRIPT '", "script"),
        ("/* <!-- */", "script"),
        ("b = '<script>'", "style"),
        ("p { } </style>", "style"),
    ],
)
def test_text_that_would_end_its_inline_element_is_refused_by_name(text: str, element: str) -> None:
    with pytest.raises(NanopediaError) as caught:
        bundle._inline(text, element, "static/app.js")
    assert [str(p) for p in caught.value.problems] == [
        f"static/app.js: error[E041]: cannot inline static/app.js: it contains markup that "
        f"ends a <{element}>"
    ]


def test_a_site_script_or_the_themes_that_would_end_its_element_is_named(tmp_path: Path) -> None:
    import shutil

    from nanopedia import config as site_config
    from nanopedia.site.render import THEME

    theme = tmp_path / "theme"
    shutil.copytree(THEME, theme)
    site = tmp_path / "site"
    for rel in (bundle.LIBRARY, bundle.INDEX_FILE, *bundle.SCRIPTS, *bundle.STYLES):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("x = 1;\n")
    (site / "index.html").write_text("<p>home</p>")
    cfg = site_config.read(None)
    assert "<p>home</p>" in bundle._assemble(site, theme, cfg)
    (theme / "single" / "single.js").write_text("document.write('</script>');\n")
    with pytest.raises(NanopediaError, match=r"^single.js: error\[E041\]: cannot inline single.js"):
        bundle._assemble(site, theme, cfg)
    (site / bundle.SCRIPTS[0]).write_text("// <!-- old browsers\n")
    with pytest.raises(NanopediaError) as caught:
        bundle._assemble(site, theme, cfg)
    assert str(caught.value.problems[0]).startswith(f"{bundle.SCRIPTS[0]}: error[E041]")


def test_a_symlink_is_refused_with_its_code_and_hint(tmp_path: Path) -> None:
    site = make_site(tmp_path / "s")
    (site / "entries" / "link.html").symlink_to(site / "index.html")
    with pytest.raises(NanopediaError) as caught:
        list(bundle.site_files(site))
    assert [str(p) for p in caught.value.problems] == [
        f"{site / 'entries' / 'link.html'}: error[E041]: the site contains a symlink: "
        "entries/link.html\n    hint: bundles hold files only"
    ]


def test_folders_in_the_zip_are_empty_entries(tmp_path: Path) -> None:
    site = make_site(tmp_path / "s")
    target = tmp_path / "b.zip"
    bundle.write_zip(site, target, "top", bundle.DEFAULT_EPOCH)
    with zipfile.ZipFile(target) as z:
        folders = [i for i in z.infolist() if i.filename.endswith("/")]
        assert folders and all(i.file_size == 0 and z.read(i) == b"" for i in folders)
