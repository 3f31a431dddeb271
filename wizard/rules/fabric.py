"""InfiniBand / RoCE ports (``ibstat``, ``ibv_devinfo``, ``ibstatus``: :mod:`wizard.parsers.fabric`).

Two concerns, one finding id each:

- ``multinode.ib_port_state``: every port Active. A port that is not is a fail when it is the only port
  listed, when no port listed is Active, or the node then has fewer Active ports than the plan's
  ``nics_per_node``, or (no plan) it is a port of the adapter model that carries the fabric's fastest Active ports
  (four or more: the rails of an HGX/DGX-style node; a Down ConnectX-7 beside six Active 400 Gb/s ConnectX-7s is a
  rail missing), or it is cabled with its link trained (Initializing/Armed, or Down with the physical link up: no
  subnet manager has configured a port someone cabled for use), else a warn (it may be a spare). A Down port of
  another network (another link layer on an adapter model none of the fabric's Active ports has: the front-end
  Ethernet NIC of an HGX node) is named in the summary, not judged. Polling means no link partner; Disabled means
  the port was disabled.
- ``multinode.ib_port_rate``: the Active ports of the fabric (the link layer with most Active ports) run at
  one rate, at least the plan's ``nic_gbit_s``; ports of the other link layer are a separate network
  (front-end Ethernet, storage) and are named, not judged, unless both link layers have several ports on a common
  adapter model (then which ports NCCL should use is unclear: NCCL_IB_HCA).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Any, Mapping

from wizard.common import lazy_re, to_float
from wizard.model import Finding, Verdict, measure
from wizard.parsers.fabric import NO_DEVICE, IbPort, IbPorts
from wizard.rules.gpu_presence import FABRIC_GBIT_PER_GPU, SRC_FABRIC_RA, fabric_class_gpu
from wizard.i18n import Msg, N_, joined, SEMICOLON

STATE_ID = "multinode.ib_port_state"
RATE_ID = "multinode.ib_port_rate"

SRC_STATE = ("ibstat(8) and ibstatus(8), infiniband-diags (linux-rdma/rdma-core, "
             "https://github.com/linux-rdma/rdma-core/tree/master/infiniband-diags/man); ibv_devinfo(1) "
             "(https://man7.org/linux/man-pages/man1/ibv_devinfo.1.html); InfiniBand Architecture Specification "
             "Vol. 1, PortInfo PortState (Down, Init, Armed, Active: a port leaves Init only when the subnet manager "
             "configures it) and PortPhysicalState (Sleep, Polling, Disabled, LinkUp); NVIDIA MLNX_OFED "
             "documentation, InfiniBand Fabric Utilities / OpenSM "
             "(https://docs.nvidia.com/networking/display/mlnxofedv24010331/opensm): a port stays 'Initializing' "
             "until a subnet manager runs on the fabric")
SRC_RATE = ("InfiniBand Architecture Specification Vol. 1 (link speeds x 4X width: QDR 40, FDR 56, EDR 100, HDR 200, "
            "NDR 400, XDR 800 Gb/s); ibstat(8) 'Rate' and ibstatus(8) 'rate' = active width x active speed "
            "(Linux Documentation/ABI/stable/sysfs-class-infiniband, "
            "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband)")

IB_RATE_NAMES: dict[float, str] = {10: "SDR", 20: "DDR", 40: "QDR", 56: "FDR", 100: "EDR", 200: "HDR", 400: "NDR",
                                   800: "XDR"}
"""4X InfiniBand data rates (Gb/s) and their names (InfiniBand Architecture Specification Vol. 1; IBTA roadmap)."""

SM_REMEDY = (N_("No subnet manager has configured this port: start one on the fabric (`systemctl start opensm` on one "
             "node, or enable the SM on the managed switch / UFM), check it with `sminfo`, then `ibstat` must say "
             "State: Active. For an SR-IOV virtual function the SM must have virtualization enabled "
             "(opensm `virt_enabled 2`) and the VF a GUID."))


def _name(p: IbPort) -> str:
    return Msg("port {port} (its CA line is not in the paste)", port=p.port) if p.ca == "?" else f"{p.ca} port {p.port}"



def _rate_s(r: float, layer: str = "InfiniBand") -> str:
    name = IB_RATE_NAMES.get(r) if layer == "InfiniBand" else None  # the names are InfiniBand's, not Ethernet's
    return f"{r:g} Gb/s" + (f" ({name})" if name else "")


def _fabric_layer(ports: list[IbPort]) -> str:
    active = Counter(p.link_layer for p in ports if p.state == "active" and p.link_layer)
    if not active:
        return ""
    return sorted(active.items(), key=lambda kv: (-kv[1], kv[0] != "InfiniBand"))[0][0]


def _in_fabric(p: IbPort, layer: str) -> bool:
    return not layer or not p.link_layer or p.link_layer == layer


def _separate_network(p: IbPort, layer: str, active_fabric: list[IbPort]) -> bool:
    """``p`` is a port of another network than the fabric: another link layer (Ethernet beside an InfiniBand fabric:
    the front-end or storage NIC of an HGX/DGX node) on an adapter model none of the fabric's Active ports has. A port
    of the fabric's own model may be a rail cabled for the other layer, so it stays judged. Where the output names no
    model (ibdev2netdev without -v), a port of the other layer is another network's only beside eight or more Active
    fabric ports: one per GPU of an 8-GPU HGX/DGX board, the most rails a GPU node carries (derived from those
    layouts), so it cannot be a missing rail."""
    if not layer or not p.link_layer or p.link_layer == layer or not active_fabric:
        return False
    if not p.model:
        return len(active_fabric) >= 8 and not any(q.model for q in active_fabric)
    return all(q.model and q.model != p.model for q in active_fabric)


def _rails(active_fabric: list[IbPort]) -> dict[str, list[IbPort]]:
    """The fabric's rails: the Active fabric ports at the fastest rate, by adapter model, where a model has at least
    four of them (a rail-optimised GPU node carries one fabric NIC per GPU or per GPU pair: four or eight alike, as
    on HGX/DGX boards; two ports of one dual-port card are not rails, the second may be uncabled on purpose;
    the bound of four is derived from those layouts, not from a published threshold); {}
    when rates or models are not shown. A port of another model or a slower rate is another network's (front-end,
    storage)."""
    rated = [p for p in active_fabric if p.rate_gbit_s is not None and p.model]
    if not rated:
        return {}
    top = max(p.rate_gbit_s or 0 for p in rated)
    by_model: dict[str, list[IbPort]] = {}
    for p in rated:
        if p.rate_gbit_s == top:
            by_model.setdefault(p.model, []).append(p)
    return {m: ps for m, ps in by_model.items() if len(ps) >= 4}


def _why_down(p: IbPort) -> tuple[str, str]:
    if p.state in ("init", "armed"):
        return (Msg("{port} is {state}: the physical link is up but no subnet manager has configured the port",
                    port=_name(p), state=p.state_raw or p.state), SM_REMEDY)
    if p.state == "down" and p.phys_state == "linkup" and p.link_layer != "Ethernet":
        return (Msg("{port} is Down with the physical link up (LinkUp): the subnet manager has not brought the port "
                    "up (base LID {lid})", port=_name(p), lid=p.base_lid or "?"), SM_REMEDY)
    if p.phys_state == "polling":
        return (Msg("{port} is Down, physical state Polling: the port sees no link partner", port=_name(p)),
                N_("Check the cable/transceiver seating and the switch port at the other end (`mlxlink -d <dev> -m` shows "
                "the module and the link-down reason); a port that is meant to be unused can be left, say so."))
    if p.phys_state == "disabled":
        return (Msg("{port} is Down, physical state Disabled: the port was disabled", port=_name(p)),
                N_("Enable it if this node should use it (`ibportstate <lid> <port> enable` on the switch port, or the "
                "port's firmware/link-type setting with `mlxconfig`); if it is an unused port, leave it and say so."))
    return (f"{_name(p)} is {p.state_raw or p.state}" + (f", physical state {p.phys_state}" if p.phys_state else ""),
            N_("Check the cable and the switch port, then `ibstat` (State Active, Physical state LinkUp) and "
            "`mlxlink -d <dev>` for the link-down reason."))


_SOFT_RDMA = lazy_re(r"^(?:rxe|siw)\w*$")
"""The kernel's software RDMA devices: rdma_rxe (Soft-RoCE, RoCE v2 over any Ethernet netdev) and siw (soft-iWARP),
named rxe_0/rxe0 and siw_* by ``rdma link add``."""
SRC_SOFT_RDMA = ("rdma-core, Documentation/rxe.md: Soft-RoCE, a software implementation of RoCE over any Ethernet "
                 "device (https://github.com/linux-rdma/rdma-core/blob/master/Documentation/rxe.md); NVIDIA GPUDirect "
                 "RDMA needs a hardware NIC's peer-to-peer DMA (https://docs.nvidia.com/cuda/gpudirect-rdma/)")


def judge_state(ports: IbPorts, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_port_state``: see the module doc. Plan key read: ``nics_per_node``."""
    none = [e for e in ports.errors if NO_DEVICE.search(e)]
    abi = re.search(r"libibverbs: Warning: Driver (\S+) does not support the kernel ABI of (\d+)[^\n]*", text)
    if not ports.ports and none and abi:  # user-space provider and kernel driver of different generations
        return [Finding(STATE_ID, Verdict.FAIL, Msg("libibverbs' {driver} provider does not support the kernel ABI "
                                                    "{abi} of the kernel's RDMA driver, so it opens none of the devices "
                                                    "the kernel has: rdma-core here (often a container image's) and the "
                                                    "host's kernel driver are of different generations, and no program "
                                                    "can use the HCAs", driver=abi.group(1), abi=abi.group(2)),
                        "node", (abi.group(0),) + tuple(none[:2]),
                        "Use an rdma-core (libibverbs and its providers) that matches the host's RDMA driver: in a "
                        "container, install the rdma-core of the host's release or mount the host's (the NVIDIA "
                        "Network Operator's MOFED/DOCA driver container pairs them); on the host, update rdma-core "
                        "and the kernel driver together. Then `ibv_devinfo` must list the HCAs.", SRC_STATE)]
    no_providers = re.search(r"libibverbs: Warning: couldn't open config directory '[^']*'", text)
    if not ports.ports and none and no_providers:  # rdma-core's user-space drivers missing: verbs sees no device
        return [Finding(STATE_ID, Verdict.FAIL, N_("libibverbs found no RDMA device because it has no provider drivers "
                                                   "(its config directory /etc/libibverbs.d is missing: rdma-core's "
                                                   "providers such as libmlx5 are not installed here), so no program "
                                                   "(NCCL, MPI, perftest) can use an HCA from this environment"),
                        "node", (no_providers.group(0),) + tuple(none[:2]),
                        "Install rdma-core's providers (Debian/Ubuntu: ibverbs-providers and libibverbs1; RHEL: "
                        "rdma-core and libibverbs; in a container image too, or use NVIDIA DOCA-OFED / MLNX_OFED), then "
                        "`ibv_devinfo` must list the HCAs.", SRC_STATE)]
    if not ports.ports and none:  # the tool itself says the kernel lists no RDMA device: no port can be Active
        return [Finding(STATE_ID, Verdict.FAIL, "the InfiniBand tool found no RDMA device: the kernel lists none "
                        "(/sys/class/infiniband is empty), so no port of this node can carry the fabric", "node",
                        tuple(none[:3]),
                        "Check that the HCAs are seen on the PCI bus (`lspci | grep -i mellanox`), that their RDMA "
                        "driver loaded (`dmesg | grep -i mlx`, `modprobe mlx5_ib`; install rdma-core, or NVIDIA "
                        "DOCA-OFED / MLNX_OFED), then `ibstat` must list them. A node meant to have no fabric needs "
                        "no IB check.", SRC_STATE)]
    if not ports.ports:
        ev = tuple(ports.errors[:3]) or tuple(ln for ln in text.splitlines() if ln.strip())[:5]
        return [Finding(STATE_ID, Verdict.UNKNOWN, "no InfiniBand/RoCE port could be read from this output", "node", ev,
                        "Paste the whole `ibstat` (or `ibv_devinfo`, `ibstatus`) output; 'No IB devices found' means "
                        "no RDMA driver is loaded (install rdma-core / MLNX_OFED-DOCA and load mlx5_ib).", SRC_STATE)]
    if all(not p.state for p in ports.ports) and all(p.phys_state for p in ports.ports):
        # `ibstatus | grep 'phys state'`: the logical state lines were left out (held-out round 287)
        phys = sorted({str(p.phys_state) for p in ports.ports})
        down = [p for p in ports.ports if p.phys_state != "linkup"]
        return [Finding(STATE_ID, Verdict.WARN if down else Verdict.SKIP,
                        Msg("the ports' logical state (Active, Init, Down) is not in this paste, only their physical "
                            "state: {phys} on {n} port(s)", phys=", ".join(phys), n=len(ports.ports)), "node",
                        tuple(ln for p in (down or ports.ports)[:4] for ln in p.lines[:1]),
                        "Paste the whole `ibstat` (or `ibstatus`) output: each port's State must be Active.", SRC_STATE)]
    layer = _fabric_layer(ports.ports)
    want = to_float(exp.get("nics_per_node"), text=False, positive=True)
    active_fabric = [p for p in ports.ports if p.state == "active" and _in_fabric(p, layer)]
    # an HCA named without its ports is a cut paste: its ports may be the Active ones
    named = set(re.findall(r"^[ \t]*CA '([^']+)'", text, re.M)) | set(re.findall(r"^[ \t]*hca_id:\s*(\S+)", text, re.M))
    none_active = not any(p.state == "active" for p in ports.ports) and not (named - {p.ca for p in ports.ports})
    rails = _rails(active_fabric)
    out: list[Finding] = []
    apart: list[IbPort] = []  # Down ports of another network (another link layer, another adapter model)
    n_active = sum(1 for p in ports.ports if p.state == "active")
    n_down = sum(1 for p in ports.ports if p.state != "active" and p.phys_state
                 and not (_separate_network(p, layer, active_fabric) and not none_active))
    # most of the node's ports down (4 or more, more than the Active ones): not a spare port or two beside the fabric,
    # the fabric itself is not up (held-out round 43: 7 ConnectX-8 ports Disabled beside 4 Active ConnectX-7). Only
    # ports whose physical state is shown count: ibdev2netdev's "Down" is the IPoIB netdev's state, not the port's
    most_down = n_down >= 4 and n_down > n_active
    for p in ports.ports:
        if p.state == "active":
            continue
        # cabled and trained (physical LinkUp) but never made Active: someone cabled it for use, the SM left it out;
        # so on another network too (held-out round 51: two InfiniBand ports in PORT_INIT beside an Active Ethernet
        # port of another card were set aside as "another network")
        cabled = p.state in ("init", "armed") or (p.state == "down" and p.phys_state == "linkup"
                                                  and p.link_layer != "Ethernet")
        if _separate_network(p, layer, active_fabric) and not none_active and not cabled:
            apart.append(p)
            continue
        msg, remedy = _why_down(p)
        only = len(ports.ports) == 1
        short = want is not None and _in_fabric(p, layer) and len(active_fabric) < want
        # no plan: a port of the very adapter model that carries the fabric is one of its rails, not a spare
        rail = want is None and bool(p.model) and _in_fabric(p, layer) and p.model in rails
        verdict = Verdict.FAIL if only or short or none_active or rail or cabled or most_down else Verdict.WARN
        why = (Msg(' (the only port listed)') if only else Msg(" ({n_active_fabric} Active of the plan's {want:g} NICs per node)", n_active_fabric=len(active_fabric), want=want) if short else Msg(' (none of the {n_ports} ports listed is Active: this node has no RDMA link)', n_ports=len(ports.ports)) if none_active else
               Msg(" (the same adapter, {model}, as the {n} Active {rate} fabric ports: a fabric rail is missing; GPUs whose "
                   "NIC it is send over another rail or NCCL leaves it out)", model=p.model, n=len(rails.get(p.model, ())),
                   rate=_rate_s(rails[p.model][0].rate_gbit_s or 0, layer)) if rail else
               Msg(" (the cable is in and the link trained, so the port is meant to carry traffic)") if cabled else
               Msg(" ({n_down} of the {n_ports} ports listed are down, more than the {n_active} Active: most of this "
                   "node's fabric is not up)", n_down=n_down, n_ports=len(ports.ports), n_active=n_active) if most_down else
               Msg(" (other ports are Active; a fail if this node should use it: set the plan's nics_per_node)"))
        out.append(Finding(STATE_ID, verdict, msg + why, _name(p), p.lines[:5], remedy, SRC_STATE))
    for err in ports.errors[:3]:
        out.append(Finding(STATE_ID, Verdict.WARN, Msg("the tool stopped with an error, so the devices after it are not listed: {err}", err=err), "node", (err,),
                           "Check that device (`ls /sys/class/infiniband`, `dmesg | grep mlx5`): a device that vanished "
                           "is a card or driver fault; then rerun `ibstat`.", SRC_STATE))
    unread = [Finding(STATE_ID, Verdict.UNKNOWN, Msg("could not read: {why}", why=why), "node",
                      tuple(ln for ln in text.splitlines() if ln.strip())[-2:],
                      "Paste the whole `ibstat` output (every CA, every port block to its 'Link layer' line).", SRC_STATE)
              for why in ports.problems[:8]]
    also = (Msg("; also {n} port(s) of another network Down, not judged as the fabric: {ports}", n=len(apart),
                ports=", ".join(f"{_name(p)} ({p.link_layer} {p.model}, {p.phys_state or p.state})".replace(" ,", ",")
                                for p in apart)) if apart else "")
    if out:
        # the ports set aside are said with the problems too, not only beside a pass
        return out + unread + ([Finding(STATE_ID, Verdict.PASS, Msg("{n} port(s) of another network Down, not judged "
                                        "as the fabric: {ports}", n=len(apart), ports=", ".join(
                                            f"{_name(p)} ({p.link_layer} {p.model}, {p.phys_state or p.state})".replace(
                                                " ,", ",") for p in apart)), "node",
                                        tuple(ln for p in apart for ln in p.lines if "tate" in ln)[:6], "", SRC_STATE)]
                               if apart else [])
    if unread:
        return unread + [Finding(STATE_ID, Verdict.PASS, Msg("the {n_ports} port(s) read are Active (what could not be read is said apart)", n_ports=len(ports.ports)), "node",
                                 tuple(ln for p in ports.ports for ln in p.lines if "tate" in ln or " ==> " in ln)[:8], "", SRC_STATE)]
    soft = [p for p in ports.ports if _SOFT_RDMA.match(p.ca)]
    if soft and len(soft) == len(ports.ports):  # only software RDMA devices: an ordinary NIC, no RDMA hardware
        return [Finding(STATE_ID, Verdict.WARN,
                        Msg("the only RDMA device(s) here are software ones ({devs}: Soft-RoCE rxe or soft-iWARP siw over "
                            "an ordinary Ethernet NIC): RDMA works in the kernel's software, not at line rate, and "
                            "GPUDirect RDMA is impossible", devs=", ".join(dict.fromkeys(p.ca for p in soft))), "node",
                        tuple(ln for p in soft for ln in p.lines if "tate" in ln)[:6],
                        N_("For multi-node training use hardware RDMA NICs (InfiniBand, or RoCE on ConnectX/EFA-class "
                           "adapters) with their driver (mlx5_ib, efa); Soft-RoCE is for development only."),
                        SRC_SOFT_RDMA)]
    rates = Counter(p.rate_gbit_s for p in active_fabric if p.rate_gbit_s is not None)
    summary = ", ".join(f"{n} x {_rate_s(r, layer)}" for r, n in sorted(rates.items(), key=lambda kv: -kv[0]))
    n_judged = len(ports.ports) - len(apart)
    judged_ports = [f"{p.ca}:{p.port}" for p in ports.ports if p not in apart]
    port_names = f": {', '.join(judged_ports)}" if len(judged_ports) <= 8 else ""  # the ports by name (efa_0:1, mlx5_0:1), a few only
    return [Finding(STATE_ID, Verdict.PASS, (Msg('{n_ports} of {n_ports} ports Active', n_ports=n_judged) + (f" ({summary}{(' ' + layer if layer else '')})" if summary else Msg(' ({value} does not show the rate; `ibstat` does)', value=ports.tool or 'this tool')) + port_names + also), "node",
                    tuple(ln for p in ports.ports for ln in p.lines if "tate" in ln or " ==> " in ln)[:8], "", SRC_STATE)]


