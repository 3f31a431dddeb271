"""The node's own network fabric, read live: the RDMA devices in sysfs (``ib_sysfs``; ``ibstat`` / ``ibv_devinfo`` when
sysfs shows no port), their netdevs (``net_sysfs``), the loaded modules (``modules``: nvidia_peermem), the driver's
flavour and the kernel (the DMA-BUF path), the GPU/NIC matrix (``nvidia_smi_topo_m``) and NCCL's settings
(``nccl_env``). The pasted-output judges of :mod:`wizard.rules.fabric` are reused for the port state and rate, so a
live port and a pasted ``ibstat`` get the same verdict; only the ids differ (they join the ``node.fabric`` step).

One rule per concern, one finding id each (:data:`IDS`). A node with no RDMA device and no planned NIC
(``nics_per_node``) is a single node without a fabric: every fabric rule is ``skip`` with that reason, never pass.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

from wizard.common import to_float
from wizard.facts import facts_of
from wizard.model import WAITS_FOR_GPUS, Finding, Verdict, measure
from wizard.parsers.fabric import IbPort, IbPorts, IbSysfs, NcclSetting, parse_ib_ports, parse_ib_sysfs, parse_nccl_env, parse_net_sysfs
from wizard.parsers.gpu import parse_driver_version
from wizard.parsers.host import parse_modules
from wizard.parsers.topology import parse_topo_matrix
from wizard.rules import fabric, topology
from wizard.rules.common import Outputs, missing
from wizard.i18n import Msg, SEMICOLON

FABRIC_ID = "node.fabric"
RATE_ID = "node.fabric_rate"
MTU_ID = "node.fabric_mtu"
GDR_ID = "node.gpudirect_rdma"
AFFINITY_ID = "node.fabric_affinity"
NCCL_ENV_ID = "node.nccl_env"
IDS = (FABRIC_ID, RATE_ID, MTU_ID, GDR_ID, AFFINITY_ID, NCCL_ENV_ID)

SRC_SYSFS = ("Linux Documentation/ABI/stable/sysfs-class-infiniband "
             "(https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband: ports/N/state, phys_state, "
             "rate, link_layer, gids/N, gid_attrs/types/N; fw_ver, board_id, hca_type, node_desc); "
             "Documentation/ABI/testing/sysfs-class-net (speed, mtu, operstate, type); Azure HPC health checks "
             "check_ibstat / check_ib_link (https://github.com/Azure/azurehpc-health-checks): every IB port Active at "
             "its rate")
SRC_MTU = ("ibv_devinfo(1) active_mtu; NVIDIA MLNX_OFED documentation, 'RoCE' (the RoCE MTU is the largest InfiniBand "
           "MTU that fits in the netdev's MTU, https://docs.nvidia.com/networking/display/mlnxofedv24010331/rdma+over"
           "+converged+ethernet+(roce)); judgement: the ports of one fabric share one MTU (a connection between ports "
           "of different MTUs runs at the smaller one)")
SRC_GDR = ("NVIDIA GPU Operator, 'GPUDirect RDMA and GPUDirect Storage' "
           "(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html): GPU memory is "
           "registered with the RDMA device through DMA-BUF (Linux kernel, needs the open GPU kernel modules) or the "
           "legacy nvidia-peermem module (in the driver since R470); NVIDIA, 'Developing a Linux Kernel Module using "
           "GPUDirect RDMA' (https://docs.nvidia.com/cuda/gpudirect-rdma/, 'Using nvidia-peermem'); Linux 5.12 added "
           "dma-buf memory registration to RDMA (drivers/infiniband/core/umem_dmabuf.c, ib_umem_dmabuf_get); NCCL "
           "environment variables, NCCL_DMABUF_ENABLE and NCCL_NET_GDR_LEVEL "
           "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)")
SRC_NCCL_ENV = ("NCCL environment variables (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html): "
                "/etc/nccl.conf, ${NCCL_CONF_FILE} and ~/.nccl.conf hold NAME=value lines, the environment overrides "
                "them; NCCL_SOCKET_IFNAME and NCCL_IB_HCA are lists of prefixes, '^' excludes, '=' matches a name "
                "exactly, NCCL_IB_HCA takes an optional ':port'; the variables of its 'Debugging' section 'should not "
                "be used in production nor retained in scripts'")

DMABUF_KERNEL = (5, 12)
"""The first Linux release that registers dma-buf memory with an RDMA device (ib_umem_dmabuf, Linux 5.12)."""
DEBUG_LEVELS = ("INFO", "TRACE")
"""NCCL_DEBUG levels that log every rank's setup (NCCL env documentation: VERSION, WARN, INFO, TRACE)."""
DISABLES = ("NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE")
"""Transport switches of NCCL's 'Debugging' section: set to 1 they turn a transport off (NCCL env documentation)."""
_LEVELS = r"(?:LOC|PIX|PXB|PHB|SYS|[0-5])"
ACCEPTED: dict[str, tuple[str, str]] = {
    "NCCL_DEBUG": (r"(?i:VERSION|WARN|INFO|TRACE)", "VERSION, WARN, INFO or TRACE"),
    "NCCL_NET_GDR_LEVEL": (_LEVELS, "LOC, PIX, PXB, PHB or SYS (or the older integers 0-5)"),
    "NCCL_P2P_LEVEL": (r"(?:LOC|NVL|PIX|PXB|PHB|SYS|[0-5])", "LOC, NVL, PIX, PXB, PHB or SYS (or the older integers 0-5)"),
    "NCCL_IB_DISABLE": (r"[01]", "0 or 1"),
    "NCCL_P2P_DISABLE": (r"[01]", "0 or 1"),
    "NCCL_SHM_DISABLE": (r"[01]", "0 or 1"),
    "NCCL_DMABUF_ENABLE": (r"[01]", "0 or 1"),
    "NCCL_NET_GDR_READ": (r"[01]", "0 or 1"),
    "NCCL_CROSS_NIC": (r"[012]", "0, 1 or 2"),
    "NCCL_PROTO": (r"\^?(?i:LL|LL128|Simple)(?:,(?i:LL|LL128|Simple))*", "a list of LL, LL128, Simple (^ excludes)"),
    "NCCL_IB_TIMEOUT": (r"\d{1,2}", "an integer (the IB timeout exponent, 1-31)"),
    "NCCL_IB_RETRY_CNT": (r"[0-7]", "an integer 0-7"),
    "NCCL_IB_GID_INDEX": (r"-?\d{1,3}", "an integer (the GID index)"),
    "NCCL_IB_SL": (r"\d{1,2}", "an integer 0-15"),
    "NCCL_IB_TC": (r"\d{1,3}", "an integer 0-255"),
    "NCCL_BUFFSIZE": (r"\d{1,12}", "a size in bytes"),
    "NCCL_NTHREADS": (r"\d{1,4}", "an integer"),
    "NCCL_MIN_NCHANNELS": (r"\d{1,4}", "an integer"),
    "NCCL_MAX_NCHANNELS": (r"\d{1,4}", "an integer"),
    "NCCL_SOCKET_NTHREADS": (r"\d{1,2}", "an integer 1-16"),
    "NCCL_NSOCKS_PERTHREAD": (r"\d{1,3}", "an integer"),
}
"""Values NCCL's environment documentation accepts for the variables it documents by value (NCCL env
documentation, each variable's 'Values accepted'); a value outside them is ignored or misread by NCCL."""
DOWN_STATES = ("down", "lowerlayerdown", "notpresent", "dormant")
"""``operstate`` values of an interface that carries no traffic (Documentation/ABI/testing/sysfs-class-net, RFC 2863)."""


