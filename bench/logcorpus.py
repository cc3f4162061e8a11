"""The labelled diagnosis corpus (tests/logs) and the normal training output it is buried in.

Shared by the accuracy script, the throughput benchmark and the tests, so all three read the same
cases. Huge logs are never committed: `bury` lines and the 1 GB benchmark log are generated here,
deterministically, from a fixed seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "logs"


@dataclass(frozen=True)
class Case:
    """One labelled log (or one set of per-rank logs)."""

    logs: tuple[str, ...]
    """Paths relative to tests/logs, in rank order."""
    top: str | None
    """The entry expected first; None for a healthy log."""
    rank: int | None
    """The rank expected to have failed first."""
    benign: bool
    """Whether the top entry's evidence is the benign kind."""
    bury: int
    """Normal lines to put in front of the first log."""

    @property
    def name(self) -> str:
        return self.logs[0] if len(self.logs) == 1 else str(Path(self.logs[0]).parent)


#: The real-log corpus: excerpts of logs posted in public threads, each labelled in its header.
REAL = "real"
#: Header keys of a real log (`# source: URL`, `# top: entry-id`, `# rank: 3`, `# benign: true`).
HEADER_KEYS = ("source", "top", "rank", "benign")


def cases() -> list[Case]:
    """Every case of tests/logs/labels.yaml, then every real log of tests/logs/real/."""
    data = yaml.safe_load((LOGS / "labels.yaml").read_text())
    found = [
        Case(tuple(c["logs"]), c["top"], c["rank"], c["benign"], c.get("bury", 0))
        for c in data["cases"]
    ]
    return found + real_cases()


def real_cases() -> list[Case]:
    """One case per `real/*.log` file, and one per `real/<folder>/` of per-rank files (the
    first file carries the header)."""
    found = []
    for path in sorted((LOGS / REAL).iterdir()):
        files = sorted(path.glob("*.log")) if path.is_dir() else [path]
        if not files or (path.is_file() and path.suffix != ".log"):
            continue
        labels = header(files[0].read_text(encoding="utf-8", errors="replace"))
        rank = labels.get("rank", "null")
        found.append(
            Case(
                tuple(f.relative_to(LOGS).as_posix() for f in files),
                None if labels.get("top", "null") == "null" else labels["top"],
                None if rank == "null" else int(rank),
                labels.get("benign", "false") == "true",
                0,
            )
        )
    return found


def header(text: str) -> dict[str, str]:
    """The `# key: value` lines at the top of a real log."""
    labels = {}
    for line in text.splitlines():
        key, sep, value = line.removeprefix("# ").partition(":")
        if not line.startswith("# ") or not sep or key not in HEADER_KEYS:
            break
        labels[key] = value.strip()
    return labels


def log_bytes(rel: str) -> bytes:
    """A corpus log as a program printed it: a real log without its header lines."""
    data = (LOGS / rel).read_bytes()
    if not rel.startswith(REAL + "/"):
        return data
    lines = data.split(b"\n")
    skip = len(header(data.decode("utf-8", errors="replace")))
    return b"\n".join(lines[skip:])


def normal_lines(seed: int = 0) -> Iterator[str]:
    """Endless healthy training output: step lines, NCCL INFO chatter, checkpoints, warnings."""
    rnd = random.Random(seed)
    step = 0
    while True:
        step += 1
        sec = step // 10
        clock = f"{sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
        stamp = f"2024-04-30 {clock},{step % 1000:03d}"
        rank = step % 8
        kind = rnd.random()
        if kind < 0.9:
            yield (
                f"[rank{rank}]:[{stamp}] [INFO] [train.py:412:train_step] step={step} "
                f"loss={2.0 + rnd.random():.4f} lr=3.0e-04 grad_norm={rnd.random() + 0.5:.3f} "
                f"tokens/s={rnd.randint(90_000, 130_000)}"
            )
        elif kind < 0.97:
            yield (
                f"[default{rank}]:gpu-node-0{rank // 4}:{4100 + rank}:{4200 + rank} [{rank}] "
                f"NCCL INFO Channel {rnd.randint(0, 31):02d}/32 : 0[{rank}] -> "
                f"1[{(rank + 1) % 8}] via P2P/IPC"
            )
        elif kind < 0.995:
            yield (
                f"[rank{rank}]:{stamp} UserWarning: torch.utils.checkpoint: the use_reentrant "
                "parameter should be passed explicitly."
            )
        else:
            yield f"[rank0]:[{stamp}] [INFO] Saving checkpoint to ckpt/step_{step}"


@cache
def buried(n: int) -> bytes:
    """`n` normal lines, the same every time (kept: the corpus asks for the same `n` often)."""
    lines = normal_lines()
    return ("\n".join(next(lines) for _ in range(n)) + "\n").encode()


def materialise(case: Case, out: Path) -> list[Path]:
    """Write the case's logs under `out` (with the buried prefix) and return their paths."""
    paths = []
    for i, rel in enumerate(case.logs):
        dest = out / case.name.replace("/", "_") / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        prefix = buried(case.bury) if case.bury and i == 0 else b""
        dest.write_bytes(prefix + log_bytes(rel))
        paths.append(dest)
    return paths
