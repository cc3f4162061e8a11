"""A PyTorch Lightning callback that prints the verdict when `fit`, `validate` or `test` fails.

    from nanopedia.hooks.lightning import DiagnoseCallback
    trainer = lightning.Trainer(callbacks=[DiagnoseCallback()])

Lightning calls `on_exception` with the exception, then raises it again itself: the callback
only prints (`nanopedia.hooks.report`), so the exception goes on as before. Needs `lightning`
(or the older `pytorch_lightning`) installed.
"""

from __future__ import annotations

from typing import Any

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError:
        raise ImportError(
            "nanopedia.hooks.lightning needs PyTorch Lightning: pip install lightning"
        ) from None

from nanopedia.hooks import report


class DiagnoseCallback(Callback):
    """Prints the verdict on the exception that stopped the trainer, at the end of stderr."""

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        report(exception)
