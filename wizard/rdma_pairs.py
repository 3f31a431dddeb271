"""RDMA write bandwidth between pairs of nodes (``multinode.rdma_pairs``): perftest's ``ib_write_bw`` over ssh.

``python -m wizard.rdma_pairs --hostfile FILE [--ssh-config C] [--seconds 5] [--size 8388608] [--device DEV[:PORT]]``
is what the step's action runs, detached under :mod:`wizard.supervise` like every action. It:

1. reads every node's RDMA ports over ssh (:data:`PORTS_SH`: the ``state``, ``phys_state``, ``rate`` and
   ``link_layer`` files of ``/sys/class/infiniband/*/ports/*`` and the port GID tables, as ``path:value`` lines) and
   picks each node's port the way the loopback test does (:func:`wizard.install.perftest.fastest_active_port`: the
   fastest Active port, InfiniBand first), or the ``--device`` given (the plan's ``rdma_device``);
2. tests the nodes as a ring of neighbouring pairs, in hostfile order, one pair at a time: node i writes to node
   i+1, the last to the first. Every node is a client (the writer) once and a server (the target) once, with two
   different neighbours, in N runs for N nodes (every pair of nodes would be N(N-1)/2 runs, each holding both
   ports, too slow to run in turn on a large cluster); a bad port then shows in the two pairs that share its node.
   One pair at a time, so no two tests share a port or a switch link;
3. for the pair A -> B: starts the server on B (``ib_write_bw -d DEV -i PORT -s SIZE -D SECONDS --report_gbits -F
   [-x GID]``) under :data:`SERVER_SH`, which stops it when its ssh session ends; waits until it prints perftest's
   "Waiting for client to connect" line (at most :data:`START_WAIT_S`); runs the client on A with the same options
   and B's address; when the client fails, the server is stopped (its ssh session is closed). B's address is the
   hostfile's ``addr=``, else the HostName ssh resolves for B's target (``ssh -G``), as the multi-node launcher's
   rendezvous address: ib_write_bw uses it only for its TCP handshake (port 18515) before the RDMA transfer, which
   goes through the ``-d`` device whatever network the address is on, so an IPoIB address is not needed.

Every ssh is ``BatchMode=yes`` with ``ConnectTimeout`` and a time limit of its own (:data:`PORTS_TIMEOUT_S`, the
test's seconds + :data:`CLIENT_MARGIN_S`, :data:`SERVER_END_WAIT_S`). The log: one header per pair
(``# pair A -> B: DEV port N -> DEV port M, line rate R Gb/s``, R the slower port's rate), the ssh command lines,
both sides' output prefixed ``[A client]`` / ``[B server]``, then ``# pair A -> B done: ...`` or ``# pair A -> B
failed: REASON`` (the ssh or perftest words); read back by :func:`wizard.parsers.fabric.parse_rdma_pairs` and judged
by :func:`wizard.rules.fabric.judge_rdma_pairs`. Exit status: 0 when every pair ran (judging the bandwidth is the
judge's), 1 when a pair did not run, 3 for a bad hostfile or option, 143 when stopped.

perftest: https://github.com/linux-rdma/perftest (README "Running Tests": server ``ib_write_bw``, client
``ib_write_bw <server>``).
"""

from __future__ import annotations

from wizard.i18n import N_

import argparse
import asyncio
import shlex
import sys
from dataclasses import dataclass, field
from typing import Sequence

from wizard.hosts import DEFAULT_CONNECT_TIMEOUT_S, SSHHost, probe_env, ssh_error_text
from wizard.install.perftest import DURATION_S, MESSAGE_BYTES, PERFTEST_BINARY, fastest_active_port, gid_index
from wizard.multinode import HostfileError, read_hostfile, run_cancelled_by_signals
from wizard.parsers.fabric import IbPort, parse_ib_sysfs
from wizard.parsers.hostfile import NodeSpec
from wizard.common import lazy_re

_C = {"LC_ALL": "C", "LANG": "C"}
_PORT_FILES = " ".join(f"sys/class/infiniband/*/ports/*/{f}" for f in ("state", "phys_state", "rate", "link_layer",
                                                                          "gid_attrs/types/*", "gids/*"))
