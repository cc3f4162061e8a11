"""`nanopedia/site/joined.py`: a file of one record per entry, whose key does not need the
records' bytes, and which the writer rebuilds from records kept in the last site."""

from __future__ import annotations

import json
from pathlib import Path

from nanopedia.incremental.write import SiteWriter
from nanopedia.site.joined import EMPTY, Joined, identity

A, B, C = b'{"id":"a"}', b'{"id":"b"}', b'{"id":"c"}'


def joined(*records: bytes, fresh: tuple[bytes, ...] | None = None) -> Joined:
    made = records if fresh is None else fresh
    return Joined(b"[", [identity(r) for r in records], {identity(r): r for r in made}, b"]")


def test_the_records_are_joined_by_commas_and_empty_ones_left_out() -> None:
    assert b"".join(joined(A, b"", B, b"", C).parts()) == b'[{"id":"a"},{"id":"b"},{"id":"c"}]'
    assert b"".join(joined(b"", A).parts()) == b'[{"id":"a"}]'  # no comma before the first
    assert b"".join(joined().parts()) == b"[]"
    assert identity(b"") == EMPTY


def test_the_key_follows_names_head_and_tail_but_not_which_bytes_are_at_hand() -> None:
    whole, kept = joined(A, B), joined(A, B, fresh=(B,))
    assert whole.key() == kept.key()  # the same file, whether A was made now or kept
    assert joined(B, A).key() != whole.key()
    assert Joined(b"{", whole.names, whole.fresh, b"]").key() != whole.key()
    assert Joined(b"[", whole.names, whole.fresh, b"}").key() != whole.key()


def test_a_rebuild_copies_kept_records_from_the_last_site(tmp_path: Path) -> None:
    """The writer takes the records not made in this build from their spans in the old file,
    and the result is the file `parts` would have made with every record at hand."""
    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        spans = writer.write_joined("entries.json", joined(A, B, C), {})
        writer.commit()
    assert json.loads((out / "entries.json").read_bytes()) == [
        {"id": "a"},
        {"id": "b"},
        {"id": "c"},
    ]
    located = {name: ("entries.json", *span) for name, span in spans.items()}
    new_b = b'{"id":"b","edited":true}'
    with SiteWriter(out) as writer:
        writer.write_joined("entries.json", joined(C, new_b, A, fresh=(new_b,)), located)
        writer.commit()
    assert (out / "entries.json").read_bytes() == b"".join(joined(C, new_b, A).parts())
