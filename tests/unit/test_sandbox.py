"""The bubblewrap command line a repro script runs under (no process is started here)."""

from __future__ import annotations

import sys

import pytest

from nanopedia.commands import sandbox

BOX = sandbox.Sandbox("/usr/bin/bwrap", "/usr/bin/setpriv")


def _pairs(args: list[str], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


@pytest.mark.parametrize("root", [True, False])
def test_the_command_confines_the_script(monkeypatch, root: bool) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0 if root else 1000)
    monkeypatch.setenv("HOME", "/home/someone")
    args = sandbox.command(BOX, ["python", "launcher"], sys.executable)
    assert args[0] == BOX.bwrap and args[-2:] == ["python", "launcher"]
    assert {"--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net"} <= set(
        args
    ) or {"--die-with-parent", "--new-session", "--unshare-all"} <= set(args)
    assert args[args.index("--ro-bind") + 1 : args.index("--ro-bind") + 3] == ["/", "/"]
    assert "/tmp" in _pairs(args, "--tmpfs") and _pairs(args, "--chdir") == ["/tmp"]
    inner = args[args.index("--") + 1 :]
    if root:  # no user namespace: it would map the sandbox's user onto root
        assert "--unshare-user" not in args and "--unshare-all" not in args
        assert inner[0] == BOX.setpriv and "--reuid" in inner and "65534" in inner
    else:
        assert "--unshare-user" in args and _pairs(args, "--uid") == ["65534"]
        assert inner == ["python", "launcher"]


def test_an_interpreter_in_tmp_is_mounted_again_on_the_scripts_own_tmp(
    monkeypatch, tmp_path
) -> None:
    """A checkout with its venv under /tmp: the script's private /tmp was mounted last and hid
    the interpreter (setpriv: 'No such file or directory' for every repro)."""
    monkeypatch.setattr("os.geteuid", lambda: 0)
    venv = "/tmp/clone/.venv"
    monkeypatch.setattr(sandbox, "kept_dirs", lambda python: [venv])
    monkeypatch.setattr("os.path.isdir", lambda folder: True)
    args = sandbox.command(BOX, [venv + "/bin/python", "launcher"], venv + "/bin/python")
    tmp = next(i for i, a in enumerate(args) if a == "--tmpfs" and args[i + 1] == "/tmp")
    bind = next(i for i, a in enumerate(args) if a == "--ro-bind" and args[i + 1] == venv)
    made = next(i for i, a in enumerate(args) if a == "--dir" and args[i + 1] == "/tmp/clone")
    assert tmp < made < bind < args.index("--")
    assert args[made - 2 : made] == ["--perms", "0755"]  # the sandbox's user may pass through


def test_limits_are_finite_and_follow_the_timeout() -> None:
    short, long = sandbox.limits_for(10), sandbox.limits_for(1000)
    assert short.cpu_seconds < long.cpu_seconds
    assert all(0 < v < 1 << 40 for k, v in short.as_dict().items() if k != "core_bytes")
    assert short.core_bytes == 0