PORTS_SH = ('cd "$1" 2>/dev/null || exit 0; grep -sH . ' + _PORT_FILES + ' | grep -v ":' + ":".join(["0000"] * 8)
            + '$"; true')
"""``sh -c PORTS_SH sh ROOT`` on a node: the RDMA ports' sysfs files under ``ROOT/sys`` (``/`` but in tests) as
``sys/class/infiniband/...:value`` lines (``grep -H``; unused, all-zero GID entries left out); nothing when the node
has no RDMA device."""
SERVER_SH = ('exec 3<&0; "$@" </dev/null & p=$!; { cat <&3 >/dev/null 2>&1; kill "$p" 2>/dev/null; } & '
             'wait "$p"; rc=$?; exit "$rc"')
"""``sh -c SERVER_SH sh IB_WRITE_BW ARGS...`` on the server node: the server in the background, stopped when the ssh
session's standard input closes (bringup closes it when the client failed or the time is up; sshd closes it when the
connection drops); the exit status is the server's."""
WAITING_RE = lazy_re(r"Waiting for client to connect")
START_WAIT_S = 5.0
"""Seconds to wait for the server's "Waiting for client to connect" line before starting the client anyway (perftest
may not flush it through a pipe; it listens right after printing it)."""
PORTS_TIMEOUT_S = 30.0
CLIENT_MARGIN_S = 60.0
"""The client's ssh may take the test's seconds plus this (login, handshake, memory registration)."""
SERVER_END_WAIT_S = 30.0
"""After the client ended, seconds the server gets to print its result and exit before it is stopped."""
_DEVICE = lazy_re(r"^([\w.-]+)(?::(\d{1,3}))?$")


@dataclass
class NodePort:
    """The port a node tests with: ``ca`` and ``num`` ("" and 0 when there is none: ``error`` says why), ``port`` as
    its sysfs reads (None when not listed there: the plan named a device sysfs does not show, so its rate is unknown)
    and the ``-x`` GID index for a RoCE port."""

    spec: NodeSpec
    ca: str = ""
    num: int = 0
    port: IbPort | None = None
    gid: int | None = None
    error: str = ""

    def label(self) -> str:
        return f"{self.ca} port {self.num}" if self.ca else "?"


@dataclass
class Options:
    hostfile: str
    ssh_config: str | None = None
    seconds: int = DURATION_S
    size: int = MESSAGE_BYTES
    device: str = ""
    perftest: str = PERFTEST_BINARY
    sysfs_root: str = "/"
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    start_wait_s: float = START_WAIT_S
    ssh_options: tuple[str, ...] = field(default_factory=tuple)


