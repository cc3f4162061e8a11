"""The model's verdict on plain YAML data, as located problems a contributor can act on.

The model in `nanopedia/model.py` decides what is valid; this module translates pydantic's
findings into located, hinted `Problem`s (unknown field, missing field, wrong kind, bad id, value
out of range), and reports the `TODO` stubs `nanopedia new` writes before pydantic's errors about
the same values, which would only repeat them less helpfully.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from nanopedia.content.load import Document, Path_, dotted
from nanopedia.errors import Problem, problem, suggest
from nanopedia.model import MAX_ID, SLUG_PATTERN, Entry

_KIND = {
    "string_type": "text",
    "list_type": "a list",
    "model_type": "a mapping",
    "dict_type": "a mapping",
    "model_attributes_type": "a mapping",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
}


#: How `nanopedia new` marks a value a human must write; `check` reports each one (E060).
PLACEHOLDER = "TODO"


def slugify(text: str) -> str:
    """`text` as a valid id, for hints that show one (an example id when nothing is left)."""
    words = "".join(c if c.isascii() and c.isalnum() else " " for c in text.lower()).split()
    return "-".join(words)[:MAX_ID] or "fsdp-oom"


def _model_at(model: type[BaseModel], path: Path_) -> type[BaseModel] | None:
    """The model class that owns the mapping at `path`, for listing its fields in hints."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        field = (
            current.model_fields.get(part)
            if isinstance(current, type) and issubclass(current, BaseModel)
            else None
        )
        if field is None:
            return None
        current = inner_model(field.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def inner_model(annotation: Any) -> Any:
    """The model class inside a field's annotation (`list[X]`, `X | None`), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = inner_model(arg)
        if found is not None:
            return found
    return None


def schema_problems(
    doc: Document,
    model: type[BaseModel],
    prefix: Path_ = (),
    data: Any = None,
    skip: frozenset[Path_] = frozenset(),
) -> tuple[Any, list[Problem]]:
    """Validate `data` (default: the whole document) found at `prefix` in `doc` against `model`.

    Returns the instance (or None) and located problems. Errors at or below a path in `skip` are
    left out: they are already reported (a placeholder is not also "not a valid id").
    """
    try:
        return model.model_validate(doc.data if not prefix else data), []
    except ValidationError as err:
        return None, [
            _translate(doc, model, prefix, e)
            for e in err.errors(include_url=False)
            if not _under(prefix + tuple(e["loc"]), skip)
        ]


def _under(path: Path_, roots: frozenset[Path_]) -> bool:
    """True when `path` is one of `roots` or lies inside one."""
    return any(path[:n] in roots for n in range(1, len(path) + 1))


def placeholder_problems(doc: Document) -> dict[Path_, Problem]:
    """Every value still holding a `TODO` stub written by `nanopedia new`, as "fill in" problems.

    The skeleton passes the schema wherever it can, so these are the only findings on a fresh
    entry; the hint is the field's own documentation, so the contributor learns what to write.
    """
    found: dict[Path_, Problem] = {}

    def walk(value: Any, path: Path_) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*path, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, (*path, i))
        elif isinstance(value, str) and value.lstrip().startswith(PLACEHOLDER):
            names = [i for i, part in enumerate(path) if isinstance(part, str)]
            owner = _model_at(Entry, path[: names[-1]]) if names else None
            field = owner.model_fields.get(str(path[names[-1]])) if owner else None
            about = " ".join((field.description or "").split()) if field else ""
            if field is not None and get_origin(field.annotation) is Literal:
                about += f" One of: {', '.join(get_args(field.annotation))}."
            line, col = doc.position(path)
            if path in doc.blocks:  # point at the TODO itself, not at the `|` before it
                line, col = line + 1, 1
            found[path] = problem(
                doc.path,
                "E060",
                f"'{dotted(path)}' is still a placeholder from `nanopedia new`",
                f"fill in: {about}" if about else "fill in a value or remove the line",
                at=(line, col),
            )

    walk(doc.data, ())
    return found


def _named(loc: Path_) -> str:
    """A value as a hint names it: by its key, or, for a list item (which has none), by its
    place in its list."""
    if isinstance(loc[-1], int):
        return f"item {loc[-1] + 1} of '{dotted(loc[:-1])}'"
    return f"'{loc[-1]}'"


def _translate(doc: Document, model: type[BaseModel], prefix: Path_, err: Any) -> Problem:
    """One pydantic error as a located problem with a message a contributor can act on."""
    rel: Path_ = tuple(err["loc"])
    loc: Path_ = prefix + rel
    kind = err["type"]
    name = dotted(loc)
    ctx = err.get("ctx") or {}
    value = err.get("input")
    line, col = doc.position(loc, key=kind == "extra_forbidden")

    def fail(code: str, msg: str, hint: str | None = None) -> Problem:
        return problem(doc.path, code, msg, hint, at=(line, col))

    if kind == "extra_forbidden":
        owner = _model_at(model, rel[:-1])
        known = list(owner.model_fields) if owner else []
        hint = suggest(str(loc[-1]), known) or (
            f"known fields: {', '.join(known)}" if known else None
        )
        return fail("E010", f"unknown field '{name}'", hint)
    if kind == "missing":
        line, col = doc.position(loc[:-1])
        field = loc[-1]
        return problem(
            doc.path,
            "E011",
            f"missing required field '{name}'",
            f"add '{field}:' here (see entries/README.md)",
            at=(line, col),
        )
    if value is None and kind in ("string_type", "list_type", "model_type", "dict_type"):
        return fail("E012", f"'{name}' is empty", f"give {_named(loc)} a value or remove the line")
    if kind in _KIND:
        shown = (
            "text"
            if isinstance(value, str)
            else ("a list" if isinstance(value, list) else "a mapping")
        )
        return fail("E012", f"'{name}' must be {_KIND[kind]}, not {shown}", None)
    if kind == "string_too_short":
        if not str(value).strip():
            return fail("E012", f"'{name}' is empty", f"give {_named(loc)} a value")
        return fail("E013", f"'{name}' is too short (at least {ctx.get('min_length')} characters)")
    if kind == "string_too_long":
        return fail(
            "E013",
            f"'{name}' is too long ({len(str(value))} characters, at most {ctx.get('max_length')})",
            "shorten it or move detail elsewhere",
        )
    if kind == "too_short":
        return fail("E012", f"'{name}' needs at least {ctx.get('min_length')} item(s)")
    if kind == "too_long":
        return fail("E013", f"'{name}' has too many items (at most {ctx.get('max_length')})")
    if kind == "string_pattern_mismatch":
        if loc[-1] == "url":
            return fail(
                "E015",
                f"reference URL '{value}' is not an https URL",
                "use the https:// address of the page",
            )
        if ctx.get("pattern") == SLUG_PATTERN:
            return fail(
                "E013",
                f"'{value}' is not a valid id for '{name}'",
                f"use lower-case words joined by hyphens, e.g. '{slugify(str(value))}'",
            )
        return fail("E013", f"'{name}' does not match {ctx.get('pattern')}")
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = ctx.get("ge", ctx.get("le"))
        side = "at least" if kind == "greater_than_equal" else "at most"
        return fail("E013", f"'{value}' is not allowed for '{name}': {side} {bound}")
    if kind == "int_parsing":
        return fail("E012", f"'{name}' must be a whole number, not '{value}'")
    if kind == "literal_error":
        allowed = [
            a.strip().strip("'")
            for a in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")
            if a.strip()
        ]
        hint = suggest(str(value), allowed) or f"expected one of: {', '.join(allowed)}"
        return fail("E013", f"'{value}' is not an allowed value for '{name}'", hint)
    return fail("E012", f"'{name}': {err['msg']}")
