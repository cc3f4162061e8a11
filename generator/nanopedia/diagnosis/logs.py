"""A log's bytes as whole, normalised lines, read in large buffers with bounded memory.

Logs are plain or gzip (recognised by the magic number, never unpacked past a limit), any size.
Each buffer ends at a line boundary and the incomplete last line is carried into the next, so a
match that straddles a read boundary is still found. CRLF, lone CRs, colour codes and a terminal's
hard wrap are undone the same way `theme/static/diagnose-worker.js` undoes them. A large plain file
is cut into stretches (`segments`) that `scan.scan_file`'s workers read in parallel, from a memory
map (`mapped`, the same buffers as `streamed`).
"""

from __future__ import annotations

import errno
import gzip
import io
import mmap
import os
import re
import select
import stat
import sys
import time
import zlib
from collections.abc import Iterator
from typing import IO, cast

#: Bytes read per buffer: large enough that the set's per-call overhead vanishes.
BUFFER_BYTES = 8 << 20
#: A line longer than this is cut (its bytes past the cut are still scanned, as the next piece).
MAX_LINE_BYTES = 1 << 20


def open_log(
    path: str, deadline: float | None = None, pipes: bool = False
) -> tuple[IO[bytes], IO[bytes]]:
    """The log's bytes and the raw file under them (its position drives the progress bar).

    `-` is stdin; gzip is recognised by its magic number, not by the file name. A path is opened
    by `open_regular`, so a FIFO never blocks the open; with `pipes`, a pipe (`<(zcat log)`) is
    read like stdin, each read waiting no later than `deadline` (`Waiting`); without, it is
    refused (`NotRegular`).
    """
    raw: IO[bytes]
    if path == "-":
        raw = _stdin(deadline)
    else:
        fd = _open_fd(path)
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            if not pipes and not stat.S_ISREG(mode):
                raise NotRegular(errno.EINVAL, NOT_REGULAR, path)
        except BaseException:
            os.close(fd)
            raise
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            raw = os.fdopen(fd, "rb")
        else:
            raw = cast(IO[bytes], Waiting(fd, deadline, owned=True))
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head[:2] != b"\x1f\x8b":
        coding = utf16(head)
        return (cast(IO[bytes], Transcoded(raw, coding)) if coding else raw), raw
    unpacked = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    if path == "-":
        stream = Capped(unpacked, None)
    else:
        packed = os.fstat(raw.fileno()).st_size if isinstance(raw, io.BufferedReader) else None
        stream = Capped(unpacked, packed, raw)
    try:
        inner = stream.read(4)
    except BaseException:
        stream.close()
        raise
    coding = utf16(inner)
    prefixed = Prefixed(inner, stream)
    return cast(IO[bytes], Transcoded(prefixed, coding) if coding else prefixed), raw