# ------------------------------------------------------------------ reading the facts


@dataclasses.dataclass(frozen=True)
class _Fabric:
    sysfs: IbSysfs | None
    ports: IbPorts
    source: str  # "sysfs", "ibstat", "ibv_devinfo", or "" when nothing answered
    unknown: str = ""  # why nothing could be read ("" when read, even when empty)


def _read(out: Outputs) -> _Fabric:
    facts = facts_of(out)
    o = out.get("ib_sysfs")
    sysfs = facts.parse("ib_sysfs", parse_ib_sysfs, on="files") if o is not None and o.ok else None
    if sysfs is not None and sysfs.ports.ports:
        return _Fabric(sysfs, sysfs.ports, "sysfs")
    for name in ("ibstat", "ibv_devinfo"):
        c = out.get(name)
        if c is not None and c.ok and c.text.strip():
            ports = facts.parse(name, parse_ib_ports)
            if ports is not None and ports.ports:
                return _Fabric(sysfs, ports, name)
    if sysfs is None:
        why = (o.error if o is not None else Msg('the ib_sysfs probe was not collected'))
        return _Fabric(None, IbPorts(), "", unknown=why or "no output")
    return _Fabric(sysfs, IbPorts(), "")


def _want(plan: Mapping[str, Any]) -> float | None:
    return to_float(plan.get("nics_per_node"), positive=True)


def _no_fabric(fid: str, plan: Mapping[str, Any], f: _Fabric) -> Finding | None:
    """The finding of a rule on a node with no RDMA port: skip without a planned NIC, fail with one, unknown when
    nothing could be read; ``None`` when there are ports to judge."""
    if f.ports.ports:
        return None
    want = _want(plan)
    if f.unknown:
        return Finding(fid, Verdict.UNKNOWN, Msg("could not read the RDMA devices: {unknown}", unknown=f.unknown), "node",
                       (f"/sys/class/infiniband: {f.unknown}",),
                       "Run bringup on the node itself (sysfs must be readable), or capture it there.", SRC_SYSFS)
    if want is None:
        return Finding(fid, Verdict.SKIP, "no InfiniBand/RoCE device on this node (/sys/class/infiniband is empty) and "
                       "the plan names no NIC (nics_per_node): a single node without an RDMA fabric", "node",
                       ("/sys/class/infiniband: no device",),
                       "", SRC_SYSFS)
    if fid != FABRIC_ID:
        return Finding(fid, Verdict.SKIP, Msg("no RDMA port to judge (node.fabric fails: the plan expects {want:g} NICs per node and "
                                              "none is present)", want=want), "node", ("/sys/class/infiniband: no device",), "", SRC_SYSFS)
    return Finding(fid, Verdict.FAIL, Msg("the plan expects {want:g} InfiniBand/RoCE NIC(s) per node but no RDMA device is present "
                                          "(/sys/class/infiniband is empty)", want=want), "node", ("/sys/class/infiniband: no device",),
                   "Check that the HCAs are seen on the PCI bus (`lspci | grep -i mellanox`) and that their RDMA "
                   "driver is loaded (`modprobe mlx5_ib`; install rdma-core, or NVIDIA DOCA-OFED / MLNX_OFED), then "
                   "`ibstat` must list them. If this node has no fabric, unset nics_per_node in the plan.", SRC_SYSFS,
                   measured=measure(0, want, "ports", "at_least", "Active RDMA ports (the plan's nics_per_node)"))


