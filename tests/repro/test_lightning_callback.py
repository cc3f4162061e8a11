"""`nanopedia.hooks.lightning.DiagnoseCallback` in a real Lightning run on CPU that raises."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reprotools import repro_env, repro_python

TRAIN = """\
import sys
import lightning as L
import torch
from nanopedia.hooks.lightning import DiagnoseCallback
import nanopedia.hooks

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 4)

    def training_step(self, batch, _):
        y = torch.relu(self.layer(batch))
        y.add_(1)  # in place on the output relu saved for backward
        return y.sum()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

if sys.argv[1] == "both":
    nanopedia.hooks.install()
data = torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4)
trainer = L.Trainer(accelerator="cpu", max_epochs=1, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False,
                    callbacks=[DiagnoseCallback()])
try:
    trainer.fit(Model(), data)
except RuntimeError as err:
    print(f"re-raised: {type(err).__name__}", flush=True)
    raise
"""


def test_the_callback_prints_the_verdict_and_lightning_raises_the_exception(tmp_path: Path) -> None:
    python = repro_python("torch", "lightning")
    (tmp_path / "train.py").write_text(TRAIN)
    for mode in ("callback", "both"):
        done = subprocess.run(
            [str(python), "train.py", mode],
            cwd=tmp_path,
            env=repro_env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 1, done.stderr[-3000:]
        assert done.stdout.endswith("re-raised: RuntimeError\n")  # the same exception, on
        err = done.stderr
        assert "nanopedia: the verdict on RuntimeError:" in err, err[-3000:]
        assert "verdict: autograd-inplace-modified" in err
        assert err.count("verdict: autograd-inplace-modified") == 1  # once, with both hooks
        if mode == "both":  # the callback spoke first; the excepthook's traceback ends it
            assert err.index("verdict: ") < err.rindex("Traceback (most recent call last)")
            last = err.rstrip().splitlines()[-1]
            assert last.startswith("RuntimeError: one of the variables needed for gradient")
