"""One build step beyond copying files: the wheel carries the compiled catalogue of the entries it
ships (`nanopedia/diagnosis/catalogue.json`, `nanopedia.diagnosis.catalogue.SHIPPED`), so an
installed `nanopedia diagnose` reads one file instead of validating every entry on each run.

Everything else is declared in pyproject.toml. The catalogue is compiled by the package being
built, in a process of its own that imports it from the build folder (never an installed copy);
should that fail (a build environment without the package's dependencies), the wheel is built
without it and the first diagnosis compiles the catalogue into the user's cache instead.
"""

from __future__ import annotations

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

COMPILE = """
import sys
from pathlib import Path
from nanopedia.diagnosis import catalogue
package = Path(sys.argv[1]) / "nanopedia"
root = package / "entries"
artifact = catalogue.compile_entries(root, catalogue.file_hashes(root),
                                     catalogue.code_key(package))
(package / "diagnosis" / "catalogue.json").write_bytes(catalogue.dumps(artifact))
"""


class BuildPy(build_py):
    """`build_py`, then the catalogue of the copied entries written beside the copied code."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install reads the checkout
            return
        env = {**os.environ, "PYTHONPATH": os.path.abspath(self.build_lib)}
        done = subprocess.run(
            [sys.executable, "-c", COMPILE, os.path.abspath(self.build_lib)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            self.warn(
                "the compiled catalogue was not built (diagnose will compile it on its "
                f"first run): {done.stderr.strip().splitlines()[-1:] or done.returncode}"
            )


setup(cmdclass={"build_py": BuildPy})
