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


def test_each_records_span_is_where_its_bytes_are(tmp_path: Path) -> None:
    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        spans = writer.write_joined("entries.json", joined(A, b"", B, C), {})
        writer.commit()
    data = (out / "entries.json").read_bytes()
    assert {name: data[at : at + length] for name, (at, length) in spans.items()} == {
        identity(A): A,
        identity(B): B,
        identity(C): C,
    }
    assert EMPTY not in spans


def test_kept_records_first_last_and_in_runs_join_as_a_whole_build_would(tmp_path: Path) -> None:
    records = [b'{"id":"%d"}' % n for n in range(6)]
    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        spans = writer.write_joined("entries.json", joined(*records), {})
        writer.commit()
    located = {name: ("entries.json", *span) for name, span in spans.items()}
    new = [b'{"id":"%d","new":1}' % n for n in (2, 5)]
    order = [records[0], records[1], new[0], records[3], records[4], new[1]]
    with SiteWriter(out) as writer:  # kept first (a run of two), fresh, a run of two, fresh last
        again = writer.write_joined("entries.json", joined(*order, fresh=tuple(new)), located)
        writer.commit()
    data = (out / "entries.json").read_bytes()
    assert data == b"".join(joined(*order).parts())
    assert {n: data[at : at + length] for n, (at, length) in again.items()} == {
        identity(r): r for r in order
    }
    with SiteWriter(out) as writer:  # every record kept: one copy from the old file
        writer.write_joined(
            "entries.json",
            joined(*order, fresh=()),
            {n: ("entries.json", *s) for n, s in again.items()},
        )
        writer.commit()
    assert (out / "entries.json").read_bytes() == data


def test_many_records_are_written_in_parts_whole(tmp_path: Path) -> None:
    records = [b'{"id":"%d"}' % n for n in range(3000)]  # more than a write's buffer holds
    out = tmp_path / "site"
    with SiteWriter(out) as writer:
        writer.write_joined("entries.json", joined(*records), {})
        writer.commit()
    assert (out / "entries.json").read_bytes() == b"".join(joined(*records).parts())


def test_a_kept_record_whose_old_file_is_gone_is_named(tmp_path: Path) -> None:
    import pytest

    from nanopedia.errors import NanopediaError

    out = tmp_path / "site"
    with SiteWriter(out) as writer, pytest.raises(NanopediaError) as caught:
        writer.write_joined(
            "entries.json", joined(A, B, fresh=(A,)), {identity(B): ("gone.json", 0, len(B))}
        )
    assert [str(p) for p in caught.value.problems] == [
        f"{out.as_posix()}: error[E041]: cannot write entries.json: No such file or directory"
    ]
