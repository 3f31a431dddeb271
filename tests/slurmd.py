"""A real Slurm on this machine for the Slurm tests (tests/test_slurm.py): munged, slurmctld and two slurmd.

:func:`start_cluster` makes a private directory under the temp dir and starts, each in the foreground as a child
of the test process and each with its own files there:

* ``munged`` with its own key (random bytes, as ``mungekey`` makes), socket, pid, log and seed files; slurm.conf's
  ``AuthInfo=socket=...`` points Slurm at that socket, so the machine's own munge (if any) is never used;
* ``slurmctld -D`` with ``SlurmctldHost=localhost`` on a free port, its state and logs in the directory;
* two ``slurmd -D -N NAME``: node ``<hostname -s>`` and node ``<hostname -s>-b``, both this machine (``NodeAddr=
  127.0.0.1``, their own free ports, spool and log files), so ``srun`` has two nodes to start a two-node job on;
* ``HealthCheckProgram`` = a wrapper script that runs ``bringup check --profile health --slurm --snapshot BUNDLE``,
  BUNDLE read from ``bundle.<node>`` (else ``bundle.default``) in the directory, which the tests rewrite; every run
  is appended to ``health.<node>.log`` (``rc=N`` ends each run). ``HealthCheckInterval`` is :data:`HEALTH_INTERVAL_S`
  and ``HealthCheckNodeState=ANY``, so slurmd itself runs it on idle and drained nodes.

Nothing is mocked. :func:`ensure_slurm` installs Slurm and munge with apt-get when missing (as root, one process at
a time under an flock, like :func:`tests.sshd.ensure_openssh`); when that cannot be done, or a daemon does not come
up, :class:`SlurmUnavailable` says exactly why (with the daemon's log) and the fixture fails the test, never skips.
:meth:`Cluster.stop` stops every daemon (SIGTERM, then SIGKILL) and removes the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
"""What :func:`ensure_slurm` installs (Debian/Ubuntu package names; ``slurm-wlm`` is their metapackage)."""
PROGRAMS = ("munged", "slurmctld", "slurmd", "scontrol", "sinfo", "srun", "salloc", "sbcast")
INSTALL_LOCK = Path(tempfile.gettempdir()) / "bringup-tests-slurm-install.lock"
SBIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_TIMEOUT_S = 60.0
HEALTH_INTERVAL_S = 2
"""slurm.conf ``HealthCheckInterval`` (seconds): slurmd runs the health program this often (Slurm's own timer;
the test waits a few intervals)."""


class SlurmUnavailable(RuntimeError):
    """Slurm or munge is missing and cannot be installed, or a daemon did not start; the message says why."""


def which(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":" + SBIN_PATH)


def missing_programs() -> list[str]:
    return [p for p in PROGRAMS if which(p) is None]


def ensure_slurm() -> None:
    """Install Slurm (slurmctld, slurmd, the client commands) and munge when any program is missing
    (:func:`tests.sshd.ensure_installed`).

    Raises:
        SlurmUnavailable: not root, no apt-get, or the install failed (apt's own output in the message).
    """
    from tests.sshd import ensure_installed

    ensure_installed(missing_programs, PACKAGES,
                     lambda missing: (f"{', '.join(missing)} not found: the Slurm tests run a real slurmctld, slurmd "
                                      f"and munged. Install them as root (`apt-get install -y --no-install-recommends "
                                      f"{' '.join(PACKAGES)}`)"),
                     SlurmUnavailable, "Slurm and munge", INSTALL_LOCK)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A running Slurm: its directory, config, node names (the first is this host's short name) and daemons."""

    dir: Path
    conf: Path
    nodes: list[str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm's commands (and bringup) to use this cluster."""
        path = os.environ.get("PATH", "") + ":" + SBIN_PATH
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": path}

    def run(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout)

    def show_node(self, node: str) -> str:
        """``scontrol show node -o NODE``'s one line."""
        r = self.run("scontrol", "show", "node", "-o", node)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def choose_bundle(self, bundle: Path, node: str = "default") -> None:
        """The bundle the health program judges from now on (on ``node``, or on every node without its own)."""
        tmp = self.dir / f".bundle.{node}.new"
        tmp.write_text(str(bundle))
        tmp.replace(self.dir / f"bundle.{node}")

    def health_runs(self, node: str) -> int:
        """How many health program runs on ``node`` have ended so far."""
        log = self.dir / f"health.{node}.log"
        return log.read_text(errors="replace").count("\nrc=") if log.exists() else 0

    def health_log(self, node: str) -> str:
        log = self.dir / f"health.{node}.log"
        return log.read_text(errors="replace") if log.exists() else ""

    def log_tail(self, name: str, lines: int = 30) -> str:
        p = self.dir / f"{name}.log"
        return "\n".join(p.read_text(errors="replace").splitlines()[-lines:]) if p.exists() else f"(no {p})"

    def stop(self) -> None:
        """Stop every daemon (SIGTERM, then SIGKILL after 10 s) and remove the directory."""
        for p in reversed(list(self.procs.values())):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        # what the daemons started and did not wait for (a health program run, a prolog): they name this directory
        # in their command line; give them a few seconds, then kill them by pid, and only then remove the directory
        deadline = time.monotonic() + 15
        while self._stragglers() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self._stragglers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.dir.exists():  # a straggler wrote a last line while the tree was being removed
            time.sleep(0.5)
            shutil.rmtree(self.dir, ignore_errors=True)

    def _stragglers(self) -> list[int]:
        """Pids of live processes whose command line names this cluster's directory (never this process)."""
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit() or int(d) == os.getpid():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    if str(self.dir).encode() in fh.read():
                        out.append(int(d))
            except OSError:
                pass
        return out


def _wait(pred, timeout_s: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


HEALTH_WRAPPER = """#!/bin/sh
# slurmd's HealthCheckProgram in the tests: bringup's health profile on the bundle chosen for this node
n="${{SLURMD_NODENAME:-unknown}}"
b=$(cat "{dir}/bundle.$n" 2>/dev/null || cat "{dir}/bundle.default")
echo "run $(date +%s) $b" >> "{dir}/health.$n.log"
PATH={path} SLURM_CONF="{conf}" BRINGUP_STATE_DIR="{dir}/bringup-state" PYTHONPATH="{root}" \\
  "{python}" -m wizard.cli check --profile health --slurm --snapshot "$b" >> "{dir}/health.$n.log" 2>&1
echo "rc=$?" >> "{dir}/health.$n.log"
"""


def start_cluster(default_bundle: Path) -> Cluster:
    """Start munged, slurmctld and two slurmd (see the module doc); wait until both nodes are idle.

    Raises:
        SlurmUnavailable: a daemon exited or the nodes were not idle within :data:`START_TIMEOUT_S` (the logs are in
            the message).
    """
    d = Path(tempfile.mkdtemp(prefix="bringup-slurm-"))
    d.chmod(0o755)  # munged refuses a socket whose directory others cannot traverse
    for sub in ("munge", "state", "spool", "bringup-state"):
        (d / sub).mkdir(mode=0o700)
    key = d / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".", 1)[0]
    nodes = [host, f"{host}-b"]
    conf = d / "slurm.conf"
    cluster = Cluster(d, conf, nodes)
    wrapper = d / "health.sh"
    wrapper.write_text(HEALTH_WRAPPER.format(dir=d, conf=conf, root=ROOT, python=sys.executable, path=SBIN_PATH))
    wrapper.chmod(0o755)
    cluster.choose_bundle(default_bundle)
    sock = d / "munge.socket"
    ports = [free_port() for _ in range(1 + len(nodes))]
    node_lines = "\n".join(f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={p} CPUs={os.cpu_count() or 1} "
                           f"State=UNKNOWN" for n, p in zip(nodes, ports[1:]))
    conf.write_text(f"""ClusterName=bringuptest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
HealthCheckProgram={wrapper}
HealthCheckInterval={HEALTH_INTERVAL_S}
HealthCheckNodeState=ANY
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=60
{node_lines}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    env = cluster.env

    def start(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = open(d / f"{name}.out", "wb")
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        out.close()
        cluster.procs[name] = p
        return p

    try:
        munged = start("munged", [str(which("munged")), "-F", f"--socket={sock}", f"--key-file={key}",
                                  f"--pid-file={d}/munged.pid", f"--log-file={d}/munge/munged.log",
                                  f"--seed-file={d}/munge/munged.seed"])
        if not _wait(lambda: sock.exists() or munged.poll() is not None, 15) or munged.poll() is not None:
            raise SlurmUnavailable(f"munged did not start (exit status {munged.poll()}):\n"
                                   + (d / "munged.out").read_text(errors="replace")[-2000:])
        ctld = start("slurmctld", [str(which("slurmctld")), "-D", "-i"])
        for n in nodes:
            start(f"slurmd-{n}", [str(which("slurmd")), "-D", "-N", n])

        def idle() -> bool:
            for name, p in cluster.procs.items():
                if p.poll() is not None:
                    raise SlurmUnavailable(f"{name} exited with status {p.returncode}:\n"
                                           + (d / f"{name}.out").read_text(errors="replace")[-3000:])
            r = cluster.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=10)
            states = dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)
            return r.returncode == 0 and all(states.get(n, "").startswith("idle") for n in nodes)

        if not _wait(idle, START_TIMEOUT_S, 0.5):
            r = cluster.run("sinfo", "-N", timeout=10)
            raise SlurmUnavailable(f"the Slurm nodes {nodes} were not idle within {START_TIMEOUT_S:g} s "
                                   f"(slurmctld alive: {ctld.poll() is None}):\n{r.stdout}{r.stderr}\n"
                                   f"slurmctld.log:\n{cluster.log_tail('slurmctld')}\n"
                                   f"slurmd-{nodes[0]}.log:\n{cluster.log_tail(f'slurmd-{nodes[0]}')}")
    except BaseException:
        cluster.stop()
        raise
    return cluster
