"""The command line's surface held to a reviewed copy (tests/golden/cli-surface.txt): every
command with its help line, and every option with its flags, default, choices, count and words.
Users' scripts and CI jobs call these names; a rename, a new default or a changed word must be
a decision seen in review (`pytest --update-golden` rewrites the copy), never an accident. The
copy is argparse's model of the parser, not its formatted help, which differs between Python
releases."""

from __future__ import annotations

import argparse
import json
from typing import Any

from conftest import ROOT

from nanopedia.cli import parser

GOLDEN = ROOT / "tests" / "golden" / "cli-surface.txt"


def _value(value: object) -> object:
    """A default or choice as JSON keeps it: text stays text, anything else its repr."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return repr(value)


def surface(p: argparse.ArgumentParser) -> dict[str, Any]:
    """A parser as its users meet it: its words, its options and its commands."""
    out: dict[str, Any] = {"description": p.description, "options": []}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            out["commands"] = {
                name: {"help": helps.get(name), **surface(sub)}
                for name, sub in sorted(action.choices.items())
            }
            continue
        out["options"].append(
            {
                "flags": action.option_strings or [action.dest],
                "action": type(action).__name__,
                "dest": action.dest,
                "default": _value(action.default),
                "choices": _value(action.choices),
                "nargs": action.nargs,
                "metavar": action.metavar,
                "required": action.required,
                "type": getattr(action.type, "__name__", None),
                "help": action.help,
            }
        )
    return out


def render(p: dict[str, Any], name: str = "nanopedia") -> list[str]:
    """A command's line (its name, help and description), then one line of JSON per option,
    then its commands."""
    lines = [f"{name}: {json.dumps([p.get('help'), p['description']], ensure_ascii=False)}"]
    lines += [f"  {json.dumps(o, ensure_ascii=False)}" for o in p["options"]]
    for sub, command in p.get("commands", {}).items():
        lines += render(command, f"{name} {sub}")
    return lines


def test_the_command_line_is_the_reviewed_one(update_golden: bool) -> None:
    got = "\n".join(render(surface(parser()))) + "\n"
    if update_golden:
        GOLDEN.write_text(got, encoding="utf-8")
    assert got == GOLDEN.read_text(encoding="utf-8"), "run pytest --update-golden and review it"


def test_every_command_and_option_says_what_it_does() -> None:
    """No command or option without its help line (argparse shows nothing for it otherwise)."""

    def silent(p: dict[str, Any], where: str) -> list[str]:
        found = [f"{where} {o['flags'][0]}" for o in p["options"] if not o["help"]]
        for name, command in p.get("commands", {}).items():
            found += [f"{where} {name}"] * (not command["help"])
            found += silent(command, f"{where} {name}")
        return found

    assert silent(surface(parser()), "nanopedia") == []
