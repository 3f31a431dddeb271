"""Checks on host facts: OS, CPU, NUMA, memory, swap, IOMMU, filesystems.

Each check is pure (probe outputs + plan answers -> findings) and names the source of its rule.
"""

from __future__ import annotations

from typing import Any, Mapping

from wizard.rules.common import Outputs, garbled, gib, missing
from wizard.model import Finding, Verdict
from wizard.parsers.host import (
    parse_cmdline, parse_cpu, parse_df, parse_iommu, parse_meminfo, parse_numa,
    parse_os_release, parse_proc_swaps,
)

SRC_A8 = ("NVIDIA Health Validation cpu_count/numa_node_count; "
          "AzNHC check_hw_physmem 5%")
SRC_SWAP = ("Kubernetes docs: kubelet fails to start with swap on unless failSwapOn: false "
            "(kubernetes.io/docs/concepts/cluster-administration/swap-memory-management)")
SRC_IOMMU = ("NCCL troubleshooting guide (IOMMU/ACS can break or slow GPU P2P; use iommu=pt or "
             "disable it on bare metal), docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
             "troubleshooting.html; NVIDIA/nccl#631")
SRC_DISK = "Verda fleet health check: WARN above 90% used (derived threshold, operator may override)"
DISK_WARN_PCT = 90.0
"""Filesystem use above this percentage warns (checks-catalogue A12, Verda's fleet check)."""
MEMORY_SHORT_PCT = 5.0
"""MemTotal more than this percentage below the plan's expectation warns (AzNHC check_hw_physmem)."""


