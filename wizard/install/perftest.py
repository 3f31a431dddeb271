"""The RDMA loopback bandwidth test of ``node.rdma_bandwidth``: perftest's ``ib_write_bw``, server and client on one
HCA port of this node.

perftest (https://github.com/linux-rdma/perftest, README "Running Tests" and ``ib_write_bw --help``): a server is
``ib_write_bw <options>`` and waits for its client; the client is ``ib_write_bw <options> <server address>``. The
options used here:

- ``-d DEV`` the RDMA device, ``-i PORT`` its port (default 1);
- ``-s 8388608`` 8 MiB messages (large messages reach the line rate; the small ones measure the message rate);
- ``-D 5`` run for 5 seconds rather than a count of iterations;
- ``--report_gbits`` report BW peak/average in Gb/s (comparable with the port's rate);
- ``-F`` do not fail/warn when the CPU frequency governor is not at its maximum (Azure HPC health checks'
  ``check_ib_bw_gdr``/``check_ib_bw_non_gdr`` use ``-F`` too);
- ``-x N`` on a RoCE port: the GID index (a RoCE v2 entry of the port's GID table; InfiniBand needs none).

Server and client on the same port is a loopback through the HCA: it proves the HCA, its driver, its PCIe link and
memory registration, not the cable, the switch or another node (``multinode.transport`` and a pair test between
nodes do; a pair test through the hostfile is not run here). Data, not judgement: the log is judged by
:func:`wizard.rules.fabric_node.judge_rdma_loopback`.
"""

from __future__ import annotations

import shutil

from wizard.actions import ActionContext, Resolved
from wizard.distro import package_manager
from wizard.parsers.fabric import HcaDevice, IbPort, IbSysfs, parse_ib_sysfs
from wizard.parsers.host import parse_os_release
from wizard.i18n import Msg

PERFTEST_BINARY = "ib_write_bw"
PERFTEST_PACKAGE = "perftest"
"""The package that ships ib_write_bw on Debian/Ubuntu (``perftest``) and RHEL/Fedora/SUSE (``perftest``)."""
MESSAGE_BYTES = 8388608
DURATION_S = 5
START_WAIT_S = 2
"""Seconds the client waits for the server to listen before it connects."""

LOOPBACK_SH = (f'"$@" & srv=$!; sleep {START_WAIT_S}; "$@" 127.0.0.1; rc=$?; '
               'if [ "$rc" -ne 0 ]; then kill "$srv" 2>/dev/null; wait "$srv"; exit "$rc"; fi; wait "$srv"')
"""``sh -c LOOPBACK_SH sh IB_WRITE_BW ARGS...``: the server (the same argv) in the background, the client to
127.0.0.1 after :data:`START_WAIT_S` s; the exit status is the client's when it fails (the server, still waiting, is
stopped), else the server's."""

RATE_SH = 'grep -H . "$@" || echo "# the port\'s sysfs files could not be read: judged against the plan\'s rate"'
"""``sh -c RATE_SH sh FILES...``: the port's rate/state/link_layer as ``path:value`` lines (the judge reads the rate
from them); a port that vanished since the check does not stop the test (the judge then says what it compared with)."""

PROBES = ("ib_sysfs", "os_release")
"""What :func:`resolve_rdma_loopback` reads."""


def _port_choice(ctx: ActionContext) -> tuple[IbPort | None, HcaDevice | None]:
    o = ctx.outputs.get("ib_sysfs")
    if o is None or not o.ok:
        return None, None
    return fastest_active_port(parse_ib_sysfs(o.files))


def fastest_active_port(sysfs: IbSysfs) -> tuple[IbPort | None, HcaDevice | None]:
    """The port perftest tests on a node: the fastest Active (and LinkUp) port, InfiniBand before RoCE, then by
    device name and port number; with its device (for its GIDs). ``(None, None)`` when no port is Active."""
    active = [p for p in sysfs.ports.ports if p.state == "active" and p.phys_state in ("linkup", "")]
    active.sort(key=lambda p: (p.link_layer != "InfiniBand", -(p.rate_gbit_s or 0.0), p.ca, p.port))
    if not active:
        return None, None
    return active[0], sysfs.devices.get(active[0].ca)


