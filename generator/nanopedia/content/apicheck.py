"""Code examples checked against the libraries installed beside the generator.

An example's text parses (`check` sees to that), but a renamed function or a removed keyword
parses too. Here each python example is read without running it: every import must resolve,
every attribute path taken off an imported name must exist, and every call of an imported
callable must bind its keywords (and, without `*args`, its positional count) to the real
signature. A library that is not installed is reported as not checked rather than as wrong,
so the check can run wherever some of the stacks are missing.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    """One name in an example that the installed library does not have."""

    line: int
    """1-based line inside the example's code."""
    col: int
    """1-based column inside the example's code."""
    message: str
    """What is wrong, naming the library and its version."""


@dataclass(frozen=True, slots=True)
class Report:
    """What checking one example found."""

    findings: tuple[Finding, ...]
    """Names the installed libraries do not have."""
    missing: tuple[str, ...]
    """Top-level packages the example imports that are not installed (not checked)."""


_ABSENT = object()


def version_of(module: str) -> str:
    """`torch 2.13.0`: a top-level package with its installed distribution's version."""
    top = module.split(".")[0]
    names = metadata.packages_distributions().get(top, [top])
    for name in names:
        try:
            return f"{top} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return top


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


MAX_CODE = 20_000
"""The longest code `parse` reads: the schema's cap on a code example (a repro script's is less),
which bounds what the parser holds (its peak is a few megabytes on the worst text this long)."""


def parse(code: str) -> ast.Module:
    """`ast.parse` of untrusted code, failing only with `SyntaxError`.

    The parser gives up on deep nesting with `MemoryError` (20,000 `-` signs: its stack) or
    `RecursionError` (4,000 `not `, or a long `a.b.c...` chain: building the tree) and on a NUL
    with `ValueError`; each becomes a `SyntaxError` without a line, so callers catch one thing."""
    if len(code) > MAX_CODE:
        raise SyntaxError(f"the code is over {MAX_CODE} characters")
    try:
        return ast.parse(code)
    except (MemoryError, RecursionError):
        raise SyntaxError("it nests too deeply for Python's parser") from None
    except ValueError as err:
        raise SyntaxError(str(err)) from None


def imported_packages(code: str) -> set[str]:
    """The top-level packages a script imports (absolute imports only); none when it does not
    parse (`check` reports that)."""
    found: set[str] = set()
    try:
        tree = parse(code)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def installed(name: str) -> bool:
    top = name.split(".")[0]
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _attr(obj: Any, name: str, path: str) -> Any:
    """`obj.name`, or the submodule `path.name` when `obj` is a package that does not import it
    eagerly; `_ABSENT` when neither exists."""
    value = getattr(obj, name, _ABSENT)
    if value is _ABSENT and isinstance(obj, ModuleType):
        value = _import(f"{path}.{name}") or _ABSENT
    return value


