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
from wizard.rules.common import Outputs, garbled, missing
from wizard.rules.nvlink import SRC_NVLINK, sku_row

SRC_TOPO = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (topo -m legend: X, SYS, "
            "NODE, PHB, PXB, PIX, NV#); Azure HPC health checks, "
            "https://github.com/Azure/azurehpc-health-checks (check_hw_topology)")


SRC_NIC = ("NVIDIA GPUDirect RDMA guide (best performance when GPU and NIC share a PCIe switch), "
           "https://docs.nvidia.com/cuda/gpudirect-rdma/; nvidia-smi documentation, "
           "https://docs.nvidia.com/deploy/nvidia-smi/ (topo -m: PIX/PXB = same PCIe switch)")


SRC_P2P = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (topo -p2p legend: OK, CNS, "
           "GNS, TNS, NS, DR, U); NCCL troubleshooting, "
           "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html (P2P, ACS, IOMMU)")


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
    rows_ev = [mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")]
    gpu_rows = [r for r in mx.rows if r.startswith("GPU")]
    cut = len(gpu_rows) < len(mx.gpus)
    types: dict[str, int] = {}
    for _, _, t in pairs:
        types[t] = types.get(t, 0) + 1
    summary = ", ".join(f"{n} pair(s) {t}" for t, n in sorted(types.items(), key=lambda kv: -kv[1]))
    if len(types) > 1:  # name the pairs of each link type (the minority types first)
        by_type: dict[str, list[str]] = {}
        for a, b, t in pairs:
            by_type.setdefault(t, []).append(f"{a}-{b}")
        summary = "; ".join(f"{t}: " + ", ".join(v[:12]) + (f" (+{len(v) - 12} more)" if len(v) > 12 else "")
                            for t, v in sorted(by_type.items(), key=lambda kv: len(kv[1])))
    nvs = [nv_count(t) for _, _, t in pairs]
    head = f"{len(mx.gpus)} GPU(s)" + (f" ({len(gpu_rows)} rows in this excerpt)" if cut else "")
    if pairs and all(n is not None for n in nvs):
        top = max(n for n in nvs if n is not None)
        low = [(a, b, t) for a, b, t in pairs if nv_count(t) is not None and nv_count(t) < top]  # type: ignore[operator]
        if low:
            findings.append(Finding(fid, Verdict.WARN, f"{head}: every pair is NVLink-connected but "
                                    + "; ".join(f"{a}-{b} {t}" for a, b, t in low[:8])
                                    + f" bond fewer links than the others (NV{top}): an NVLink may be down",
                                    _pair_subject(low[0][0], low[0][1]), tuple(rows_ev[:20]),
                                    "Run `nvidia-smi nvlink -s` to see which link is inactive; reset or reboot, and "
                                    "reseat the GPU/baseboard if it stays down.", SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, f"{head}: {summary} (NVLink, {top} links bonded per pair)",
                                    "host", tuple(rows_ev[:20]), "", SRC_TOPO))
    elif pairs:
        row = sku_row(str(plan.get("gpu_model") or ""))
        non_nv = [(a, b, t) for a, b, t in pairs if nv_count(t) is None]
        if row and row.get("mode") == "all" and non_nv and any(n is not None for n in nvs):
            findings.append(Finding(fid, Verdict.FAIL, f"{head}: {summary}; on {row['sku']} every GPU pair should be "
                                    "NVLink-connected, but " + "; ".join(f"{a}-{b} {t}" for a, b, t in non_nv[:8])
                                    + " go over PCIe", _pair_subject(non_nv[0][0], non_nv[0][1]), tuple(rows_ev[:20]),
                                    "Check `nvidia-smi nvlink -s` and the fabric manager (`systemctl status "
                                    "nvidia-fabricmanager`) on NVSwitch systems; reset or reboot.", SRC_NVLINK))
        else:
            findings.append(Finding(fid, Verdict.PASS, f"{head}: {summary}", "host", tuple(rows_ev[:20]), "",
                                    SRC_TOPO))
    else:
        findings.append(Finding(fid, Verdict.PASS, f"{head}: no GPU pair (one GPU)", "host", tuple(rows_ev[:4]), "",
                                SRC_TOPO))
    # CPU / NUMA affinity summary (appended to the first finding's message)
    aff = {r: a for r, a in mx.affinity.items() if r.startswith("GPU")}
    if aff:
        groups: dict[str, list[str]] = {}
        for r, af in aff.items():
            key = f"NUMA {af.get('NUMA Affinity', '?')} (CPUs {af.get('CPU Affinity', '?')})"
            groups.setdefault(key, []).append(r)
        f0 = findings[0]
        findings[0] = Finding(f0.id, f0.verdict, f0.message + "; " + "; ".join(
            f"{','.join(v)} on {k}" for k, v in groups.items()), f0.subject, f0.evidence, f0.remedy, f0.source)
    findings += _nic_affinity(mx)
    return findings


_NEAR = ("PIX", "PXB")


def _nic_affinity(mx: Matrix) -> list[Finding]:
    fid = "health.gpu_nic_affinity"
    nics = mx.nics
    if not nics:
        return []
    far: list[str] = []
    near: list[str] = []
    ev = [mx.header_line]
    for g in [r for r in mx.rows if r.startswith("GPU")]:
        types = {n: mx.rows[g].get(n, "") for n in nics}
        best = [n for n, t in types.items() if t in _NEAR]
        label = mx.nic_legend
        if best:
            near.append(f"{g}->{'/'.join(label.get(n, n) for n in best)}")
        else:
            far.append(f"{g} (nearest: {sorted(set(types.values()))})")
            ev.append(mx.row_lines[g])
    if far:
        return [Finding(fid, Verdict.WARN, f"{len(far)} GPU(s) share no PCIe switch with any NIC: "
                        + "; ".join(far[:8]), gpu_subject(_gpu_index(far[0].split()[0])), tuple(ev[:20]),
                        "Compare with the server's topology map: GPUDirect RDMA needs GPU and NIC under one PCIe "
                        "switch (PIX/PXB) for full speed; check the NICs sit in the intended slots. If this node has "
                        "no per-GPU NIC by design, this is expected.", SRC_NIC)]
    return [Finding(fid, Verdict.PASS, "every GPU shares a PCIe switch with a NIC (PIX/PXB): " + ", ".join(near[:8])
                    + (" ..." if len(near) > 8 else ""), "host",
                    tuple([mx.header_line] + [mx.row_lines[r] for r in mx.rows if r.startswith("GPU")][:8]), "",
                    SRC_NIC)]


def p2p(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """health.p2p from ``nvidia-smi topo -p2p r``: any GPU pair not ``OK`` where P2P is expected is a
    FAIL. P2P is not expected on GeForce boards (the plan's gpu_model): WARN there."""
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
        return [Finding(fid, Verdict.PASS, f"P2P OK between all {len(pairs)} GPU pair(s)", "host", tuple(ev[:20]), "",
                        SRC_P2P)]
    codes = sorted({t for _, _, t in bad})
    row = sku_row(str(plan.get("gpu_model") or ""))
    consumer = bool(row and row.get("sku") == "GeForce")
    remedy = {
        "CNS": "The chipset/PCIe path blocks P2P: on bare metal disable ACS on the PCIe switches and keep the IOMMU "
               "off or in pass-through (iommu=pt) (NCCL troubleshooting).",
        "GNS": "The GPU or driver does not support P2P (GeForce boards: by design). NCCL then stages GPU-to-GPU "
               "traffic through host memory; use data-center GPUs for P2P.",
        "TNS": "P2P is not supported across this topology (e.g. between CPU sockets); check `nvidia-smi topo -m`.",
        "NS": "P2P is not supported between these GPUs; check the driver and `nvidia-smi topo -m`.",
        "DR": "P2P is disabled by a driver registry key: remove the NVreg setting that disables it and reload the driver.",
        "U": "The driver could not tell: check `dmesg | grep -i nvrm` and re-run.",
    }
    rem = " ".join(remedy.get(c, "") for c in codes).strip()
    desc = "; ".join(f"{a}-{b} {t} ({P2P_CODES.get(t, t)})" for a, b, t in bad[:8]) + (" ..." if len(bad) > 8 else "")
    if consumer:
        return [Finding(fid, Verdict.WARN, f"P2P not available for {len(bad)} of {len(pairs)} GPU pair(s): {desc} "
                        "(not expected on GeForce boards)", _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem,
                        SRC_P2P)]
    return [Finding(fid, Verdict.FAIL, f"P2P not available for {len(bad)} of {len(pairs)} GPU pair(s): {desc}",
                    _pair_subject(bad[0][0], bad[0][1]), tuple(ev[:20]), rem, SRC_P2P)]
