"""`theme/diagnose-worker.port.yaml`: the map of what the browser worker mirrors of the Python
diagnosis. It fails when a mirrored function changes on one side only, when a worker function is
in neither list, and when a constant the worker reads is not exported from Python.

After changing both sides of a mirrored pair (or one side, with the other checked to need no
change), record the new hashes: `python tests/unit/test_port.py --update`.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "theme" / "static" / "diagnose-worker.js"
MAP = ROOT / "theme" / "diagnose-worker.port.yaml"
_FUNCTION = re.compile(r"^  function (\w+)\(", re.M)


def js_functions(source: str) -> dict[str, str]:
    """Each top-level function of the worker's scope and its text: from `  function name(` to
    the first line that closes it at the same indent (the file's layout), or the line itself
    when the function fits on it."""
    found: dict[str, str] = {}
    for m in _FUNCTION.finditer(source):
        line_end = source.index("\n", m.start())
        first = source[m.start() : line_end]
        if first.rstrip().endswith("}") and first.count("{") == first.count("}"):
            found[m.group(1)] = first
            continue
        end = source.index("\n  }\n", m.start()) + len("\n  }")
        found[m.group(1)] = source[m.start() : end]
    return found


def py_source(qualified: str) -> str:
    module, _, name = qualified.rpartition(".")
    return inspect.getsource(getattr(importlib.import_module(module), name))


def digest(*texts: str) -> str:
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]


def current(port: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each mapped worker function's (js hash, python hash) as the sources are now."""
    js = js_functions(WORKER.read_text(encoding="utf-8"))
    return {
        name: (digest(js[name]), digest(*map(py_source, row["py"])))
        for name, row in port["functions"].items()
    }


def load() -> dict[str, Any]:
    return yaml.safe_load(MAP.read_text(encoding="utf-8"))


def test_every_worker_function_is_mapped_or_said_to_have_no_twin() -> None:
    port = load()
    names = set(js_functions(WORKER.read_text(encoding="utf-8")))
    mapped, alone = set(port["functions"]), set(port["js_only"])
    assert not mapped & alone
    assert names == mapped | alone, (
        f"not in {MAP.name}: {sorted(names - mapped - alone)}; "
        f"gone from the worker: {sorted((mapped | alone) - names)}"
    )
    assert all(isinstance(why, str) and len(why) > 10 for why in port["js_only"].values())


def test_no_mirrored_function_changed_on_one_side_only() -> None:
    port = load()
    stale = []
    for name, (js, py) in current(port).items():
        row = port["functions"][name]
        # str(): a hash of digits only reads as a YAML integer
        js_moved, py_moved = js != str(row["js_hash"]), py != str(row["py_hash"])
        if js_moved != py_moved:
            side, other = ("the worker", "Python") if js_moved else ("Python", "the worker")
            stale.append(
                f"{name} ({', '.join(row['py'])}) changed in {side} only: change "
                f"{other} to match, then record both with --update"
            )
        elif js_moved:
            stale.append(f"{name}: both sides changed; check they still agree, then --update")
    assert stale == []


def test_every_constant_the_worker_reads_is_exported_from_its_python_source() -> None:
    from nanopedia.diagnosis import contract

    port = load()
    data = contract.export_data([])
    assert set(data) == set(port["constants"])
    for key, qualified in port["constants"].items():
        module, _, name = qualified.rpartition(".")
        value = getattr(importlib.import_module(module), name)
        if callable(value):
            continue
        value = getattr(value, "pattern", value)
        assert data[key] == (list(value) if isinstance(value, tuple) else value), key


def test_the_worker_copies_no_exported_number() -> None:
    """A number of the rules written into the worker would drift from Python's silently: no
    exported fraction (a weight's share) or size (a cap, a window) may appear in its code."""
    from nanopedia.diagnosis import contract

    code = re.sub(r"/\*.*?\*/", "", WORKER.read_text(encoding="utf-8"), flags=re.S)
    data = contract.export_data([])
    numbers = {v for v in data.values() if isinstance(v, float) and not v.is_integer()}
    numbers |= {
        v for v in data.values() if isinstance(v, int) and not isinstance(v, bool) and v >= 50
    }
    copied = sorted(
        v for v in numbers if re.search(rf"(?<![\w.]){re.escape(repr(v))}(?![\w.])", code)
    )
    assert copied == []


def _update() -> None:
    sys.path.insert(0, str(ROOT / "generator"))
    port = load()
    text = MAP.read_text(encoding="utf-8")
    for name, (js, py) in current(port).items():
        text = re.sub(
            rf"^(  {name}: \{{py: \[[^\]]*\], )js_hash: \w+, py_hash: \w+\}}$",
            rf"\g<1>js_hash: {js}, py_hash: {py}}}",
            text,
            flags=re.M,
        )
    MAP.write_text(text, encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    _update()