def utf16(head: bytes) -> str | None:
    """The codec of a UTF-16 log (what PowerShell's `>` writes), from its first bytes: a byte
    order mark, or ASCII text with a NUL after (LE) or before (BE) each character."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"  # the codec reads the mark and drops it
    if len(head) == 4 and head[1::2] == b"\0\0" and 0 not in head[0::2]:
        return "utf-16-le"
    if len(head) == 4 and head[0::2] == b"\0\0" and 0 not in head[1::2]:
        return "utf-16-be"
    return None


NOT_REGULAR = "not a regular file (a pipe, socket or device)"


class NotRegular(OSError):
    """A path that is not a regular file where only one is read (triage's logs)."""


def open_regular(path: str) -> IO[bytes]:
    """A regular file opened for reading, or `NotRegular`: the open itself never waits (a FIFO
    swapped in after its folder was listed would block a plain `open` until a writer comes)."""
    fd = _open_fd(path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(errno.EINVAL, NOT_REGULAR, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _open_fd(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))


def _stdin(deadline: float | None) -> IO[bytes]:
    """Standard input, read through `Waiting` when it is a real file descriptor (a test's
    replacement without one is read as it is)."""
    try:
        fd = sys.stdin.buffer.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.stdin.buffer
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return sys.stdin.buffer  # `< file`: it ends
    return cast(IO[bytes], Waiting(fd, deadline, owned=False))


class Waiting:
    """A pipe, FIFO or terminal read until its end or until `deadline` (a `time.monotonic()`
    value), whichever comes first: every read waits in `select`, so a writer that keeps the pipe
    open and silent (`tail -f`, `kubectl logs -f`) cannot hold a scan past its deadline. Ending at
    the deadline sets `timed_out`; what was read before is scanned as the whole input."""

    def __init__(self, fd: int, deadline: float | None, owned: bool) -> None:
        self.fd, self.deadline, self.owned = fd, deadline, owned
        self.pending = b""
        self.timed_out = False
        self.ended = False

    def _wait(self, timeout: float | None) -> bool:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                if timeout != 0:
                    self.timed_out = True
                return False
            timeout = left if timeout is None else min(timeout, left)
        ready = select.select([self.fd], [], [], timeout)[0]
        if not ready and timeout != 0:
            self.timed_out = True
        return bool(ready)

    def _read_once(self, into: memoryview, timeout: float | None) -> int:
        """Bytes read into `into`, 0 at the end, -1 when nothing came in `timeout`."""
        if self.ended:
            return 0
        while self._wait(timeout):
            try:
                got = os.readv(self.fd, [into])
            except BlockingIOError:
                continue
            if got == 0:
                self.ended = True
            return got
        return -1

    def readinto(self, into: memoryview) -> int:
        """At least one byte (waiting for it), then whatever is ready at once, up to `len(into)`:
        a fast pipe fills large buffers, a slow one is scanned as it comes."""
        n = min(len(self.pending), len(into))
        if n:
            into[:n] = self.pending[:n]
            self.pending = self.pending[n:]
            return n
        got = self._read_once(into, None)
        if got <= 0:
            return 0
        while got < len(into) and (more := self._read_once(into[got:], 0)) > 0:
            got += more
        return got

    def read(self, size: int = -1) -> bytes:
        out = bytearray(size if size >= 0 else BUFFER_BYTES)
        parts = []
        while True:
            got = self.readinto(memoryview(out))
            parts.append(bytes(out[:got]))
            if got == 0 or size >= 0:
                return b"".join(parts)

    def peek(self, size: int = 1) -> bytes:
        while len(self.pending) < size:
            chunk = bytearray(size - len(self.pending))
            got = self._read_once(memoryview(chunk), None)
            if got <= 0:
                break
            self.pending += bytes(chunk[:got])
        return self.pending

    def fileno(self) -> int:
        return self.fd

    def tell(self) -> int:
        return 0

    def close(self) -> None:
        if self.owned and self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Waiting:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


#: A gzip log may unpack to this many times its size, and to at least `UNPACKED_FLOOR` bytes:
#: real logs compress 10 to 100 times; 10 GB of zeros fit in 10 MB.
UNPACKED_RATIO = 200
UNPACKED_FLOOR = 2 << 30


class LogTooLarge(OSError):
    """A compressed log unpacks to far more than any real log (a gzip bomb)."""


class Stream:
    """A stream known by its `read`, with the `readinto` that `buffers` fills its array with."""

    def read(self, size: int = -1) -> bytes:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release unless a subclass holds a file."""

    def readinto(self, into: memoryview) -> int:
        data = self.read(len(into))
        into[: len(data)] = data
        return len(data)


class Capped(Stream):
    """A gzip stream that stops with `LogTooLarge` past its unpacking limit; a corrupt stream
    raises `OSError` (never `zlib.error`), so the CLI names the file instead of crashing."""

    def __init__(
        self, stream: IO[bytes], packed: int | None, under: IO[bytes] | None = None
    ) -> None:
        self.stream, self.under = stream, under
        self.limit = max(UNPACKED_FLOOR, UNPACKED_RATIO * (packed or 0))
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(size)
        except (zlib.error, EOFError) as err:
            raise OSError(f"not a valid gzip file ({err})") from None
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise LogTooLarge(
                f"it unpacks to more than {self.limit:,} bytes, far more than a "
                "real log; unpack it yourself if it is one"
            )
        return data

    def __enter__(self) -> Capped:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()
        if self.under is not None:  # `GzipFile(fileobj=)` leaves its file open
            self.under.close()


#: One buffer: the first `length` bytes of `data` are whole lines.
Buffer = tuple[bytes | bytearray | memoryview, int]


def buffers(stream: IO[bytes], size: int = BUFFER_BYTES) -> Iterator[Buffer]:
    """Whole-line buffers of about `size` bytes, normalised so both engines see the same lines.

    CRLF becomes LF and a lone CR (progress bars) a space, so line numbers are those of `grep -n`
    and `.` means the same in RE2 and JavaScript; colour codes go. A line longer than
    `MAX_LINE_BYTES` is cut so memory stays bounded; the cut does not count as a new line.

    The stream is read into one reused array, its incomplete last line moved to the front for the
    next read: a buffer with nothing to normalise or unwrap (nearly all of them) is that array,
    valid until the next buffer is asked for, so no byte is copied in Python on the way to RE2.
    """
    buf = bytearray(size + max(size, MAX_LINE_BYTES))  # a carry is shorter than either
    view = memoryview(buf)
    have = 0  # bytes carried at the front: a line without its newline yet
    while got := stream.readinto(view[have : have + size]):  # type: ignore[attr-defined]
        end = have + got
        cut = buf.rfind(b"\n", have, end)  # a carry holds no newline
        if cut < 0:
            if end < MAX_LINE_BYTES:
                have = end
                continue
            yield _cleaned(buf, 0, end)
            have = 0
            continue
        yield _cleaned(buf, 0, cut + 1)
        have = end - cut - 1
        buf[:have] = bytes(view[cut + 1 : end])  # a copy: the two ranges may overlap
    if have:
        last = unwrap(normalise(bytes(view[:have])) + b"\n")
        yield last, len(last)


def newlines(data: bytes | bytearray | memoryview, start: int, end: int) -> int:
    """Newlines in `data[start:end]`.

    A view of a memory map (`mapped`) has no `count`, and copying it out would undo the map; numpy
    counts in place and compares 32 bytes per instruction, about 7 GB/s here against `bytes.count`'s
    3 GB/s (CPython tests one byte at a time). In pieces, so its scratch array stays in the cache.
    """
    if not isinstance(data, memoryview):
        return data.count(b"\n", start, end)
    import numpy

    array = numpy.frombuffer(data, numpy.uint8, end - start, start)
    return sum(
        int(numpy.count_nonzero(array[i : i + _PIECE] == 10)) for i in range(0, len(array), _PIECE)
    )


#: Bytes numpy compares at a time in `newlines` (its scratch array is as many bytes).
_PIECE = 256 << 10


def streamed(file: IO[bytes], start: int, end: int, size: int = BUFFER_BYTES) -> Iterator[Buffer]:
    """The buffers of bytes `start` to `end` of a file, read into `buffers`' array."""
    file.seek(start)
    return buffers(FileSlice(file, end), size)  # type: ignore[arg-type]


def mapped(file: IO[bytes], start: int, end: int, size: int = BUFFER_BYTES) -> Iterator[Buffer]:
    """The buffers `streamed` gives for bytes `start` to `end` of a file, cut at the same
    offsets, as views of a memory map of them: the page cache itself, not a copy. Two processes
    copying a file out at once each spent a third of their scan in `readinto`.

    For worker processes only: a file cut short while it is mapped raises SIGBUS when the lost
    pages are read, which ends the process. `scan_file`'s pool reports a worker that ended; the
    CLI's own process would die without a word.
    """
    if end <= start:
        return
    base = start - start % mmap.ALLOCATIONGRANULARITY
    try:
        mm = mmap.mmap(file.fileno(), end - base, offset=base, access=mmap.ACCESS_READ)
    except ValueError:  # mmap refuses to map past the end of the file
        raise OSError("it was cut short while it was read") from None
    lo = read_to = start - base
    stop = end - base
    while read_to < stop:
        read_to = min(stop, read_to + size)
        cut = mm.rfind(b"\n", lo, read_to)
        if cut < 0:
            if read_to - lo < MAX_LINE_BYTES:
                continue
            yield _cleaned(mm, lo, read_to)
            lo = read_to
            continue
        yield _cleaned(mm, lo, cut + 1)
        lo = cut + 1
    if lo < stop:
        last = unwrap(normalise(mm[lo:stop]) + b"\n")
        yield last, len(last)


def _cleaned(buf: bytearray | mmap.mmap, start: int, end: int) -> Buffer:
    """`buf[start:end]` as `normalise` then `unwrap` leave it. When neither has work (found with
    memchr, not a pass in Python) that is `buffers`' own array (its lines start at 0) or a view
    of the map; otherwise a normalised copy."""
    if buf.find(b"\r", start, end) < 0 and buf.find(b"\x1b", start, end) < 0:
        if wrap_width(bytes(buf[start : min(end, start + WRAP_SAMPLE)])) is None:
            if isinstance(buf, bytearray):
                return buf, end
            return memoryview(buf)[start:end], end - start
        data = unwrap(bytes(buf[start:end]))
    else:
        data = unwrap(normalise(bytes(buf[start:end])))
    return data, len(data)


def normalise(data: bytes) -> bytes:
    """CRLF to LF, lone CR to space, ANSI colour and cursor sequences (CSI) removed, so a
    coloured `[rank0]:` prefix is still a prefix (cheap: only when a CR or an ESC is present)."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b" ")
    if b"\x1b" in data and b"\x1b[" in data:  # memchr first: a two-byte find is slow
        data = _CSI.sub(b"", data)
    return data


#: Bytes at the start of a buffer in which a terminal's hard wrap is looked for.
WRAP_SAMPLE = 64 << 10
#: The narrowest terminal whose wrapping is undone.
WRAP_MIN = 60


def wrap_width(data: bytes) -> int | None:
    """The width a terminal hard-wrapped this text at, or None.

    A copied terminal screen cuts every long record at the same column, mid-word: the widest
    width (in characters, at least `WRAP_MIN`) that two different lines of the sample share is
    the wrap when at least half the lines near or past it have exactly it, at most one line (a
    glued progress bar) is wider, and at least one of them cuts a word or a number in two.
    Fixed-format training lines share a width too, but end where a record ends.
    """
    sample = data[:WRAP_SAMPLE]
    lines = sample.split(b"\n")[:-1]
    if not lines:
        return None
    # Runs on every buffer read: ASCII text needs no per-line count, the cheap tests come first.
    widths = list(map(len, lines)) if sample.isascii() else [columns(line) for line in lines]
    seen: dict[int, set[bytes]] = {}
    for line, w in zip(lines, widths, strict=True):
        if w >= WRAP_MIN:
            seen.setdefault(w, set()).add(line)
    wide = [w for w, texts in seen.items() if len(texts) >= 2]
    if not wide:
        return None
    width = max(wide)
    if sum(w > width for w in widths) > 1:
        return None
    near = {line for line, w in zip(lines, widths, strict=True) if w > width * 9 // 10}
    if 2 * len(seen[width]) < len(near):
        return None
    if not any(
        widths[i] == width and same_class(lines[i][-1:], lines[i + 1][:1])
        for i in range(len(lines) - 1)
    ):
        return None
    return width


def same_class(a: bytes, b: bytes) -> bool:
    """Two ASCII letters or two digits: a word or a number cut in two."""
    return (a.isalpha() and b.isalpha()) or (a.isdigit() and b.isdigit())


def columns(line: bytes) -> int:
    """Characters in a UTF-8 line (the bytes that do not continue a character): the columns a
    terminal gave it, wide characters aside."""
    return len(line.translate(None, _CONTINUATION))


_CONTINUATION = bytes(range(0x80, 0xC0))


def unwrap(data: bytes) -> bytes:
    """Text hard-wrapped by a terminal with each record joined back into one line.

    A line of the wrap width (or wider: a progress bar glued to its start) continues on the
    next, unless it ends in padding (two spaces). The newlines removed are put back after the
    joined record, as empty lines, so line numbers and byte offsets of everything else stay
    those of the file.
    """
    width = wrap_width(data)
    if width is None:
        return data
    out: list[bytes] = []
    held = 0
    for line in data.split(b"\n")[:-1]:
        if len(line) >= width and columns(line) >= width and not line.endswith(b"  "):
            out.append(line)
            held += 1
            continue
        out.append(line + b"\n" * (held + 1))
        held = 0
    if held:
        out.append(b"\n" * held)
    return b"".join(out)


#: An ANSI control sequence: ESC [, parameter bytes, intermediate bytes, one final byte.
_CSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")


#: A plain log is scanned in stretches of at most about this many bytes (cut at a newline).
SEGMENT_BYTES = 64 << 20


def segments(stream: IO[bytes], size: int) -> list[tuple[int, int]]:
    """(start, end) byte ranges covering the file, each ending just after a newline (or at the
    end): the file is read forward once in all, even when it is one enormous line.

    The stretches are of one length, at most `SEGMENT_BYTES` (a short last one would leave a
    core idle while the other scans it).
    """
    stride = -(-size // max(1, -(-size // SEGMENT_BYTES)))
    cuts: list[tuple[int, int]] = []
    start = pos = 0
    while (target := (len(cuts) + 1) * stride) < size:  # from the file's start: no drift
        pos = max(pos, target)
        stream.seek(pos)
        while True:
            block = stream.read(1 << 16)
            if not block:
                pos = size
                break
            found = block.find(b"\n")
            if found >= 0:
                pos += found + 1
                break
            pos += len(block)
        if pos >= size:
            break
        cuts.append((start, pos))
        start = pos
    cuts.append((start, size))
    return cuts


class FileSlice:
    """Bytes `start` to `end` of a file, read like a stream."""

    def __init__(self, file: IO[bytes], end: int) -> None:
        self.file, self.left = file, end - file.tell()

    def readinto(self, into: memoryview) -> int:
        got: int = self.file.readinto(into[: min(len(into), self.left)])  # type: ignore[attr-defined]
        self.left -= got
        return got


class Prefixed(Stream):
    """Bytes already read from a stream, then the rest of it."""

    def __init__(self, head: bytes, stream: Stream | IO[bytes]) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.stream.read(size)
        if 0 <= size < len(self.head):
            data, self.head = self.head[:size], self.head[size:]
            return data
        data, self.head = self.head, b""
        return data + self.stream.read(size - len(data) if size >= 0 else -1)

    def __enter__(self) -> Prefixed:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()


class Transcoded(Stream):
    """A UTF-16 log read as UTF-8, so the fingerprints (UTF-8 patterns) see its text; line
    numbers are unchanged, byte offsets are those of the UTF-8 text."""

    def __init__(self, stream: Stream | IO[bytes], coding: str) -> None:
        import codecs

        self.stream = stream
        self.decoder = codecs.getincrementaldecoder(coding)("replace")
        self.pending = b""
        self.done = False

    def read(self, size: int = -1) -> bytes:
        while not self.done and (size < 0 or len(self.pending) < size):
            chunk = self.stream.read(1 << 20)
            self.done = not chunk
            self.pending += self.decoder.decode(chunk, final=self.done).encode(
                "utf-8", "surrogatepass"
            )
        cut = len(self.pending) if size < 0 else size
        data, self.pending = self.pending[:cut], self.pending[cut:]
        return data

    def __enter__(self) -> Transcoded:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.stream.close()
