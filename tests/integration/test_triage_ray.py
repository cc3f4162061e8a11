"""`nanopedia triage --ray`: the same fleet on a local Ray instance (2 CPUs, no dashboard) gives
JSON identical to the local process pool. Ray comes from pyproject's `ray` extra, which `.ci/run`
installs: in CI this test runs, never skips; elsewhere it skips when Ray is not installed."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from nanopedia.diagnosis import triage

sys.path.insert(0, str(ROOT / "bench"))
from triage_bench import BAD_HOST, check, failing_cases, make_fleet  # noqa: E402

from integration.test_triage import FLEET_CASES  # noqa: E402

if importlib.util.find_spec("ray") is None:
    if os.environ.get("CI"):
        pytest.fail("Ray is not installed; .ci/run must install the 'ray' extra", pytrace=False)
    pytest.skip("Ray is not installed (pip install -e '.[ray]')", allow_module_level=True)

# Ray's own import-time and shutdown warnings are not this project's to fix.
pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning",
    "ignore::ResourceWarning",
    "ignore::pytest.PytestUnraisableExceptionWarning",
)


def test_ray_gives_the_local_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    inits: list[dict[str, object]] = []
    real_init = ray.init
    monkeypatch.setattr(ray, "init", lambda **kw: (inits.append(kw), real_init(**kw))[1])
    root = tmp_path / "fleet"
    want = make_fleet(
        root, 27, lines=30, cases=[c for c in failing_cases() if c.name in FLEET_CASES]
    )
    (root / "empty").mkdir()
    (root / "core.log").write_bytes(b"\x00" * 64)
    entries = triage.load_entries(ROOT / "entries")[0]
    local = triage.triage([root], entries=entries, jobs=1).as_json()
    on_ray = triage.triage([root], entries=entries, jobs=2, ray="").as_json()
    assert json.dumps(on_ray, sort_keys=True) == json.dumps(local, sort_keys=True)
    assert check(on_ray["summary"], want) == []
    assert on_ray["summary"]["hosts"][0]["host"] == BAD_HOST
    assert on_ray["summary"]["skipped"]["by_reason"] == {"binary": 1, "empty-folder": 1}
    assert not ray.is_initialized()  # the instance triage started is shut down
    # T17: a dead worker's notices from the raylet went to stdout, into `--format json`
    assert [kw.get("log_to_driver") for kw in inits] == [False]