def gid_index(port: IbPort, dev: HcaDevice | None) -> int | None:
    """perftest's ``-x`` for a RoCE port: its first RoCE v2 GID with an IPv4-mapped address, else its first RoCE v2
    GID, else its first GID; ``None`` when its table has none."""
    return _gid_index(port, dev)


def _gid_index(port: IbPort, dev: HcaDevice | None) -> int | None:
    gids = [g for g in (dev.gids if dev is not None else ()) if g.port == port.port]
    v2 = [g for g in gids if g.type.lower() == "roce v2"]
    ipv4 = [g for g in v2 if g.gid.startswith("0000:0000:0000:0000:0000:ffff:")]
    pick = ipv4 or v2 or gids
    return pick[0].index if pick else None


def install_hint(ctx: ActionContext) -> str:
    """How to install perftest here (the ``os_release`` probe's package manager), as a phrase."""
    o = ctx.outputs.get("os_release")
    r = parse_os_release(o.text) if o is not None and o.ok else None
    pm = package_manager(r) if r is not None else None
    if pm is None:
        return Msg("install the {package} package with the distribution's package manager", package=PERFTEST_PACKAGE)
    return Msg("install it: {command}", command=f"`sudo {pm.name} install -y {PERFTEST_PACKAGE}`")


def resolve_rdma_loopback(ctx: ActionContext) -> Resolved:
    """The ops of the loopback test on the fastest Active port (InfiniBand first): :data:`RATE_SH` over the port's
    rate/state/link_layer files (the judge reads the line rate from them), then :data:`LOOPBACK_SH`. ``manual``
    when the node has no RDMA device at all (said first: installing perftest would not help), when perftest is not
    installed (what to install), when no port is Active, or when a RoCE port has no GID."""
    o = ctx.outputs.get("ib_sysfs")
    sysfs = parse_ib_sysfs(o.files) if o is not None and o.ok else None
    if sysfs is not None and not sysfs.devices and not sysfs.ports.ports:
        return Resolved(manual=Msg("this node has no RDMA device (/sys/class/infiniband is empty): there is nothing "
                                   "for perftest to test. If it should have one, see node.fabric (the HCA on the PCI "
                                   "bus, its RDMA driver loaded: `lspci | grep -i mellanox`, `modprobe mlx5_ib`), then "
                                   "run this action again."))
    binary = shutil.which(PERFTEST_BINARY)
    if binary is None:
        return Resolved(manual=Msg("{binary} (perftest) is not installed on this node: {hint} (package `{package}` on "
                                   "Debian/Ubuntu and RHEL-family systems), then run this step's action again.",
                                   binary=PERFTEST_BINARY, hint=install_hint(ctx), package=PERFTEST_PACKAGE))
    port, dev = _port_choice(ctx)
    if port is None:
        return Resolved(manual=Msg("no Active InfiniBand/RoCE port on this node to test: see node.fabric (ibstat must "
                                   "show State: Active, Physical state: LinkUp), then run this action again."))
    args = ["-d", port.ca, "-i", str(port.port), "-s", str(MESSAGE_BYTES), "-D", str(DURATION_S), "--report_gbits",
            "-F"]
    if port.link_layer == "Ethernet":
        idx = _gid_index(port, dev)
        if idx is None:
            return Resolved(manual=f"{port.ca} port {port.port} is RoCE but has no GID in its table (no IP address on "
                                   "its netdev?): give the interface an address, then run this action again.")
        args += ["-x", str(idx)]
    base = f"/sys/class/infiniband/{port.ca}/ports/{port.port}"
    return Resolved(ops=[
        {"argv": ["sh", "-c", RATE_SH, "sh", f"{base}/rate", f"{base}/state", f"{base}/link_layer"]},
        {"argv": ["sh", "-c", LOOPBACK_SH, "sh", binary, *args],
         "detail": [f"server: {binary} {' '.join(args)}  (background)",
                    f"client: {binary} {' '.join(args)} 127.0.0.1"]},
    ])
