"""Real OpenSSH servers on loopback addresses, for the multi-node tests.

:func:`start_cluster` starts one ``/usr/sbin/sshd`` per "node" as the current user, each on its own
loopback address (127.0.0.2, 127.0.0.3, ...) and a free port, with its own ``-f`` config, a throwaway
host key and one throwaway user key (authorized for every node), and writes an ssh *client* config
(``Host node1 / HostName 127.0.0.2 / Port P / IdentityFile ... / UserKnownHostsFile ... /
StrictHostKeyChecking accept-new``) that bringup's :class:`wizard.hosts.SSHHost` uses with ``-F``.
It also names a node nobody listens on (``dead``) for the unreachable cases.

Nothing is mocked: the tests go through the real ssh client, the real sshd and a real login shell.
:func:`ensure_openssh` (called by the session's ``ssh_cluster`` fixture) installs what is missing of
``/usr/sbin/sshd``, ``ssh`` and ``ssh-keygen`` with ``apt-get install openssh-server openssh-client`` when
the tests run as root on a Debian-family machine, one process at a time (an flock on a file in the temp
dir, so only one pytest-xdist worker runs apt); otherwise it raises :class:`SshdUnavailable` with the fix,
and the fixture turns that into a test failure, never a skip.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

SSHD = "/usr/sbin/sshd"
"""sshd must be started by absolute path (it re-executes itself for every connection)."""
START_TIMEOUT_S = 10.0
PACKAGES = ("openssh-server", "openssh-client")
"""What :func:`ensure_openssh` installs (Debian/Ubuntu package names)."""
INSTALL_LOCK = Path(tempfile.gettempdir()) / "bringup-tests-openssh-install.lock"
"""flock'ed around the check-and-install, so parallel workers (and parallel sessions) run apt once."""
APT_TIMEOUT_S = 600


class SshdUnavailable(RuntimeError):
    """OpenSSH's server or tools are missing, or a server did not start; the message says what to do."""


@dataclass
class Node:
    name: str
    addr: str
    port: int
    proc: subprocess.Popen[bytes] | None = None
    log: Path | None = None


@dataclass
class Cluster:
    """Running sshd "nodes". ``ssh_config`` is the client config (``-F``) naming every node."""

    dir: Path
    ssh_config: Path
    nodes: list[Node] = field(default_factory=list)
    dead: Node | None = None

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def stop(self) -> None:
        """Stop every sshd this cluster started (by its own process handle), then wait for it."""
        for n in self.nodes:
            if n.proc is not None and n.proc.poll() is None:
                n.proc.terminate()
        for n in self.nodes:
            if n.proc is not None:
                try:
                    n.proc.wait(5)
                except subprocess.TimeoutExpired:
                    n.proc.kill()
                    n.proc.wait(5)

    def logs(self) -> str:
        """Every sshd's log (for a failing test's message)."""
        out = []
        for n in self.nodes:
            try:
                out.append(f"--- sshd {n.name} ({n.addr}:{n.port})\n" + (n.log.read_text() if n.log else ""))
            except OSError:
                pass
        return "\n".join(out)


def missing_openssh() -> list[str]:
    """What of ``/usr/sbin/sshd``, ``ssh`` and ``ssh-keygen`` this machine lacks."""
    return [p for p in (SSHD,) if not os.path.exists(p)] + [b for b in ("ssh", "ssh-keygen") if not shutil.which(b)]


def apt_install(packages: "tuple[str, ...] | list[str]", manual: str, error: "type[Exception]", what: str) -> None:
    """``apt-get update`` then ``apt-get install -y --no-install-recommends PACKAGES`` (non-interactive), the one way
    the test set-up installs a system package it needs (OpenSSH here, strace in tests/faults.py).

    Raises:
        error: not root, no apt-get, a step that failed or did not finish in :data:`APT_TIMEOUT_S`; its message says
            what to install by hand (``manual``).
    """
    if os.geteuid() != 0:
        raise error(manual + " (these tests are not running as root, so they cannot).")
    apt = shutil.which("apt-get")
    if apt is None:
        raise error(manual + f" (this machine has no apt-get: install {what} with its package manager).")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "--no-install-recommends", *packages]):
        try:
            r = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise error(f"`{' '.join(argv)}` did not finish in {APT_TIMEOUT_S} s. {manual}.") from None
        if r.returncode != 0:
            tail = (r.stdout + r.stderr).strip()[-1500:]
            raise error(f"`{' '.join(argv)}` failed (exit status {r.returncode}):\n{tail}\n{manual}.")


def ensure_installed(missing: "Callable[[], list[str]]", packages: "tuple[str, ...]", manual: "Callable[[list[str]], str]",
                     error: "type[Exception]", what: str, lock: Path) -> None:
    """Install ``packages`` with :func:`apt_install` when ``missing()`` names anything, under an exclusive flock on
    ``lock`` so only one process (pytest-xdist worker, or parallel session) installs while the others wait and then
    find it installed. The one way the test set-up makes sure of a system program (OpenSSH, Slurm, strace...).

    Raises:
        error: not root, no apt-get, the install failed (``manual(missing)`` says what to install by hand), or
            something is still missing after it.
    """
    if not missing():
        return
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        now = missing()
        if not now:  # another worker installed it while this one waited
            return
        apt_install(packages, manual(now), error, what)
        still = missing()
        if still:
            raise error(f"{', '.join(still)} still missing after installing {' '.join(packages)}.")


