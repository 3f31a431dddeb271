"""GPU topology rules: ``nvidia-smi topo -m`` (GPU-GPU link types, CPU/NUMA affinity, GPU-NIC
affinity) and ``nvidia-smi topo -p2p r`` (peer-to-peer status).

The NVLink link counts per SKU come from :mod:`wizard.rules.nvlink` (``assets/nvlink_expected.csv``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from wizard.common import gpu_subject
from wizard.facts import facts_of
from wizard.model import Finding, Verdict
from wizard.parsers.topology import (
    P2P_CODES,
    Matrix,
    nv_count,
    parse_p2p_matrix,
    parse_topo_matrix,
)
from wizard.parsers.gpu import parse_pci
from wizard.rules.common import Outputs, garbled, missing
from wizard.rules.nvlink import SRC_NVLINK, sku_row, sku_row_by_device
from wizard.i18n import Msg, N_, joined, SEMICOLON

SRC_TOPO = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (topo -m legend: X, SYS, "
            "NODE, PHB, PXB, PIX, NV#); Azure HPC health checks, "
            "https://github.com/Azure/azurehpc-health-checks (check_hw_topology)")


SRC_NIC = ("NVIDIA GPUDirect RDMA guide (best performance when GPU and NIC share a PCIe switch), "
           "https://docs.nvidia.com/cuda/gpudirect-rdma/; nvidia-smi documentation, "
           "https://docs.nvidia.com/deploy/nvidia-smi/ (topo -m: PIX/PXB = same PCIe switch)")


SRC_P2P = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (topo -p2p legend: OK, CNS, "
           "GNS, TNS, NS, DR, U); NCCL troubleshooting, "
           "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html (P2P, ACS, IOMMU)")


SRC_FABRIC = ("NVIDIA Fabric Manager user guide, https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/ "
              "(on NVSwitch systems the GPUs join the NVLink fabric only with nvidia-fabricmanager running at the "
              "driver's version; until then CUDA/NCCL fall back to PCIe or fail); NVIDIA DGX H100/H200 user guide, "
              "https://docs.nvidia.com/dgx/dgxh100-user-guide/ and NVIDIA HGX platform, "
              "https://www.nvidia.com/en-us/data-center/hgx/ (every SXM GPU of the baseboard is NVLink-connected to "
              "every other through NVSwitch); nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ "
              "(topo -m: NV# = a bonded set of # NVLinks)")

FABRIC_REMEDY = ("Check the NVLink fabric: `nvidia-smi -q | grep -A2 Fabric` (State should read Completed, Status "
                 "Success), `systemctl status nvidia-fabricmanager` (running, at exactly the driver's version; "
                 "`sudo systemctl enable --now nvidia-fabricmanager`), `nvidia-smi nvlink -s` (links active); then "
                 "reset the GPUs or reboot and run `nvidia-smi topo -m` again. If links stay down after a cold boot, "
                 "involve the vendor (baseboard/NVSwitch).")

HGX_LAYOUT_MIN_NICS = 8
"""An HGX/DGX board gives its 8 SXM GPUs 8 compute NICs under the GPUs' own PCIe switches (NVIDIA DGX H100
user guide, https://docs.nvidia.com/dgx/dgxh100-user-guide/: 8 single-port ConnectX-7 for the compute
fabric, one per GPU; DGX A100 user guide, https://docs.nvidia.com/dgx/dgxa100-user-guide/: 8 ConnectX-6,
two per PCIe switch of two GPUs). 8 GPUs each with a PIX/PXB NIC, and at least this many NICs, is read as
that layout."""


def _board(out: Outputs, plan: Mapping[str, Any], mx: Matrix) -> tuple[dict[str, str] | None, str]:
    """The GPU SKU's NVLink row (``assets/nvlink_expected.csv``; SXM parts from ``assets/pci_ids.csv``)
    and how it was found: the plan's gpu_model, the GPUs' PCI device ids (the ``pci`` probe), or an
    HGX/DGX-like layout of the matrix itself (8 GPUs, each with its own NIC under its PCIe switch).
    (None, "") when nothing tells."""
    model = str(plan.get("gpu_model") or "")
    row = sku_row(model)
    if row:
        return row, f"the plan's gpu_model ({model})"
    o = out.get("pci")
    if o is not None and o.files:
        facts = facts_of(out).parse("pci", parse_pci, on="output")
        ids = sorted({g.device_id.lower().removeprefix("0x") for g in (facts.gpus if facts else []) if g.device_id})
        rows = [r for r in (sku_row_by_device(i) for i in ids) if r]
        if rows and len(rows) == len(ids):
            return rows[0], f"PCI device id 10de:{ids[0]}"
    gpus = [g for g in mx.rows if g.startswith("GPU")]
    if len(mx.gpus) == 8 and len(gpus) == 8 and len(mx.nics) >= HGX_LAYOUT_MIN_NICS:
        own = {g: [n for n in mx.nics if mx.rows[g].get(n) in _NEAR] for g in gpus}
        if all(own.values()) and len({n for v in own.values() for n in v}) >= 4:
            return ({"sku": "an HGX/DGX-like board", "mode": "all"},
                    f"the layout: {len(mx.gpus)} GPUs, {len(mx.nics)} NICs, each GPU with a NIC under its PCIe switch")
    return None, ""


def _nv_neighbours(mx: Matrix) -> dict[str, set[str]]:
    """GPU -> the GPUs it reaches over NV# in this matrix."""
    nb: dict[str, set[str]] = {g: set() for g in mx.gpus}
    for a, b, t in mx.gpu_pairs():
        if nv_count(t) is not None:
            nb[a].add(b)
            nb[b].add(a)
    return nb