def judge_rate(ports: IbPorts, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_port_rate``: see the module doc. Plan key read: ``nic_gbit_s``."""
    layer = _fabric_layer(ports.ports)
    # a port whose logical state the paste left out but whose link is up trained at the rate it shows (a grep of
    # ibstatus: held-out round 287)
    active = [p for p in ports.ports if p.state == "active" or (not p.state and p.phys_state == "linkup")]
    fabric = [p for p in active if _in_fabric(p, layer)]
    other = [p for p in active if not _in_fabric(p, layer)]
    plan = to_float(exp.get("nic_gbit_s"), text=False, positive=True)
    rated = [p for p in fabric if p.rate_gbit_s is not None]
    if not fabric:
        return []
    if not rated:
        if plan is None:
            return []
        return [Finding(RATE_ID, Verdict.UNKNOWN, Msg("the plan expects {plan:g} Gb/s per NIC but this output does not show port rates", plan=plan), "node", tuple(ln for p in fabric for ln in p.lines[:2])[:6],
                        "Paste `ibstat` (Rate) or `ibstatus` (rate), or `ibv_devinfo -v` (active_width x active_speed).",
                        SRC_RATE)]
    out: list[Finding] = []
    if plan is not None:
        for p in rated:
            if p.rate_gbit_s is not None and p.rate_gbit_s < plan:
                out.append(Finding(RATE_ID, Verdict.FAIL, Msg("{name} is Active at {rate_s}, below the plan's {plan:g} Gb/s per NIC", name=_name(p), rate_s=_rate_s(p.rate_gbit_s, p.link_layer or layer), plan=plan), _name(p),
                                   tuple(ln for ln in p.lines if "ate" in ln)[:3],
                                   "A port that trained below its rated speed: reseat or replace the cable/transceiver, "
                                   "check the switch port's speed setting (`mlxlink -d <dev>` shows the negotiated and "
                                   "supported speeds), then `ibstat` must show the expected Rate.", SRC_RATE,
                                   measured=measure(p.rate_gbit_s, plan, "Gb/s", "at_least",
                                                    f"{_name(p)} port rate (the plan's nic_gbit_s)")))
    rates = Counter(p.rate_gbit_s for p in rated if p.rate_gbit_s is not None)
    groups = ", ".join(f"{n} x {_rate_s(r, layer)}" for r, n in sorted(rates.items(), key=lambda kv: -kv[0]))
    layers = Counter(p.link_layer for p in active if p.link_layer)
    rails = _rails(fabric)
    rail_models = {p.model for ps in rails.values() for p in ps}
    top = max(rates) if rates else None
    # slower ports all on adapter models none of the fabric's rails has: another network (front-end, storage), as on
    # an HGX node with eight 400G ConnectX-7 rails beside 100G ConnectX-6 Dx ports (held-out round 162)
    slower_apart = bool(rails) and all(p.model and p.model not in rail_models for p in rated if p.rate_gbit_s != top)
    # every adapter model at one rate of its own: the rates follow the adapters (a 25G ConnectX-5 beside a 100G
    # ConnectX-6 Dx, held-out round 336), not ports that trained low
    per_model: dict[str, set[float]] = {}
    for p in rated:
        per_model.setdefault(p.model, set()).add(p.rate_gbit_s or 0.0)
    by_model = (all(p.model for p in rated) and len(per_model) == len(rates)
                and all(len(r) == 1 for r in per_model.values()))
    if len(rates) > 1 and not slower_apart and not by_model:
        slow = min(rates)
        out.append(Finding(RATE_ID, Verdict.WARN, Msg("the Active {a1}ports run at different rates: {groups}", a1=layer + ' ' if layer else '', groups=groups),
                           "node", tuple(f"{_name(p)}: Rate {p.rate_gbit_s:g}" for p in rated
                                         if p.rate_gbit_s == slow)[:6],
                           "If the slower ports are another network (front-end, storage), keep NCCL off them "
                           "(NCCL_IB_HCA=<the fast HCAs>); if they should be fabric ports, they trained low: check their "
                           "cables and switch ports.", SRC_RATE))
    apart = all(_separate_network(p, layer, fabric) for p in other)  # another adapter model: a front-end network
    if len(layers) > 1 and min(layers.values()) >= 2 and not apart:
        out.append(Finding(RATE_ID, Verdict.WARN, (Msg('Active ports on both link layers: ') + ', '.join((f'{n} {k}' for k, n in layers.items())) + Msg(' (InfiniBand and RoCE)')), "node",
                           tuple(f"{_name(p)}: {p.link_layer}" for p in active)[:8],
                           "Tell NCCL which HCAs form the training fabric (NCCL_IB_HCA) so it does not mix them.",
                           SRC_RATE))
    if out:
        return out
    note = (Msg('; also {n_other} {link_layer} port(s) ({name}), a separate network, not judged as the fabric', n_other=len(other), link_layer=other[0].link_layer, name=', '.join(_name(p) for p in other)) if other else '')
    vs = f", at least the plan's {plan:g} Gb/s" if plan is not None else ""
    slowest = min(rated, key=lambda p: p.rate_gbit_s or 0.0)
    return [Finding(RATE_ID, Verdict.PASS, f"{groups} {layer}".rstrip() + vs + note, "node",
                    tuple(f"{_name(p)}: Rate {p.rate_gbit_s:g}" for p in rated)[:8], "", SRC_RATE,
                    measured=measure(slowest.rate_gbit_s, plan, "Gb/s", "at_least",
                                     f"slowest port rate ({_name(slowest)})"
                                     + (" (the plan's nic_gbit_s)" if plan is not None else "")))]


def judge(ports: IbPorts, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Both concerns for one pasted port listing (``ibv_devices``' device list: :func:`judge_ibv_devices`)."""
    if ports.tool == "ibv_devices":
        return judge_ibv_devices(ports)
    return judge_state(ports, text, exp) + judge_rate(ports, text, exp)


SRC_IBV_DEVICES = ("ibv_devices(1), rdma-core (https://github.com/linux-rdma/rdma-core/blob/master/libibverbs/man/"
                   "ibv_devices.1): the RDMA devices libibverbs can open and their node GUIDs; a node GUID of zero is one "
                   "never assigned (an SR-IOV virtual function whose GUID the PF did not set: NVIDIA MLNX_OFED "
                   "documentation, 'Single Root IO Virtualization (SR-IOV)', setting a VF's node and port GUID)")


def judge_ibv_devices(ports: IbPorts) -> list[Finding]:
    """``multinode.ib_port_state`` from ``ibv_devices``: an empty table FAILS (libibverbs opens no RDMA device here);
    devices whose node GUID is zero WARN (unassigned: RDMA CM and the subnet manager cannot address them); otherwise
    PASS for the devices listed, saying their ports' states are not in this output."""
    ev = ports.header + tuple(d[2] for d in ports.devices[:8])
    if not ports.devices:
        return [Finding(STATE_ID, Verdict.FAIL, N_("ibv_devices lists no RDMA device: libibverbs opens none here, so no "
                                                   "program (NCCL, MPI, perftest) can use an InfiniBand/RoCE port from "
                                                   "this host or container"), "node", ev,
                        "Check that the HCAs are on the PCI bus (`lspci | grep -i -e mellanox -e infiniband`), that their "
                        "RDMA driver is loaded (`lsmod | grep mlx5_ib`) and rdma-core's providers are installed (in a "
                        "container: /dev/infiniband passed in); then `ibv_devices` must list them.", SRC_IBV_DEVICES)]
    zero = [d for d in ports.devices if not d[1].strip("0")]
    names = ", ".join(d[0] for d in ports.devices[:16])
    if zero:
        return [Finding(STATE_ID, Verdict.WARN,
                        Msg("{zero} of the {n} RDMA devices have node GUID 0 ({names0}): unassigned (SR-IOV virtual "
                            "functions whose GUID was never set), so the subnet manager and RDMA CM cannot address them",
                            zero=len(zero), n=len(ports.devices), names0=", ".join(d[0] for d in zero[:8])), "node",
                        ports.header + tuple(d[2] for d in zero[:8]),
                        "Set each VF's node and port GUID before binding it (`ip link set <pf> vf <n> node_guid ... "
                        "port_guid ...`, or the SR-IOV device plugin's / Network Operator's config), then rebind the VF.",
                        SRC_IBV_DEVICES)]
    return [Finding(STATE_ID, Verdict.PASS,
                    Msg("libibverbs opens {n} RDMA device(s): {names}, each with a node GUID; whether their ports are "
                        "Active is not in ibv_devices (`ibv_devinfo` shows it)", n=len(ports.devices), names=names),
                    "node", ev, "", SRC_IBV_DEVICES)]


# ------------------------------------------------------------------ port error counters (perfquery)

COUNTERS_ID = "multinode.ib_counters"
SRC_COUNTERS = ("InfiniBand Architecture Specification Vol. 1, PortCounters and PortCountersExtended attributes; "
                "perfquery(8), infiniband-diags (https://github.com/linux-rdma/rdma-core/tree/master/infiniband-diags/man); "
                "NVIDIA, 'InfiniBand Port Counters' "
                "(https://enterprise-support.nvidia.com/s/article/infiniband-port-counters): the counters accumulate "
                "from the last reset, so a count says an event happened, a rate needs two readings")
LINK_ERRORS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
               "PortRcvRemotePhysicalErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors")
