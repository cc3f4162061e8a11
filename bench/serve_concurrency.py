"""Many requests at once against `nanopedia serve` (not part of the tests).

    .venv/bin/python bench/serve_concurrency.py [--requests 200] [--rounds 3] [--backlog N]

Builds the fixture corpus into a temporary folder, serves it as `nanopedia serve` does (in this
process, without the watcher), then opens `--requests` connections at the same moment, each asking
for the home page, and times until every answer is in. `--backlog` overrides the listen backlog
(`serve.BACKLOG`), e.g. `--backlog 5` for the standard library's default, to see what it costs:
with it, connections beyond the queue wait for the kernel's SYN retries (1 s, then 3 s...).
Prints the worst and median wall time of the rounds and how many requests failed.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nanopedia.commands import serve  # noqa: E402


def fire(port: int, count: int) -> tuple[float, int]:
    """Seconds until `count` simultaneous GETs of / have all been answered, and the failures."""
    barrier = threading.Barrier(count + 1)
    failed = [0]
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()

    def one() -> None:
        barrier.wait()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                conn.sendall(request)
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
            if not data.startswith(b"HTTP/1.0 200 "):
                failed[0] += 1
        except OSError:
            failed[0] += 1

    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - start, failed[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backlog", type=int, default=serve.BACKLOG)
    args = ap.parse_args()
    serve._HTTPServer.request_queue_size = args.backlog
    with tempfile.TemporaryDirectory() as scratch:
        server = serve.Server(
            ROOT / "tests" / "fixtures" / "corpus",
            Path(scratch) / "site",
            None,
            0,
            lambda message: None,
        )
        server.rebuild("first build")
        server.start(watching=False)
        try:
            times, failures = [], 0
            for _ in range(args.rounds):
                seconds, failed = fire(server.port, args.requests)
                times.append(seconds)
                failures += failed
        finally:
            server.close()
    print(
        f"{args.requests} simultaneous requests, backlog {args.backlog}, {args.rounds} rounds: "
        f"median {statistics.median(times):.2f}s, worst {max(times):.2f}s, "
        f"{failures} failed"
    )


if __name__ == "__main__":
    main()