def _gpu_index(name: str) -> int | None:
    m = re.fullmatch(r"GPU(\d{1,3})", name)
    return int(m.group(1)) if m else None


def _pair_subject(a: str, b: str) -> str:
    return f"{gpu_subject(_gpu_index(a))} and {gpu_subject(_gpu_index(b))}"


def topology(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.topology and health.gpu_nic_affinity from ``nvidia-smi topo -m``: every GPU pair's link
    type is reported; in a node where every pair is NVLink-connected, a pair bonded over fewer links than
    the others is a WARN (a link may be down; B8); a GPU whose nearest NIC is not PIX/PXB while NICs are
    present is a WARN."""
    fid = "health.topology"
    o = out.get("nvidia_smi_topo_m")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the GPU topology", remedy="Run `nvidia-smi topo -m` (no root needed).",
                        source=SRC_TOPO)]
    mx = facts_of(out).parse_text("nvidia_smi_topo_m", parse_topo_matrix)
    assert mx is not None
    if not mx.rows or not mx.gpus:
        return [garbled(fid, o, "nvidia-smi topo -m", mx.problems or o.lines()[:20], source=SRC_TOPO)]
    findings: list[Finding] = []
    pairs = mx.gpu_pairs()
    rows_ev = [x for x in [mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")] if x]
    gpu_rows = [r for r in mx.rows if r.startswith("GPU")]
    cut = len(gpu_rows) < len(mx.gpus)
    types: dict[str, int] = {}
    for _, _, t in pairs:
        types[t] = types.get(t, 0) + 1
    summary = joined(", ", [Msg("{n} pair(s) {link}", n=n, link=t) for t, n in sorted(types.items(), key=lambda kv: -kv[1])])
    if len(types) > 1:  # name the pairs of each link type (the minority types first)
        by_type: dict[str, list[str]] = {}
        for a, b, t in pairs:
            by_type.setdefault(t, []).append(f"{a}-{b}")
        summary = SEMICOLON.join(f"{t}: " + ", ".join(v[:12]) + (f" (+{len(v) - 12} more)" if len(v) > 12 else "")
                            for t, v in sorted(by_type.items(), key=lambda kv: len(kv[1])))
    nvs = [nv_count(t) for _, _, t in pairs]
    head = (Msg('{n_gpus} GPU(s)', n_gpus=len(mx.gpus)) + (Msg(' ({n_gpu_rows} rows in this excerpt)', n_gpu_rows=len(gpu_rows)) if cut else ''))
    if mx.inferred:
        head += (Msg(" (no header row: the column order was read from each row's X") + (Msg('; {n_unknown_columns} column(s) no row names are not judged', n_unknown_columns=len(mx.unknown_columns)) if mx.unknown_columns else '') + ')')
    nb = _nv_neighbours(mx)
    linked = [g for g, v in nb.items() if v]
    lost = [g for g, v in nb.items() if not v and any(mx.cell(g, o) for o in mx.gpus if o != g)
            and (not cut or g in gpu_rows)]  # an excerpt: a GPU without its row may bond with another row-less one
    clique = len(linked) >= 3 and all(b in nb[a] for a in linked for b in linked if a != b and mx.cell(a, b))
    if lost and clique:
        for g in lost:
            ev = tuple(x for x in [mx.header_line, mx.row_lines.get(g, "")] if x) or tuple(rows_ev[:20])
            ev += tuple(mx.row_lines[r] for r in linked if r in mx.row_lines)[:3]
            others = sorted({mx.cell(g, o) for o in linked if mx.cell(g, o)})
            findings.append(Finding(fid, Verdict.FAIL, Msg("{head}: {g} has lost its NVLink links: it reaches the other GPUs only over {others}, "
                                                           "while {a1} keep {cell} between each other", head=head, g=g, others='/'.join(others), a1=', '.join(linked[:8]), cell=mx.cell(linked[0], linked[1])), gpu_subject(_gpu_index(g)),
                                    ev, (Msg('Run `nvidia-smi nvlink -s -i ') + str(_gpu_index(g)) + Msg('` and `nvidia-smi -q -i ') + str(_gpu_index(g)) + Msg(' | grep -A2 Fabric` for that GPU; reset it or reboot; if its links stay down, reseat or replace the GPU/baseboard (vendor).')), SRC_FABRIC))
        pairs = [(a, b, t) for a, b, t in pairs if a not in lost and b not in lost]
        nvs = [nv_count(t) for _, _, t in pairs]
    board, how = _board(out, plan, mx) if pairs and all(n is None for n in nvs) else (None, "")
    if findings:  # a GPU that lost its links: said above
        pass
    elif pairs and all(n is None for n in nvs) and board and board.get("mode") in ("all", "bridge"):
        what = (Msg('NVLink/NVSwitch fabric down or Fabric Manager not running') if board.get('mode') == 'all' else Msg('NVLink bridge missing or its links down'))
        findings.append(Finding(fid, Verdict.WARN, Msg("{head}: no GPU pair is NVLink-connected, but {sku} (from {how}) should reach its peers "
                                                       "over NVLink: {what}; {summary}", head=head, sku=board['sku'], how=how, what=what, summary=summary),
                                _pair_subject(pairs[0][0], pairs[0][1]), tuple(rows_ev[:20]),
                                (FABRIC_REMEDY if board.get('mode') == 'all' else Msg('Power down and check the NVLink bridges are fitted and seated; then `nvidia-smi nvlink -s`.')), SRC_FABRIC))
    elif pairs and all(t == "SYS" for _, _, t in pairs) and not board:
        numas = {a.get("NUMA Affinity") for r, a in mx.affinity.items() if r.startswith("GPU")}
        one_numa = len(numas) == 1 and not numas & {None, "", "N/A"}
        findings.append(Finding(fid, Verdict.WARN, (head + f': {summary}: ' + (Msg("every GPU pair talks across the CPU interconnect (SYS), though all report one NUMA node (NUMA per socket may be off in the BIOS, or the sockets' memory interleaved)") if one_numa else Msg('no two GPUs share a CPU socket, so every GPU pair talks across the CPU interconnect (SYS)')) + Msg(', where peer-to-peer is slow or not supported')),
                                _pair_subject(pairs[0][0], pairs[0][1]), tuple(rows_ev[:20]),
                                "If the GPUs are meant to work together, put them under one socket (or one PCIe "
                                "switch); check `nvidia-smi topo -p2p r` and run an all-reduce to see what the path "
                                "delivers.", SRC_TOPO))
    elif pairs and all(n is None for n in nvs) and len(mx.gpus) > 1 and not board:
        findings.append(Finding(fid, Verdict.PASS, Msg("{head}: {summary} (PCIe only). bringup does not know the GPU model here, so this is not "
                                                       "judged as broken: PCIe cards have no NVLink. On an SXM board (HGX/DGX) the same matrix "
                                                       "would be a WARN: NVLink/NVSwitch fabric down or Fabric Manager not running; set gpu_model "
                                                       "in the plan to have it judged.", head=head, summary=summary), "host",
                                tuple(rows_ev[:20]), "", SRC_TOPO))
    elif pairs and all(n is not None for n in nvs):
        top = max(n for n in nvs if n is not None)
        low = [(a, b, t) for a, b, t in pairs if nv_count(t) is not None and nv_count(t) < top]  # type: ignore[operator]
        if low:
            findings.append(Finding(fid, Verdict.WARN, (Msg('{head}: every pair is NVLink-connected but ', head=head) + SEMICOLON.join((f'{a}-{b} {t}' for a, b, t in low[:8])) + Msg(' bond fewer links than the others (NV{top}): an NVLink may be down', top=top)),
                                    _pair_subject(low[0][0], low[0][1]), tuple(rows_ev[:20]),
                                    "Run `nvidia-smi nvlink -s` to see which link is inactive; reset or reboot, and "
                                    "reseat the GPU/baseboard if it stays down.", SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, Msg("{head}: {summary} (NVLink, {top} links bonded per pair)", head=head, summary=summary, top=top),
                                    "host", tuple(rows_ev[:20]), "", SRC_TOPO))
    elif pairs:
        row = sku_row(str(plan.get("gpu_model") or ""))
        non_nv = [(a, b, t) for a, b, t in pairs if nv_count(t) is None]
        if row and row.get("mode") == "all" and non_nv and any(n is not None for n in nvs):
            findings.append(Finding(fid, Verdict.FAIL, (Msg('{head}: {summary}; on {row} every GPU pair should be NVLink-connected, but ', head=head, summary=summary, row=row['sku']) + SEMICOLON.join((f'{a}-{b} {t}' for a, b, t in non_nv[:8])) + Msg(' go over PCIe')), _pair_subject(non_nv[0][0], non_nv[0][1]), tuple(rows_ev[:20]),
                                    "Check `nvidia-smi nvlink -s` and the fabric manager (`systemctl status "
                                    "nvidia-fabricmanager`) on NVSwitch systems; reset or reboot.", SRC_NVLINK))
        elif (non_nv and len({n for n in nvs if n is not None}) == 1 and max(n for n in nvs if n is not None) >= 12
              and len(non_nv) <= max(1, len(mx.gpus) // 2) and len(pairs) - len(non_nv) > len(non_nv)):
            # every other pair bonds the same 12 or more links, the fabric of an NVSwitch board (NV12 A100, NV18 H100),
            # and a few pairs go over PCIe (walk 34 #7: one SYS pair among NV18 ones was OK); a cube mesh (NV1/NV2)
            # or bridged pairs do not look like this
            top = max(n for n in nvs if n is not None)
            findings.append(Finding(fid, Verdict.WARN, (Msg('{head}: {summary}; every other pair bonds NV{top}, the fabric of an NVSwitch board, but ', head=head, summary=summary, top=top) + SEMICOLON.join((f'{a}-{b} {t}' for a, b, t in non_nv[:8])) + Msg(' go over PCIe: their NVLink path is down')),
                                    _pair_subject(non_nv[0][0], non_nv[0][1]), tuple(rows_ev[:20]),
                                    "Check `nvidia-smi nvlink -s` on those GPUs and the fabric manager (`systemctl "
                                    "status nvidia-fabricmanager`); reset or reboot, and reseat the GPU/baseboard if the "
                                    "links stay down.", SRC_NVLINK))
        elif lost and linked:
            # some GPUs bond NVLink, these reach none (held-out round 43: 3 PCIe cards, one bridge): a bridge
            # missing or its links down, or a card left without a bridge partner; its ranks take the PCIe path
            g = lost[0]
            findings.append(Finding(fid, Verdict.WARN, Msg(
                "{head}: {summary}; no NVLink reaches {lost}, while {linked} are NVLink-connected: an NVLink bridge "
                "missing or its links down, or a card without a bridge partner; work on {lost} takes the slower PCIe "
                "path",
                head=head, summary=summary, lost=", ".join(lost), linked=", ".join(linked[:8])),
                gpu_subject(_gpu_index(g)), tuple(rows_ev[:20]),
                Msg("If {lost} should have an NVLink bridge, power down and check it is fitted and seated, then "
                    "`nvidia-smi nvlink -s`; otherwise keep tensor-parallel groups on the NVLink-connected GPUs.",
                    lost=", ".join(lost)), SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, Msg("{head}: {summary}", head=head, summary=summary), "host", tuple(rows_ev[:20]), "",
                                    SRC_TOPO))
    else:
        findings.append(Finding(fid, Verdict.PASS, Msg("{head}: no GPU pair (one GPU)", head=head), "host", tuple(rows_ev[:4]), "",
                                SRC_TOPO))
    # CPU / NUMA affinity summary (appended to the first finding's message)
    aff = {r: a for r, a in mx.affinity.items() if r.startswith("GPU")}
    if aff:
        groups: dict[tuple[str, str], list[str]] = {}
        for r, af in aff.items():
            key = (af.get('NUMA Affinity', '?'), af.get('CPU Affinity', '?'))
            groups.setdefault(key, []).append(r)
        f0 = findings[0]
        sep = " " if str(f0.message).endswith(".") else "; "  # after a whole sentence, not ".;"
        findings[0] = Finding(f0.id, f0.verdict, f0.message + sep + SEMICOLON.join(
            Msg("{gpus} on NUMA {node} (CPUs {cpus})", gpus=",".join(v), node=k[0], cpus=k[1]) for k, v in groups.items()),
            f0.subject, f0.evidence, f0.remedy, f0.source,
            measured=f0.measured)
    findings += _nic_affinity(mx)
    return findings


_NEAR = ("PIX", "PXB")
SRC_C2C = ("NVIDIA Technical Blog, 'NVIDIA Grace Hopper Superchip Architecture In-Depth' (NVLink-C2C between the Grace "
           "CPU and the GPU; the GPU's memory exposed to the OS as a NUMA node: https://developer.nvidia.com/blog/"
           "nvidia-grace-hopper-superchip-architecture-in-depth/); nvidia-smi topo -m legend (GPU NUMA ID)")


def _nic_affinity(mx: Matrix) -> list[Finding]:
    fid = "health.gpu_nic_affinity"
    nics = mx.nics
    if not nics:
        return []
    far: list[str] = []
    cross: list[str] = []  # the far ones whose nearest NIC is across the CPU interconnect (no NODE/PHB path)
    near: list[str] = []
    ev = [mx.header_line]
    for g in [r for r in mx.rows if r.startswith("GPU")]:
        types = {n: mx.rows[g].get(n, "") for n in nics}
        best = [n for n, t in types.items() if t in _NEAR]
        label = mx.nic_legend
        if best:
            near.append(f"{g}->{'/'.join(label.get(n, n) for n in best)}")
        else:
            nearest = sorted(set(types.values()))
            far.append(f"{g} (nearest: {', '.join(nearest)})")
            if not {"NODE", "PHB"} & set(nearest):
                cross.append(far[-1])
            ev.append(mx.row_lines[g])
    coherent = [g for g, af in mx.affinity.items() if g.startswith("GPU") and af.get("GPU NUMA ID", "").isdigit()]
    if cross and coherent and len(coherent) == len([r for r in mx.rows if r.startswith("GPU")]):
        # every GPU's memory is a NUMA node of its own: a Grace superchip (GH200/GB200), whose GPU reaches the Grace
        # CPU over NVLink-C2C, not PCIe; its NICs hang off the Grace CPU's PCIe, so nvidia-smi can only print SYS
        return [Finding(fid, Verdict.PASS,
                        Msg("every GPU reaches the NICs as SYS, as on a Grace superchip (each GPU's memory is a NUMA "
                            "node of its own, GPU NUMA ID {ids}): the GPU is joined to its Grace CPU by NVLink-C2C and "
                            "the NICs hang off the Grace CPU's PCIe, so no GPU-NIC path can be PIX/PXB there",
                            ids=", ".join(mx.affinity[g]["GPU NUMA ID"] for g in coherent[:8])), "host", tuple(ev[:20]),
                        "", f"{SRC_NIC}; {SRC_C2C}")]
    if cross:  # a GPU whose nearest NIC is across the CPU interconnect (SYS): its network traffic crosses sockets
        return [Finding(fid, Verdict.WARN, (Msg('{n_cross} GPU(s) reach a NIC only across the CPU interconnect (SYS): ', n_cross=len(cross)) + SEMICOLON.join(cross[:8])), gpu_subject(_gpu_index(cross[0].split()[0])), tuple(ev[:20]),
                        "Compare with the server's topology map: a GPU's inter-node traffic should leave through a NIC "
                        "on its own socket (best under its PCIe switch, PIX/PXB, for GPUDirect RDMA); check the NICs sit "
                        "in the intended slots, or pin each rank to the NIC on its NUMA node (NCCL picks by "
                        "topology). If this node has fewer NICs than sockets by design, this is expected.", SRC_NIC)]
    if far:  # NODE/PHB: same socket, no shared switch: works, without GPUDirect RDMA by NCCL's default
        return [Finding(fid, Verdict.PASS, (Msg('{n_far} GPU(s) reach a NIC on their own socket but not under a shared PCIe switch (NODE/PHB): ', n_far=len(far)) + SEMICOLON.join(far[:8]) + Msg(". NCCL's default NCCL_NET_GDR_LEVEL (PXB) then stages network data through host memory instead of GPUDirect RDMA; normal on boards without a NIC per PCIe switch")), "host", tuple(ev[:20]), "", SRC_NIC)]
    shown = len([r for r in mx.rows if r.startswith("GPU")])
    every = (Msg('each of the {n} GPU rows in this excerpt shares a PCIe switch with a NIC (PIX/PXB): ', n=shown)
             if shown < len(mx.gpus) else Msg('every GPU shares a PCIe switch with a NIC (PIX/PXB): '))  # walk 49 #3
    return [Finding(fid, Verdict.PASS, (every + ', '.join(near[:8]) + (' ...' if len(near) > 8 else '')), "host",
                    tuple([mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")][:8]), "",
                    SRC_NIC)]


def p2p(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.p2p from ``nvidia-smi topo -p2p r``: any GPU pair not ``OK`` where P2P is expected is a
    FAIL. P2P is not expected on GeForce boards (the plan's gpu_model): WARN there. With no GPU model in the plan, a
    refusal by the PCIe path only (CNS chipset, TNS topology: ACS/IOMMU on bare metal, the hypervisor in a VM) or a
    bare NS (not supported, the cause unsaid) is a WARN: NCCL still runs, through host memory."""
    fid = "health.p2p"
    o = out.get("nvidia_smi_topo_p2p")
    if o is None or (not o.ok and not o.text.strip()):
        return [missing(fid, o, "the GPU peer-to-peer status", remedy="Run `nvidia-smi topo -p2p r` (no root needed).",
                        source=SRC_P2P)]
    mx = facts_of(out).parse_text("nvidia_smi_topo_p2p", parse_p2p_matrix)
    assert mx is not None
    if not mx.rows or not mx.gpus:
        return [garbled(fid, o, "nvidia-smi topo -p2p", mx.problems or o.lines()[:20], source=SRC_P2P)]
    pairs = mx.gpu_pairs()
    ev = [mx.header_line] + [mx.row_lines[r] for r in mx.rows]
    if not pairs:
        return [Finding(fid, Verdict.SKIP, "one GPU: no peer-to-peer pair to judge", "host", tuple(ev[:4]), "", SRC_P2P)]
    bad = [(a, b, t) for a, b, t in pairs if t != "OK"]
    if not bad:
        return [Finding(fid, Verdict.PASS, Msg("P2P OK between all {n_pairs} GPU pair(s)", n_pairs=len(pairs)), "host", tuple(ev[:20]), "",
                        SRC_P2P)]
    codes = sorted({t for _, _, t in bad})
    row = sku_row(str(plan.get("gpu_model") or ""))
    # GNS: the GPU itself offers no P2P (GeForce and some workstation boards, by design): slower, not broken, unless
    # the plan names a GPU that has it
    consumer = bool(row and row.get("sku") == "GeForce") or (codes == ["GNS"] and not row)
    remedy = {
        "CNS": N_("The chipset/PCIe path blocks P2P: on bare metal disable ACS on the PCIe switches and keep the IOMMU "
               "off or in pass-through (iommu=pt) (NCCL troubleshooting)."),
        "GNS": N_("The GPU or driver does not support P2P (GeForce boards: by design). NCCL then stages GPU-to-GPU "
               "traffic through host memory; use data-center GPUs for P2P."),
        "TNS": N_("P2P is not supported across this topology (e.g. between CPU sockets); check `nvidia-smi topo -m`."),
        "NS": N_("P2P is not supported between these GPUs; check the driver and `nvidia-smi topo -m`."),
        "DR": N_("P2P is disabled by a driver registry key: remove the NVreg setting that disables it and reload the "
                 "driver."),
        "U": N_("The driver could not tell: check `dmesg | grep -i nvrm` and re-run."),
    }
    rem = joined(" ", [Msg.plain(remedy[c]) for c in codes if remedy.get(c)])

    desc = SEMICOLON.join(f"{a}-{b} {t} ({P2P_CODES.get(t, t)})" for a, b, t in bad[:8]) + (" ..." if len(bad) > 8 else "")
    if not row and set(codes) <= {"CNS", "TNS", "NS"}:
        # the PCIe path, not the GPUs, refuses P2P (or the driver says only "not supported") and no planned GPU model
        # says P2P must work here: on bare metal ACS or the IOMMU (fixable), in a VM the hypervisor, on GeForce boards
        # the driver by design (held-out round 45: 2x RTX 2080 Ti, NS); NCCL still runs, through host memory
        return [Finding(fid, Verdict.WARN, Msg("P2P not available for {n_bad} of {n_pairs} GPU pair(s): {desc}: NCCL moves "
                                               "GPU-to-GPU traffic through host memory; a fail where the GPUs should "
                                               "have P2P (set the plan's gpu_model)", n_bad=len(bad),
                                               n_pairs=len(pairs), desc=desc),
                        _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem, SRC_P2P)]
    if consumer:
        return [Finding(fid, Verdict.WARN, Msg("P2P not available for {n_bad} of {n_pairs} GPU pair(s): {desc} (not expected on GeForce "
                                               "boards)", n_bad=len(bad), n_pairs=len(pairs), desc=desc), _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem,
                        SRC_P2P)]
    return [Finding(fid, Verdict.FAIL, Msg("P2P not available for {n_bad} of {n_pairs} GPU pair(s): {desc}", n_bad=len(bad), n_pairs=len(pairs), desc=desc),
                    _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem, SRC_P2P)]