def os_release(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o, k = out.get("os_release"), out.get("kernel")
    if o is None or not o.ok:
        return [missing("os.release", o, "the OS release")]
    r = parse_os_release(o.text)
    if not r.id and not r.pretty_name:
        return [garbled("os.release", o, "/etc/os-release", o.lines())]
    kernel = k.text.strip() if k is not None and k.ok else "unknown"
    # the raw lines, as the file has them
    ev = [f"{o.source}:{ln}" for ln in o.lines() if ln.split("=", 1)[0] in ("PRETTY_NAME", "ID", "ID_LIKE", "VERSION_ID")]
    if k is not None:
        ev.append(f"{k.source}:{kernel}")
    return [Finding("os.release", Verdict.PASS, f"{r.pretty_name}, kernel {kernel}", "host", tuple(ev),
                    "", "os-release(5); /proc/sys/kernel/osrelease")]


def cpu(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    ci, topo = out.get("cpuinfo"), out.get("cpu_topology")
    if ci is None or topo is None or (not ci.ok and not topo.files):
        return [missing("bios.cpu", ci if ci is None or not ci.ok else topo, "the CPU topology")]
    f = parse_cpu(ci.text if ci.ok else "", topo.files)
    findings: list[Finding] = []
    ev = tuple(f.evidence)
    if f.problems:
        findings.append(garbled("bios.cpu", topo, "the CPU topology", f.problems))
    smt = {True: "SMT on", False: "SMT off", None: "SMT state not reported"}[f.smt_active]
    desc = (f"{f.model or 'unknown CPU model'}: {f.sockets or '?'} socket(s), {f.cores or '?'} cores, "
            f"{f.logical or '?'} logical CPUs, {smt}")
    # present - online when present was read; possible - online otherwise (possible also counts
    # empty hot-plug slots, so that fallback can over-report; see CpuFacts).
    expected_cpus = f.present if f.present is not None else f.possible
    off = sorted(expected_cpus - f.online) if f.online is not None and expected_cpus is not None else []
    if off:
        kind = "present" if f.present is not None else "possible"
        findings.append(Finding(
            "bios.cpu", Verdict.FAIL,
            f"{len(off)} of {len(expected_cpus)} {kind} CPUs are offline ({desc})", "host", ev,
            "Bring them online (echo 1 > /sys/devices/system/cpu/cpuN/online) or find why the "
            "kernel could not (maxcpus=/nr_cpus= on the kernel command line, a BIOS core limit).",
            SRC_A8))
    elif f.logical is None:
        findings.append(missing("bios.cpu", topo, "the CPU topology"))
    else:
        findings.append(Finding("bios.cpu", Verdict.PASS, desc, "host", ev, "", SRC_A8))
    return findings


def numa(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("numa")
    if o is None or not o.files:
        return [missing("bios.numa", o, "the NUMA layout")]
    n = parse_numa(o.files)
    if n.problems:  # a node we cannot read would make the count wrong
        return [garbled("bios.numa", o, "the NUMA layout", n.problems)]
    if not n.nodes:  # files listed but none readable: counting zero nodes would be a guess
        ev = tuple([o.source] + [f"{p}: <{e}>" for p, e in list(o.file_errors.items())[:10]])
        return [Finding("bios.numa", Verdict.UNKNOWN, "could not tell the NUMA layout: no node could be read",
                        "host", ev, "Check that /sys/devices/system/node is readable.", SRC_A8)]
    count = len(n.nodes)
    cpu_nodes = sum(1 for c in n.nodes.values() if c)
    desc = f"{count} NUMA node(s)" + (f", {count - cpu_nodes} without CPUs" if cpu_nodes != count else "")
    expected = plan.get("numa_nodes")
    if isinstance(expected, int) and expected > 0 and expected != count:
        return [Finding("bios.numa", Verdict.FAIL, f"{desc}; the plan expects {expected}", "host",
                        tuple(n.evidence),
                        "Check the BIOS NUMA setting (NPS on AMD EPYC, SNC on Intel Xeon) and that "
                        "every socket has memory in its channels.", SRC_A8)]
    return [Finding("bios.numa", Verdict.PASS, desc, "host", tuple(n.evidence), "", SRC_A8)]


def memory(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("meminfo")
    if o is None or not o.ok:
        return [missing("os.memory", o, "the memory size")]
    m = parse_meminfo(o.text)
    if m.total_kib is None:
        return [garbled("os.memory", o, "/proc/meminfo", m.problems or o.lines()[:5])]
    total = gib(m.total_kib)
    ev = [f"{o.source}:{ln}" for ln in o.lines() if ln.startswith("MemTotal:")]
    need = plan.get("host_ram_min_gib")
    if isinstance(need, (int, float)) and need > 0 and total < need:
        return [Finding("os.memory", Verdict.WARN,
                        f"{total:.1f} GiB of memory, less than the {need:g} GiB the planned workload needs",
                        "host", tuple(ev),
                        "Add memory, or lower what the workload holds in host RAM (CPU offload, data-loader "
                        "workers, checkpoint loading on every rank): see the plan & sizing screen (z).",
                        "bringup sizing (wizard/sizing.py): host RAM counted from the workload")]
    expected = plan.get("host_ram_gib")
    if isinstance(expected, (int, float)) and expected > 0:
        short = 100.0 * (expected - total) / expected
        if short > MEMORY_SHORT_PCT:
            return [Finding("os.memory", Verdict.WARN,
                            f"{total:.1f} GiB of memory, {short:.0f}% below the plan's {expected:g} GiB",
                            "host", tuple(ev),
                            "Check every DIMM is seated and detected (dmidecode -t 17, BIOS memory "
                            "page); a missing DIMM also leaves a memory channel empty.", SRC_A8)]
    return [Finding("os.memory", Verdict.PASS, f"{total:.1f} GiB of memory", "host", tuple(ev), "", SRC_A8)]


def swap(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("swaps")
    if o is None or not o.ok:
        return [missing("os.swap", o, "the swap state")]
    s = parse_proc_swaps(o.text)
    if s.problems or not s.header_seen:
        return [garbled("os.swap", o, "/proc/swaps", s.problems or o.lines()[:5])]
    if not s.devices:
        return [Finding("os.swap", Verdict.PASS, "swap is off", "host", (o.source + ": no swap devices",),
                        "", SRC_SWAP)]
    ev = tuple([o.source] + [d.line for d in s.devices])
    size = gib(s.total_kib)
    if plan.get("scheduler") == "kubernetes":
        return [Finding("os.swap", Verdict.WARN,
                        f"swap is on ({size:.1f} GiB) and this node is planned for Kubernetes", "host", ev,
                        "Turn swap off (the OS stage's swap step edits /etc/fstab with a backup), or "
                        "set failSwapOn: false in the kubelet configuration.", SRC_SWAP)]
    return [Finding("os.swap", Verdict.PASS,
                    f"swap is on ({size:.1f} GiB): a policy choice on a standalone training node", "host",
                    ev, "", SRC_SWAP)]


def iommu(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    c, t = out.get("cmdline"), out.get("iommu")
    if c is None or not c.ok:
        return [missing("bios.iommu", c, "the kernel command line")]
    cmd = parse_cmdline(c.text)
    args = {k: v for k, v in cmd.params.items() if k in ("intel_iommu", "amd_iommu", "iommu")}
    arg_text = " ".join(f"{k}={v}" if v else k for k, v in args.items()) or "no IOMMU arguments"
    if t is None or (not t.ok and not t.files):
        # Without the sysfs tree only the command line can tell, and only when it sets the mode.
        if args.get("iommu") == "pt" or "off" in (args.get("iommu"), args.get("intel_iommu"),
                                                   args.get("amd_iommu")):
            return [Finding("bios.iommu", Verdict.PASS,
                            f"IOMMU {'passthrough' if args.get('iommu') == 'pt' else 'off'} on the "
                            f"kernel command line ({arg_text}); sysfs not read", "host",
                            (f"{c.source}: {arg_text}",), "", SRC_IOMMU)]
        return [missing("bios.iommu", t, "the IOMMU mode", source=SRC_IOMMU)]
    f = parse_iommu(t.files)
    ev = tuple([f"{c.source}: {arg_text}"] + f.evidence)
    virt = bool(plan.get("virtualization"))
    translated = {x for x in f.types if x.upper().startswith("DMA")}
    if translated and not virt:
        return [Finding("bios.iommu", Verdict.WARN,
                        f"IOMMU is translating DMA ({', '.join(sorted(translated))} domains; {arg_text})",
                        "host", ev,
                        "For a bare-metal training node add iommu=pt to the kernel command line (or "
                        "disable VT-d/AMD-Vi in the BIOS): IOMMU translation can break or slow GPU "
                        "peer-to-peer and GPUDirect RDMA. Keep it on only for VMs/passthrough.",
                        SRC_IOMMU)]
    if f.group_types and f.types <= {"identity"}:
        msg = f"IOMMU in passthrough mode ({arg_text})"
    elif not f.units and not f.group_types:
        msg = f"IOMMU off or not exposed ({arg_text})"
    else:
        msg = f"IOMMU present ({arg_text})"
    return [Finding("bios.iommu", Verdict.PASS, msg, "host", ev, "", SRC_IOMMU)]


def _usage(fid: str, label: str, subject: str, r: Any) -> Finding:
    desc = f"{label}: {r.fstype}, {r.size_bytes / 1e9:.0f} GB, {r.used_pct:.0f}% used"
    if r.used_pct > DISK_WARN_PCT:
        return Finding(fid, Verdict.WARN, desc + f" (above {DISK_WARN_PCT:.0f}%)", subject, (r.line,),
                       "Free space before training: checkpoints and logs fill disks fast, and a full root "
                       "filesystem stops the node.", SRC_DISK)
    return Finding(fid, Verdict.PASS, desc, subject, (r.line,), "", SRC_DISK)


def filesystems(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``/`` from the node-wide df, and the plan's data path from its own df (which also tells
    whether the path exists and which filesystem really holds it)."""
    o = out.get("df")
    findings: list[Finding] = []
    if o is None or not o.ok:
        findings.append(missing("os.filesystem", o, "filesystem usage"))
    else:
        rows, problems = parse_df(o.text)
        root = next((r for r in rows if r.mountpoint == "/"), None)
        if root is None:
            findings.append(garbled("os.filesystem", o, "df output (no / row)", problems or o.lines()[:5]))
        else:
            findings.append(_usage("os.filesystem", "/", "/", root))
    data_path = plan.get("data_path")
    if not isinstance(data_path, str) or not data_path or data_path == "/":
        return findings
    d = out.get("data_path_df")
    if d is None:
        findings.append(missing("os.filesystem", d, f"where {data_path} lives", data_path))
        return findings
    if "No such file or directory" in d.stderr:
        findings.append(Finding(
            "os.filesystem", Verdict.FAIL, f"the data path {data_path} does not exist", data_path,
            tuple(d.evidence_error()),
            f"Create or mount the data volume at {data_path} (check /etc/fstab and `lsblk`), or record the "
            f"real path with `bringup plan data_path=...`.", SRC_DISK))
        return findings
    if not d.ok:
        findings.append(missing("os.filesystem", d, f"where {data_path} lives", data_path))
        return findings
    rows, problems = parse_df(d.text)
    if len(rows) != 1:
        findings.append(garbled("os.filesystem", d, f"df of {data_path}", problems or d.lines()[:5], data_path))
        return findings
    r = rows[0]
    if r.mountpoint == "/":
        findings.append(Finding(
            "os.filesystem", Verdict.WARN,
            f"the data path {data_path} is on the root filesystem, not a volume of its own", data_path, (r.line,),
            f"If a data volume should be mounted at {data_path}, mount it (check /etc/fstab and `lsblk`); "
            f"datasets and checkpoints on / can fill the root filesystem and stop the node.", SRC_DISK))
        return findings
    label = data_path if data_path == r.mountpoint else f"{data_path} (on {r.mountpoint})"
    findings.append(_usage("os.filesystem", label, data_path, r))
    return findings