def _quiet(none: Finding, plan: Mapping[str, Any]) -> list[Finding]:
    """A sub-rule of ``node.fabric`` on a node without RDMA ports: nothing when there is no fabric and none is
    planned (``node.fabric`` says so once), a skip when ``node.fabric`` fails for a missing planned NIC, the unknown
    as it is."""
    if none.verdict is Verdict.SKIP and _want(plan) is None:
        return []
    return [dataclasses.replace(none, verdict=Verdict.SKIP) if none.verdict is Verdict.FAIL else none]


def _renamed(findings: list[Finding], fid: str, source: str) -> list[Finding]:
    return [dataclasses.replace(x, id=fid, source=f"{x.source}; {source}" if source else x.source) for x in findings]


def _fabric_ports(ports: IbPorts) -> tuple[str, list[IbPort]]:
    layer = fabric._fabric_layer(ports.ports)
    return layer, [p for p in ports.ports if p.state == "active" and fabric._in_fabric(p, layer)]


def _device_note(f: _Fabric, names: list[str]) -> str:
    if f.sysfs is None:
        return ""
    parts = []
    for n in names[:8]:
        d = f.sysfs.devices.get(n)
        if d is None:
            continue
        bits = [b for b in (d.hca_type, f"fw {d.fw_ver}" if d.fw_ver else "", d.pci_addr,
                            f"NUMA {d.numa_node}" if d.numa_node is not None else "",
                            "/".join(d.netdevs)) if b]
        parts.append(f"{n} ({', '.join(bits)})" if bits else n)
    return SEMICOLON.join(parts)


# ------------------------------------------------------------------ node.fabric: every planned NIC up