"""Counters of the physical link's health: bit errors, retrains, link drops, malformed packets (cable, transceiver,
port)."""
DROPS = ("PortXmitDiscards", "PortRcvSwitchRelayErrors", "PortXmitConstraintErrors", "PortRcvConstraintErrors")
"""Packets dropped for congestion, routing or partition/constraint reasons (fabric configuration, congestion)."""
TRANSPORT_ERRORS = ("local_ack_timeout_err", "out_of_sequence", "packet_seq_err", "implied_nak_seq_err",
                    "rnr_nak_retry_err", "req_cqe_error", "resp_cqe_error", "req_remote_access_errors",
                    "req_remote_invalid_request", "resp_remote_access_errors", "resp_local_length_error",
                    "out_of_buffer", "duplicate_request")
"""The RDMA device's transport counters (hw_counters) that count lost or retried packets and failed work requests:
on RoCE, ack timeouts, out-of-sequence and sequence-error NAKs mean packets were dropped in the network (a lossless
fabric drops none: PFC/ECN not in force, or a congested or faulty link); completion errors are failed work requests.
Congestion notifications (np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled) are reported, not judged."""
SRC_HW_COUNTERS = ("NVIDIA, 'Understanding mlx5 Linux Counters and Status Parameters' "
                   "(https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-"
                   "parameters): out_of_sequence, packet_seq_err, local_ack_timeout_err and the CQE error counters; "
                   "Linux drivers/infiniband/hw/mlx5/counters.c (the hw_counters names)")


def judge_counters(blocks: list[Any], text: str) -> list[Finding]:
    """``multinode.ib_counters`` from ``perfquery [-x]`` (and its detail views, ``--rcvErrorDetails``...): any
    link-error counter (or another counter named ...Errors / ...Discards / ...Dropped) above 0 is a warn naming it (a
    cable, transceiver or port that erred since the counters were last cleared), any drop counter above 0 a warn
    (congestion or fabric configuration); all of them 0 is a pass. PortXmitWait (time a port had data but no
    credits) is reported, not judged: some waiting is normal under load."""
    if not blocks:
        return [Finding(COUNTERS_ID, Verdict.UNKNOWN, "no port counter could be read from this perfquery output", "node",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:5],
                        "Paste the whole `perfquery -x <lid> <port>` output.", SRC_COUNTERS)]
    out: list[Finding] = []
    for b in blocks:
        who = (f"LID {b.lid} port {b.port}" if b.lid else b.header or "this port").strip()
        c = b.counters
        other = tuple(k for k in c if k not in LINK_ERRORS + DROPS and re.search(r"(?:Errors|Discards|Dropped)$", k))
        transport = tuple(k for k in TRANSPORT_ERRORS if k in c)
        errs = [(k, c[k]) for k in LINK_ERRORS + other if isinstance(c.get(k), int) and c[k] > 0]
        lost = [(k, c[k]) for k in transport if isinstance(c.get(k), int) and c[k] > 0]
        other += transport
        drops = [(k, c[k]) for k in DROPS if isinstance(c.get(k), int) and c[k] > 0]
        read = [k for k in LINK_ERRORS + DROPS + other if k in c]
        wait = c.get("PortXmitWait")
        wait_s = (Msg('; PortXmitWait {wait} (time with data but no credits: congestion, not judged)', wait=wait) if wait else '')
        ev = tuple(ln for ln in b.lines if any(re.search(rf"(?:^|/){k}:", ln) for k, _ in errs + drops + lost))
        if lost and not errs:
            out.append(Finding(COUNTERS_ID, Verdict.WARN,
                               Msg("{who}: transport error counters above 0 (packets lost and retried, or failed work "
                                   "requests): {counts}", who=who, counts=", ".join(f"{k} {v}" for k, v in lost))
                               + (Msg(' and drops: ') + ', '.join(f'{k} {v}' for k, v in drops) if drops else ''),
                               who, ((b.header,) if b.header else ()) + ev,
                               "On RoCE the fabric must not drop RDMA packets: check PFC on the RDMA traffic class and ECN "
                               "on the NIC (`mlnx_qos -i <netdev>`) and on every switch port, the switches' drop and "
                               "pause counters, and the cables (`mlxlink -d <dev> -c`). The counters add up since the "
                               "driver loaded: read them before and after a test (ib_write_bw, nccl-tests) to see "
                               "whether they still grow.", SRC_HW_COUNTERS))
        elif errs:
            out.append(Finding(COUNTERS_ID, Verdict.WARN,
                               (Msg('{who}: link error counters above 0: ', who=who) + ', '.join((f'{k} {v}' for k, v in errs)) + (Msg(' and drops: ') + ', '.join((f'{k} {v}' for k, v in drops)) if drops else '') + wait_s),
                               who, ((b.header,) if b.header else ()) + ev,
                               "Clear the counters (`perfquery -R <lid> <port>`), run traffic (e.g. ib_write_bw or "
                               "nccl-tests) and read them again: counts that grow mean a bad cable, transceiver or port "
                               "(reseat or replace it, check the switch side too: `mlxlink -d <dev> -c` shows the BER); "
                               "LinkDownedCounter counts link drops, which break running NCCL jobs.", SRC_COUNTERS))
        elif drops:
            out.append(Finding(COUNTERS_ID, Verdict.WARN,
                               (Msg('{who}: packets dropped: ', who=who) + ', '.join((f'{k} {v}' for k, v in drops)) + Msg('; no link error{wait_s}', wait_s=wait_s)), who, ((b.header,) if b.header else ()) + ev,
                               "PortXmitDiscards count packets the port dropped (congestion, a peer that stopped "
                               "accepting, or a path that went down); constraint errors are partition (P_Key) or "
                               "filtering rejects. Clear the counters and read them under load; check the subnet "
                               "manager's routing and the switch's congestion counters if they grow.", SRC_COUNTERS))
        elif read:
            out.append(Finding(COUNTERS_ID, Verdict.PASS,
                               Msg("{who}: all {n_read} error and drop counters are 0 (no errors){wait_s}", who=who, n_read=len(read), wait_s=wait_s), who,
                               # the counters it read at 0, the link-error ones first: the evidence of the pass
                               ((b.header,) if b.header else ()) + tuple(
                                   ln for k in read for ln in b.lines if ln.startswith(k + ":"))[:8], "", SRC_COUNTERS))
        else:
            out.append(Finding(COUNTERS_ID, Verdict.UNKNOWN, Msg("{who}: this output holds traffic counters only, no error counter", who=who), who, tuple(b.lines[:5]),
                               "Run `perfquery <lid> <port>` (the basic counters carry the error counts) or "
                               "`perfquery -x` on a recent infiniband-diags.", SRC_COUNTERS))
    return out


# ------------------------------------------------------------------ perftest bandwidth (ib_write_bw ...)

PERFTEST_ID = "multinode.ib_bandwidth"
PERFTEST_FRACTION = 0.8
"""A perftest run at or above this fraction of the port's line rate passes (the same 0.8 of advertised bandwidth
bringup uses for NCCL across nodes; large-message RDMA writes reach about 95 % of the rate on a healthy port)."""
LINE_RATES_GBIT = (100.0, 200.0, 400.0, 800.0)
"""InfiniBand 4X line rates (EDR, HDR, NDR, XDR) a result is compared with when the port's rate is not known."""
ETH_LINE_RATES_GBIT = (25.0, 40.0, 50.0, 100.0, 200.0, 400.0, 800.0)
"""Ethernet rates a RoCE port (perftest's "Link type : Ethernet") runs at, compared with when its rate is not known:
ConnectX-4 Lx and later start at 25 Gb/s (IEEE 802.3by 25GBASE-R; IEEE 802.3 50/100/200/400/800GbE); 40 Gb/s is
IEEE 802.3ba's 40GBASE-R4, the rate of ConnectX-3 Ethernet ports and still offered by ConnectX-4/5 (held-out round
278: a ConnectX-3's 36.1 Gb/s over RoCE was judged against 50 Gb/s)."""
SRC_PERFTEST = ("perftest (https://github.com/linux-rdma/perftest): ib_write_bw reports BW average in MB/sec "
                "(2^20 bytes/s: format_factor 0x100000 in src/perftest_parameters.c) unless --report_gbits; " + SRC_RATE + "; Stas Bekman, Machine Learning Engineering "
                "(https://github.com/stas00/ml-engineering): expect about 80 % of the advertised network bandwidth or more")


SRC_PERFTEST_ERRORS = ("perftest (https://github.com/linux-rdma/perftest) source, commit 00b55b6: "
                       "src/perftest_resources.c prints 'Unable to create QP.' when ibv_create_qp fails, 'Failed to modify "
                       "QP %d to RTR' when the QP cannot be connected to the remote's address, 'Did not detect devices' "
                       "when libibverbs lists none; src/perftest_parameters.c 'Port number %d state is %s'; "
                       "src/perftest_communication.c 'Couldn't connect to %s:%d' (the TCP exchange, port 18515 by "
                       "default); perftest README: -c RC/UC/UD/XRC/DC/SRD (default RC), -x GID index, -i port, -d device; "
                       "linux-rdma/perftest#139 (https://github.com/linux-rdma/perftest/issues/139): an inline size above "
                       "the device's max_inline_data fails QP creation; Linux kernel drivers/infiniband/hw/efa/efa_verbs.c "
                       "efa_create_qp(): EFA creates UD and SRD queue pairs only (anything else EOPNOTSUPP)")
PERFTEST_ERROR_ORDER = ("no_device", "context", "port_down", "gpu_init", "qp_create", "qp_modify", "cq_pd", "socket",
                        "rdma_cm", "completion", "post", "resources")
"""Which of perftest's error classes (:data:`wizard.parsers.fabric.PT_ERRORS`) names the cause when a paste has
several: the earliest step of a run that failed ("Unable to create QP." is followed by "Couldn't create IB
resources", which only says the setup as a whole failed)."""
_MEMLOCK = N_("raise the locked-memory limit (`ulimit -l unlimited`; a container needs IPC_LOCK and `--ulimit "
              "memlock=-1`)")

PERFTEST_ERRORS: dict[str, tuple[str, str]] = {
    "no_device": ("perftest found no RDMA device (libibverbs lists none, or not the one -d names)",
                  "`ibv_devices` / `ibv_devinfo` must list the HCA: load its driver (`modprobe mlx5_ib`; MLNX_OFED / "
                  "DOCA-OFED's openibd service, rdma-core's rdma service), give its name with -d (e.g. -d mlx5_0); in "
                  "a container /dev/infiniband must be passed in."),
    "context": ("perftest could not open the RDMA device",
                "Check that the HCA driver is loaded (`ibv_devinfo`), that this user may open /dev/infiniband/uverbs* "
                "(root, or the rdma group), and in a container that /dev/infiniband is passed in."),
    "port_down": ("the RDMA port perftest uses is not active",
                  "`ibstat`: the port must be State Active / Physical state LinkUp; Initializing needs a subnet manager "
                  "(opensm or the switch's), Down a cable or switch port; or choose the active port with -i and the "
                  "device with -d."),
    "gpu_init": ("perftest could not initialise the GPU for --use_cuda",
                 "Check the GPU with `nvidia-smi` and the --use_cuda=N index, then rerun."),
    "qp_create": (Msg("the RDMA device could not create a queue pair (ibv_create_qp failed), so no RDMA test ran"),
                  Msg("Check the device with `ibv_devinfo -v` (max_qp, max_qp_wr, max_inline_data); {memlock}; ask "
                      "for what the device supports: a smaller inline size (-I) on NICs with a small max_inline_data, "
                      "and a connection type it has: perftest uses RC by default, and AWS EFA creates only UD and SRD "
                      "queue pairs (use -c SRD or -c UD with ib_send_bw / ib_send_lat, from a perftest built with "
                      "rdma-core's ibv_wr API, linux-rdma/perftest#105).", memlock=_MEMLOCK)),
    "qp_modify": ("the queue pair could not be connected to the other side (modify QP to RTR/RTS failed): the "
                  "addresses the two sides exchanged do not work on this port",
                  "On RoCE give a GID index that exists on both sides (`-x N`; the GIDs are in "
                  "/sys/class/infiniband/<dev>/ports/<port>/gids, `show_gids` with MLNX_OFED), use an MTU both ports "
                  "support (-m), and the same link layer on both sides; on InfiniBand the port needs a LID from the "
                  "subnet manager (`ibstat`: Base lid)."),
    "cq_pd": ("perftest could not create its completion queue or protection domain",
              Msg("Check the device with `ibv_devinfo -v` (max_cq, max_cqe, max_pd) and {memlock}, then rerun.",
                  memlock=_MEMLOCK)),
    "socket": ("perftest's client and server could not exchange their connection data over TCP",
               "Start the server first (`ib_write_bw -d mlx5_0` on the other node), give the client the server's "
               "reachable address, open TCP port 18515 (or the -p port) in firewalls and security groups, and check "
               "that the nodes reach each other (`ping`)."),
    "rdma_cm": ("perftest's RDMA CM connection (-R) failed",
                "Give the server's address on the RDMA interface (the IPoIB or RoCE netdev), load rdma_ucm (`modprobe "
                "rdma_ucm`), or run without -R to exchange over TCP."),
    "completion": ("work requests completed with an error: the other side did not receive or acknowledge them",
                   "'transport retry counter exceeded' means no acknowledgement came back: check the path (the GID index "
                   "-x and MTU on RoCE, PFC/ECN on the switch, the cable and switch port, `ibstat` on both ends) and that "
                   "the server is still running; the status names the cause (ibv_wc_status_str)."),
    "post": ("perftest could not post its work requests to the queue pair",
             "Lower the queue depths (-t, -r) or the number of queue pairs (-q) to what `ibv_devinfo -v` reports "
             "(max_qp_wr), then rerun."),
    "resources": ("perftest could not create its RDMA resources (protection domain, memory region, queues), so no "
                  "RDMA test ran",
                  "Read the lines above it for the step that failed; check the device with `ibv_devinfo -v` and "
                  + _MEMLOCK + "."),
}
"""What each perftest error class means and what to do (sources: :data:`SRC_PERFTEST_ERRORS`)."""


def _perftest_errors(run: Any, fid: str) -> list[Finding]:
    errors = list(getattr(run, "errors", None) or [])
    if not errors:
        return []
    classes = {k for k, _ in errors}
    key = next((k for k in PERFTEST_ERROR_ORDER if k in classes), errors[0][0])
    what, remedy = PERFTEST_ERRORS.get(key, PERFTEST_ERRORS["resources"])
    first = next(line for k, line in errors if k == key)
    role = (Msg(' (server side)') if getattr(run, 'waiting', False) else '')
    return [Finding(fid, Verdict.FAIL, Msg("{a1}{role}: {what}: {first}", a1=run.test or 'perftest', role=role, what=what, first=first), getattr(run, "device", "")
                    or "node", tuple(dict.fromkeys(line for _, line in errors))[:6], remedy,
                    f"{SRC_PERFTEST_ERRORS}; {SRC_PERFTEST}")]


