"""The verdict where a training script dies: an exception hook any script installs in one line.

    import nanopedia.hooks; nanopedia.hooks.install()

wraps `sys.excepthook` (an uncaught exception in the main thread) and `threading.excepthook` (in
any other thread). The hook that was there before runs first, unchanged (Python's own prints the
traceback, a framework's does what it did), then the exception is diagnosed in-process from its
traceback text (`traceback.format_exception`, the text Python prints) with the CLI's compiled
catalogue and the verdict is printed at the end of stderr. The Hugging Face Trainer has no
exception event: this hook is how it gets a verdict. PyTorch Lightning has one, `on_exception`:
`nanopedia.hooks.lightning.DiagnoseCallback`. Neither ever hides or replaces the exception;
a diagnosis that fails says so in one line. Under torchrun the verdict names the rank (`RANK`).
An exception is diagnosed once, whichever hook sees it first (`DIAGNOSED`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

#: Candidates shown in a verdict.
TOP = 3
#: Set on an exception once its verdict was printed, so a second hook stays quiet.
DIAGNOSED = "__nanopedia_diagnosed__"
#: Exceptions that end a program on purpose: no verdict.
QUIET = (KeyboardInterrupt, SystemExit, GeneratorExit)

_installed: (
    tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]] | None
) = None


def report(exc: BaseException, stream: TextIO | None = None) -> None:
    """Print the verdict on `exc` to `stream` (default stderr). Never raises."""
    if isinstance(exc, QUIET) or getattr(exc, DIAGNOSED, False):
        return
    try:
        setattr(exc, DIAGNOSED, True)
    except (AttributeError, TypeError):
        pass  # an exception type with slots: it may be diagnosed twice, never hidden
    out = stream or sys.stderr
    try:
        import nanopedia

        rank = os.environ.get("RANK", "")
        name = f"<exception rank{rank}>" if rank.isdigit() else "<exception>"
        result = nanopedia.diagnose(exc, name=name)
        if result.matches:
            from nanopedia.diagnosis.text_report import columns

            text = (
                f"nanopedia: the verdict on {type(exc).__name__}:\n{result.as_text(TOP, columns())}"
            )
        else:
            text = f"nanopedia: no known failure matched {type(exc).__name__}"
        print(f"\n{text}", file=out, flush=True)
    except Exception as err:  # the program's own exception matters more than our verdict
        try:
            print(f"nanopedia: no verdict ({type(err).__name__}: {err})", file=out, flush=True)
        except Exception:
            pass


def install() -> None:
    """Wrap `sys.excepthook` and `threading.excepthook` (again: nothing changes)."""
    global _installed
    if _installed is not None:
        return
    before_sys, before_thread = sys.excepthook, threading.excepthook

    def excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        before_sys(kind, value, tb)
        report(value)

    def thread_excepthook(args: threading.ExceptHookArgs) -> None:
        before_thread(args)
        if args.exc_value is not None:
            report(args.exc_value)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    _installed = (before_sys, before_thread, excepthook, thread_excepthook)


def uninstall() -> None:
    """Put the hooks back as they were, where no one has replaced ours since."""
    global _installed
    if _installed is None:
        return
    before_sys, before_thread, ours_sys, ours_thread = _installed
    if sys.excepthook is ours_sys:
        sys.excepthook = before_sys
    if threading.excepthook is ours_thread:
        threading.excepthook = before_thread
    _installed = None
