"""`nanopedia diagnose` in a terminal (`diagnosis/text_report.py`).

On every labelled log (tests/logs and tests/logs/real), at 60 and at 80 columns: every line fits,
the words each shown log line was matched by stay in view, no log line is printed twice, no
Markdown of an entry's titles shows, the fix given is the entry's step for the likely cause, and
why the verdict is sure comes after the verdict box, not in it. Two outputs are kept whole as
golden files (tests/golden/diagnose-text/, rewritten by `pytest --update-golden`).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.diagnosis import catalogue, report, result, scan, text_report
from nanopedia.diagnosis.catalogue import EntryView
from nanopedia.diagnosis.rank import Diagnosis
from nanopedia.incremental.catalogue import user_store
from nanopedia.site.markdown import title_parts

sys.path.insert(0, str(ROOT / "bench"))
from logcorpus import Case, cases, materialise  # noqa: E402

ENTRIES = ROOT / "entries"
GOLDEN = ROOT / "tests" / "golden" / "diagnose-text"
WIDTHS = (60, 80)
TOP = 5
CASES = cases()


@pytest.fixture(scope="module")
def compiled() -> tuple[scan.Matcher, dict[str, EntryView]]:
    """The entries as `diagnose` reads them, from the run's catalogue cache (conftest)."""
    views = catalogue.load(ENTRIES, user_store()).entries
    return scan.Matcher(views), {e.id: e for e in views}


def diagnosed(case: Case, tmp_path: Path, matcher: scan.Matcher, entries: dict) -> result.Result:
    """What `diagnose` prints a case from (`Result.as_text`, as `run_diagnose` prints it:
    the report, or the error line when nothing matched), each log named as tests/logs names
    it."""
    paths = [str(p) for p in materialise(case, tmp_path)]
    scans = [scan.scan_file(p, matcher, name=rel) for p, rel in zip(paths, case.logs, strict=True)]
    return result.from_scans(paths, scans, list(entries.values()), matcher=matcher)


def plain(title: str) -> str:
    """A title as the site's own parser reads it, without its code spans' backticks."""
    return "".join(text for _, text in title_parts(title))


def flat(text: str) -> str:
    return " ".join(text.split())


def log_lines(result: Diagnosis) -> list[tuple[str, tuple[int, int] | None]]:
    """Each log line the report shows (the first failure's, each shown group's first line),
    printable, with the span of it that was matched."""
    shown = [result.initiating] if result.initiating else []
    for c in result.matches[:TOP]:
        shown += [g.first for g in report.groups(c)[: report.SHOWN_GROUPS]]
    out = []
    for ev in shown:
        text, spans = text_report.printable(ev.text, [ev.span] if ev.span else [])
        out.append((text, spans[0] if spans else None))
    return out


def box(lines: list[str]) -> list[str]:
    """The verdict box: from the first line to the first blank one."""
    return lines[: lines.index("")] if "" in lines else lines


def item(lines: list[str], name: str) -> str | None:
    """The value of `  name: ...` with its wrapped continuation lines, flattened."""
    for i, line in enumerate(lines):
        if line.startswith(f"  {name}: "):
            rest = [line[len(name) + 4 :]]
            for more in lines[i + 1 :]:
                if not more.startswith("    "):
                    break
                rest.append(more)
            return flat(" ".join(rest))
    return None


def _without_first_line(verdict: list[str], result: Diagnosis) -> list[str]:
    """The verdict box without the pieces of the first failure's log line (under its item)."""
    first = result.initiating
    at = next((i for i, ln in enumerate(verdict) if ln.startswith("  first failure:")), None)
    if first is None or at is None:
        return verdict
    text = text_report.printable(first.text)[0]
    end = next(
        (i for i in range(at + 1, len(verdict)) if not verdict[i].startswith("    ")), len(verdict)
    )
    block = [ln for ln in verdict[at + 1 : end] if ln.strip().strip("…") not in text]
    return verdict[: at + 1] + block + verdict[end:]