def ring(names: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs (client, server) of a ring in ``names`` order: each to the next, the last to the first; for two
    names both directions. ``[]`` for fewer than two."""
    if len(names) < 2:
        return []
    return [(names[i], names[(i + 1) % len(names)]) for i in range(len(names))]


def _host(spec: NodeSpec, opts: Options) -> SSHHost:
    return SSHHost(spec.target, spec.name, opts.ssh_config, opts.ssh_options, opts.connect_timeout_s)


def perftest_args(ca: str, port: int | str, gid: int | None, opts: Options) -> list[str]:
    """``-d CA -i PORT -s SIZE -D SECONDS --report_gbits -F [-x GID]`` (the loopback test's options)."""
    args = ["-d", ca, "-i", str(port), "-s", str(opts.size), "-D", str(opts.seconds), "--report_gbits", "-F"]
    return args + (["-x", str(gid)] if gid is not None else [])


def _split_device(dev: str) -> tuple[str, int]:
    m = _DEVICE.match(dev)
    return (m.group(1), int(m.group(2) or 1)) if m else (dev, 1)


async def read_port(spec: NodeSpec, opts: Options) -> NodePort:
    """The node's port to test (see the module doc); never raises."""
    r = await _host(spec, opts).run(["sh", "-c", PORTS_SH, "sh", opts.sysfs_root], timeout_s=PORTS_TIMEOUT_S)
    if r.error:
        return NodePort(spec, error=r.error)
    files: dict[str, str | None] = {}
    for line in r.text.splitlines():
        path, sep, value = line.partition(":")
        if sep and path.startswith("sys/class/infiniband/"):
            files["/" + path] = value
    sysfs = parse_ib_sysfs(files)
    if opts.device:  # the plan's device: tested whatever sysfs says (perftest says it when there is no such device)
        ca, num = _split_device(opts.device)
        port = next((p for p in sysfs.ports.ports if p.ca == ca and p.port == num), None)
        dev = sysfs.devices.get(ca)
    else:
        port, dev = fastest_active_port(sysfs)
        if port is None:
            return NodePort(spec, error=f"{spec.name} has no Active InfiniBand/RoCE port in /sys/class/infiniband "
                                        "(ibstat must show State: Active, Physical state: LinkUp)")
        ca, num = port.ca, port.port
    gid = None
    if port is not None and port.link_layer == "Ethernet":
        gid = gid_index(port, dev)
        if gid is None:
            return NodePort(spec, ca, num, port, error=f"{spec.name}'s {ca} port {num} is RoCE but has no GID in its "
                                                       "table (no IP address on its netdev?)")
    return NodePort(spec, ca, num, port, gid)


async def _address(spec: NodeSpec, opts: Options) -> str:
    if spec.addr:
        return spec.addr
    name = await _host(spec, opts).hostname()
    return name or spec.target.rsplit("@", 1)[-1]


def _line_rate(a: NodePort, b: NodePort) -> float | None:
    rates = [p.port.rate_gbit_s for p in (a, b) if p.port is not None and p.port.rate_gbit_s]
    return min(rates) if rates else None


def _print(prefix: str, data: bytes) -> None:
    for line in data.decode("utf-8", "replace").splitlines():
        print(f"{prefix} {line}".rstrip())


async def _read_all(stream: asyncio.StreamReader | None, sink: list[bytes], seen: asyncio.Event | None) -> None:
    if stream is None:
        return
    while True:
        line = await stream.readline()
        if not line:
            return
        sink.append(line)
        if seen is not None and WAITING_RE.search(line.decode("utf-8", "replace")):
            seen.set()


async def run_pair(a: NodePort, b: NodePort, opts: Options) -> bool:
    """Test A -> B (client on A writes to the server on B), printing the pair's block of the log; True when the client
    and the server both exited 0. Never raises for the nodes' problems."""
    rate = _line_rate(a, b)
    name_a, name_b = a.spec.name, b.spec.name
    print(f"# pair {name_a} -> {name_b}: {a.label()} -> {b.label()}, line rate "
          + (f"{rate:g} Gb/s" if rate else "unknown"), flush=True)
    for n in (a, b):
        if n.ca:
            print(f"# {n.spec.name} {n.label()}: " + (
                (f"rate {n.port.rate_gbit_s:g} Gb/s" if n.port.rate_gbit_s else "rate unknown")
                + f", link layer {n.port.link_layer or 'unknown'}"
                if n.port is not None else N_("not listed in its /sys/class/infiniband: rate unknown")), flush=True)
    bad = next((n for n in (a, b) if n.error), None)
    if bad is not None:
        print(f"# pair {name_a} -> {name_b} failed: {bad.error}", flush=True)
        return False
    addr = await _address(b.spec, opts)
    server_cmd = _host(b.spec, opts).ssh_argv(SSHHost.remote_command(
        ["sh", "-c", SERVER_SH, "sh", opts.perftest, *perftest_args(b.ca, b.num, b.gid, opts)], _C))
    client_argv = [opts.perftest, *perftest_args(a.ca, a.num, a.gid, opts), addr]
    client_host = _host(a.spec, opts)
    print(f"# server on {name_b}: $ {shlex.join(server_cmd)}", flush=True)
    try:
        proc = await asyncio.create_subprocess_exec(*server_cmd, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                    env=probe_env())
    except OSError as exc:
        print(f"# pair {name_a} -> {name_b} failed: ssh could not start: {exc.strerror or exc}", flush=True)
        return False
    out: list[bytes] = []
    err: list[bytes] = []
    seen = asyncio.Event()
    readers = [asyncio.ensure_future(_read_all(proc.stdout, out, seen)),
               asyncio.ensure_future(_read_all(proc.stderr, err, None))]
    exited = asyncio.ensure_future(proc.wait())
    waiter = asyncio.ensure_future(seen.wait())
    try:
        await asyncio.wait([waiter, exited], timeout=opts.start_wait_s, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        client = None
        if not exited.done():
            print(f"# client on {name_a}: $ {shlex.join(client_host.ssh_argv(SSHHost.remote_command(client_argv, _C)))}",
                  flush=True)
            client = await client_host.run(client_argv, timeout_s=opts.seconds + CLIENT_MARGIN_S)
        if client is None or client.rc != 0:  # no client, or it failed: stop the server (close its ssh session)
            _close(proc)
        try:
            await asyncio.wait_for(asyncio.shield(exited), SERVER_END_WAIT_S)
        except asyncio.TimeoutError:
            _close(proc)
            if proc.returncode is None:
                proc.kill()
            await exited
        await asyncio.gather(*readers)
    except asyncio.CancelledError:
        if proc.returncode is None:
            proc.kill()
        raise
    server_rc = proc.returncode
    _print(f"[{name_b} server]", b"".join(out))
    _print(f"[{name_b} server]", b"".join(err))
    if client is None:
        why = ssh_error_text(b"".join(err)) if server_rc == 255 else ""
        print(f"# pair {name_a} -> {name_b} failed: the perftest server on {name_b} exited (status {server_rc}) before "
              "the client started" + (f": ssh to {b.spec.target} failed: {why}" if why else
                                      ": ib_write_bw (perftest) is not installed there" if server_rc == 127 else ""),
              flush=True)
        return False
    _print(f"[{name_a} client]", client.stdout)
    _print(f"[{name_a} client]", client.stderr)
    missing = client.rc == 127 and (not client.error or str(client.error).startswith("command not found"))
    if client.error and not missing:
        print(f"# pair {name_a} -> {name_b} failed: the client on {name_a}: {client.error}", flush=True)
        return False
    if client.rc != 0:
        what = "ib_write_bw (perftest) is not installed there" if missing else f"exit status {client.rc}"
        print(f"# pair {name_a} -> {name_b} failed: the perftest client on {name_a}: {what}; server on {name_b} "
              f"stopped (status {server_rc})", flush=True)
        return False
    print(f"# pair {name_a} -> {name_b} done: client exit status 0, server exit status {server_rc}", flush=True)
    return server_rc == 0


def _close(proc: asyncio.subprocess.Process) -> None:
    if proc.stdin is not None and not proc.stdin.is_closing():
        proc.stdin.close()


async def run(specs: list[NodeSpec], opts: Options) -> int:
    """Every pair of the ring in turn; 0 when all ran, 1 when any did not (see the module doc)."""
    ports = await asyncio.gather(*(read_port(s, opts) for s in specs))
    by_name = {p.spec.name: p for p in ports}
    pairs = ring([s.name for s in specs])
    print(f"# rdma_pairs: {len(specs)} nodes, {len(pairs)} pairs (a ring in hostfile order: "
          f"{' -> '.join([s.name for s in specs] + [specs[0].name])}), ib_write_bw -s {opts.size} -D {opts.seconds}",
          flush=True)
    failed = 0
    for a, b in pairs:
        if not await run_pair(by_name[a], by_name[b], opts):
            failed += 1
    print(f"# rdma_pairs: {len(pairs)} pairs, {failed} failed", flush=True)
    return 1 if failed else 0


def remote_plan(specs: Sequence[NodeSpec], opts: Options) -> list[str]:
    """Every ssh command a run makes, one line each (the step's confirmation shows them under the module's own
    command line). ``DEV``/``PORT`` (and ``-x GID`` on a RoCE port) are each node's port as the first command reads
    it, unless ``--device`` names it; ``ADDR`` is the server's address (its hostfile ``addr=``, else the HostName
    ``ssh -G`` gives)."""
    out = ["on every node, the RDMA ports (sysfs), all nodes at once:"]
    for s in specs:
        ssh = shlex.join(_host(s, opts).ssh_argv("")[:-1])
        out.append(f"  $ {ssh} {SSHHost.remote_command(['sh', '-c', PORTS_SH, 'sh', opts.sysfs_root], _C)}")
    ca, num = _split_device(opts.device) if opts.device else ("DEV", "PORT")
    pairs = ring([s.name for s in specs])
    by = {s.name: s for s in specs}
    out.append(f"then each pair in turn ({len(pairs)}: a ring in hostfile order), the server first:")
    for a, b in pairs:
        sa, sb = by[a], by[b]
        args = perftest_args(ca, num, None, opts)
        srv = _host(sb, opts).ssh_argv(SSHHost.remote_command(["sh", "-c", SERVER_SH, "sh", opts.perftest, *args], _C))
        cli = _host(sa, opts).ssh_argv(SSHHost.remote_command([opts.perftest, *args, sb.addr or "ADDR"], _C))
        out.append(f"  # pair {a} -> {b}")
        out.append(f"  $ {shlex.join(srv)}")
        out.append(f"  $ {shlex.join(cli)}")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m wizard.rdma_pairs",
                                description="ib_write_bw (perftest) between neighbouring nodes of a hostfile, over ssh.")
    p.add_argument("--hostfile", required=True, help="name ssh_target gpus [addr=IP] per line, or 'host slots=N'")
    p.add_argument("--ssh-config", help="ssh client config file (-F)")
    p.add_argument("--seconds", type=int, default=DURATION_S, help="ib_write_bw -D: seconds each test runs")
    p.add_argument("--size", type=int, default=MESSAGE_BYTES, help="ib_write_bw -s: message size, bytes")
    p.add_argument("--device", default="", help="DEV[:PORT] on every node (default: each node's fastest Active port)")
    p.add_argument("--perftest", default=PERFTEST_BINARY, help="the ib_write_bw the nodes run (default: on PATH)")
    p.add_argument("--sysfs-root", default="/", help="where the nodes' sys/class/infiniband is read (tests)")
    p.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT_S, help="ssh ConnectTimeout, s")
    p.add_argument("--start-wait", type=float, default=START_WAIT_S,
                   help="seconds to wait for the server's 'Waiting for client' line")
    return p


def options_from_args(a: argparse.Namespace) -> Options:
    """argparse values -> :class:`Options`. Raises ``ValueError`` for an option out of range."""
    if not 1 <= a.seconds <= 3600:
        raise ValueError("--seconds must be from 1 to 3600")
    if not 1 <= a.size <= 1 << 31:
        raise ValueError("--size must be from 1 to 2147483648 bytes")
    if a.device and not _DEVICE.match(a.device):
        raise ValueError(f"--device takes DEV or DEV:PORT (e.g. mlx5_0:1), got {a.device!r}")
    if not a.connect_timeout > 0 or not a.start_wait >= 0:
        raise ValueError("--connect-timeout must be more than 0 and --start-wait 0 or more seconds")
    return Options(a.hostfile, a.ssh_config, a.seconds, a.size, a.device, a.perftest, a.sysfs_root,
                   a.connect_timeout, a.start_wait)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        opts = options_from_args(args)
        specs = read_hostfile(opts.hostfile)
    except (HostfileError, ValueError) as exc:
        sys.stderr.write(f"bringup rdma_pairs: {exc}\n")
        print(f"# rdma_pairs: cannot start: {exc}", flush=True)
        return 3
    if len(specs) < 2:
        print(f"# rdma_pairs: cannot start: the hostfile {opts.hostfile} lists {len(specs)} node; a pair test needs 2",
              flush=True)
        return 3

    try:
        return run_cancelled_by_signals(lambda: run(specs, opts))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("# rdma_pairs: stopped", flush=True)
        return 143


if __name__ == "__main__":
    sys.exit(main())