def ensure_openssh() -> None:
    """Install OpenSSH (server and client) when any of its programs is missing (:func:`ensure_installed`).
    Not root, no apt-get, or a failed install: :class:`SshdUnavailable` saying what to install by hand.
    """
    ensure_installed(missing_openssh, PACKAGES,
                     lambda missing: (f"{', '.join(missing)} not found: the multi-node tests run real sshd servers. "
                                      f"Install OpenSSH as root (`apt-get install -y --no-install-recommends "
                                      f"{' '.join(PACKAGES)}`) or run the tests as root, and the test set-up installs it"),
                     SshdUnavailable, "OpenSSH's server and client", INSTALL_LOCK)


def _free_port(addr: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def _wait_listening(addr: str, port: int, proc: subprocess.Popen[bytes], deadline: float) -> bool:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((addr, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def _keygen(path: Path) -> None:
    r = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bringup-test", "-f", str(path)],
                       check=False, capture_output=True, text=True)
    if r.returncode != 0:
        raise SshdUnavailable(f"ssh-keygen failed: {r.stderr.strip()}")


def start_cluster(tmp: Path, count: int = 3, sshd_extra: "Mapping[str, Sequence[str]] | None" = None) -> Cluster:
    """Start ``count`` sshd nodes named node1..nodeN on 127.0.0.2.. and write the client config.

    ``sshd_extra``: node name -> more sshd_config(5) lines for that node's server (e.g. ``SetEnv PATH=...``, which
    sshd applies to every session it starts, so one "node" of this machine can see other programs than the rest).

    Raises :class:`SshdUnavailable` when ``/usr/sbin/sshd``, ``ssh`` or ``ssh-keygen`` is missing or a
    server does not listen within 10 s (its log is in the message).
    """
    missing = missing_openssh()
    if missing:
        raise SshdUnavailable(f"{', '.join(missing)} not found: install OpenSSH (`apt-get install -y openssh-server "
                              "openssh-client`; the ssh_cluster fixture does this as root). The multi-node tests "
                              "need real sshd servers.")
    tmp.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    user = getpass.getuser()
    user_key = tmp / "id_ed25519"
    _keygen(user_key)
    auth = tmp / "authorized_keys"
    auth.write_text((tmp / "id_ed25519.pub").read_text())
    auth.chmod(0o600)
    known = tmp / "known_hosts"
    cluster = Cluster(tmp, tmp / "ssh_config")
    client: list[str] = []
    try:
        for i in range(count):
            name, addr = f"node{i + 1}", f"127.0.0.{i + 2}"
            host_key = tmp / f"host_{name}"
            _keygen(host_key)
            port = _free_port(addr)
            cfg = tmp / f"sshd_{name}.conf"
            cfg.write_text("\n".join([
                f"ListenAddress {addr}:{port}",
                f"HostKey {host_key}",
                f"PidFile {tmp / f'sshd_{name}.pid'}",
                f"AuthorizedKeysFile {auth}",
                "StrictModes no",
                "UsePAM no",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "X11Forwarding no",
                "PrintMotd no",
                "MaxStartups 200:30:400",
                "MaxSessions 100",
                "Subsystem sftp internal-sftp",
                "LogLevel INFO",
                *(sshd_extra or {}).get(name, ()),
            ]) + "\n")
            log = tmp / f"sshd_{name}.log"
            with open(log, "wb") as fh:
                proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdin=subprocess.DEVNULL, stdout=fh,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            node = Node(name, addr, port, proc, log)
            cluster.nodes.append(node)
            if not _wait_listening(addr, port, proc, time.monotonic() + START_TIMEOUT_S):
                raise SshdUnavailable(f"sshd for {name} did not listen on {addr}:{port} within {START_TIMEOUT_S:g} s "
                                      f"(exit status {proc.poll()}):\n{log.read_text()}")
            client += [f"Host {name}", f"  HostName {addr}", f"  Port {port}"]
        dead_addr = f"127.0.0.{count + 2}"
        cluster.dead = Node("dead", dead_addr, _free_port(dead_addr))  # nothing listens there
        client += ["Host dead", f"  HostName {dead_addr}", f"  Port {cluster.dead.port}"]
        client += ["Host *", f"  User {user}", f"  IdentityFile {user_key}", "  IdentitiesOnly yes",
                   f"  UserKnownHostsFile {known}", "  StrictHostKeyChecking accept-new", "  LogLevel ERROR"]
        cluster.ssh_config.write_text("\n".join(client) + "\n")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def fake_nvidia_smi(d: Path, xml: Path) -> str:
    """A directory holding an ``nvidia-smi`` that prints ``xml`` (a real captured ``nvidia-smi -q -x``) for
    ``-q -x`` and fails for anything else: put first on a node's PATH (sshd's ``SetEnv PATH=``, ``start_cluster``'s
    ``extra``) to give that "node" another GPU and driver than the others. Returns the directory."""
    d.mkdir(parents=True)
    p = d / "nvidia-smi"
    p.write_text(f'#!/bin/sh\nif [ "$*" = "-q -x" ]; then exec cat {xml}; fi\n'
                 'echo "test fixture: only nvidia-smi -q -x was captured" >&2\nexit 9\n')
    p.chmod(0o755)
    return str(d)
