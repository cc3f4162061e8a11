"""`nanopedia diff BASE [HEAD]`: what a change does to the encyclopedia, in Markdown for a PR.

Entries are read at both revisions straight from git objects (`git ls-tree` for the file list, one
`git cat-file --batch` for the contents), never by checking anything out, and parsed with the
loader's `parse()`. Only files whose blob changed are parsed, so a one-entry pull request costs the
same on a corpus of ten thousand. The comparison is on the parsed data, not on validated models:
a pull request that does not pass `check` yet still gets a useful summary (and `check` in the same
workflow says what to fix).

An entry that disappears while another entry gains its id as an alias was renamed (or merged), so
its old address keeps working; one that disappears without that is reported as removed, with a
warning that links to it will break.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nanopedia.content.files import TAGS_FILE
from nanopedia.content.load import decode, parse
from nanopedia.errors import NanopediaError, fail, problem
from nanopedia.model import Entry

#: First line of every summary: the PR workflow finds and updates its own comment by it.
MARKER = "<!-- nanopedia-diff -->"
SECTIONS = [name for name in Entry.model_fields if name not in ("id", "aliases")]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The entries directory at one revision: parsed data only for the files that matter."""

    blobs: dict[str, str]
    """File stem (entries) to git blob id; tells which files changed without reading them."""
    data: dict[str, Any] = field(default_factory=dict)
    """File stem to parsed YAML data, or the text of the parse error, for the files read."""
    tags: frozenset[str] = frozenset()
    """Slugs of the tag registry."""


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", "-C", str(cwd), *args], input=stdin, capture_output=True, check=False
    )
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise NanopediaError(
            [problem(str(cwd), "E050", f"git {args[0]} failed: {' '.join(reason[-1:])}")]
        )
    return done.stdout


def _tree(entries: Path, rev: str) -> dict[str, str]:
    """File name to blob id for the regular files of the entries directory at `rev`."""
    try:
        _git(entries, "rev-parse", "--verify", f"{rev}^{{commit}}")
    except NanopediaError:
        fail(
            entries.as_posix(),
            "E050",
            f"'{rev}' is not a commit in this repository",
            "check the spelling, or fetch it first (CI: actions/checkout with fetch-depth: 0)",
        )
    try:
        out = _git(entries, "ls-tree", "--full-tree", "-z", f"{rev}:./")
    except NanopediaError:  # the directory does not exist at that revision
        return {}
    names: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == b"blob":
            names[name.decode("utf-8", "replace")] = parts[2].decode()
    return names


def _contents(entries: Path, oids: Iterable[str]) -> dict[str, bytes]:
    """Blob id to contents, for all blobs in one `git cat-file --batch`."""
    wanted = sorted(set(oids))
    if not wanted:
        return {}
    out = _git(entries, "cat-file", "--batch", stdin="".join(f"{o}\n" for o in wanted).encode())
    found: dict[str, bytes] = {}
    pos = 0
    for oid in wanted:
        end = out.index(b"\n", pos)
        size = int(out[pos:end].split()[2])
        found[oid] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return found


def _parsed(raw: bytes, shown: str) -> Any:
    """Plain data of one file, or its first problem as text when it does not parse."""
    try:
        return parse(decode(raw, shown), shown).data
    except NanopediaError as err:
        return str(err.problems[0])


def snapshots(entries: Path, base: str, head: str) -> tuple[Snapshot, Snapshot]:
    """Both revisions of the entries directory, reading only the files that differ."""
    trees = [_tree(entries, rev) for rev in (base, head)]
    stems = [
        {n[:-5]: o for n, o in t.items() if n.endswith(".yaml") and n != TAGS_FILE} for t in trees
    ]
    differ = {s for s in stems[0].keys() | stems[1].keys() if stems[0].get(s) != stems[1].get(s)}
    wanted = [t[f"{s}.yaml"] for t, st in zip(trees, stems, strict=True) for s in differ if s in st]
    wanted += [t[TAGS_FILE] for t in trees if TAGS_FILE in t]
    raw = _contents(entries, wanted)
    shots = []
    for tree, stem_blobs in zip(trees, stems, strict=True):
        data = {s: _parsed(raw[stem_blobs[s]], f"{s}.yaml") for s in differ if s in stem_blobs}
        registry = _parsed(raw[tree[TAGS_FILE]], TAGS_FILE) if TAGS_FILE in tree else {}
        tags = frozenset(registry) if isinstance(registry, dict) else frozenset()
        shots.append(Snapshot(stem_blobs, data, tags))
    return shots[0], shots[1]


def _escape(text: str) -> str:
    """Plain text safe inside Markdown: no markup, links, HTML, mentions or autolinks from an
    entry's title, nor controls that reorder it."""
    from nanopedia.diagnosis.report import inert, shorten

    return inert(re.sub(r"([\\`*_\[\]<>|~#])", r"\\\1", shorten(" ".join(text.split()), 10_000)))


def _code(text: str) -> str:
    return f"`{text.replace('`', '')}`"


