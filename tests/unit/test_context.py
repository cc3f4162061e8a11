"""`nanopedia/incremental/context.py`: a build's request and context, and the rule they stand
for: nothing in `site/` or `incremental/` keeps a value between calls in a module global (a
cache, a memo, a pool); it is on the `Context` a build is handed."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import nanopedia
from nanopedia.incremental.context import Context, Request

PACKAGE = Path(nanopedia.__file__).parent
LAYERS = ("site", "incremental")
ALLOWED = {
    ("incremental/background.py", "_jobs"),
    ("incremental/background.py", "_queued"),
    ("incremental/background.py", "_handed"),
}
"""The background jobs of the process (a state save, a folder to delete), which the end of the
process waits for: a queue the console script runs after the build, not a cache."""
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "Counter", "OrderedDict", "deque"}
MUTATORS = {
    "append",
    "add",
    "clear",
    "extend",
    "insert",
    "pop",
    "popitem",
    "remove",
    "discard",
    "setdefault",
    "update",
    "appendleft",
    "cache_clear",
}
CACHES = {"cache", "lru_cache", "cached_property"}


def _mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in MUTABLE_CALLS
    )


def _mutated(tree: ast.Module, name: str) -> bool:
    """Whether the module changes what `name` holds: an item set or deleted, a method that
    changes it called."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
            and isinstance(node.ctx, ast.Store | ast.Del)
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and node.func.attr in MUTATORS
        ):
            return True
    return False


def module_state(path: Path, root: Path = PACKAGE) -> list[str]:
    """What a module keeps between calls: `global` statements, functions memoised by functools,
    module-level containers that are not constants (a lower-case name, or one the module
    changes)."""
    tree = ast.parse(path.read_text(), str(path))
    where = path.relative_to(root).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [
                f"{where}:{node.lineno}: global {n}"
                for n in node.names
                if (where, n) not in ALLOWED
            ]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                name = ast.unparse(deco.func if isinstance(deco, ast.Call) else deco)
                if name.rpartition(".")[2] in CACHES:
                    found.append(f"{where}:{node.lineno}: @{name} {node.name}")
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            if not isinstance(target, ast.Name) or (where, target.id) in ALLOWED:
                continue
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            if _mutable(value) and (
                not target.id.lstrip("_").isupper() or _mutated(tree, target.id)
            ):
                found.append(f"{where}:{node.lineno}: {target.id}")
    return found


def test_site_and_incremental_keep_nothing_in_module_globals() -> None:
    found = [
        hit
        for layer in LAYERS
        for path in sorted((PACKAGE / layer).glob("*.py"))
        for hit in module_state(path)
    ]
    assert found == [], "keep it on the build's Context (incremental/context.py) instead"


def test_the_scan_finds_what_it_forbids(tmp_path: Path) -> None:
    path = tmp_path / "site" / "memo.py"
    path.parent.mkdir()
    path.write_text(
        "from functools import cache, lru_cache\n"
        "_memo: dict[str, str] = {}\n"
        "TABLE = {'a': 1}\n"
        "SEEN = set()\n"
        "def note(x):\n    SEEN.add(x)\n"
        "@cache\ndef f(): ...\n"
        "@lru_cache(maxsize=2)\ndef g(): ...\n"
        "def h():\n    global _pool\n"
    )
    assert sorted(module_state(path, tmp_path)) == [
        "site/memo.py:10: @lru_cache g",
        "site/memo.py:12: global _pool",
        "site/memo.py:2: _memo",
        "site/memo.py:4: SEEN",
        "site/memo.py:8: @cache f",
    ]


def test_a_request_is_frozen_and_a_context_is_not_copied_to_workers() -> None:
    request = Request(Path("entries"), Path("site"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.jobs = 2  # type: ignore[misc]
    assert request.parallel_min > 0 and request.config is None
    context = Context()
    # A task sent to a worker names the context the worker was forked with, never a copy.
    assert context.__reduce__()[1] == ()
    with pytest.raises(RuntimeError, match="no build runs"):
        context.build_cache  # noqa: B018