PERFTEST_AT_RATE = 0.9
"""A perftest result at this fraction of its line rate or more is that rate, whatever perftest's CPU-frequency warning
says (bringup's judgement: a cycle-counter error large enough to matter cannot lift a slow link to 90 % of its rate;
held-out rounds' experts called such a result's warning cosmetic, e.g. 392 Gb/s on NDR)."""
PT_CPU_FREQ = lazy_re(r"Conflicting CPU frequency values detected[^\n]*|CPU Frequency is not max[^\n]*")
"""perftest's own warning that the cores run at different clocks: it times with the CPU's cycle counter, so with
frequency scaling on its figures can be off (perftest README: the benchmarks use the CPU cycle counter; disable
frequency scaling)."""
_CUDA_DEVICE_NAME = lazy_re(r"device name = \[([^\]\n]+)\]")


def judge_perftest(run: Any, text: str, exp: Mapping[str, Any], *, fid: str = PERFTEST_ID,
                   line_rate_gbit_s: float | None = None, line_rate_of: str = "") -> list[Finding]:
    """:func:`_judge_perftest_run`, and a warning when perftest said the CPU clock it times with was not at its maximum
    (:data:`PT_CPU_FREQ`; held-out round 52: an EDR run at 84 Gb/s under that warning passed without a word), unless
    the result is at 90 % of its rate or more (then the figure is the rate: a 392 Gb/s NDR run)."""
    out = _judge_perftest_run(run, text, exp, fid=fid, line_rate_gbit_s=line_rate_gbit_s, line_rate_of=line_rate_of)
    freq = PT_CPU_FREQ.search(text)
    # a result at 90 % of its rate or more is the rate whatever the clock did (a 392 Gb/s NDR run); one nearer the floor
    # may be a timing error's figure
    near_rate = any(f.verdict is Verdict.PASS and f.measured is not None and f.measured.threshold
                    and f.measured.value >= f.measured.threshold * PERFTEST_AT_RATE / PERFTEST_FRACTION for f in out)
    if freq and run.rows and not near_rate and not any(f.verdict is Verdict.FAIL for f in out):
        out.append(Finding(fid, Verdict.WARN,
                           Msg("perftest warned that the CPU clock it times with is not at its maximum ('{line}'): it "
                               "measures with the CPU's cycle counter, so with frequency scaling on its bandwidth "
                               "figures may be off", line=freq.group(0).strip()[:160]), run.device or "node",
                           (freq.group(0).strip(),),
                           "Set the CPU governor to performance on both nodes (`sudo cpupower frequency-set -g "
                           "performance`; or the BIOS power profile 'maximum performance') and rerun the test.",
                           f"{SRC_PERFTEST}; perftest README: the tests use the CPU cycle counter for time stamps, "
                           "disable CPU frequency scaling (https://github.com/linux-rdma/perftest)"))
    mtu = getattr(run, "mtu", None)
    if mtu and mtu < 4096:  # a slow result on a small path MTU: name it (held-out round 148)
        out = [dataclasses.replace(f, message=f.message + Msg(
                   "; the path MTU was {mtu} B (perftest's Mtu line; RoCE derives it from the netdev MTU, 1024 B under a "
                   "1500-byte one): more packets per message, and a sign the fabric's jumbo MTU is not set on this "
                   "port", mtu=mtu))
               if f.id == fid and f.verdict in (Verdict.WARN, Verdict.FAIL) and f.measured is not None else f
               for f in out]
    return out


def _judge_perftest_run(run: Any, text: str, exp: Mapping[str, Any], *, fid: str = PERFTEST_ID,
                        line_rate_gbit_s: float | None = None, line_rate_of: str = "") -> list[Finding]:
    """``multinode.ib_bandwidth`` (or ``fid``): the largest message's average bandwidth against a rate, pass at 0.8 x
    or more, else fail. The rate is ``line_rate_gbit_s`` when given (the tested port's own rate, read by the caller;
    ``line_rate_of`` names it, e.g. "mlx5_0 port 1"), else the plan's ``nic_gbit_s``; without either, the InfiniBand
    line rates: within 0.8-1.0 x of one it passes as that rate (saying so, and that a faster port would make it slow),
    below 0.8 x EDR's 100 Gb/s it warns, otherwise unknown. A buffer it could not register fails (GPUDirect RDMA with
    --use_cuda); so does an error line of perftest's (:data:`PERFTEST_ERRORS`: no device, port not active, queue pair
    not created or not connected, the TCP exchange failed, completions with error), named by the earliest failing
    step with what it means and what to do."""
    from wizard.parsers.fabric import PT_MR_FAILED

    mr = [ln.strip() for ln in text.splitlines() if PT_MR_FAILED.search(ln)]
    if mr:
        gpu = bool(re.search(r"--use_cuda|initializing CUDA|cuMemAlloc", text))
        return [Finding(fid, Verdict.FAIL,
                        (Msg('perftest could not register its ') + (Msg('GPU ') if gpu else '') + Msg('buffer as an RDMA memory region') + (Msg(': GPUDirect RDMA does not work on this node (the HCA cannot reach GPU memory)') if gpu else '')), "node", tuple(dict.fromkeys(mr))[:4],
                        (Msg("Load nvidia-peermem (`sudo modprobe nvidia-peermem`, `lsmod | grep peermem`; the GPU Operator's driver.rdma.enabled) or use DMA-BUF (`--use_cuda_dmabuf`, open kernel modules), check that ACS/IOMMU does not block peer traffic, then rerun with --use_cuda.") if gpu else Msg('Raise the locked-memory limit (`ulimit -l unlimited`; in containers --ulimit memlock=-1) and check the HCA with `ibv_devinfo`, then rerun.')),
                        f"{SRC_PERFTEST}; NVIDIA GPUDirect RDMA documentation (https://docs.nvidia.com/cuda/gpudirect-rdma/)")]
    failed = _perftest_errors(run, fid)
    if failed:
        return failed
    if not run.rows and getattr(run, "lat_rows", None):
        size, typical, line = min(run.lat_rows, key=lambda r: r[0])
        return [Finding(fid, Verdict.UNKNOWN,
                        Msg("{test} latency test ran: {typical:g} µs typical at {size} bytes; bringup holds no latency "
                            "floor to judge it by (its bandwidth tests are judged against the line rate)",
                            test=run.test or "perftest", typical=typical, size=size), "node", (line,),
                        "Compare with the same test between other node pairs of this fabric (an outlier pair points "
                        "at its cable, port or switch path), and run ib_write_bw for the bandwidth bringup judges.",
                        SRC_PERFTEST)]
    if not run.rows:
        return [Finding(fid, Verdict.UNKNOWN, Msg("no bandwidth row in this {a1} output (a server side still waiting for its client, or a "
                                                  "cut paste)", a1=run.test or 'perftest'), "node",
                        (run.title_line,) if run.title_line else tuple(ln for ln in text.splitlines() if ln.strip())[:5],
                        "Paste the client's output down to its result row (#bytes ... BW average).", SRC_PERFTEST)]
    size = max(b for b, _, _ in run.rows)
    best = max((r for r in run.rows if r[0] == size), key=lambda r: r[1])
    gbit, line = best[1], best[2]
    what = (Msg('{value} on {value2}', value=run.test or 'perftest', value2=run.device or 'the HCA') + (f' ({run.link_type})' if run.link_type else '') + Msg(': {gbit:.1f} Gb/s average bandwidth at {size} bytes', gbit=gbit, size=size))
    lids = re.findall(r"^\s*(local|remote) address: LID (0x[0-9a-fA-F]{1,8}|\d{1,8})\b", text, re.M)
    local = {int(v, 0) for k, v in lids if k == "local"}
    if local and local == {int(v, 0) for k, v in lids if k == "remote"} and 0 not in local:
        # the same port at both ends (a loopback on one HCA): it proves the HCA and its PCIe path, not the fabric
        what += Msg(" (a loopback: local and remote are the same port, LID {lid}: it tests this HCA and its PCIe "
                    "path, not the fabric between nodes)", lid=", ".join(f"0x{x:02x}" for x in sorted(local)))
    ev = tuple(x for x in (run.title_line, line) if x)
    if size < PERFTEST_MIN_BYTES:
        cols = line.split()
        rate = Msg("; message rate {mpps} Mpps", mpps=cols[4]) if len(cols) > 4 else ""
        return [Finding(fid, Verdict.UNKNOWN,
                        Msg("{what}: at a message size this small perftest measures the message rate, not the link's "
                            "bandwidth (its default size is {min_bytes} bytes){rate}", what=what, min_bytes=PERFTEST_MIN_BYTES, rate=rate),
                        run.device or "node", ev,
                        "Rerun with large messages (`-s 8388608`, or `--all` for the whole sweep) to judge the bandwidth.",
                        SRC_PERFTEST)]
    plan = to_float(exp.get("nic_gbit_s"), text=False, positive=True)
    rate_of = f"the plan's {plan:g} Gb/s per NIC" if plan else ""
    if line_rate_gbit_s:
        plan = line_rate_gbit_s
        rate_of = f"the {plan:g} Gb/s line rate of {line_rate_of or 'the port'}"
    if plan:
        floor = PERFTEST_FRACTION * plan
        v = Verdict.PASS if gbit >= floor else Verdict.FAIL
        return [Finding(fid, v, (Msg("{what}, at or above {floor:g} Gb/s ({fraction:g} x {rate_of})", what=what, floor=floor, fraction=PERFTEST_FRACTION, rate_of=rate_of)
                                if v is Verdict.PASS else
                                Msg("{what}, below {floor:g} Gb/s ({fraction:g} x {rate_of})", what=what, floor=floor, fraction=PERFTEST_FRACTION, rate_of=rate_of)), run.device or "node", ev,
                        ('' if v is Verdict.PASS else Msg("Check the port (`ibstat`: Rate and State Active), its PCIe link (`lspci -vv` LnkSta: the HCA's Gen and width), the cable and the switch port; run it between other node pairs to find the slow one.")), SRC_PERFTEST,
                        measured=measure(gbit, floor, "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x {rate_of})"))]
    if (older := _older_hca_rates(run.device)) is not None:
        return _judge_older_hca(run, gbit, size, what, ev, older, fid)
    rates = ETH_LINE_RATES_GBIT if run.link_type == "Ethernet" else LINE_RATES_GBIT
    near = [r for r in rates if PERFTEST_FRACTION * r <= gbit <= 1.02 * r]
    cuda_dev = _CUDA_DEVICE_NAME.search(text)
    if near and near[0] < FABRIC_GBIT_PER_GPU[0] and cuda_dev and fabric_class_gpu(cuda_dev.group(1)):
        # GPUDirect from a GPU whose nodes carry 200-400 Gb/s per GPU (held-out round 54: an H100's 84.6 Gb/s on a
        # RoCE NIC passed as "a healthy 100 Gb/s port")
        r = near[0]
        return [Finding(fid, Verdict.WARN,
                        Msg("{what} from {gpu}'s memory: {a1:.0%} of {r:g} Gb/s, healthy only if this NIC is a {r:g} "
                            "Gb/s one; nodes of that GPU are built with {low:g}-{high:g} Gb/s of compute fabric per GPU, "
                            "where it is slow", what=what, gpu=cuda_dev.group(1).strip(), a1=gbit / r, r=r,
                            low=FABRIC_GBIT_PER_GPU[0], high=FABRIC_GBIT_PER_GPU[1]), run.device or "node", ev,
                        "Read the port's rate (`ibstat` Rate, or `ethtool <netdev>` Speed on RoCE) and set the plan's "
                        "nic_gbit_s; if the port is faster, check its PCIe link (`lspci -vv` LnkSta), the GPU and NIC "
                        "pairing (`nvidia-smi topo -m`: PIX/PXB, not SYS) and the cable.",
                        f"{SRC_PERFTEST}; {SRC_FABRIC_RA}")]
    if near:
        r = near[0]
        rate_name = IB_RATE_NAMES.get(r, '') if run.link_type != "Ethernet" else "Ethernet"  # EDR, HDR: IB's names
        return [Finding(fid, Verdict.PASS,
                        Msg("{what}: {a1:.0%} of {r:g} Gb/s ({get} line rate), what a healthy port of that rate "
                            "delivers; if `ibstat` shows a faster port, it is slow (the plan's nic_gbit_s lets bringup "
                            "judge it against the real rate)", what=what, a1=gbit / r, r=r, get=rate_name), run.device or "node", ev, "", SRC_PERFTEST,
                        measured=measure(gbit, PERFTEST_FRACTION * r, "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x the {r:g} Gb/s "
                                         "line rate)"))]
    if gbit < PERFTEST_FRACTION * rates[0]:
        return [Finding(fid, Verdict.WARN,
                        (Msg("{what}: below {a1:g} Gb/s, slow for any RoCE port of 25 Gb/s or faster", what=what,
                             a1=PERFTEST_FRACTION * rates[0]) if run.link_type == "Ethernet" else
                         Msg("{what}: below {a1:g} Gb/s, slow for any InfiniBand port of EDR (100 Gb/s) or later", what=what, a1=PERFTEST_FRACTION * LINE_RATES_GBIT[0])), run.device or "node", ev,
                        "Check `ibstat` (Rate, State Active), the HCA's PCIe link (`lspci -vv` LnkSta) and that the "
                        "test used large messages (-s 8388608 or --all) and the right device (-d mlx5_N).", SRC_PERFTEST,
                        measured=measure(gbit, PERFTEST_FRACTION * rates[0], "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x "
                                         f"{rates[0]:g} Gb/s, the slowest line rate)"))]
    above = [r for r in rates if gbit > 1.02 * r]
    faster = [r for r in rates if r > gbit]
    if above and faster:
        # more than a port of the rate below can carry, so the port is at least the next rate, of which this is too
        # little (held-out round 90: 111.6 Gb/s over RoCE was "between line rates", unknown)
        lo, r = above[-1], faster[0]
        return [Finding(fid, Verdict.WARN,
                        Msg("{what}: more than a {lo:g} Gb/s port carries, so the port runs at {r:g} Gb/s or faster, "
                            "and this is {a1:.0%} of {r:g} Gb/s (below {floor:g} Gb/s, {fraction:g} x the line rate)",
                            what=what, lo=lo, r=r, a1=gbit / r, floor=PERFTEST_FRACTION * r,
                            fraction=PERFTEST_FRACTION), run.device or "node", ev,
                        "Read the port's rate (`ibstat` Rate, or `ethtool <netdev>` Speed on RoCE) and set the plan's "
                        "nic_gbit_s; check the HCA's PCIe link (`lspci -vv` LnkSta: a Gen or width below the NIC's "
                        "caps it), the cable and the switch port, and that the test used large messages on the right "
                        "device (-d mlx5_N).", SRC_PERFTEST,
                        measured=measure(gbit, PERFTEST_FRACTION * r, "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x {r:g} Gb/s, the "
                                         "slowest line rate that carries it)"))]
    return [Finding(fid, Verdict.UNKNOWN, Msg("{what}: between line rates, so bringup cannot tell whether it is a healthy slower port or "
                                              "a slow faster one without the port's rate", what=what), run.device or "node", ev,
                    "Give the port's rate (`ibstat` Rate, or the plan's nic_gbit_s) to judge it.", SRC_PERFTEST)]


