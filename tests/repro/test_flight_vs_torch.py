"""Our Flight Recorder reader next to torch's own analyser on the same real dumps.

torch's analyser (`python -m torch.distributed.flight_recorder.fr_trace DIR`) runs in the
pinned repro environment (`.venv-repro`, torch 2.13.0), as a subprocess of this test, so the
default suite needs no torch. `.ci/run` runs this folder after `make verify` with
`NANOPEDIA_REQUIRE_REPRO=1`, so there it never skips; elsewhere it skips without the venv.

Two things torch's analyser needs that the dumps do not give it, both done in the subprocess on
our own fixtures (trusted: we made them): it reads only pickles (its `read_dump` unpickles), so
each JSON dump is pickled into a temporary folder; and torch 2.13's gloo dumps key `pg_config`
by "" while their entries name process group "0", on which the analyser stops with a KeyError
(checked below), so the copy given to it keys `pg_config` by the entries' own group names.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.diagnosis import flight

REPRO_PYTHON = Path(
    os.environ.get("NANOPEDIA_REPRO_PYTHON", ROOT / ".venv-repro" / "bin" / "python")
)
FLIGHT = ROOT / "tests" / "logs" / "flight"

pytestmark = pytest.mark.skipif(
    not REPRO_PYTHON.exists() and not os.environ.get("NANOPEDIA_REQUIRE_REPRO"),
    reason=f"no repro environment at {REPRO_PYTHON} (make verify creates it)",
)

DRIVER = r"""
import json, os, pickle, subprocess, sys, tempfile
src, fix = sys.argv[1], sys.argv[2] == "fix"
with tempfile.TemporaryDirectory() as d:
    for f in sorted(os.listdir(src)):
        if f.startswith("rank") and f.endswith(".json"):
            with open(os.path.join(src, f)) as fp:
                data = json.load(fp)
            if fix:
                (only,) = data["pg_config"].values()
                names = {tuple(e["process_group"]) for e in data["entries"]}
                data["pg_config"] = {n: {**only, "name": n, "desc": d} for n, d in names}
            with open(os.path.join(d, "rank_" + f[4:-5]), "wb") as out:
                pickle.dump(data, out)
    r = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                        d, "-p", "rank_"], capture_output=True, text=True, timeout=120)
    print(r.returncode)
    print(r.stdout + r.stderr)
"""


def torch_analyser(case: str, fix: bool = True) -> tuple[int, str]:
    ran = subprocess.run(
        [str(REPRO_PYTHON), "-c", DRIVER, str(FLIGHT / case), "fix" if fix else "as-is"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    code, _, out = ran.stdout.partition("\n")
    return int(code), out


def ours(case: str) -> flight.Report:
    return flight.analyse(
        [flight.parse(p.read_bytes(), p.name) for p in sorted((FLIGHT / case).glob("rank*.json"))]
    )


def test_torch_2_13s_analyser_stops_on_gloo_dumps_as_they_are() -> None:
    code, out = torch_analyser("skip", fix=False)
    assert code == 1 and "KeyError: ('0', 0)" in out
    assert ours("skip").findings  # ours reads them as they are


def test_both_find_the_rank_that_never_entered_the_collective() -> None:
    code, out = torch_analyser("skip")
    assert code == 0
    assert "Not all ranks joining collective, sequence number: 3" in out
    assert "missing ranks: {1}" in out and "collective: gloo:all_reduce" in out
    (f,) = ours("skip").findings
    assert (f.kind, f.seq, f.ranks, f.expected) == ("behind", 3, (1,), "all_reduce [[4]]")


def test_both_find_the_rank_that_called_another_collective() -> None:
    code, out = torch_analyser("mismatch")
    assert code == 0
    assert "Collective sequence number: 3 has errors" in out
    assert (
        "Culprit rank 1; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: "
        "'all_reduce' does not match found collective type: 'broadcast'"
    ) in out
    (f,) = ours("mismatch").findings
    assert (f.kind, f.seq, f.ranks, f.expected, f.found) == (
        "mismatch",
        3,
        (1,),
        "all_reduce [[4]]",
        ("broadcast [[4]]",),
    )


def test_both_find_the_rank_that_called_another_size() -> None:
    code, out = torch_analyser("size")
    assert code == 0
    assert (
        "Culprit rank 1; Error type: SIZE_OR_SYNTAX_MISMATCH, Expected input sizes: "
        "'[[4]]' does not match found input sizes: '[[8]]'"
    ) in out
    (f,) = ours("size").findings
    assert (f.kind, f.seq, f.ranks, f.expected, f.found) == (
        "mismatch",
        3,
        (1,),
        "all_reduce [[4]]",
        ("all_reduce [[8]]",),
    )
