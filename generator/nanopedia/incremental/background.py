"""Background jobs of a build: saving its state and deleting the files it replaced.

They run in threads, one chain each: the next build waits for the saving (`settle`), forking
workers and the end of the process wait for both (`finish`). The console script's build queues
them instead (`defer`) and runs them in a detached process (`detach`), so the prompt comes back
as soon as the site is written. Nothing here imports the rest of the generator: the console
script uses it before its imports.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

_jobs: list[threading.Thread | None] = [None, None]
"""The last job of each chain: saving states, and deleting replaced files."""
_queued: list[Callable[[], object]] | None = None
"""The jobs given, when they wait for `detach` instead of running in threads."""
_handed: list[list[Callable[[], object]]] = []


def later(fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    """Run `fn` (saving a state) in a thread after the one before it: `serve` need not wait
    for it to reload the tabs. The next build waits for it (`settle`), and so does the end of
    the process. After `defer()`, only queue it."""
    _chain(0, partial(fn, *args, **kwargs))


def discard(folder: Path) -> None:
    """Delete a folder of replaced files in the background. The build waits for it before it
    returns (`tidy`), but for `serve`, which reloads the tabs first: after a full build of 10,000
    entries, deleting the old site took a second, which its first rebuild used to wait for.
    Forking workers and the end of the process wait for it too."""
    _chain(1, partial(shutil.rmtree, folder, ignore_errors=True))


def _chain(n: int, job: Callable[[], object]) -> None:
    if _queued is not None:
        _queued.append(job)
        return
    before = _jobs[n]

    def run() -> None:
        if before is not None:
            before.join()
        job()

    thread = _jobs[n] = threading.Thread(target=run, name="nanopedia-later")
    thread.start()


def tidy() -> None:
    """Wait for the folders being deleted: a build that returns to a library caller leaves no
    folder of its cache disappearing under a walk of it (`os.walk`, `Path.rglob` fail on a
    folder deleted while they list it)."""
    if _jobs[1] is not None:
        _jobs[1].join()


def settle() -> None:
    """Wait for the states being saved."""
    if _jobs[0] is not None:
        _jobs[0].join()


def finish() -> None:
    """Wait for every job started, and run those queued."""
    for job in _jobs:
        if job is not None:
            job.join()
    while _queued:
        _queued.pop(0)()


def defer() -> None:
    """Queue the jobs from now on, for `detach` (the console script's `build`)."""
    global _queued
    _queued = []


def detach() -> None:
    """Run the queued jobs in a process of their own and return at once: the site is complete
    and the prompt need not wait for the state to be saved and the replaced files deleted (a
    sixth of a one-entry rebuild at 10,000 entries). A build that starts meanwhile waits for
    the state (`load`); were the jobs lost, the next build would only take longer."""
    if not _queued:
        return
    try:
        pid = os.fork()
    except OSError:
        finish()
        return
    if pid:
        # Held, not freed: the caller is about to exit, and freeing the state of 10,000
        # entries object by object took a tenth of a second.
        _handed.append(list(_queued))
        _queued.clear()
        return
    try:
        os.setsid()  # not stopped by a Ctrl-C meant for what the terminal runs next
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # nobody waiting on our output waits for the jobs
        finish()
    finally:
        os._exit(0)