def ports(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.fabric``: every port Active with its physical link up (:func:`wizard.rules.fabric.judge_state`: a port
    that is not is a fail when it is the only one, none is Active, or the node is then short of the plan's
    ``nics_per_node``, else a warn naming why: no subnet manager, Polling, Disabled), and at least ``nics_per_node``
    Active ports on the fabric's link layer (fewer is a fail). No device: see :func:`_no_fabric`."""
    f = _read(out)
    none = _no_fabric(FABRIC_ID, plan, f)
    if none is not None:
        return [none]
    found = _renamed(fabric.judge_state(f.ports, "", plan), FABRIC_ID, SRC_SYSFS if f.source == "sysfs" else "")
    want = _want(plan)
    layer, active = _fabric_ports(f.ports)
    if want is not None and len(active) < want and not any(x.verdict is Verdict.FAIL for x in found):
        found = [x for x in found if x.verdict is not Verdict.PASS]
        found.append(Finding(FABRIC_ID, Verdict.FAIL, (Msg("{n_active} Active {value}port(s), fewer than the plan's {want:g} NICs per node: ", n_active=len(active), value=layer + ' ' if layer else '', want=want) + (', '.join(f'{p.ca} port {p.port}' for p in active) or 'none')), "node",
                             tuple(ln for p in f.ports.ports for ln in p.lines if "state" in ln)[:8],
                             "Find the missing HCAs: `ls /sys/class/infiniband`, `lspci | grep -i mellanox` (a card "
                             "missing from the bus is a seating or slot fault; one without an RDMA device lacks its "
                             "driver, mlx5_ib), or correct nics_per_node in the plan.", SRC_SYSFS,
                             measured=measure(len(active), want, "ports", "at_least",
                                              "Active fabric ports (the plan's nics_per_node)")))
    note = _device_note(f, sorted({p.ca for p in active}))
    if note:
        found = [dataclasses.replace(x, message=Msg("{message}; {note}", message=x.message, note=note)) if x.verdict is Verdict.PASS else x
                 for x in found]
    return found


def rate(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.fabric_rate``: the Active fabric ports at one rate, each at least the plan's ``nic_gbit_s`` (a 400 Gb/s
    port at 200 fails) and the link layers not mixed (:func:`wizard.rules.fabric.judge_rate`)."""
    f = _read(out)
    none = _no_fabric(RATE_ID, plan, f)
    if none is not None:
        return _quiet(none, plan)
    found = _renamed(fabric.judge_rate(f.ports, "", plan), RATE_ID, SRC_SYSFS if f.source == "sysfs" else "")
    if found:
        return found
    return [Finding(RATE_ID, Verdict.UNKNOWN, "no Active port, so no rate to judge (node.fabric says why)", "node",
                    tuple(ln for p in f.ports.ports for ln in p.lines[:2])[:6], "", fabric.SRC_RATE)]


# ------------------------------------------------------------------ node.fabric_mtu


def mtu(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.fabric_mtu``: the Active fabric ports' MTUs agree: ``ibv_devinfo``'s active_mtu where it ran, and the
    MTU of each fabric HCA's netdev (IPoIB or the RoCE interface, ``/sys/class/net/NAME/mtu``). Different MTUs warn
    (a connection runs at the smaller one, RoCE traffic between different MTUs can be dropped); one MTU passes;
    nothing read is unknown."""
    f = _read(out)
    none = _no_fabric(MTU_ID, plan, f)
    if none is not None:
        return _quiet(none, plan)
    layer, active = _fabric_ports(f.ports)
    if not active:
        return [Finding(MTU_ID, Verdict.UNKNOWN, "no Active port, so no MTU to compare (node.fabric says why)", "node",
                        (), "", SRC_MTU)]
    facts = facts_of(out)
    dev = out.get("ibv_devinfo")
    active_mtu: dict[str, int] = {}
    ev: list[str] = []
    if dev is not None and dev.ok and dev.text.strip():
        parsed = facts.parse("ibv_devinfo", parse_ib_ports)
        names = {(p.ca, p.port) for p in active}
        for p in (parsed.ports if parsed is not None else []):
            if (p.ca, p.port) in names and p.active_mtu:
                active_mtu[f"{p.ca} port {p.port}"] = p.active_mtu
                ev.extend(ln for ln in p.lines if "active_mtu" in ln)
    net = out.get("net_sysfs")
    netdev_mtu: dict[str, int] = {}
    if net is not None and net.ok and f.sysfs is not None:
        nd = facts.parse("net_sysfs", parse_net_sysfs, on="files") or {}
        for ca in sorted({p.ca for p in active}):
            d = f.sysfs.devices.get(ca)
            for name in (d.netdevs if d is not None else ()):
                n = nd.get(name)
                if n is not None and n.mtu:
                    netdev_mtu[f"{name} ({ca})"] = n.mtu
                    ev.append(f"/sys/class/net/{name}/mtu:{n.mtu}")
    if not active_mtu and not netdev_mtu:
        return [Finding(MTU_ID, Verdict.UNKNOWN, Msg("the MTU of the {n_active} Active {layer} port(s) could not be read (no ibv_devinfo "
                                                     "output, no netdev of these HCAs in /sys/class/net)", n_active=len(active), layer=layer), "node",
                        tuple(f"{p.ca} port {p.port}" for p in active)[:6],
                        "Install rdma-core's ibv_devinfo (package ibverbs-utils / libibverbs-utils) and check again.",
                        SRC_MTU)]
    out_f: list[Finding] = []
    for what, values in (("active_mtu (ibv_devinfo)", active_mtu), ("netdev MTU", netdev_mtu)):
        if len(set(values.values())) > 1:
            groups: dict[int, list[str]] = {}
            for k, v in values.items():
                groups.setdefault(v, []).append(k)
            out_f.append(Finding(MTU_ID, Verdict.WARN, (Msg("the fabric's ports differ in {what}: ", what=what) + SEMICOLON.join((f"{v}: {', '.join(ks)}" for v, ks in sorted(groups.items())))), "node",
                                 tuple(ev[:10]),
                                 "Set one MTU on every fabric port (IPoIB/RoCE interfaces: `ip link set <if> mtu N`, "
                                 "persisted in netplan/NetworkManager; the switch ports must carry it too), then check "
                                 "again.", SRC_MTU))
    if out_f:
        return out_f
    said = SEMICOLON.join(f"{what} {sorted(set(v.values()))[0]} on {len(v)} port(s)" for what, v in
                     (("active_mtu", active_mtu), ("netdev MTU", netdev_mtu)) if v)
    return [Finding(MTU_ID, Verdict.PASS, (Msg("the fabric's {n_active} Active {value} port(s) share one MTU: ", n_active=len(active), value=layer or 'RDMA') + said), "node", tuple(ev[:10]), "", SRC_MTU)]


# ------------------------------------------------------------------ node.gpudirect_rdma


def _kernel(out: Outputs) -> tuple[int, int] | None:
    o = out.get("kernel")
    m = re.match(r"\s*(\d+)\.(\d+)", o.text) if o is not None and o.ok else None
    return (int(m.group(1)[:4]), int(m.group(2)[:4])) if m else None


def gpudirect(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.gpudirect_rdma``: the kernel path that lets the HCA read and write GPU memory. nvidia_peermem (or the
    older nv_peer_mem) loaded: pass. Else the DMA-BUF path's prerequisites (the open GPU kernel modules, a kernel of
    Linux 5.12 or later) present: pass, saying NCCL uses it (NCCL_DMABUF_ENABLE, unless set to 0). Else a warn: NCCL
    still runs, but each inter-node transfer is staged through host memory (no GPUDirect RDMA: lower bandwidth, more
    latency, CPU memory traffic). No GPU or no RDMA device: skip."""
    from wizard.rules.gpu_presence import _no_gpu

    f = _read(out)
    none = _no_fabric(GDR_ID, plan, f)
    if none is not None:
        return _quiet(none, plan)
    if _no_gpu(out):
        return [Finding(GDR_ID, Verdict.SKIP, "no NVIDIA GPU on the PCI bus: GPUDirect RDMA does not apply", "node", (),
                        "", SRC_GDR, waits_for=WAITS_FOR_GPUS)]
    mo = out.get("modules")
    if mo is None or not mo.ok:
        return [missing(GDR_ID, mo, "which kernel modules are loaded (nvidia_peermem)", source=SRC_GDR)]
    mods, _ = facts_of(out).parse_text("modules", parse_modules) or ({}, [])
    peer = next((mods[n] for n in ("nvidia_peermem", "nv_peer_mem") if n in mods), None)
    if peer is not None:
        return [Finding(GDR_ID, Verdict.PASS, Msg("{name} is loaded: the HCAs can register GPU memory (GPUDirect RDMA); NCCL's log says "
                                                  "'GDRDMA' on the channels that use it", name=peer.name), "node", (peer.line,), "",
                        SRC_GDR)]
    dv = out.get("nvidia_driver_version")
    drv = facts_of(out).parse_text("nvidia_driver_version", parse_driver_version) if dv is not None and dv.ok else None
    kernel = _kernel(out)
    kstr = ".".join(map(str, kernel)) if kernel else "?"
    env = _effective(out)
    dmabuf_off = env.get("NCCL_DMABUF_ENABLE")
    ev = tuple(x for x in ((drv.line if drv else ""), f"kernel {kstr}", "nvidia_peermem: not in /proc/modules") if x)
    if drv is not None and drv.flavour == "open" and kernel is not None and kernel >= DMABUF_KERNEL:
        if dmabuf_off is not None and dmabuf_off.value.strip() == "0":
            return [Finding(GDR_ID, Verdict.WARN, Msg("the DMA-BUF path is available (open GPU kernel modules, kernel {kstr}) but "
                                                      "NCCL_DMABUF_ENABLE=0 ({origin}) turns it off and nvidia_peermem is not loaded: NCCL "
                                                      "stages inter-node transfers through host memory", kstr=kstr, origin=dmabuf_off.origin), "node",
                            ev + (dmabuf_off.line,), "Remove NCCL_DMABUF_ENABLE=0, or load nvidia-peermem "
                            "(`modprobe nvidia-peermem`).", SRC_GDR)]
        return [Finding(GDR_ID, Verdict.PASS, Msg("the DMA-BUF path's prerequisites are present (open GPU kernel modules {version}, kernel "
                                                  "{kstr} >= 5.12; nvidia_peermem not needed); NCCL uses it by default (NCCL_DMABUF_ENABLE): "
                                                  "its log says 'GDRDMA' on the channels that do, and `ib_write_bw --use_cuda=0 "
                                                  "--use_cuda_dmabuf` proves it", version=drv.version, kstr=kstr), "node", ev, "", SRC_GDR)]
    why = (Msg("the driver's kernel modules are the proprietary flavour (DMA-BUF needs the open ones)") if drv is not None and drv.flavour == 'proprietary' else Msg('the kernel {kstr} is older than 5.12 (no RDMA dma-buf)', kstr=kstr) if kernel is not None and kernel < DMABUF_KERNEL else Msg('the kernel release could not be read') if kernel is None and drv is not None else Msg('the driver flavour could not be read (/proc/driver/nvidia/version)'))
    return [Finding(GDR_ID, Verdict.WARN, (Msg('GPUDirect RDMA is not set up: nvidia_peermem is not loaded and ') + why + Msg('. NCCL still runs, but every inter-node transfer is staged through host memory (lower bandwidth, more latency, CPU memory traffic)')), "node", ev,
                    "Load the peer-memory module: `sudo modprobe nvidia-peermem` (persist it in /etc/modules-load.d/; "
                    "it needs the HCA's RDMA stack loaded first), or use the open GPU kernel modules on a 5.12+ kernel "
                    "for DMA-BUF. Then check again; NCCL's log shows 'GDRDMA' on the network channels.", SRC_GDR)]


def judge_module_list(mods: Mapping[str, Any], source: str) -> list[Finding]:
    """``node.gpudirect_rdma`` from a module list alone (a pasted lsmod): with the nvidia module and an RDMA HCA driver
    (``*_ib``) loaded, nvidia_peermem (or nv_peer_mem) loaded passes; without it, mlx4 (ConnectX-3, which has no
    DMA-BUF path) warns, and any other HCA is a note: the DMA-BUF path (open GPU kernel modules, Linux 5.12+) may serve
    instead, which a module list cannot show. Nothing when no HCA driver or no nvidia module is loaded."""
    hcas = sorted(n for n in mods if n.endswith("_ib") and n not in ("ib_core",) and not n.startswith(("ib_", "rdma")))
    if "nvidia" not in mods or not hcas:
        return []
    peer = next((n for n in ("nvidia_peermem", "nv_peer_mem") if n in mods), None)
    ev = tuple(getattr(mods[n], "line", n) for n in ([peer] if peer else []) + hcas[:3])
    if peer:
        return [Finding(GDR_ID, Verdict.PASS, Msg("{name} is loaded next to the RDMA stack ({hcas}): the HCAs can register "
                                                  "GPU memory (GPUDirect RDMA)", name=peer, hcas=", ".join(hcas)),
                        "node", ev, "", SRC_GDR)]
    if hcas == ["mlx4_ib"]:
        return [Finding(GDR_ID, Verdict.WARN, Msg("the RDMA stack is mlx4 (ConnectX-3) and neither nvidia_peermem nor "
                                                  "nv_peer_mem is loaded: no GPUDirect RDMA (mlx4 has no DMA-BUF path); "
                                                  "inter-node transfers are staged through host memory"),
                        "node", ev, "Load the peer-memory module (`sudo modprobe nvidia-peermem`), or move to ConnectX-5 "
                        "or later HCAs (mlx5) for current GPUDirect RDMA support.", SRC_GDR)]
    return [Finding(GDR_ID, Verdict.SKIP, Msg("nvidia_peermem is not loaded next to the RDMA stack ({hcas}): GPUDirect "
                                              "RDMA then needs the DMA-BUF path (open GPU kernel modules, Linux 5.12+), "
                                              "which a module list cannot show", hcas=", ".join(hcas)),
                    "node", ev, "", SRC_GDR)]


# ------------------------------------------------------------------ node.fabric_affinity


def affinity(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.fabric_affinity``: each GPU reaches a fabric HCA on its PCIe switch (``nvidia-smi topo -m`` PIX/PXB) or
    at least its CPU socket (NODE/PHB, said); a GPU whose only fabric NICs are across the CPU interconnect (SYS) warns
    (:func:`wizard.rules.topology` ``_nic_affinity`` on the matrix narrowed to the fabric's HCAs)."""
    from wizard.rules.gpu_presence import _no_gpu

    f = _read(out)
    none = _no_fabric(AFFINITY_ID, plan, f)
    if none is not None:
        return _quiet(none, plan)
    if _no_gpu(out):
        return [Finding(AFFINITY_ID, Verdict.SKIP, "no NVIDIA GPU on the PCI bus: no GPU/NIC affinity to judge",
                        "node", (), "", topology.SRC_NIC, waits_for=WAITS_FOR_GPUS)]
    o = out.get("nvidia_smi_topo_m")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(AFFINITY_ID, o, "which NIC each GPU is near", remedy="Run `nvidia-smi topo -m`.",
                        source=topology.SRC_NIC)]
    mx = facts_of(out).parse_text("nvidia_smi_topo_m", parse_topo_matrix)
    _, active = _fabric_ports(f.ports)
    cas = {p.ca for p in active} or {p.ca for p in f.ports.ports}
    if mx is None or not mx.gpus:
        return [missing(AFFINITY_ID, o, "which NIC each GPU is near (no GPU in the matrix)", source=topology.SRC_NIC)]
    keep = [c for c in mx.columns if c.startswith("GPU") or mx.nic_legend.get(c, c) in cas]
    narrowed = dataclasses.replace(mx, columns=keep)
    found = topology._nic_affinity(narrowed)
    if not found:
        return [Finding(AFFINITY_ID, Verdict.UNKNOWN, (Msg("nvidia-smi topo -m lists none of the fabric's HCAs (") + ', '.join(sorted(cas)) + ')'), "node", (mx.header_line,) if mx.header_line else (),
                        "Check that the HCAs' RDMA driver is loaded when nvidia-smi runs (its NIC legend names them).",
                        topology.SRC_NIC)]
    return _renamed(found, AFFINITY_ID, "")


