"""The code-example check against installed libraries, on the standard library (no torch)."""

from __future__ import annotations

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