def problems(text: str, result: Diagnosis, entries: dict, width: int) -> list[str]:
    """Every way `text` fails the report's promises (empty: none)."""
    lines = text.splitlines()
    found = [f"{len(line)} columns: {line!r}" for line in lines if len(line) > width]
    starts = Counter(line for line in lines if line.strip() and not line.startswith("    "))
    found += [f"printed {n} times: {line!r}" for line, n in starts.items() if n > 1]
    shown = log_lines(result)
    texts = {t for t, _ in shown}
    pieces = Counter(
        core
        for line in lines
        if len(core := line.strip().strip("…")) >= 20 and any(core in t for t in texts)
    )
    found += [
        f"log line printed {n} times: {core!r}"
        for core, n in pieces.items()
        if n > sum(core in t for t in texts)  # pieces of distinct lines may read alike
    ]
    seen = "".join("".join(line.strip("… ").split()) for line in lines)
    for t, span in shown:
        if span is None:
            continue
        words = t[span[0] : span[1]][: width - 12]  # the start of a long match at least
        if "".join(words.split()) not in seen:
            found.append(f"matched words out of view: {words!r} of {t[:60]!r}")
    if not result.matches:
        return found
    best = result.matches[0]
    entry = entries[best.id]
    verdict = box(lines)
    prose = _without_first_line(verdict, result)
    found += [f"Markdown in the verdict: {ln!r}" for ln in prose if re.search(r"`|\*\*|\]\(", ln)]
    if plain(best.title) not in flat(" ".join(prose)):
        found.append(f"title not shown as plain text: {plain(best.title)!r}")
    cause = next(c for c in entry.causes if plain(c.title) == item(verdict, "likely cause"))
    steps = [f for f in entry.fixes if not f.causes or cause.id in f.causes]
    fix = item(verdict, "first fix")
    if fix != (plain(steps[0].title) if steps else report.NO_FIX):
        found.append(f"first fix {fix!r} is not the first step for cause {cause.id!r}")
    word = report.confidence_word(best)
    why = lines[lines.index("why:") :] if "why:" in lines else []
    if report.CONFIDENCE[word] in flat(" ".join(verdict)) or "score" in " ".join(verdict):
        found.append("the scoring explanation is inside the verdict box")
    if not why or report.CONFIDENCE[word] not in flat(" ".join(why[:8])):
        found.append("no why section after the verdict box says what the confidence means")
    reason = result.initiating_reason
    if reason and (reason in flat(" ".join(verdict)) or flat(reason) not in flat(" ".join(why))):
        found.append("how the first failure was decided is not in the why section")
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_labelled_log_reads_in_a_terminal_of_60_and_80_columns(
    case: Case, compiled, tmp_path: Path
) -> None:
    matcher, entries = compiled
    found = diagnosed(case, tmp_path, matcher, entries)
    for width in WIDTHS:
        text = found.as_text(TOP, width)
        assert problems(text, found.diagnosis, entries, width) == [], f"{width} columns:\n{text}"


@pytest.mark.parametrize(
    ("log", "width"),
    [("first-failure-oom/torchrun-4rank.log", 80), ("fsdp2-grad-dtype", 60)],
)
def test_golden_text_of_a_four_rank_oom_and_of_per_rank_files(
    cli, monkeypatch: pytest.MonkeyPatch, update_golden: bool, log: str, width: int
) -> None:
    """What a user reads, whole, through the CLI with the terminal's width in `COLUMNS`."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(width))
    where = Path("tests/logs") / log
    paths = sorted(str(p) for p in where.glob("*.log")) if where.is_dir() else [str(where)]
    run = cli("diagnose", *paths)
    assert run.code == 0
    golden = GOLDEN / f"{where.stem}-{width}.txt"
    if update_golden:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(run.out, encoding="utf-8")
    assert run.out == golden.read_text(encoding="utf-8")


def test_the_terminal_width_is_followed_down_to_60_columns(
    cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = str(ROOT / "tests" / "logs" / "first-failure-oom" / "torchrun-4rank.log")
    widest = {}
    for columns in ("30", "100"):
        monkeypatch.setenv("COLUMNS", columns)
        widest[columns] = max(len(line) for line in cli("diagnose", log).out.splitlines())
    assert 50 < widest["30"] <= text_report.MIN_WIDTH
    assert 80 < widest["100"] <= 100


def test_a_title_loses_only_its_code_span_backticks_as_the_site_parses_it() -> None:
    titles = [
        t
        for e in catalogue.usable(ENTRIES)[0]
        for t in [e.title, *(c.title for c in e.causes), *(f.title for f in e.fixes)]
    ]
    titles += ["a `b` c", "``a ` b``", "` a `", "`` ` ``", "odd ` tick", "``x` y", "`a\nb`"]
    assert [text_report.title_text(t) for t in titles] == [plain(t) for t in titles]


@pytest.mark.parametrize(
    ("text", "spans", "shown"),
    [
        ("short line", [(0, 5)], ["short line"]),
        ("x" * 30 + " the words " + "y" * 40, [(31, 40)], ["…the words…"]),  # whole words
        ("start here " + "z" * 60, [(0, 10)], ["start here…"]),
        (
            "a " * 10 + "first" + " b" * 30 + " second",
            [(20, 25), (86, 92)],
            ["…a first b b b b b…", "…b b b b b second"],  # two far apart: two pieces
        ),
        ("\x1b[2J" + "w" * 40 + " hit", [(45, 48)], ["…wwwwwwwwwwwwww hit"]),  # escaped
        ("v" * 50, [], ["vvvvvvvvvvvvvvvvvvv…"]),
        (
            "x: mat1 and mat2 must have the same dtype, but got Float",
            [(3, 36), (3, 56)],
            ["…mat1 and mat2…", "…must have the…", "…same dtype, but…", "…got Float"],
        ),
    ],
)
def test_a_long_log_line_is_cut_around_its_matched_words(text, spans, shown) -> None:
    assert text_report.excerpt(text, spans, 20) == shown