def _chain(node: ast.expr) -> list[str] | None:
    """`["torch", "distributed", "fsdp"]` for `torch.distributed.fsdp`; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _assigned(tree: ast.Module) -> set[str]:
    """Names the example binds other than by importing: those are not followed."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def check(code: str) -> Report:
    """Check one python example against what is installed in this interpreter; one that does not
    parse has nothing to check (`check` reports it, E017)."""
    try:
        tree = parse(code)
    except SyntaxError:
        return Report((), ())
    findings: list[Finding] = []
    missing: set[str] = set()
    bound: dict[str, tuple[Any, str]] = {}  # name -> (object, dotted path)

    def found(node: ast.AST, message: str) -> None:
        findings.append(
            Finding(getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1, message)
        )

    def imported(node: ast.AST, name: str) -> ModuleType | None:
        """The module `name`, or None: not installed (not checked) or not there (a finding)."""
        if not installed(name):
            missing.add(name.split(".")[0])
            return None
        module = _import(name)
        if module is None:
            found(node, f"module '{name}' does not exist in {version_of(name)}")
        return module

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                module = imported(node, alias.name)
                if module is None:
                    continue
                if alias.asname:
                    bound[alias.asname] = (module, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = (importlib.import_module(top), top)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = imported(node, node.module)
            if module is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                value = _attr(module, alias.name, node.module)
                if value is _ABSENT:
                    found(
                        node,
                        f"'{node.module}' has no name '{alias.name}' in {version_of(node.module)}",
                    )
                else:
                    bound[alias.asname or alias.name] = (value, f"{node.module}.{alias.name}")
    for name in _assigned(tree):
        bound.pop(name, None)  # rebound somewhere: what it holds is not known statically

    resolved: dict[int, tuple[Any, str]] = {}

    def resolve(node: ast.expr) -> tuple[Any, str] | None:
        if id(node) in resolved:
            return resolved[id(node)]
        parts = _chain(node)
        if parts is None or parts[0] not in bound:
            return None
        value, path = bound[parts[0]]
        for part in parts[1:]:
            nxt = _attr(value, part, path)
            if nxt is _ABSENT:
                found(node, f"'{path}' has no attribute '{part}' in {version_of(path)}")
                value = None
                break
            value, path = nxt, f"{path}.{part}"
        # every prefix of the chain is the same walk: remember it so each is reported once
        for sub in _prefixes(node):
            resolved[id(sub)] = (value, path) if value is not None else (None, path)
        return (value, path) if value is not None else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            resolve(node)
        elif isinstance(node, ast.Call):
            target = resolve(node.func)
            if target and target[0] is not None and callable(target[0]):
                problem = _binding(target[0], node)
                if problem:
                    found(node, f"{target[1]}() {problem} in {version_of(target[1])}")
    findings.sort(key=lambda f: (f.line, f.col, f.message))
    unique = tuple(dict.fromkeys(findings))
    return Report(unique, tuple(sorted(missing)))


def _prefixes(node: ast.expr) -> list[ast.expr]:
    out: list[ast.expr] = []
    while isinstance(node, ast.Attribute):
        out.append(node)
        node = node.value
    return out


def _python_level(func: Any) -> bool:
    """Whether `func` is written in Python, so its signature is what it really takes: classes
    and functions of compiled extensions often report a signature that is not theirs."""
    if inspect.isclass(func):
        return inspect.isfunction(func.__init__) or (
            func.__init__ is object.__init__ and inspect.isfunction(func.__new__)
        )
    return inspect.isfunction(func) or inspect.ismethod(func)


def _binding(func: Any, call: ast.Call) -> str | None:
    """Why this call cannot bind to `func`'s signature, or None (also when it has none, or
    only a compiled one)."""
    if not _python_level(func):
        return None
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    spread = any(k.arg is None for k in call.keywords)
    names = [k.arg for k in call.keywords if k.arg is not None]
    params = sig.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in names:
        param = params.get(name)
        if (param is None and not takes_any) or (
            param is not None and param.kind is param.POSITIONAL_ONLY
        ):
            return f"has no keyword argument '{name}'"
    if starred or spread:
        return None
    try:
        sig.bind(*[None] * len(call.args), **dict.fromkeys(names))
    except TypeError as err:
        return str(err)
    return None


#: Starts the line on which a checking process reports (`script`): whatever else an imported
#: module prints goes around it.
RESULT_MARK = "\x00nanopedia-apicheck:"


def check_all(codes: list[str]) -> str:
    """`check` of each code, as JSON: `[{"findings": [[line, col, message]], "missing": [...]}
    or {"stopped": why}]`. An example whose imports end the check (a module that raises or exits
    when imported) gets `stopped`, and the next one is checked."""
    import json

    out: list[dict[str, object]] = []
    for code in codes:
        try:
            report = check(code)
        except BaseException as err:  # noqa: BLE001 (SystemExit too: `import unittest.__main__`)
            out.append({"stopped": f"its imports raised {type(err).__name__}: {err}"[:500]})
            continue
        out.append(
            {
                "findings": [[f.line, f.col, f.message] for f in report.findings],
                "missing": list(report.missing),
            }
        )
    return json.dumps(out)


def script(codes: list[str]) -> str:
    """A script that checks `codes` and prints the result after `RESULT_MARK`: the check imports
    what the examples import, which runs their modules' code, so it runs where repros run (in
    the sandbox), never in `verify`'s own process."""
    from pathlib import Path

    source = Path(__file__).read_text(encoding="utf-8")
    return (
        source + "\n\nimport os as _os\n"
        f"_os.write(1, ('\\n' + RESULT_MARK + check_all({codes!r}) + '\\n').encode())\n"
    )


def reports(output: str, count: int) -> list[Report | str] | None:
    """What a `script` run printed: per code a `Report`, or why its check stopped; None when
    the output holds no well-formed result for `count` codes."""
    import json

    lines = [line for line in output.splitlines() if RESULT_MARK in line]
    if not lines:
        return None
    try:
        raw = json.loads(lines[-1].partition(RESULT_MARK)[2])
        out: list[Report | str] = []
        for item in raw:
            if "stopped" in item:
                out.append(str(item["stopped"]))
                continue
            found = tuple(Finding(int(a), int(b), str(c)) for a, b, c in item["findings"])
            out.append(Report(found, tuple(str(m) for m in item["missing"])))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return out if len(out) == count else None
