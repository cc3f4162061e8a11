"""Helpers the unit tests share: an entry parsed and validated from text, with no disk."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from conftest import FIXTURES

from nanopedia.content.load import parse
from nanopedia.content.validate import Source, check_entry
from nanopedia.diagnosis.catalogue import (
    CauseView,
    EntryView,
    FingerprintView,
    FixView,
    RangeView,
    SystemView,
)
from nanopedia.diagnosis.elastic import ErrorFile
from nanopedia.diagnosis.flight import Finding, Report
from nanopedia.diagnosis.rank import Candidate, Diagnosis
from nanopedia.diagnosis.scan import Evidence
from nanopedia.errors import Problem

Checker = Callable[..., tuple[Source | None, list[Problem]]]


@pytest.fixture
def alpha_text() -> str:
    """The fixture corpus's valid entry `alpha-failure`, as text a test may change."""
    return (FIXTURES / "corpus" / "alpha-failure.yaml").read_text(encoding="utf-8")


@pytest.fixture
def check_text() -> Checker:
    """`check_text(yaml, stem)`: the entry validated from text, as `check` would see the file."""

    def run(text: str, stem: str = "alpha-failure") -> tuple[Source | None, list[Problem]]:
        return check_entry(parse(text, f"{stem}.yaml"), stem)

    return run


@dataclass(frozen=True)
class Made:
    """A diagnosis made by hand, with the entries its reports read."""

    diagnosis: Diagnosis
    entries: dict[str, EntryView]


def line(
    fp: str,
    rank: int | None,
    n: int,
    text: str,
    indicates: str = "decisive",
    *,
    entry: str = "alpha",
    file: str = "run/job.log",
    collateral: bool = False,
    span: tuple[int, int] | None = None,
) -> Evidence:
    """One evidence line of `entry`, matched by its fingerprint `fp`."""
    return Evidence(
        entry, entry.title(), file, n, rank, text, fp, indicates, None,  # type: ignore[arg-type]
        collateral=collateral, span=span,
    )  # fmt: skip


ALPHA = EntryView(
    "alpha",
    "Alpha `bf16` failure",
    (),
    (
        CauseView("cast", "Casts to `self.dtype`", "workload", "fix-code"),
        CauseView("gpu", "A bad GPU", "infrastructure", "drain-node"),
    ),
    (FixView("Cast from `x.dtype`", ("cast",)), FixView("Drain the node", ("gpu",))),
    (SystemView("PyTorch FSDP", "torch", (RangeView("2.1", "2.5", "2.1 to before 2.5"),)),),
)
"""Two causes, each with its own fix step: the decisive line points to `gpu`, a supporting one
to `cast`."""


def _fingerprints(entry: EntryView, pointing: dict[str, str | None]) -> EntryView:
    fps = tuple(
        FingerprintView(fp, fp, fp, False, "decisive", False, 1, cause)
        for fp, cause in pointing.items()
    )
    return EntryView(entry.id, entry.title, fps, entry.causes, entry.fixes, entry.systems)


@pytest.fixture
def made() -> Made:
    """Three candidates over eight ranks: `alpha` certain (a decisive line on five ranks, a
    supporting one, a collateral one), `beta` possible, `gamma` benign; rank 0 failed first,
    ranks 2 and 7 are silent; two error files and a Flight Recorder report with a finding."""
    decisive = "[rank{r}]: RuntimeError: CUDA error: uncorrectable ECC error encountered"
    alpha = [
        line("cast-warning", 1, 3, "UserWarning: casting to self.dtype", "supporting"),
        *[line("ecc", r, 10 + r, decisive.format(r=r), span=(9, 70)) for r in (0, 1, 3, 4, 5)],
        line("nccl-abort", 6, 40, "NCCL watchdog aborted the communicator", collateral=True),
    ]
    beta = [line("generic", 4, 50, "Error | `x` *y* @oncall https://a.example", entry="beta",
                 indicates="supporting")]  # fmt: skip
    gamma = [line("noisy", None, 60, "warning: noisy", "benign", entry="gamma")]
    matches = (
        Candidate("alpha", ALPHA.title, 5.5, False, tuple(alpha)),
        Candidate("beta", "Beta | failure", 0.5, False, tuple(beta), strength=1),
        Candidate("gamma", "Gamma", 0.1, True, tuple(gamma), strength=1),
    )
    errors = (
        ErrorFile("run/attempt_0/3/error.json", 3, 0, "RuntimeError: late", "tb", 1_800_000_100),
        ErrorFile("run/attempt_0/1/error.json", None, 0, "ValueError: `odd`", "tb", None),
        ErrorFile("run/attempt_0/0/error.json", 0, 0, "RuntimeError: early", "tb", 1_800_000_000),
    )
    finding = Finding("behind", "0 (default_pg)", 7, (6,), (0, 1), "all_reduce", (), "nccl-hang")
    flight = Report((("dump0", 0), ("dump1", 1), ("dump6", 6)), (finding,), (2, 7))
    diagnosis = Diagnosis(
        matches,
        0,
        alpha[1],
        "the earliest timestamp",
        silent_ranks=(2, 7),
        error_files=errors,
        flight_report=flight,
    )
    entries = {
        "alpha": _fingerprints(ALPHA, {"cast-warning": "cast", "ecc": "gpu", "nccl-abort": None}),
        "beta": EntryView("beta", "Beta | failure", (), ALPHA.causes[:1], ALPHA.fixes[:1]),
    }
    return Made(diagnosis, entries)