# ------------------------------------------------------------------ node.nccl_env


def _effective(out: Outputs) -> dict[str, NcclSetting]:
    o = out.get("nccl_env")
    if o is None or not o.ok:
        return {}
    settings = facts_of(out).parse_text("nccl_env", parse_nccl_env) or []
    eff: dict[str, NcclSetting] = {}
    for s in settings:  # the environment wins over the files; among files the first read wins (/etc/nccl.conf first)
        if s.name not in eff or (s.origin == "environment" and eff[s.name].origin != "environment"):
            eff[s.name] = s
    return eff


def _match(spec: str, names: list[str], port_suffix: bool = False) -> tuple[bool, list[str], list[str]]:
    """NCCL's interface/HCA list syntax: (exclude mode, entries that match no name, names selected)."""
    s = spec.strip()
    exclude = s.startswith("^")
    s = s[1:] if exclude else s
    exact = s.startswith("=")
    s = s[1:] if exact else s
    dead: list[str] = []
    chosen: set[str] = set()
    for raw in (x.strip() for x in s.split(",")):
        if not raw:
            continue
        ent = raw.split(":", 1)[0] if port_suffix else raw
        hit = [n for n in names if (n == ent if exact else n.startswith(ent))]
        if not hit:
            dead.append(raw)
        chosen.update(hit)
    return exclude, dead, sorted(chosen if not exclude else set(names) - chosen)


