"""The code-example check against installed libraries, on the standard library (no torch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nanopedia.content import apicheck

CASES = [
    ("import os.nosuchmodule\n", "module 'os.nosuchmodule' does not exist in os"),
    ("from json import dumpz\n", "'json' has no name 'dumpz' in json"),
    ("import os\nos.path.joinn('a')\n", "'os.path' has no attribute 'joinn' in os"),
    (
        "import shutil\nshutil.copyfile('a', 'b', follow_symlink=False)\n",
        "shutil.copyfile() has no keyword argument 'follow_symlink' in shutil",
    ),
    (
        "from shutil import copyfile as cp\ncp('a')\n",
        "shutil.copyfile() missing a required argument: 'dst' in shutil",
    ),
    (
        "import json\njson.loads('1', '2', '3')\n",
        "json.loads() too many positional arguments in json",
    ),
]


@pytest.mark.parametrize("code,message", CASES)
def test_a_wrong_name_is_found_at_its_line(code: str, message: str) -> None:
    report = apicheck.check(code)
    assert [f.message for f in report.findings] == [message]
    assert report.findings[0].line == code.count("\n")


def test_right_names_pass_and_missing_packages_are_not_checked() -> None:
    code = (
        "import os.path\nimport json as j\nfrom collections import OrderedDict\n"
        "import surely_not_installed_pkg.sub\n"
        "os.path.join('a', 'b')\nj.dumps({}, indent=2, sort_keys=True)\n"
        "OrderedDict(a=1)\nsurely_not_installed_pkg.sub.anything(x=1)\n"
    )
    report = apicheck.check(code)
    assert report.findings == ()
    assert report.missing == ("surely_not_installed_pkg",)


def test_rebound_names_and_spread_arguments_are_not_judged() -> None:
    code = (
        "import shutil\nargs = {}\nshutil.copyfile(**args)\nshutil.copyfile(*[1, 2, 3])\n"
        "def f(shutil):\n    shutil.nothing()\n"
    )
    assert apicheck.check(code).findings == ()


def test_a_missing_attribute_is_reported_once_for_a_long_chain() -> None:
    report = apicheck.check("import os\nos.nope.deeper.still()\n")
    assert [f.message for f in report.findings] == ["'os' has no attribute 'nope' in os"]


def test_the_check_run_as_a_script_reports_what_the_check_finds(tmp_path: Path) -> None:
    """What `verify` runs in its sandbox: the script prints one JSON result after its mark, read
    back into the same reports; an example whose import exits is `stopped` and the next checked."""
    codes = [code for code, _ in CASES[:3]] + [
        "import unittest.__main__\n",
        "import nosuchpackage_xyz\nimport json\njson.dumps(1)\n",
    ]
    path = tmp_path / "check.py"
    path.write_text(apicheck.script(codes), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, check=False
    )
    got = apicheck.reports(done.stdout, len(codes))
    assert got is not None, done.stdout + done.stderr
    assert got[:3] == [apicheck.check(code) for code in codes[:3]]
    assert isinstance(got[3], str) and got[3].startswith("its imports raised SystemExit")
    assert got[4] == apicheck.Report((), ("nosuchpackage_xyz",))
    assert apicheck.reports(apicheck.RESULT_MARK + apicheck.check_all(codes[:3]), 3) == got[:3]


@pytest.mark.parametrize(
    "output",
    [
        "",
        "no mark here\n",
        "{mark}not json\n",
        '{mark}[{{"findings": [[1, 2]], "missing": []}}]\n',
        '{mark}[{{"missing": []}}]\n',
        '{mark}[{{"findings": [], "missing": []}}, {{"findings": [], "missing": []}}]\n',
        "{mark}[1]\n",
    ],
    ids=["empty", "no mark", "not JSON", "short finding", "no findings", "two for one", "number"],
)
def test_output_without_one_well_formed_result_per_code_is_none(output: str) -> None:
    assert apicheck.reports(output.format(mark=apicheck.RESULT_MARK), 1) is None


def test_the_last_result_printed_is_the_one_read() -> None:
    first = apicheck.RESULT_MARK + '[{"findings": [[1, 1, "old"]], "missing": []}]'
    last = apicheck.RESULT_MARK + '[{"findings": [[2, 3, "x"]], "missing": ["torch"]}]'
    assert apicheck.reports(f"noise\n{first}\n{last}\n", 1) == [
        apicheck.Report((apicheck.Finding(2, 3, "x"),), ("torch",))
    ]


F = apicheck.Finding

#: Code, and every finding of the check (line and column of the name, sorted), each message
#: naming the library it was checked against.
FOUND = [
    ("import json\n\nx = json.dumpz(1)\n", [F(3, 5, "'json' has no attribute 'dumpz' in json")]),
    (
        "import os\nos.nope()\nimport json\njson.dumpz(1)\n",
        [
            F(2, 1, "'os' has no attribute 'nope' in os"),
            F(4, 1, "'json' has no attribute 'dumpz' in json"),
        ],
    ),
    (
        "import json\njson.dumpz(1); json.loadz(2)\n",
        [
            F(2, 1, "'json' has no attribute 'dumpz' in json"),
            F(2, 16, "'json' has no attribute 'loadz' in json"),
        ],
    ),
    (
        "from os.path import *\nfrom json import dumpz\n",
        [F(2, 1, "'json' has no name 'dumpz' in json")],
    ),
    (
        "import os\nfrom os import path as p\np.joinn(1)\n",
        [F(3, 1, "'os.path' has no attribute 'joinn' in os")],
    ),
    (
        "import collections.abc\ncollections.abc.Mappingg\n",
        [F(2, 1, "'collections.abc' has no attribute 'Mappingg' in collections")],
    ),
    (
        "import argparse\np = argparse.ArgumentParser(progg='x')\n",
        [F(2, 5, "argparse.ArgumentParser() has no keyword argument 'progg' in argparse")],
    ),
    (  # a class whose __new__ is Python's and __init__ object's
        "import fractions\nfractions.Fraction(1, denominatorr=2)\nfractions.Fraction(1, 2, 3, 4)\n",
        [
            F(2, 1, "fractions.Fraction() has no keyword argument 'denominatorr' in fractions"),
            F(3, 1, "fractions.Fraction() too many positional arguments in fractions"),
        ],
    ),
    (  # keywords are checked with *args too; the count is not
        "import shutil\nshutil.copyfile(*args, follow_symlink=False)\nshutil.copyfile(*args)\n",
        [F(2, 1, "shutil.copyfile() has no keyword argument 'follow_symlink' in shutil")],
    ),
    (
        "from shutil import copyfile\ncopyfile('a', 'b', follow_symlink=1)\n",
        [F(2, 1, "shutil.copyfile() has no keyword argument 'follow_symlink' in shutil")],
    ),
    (  # a positional-only parameter named as a keyword
        "import dataclasses\ndataclasses.replace(obj=1)\n",
        [F(2, 1, "dataclasses.replace() has no keyword argument 'obj' in dataclasses")],
    ),
    # not judged: **spread, a compiled class, keywords a **kwargs takes, names rebound
    ("import shutil\nshutil.copyfile('a', **kw)\n", []),
    ("import datetime\ndatetime.datetime(2020, 1, 1, tzinf=None)\n", []),
    ("import json\njson.dumps(1, indentt=2)\n", []),
    ("def json():\n    pass\njson.dumpz()\n", []),
    ("import json\nfor json in []:\n    json.dumpz()\n", []),
    ("import json\nclass J:\n    pass\nJ.x\njson.dumps(1).nope\n", []),
]


@pytest.mark.parametrize(("code", "found"), FOUND)
def test_each_finding_is_at_its_name_in_order(code: str, found: list[apicheck.Finding]) -> None:
    assert apicheck.check(code) == apicheck.Report(tuple(found), ())


def test_the_packages_an_example_imports_are_its_top_level_absolute_imports() -> None:
    code = (
        "import torch.nn as nn, numpy\nfrom transformers.models import x\nfrom . import y\n"
        "from .a import z\nimport os.path\nx = 1\n"
    )
    assert apicheck.imported_packages(code) == {"torch", "numpy", "transformers", "os"}
    assert apicheck.imported_packages("x = 1\n") == set()
