"""Files made of one record per entry, such as `entries.json`: a head, the records joined by
commas, a tail.

At 10,000 entries these files hold 130 MB, while an edit changes one record. So a record is named
by a hash of its bytes, and a rebuild that kept a record from the last build leaves its bytes out:
the writer copies them from where the last build wrote them (`write.SiteWriter.write_joined`),
inside the kernel, instead of this process reading and writing them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

SEPARATOR = b","


def identity(record: bytes) -> str:
    """The name of a record: a hash of its bytes (equal bytes may be copied from either place)."""
    return hashlib.blake2b(record, digest_size=16).hexdigest()


EMPTY = hashlib.blake2b(b"", digest_size=16).hexdigest()
"""The name of an empty record (an entry with nothing for this file), which is left out."""


@dataclass(frozen=True, slots=True)
class Joined:
    """`head`, then the non-empty records separated by commas, then `tail`."""

    head: bytes
    names: Sequence[str]
    """Every record's name, in order."""
    fresh: Mapping[str, bytes]
    """The bytes of the records made in this build; the others were written by the last one."""
    tail: bytes

    def key(self) -> bytes:
        """What decides the file's bytes, without the bytes of the records."""
        return b"\0".join((self.head, "".join(self.names).encode(), self.tail))

    def parts(self) -> Iterator[bytes]:
        """The whole file, when every record's bytes are at hand."""
        yield self.head
        first = True
        for name in self.names:
            if name != EMPTY:
                data = self.fresh[name]
                yield data if first else SEPARATOR + data
                first = False
        yield self.tail