def nccl_env(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.nccl_env``: NCCL's settings as a job started here would see them (the environment bringup runs in,
    then ``/etc/nccl.conf``, ``$NCCL_CONF_FILE``, ``~/.nccl.conf``). ``NCCL_SOCKET_IFNAME`` or ``NCCL_IB_HCA`` that
    selects nothing on this node fails (NCCL finds no interface / no HCA: bootstrap fails, or it falls back to TCP
    sockets); an entry of them that matches nothing (a typo among good ones, a ``:port`` the HCA does not have) warns;
    ``NCCL_DEBUG`` at INFO/TRACE, ``NCCL_DEBUG_SUBSYS``, or a transport switched off (``NCCL_P2P_DISABLE``,
    ``NCCL_SHM_DISABLE``, ``NCCL_IB_DISABLE`` with a fabric present) warns: debugging settings left on.
    ``NCCL_IB_DISABLE=1`` on a node the plan gives NICs (``nics_per_node``) fails: NCCL falls back to IP sockets.
    ``NCCL_SOCKET_IFNAME`` selecting an interface whose ``operstate`` is down warns; a value NCCL does not accept
    (:data:`ACCEPTED`) warns; ``NCCL_IB_HCA`` on a node with no RDMA device and no planned NIC warns (a leftover NCCL
    never applies). Nothing set: pass (NCCL's defaults)."""
    o = out.get("nccl_env")
    if o is None or not o.ok:
        return [missing(NCCL_ENV_ID, o, "NCCL's settings", source=SRC_NCCL_ENV)]
    eff = _effective(out)
    if not eff and "# environment not read" in o.text:
        return [Finding(NCCL_ENV_ID, Verdict.UNKNOWN, "could not read bringup's environment for NCCL_* variables (no "
                        "/proc/self/environ or no `grep -z` on this node), and no NCCL configuration file sets any",
                        "node", tuple(ln for ln in o.lines() if ln.startswith("# "))[:4],
                        "Run `env | grep ^NCCL_` by hand in the environment jobs start with.", SRC_NCCL_ENV)]
    if not eff:
        return [Finding(NCCL_ENV_ID, Verdict.PASS, "no NCCL_* variable in bringup's environment and no NCCL "
                        "configuration file (/etc/nccl.conf, ~/.nccl.conf): NCCL's defaults apply", "node",
                        tuple(ln for ln in o.lines() if ln.startswith("# "))[:4], "", SRC_NCCL_ENV)]
    facts = facts_of(out)
    found: list[Finding] = []
    net = out.get("net_sysfs")
    ifaces = sorted((facts.parse("net_sysfs", parse_net_sysfs, on="files") or {}) if net is not None and net.ok else {})
    f = _read(out)
    hcas = sorted(f.sysfs.devices) if f.sysfs is not None and f.sysfs.devices else sorted({p.ca for p in f.ports.ports})
    hca_ports = {(p.ca, str(p.port)) for p in f.ports.ports}
    netdevs = (facts.parse("net_sysfs", parse_net_sysfs, on="files") or {}) if net is not None and net.ok else {}
    for name, names, what in (("NCCL_SOCKET_IFNAME", ifaces, "network interface"), ("NCCL_IB_HCA", hcas, "RDMA device")):
        s = eff.get(name)
        if s is None or (not names and name == "NCCL_SOCKET_IFNAME" and (net is None or not net.ok)):
            continue
        if name == "NCCL_IB_HCA" and not names and f.unknown:
            continue  # the RDMA devices could not be read: node.fabric says so
        exclude, dead, chosen = _match(s.value, names, port_suffix=name == "NCCL_IB_HCA")
        where = f"{name}={s.value} ({s.origin})"
        have = ", ".join(names) or "none"
        if name == "NCCL_IB_HCA" and not names and _want(plan) is None:
            found.append(Finding(NCCL_ENV_ID, Verdict.WARN, Msg("{where} names RDMA devices, but this node has none and the plan names no NIC "
                                                                "(nics_per_node): NCCL finds no InfiniBand/RoCE device, so it never applies NCCL_IB_HCA "
                                                                "and uses its socket transport; a leftover from another node model", where=where), "node", (s.line,),
                                 "Remove NCCL_IB_HCA from this node's environment and NCCL configuration files, or set "
                                 "nics_per_node in the plan if this node should have an RDMA fabric.", SRC_NCCL_ENV))
            continue
        if name == "NCCL_SOCKET_IFNAME" and chosen:
            down = [n for n in chosen if n in netdevs and netdevs[n].operstate.lower() in DOWN_STATES]
            if down:
                found.append(Finding(NCCL_ENV_ID, Verdict.WARN,
                                     (Msg('{where} selects {down}, which is not up (', where=where, down=', '.join(down)) + ', '.join(f'{n}: operstate {netdevs[n].operstate}' for n in down) + (Msg("): NCCL's bootstrap and socket traffic cannot use it") if len(down) < len(chosen) else Msg('): it is every interface NCCL may use, so a job started now cannot bootstrap'))),
                                     "node", (s.line,) + tuple(f"/sys/class/net/{n}/operstate: {netdevs[n].operstate}"
                                                               for n in down),
                                     Msg("Bring the interface up with an address (`ip link set {a1} up`, its network "
                                         "configuration), or point {name} at a working interface (`ip -br addr`). bringup reads the "
                                         "link state, not the addresses: check the address too.", a1=down[0], name=name),
                                     SRC_NCCL_ENV + "; Linux sysfs-class-net operstate (RFC 2863)"))
        if not exclude and not chosen:
            found.append(Finding(NCCL_ENV_ID, Verdict.FAIL, (Msg('{where} names no {what} of this node (it has: {have}): ', where=where, what=what, have=have) + (Msg("NCCL's bootstrap finds no interface and the job fails to start") if name == 'NCCL_SOCKET_IFNAME' else Msg('NCCL finds no RDMA device and falls back to TCP sockets (or fails)'))),
                                 "node", (s.line,), Msg("Set {name} to this node's {what}s ({have}), or unset it.", name=name, what=what, have=have),
                                 SRC_NCCL_ENV))
        elif dead and not exclude:
            found.append(Finding(NCCL_ENV_ID, Verdict.WARN, (Msg("{where}: {dead} matches no {what} of this node ({have}); NCCL uses {chosen}", where=where, dead=dead[0], what=what, have=have, chosen=', '.join(chosen))
                                                                 if len(dead) == 1 else
                                                                 Msg("{where}: {dead} match no {what} of this node ({have}); NCCL uses {chosen}", where=where, dead=', '.join(dead), what=what, have=have, chosen=', '.join(chosen))), "node", (s.line,),
                                 Msg("Correct {name} (a typo, or a {what} of another node model).", name=name, what=what), SRC_NCCL_ENV))
        if name == "NCCL_IB_HCA" and not exclude and chosen:
            bad_ports = [e for e in s.value.lstrip("^=").split(",") if ":" in e and e.strip() not in dead
                         and not any((ca, e.split(":", 1)[1]) in hca_ports for ca in chosen
                                     if ca.startswith(e.split(":", 1)[0].lstrip("=")))]
            if bad_ports and hca_ports:
                found.append(Finding(NCCL_ENV_ID, Verdict.WARN, Msg("{where}: {bad_ports} names a port the HCA does not have", where=where, bad_ports=', '.join(bad_ports)), "node", (s.line,), "Use the HCA's port numbers (`ibstat`).",
                                     SRC_NCCL_ENV))
    dbg = eff.get("NCCL_DEBUG")
    left = []
    if dbg is not None and dbg.value.strip().upper() in DEBUG_LEVELS:
        left.append(dbg)
    if "NCCL_DEBUG_SUBSYS" in eff:
        left.append(eff["NCCL_DEBUG_SUBSYS"])
    ib_off = eff.get("NCCL_IB_DISABLE")
    planned = _want(plan)
    if ib_off is not None and ib_off.value.strip() == "1" and planned is not None:
        found.append(Finding(NCCL_ENV_ID, Verdict.FAIL, Msg("NCCL_IB_DISABLE=1 ({origin}) on a node the plan gives {planned:g} InfiniBand/RoCE NIC(s): "
                                                            "NCCL does not use the IB/RoCE transport and falls back to IP sockets, so every inter-node "
                                                            "collective runs over TCP at a fraction of the fabric's bandwidth", origin=ib_off.origin, planned=planned), "node", (ib_off.line,),
                             "Remove NCCL_IB_DISABLE (or set it to 0) in the environment and in /etc/nccl.conf / "
                             "~/.nccl.conf; if the fabric does not work yet, fix it (node.fabric) rather than hide it.",
                             SRC_NCCL_ENV + " (NCCL_IB_DISABLE: 'disable the IB/RoCE transport ... NCCL will fallback "
                             "to using IP sockets')"))
    for n in DISABLES:
        s = eff.get(n)
        if n == "NCCL_IB_DISABLE" and planned is not None:
            continue  # said above, as a failure
        if s is not None and s.value.strip() == "1" and (n != "NCCL_IB_DISABLE" or f.ports.ports):
            left.append(s)
    for n, (rx, words) in ACCEPTED.items():
        s = eff.get(n)
        if s is not None and not re.fullmatch(rx, s.value.strip()):
            found.append(Finding(NCCL_ENV_ID, Verdict.WARN, Msg("{n}={value} ({origin}) is not a value NCCL accepts for it ({words}): NCCL ignores it or "
                                                                "reads it as something else", n=n, value=s.value, origin=s.origin, words=words), "node", (s.line,),
                                 Msg("Set {n} to one of the documented values, or remove it.", n=n), SRC_NCCL_ENV))
    if left:
        found.append(Finding(NCCL_ENV_ID, Verdict.WARN, (Msg('debugging settings left on for every NCCL job started here: ') + SEMICOLON.join(f'{s.name}={s.value} ({s.origin})' for s in left) + (Msg(' (NCCL_IB_DISABLE=1: NCCL ignores the RDMA fabric and uses TCP sockets)') if any(s.name == 'NCCL_IB_DISABLE' for s in left) else '')),
                             "node", tuple(s.line for s in left),
                             "Remove them from the environment and NCCL's configuration files once the problem they "
                             "were set for is solved; set them per job when debugging.", SRC_NCCL_ENV))
    if found:
        return found
    return [Finding(NCCL_ENV_ID, Verdict.PASS, (Msg('{n_eff} NCCL setting(s), none naming a missing interface or HCA, no debugging setting left on: ', n_eff=len(eff)) + ', '.join(f'{s.name}={s.value}' for s in eff.values())[:400]),
                    "node", tuple(s.line for s in eff.values())[:8], "", SRC_NCCL_ENV)]


# ------------------------------------------------------------------ node.rdma_bandwidth (the action's judge)

BANDWIDTH_ID = "node.rdma_bandwidth"
LOOPBACK_NOTE = ("; a loopback on one HCA port proves the HCA, its driver, PCIe link and memory registration, not the "
                 "cable, the switch or another node (multinode.transport does)")


def bandwidth_pending(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.rdma_bandwidth``'s check: only its run measures it, so this is ``unknown`` (the step stays pending until
    the run's judge settles it) saying to run the action; on a node without an RDMA device and no planned NIC it is
    ``skip`` with that reason (the engine skips the step as not applicable while no run has settled it; a check never
    passes it)."""
    f = _read(out)
    none = _no_fabric(BANDWIDTH_ID, plan, f)
    if none is not None and none.verdict is Verdict.SKIP and _want(plan) is None:
        return [dataclasses.replace(none, message=Msg("{what}: nothing to measure", what=none.message))]
    if none is not None:
        return [dataclasses.replace(none, verdict=Verdict.UNKNOWN)]
    _, active = _fabric_ports(f.ports)
    return [Finding(BANDWIDTH_ID, Verdict.UNKNOWN, (Msg("not measured yet: run this step's action (ib_write_bw loopback on ") + (Msg('{ca} port {port}', ca=active[0].ca, port=active[0].port) if active else Msg('an Active port: none is Active now')) + ')'), "node", tuple(ln for p in active[:1] for ln in p.lines[:3]), "Press a (or `bringup run "
                    "node.rdma_bandwidth`); install perftest first if the action says it is missing.", fabric.SRC_PERFTEST)]


def judge_rdma_loopback(text: str, plan: Mapping[str, Any]) -> list[Finding]:
    """``node.rdma_bandwidth`` from the log of :func:`wizard.install.perftest.resolve_rdma_loopback`: the port's rate
    (the ``grep -H .`` lines of its sysfs files, read by :func:`wizard.parsers.fabric.parse_ib_ports`) and the
    ``ib_write_bw`` result (:func:`wizard.parsers.fabric.parse_perftest`), judged by
    :func:`wizard.rules.fabric.judge_perftest` against that rate (0.8 x or more passes); without the rate in the log,
    against the plan's ``nic_gbit_s`` or the InfiniBand line rates."""
    from wizard.parsers.fabric import parse_perftest

    port = next((p for p in parse_ib_ports(text).ports if p.rate_gbit_s), None)
    found = fabric.judge_perftest(parse_perftest(text), text, plan, fid=BANDWIDTH_ID,
                                  line_rate_gbit_s=port.rate_gbit_s if port is not None else None,
                                  line_rate_of=f"{port.ca} port {port.port}" if port is not None else "")
    return [dataclasses.replace(x, message=x.message + LOOPBACK_NOTE) if x.verdict is not Verdict.UNKNOWN else x
            for x in found]