def _codes(items: Iterable[str]) -> str:
    return ", ".join(_code(i) for i in items)


def _field(data: Any, name: str) -> Any:
    return data.get(name) if isinstance(data, dict) else None


def _strings(data: Any, name: str) -> list[str]:
    value = _field(data, name)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _fingerprints(data: Any) -> list[str]:
    value = _field(data, "fingerprints")
    items = value if isinstance(value, list) else []
    return [f["id"] for f in items if isinstance(f, dict) and isinstance(f.get("id"), str)]


def _title(stem: str, data: Any) -> str:
    if isinstance(data, str):
        return f"{_code(stem)} (does not parse: run `nanopedia check`)"
    title = _field(data, "title")
    return f"{_code(stem)} {_escape(title)}" if isinstance(title, str) else _code(stem)


def _changes(old: Any, new: Any) -> list[str]:
    """Sub-items for one changed entry: sections, tags and fingerprints."""
    if isinstance(old, str) or isinstance(new, str):
        return []
    old, new = old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {}
    extra = sorted((old.keys() | new.keys()) - set(Entry.model_fields))
    changed = [s for s in SECTIONS + extra if old.get(s) != new.get(s)]
    lines = [f"sections: {_codes(changed)}"] if changed else []
    before, after = _strings(old, "tags"), _strings(new, "tags")
    added = [t for t in after if t not in before]
    removed = [t for t in before if t not in after]
    if added or removed:
        parts = ([f"added {_codes(added)}"] if added else []) + (
            [f"removed {_codes(removed)}"] if removed else []
        )
        lines.append("tags " + "; ".join(parts))
    fresh = [f for f in _fingerprints(new) if f not in _fingerprints(old)]
    if fresh:
        lines.append(f"new fingerprints: {_codes(fresh)}")
    return lines


def summarize(base: Snapshot, head: Snapshot, labels: tuple[str, str]) -> str:
    """The Markdown comment: counts first, then one list per kind of change."""
    gone = sorted(base.blobs.keys() - head.blobs.keys())
    new = sorted(head.blobs.keys() - base.blobs.keys())
    changed = sorted(
        s for s in base.blobs.keys() & head.blobs.keys() if base.blobs[s] != head.blobs[s]
    )
    claimed: dict[str, str] = {}  # old id -> the entry that gained it as an alias
    for stem in sorted(head.data):
        for alias in _strings(head.data[stem], "aliases"):
            if alias in gone and alias not in _strings(base.data.get(stem), "aliases"):
                claimed.setdefault(alias, stem)
    renamed = [(old, claimed[old]) for old in gone if old in claimed]
    removed = [s for s in gone if s not in claimed]
    added = [s for s in new if s not in claimed.values()]

    sections: list[tuple[str, list[str]]] = []
    sections.append(
        ("Added", [_bullet(_title(s, head.data[s]), _added_details(head.data[s])) for s in added])
    )
    sections.append(
        (
            "Renamed",
            [
                _bullet(
                    f"{_code(old)} → {_title(now, head.data[now])} (the old id redirects)",
                    _changes(base.data[old], head.data[now]) if now in new else [],
                )
                for old, now in renamed
            ],
        )
    )
    sections.append(
        (
            "Removed",
            [
                _bullet(
                    f"{_title(s, base.data[s])}: no entry took its id as an alias, so links to it "
                    "will break",
                    [],
                )
                for s in removed
            ],
        )
    )
    sections.append(
        (
            "Changed",
            [
                _bullet(_title(s, head.data[s]), _changes(base.data[s], head.data[s]))
                for s in changed
            ],
        )
    )
    tags_added, tags_removed = sorted(head.tags - base.tags), sorted(base.tags - head.tags)
    registry = ([f"added {_codes(tags_added)}"] if tags_added else []) + (
        [f"removed {_codes(tags_removed)}"] if tags_removed else []
    )

    counts = [f"{len(items)} {name.lower()}" for name, items in sections if items]
    lines = [MARKER, f"### Nanopedia: {', '.join(counts) or 'no entry changes'}", ""]
    lines += [f"Entries at {_code(labels[1])} compared with {_code(labels[0])}.", ""]
    for name, items in sections:
        if items:
            lines += [f"**{name}**", "", *items, ""]
    if registry:
        lines += [f"**Tag registry**: {'; '.join(registry)}", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _added_details(data: Any) -> list[str]:
    if isinstance(data, str):
        return []
    details = []
    if _strings(data, "tags"):
        details.append(f"tags: {_codes(_strings(data, 'tags'))}")
    if _fingerprints(data):
        details.append(f"fingerprints: {_codes(_fingerprints(data))}")
    return details


def _bullet(head: str, details: list[str]) -> str:
    return "\n".join([f"- {head}", *(f"  - {d}" for d in details)])


def diff(entries: Path, base: str, head: str = "HEAD") -> str:
    """The Markdown summary of the entries directory between two revisions."""
    old, new = snapshots(entries, base, head)
    return summarize(old, new, (base, head))
