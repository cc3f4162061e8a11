"""A real Slurm on 127.0.0.1 for the tests that need a scheduler's own words (and for people).

`Cluster.start(folder)` writes a `slurm.conf` into `folder`, starts `slurmctld -D` and one
`slurmd -D -N <node>` per node as children of this process (several slurmd on one host, as
Debian's build allows), and waits until `sinfo` shows every node idle. `stop()` cancels what is
left, ends the daemons by pid, then ends by pid every process still marked as this cluster's
(`Cluster.leftovers`: steps and tasks that outlive a stopped slurmd). Nothing is installed or
written outside `folder`; the daemons listen on 127.0.0.1 only, on ports free at start.

Authentication is `auth/none` and `cred/none` (shipped from Slurm 22.05 to 26.05): no munge
daemon and no key, acceptable for daemons that listen on 127.0.0.1 for a test's lifetime only.
There are no cgroups in a container, so processes are tracked through /proc
(`proctrack/linuxproc`) and tasks are not bound (`task/none`). The daemons run as whoever runs
the tests (`SlurmUser` and `SlurmdUser`), root or not; only root's slurmd can run a job as
another user (`sbatch --uid`).

`apt-get install --no-install-recommends slurmctld slurmd slurm-client` gives the daemons
(`.ci/run` does it). Where Slurm is missing the tests skip, saying why; under `CI` or
`NANOPEDIA_REQUIRE_SLURM=1` they fail instead.

For a person: `python tests/slurmtools.py DIR` starts the same cluster, prints the
`SLURM_CONF=` to export, and stops it on Ctrl-C.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPILOG = ROOT / "contrib" / "slurm" / "epilog.sh"
"""The Epilog recipe the cluster runs, installed as its comments say."""
REQUIRED = bool(os.environ.get("NANOPEDIA_REQUIRE_SLURM") or os.environ.get("CI"))
"""Whether a missing Slurm fails the Slurm tests instead of skipping them."""
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
NODES = ("nano1", "nano2", "nano3", "nano4")
"""Four nodes of four CPUs each, whatever the host has (`config_overrides`): jobs that mostly
sleep run side by side, each scenario on nodes of its own."""
START_TIMEOUT = 60.0
"""Seconds for the daemons to come up and every node to be idle."""
SLURMD_TIMEOUT = 5
"""Seconds without an answer before slurmctld declares a node down (Slurm's default: 300)."""
KILL_WAIT = 2
"""Seconds between SIGTERM and SIGKILL at a time limit or cancel (Slurm's default: 30)."""


DAEMON_TAG = "NANOPEDIA_SLURM_CLUSTER"
"""Set in the daemons' environment (to the cluster's folder): how `stop` finds what is left."""


class SlurmError(RuntimeError):
    """The cluster did not start or a command failed; the message holds the daemons' log tail."""


def missing() -> str | None:
    """Why no cluster can start here, or None."""
    for daemon in ("slurmctld", "slurmd", "sbatch", "sinfo", "scontrol"):
        if shutil.which(daemon, path=SEARCH_PATH) is None:
            return (
                f"{daemon} not found: apt-get install --no-install-recommends slurmctld "
                "slurmd slurm-client"
            )
    return None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def slurm_conf(
    folder: Path, host: str, user: str, ports: Sequence[int], epilog: Path | None
) -> str:
    """The configuration: controller on `host` at 127.0.0.1, daemons run by `user`, the nodes
    of NODES, three partitions (`debug`, the default; `low`, whose jobs `high` preempts by
    cancelling them)."""
    node_lines = [
        f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=4"
        for name, port in zip(NODES, ports[1:], strict=True)
    ]
    nodes = ",".join(NODES)
    lines = [
        "ClusterName=nanopedia",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmUser={user}",
        f"SlurmdUser={user}",
        "CommunicationParameters=NoCtldInAddrAny,NoInAddrAny",
        "AuthType=auth/none",
        "CredType=cred/none",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool/%n",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd-%n.pid",
        f"SlurmctldLogFile={folder}/slurmctld.log",
        f"SlurmdLogFile={folder}/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=debug2",  # slurmd logs an Epilog's output at debug2
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        f"KillWait={KILL_WAIT}",
        f"SlurmdTimeout={SLURMD_TIMEOUT}",
        "MinJobAge=600",
        "PreemptType=preempt/partition_prio",
        "PreemptMode=CANCEL",
        *([f"Epilog={epilog}"] if epilog else []),
        *node_lines,
        f"PartitionName=debug Nodes={nodes} Default=YES MaxTime=INFINITE State=UP",
        f"PartitionName=low Nodes={nodes} PriorityTier=1 PreemptMode=CANCEL State=UP",
        f"PartitionName=high Nodes={nodes} PriorityTier=2 State=UP",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class Cluster:
    """A running cluster: its folder, config and daemons (name to process)."""

    folder: Path
    conf: Path
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment of a Slurm command or job for this cluster (none of a Slurm job this
        process may itself run in)."""
        ours = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        return {**ours, "SLURM_CONF": str(self.conf), "PATH": SEARCH_PATH}

    @classmethod
    def start(cls, folder: Path, epilog: Path | None = None) -> Cluster:
        """Write the config, start the daemons and wait for idle nodes; on failure stop what
        started and raise with the daemons' log tails."""
        folder = folder.resolve()
        for sub in ["state", *(f"spool/{node}" for node in NODES)]:
            (folder / sub).mkdir(parents=True, exist_ok=True)
        host = socket.gethostname().split(".")[0]
        conf = folder / "slurm.conf"
        user = pwd.getpwuid(os.geteuid()).pw_name
        conf.write_text(slurm_conf(folder, host, user, _free_ports(1 + len(NODES)), epilog))
        cluster = cls(folder, conf)
        try:
            cluster._spawn("slurmctld", ["slurmctld", "-D", "-c", "-i"])
            for node in NODES:
                cluster._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node])
            cluster._wait_idle()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _spawn(self, name: str, argv: list[str]) -> None:
        binary = shutil.which(argv[0], path=SEARCH_PATH)
        if binary is None:
            raise SlurmError(f"{argv[0]} not found")
        out = (self.folder / f"{name}.stderr").open("wb")
        with out:
            self.daemons[name] = subprocess.Popen(
                [binary, *argv[1:]],
                env={**self.env, DAEMON_TAG: str(self.folder)},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
            )

    def _wait_idle(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        states = ""
        while time.monotonic() < deadline:
            for name, proc in self.daemons.items():
                if proc.poll() is not None:
                    raise SlurmError(f"{name} exited with {proc.returncode}\n{self.logs()}")
            done = self.command("sinfo", "-h", "-N", "-o", "%N %T", check=False)
            states = " ".join(sorted(set(done.stdout.split("\n")) - {""}))
            if done.returncode == 0 and states == " ".join(f"{node} idle" for node in NODES):
                return
            time.sleep(0.5)
        raise SlurmError(f"nodes not idle after {START_TIMEOUT:.0f} s: {states!r}\n{self.logs()}")

    def logs(self, lines: int = 15) -> str:
        """The last lines each daemon wrote (in the foreground, its log goes to stderr too)."""
        parts = []
        for path in sorted(self.folder.glob("*.stderr")):
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(parts)

    def command(
        self, *argv: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster."""
        binary = shutil.which(argv[0], path=SEARCH_PATH) or argv[0]
        done = subprocess.run(
            [binary, *argv[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode:
            raise SlurmError(f"{' '.join(argv)}: {done.stderr.strip()}\n{self.logs()}")
        return done

    def sbatch(self, script: Path, *options: str) -> int:
        """Submit `script` (working directory: its folder); its job id."""
        done = self.command(
            "sbatch", "--parsable", f"--chdir={script.parent}", *options, str(script)
        )
        return int(done.stdout.strip().split(";")[0])

    def job(self, job_id: int) -> dict[str, str]:
        """`scontrol show job` as a dict (JobState, ExitCode, StdOut, NodeList...)."""
        done = self.command("scontrol", "show", "job", "-o", str(job_id))
        fields: dict[str, str] = {}
        for word in done.stdout.split():
            key, _, value = word.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait(self, job_id: int, states: Sequence[str], timeout: float) -> dict[str, str]:
        """Wait until the job is in one of `states` (and no longer completing)."""
        deadline = time.monotonic() + timeout
        fields: dict[str, str] = {}
        while time.monotonic() < deadline:
            fields = self.job(job_id)
            if fields.get("JobState") in states:  # the Epilog runs while squeue says COMPLETING
                squeue = self.command("squeue", "-h", "-j", str(job_id), "-o", "%T", check=False)
                if "COMPLETING" not in squeue.stdout:
                    return fields
            time.sleep(0.5)
        raise SlurmError(
            f"job {job_id} not in {list(states)} after {timeout:.0f} s: {fields}\n{self.logs()}"
        )

    def epilog_said(self) -> list[str]:
        """What the Epilog said (its line, after `nanopedia epilog: `) in every slurmd's log."""
        return [
            line.partition("nanopedia epilog: ")[2].strip()
            for path in sorted(self.folder.glob("slurmd-*.log"))
            for line in path.read_text(errors="replace").splitlines()
            if "nanopedia epilog: " in line
        ]

    def freeze(self, node: str) -> None:
        """Stop the node's slurmd (SIGSTOP): it no longer answers, as a hung or unplugged host,
        and slurmctld declares the node down after SLURMD_TIMEOUT."""
        self.daemons[f"slurmd-{node}"].send_signal(signal.SIGSTOP)

    def thaw(self, node: str) -> None:
        """Let a frozen slurmd go on (SIGCONT); the controller takes the node back."""
        self.daemons[f"slurmd-{node}"].send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Cancel every job, end the daemons, then every process left with this SLURM_CONF."""
        for proc in self.daemons.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].poll() is None:
            deadline = time.monotonic() + 10 * KILL_WAIT
            try:
                jobs = self.command("squeue", "-h", "-o", "%i", check=False, timeout=10)
                if jobs.stdout.split():
                    self.command("scancel", *jobs.stdout.split(), check=False, timeout=10)
                while time.monotonic() < deadline:
                    if not self.command("squeue", "-h", check=False, timeout=10).stdout.strip():
                        break
                    time.sleep(0.5)
            except subprocess.TimeoutExpired:
                pass  # the controller is gone: the sweep below ends what is left
        for proc in self.daemons.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.daemons.values():
            try:  # a slurmd that was frozen may never finish its shutdown
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def leftovers(self) -> list[int]:
        """Processes of this cluster still alive: daemons (slurmstepd inherits slurmd's
        DAEMON_TAG) and job processes (SLURM_JOB_ID with this SLURM_CONF), never a shell that
        merely exported this SLURM_CONF."""
        conf = f"SLURM_CONF={self.conf}".encode()
        tag = f"{DAEMON_TAG}={self.folder}".encode()
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                environ = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            job = conf in environ and any(v.startswith(b"SLURM_JOB_ID=") for v in environ)
            if tag in environ or job:
                found.append(int(proc.name))
        return found


def install_epilog(dest: Path, cache: Path) -> Path:
    """contrib/slurm/epilog.sh at `dest`, its NANOPEDIA_PYTHON line naming this interpreter, and
    this checkout's package and the session's catalogue cache (an installed nanopedia needs
    neither) exported after it: slurmd gives an Epilog no environment of its own."""
    text = EPILOG.read_text(encoding="utf-8")
    line = "NANOPEDIA_PYTHON=/opt/nanopedia/bin/python"
    if line not in text:
        raise SlurmError(f"{EPILOG} no longer has the line {line!r} that the tests set")
    ours = (
        f"NANOPEDIA_PYTHON={shlex.quote(sys.executable)}\n"
        f"export PYTHONPATH={shlex.quote(str(ROOT / 'generator'))} "
        f"NANOPEDIA_CACHE={shlex.quote(str(cache))}\n"
    )
    dest.write_text(text.replace(line, ours, 1), encoding="utf-8")
    dest.chmod(0o755)
    return dest


@contextmanager
def running(cache: Path) -> Iterator[Cluster]:
    """A cluster with the Epilog recipe, in a folder of its own under the system's temp folder
    that every user can enter (a job of another user runs its script from the spool there),
    removed with everything in it at the end."""
    folder = Path(tempfile.mkdtemp(prefix="nanopedia-slurm-"))
    folder.chmod(0o755)
    try:
        cluster = Cluster.start(folder / "cluster", install_epilog(folder / "epilog.sh", cache))
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    """`python tests/slurmtools.py DIR [EPILOG]`: a cluster for a person, until Ctrl-C."""
    if len(argv) not in (1, 2):
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        print("usage: python tests/slurmtools.py DIR [EPILOG]", file=sys.stderr)
        return 2
    why = missing()
    if why:
        print(why, file=sys.stderr)
        return 1
    epilog = Path(argv[1]).resolve() if len(argv) == 2 else None
    cluster = Cluster.start(Path(argv[0]), epilog)
    print(f"export SLURM_CONF={cluster.conf}   # nodes: {', '.join(NODES)}; Ctrl-C stops")
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