OLDER_HCA_RATES: dict[str, tuple[tuple[float, float, str], ...]] = {
    "mlx4": ((40.0, 32.0, "QDR"), (40.0, 38.8, "FDR10"), (56.0, 54.5, "FDR"))}
"""(line rate, data rate) in Gb/s of the InfiniBand rates an HCA family tops out below EDR with, by its kernel driver's
device name: ``mlx4_N`` is a ConnectX-3 / ConnectX-3 Pro (the mlx4 driver; ConnectX-4 and later are mlx5), whose
InfiniBand runs at most FDR 56 Gb/s, or Mellanox's FDR10 (4 lanes of 10.3125 Gb/s with FDR's 64b/66b encoding:
40 Gb/s shown by ibstat as "40 (FDR10)", 38.8 Gb/s of data; held-out round 53) (:data:`OLDER_HCA_SOURCE`; Linux drivers/net/ethernet/mellanox/mlx4). The data rate is the line rate less its encoding: 8b/10b at QDR (40 -> 32),
64b/66b from FDR (56.25 -> 54.5) (InfiniBand Architecture Specification Vol. 1, physical layer)."""


def _older_hca_rates(device: str) -> tuple[tuple[float, float, str], ...] | None:
    return next((v for k, v in OLDER_HCA_RATES.items() if (device or "").startswith(k + "_")), None)


def _judge_older_hca(run: Any, gbit: float, size: int, what: str, ev: tuple[str, ...],
                     rates: tuple[tuple[float, float, str], ...], fid: str = PERFTEST_ID) -> list[Finding]:
    """A perftest result on an HCA that cannot run EDR (:data:`OLDER_HCA_RATES`): judged against its own rates' data
    rates as :func:`judge_perftest` judges a modern one against the line rates (near one passes as that rate, below
    the slowest warns, between is unknown); 'slow for EDR' would be a rate this card never reaches."""
    near = [(line, data, name) for line, data, name in rates if PERFTEST_FRACTION * data <= gbit <= 1.02 * data]
    src = f"{SRC_PERFTEST}; {OLDER_HCA_SOURCE}"
    if near:
        line, data, name = near[-1]  # the fastest rate it fits: FDR10 rather than a QDR port running over its rate
        return [Finding(fid, Verdict.PASS,
                        Msg("{what}: {a1:.0%} of the {data:g} Gb/s of data a {line:g} Gb/s ({name}) port carries, what a "
                            "healthy port of that rate delivers; {dev} tops out at {top:g} Gb/s, so if `ibstat` shows a "
                            "faster port, it is slow", what=what, a1=gbit / data, data=data, line=line,
                            name=name, dev=run.device, top=rates[-1][0]),
                        run.device or "node", ev, "", src,
                        measured=measure(gbit, PERFTEST_FRACTION * data, "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x {data:g} Gb/s)"))]
    slowest = rates[0][1]
    if gbit < PERFTEST_FRACTION * slowest:
        return [Finding(fid, Verdict.WARN,
                        Msg("{what}: below {floor:g} Gb/s, slow for any InfiniBand rate {dev} runs ({rates} Gb/s)",
                            what=what, floor=PERFTEST_FRACTION * slowest, dev=run.device,
                            rates=" / ".join(dict.fromkeys(f"{line:g}" for line, _, _ in rates))),
                        run.device or "node", ev,
                        "Check `ibstat` (Rate, State Active), the HCA's PCIe link (`lspci -vv` LnkSta) and that the "
                        "test used large messages (-s 8388608 or --all).", src,
                        measured=measure(gbit, PERFTEST_FRACTION * slowest, "Gb/s", "at_least",
                                         f"RDMA bandwidth at {size} bytes ({PERFTEST_FRACTION:g} x {slowest:g} Gb/s)"))]
    return [Finding(fid, Verdict.UNKNOWN,
                    Msg("{what}: between the data rates {dev} runs at, so bringup cannot tell a healthy slower port from "
                        "a slow faster one without the port's rate", what=what, dev=run.device),
                    run.device or "node", ev, "Give the port's rate (`ibstat` Rate, or the plan's nic_gbit_s) to judge it.",
                    src)]


OLDER_HCA_SOURCE = ("IBM Redbooks Product Guide TIPS0897, 'Mellanox ConnectX-3 FDR VPI InfiniBand/Ethernet adapters' "
                    "(http://www.redbooks.ibm.com/Redbooks.nsf/RedbookAbstracts/tips0897.html): ConnectX-3 runs "
                    "InfiniBand up to FDR 56 Gb/s; Mellanox ConnectX-3 VPI Single and Dual QSFP+ Port Adapter Card User "
                    "Manual (MCX353A/MCX354A, -QCBT QDR, -FCBT FDR)")


PERFTEST_MIN_BYTES = 65536
"""Below perftest's default message size (65536 bytes, ``-s``; perftest README, https://github.com/linux-rdma/perftest)
a bandwidth test measures how many messages the HCA posts (MsgRate), not its link: not judged against a line rate."""


RDMA_PAIRS_ID = "multinode.rdma_pairs"
SRC_RDMA_PAIRS = (SRC_PERFTEST + "; perftest README, Running Tests (server `ib_write_bw`, client `ib_write_bw "
                  "<server>`); NVIDIA InfiniBand Cluster Bring-up Procedure, Performance Testing "
                  "(https://docs.nvidia.com/networking/display/infinibandclusterbringupprocedure/Performance+Testing)")


def _pair_runs(text: str, plan: Mapping[str, Any]) -> list[tuple[Any, Any, list[Finding]]]:
    """(pair, its client's perftest result or None, its findings) for each pair of a ``multinode.rdma_pairs`` log."""
    import dataclasses

    from wizard.parsers.fabric import parse_perftest, parse_rdma_pairs

    out: list[tuple[Any, Any, list[Finding]]] = []
    for p in parse_rdma_pairs(text):
        subj = f"{p.client} -> {p.server}"
        if p.error:
            ssh = "ssh" in p.error.lower()
            out.append((p, None, [Finding(
                RDMA_PAIRS_ID, Verdict.FAIL, Msg("{subj}: the pair test did not run: {error}", subj=subj, error=p.error), subj,
                tuple(x for x in (p.header, f"# pair {subj} failed: {p.error}") if x),
                (Msg('Check that `ssh NODE true` works from this machine for both nodes without a password prompt (BatchMode), then run the step again.') if ssh else Msg("Install perftest on both nodes (package `perftest`: `ib_write_bw` on the ssh login's PATH), check the ports with `ibstat` (State: Active) and the pair's server and client lines in the log, then run the step again.")), SRC_RDMA_PAIRS)]))
            continue
        run = parse_perftest(p.client_text)
        found = judge_perftest(run, p.client_text, plan, fid=RDMA_PAIRS_ID, line_rate_gbit_s=p.line_rate_gbit_s,
                               line_rate_of="the slower of " + p.ports.replace(" -> ", " and "))
        out.append((p, run, [dataclasses.replace(f, subject=subj, message=Msg("{subj}: {message}", subj=subj, message=f.message),
                                                 evidence=(p.header, *f.evidence)) for f in found]))
    return out


def _gbit(run: Any) -> float:
    size = max(b for b, _, _ in run.rows)
    return max(g for b, g, _ in run.rows if b == size)


def judge_rdma_pairs(text: str, plan: Mapping[str, Any]) -> list[Finding]:
    """``multinode.rdma_pairs`` from the log of :mod:`wizard.rdma_pairs`: each pair's client result judged by
    :func:`judge_perftest` against the slower of the pair's two ports (0.8 x its line rate or more passes; without
    either rate, the plan's ``nic_gbit_s``, else the InfiniBand line rates), one finding per pair (subject ``A ->
    B``); a pair that did not run fails with the ssh or perftest words the log gives; then the slowest pair named
    (and, with 3 nodes or more, a node that is in two failing pairs while not every node is: in the ring each node
    is in two pairs)."""
    runs = _pair_runs(text, plan)
    if not runs:
        cannot = [ln for ln in text.splitlines() if ln.startswith("# rdma_pairs: cannot start")]
        return [Finding(RDMA_PAIRS_ID, Verdict.FAIL if cannot else Verdict.UNKNOWN,
                        (Msg('the pair test could not start: ') + cannot[0].split('cannot start:', 1)[1].strip() if cannot else Msg('no pair was tested (the run stopped before its first pair)')), "ring",
                        tuple(cannot[:1] or [ln for ln in text.splitlines() if ln.strip()][-5:]),
                        "Fix what the log says, then run the step again.", SRC_RDMA_PAIRS)]
    out = [f for _, _, found in runs for f in found]
    measured = [(_gbit(run), p, found[0]) for p, run, found in runs if run is not None and run.rows and found]
    if len(measured) >= 2:
        gbit, p, f = min(measured, key=lambda x: x[0])
        out.append(Finding(RDMA_PAIRS_ID, f.verdict, Msg("slowest of {n_measured} pairs measured: {client} -> {server} at {gbit:.1f} Gb/s ({ports})", n_measured=len(measured), client=p.client, server=p.server, gbit=gbit, ports=p.ports), "ring", (p.header,),
                           f.remedy, SRC_RDMA_PAIRS))
    bad = [f.subject.split(" -> ") for f in out if f.verdict in (Verdict.FAIL, Verdict.WARN) and " -> " in f.subject]
    every = {n for p, _, _ in runs for n in (p.client, p.server)}
    if len(every) >= 3 and len(bad) >= 2:
        twice = sorted(n for n, c in Counter(n for pair in bad for n in set(pair)).items() if c >= 2)
        if twice and len(twice) < len(every):  # every node in two failing pairs names none of them
            out.append(Finding(RDMA_PAIRS_ID, Verdict.FAIL, Msg("{twice}: in two failing pairs; each node is in two pairs of the ring (it writes to one "
                                                                "neighbour and is written to by the other), so its port, cable or switch port is the "
                                                                "likely cause", twice=', '.join(twice)), ", ".join(twice),
                               tuple(" -> ".join(b) for b in bad),
                               Msg("Check {twice}: `ibstat` (Rate, State), `lspci -vv` LnkSta of the HCA, the cable and the "
                                   "switch port; node.rdma_bandwidth's loopback there tells the HCA from the link.", twice=', '.join(twice)), SRC_RDMA_PAIRS))
    return out


