"""Files made of one record per entry, such as `entries.json`: a head, the records joined by
commas, a tail.

At 10,000 entries these files hold 130 MB, while an edit changes one record. So a record is named
by a hash of its bytes, and a rebuild that kept a record from the last build leaves its bytes out:
the writer copies them from where the last build wrote them (`write.SiteWriter.write_joined`),
inside the kernel, instead of this process reading and writing them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

SEPARATOR = b","


def identity(record: bytes) -> str:
    """The name of a record: a hash of its bytes (equal bytes may be copied from either place)."""
    return hashlib.blake2b(record, digest_size=16).hexdigest()


EMPTY = hashlib.blake2b(b"", digest_size=16).hexdigest()
"""The name of an empty record (an entry with nothing for this file), which is left out."""


@dataclass(frozen=True, slots=True)
class Record:
    name: str
    """`identity(data)`."""
    data: bytes | None
    """The bytes, or None when the last build wrote them and they are to be copied from there."""


def record(data: bytes) -> Record:
    return Record(identity(data), data)


def kept(name: str) -> Record:
    """A record the last build wrote, by its name: its bytes are copied from there."""
    return Record(name, b"" if name == EMPTY else None)


@dataclass(frozen=True, slots=True)
class Joined:
    """`head`, then the non-empty records separated by commas, then `tail`."""

    head: bytes
    records: Sequence[Record]
    tail: bytes

    def key(self) -> bytes:
        """What decides the file's bytes, without the bytes of the records."""
        names = b"".join(r.name.encode() for r in self.records)
        return b"\0".join((self.head, names, self.tail))

    def parts(self) -> Iterator[bytes]:
        """The whole file, when every record's bytes are at hand."""
        yield self.head
        first = True
        for r in self.records:
            if r.name == EMPTY:
                continue
            if r.data is None:
                raise ValueError(f"record {r.name} has no bytes")
            if r.data:
                yield r.data if first else SEPARATOR + r.data
                first = False
        yield self.tail