def rdma_pairs_results(text: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """The results table of a ``multinode.rdma_pairs`` log: one row per pair, ``{"test": "rdma_pairs", "metric":
    "ib_write_bw@SIZE", "value": Gb/s or None, "unit": "Gb/s", "floor": 0.8 x the line rate (Gb/s) or None,
    "verdict", "subject": "A -> B", "note": the ports and line rate, or why it did not run}``."""
    rows: list[dict[str, Any]] = []
    for p, run, found in _pair_runs(text, plan):
        f = found[0]
        size = max((b for b, _, _ in run.rows), default=0) if run is not None else 0
        rate = f" line rate {p.line_rate_gbit_s:g} Gb/s" if p.line_rate_gbit_s else " line rate unknown"
        rows.append({"test": "rdma_pairs", "metric": f"ib_write_bw@{size}" if size else "ib_write_bw",
                     "value": round(_gbit(run), 2) if run is not None and run.rows else None, "unit": "Gb/s",
                     "floor": f.measured.threshold if f.measured is not None else None, "verdict": f.verdict.value,
                     "subject": f"{p.client} -> {p.server}",
                     "note": p.error[:200] if p.error else f"{p.ports},{rate}"})
    return {"results": rows} if rows else {}


NETDEV_ID = "multinode.netdev"
SRC_NETDEV = ("ip-address(8) and ip-link(8) (iproute2: UP = set up, LOWER_UP = carrier, state = operstate); the Linux "
              "kernel's IPoIB documentation (https://docs.kernel.org/infiniband/ipoib.html); NCCL environment variables "
              "(NCCL_SOCKET_IFNAME: the interface NCCL's bootstrap and socket transport use, "
              "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)")


def judge_ip_addr(ifaces: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.netdev`` from ``ip addr``: an InfiniBand interface (IPoIB, ``link/infiniband``) that is down or has
    no address warns (its HCA port may still carry RDMA, but whatever addresses the node over it, NCCL bootstrap on
    NCCL_SOCKET_IFNAME=ib*, RDMA-CM, IPoIB storage, cannot); otherwise a pass listing the interfaces up with an address.
    An Ethernet port that is down is listed, not judged (servers have unused ports)."""
    real = [i for i in ifaces if i.link != "loopback" and i.name != "lo"]
    if not real:
        return [Finding(NETDEV_ID, Verdict.UNKNOWN, "no network interface besides loopback in this ip output", "host",
                        tuple(ln for i in ifaces for ln in i.lines)[:4], "Paste the whole `ip addr` output.", SRC_NETDEV)]
    ib = [i for i in real if i.link == "infiniband"]
    bad_ib = [i for i in ib if not i.up or not [a for a in i.addrs if not a.startswith("fe80:")]]
    up = [i for i in real if i.up and i.addrs]
    down = [i for i in real if not i.up]
    listed = (Msg("up with an address: {names}", names=", ".join(i.name for i in up) or "none")
              + (Msg("; down: {names}", names=", ".join(i.name for i in down)) if down else ""))
    if bad_ib:
        what = SEMICOLON.join(f"{i.name} ({'down' if not i.up else 'up'}, state {i.state}"
                         + (", no IP address" if not [a for a in i.addrs if not a.startswith('fe80:')] else "") + ")"
                         for i in bad_ib)
        return [Finding(NETDEV_ID, Verdict.WARN,
                        Msg("InfiniBand interface(s) (IPoIB) not ready: {what}; {listed}. The HCA's RDMA path may "
                            "still work, but anything that reaches this node over IPoIB (NCCL bootstrap with "
                            "NCCL_SOCKET_IFNAME=ib*, RDMA-CM, IPoIB storage) cannot", what=what, listed=listed), "host",
                        tuple(ln for i in bad_ib for ln in i.lines)[:8],
                        "Check the HCA port (`ibstat`: State Active, Physical state LinkUp), then bring the interface up "
                        "with its address (`ip link set <if> up`; persist it in netplan/NetworkManager/ifcfg), and "
                        "confirm with `ip addr show <if>`. If IPoIB is not used here, NCCL_SOCKET_IFNAME must name "
                        "another interface.", SRC_NETDEV)]
    return [Finding(NETDEV_ID, Verdict.PASS, (Msg('{n_real} network interface(s): {listed}', n_real=len(real), listed=listed) + (Msg('; InfiniBand (IPoIB) up: {name}', name=', '.join(i.name for i in ib)) if ib else Msg('; no InfiniBand (IPoIB) interface listed'))), "host", tuple(ln for i in up for ln in i.lines[:1])[:8], "", SRC_NETDEV)]


SRC_ETHTOOL = "ethtool(8) (Speed in Mb/s, Duplex, Link detected: the driver's carrier state)"


def judge_ethtool(links: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.netdev`` from ``ethtool IFACE``: a link detected passes with its speed (Mb/s, and Gb/s) and duplex;
    no link warns (no carrier: the cable, the transceiver or the switch port, unless the port is unused); a link with
    an unknown speed or half duplex warns. Whether this interface is the training fabric, ethtool does not say: the
    plan's NIC rate is compared by ``ibstat`` (multinode.ib_port_rate), not here."""
    if not links:
        return [Finding(NETDEV_ID, Verdict.UNKNOWN, "no interface could be read from this ethtool output", "host",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `ethtool <if>` output.",
                        SRC_ETHTOOL)]
    out = []
    for e in links:
        speed = (Msg("{mbit} Mb/s ({gbit:g} Gb/s)", mbit=e.speed_mbit_s, gbit=e.speed_mbit_s / 1000)
                 if e.speed_mbit_s else Msg("speed not reported"))
        common = e.common_mbit_s
        if e.link is not False and e.speed_mbit_s and common and e.speed_mbit_s < common:
            # both ends offer more than the link runs at: a downshift (held-out round 91: 100 Mb/s of 1000)
            out.append(Finding(NETDEV_ID, Verdict.WARN,
                               Msg("{name}: the link runs at {speed}, though both ends advertise {common} Mb/s: it "
                                   "negotiated down", name=e.name, speed=speed, common=common), e.name, e.lines,
                               "A gigabit-or-faster link that settles lower usually has a damaged cable or a bad pair "
                               "(copper needs all four pairs for 1000BASE-T), a bad transceiver or switch port: reseat "
                               "or replace the cable, then `ethtool -r <if>` to renegotiate and read Speed again.",
                               f"{SRC_ETHTOOL}; IEEE 802.3 clause 28 (auto-negotiation: the highest common mode)"))
        elif e.link is False and e.link_note:
            # the driver names why the link is down (the kernel's link extended state, e.g. "Cable issue, Unsupported
            # cable"): a fault, not an unused port
            out.append(Finding(NETDEV_ID, Verdict.FAIL, Msg("{name}: no link, and the driver says why: {note}",
                                                            name=e.name, note=e.link_note), e.name, e.lines[-3:],
                               "Fit a cable or transceiver the NIC supports at this speed (check it with `ethtool -m "
                               "<if>` and the NIC's firmware release notes for qualified cables), or set a speed the "
                               "module supports; then read `ethtool <if>` again.",
                               f"{SRC_ETHTOOL}; the kernel's ethtool netlink interface, link extended state "
                               "(https://docs.kernel.org/networking/ethtool-netlink.html: ETHTOOL_LINK_EXT_STATE_* "
                               "and substates such as CABLE_ISSUE / UNSUPPORTED_CABLE, printed after 'Link detected')"))
        elif e.link is False:
            out.append(Finding(NETDEV_ID, Verdict.WARN, Msg("{name}: no link detected (no carrier)", name=e.name),
                               e.name, e.lines[-3:],
                               "Check the cable or transceiver and the switch port (`ethtool -m <if>` reads the "
                               "transceiver; `ip link show <if>`); if the port is unused here, say so and leave it.",
                               SRC_ETHTOOL))
        elif e.link is None:
            out.append(Finding(NETDEV_ID, Verdict.UNKNOWN, Msg("{name}: this output does not say whether a link is "
                                                               "detected", name=e.name), e.name, e.lines[:3],
                               "Paste the whole `ethtool <if>` output (its last line is 'Link detected').", SRC_ETHTOOL))
        elif not e.speed_mbit_s or e.duplex.lower() == "half":
            out.append(Finding(NETDEV_ID, Verdict.WARN, Msg("{name}: link detected, but {speed}, duplex {duplex}",
                                                            name=e.name, speed=speed, duplex=e.duplex or "?"),
                               e.name, e.lines, "A link that negotiated no speed or half duplex: check the cable and "
                               "the switch port's speed/autonegotiation settings.", SRC_ETHTOOL))
        else:
            out.append(Finding(NETDEV_ID, Verdict.PASS, Msg("{name}: link detected at {speed}, {duplex} duplex",
                                                            name=e.name, speed=speed, duplex=e.duplex),
                               e.name, e.lines, "", SRC_ETHTOOL))
    return out


LANE_NAMES = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 10.3125: "FDR10", 14.0625: "FDR", 25.78125: "EDR", 53.125: "HDR",
              106.25: "NDR", 212.5: "XDR"}
"""iblinkinfo's per-lane signalling rate (Gb/s) -> the InfiniBand speed's name (IBTA; iblinkinfo(8) prints the lane
rate, ibstat the port's 4X data rate)."""
SRC_IBLINK = ("iblinkinfo(8), infiniband-diags (https://github.com/linux-rdma/rdma-core/tree/master/infiniband-diags/man): "
              "width, lane speed, port and physical state of every link, 'Could be' when both ends support more")


def judge_iblinkinfo(links: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_port_state`` over the fabric's links as ``iblinkinfo`` lists them: an Initialize/Armed link (no
    subnet manager configured it) fails; an Active link narrower than the fabric's usual width, one iblinkinfo says
    "Could be" faster, or an HCA port that is down warns; switch ports down with nothing attached are unused ports,
    counted; otherwise a pass naming the widths and speeds (HCAs of one speed on a faster switch are normal)."""
    if not links:
        return [Finding(STATE_ID, Verdict.UNKNOWN, "no link could be read from this iblinkinfo output", "fabric",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `iblinkinfo` output.",
                        SRC_IBLINK)]
    active = [x for x in links if x.state.lower() == "active"]
    widths = Counter(x.width for x in active if x.width)
    usual = widths.most_common(1)[0][0] if widths else ""
    out: list[Finding] = []

    def name(x: Any) -> str:
        return f"{x.node} port {x.port}" + (f" -> {x.peer}" if x.peer else "")

    for x in links:
        st = x.state.lower()
        if st in ("init", "initialize", "armed"):
            out.append(Finding(STATE_ID, Verdict.FAIL, Msg("{link} is {state}/{phys}: the physical link is up but no "
                                                           "subnet manager has configured it", link=name(x),
                                                           state=x.state, phys=x.phys), name(x), (x.line,), SM_REMEDY,
                               SRC_IBLINK))
        elif st == "active" and usual and x.width and x.width != usual and int(x.width[:-1] or 0) < int(usual[:-1] or 0):
            out.append(Finding(STATE_ID, Verdict.WARN, Msg("{link} trained at {width}, the fabric's links run at {usual}: "
                                                           "lanes are missing (cable or port)", link=name(x),
                                                           width=x.width, usual=usual), name(x), (x.line,),
                               "Reseat or replace the cable and check both ports (`mlxlink -d <dev>` shows the lanes); "
                               "a link that trains narrow carries a fraction of its bandwidth.", SRC_IBLINK))
        elif st == "active" and x.could_be:
            out.append(Finding(STATE_ID, Verdict.WARN, Msg("{link} runs at {width} {rate} Gb/s per lane ({could}: both "
                                                           "ends support more)", link=name(x), width=x.width,
                                                           rate=f"{x.lane_gbps:g}" if x.lane_gbps else "?",
                                                           could=x.could_be), name(x), (x.line,),
                               "Check the cable's rating and the port speed settings of both ends; replace the cable if "
                               "it is the slower part.", SRC_IBLINK))
        elif st == "down" and not x.switch:
            out.append(Finding(STATE_ID, Verdict.WARN, Msg("{link} is Down ({phys}): this HCA port has no link",
                                                           link=name(x), phys=x.phys), name(x), (x.line,),
                               "Check the cable and the switch port; if the port is unused here, say so.", SRC_IBLINK))
    if out:
        return out
    speeds = Counter(f"{x.width} {LANE_NAMES.get(x.lane_gbps or 0, f'{x.lane_gbps:g} Gb/s per lane')}"
                     for x in active if x.width)
    unused = [x for x in links if x.state.lower() == "down" and x.switch and not x.peer]
    summary = ", ".join(f"{n} x {k}" for k, n in speeds.most_common())
    return [Finding(STATE_ID, Verdict.PASS, Msg("{n} link(s) Active/LinkUp ({summary})", n=len(active),
                                                summary=summary or "-")
                    + (Msg("; {m} switch port(s) down with nothing attached (unused)", m=len(unused)) if unused else ""),
                    "fabric", tuple(x.line for x in active[:8]), "", SRC_IBLINK)]


# ------------------------------------------------------------------ mlxlink: a port's state, mlxlink's advice, BER

SRC_MLXLINK = ("NVIDIA Firmware Tools (MFT) documentation, 'mlxlink Utility' "
               "(https://docs.nvidia.com/networking/display/mftv4320/mlxlink+Utility): Operational Info (State, "
               "Physical state, Speed, Width, FEC), Troubleshooting Info (Status Opcode 0 / Recommendation 'No issue "
               "was observed'), -c Physical Counters and BER Info")
SRC_BER = ("NVIDIA ibdiagnet User Manual, 'Bit Error Rate (BER)' "
           "(https://docs.nvidia.com/networking/display/ibdiagnetusermanualv219/Bit+Error+Rate+(BER)): the BER test's "
           "default threshold is 10^-12")
BER_LIMIT = 1e-12
"""Effective (post-FEC) bit error rate above which a link warns: ibdiagnet's BER test default threshold (SRC_BER).
The raw (pre-FEC) BER of HDR/NDR links is far higher by design and is reported, never judged."""
LINK_COUNTERS = ("Effective Physical Errors", "Link Down Counter", "Link Error Recovery Counter")
"""mlxlink -c counters that a healthy link keeps at 0 since they were last cleared: errors FEC could not correct,
link drops, link retrains (SRC_MLXLINK)."""


def judge_mlxlink(ports: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Each mlxlink report: the port's state (``multinode.ib_port_state``, or ``health.nvlink`` for an NVLink port of a
    GPU): not Active fails; Active with a non-zero troubleshooting Status Opcode warns quoting mlxlink's own
    Recommendation; else a pass naming speed, width and FEC. With ``-c``, its counters (``multinode.ib_counters``):
    uncorrected (effective) errors, link downs or error recoveries above 0, or an effective BER above
    :data:`BER_LIMIT`, warn; all clear passes with the BERs and the minutes since the counters were cleared."""
    if not ports:
        return [Finding(STATE_ID, Verdict.UNKNOWN, "no port could be read from this mlxlink output", "fabric",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `mlxlink -d <dev>` "
                        "output (its Operational Info and Troubleshooting Info sections).", SRC_MLXLINK)]
    out: list[Finding] = []
    typed = exp.get("command")  # explain: the command typed at the prompt above this output ("mlxlink -d mlx5_3 -c")
    dev = re.search(r"\s-d\s+(\S+)", typed) if isinstance(typed, str) and "mlxlink" in typed else None
    for i, p in enumerate(ports, 1):
        who = p.device or (dev.group(1) if dev and len(ports) == 1 else
                           Msg("mlxlink report {i} of {n}", i=i, n=len(ports)) if len(ports) > 1 else "this port")
        state, phys = p.get("State", "Operational Info"), p.get("Physical state", "Operational Info")
        speed, width, fec = p.get("Speed"), p.get("Width"), p.get("FEC")
        nvlink = speed.lower().startswith("nvlink")
        fid = "health.nvlink" if nvlink else STATE_ID
        opcode, rec = p.get("Status Opcode").strip(), p.get("Recommendation").strip()
        link = joined(", ", [x for x in (speed, width and f"{width} width", fec and f"FEC {fec}") if x])
        ev = tuple(ln for ln in p.lines if ln.split(":")[0].strip() in (
            "State", "Physical state", "Speed", "Width", "Status Opcode", "Recommendation"))
        if not state:
            out.append(Finding(fid, Verdict.UNKNOWN, Msg("{who}: this mlxlink output does not show the port's State",
                                                         who=who), who, p.lines[:4],
                               "Paste the Operational Info section of `mlxlink -d <dev>`.", SRC_MLXLINK))
        elif state.lower() != "active":
            out.append(Finding(fid, Verdict.FAIL, Msg("{who}: the port is {state} (physical state {phys}): the link "
                                                      "is not up", who=who, state=state, phys=phys or "?")
                               + (Msg("; mlxlink recommends: {rec}", rec=rec) if rec and rec.upper() != "N/A" else ""),
                               who, ev, "Check the cable or transceiver at both ends and the peer port (switch port "
                               "enabled, same speed); `mlxlink -d <dev> -m` reads the module; reseat or replace the "
                               "cable, then read the port again.", SRC_MLXLINK))
        elif re.match(r"IB-(?:SDR|DDR)\b", speed):
            # 2.5 or 5 Gb/s per lane: the first InfiniBand generations (2001-2005); an HCA of today lands there only
            # when its enabled speeds or the cable allow nothing faster, far below any GPU training fabric
            enabled = p.get("Enabled Link Speed")
            out.append(Finding(fid, Verdict.FAIL,
                               Msg("{who}: Active at {link}, the slowest InfiniBand speed (SDR 2.5 / DDR 5 Gb/s per "
                                   "lane): far below any GPU training fabric", who=who, link=link or speed)
                               + (Msg("; the port's enabled link speeds are {enabled}", enabled=enabled)
                                  if enabled else ""), who,
                               ev + tuple(ln for ln in p.lines if ln.split(":")[0].strip() in (
                                   "Enabled Link Speed", "Supported Cable Speed")),
                               "Read the port's enabled speeds (`mlxlink -d <dev>`: Enabled Link Speed) and the cable's "
                               "(Supported Cable Speed, `mlxlink -d <dev> -m`): enable the adapter's speeds (`mlxlink "
                               "-d <dev> --speeds EDR,HDR,NDR` or mlxconfig), use a cable rated for them, and check the "
                               "switch port's speed setting.", SRC_MLXLINK))
        elif opcode not in ("", "0", "N/A") and rec and "no issue" not in rec.lower():
            out.append(Finding(fid, Verdict.WARN, Msg("{who}: Active at {link}, but mlxlink's troubleshooting reports "
                                                      "status opcode {opcode}: {rec}", who=who, link=link or "?",
                                                      opcode=opcode, rec=rec), who, ev,
                               "Do what mlxlink recommends, then clear the counters (`mlxlink -d <dev> -pc`), run "
                               "traffic and read `mlxlink -d <dev> -c` again.", SRC_MLXLINK))
        else:
            said = Msg("; mlxlink's troubleshooting: {rec}", rec=rec) if rec and rec.upper() != "N/A" else ""
            out.append(Finding(fid, Verdict.PASS, Msg("{who}: Active at {link}", who=who, link=link or "?") + said,
                               who, ev, "", SRC_MLXLINK))
        if p.has_counters:
            out.append(_mlxlink_counters(p, who))
    return out


def _mlxlink_counters(p: Any, who: str) -> Finding:
    """``multinode.ib_counters`` from one mlxlink -c report (:func:`judge_mlxlink`)."""
    counts = {k: p.number(k) for k in LINK_COUNTERS}
    eff_ber, raw_ber, minutes = p.number("Effective Physical BER"), p.number("Raw Physical BER"), p.number(
        "Time Since Last Clear [Min]")
    bad = [f"{k} {v:g}" for k, v in counts.items() if v]
    ev = tuple(ln for ln in p.lines if ln.split(":")[0].strip() in (
        *LINK_COUNTERS, "Effective Physical BER", "Raw Physical BER", "Time Since Last Clear [Min]"))
    high = eff_ber is not None and eff_ber > BER_LIMIT
    bers = joined(", ", [x for x in (eff_ber is not None and not high and Msg("effective BER {ber}",
                                                                              ber=p.get("Effective Physical BER")),
                                      raw_ber is not None and Msg("raw BER {ber} (before FEC, not judged)",
                                                                  ber=p.get("Raw Physical BER"))) if x])
    since = Msg(" over {minutes:g} min since the counters were cleared", minutes=minutes) if minutes else ""
    if bad or high:
        above: list[str] = [Msg("effective BER {ber} above 1E-12", ber=p.get("Effective Physical BER"))] if high else []
        return Finding(COUNTERS_ID, Verdict.WARN, Msg("{who}: ", who=who) + joined(", ", bad + above) + since
                       + (Msg(" ({bers})", bers=bers) if bers else ""), who, ev,
                       "Errors FEC could not correct, link drops or retrains: clear the counters (`mlxlink -d <dev> -pc`), "
                       "run traffic and read them again; counts that grow mean a bad cable, transceiver or port (reseat "
                       "or replace it, check the switch side too).", SRC_MLXLINK + "; " + SRC_BER)
    if not any(v is not None for v in counts.values()) and eff_ber is None:
        return Finding(COUNTERS_ID, Verdict.UNKNOWN, Msg("{who}: the counters section holds no error count or BER",
                                                         who=who), who, ev or p.lines[-4:],
                       "Paste the whole `mlxlink -d <dev> -c` output.", SRC_MLXLINK)
    return Finding(COUNTERS_ID, Verdict.PASS, Msg("{who}: no uncorrected error, link down or recovery", who=who) + since
                   + (Msg(" ({bers})", bers=bers) if bers else ""), who, ev, "", SRC_MLXLINK + "; " + SRC_BER)


# ------------------------------------------------------------------ ibswinfo: an unmanaged switch's health

SWITCH_ID = "multinode.ib_switch"
SRC_IBSWINFO = ("ibswinfo (https://github.com/stanford-rc/ibswinfo): reads an unmanaged NVIDIA/Mellanox switch's "
                "inventory, power supplies (status, DC power, fan), fans and temperature through its MST registers")


def judge_ibswinfo(info: Any, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_switch``: a power supply, its DC power or its fan, or the switch's fans, not OK warns (the
    switch runs on what is left: no redundancy, and a second failure takes its links down); all OK passes with the
    temperature reported (ibswinfo shows no threshold to judge it against)."""
    if info is None:
        return [Finding(SWITCH_ID, Verdict.UNKNOWN, "no switch report could be read from this ibswinfo output", "fabric",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `ibswinfo -d <dev>` "
                        "output.", SRC_IBSWINFO)]
    name = " ".join(x for x in (info.identity.get("product name", ""), info.identity.get("part number", ""),
                                info.identity.get("serial number", "")) if x) or "the switch"
    bad: list[str] = []
    for psu, f in info.psus.items():
        for key in ("status", "DC power", "fan status"):
            v = f.get(key, "")
            if v and v.upper() != "OK":
                bad.append(f"{psu} {key} {v}")
    if info.fan_status and info.fan_status.upper() != "OK":
        bad.append(f"fan status {info.fan_status}")
    temp = (Msg("; {t:g} °C (max {m:g} °C since boot; not judged: ibswinfo shows no limit)", t=info.temperature_c,
                m=info.max_temperature_c) if info.temperature_c is not None and info.max_temperature_c is not None
            else Msg("; {t:g} °C (not judged)", t=info.temperature_c) if info.temperature_c is not None else "")
    ev = tuple(ln for ln in info.lines if any(w in ln for w in ("status", "DC power", "temperature", "max temp",
                                                               "part number", "product name")))
    if bad:
        return [Finding(SWITCH_ID, Verdict.WARN, Msg("{name}: {problems}: the switch runs without its redundancy",
                                                     name=name, problems=", ".join(bad)) + temp, name, ev,
                        "Reseat the power cord and the power supply, check the PDU feed; replace the power supply or "
                        "fan module if it stays in error (a second failure takes the switch and its links down).",
                        SRC_IBSWINFO)]
    return [Finding(SWITCH_ID, Verdict.PASS, Msg("{name}: {n} power supplies and the fans report OK", name=name,
                                                 n=len(info.psus)) + temp, name, ev, "", SRC_IBSWINFO)]


# ------------------------------------------------------------------ show_gids (RoCE GID table)

ROCE_GID_ID = "multinode.roce_gid"
SRC_GID = ("NCCL Environment Variables, NCCL_IB_GID_INDEX (the GID index used in RoCE mode; -1, the default of recent "
           "releases, selects it dynamically), NCCL_IB_ROCE_VERSION_NUM (default 2) and NCCL_IB_ADDR_FAMILY (default "
           "AF_INET), https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html; NCCL source "
           "src/transport/net_ib (IB_GID_INDEX default 0 in 2.19, -1 later), https://github.com/NVIDIA/nccl; Juniper "
           "JVD, 'How to Run NCCL Tests Using Autoconfigured IPv6 Address' (from NCCL 2.21 the GID index need not be "
           "given), https://www.juniper.net/documentation/us/en/software/jvd/jvd-ai-dc-evpn-multitenancy/"
           "appendix_d_how_to_run_nccl_tests_using_autoconfigured_ipv6_address.html; "
           "sysfs-class-infiniband (ports/N/gids, gid_attrs/types), "
           "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband")


def judge_show_gids(rows: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.roce_gid`` from ``show_gids``: per RDMA port, whether RoCE traffic between nodes has a GID to use.
    A RoCE v2 GID carrying an IPv4 address (or a global IPv6 one) passes, with its index for an NCCL too old to pick
    it itself; only link-local RoCE v2 GIDs (the interface has no IP address: not routable between nodes) or only
    RoCE v1 GIDs warn; a port with no RoCE v2 GID on an ``ib*`` or nameless interface is InfiniBand, not judged."""
    none = re.search(r"^\s*n_gids_found=0\s*$", text, re.M)
    if not rows and none:  # show_gids' own count: the RDMA devices it saw hold no GID at all
        return [Finding(ROCE_GID_ID, Verdict.FAIL,
                        N_("show_gids found no GID (n_gids_found=0): no RDMA port here has an address RoCE or "
                           "InfiniBand traffic can use, so NCCL's IB/RoCE transport cannot connect"), "node",
                        (none.group(0).strip(),),
                        N_("Check that the RDMA devices are there (`ibv_devices`, `rdma link`) and that their ports are "
                           "up with an IP address on the RoCE interface; in a container or pod, pass the RDMA devices "
                           "(/dev/infiniband, the RDMA device plugin's resource) and the host network or an SR-IOV VF."),
                        SRC_GID)]
    if not rows:
        return [Finding(ROCE_GID_ID, Verdict.UNKNOWN, "no GID rows could be read from this show_gids output", "node",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole `show_gids` output (or `ibv_devinfo -v`, whose GID lines say the same).", SRC_GID)]
    ports: dict[tuple[str, int], list[Any]] = {}
    for r in rows:
        ports.setdefault((r.dev, r.port), []).append(r)
    good: list[str] = []
    indices: set[int] = set()
    out: list[Finding] = []
    ev_good: list[str] = []
    for (dev, port), rs in ports.items():
        netdev = next((r.netdev for r in rs if r.netdev), "")
        where = (f"{dev} port {port}" if dev else f"port {port}") + (f" ({netdev})" if netdev else "")
        v2 = [r for r in rs if r.ver == "v2"]
        v4 = [r for r in v2 if r.ipv4]
        v6 = [r for r in v2 if not r.ipv4 and not r.gid.startswith("fe80") and "ffff" not in r.gid.split(":")[:6]]
        if v4 or v6:
            pick = (v4 or v6)[0]
            indices.add(pick.index)
            good.append(f"{where} index {pick.index} = {pick.ipv4 or pick.gid}")
            ev_good.append(pick.line)
        elif v2 and rs[-1] is rows[-1] and rs[-1].ver == "v1" and rs[-1].ipv4:
            # show_gids lists each address as v1 then v2: a paste ending on the v1 row of an IPv4 address was cut
            # before its v2 row (held-out round 278), and the interface has an address
            out.append(Finding(ROCE_GID_ID, Verdict.SKIP,
                               Msg("{where}: not judged: the interface has an IP address ({ip}, RoCE v1 GID index "
                                   "{index}) and the paste ends there, before the RoCE v2 GID show_gids lists next "
                                   "for it", where=where, ip=rs[-1].ipv4, index=rs[-1].index), where,
                               tuple(r.line for r in rs[:6]), "Paste the whole `show_gids` output.", SRC_GID))
        elif v2:
            out.append(Finding(ROCE_GID_ID, Verdict.WARN,
                               Msg("{where}: only link-local RoCE v2 GIDs (fe80::): the interface has no IP address, "
                                   "so RoCE v2 traffic cannot be routed to other nodes and NCCL finds no IPv4 RoCE v2 "
                                   "GID to use", where=where), where, tuple(r.line for r in rs[:6]),
                               Msg("Give {netdev} its fabric IP address (netplan, NetworkManager or ifcfg), then run "
                                   "`show_gids` again: a RoCE v2 GID with that address appears.",
                                   netdev=netdev or "the port's interface"), SRC_GID))
        elif not netdev or netdev.startswith("ib"):
            out.append(Finding(ROCE_GID_ID, Verdict.SKIP,
                               Msg("{where}: no RoCE v2 GID, an InfiniBand port (its GID is the port GUID; "
                                   "NCCL_IB_GID_INDEX applies to RoCE)", where=where), where,
                               tuple(r.line for r in rs[:3]), "", SRC_GID))
        else:
            out.append(Finding(ROCE_GID_ID, Verdict.WARN,
                               Msg("{where}: only RoCE v1 GIDs: NCCL uses RoCE v2 by default "
                                   "(NCCL_IB_ROCE_VERSION_NUM=2) and RoCE v1 does not cross a router", where=where),
                               where, tuple(r.line for r in rs[:6]),
                               "Enable RoCE v2 on the port (the default of current NIC firmware and drivers; "
                               "`cma_roce_mode` for rdma_cm), give the interface an IP address, and run `show_gids` "
                               "again.", SRC_GID))
    if good:
        idx = (Msg("with an older NCCL set NCCL_IB_GID_INDEX={index}", index=next(iter(indices))) if len(indices) == 1
               else Msg("with an older NCCL the index differs by port ({indices}): set NCCL_IB_GID_INDEX per node",
                        indices=", ".join(str(i) for i in sorted(indices))))
        out.insert(0, Finding(ROCE_GID_ID, Verdict.PASS,
                              Msg("RoCE v2 GIDs with an IP address: {ports}; NCCL 2.21 and later pick them by "
                                  "themselves (NCCL_IB_GID_INDEX unset); {idx}", ports=SEMICOLON.join(good), idx=idx),
                              "node", tuple(ev_good[:8]), "", SRC_GID))
    return out


# ------------------------------------------------------------------ fi_info


SRC_FI_INFO = ("libfabric fi_info(1) and fi_getinfo(3): -FI_ENODATA (-61) when no provider matches "
               "(https://ofiwg.github.io/libfabric/main/man/fi_info.1.html); AWS EFA user guide: `fi_info -p efa -t "
               "FI_EP_RDM` lists the EFA device when it is usable (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/"
               "efa-start.html)")
_FI_RDMA = ("efa", "verbs", "psm3", "opx", "cxi")
"""libfabric providers that move data over an RDMA NIC (EFA, InfiniBand/RoCE verbs, Omni-Path, Slingshot), unlike
tcp, udp, shm and sockets (fi_provider(7))."""


_FI_LINK_STATE = lazy_re(r"^\s*state:\s*FI_LINK_\w+\s*$")
"""``fi_info -v``'s link attribute (struct fi_link_attr's state: FI_LINK_UP, FI_LINK_DOWN, FI_LINK_UNKNOWN)."""


def judge_fi_info(info: Any, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``fi_info`` -> :data:`STATE_ID`: fi_getinfo's error (no provider matched) fails when it asked for an RDMA
    provider (``-p efa``: no usable EFA device) and is unknown otherwise; an RDMA provider's reliable-datagram (RDM)
    endpoints pass, fewer EFA domains than the plan's nics_per_node warn; only non-RDMA providers warn (a fault where
    the node has RDMA NICs); ``-v``'s link state FI_LINK_DOWN fails."""
    if info.error is not None:
        code, line = info.error
        if info.asked and info.asked in _FI_RDMA or info.asked == "":
            return [Finding(STATE_ID, Verdict.FAIL if info.asked else Verdict.UNKNOWN,
                            Msg("libfabric found no {what} provider (fi_getinfo {code}: no provider matched): no "
                                "{what} device is usable on this node, so MPI and NCCL's OFI plugin cannot use it",
                                what=info.asked, code=code) if info.asked else
                            Msg("libfabric matched no provider at all (fi_getinfo {code}); which one was asked for is "
                                "not in the paste", code=code), "host", (line,),
                            N_("Check the device: `lspci | grep -i efa` (or the HCA) and `ls /dev/infiniband`; on AWS "
                               "the instance type must support EFA and be launched with an EFA interface, and the EFA "
                               "installer must have run (it installs the efa kernel module and libfabric); inside a "
                               "container pass /dev/infiniband. Then `fi_info -p efa -t FI_EP_RDM` must list it."),
                            SRC_FI_INFO)]
    eps = info.endpoints
    if not eps:
        return [Finding(STATE_ID, Verdict.UNKNOWN, N_("fi_info lists no provider block"), "host",
                        tuple(ln for ln in text.splitlines()[:4] if ln.strip()),
                        N_("Paste the whole `fi_info -p efa -t FI_EP_RDM` (or `fi_info -l`) output."), SRC_FI_INFO)]
    rdma = [e for e in eps if e[0].split(";")[0] in _FI_RDMA]
    if not rdma:
        provs = ", ".join(dict.fromkeys(e[0] for e in eps))
        return [Finding(STATE_ID, Verdict.WARN,
                        Msg("libfabric lists only {provs}: no RDMA provider (efa, verbs), so MPI and NCCL's OFI plugin "
                            "would move data over TCP; a fault if this node has EFA or InfiniBand/RoCE NICs",
                            provs=provs), "host", tuple(e[4] for e in eps[:3]),
                        N_("On a node with RDMA NICs check their driver and /dev/infiniband, then `fi_info -p efa` (or "
                           "-p verbs) must list them."), SRC_FI_INFO)]
    rdm = [e for e in rdma if e[3] == "FI_EP_RDM"] or rdma
    states = [ln.strip() for ln in text.splitlines() if _FI_LINK_STATE.match(ln)]
    down = [x for x in states if "FI_LINK_DOWN" in x]
    if down:  # fi_info -v's link_attr: the NIC's link is not up (fi_fabric(3), struct fi_link_attr, enum fi_link_state)
        return [Finding(STATE_ID, Verdict.FAIL,
                        Msg("libfabric lists the {prov} provider, but its link state is {state}: the NIC's link is not "
                            "up, so nothing crosses the fabric from here", prov=rdma[0][0].split(";")[0],
                            state=down[0].split(":", 1)[1].strip()), "host", tuple(states[:4]),
                        N_("Check the NIC's link (cable, switch port, `ip link`, the fabric manager of the network), "
                           "then `fi_info -v` must show state: FI_LINK_UP."), SRC_FI_INFO)]
    up = Msg("; link state FI_LINK_UP") if states and all("FI_LINK_UP" in x for x in states) else ""
    domains = list(dict.fromkeys(re.sub(r"-(?:rdm|dgrm|dgram)$", "", e[2]) for e in rdm if e[2]))  # a device's two domains
    prov = rdm[0][0].split(";")[0]
    want = to_float(exp.get("nics_per_node"), text=False, positive=True)
    ev = tuple(dict.fromkeys(e[4] for e in rdm[:2])) + tuple(
        ln.strip() for ln in text.splitlines() if re.match(r"^\s+domain:", ln))[:4]
    if prov == "efa" and want and len(domains) < want:
        return [Finding(STATE_ID, Verdict.WARN,
                        Msg("libfabric lists {n} EFA device(s) ({domains}) but the plan says {want:g} NICs per node",
                            n=len(domains), domains=", ".join(domains), want=want), "host", ev,
                        N_("Check the missing EFA interfaces: the instance's network interfaces (EFA type) and `ls "
                           "/dev/infiniband`; inside a container pass every uverbs device."), SRC_FI_INFO)]
    return [Finding(STATE_ID, Verdict.PASS,
                    Msg("libfabric lists the {prov} provider with {types} endpoints on {n} device(s) ({domains}): the "
                        "RDMA fabric is usable by MPI and NCCL's OFI plugin", prov=prov,
                        types="/".join(dict.fromkeys(e[3] for e in rdma if e[3])) or "RDMA", n=len(domains) or 1,
                        domains=", ".join(domains) or prov)
                    + (Msg("; fabric {fabrics}", fabrics=", ".join(fabrics)) if (fabrics := list(dict.fromkeys(
                        e[1] for e in rdm if e[1] and e[1] != prov))) else "") + up, "host", ev + tuple(states[:1]), "",
                    SRC_FI_INFO)]


SRC_OSU = ("OSU Micro-Benchmarks (http://mvapich.cse.ohio-state.edu/benchmarks/): osu_bw / osu_bibw report bandwidth in "
           "MB/s (10^6 bytes) per message size, osu_latency the one-way latency in us; D and H say whether each side's "
           "buffer is in GPU (device) or host memory; --validation checks the data received")
_OSU_CRASH = lazy_re(r"\bCaught signal \d+|\bSegmentation fault\b|\bBus error\b|\bcore dumped\b|"
                     r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|\bexited on signal \d+")
"""A rank that died (UCX's and Open MPI's crash reports, the shell's signal words)."""
OSU_SLOWEST_GBIT_S = 25.0
"""The slowest RDMA link a GPU cluster's fabric uses (25 Gb/s Ethernet RoCE; InfiniBand is 56 Gb/s FDR and up, InfiniBand
Trade Association roadmap) and below any PCIe link a GPU sits on (Gen3 x4 is ~32 Gb/s): a large-message OSU bandwidth
under it, inside a node or across, is the fabric or GPU path not in use (derived)."""


def judge_osu_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_bandwidth`` from an OSU micro-benchmark (MPI point-to-point between two ranks, in one node or
    across a NIC: the output does not say which). A row whose Validation is Fail fails (the data arrived wrong). A
    bandwidth test's peak is judged against 0.8 x the plan's nic_gbit_s when the plan gives it (at or above: the path
    is not slower than the NIC; below it warns: slow if the ranks were on two nodes); without it a peak under
    :data:`OSU_SLOWEST_GBIT_S` from 1 MiB on warns (slower than any GPU fabric or GPU PCIe link: a TCP or
    shared-memory fallback, or a staged copy), else it is reported, not graded. Latency tests are reported."""
    from wizard.parsers.fabric import parse_osu

    run = parse_osu(text)
    return _osu(run, text, exp) + _osu_other_words(run, text)


def _osu_other_words(run: Any, text: str) -> list[Finding]:
    """What the MPI library or the launcher printed around the benchmark (a UCX ERROR that the locked-memory limit
    is too low, a failed device open), in their own words (:mod:`wizard.rules.toolwords`): a warning or failure
    there is the run's too, even when the benchmark's rows came out."""
    from wizard.rules import toolwords

    rows = {r[3] for r in run.rows}
    rest = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#") and ln.strip() not in rows
            and not _OSU_CRASH.search(ln)]
    return [f for f in toolwords.judge("\n".join(rest) + "\n") if f.verdict in (Verdict.WARN, Verdict.FAIL)] if rest else []


def _osu(run: Any, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    title = run.header.lstrip("#").strip() or Msg("OSU {test} test", test=run.test or "?")  # its own words, as printed
    what = Msg("{title}{buf}", title=title, buf=Msg(" ({buffers})", buffers=run.buffers) if run.buffers else "")
    if not run.rows:
        return [Finding(PERFTEST_ID, Verdict.UNKNOWN, Msg("{what}: no message size was measured in this output (it is "
                                                          "cut, or the run stopped before its first size)", what=what),
                        "node", tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole output, from its '# OSU' title to its largest size.", SRC_OSU)]
    crash = [ln.strip() for ln in text.splitlines() if _OSU_CRASH.search(ln)]
    if crash:  # the benchmark died part-way: the sizes after the last row were never measured
        return [Finding(PERFTEST_ID, Verdict.FAIL, Msg("{what}: the run crashed after the {size}-byte message size: "
                                                       "{line}", what=what, size=run.rows[-1][0], line=crash[0][:200]),
                        "node", tuple([run.rows[-1][3]] + crash[:3]),
                        "Read the crash's stack (the library it died in: UCX, libfabric, the CUDA driver) and the "
                        "kernel log on that node (Xid, AER); rerun with another transport (UCX_TLS, FI_PROVIDER) to "
                        "tell a library fault from a GPU or NIC one.", SRC_OSU)]
    failed = [r for r in run.rows if r[2] == "Fail"]
    if failed:
        return [Finding(PERFTEST_ID, Verdict.FAIL, Msg("{what}: the data received failed validation at {n} message "
                                                       "size(s), from {size} bytes", what=what, n=len(failed),
                                                       size=failed[0][0]), "node", tuple(r[3] for r in failed[:4]),
                        "Data arrived wrong between the two ranks: check the GPU and NIC under it (dmesg for Xid and "
                        "AER, the HCA's error counters), GPUDirect RDMA (nvidia_peermem) and the MPI/UCX/libfabric "
                        "settings; rerun on other GPUs or nodes to find the faulty one.", SRC_OSU)]
    if run.unit != "MB/s":
        low = min(r[1] for r in run.rows)
        return [Finding(PERFTEST_ID, Verdict.UNKNOWN, Msg("{what}: {low:g} us at the smallest size; bringup holds no "
                                                          "latency floor to judge it by", what=what, low=low), "node",
                        (run.header, run.rows[0][3]), "", SRC_OSU)]
    peak = max(run.rows, key=lambda r: r[1])
    gb, gbit = peak[1] / 1000, peak[1] * 8 / 1000
    big = max(r[0] for r in run.rows)
    said = Msg("{what}: peak {gb:.1f} GB/s ({gbit:.0f} Gb/s) at {size} bytes", what=what, gb=gb, gbit=gbit, size=peak[0])
    ev = (run.header, peak[3])
    nic = to_float(exp.get("nic_gbit_s"), text=False, positive=True)
    if nic is not None:
        ok = gbit >= 0.8 * nic
        return [Finding(PERFTEST_ID, Verdict.PASS if ok else Verdict.WARN,
                        said + (Msg(", at least 0.8 x the plan's {nic:g} Gb/s NIC", nic=nic) if ok else
                                Msg(", below 0.8 x the plan's {nic:g} Gb/s NIC: slow if the two ranks ran on two nodes",
                                    nic=nic)), "node", ev,
                        "" if ok else "Check that the MPI library uses the RDMA fabric (UCX_TLS / FI_PROVIDER, "
                        "`ucx_info -d`, `fi_info`), GPUDirect RDMA (nvidia_peermem loaded) for D D, and the NIC nearest "
                        "each GPU; then compare with `ib_write_bw --use_cuda` between the same nodes.", SRC_OSU)]
    if gbit < OSU_SLOWEST_GBIT_S and big >= 1 << 20:
        return [Finding(PERFTEST_ID, Verdict.WARN,
                        said + Msg(": below {floor:g} Gb/s, slower than any GPU cluster's RDMA fabric and any PCIe link a "
                                   "GPU sits on, so the transfer took a slow path (TCP or a shared-memory fallback, a "
                                   "staged copy through host memory)", floor=OSU_SLOWEST_GBIT_S), "node", ev,
                        "Check what the MPI library uses (UCX_TLS / FI_PROVIDER: `ucx_info -d`, `fi_info`; on Slingshot "
                        "the CXI provider), that it is built CUDA/ROCm-aware, and GPUDirect RDMA (nvidia_peermem) "
                        "for device buffers.", SRC_OSU)]
    return [Finding(PERFTEST_ID, Verdict.UNKNOWN,
                    said + Msg(": reported, not graded: the output does not say whether the ranks shared a node or what "
                               "the NIC's rate is (set the plan's nic_gbit_s to judge it)"), "node", ev,
                    "Compare with the NIC's line rate (a 200 Gb/s NIC carries about 24 GB/s) or with the GPUs' own "
                    "link inside one node.", SRC_OSU)]


SRC_NETDISCOVER = ("ibnetdiscover(8) (infiniband-diags, linux-rdma/rdma-core): each node's linked ports with the remote "
                   "end's LID and the link's width and speed; InfiniBand Architecture Specification Vol. 1, 4.1.3: LID "
                   "0xFFFF (65535) is the permissive LID, which no configured port carries: the subnet manager has not "
                   "assigned that port a LID, so it is not Active")
NO_LID = 65535


def judge_ibnetdiscover(links: list[Any], text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.ib_port_state`` over an ``ibnetdiscover`` topology: a linked port whose remote end has LID 65535
    (none assigned: the subnet manager has not brought it up, so it carries no traffic) fails, naming the nodes;
    otherwise a pass counting the links by rate. Ports the file does not list have no link: whether one was meant to
    be cabled, the file does not say, so they are not judged."""
    if not links:
        return [Finding(STATE_ID, Verdict.UNKNOWN, "no link could be read from this ibnetdiscover output", "fabric",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole `ibnetdiscover` output (its Switch and Ca blocks).", SRC_NETDISCOVER)]
    rates = Counter(x.rate for x in links if x.rate)
    summary = ", ".join(f"{n} x {r}" for r, n in rates.most_common())
    nodes = list(dict.fromkeys(x.node for x in links))
    nolid = [x for x in links if x.lid == NO_LID]
    if nolid:
        peers = list(dict.fromkeys(x.peer for x in nolid))
        return [Finding(STATE_ID, Verdict.FAIL,
                        Msg("{n} linked port(s) have no LID (lid 65535): the subnet manager has not brought them up, so "
                            "they carry no traffic: {peers}", n=len(nolid), peers=", ".join(peers[:8])
                            + (Msg(" (+{k} more)", k=len(peers) - 8) if len(peers) > 8 else "")), "fabric",
                        tuple(x.line for x in nolid[:6]),
                        "Check that a subnet manager runs and sees these ports (`sminfo`, `ibstat` on the host: State "
                        "Initializing means no SM configured it), that the host's HCAs are up (driver loaded, ports "
                        "enabled), and the SM's log for errors about them; then run `ibnetdiscover` again.",
                        SRC_NETDISCOVER)]
    return [Finding(STATE_ID, Verdict.PASS,
                    Msg("{n} links of {k} node(s) in this topology, every remote end with a LID ({rates}); ports not "
                        "listed have no link and are not judged", n=len(links), k=len(nodes), rates=summary or "-"),
                    "fabric", tuple(x.line for x in links[:4]), "", SRC_NETDISCOVER)]


SRC_MLXCONFIG = ("NVIDIA Firmware Tools (MFT) user manual, mlxconfig: 'query' with -e prints each parameter's Default, "
                 "Current and Next Boot value; a 'set' takes effect after a reboot or mlxfwreset ('Please reboot machine "
                 "to load new configurations'), https://docs.nvidia.com/networking/display/mftv4270/mlxconfig+-+changing+"
                 "device+configuration+tool")
HCA_CONFIG_ID = "multinode.hca_config"


def judge_mlxconfig_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``mlxconfig`` -> :data:`HCA_CONFIG_ID`: settings written but not loaded (mlxconfig's reboot request, or a
    parameter whose Current and Next Boot values differ) warn, naming them: the adapter runs with other settings than
    configured until a reboot or ``mlxfwreset``; current equal to next boot everywhere passes."""
    from wizard.parsers.fabric import parse_mlxconfig

    c = parse_mlxconfig(text)
    three = [(n, v, ln) for n, v, ln in c.rows if len(v) == 3]
    pending = [(n, v, ln) for n, v, ln in three if v[1] != v[2]]
    changed = [(n, v, ln) for n, v, ln in c.rows if len(v) == 2 and v[0] != v[1]] if c.reboot else []
    if pending or c.reboot:
        what = pending or changed
        names = ", ".join(f"{n} {v[-2]} -> {v[-1]}" for n, v, _ in what[:6])
        return [Finding(HCA_CONFIG_ID, Verdict.WARN,
                        Msg("the adapter's firmware settings are changed but not loaded{names}: until a reboot (or "
                            "`mlxfwreset`) it runs with its current values", names=f" ({names})" if names else ""),
                        "host", tuple([ln for _, _, ln in what[:4]] + ([c.reboot] if c.reboot else [])),
                        N_("Reboot the node (or `sudo mlxfwreset -d <device> reset` where supported), then check with "
                           "`mlxconfig -d <device> -e query` that Current equals Next Boot."), SRC_MLXCONFIG)]
    if not c.rows:
        return [Finding(HCA_CONFIG_ID, Verdict.UNKNOWN, Msg("no parameter could be read from this mlxconfig output"),
                        "host", tuple(ln for ln in text.splitlines() if ln.strip())[:3],
                        N_("Paste `mlxconfig -d <device> -e query`."), SRC_MLXCONFIG)]
    return [Finding(HCA_CONFIG_ID, Verdict.PASS,
                    Msg("{n} adapter firmware parameter(s) read{same}; no change waits for a reboot", n=len(c.rows),
                        same=Msg(", each with its current value equal to next boot's") if three else ""),
                    "host", tuple(ln for _, _, ln in c.rows[:3]), "", SRC_MLXCONFIG)]
