"""Host rules: memory (RAM size against the plan, memory pressure), and the host tool outputs ``free``,
``swapon --show``, ``lscpu`` and ``numactl --hardware``.

* Memory pressure (``os.memory_pressure``): available memory below :data:`LOW_AVAILABLE_PCT` of
  the total warns; with swap full as well (or no swap) it fails: the next allocation wakes the
  kernel's OOM killer and data-loader workers die.
* Host RAM against the plan (``os.memory``): more than ``MEMORY_SHORT_PCT`` below warns.
* Swap (``os.swap``, from ``free`` and ``swapon``): judged by :func:`wizard.rules.os.swap_finding`.
* CPUs (``bios.cpu``): offline CPUs fail (online must equal possible).
* NUMA (``bios.numa``, ``bios.numa_memory``): node count against the plan fails when it differs;
  CPU-less nodes are memory-only nodes, not a fault; a node with CPUs but no memory, or much
  less than the others, warns (a memory channel left empty).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Mapping

from wizard.common import human_bytes
from wizard.facts import facts_of
from wizard.model import Finding, Measure, Verdict, measure
from wizard.parsers.host import parse_meminfo
from wizard.parsers.hosttools import (
    parse_free_bytes,
    FreeFacts, LscpuFacts, NumactlFacts, cpulist_count, parse_free, parse_lscpu, parse_numactl, parse_swapon, parse_top_memory,
    parse_zramctl,
)
from wizard.rules.common import Outputs, garbled, gib, missing
from wizard.rules.os import SRC_SWAP, SWAP_FULL_PCT, SWAP_HEAVY_PCT, is_kubernetes, swap_finding, swap_heavy
from wizard.i18n import N_, SEMICOLON, Msg, joined

SRC_A8 = ("NVIDIA Health Validation documentation (checks cpu_count, numa_node_count; "
          "https://docs.nvidia.com/health-validation/); Azure HPC health checks, check_hw_physmem (warns 5% below "
          "the expected memory), https://github.com/Azure/azurehpc-health-checks")
MEMORY_SHORT_PCT = 5.0
"""MemTotal more than this percentage below the plan's expectation warns (Azure HPC health checks, check_hw_physmem)."""
MEMORY_MISSING_PCT = 50.0
"""MemTotal this far (%) or more below the plan's host_ram_gib fails rather than warns: half the memory gone is
missing DIMMs (a bank, a CPU's channels) or another machine than planned, not a BIOS reservation (bringup's
judgement)."""
GIB = 1024 ** 3
LOW_AVAILABLE_PCT = 5.0
"""Available memory (``free``'s "available": the kernel's MemAvailable, its estimate of memory
for new programs without swapping, Documentation/filesystems/proc.rst) below this percentage of
the total warns. Derived (judgement), operator may override."""
NUMA_MEMORY_IMBALANCE = 0.8
"""A NUMA node with CPUs holding less than this fraction of the largest node's memory warns
(derived: every memory channel should be populated alike, Dell PowerEdge BIOS performance guide)."""
SRC_MEM = ("Linux kernel documentation, The /proc Filesystem (MemAvailable), https://docs.kernel.org/filesystems/proc.html; "
           "the OOM killer acts when memory and swap are exhausted; host RAM also holds data loaders, pinned buffers and "
           "checkpoint loading (Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, "
           "2020, https://arxiv.org/abs/1910.02054, for what CPU offload keeps in host RAM)")
SRC_NUMA = ("NVIDIA Health Validation documentation (check numa_node_count: the NUMA count must match; "
            "https://docs.nvidia.com/health-validation/); Linux NUMA documentation (memory-only, CPU-less nodes), "
            "https://docs.kernel.org/mm/numa.html; populate every memory channel alike: Dell Technologies, 'BIOS Settings "
            "for Optimized Performance on Next-Generation Dell PowerEdge Servers', https://infohub.delltechnologies.com/"
            "en-us/p/bios-settings-for-optimized-performance-on-next-generation-dell-poweredge-servers/")


HOST_RAM_FLOOR_GIB = 16.0
"""With no plan figure, host RAM below this warns: a 7B-parameter model's bf16 weights alone are 7e9 x 2 bytes = 14 GB
(13 GiB), so a smaller host cannot load even a small LLM checkpoint next to the OS and the data loaders (bringup's
judgement, from the sizing arithmetic of Rajbhandari et al., ZeRO, 2020: 2 bytes per parameter in 16-bit precision).
A host with this much installed shows less as MemTotal (firmware and the kernel keep some: a 16 GiB host reads about
15.6 GiB), so the floor is compared less :data:`MEMORY_SHORT_PCT`, as the plan's figure is (:func:`floor_gib`)."""


def floor_gib() -> float:
    """The MemTotal, GiB, below which ``os.memory`` warns with no plan figure: :data:`HOST_RAM_FLOOR_GIB` less
    :data:`MEMORY_SHORT_PCT` (15.2 GiB)."""
    return HOST_RAM_FLOOR_GIB * (1 - MEMORY_SHORT_PCT / 100)


def _plan_short(total_gib: float, expected: float) -> Measure | None:
    """Host RAM against the plan's figure less :data:`MEMORY_SHORT_PCT` (the shortfall that warns)."""
    return measure(total_gib, expected * (1 - MEMORY_SHORT_PCT / 100), "GiB", "at_least",
                   f"host RAM (the plan's {expected:g} GiB less {MEMORY_SHORT_PCT:g}%)")


def ram_measure(total_gib: float, plan: Mapping[str, Any]) -> Measure | None:
    """The host RAM against the figure ``os.memory`` holds it to: the planned workload's need
    (``host_ram_min_gib``), else the plan's RAM less :data:`MEMORY_SHORT_PCT`, else :data:`HOST_RAM_FLOOR_GIB`."""
    need, expected = plan.get("host_ram_min_gib"), plan.get("host_ram_gib")
    if isinstance(need, (int, float)) and not isinstance(need, bool) and need > 0:
        return measure(total_gib, need, "GiB", "at_least", "host RAM (the planned workload's need)")
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and expected > 0:
        return _plan_short(total_gib, expected)
    return measure(total_gib, round(floor_gib(), 2), "GiB", "at_least",
                   f"host RAM (bringup's floor without a plan figure: {HOST_RAM_FLOOR_GIB:g} GiB less {MEMORY_SHORT_PCT:g}%)")


def ram_floor(total_gib: float, ev: tuple[str, ...], plan: Mapping[str, Any]) -> Finding | None:
    """``os.memory`` WARN when the plan gives no RAM figure and the host has less than :data:`HOST_RAM_FLOOR_GIB`."""
    if plan.get("host_ram_min_gib") or plan.get("host_ram_gib") or total_gib >= floor_gib():
        return None
    return Finding("os.memory", Verdict.WARN,
                   Msg("{total_gib:.1f} GiB of memory: too little host RAM for LLM training (a 7B model's bf16 "
                       "weights alone are 14 GB; below {HOST_RAM_FLOOR_GIB:g} GiB installed, a MemTotal under {floor:.1f} GiB, "
                       "bringup warns when no plan says otherwise)", total_gib=total_gib,
                       HOST_RAM_FLOOR_GIB=HOST_RAM_FLOOR_GIB, floor=floor_gib()),
                   "host", ev, "Check the node's memory (dmidecode -t 17: DIMMs detected) or the container's memory "
                   "limit; size the host RAM for the workload on the plan & sizing screen (z) or with `bringup size`.",
                   "bringup's judgement: 2 bytes per parameter in bf16 (Rajbhandari et al., ZeRO: Memory Optimizations "
                   "Toward Training Trillion Parameter Models, 2020, https://arxiv.org/abs/1910.02054)",
                   measured=ram_measure(total_gib, plan))


def _installed_short(total: float, expected: Any, ev: tuple[str, ...]) -> Finding | None:
    """``os.memory`` against the plan's installed RAM (``host_ram_gib``): short by more than :data:`MEMORY_SHORT_PCT`
    warns, by :data:`MEMORY_MISSING_PCT` or more fails (DIMMs missing); None when it holds or there is no figure."""
    if not isinstance(expected, (int, float)) or isinstance(expected, bool) or expected <= 0:
        return None
    short = 100.0 * (expected - total) / expected
    if short <= MEMORY_SHORT_PCT:
        return None
    return Finding("os.memory", Verdict.FAIL if short >= MEMORY_MISSING_PCT else Verdict.WARN,
                   Msg("{total:.1f} GiB of memory, {short:.0f}% below the plan's {expected:g} GiB", total=total,
                       short=short, expected=expected),
                   "host", ev,
                   "Check every DIMM is seated and detected (dmidecode -t 17, BIOS memory "
                   "page); a missing DIMM also leaves a memory channel empty.", SRC_A8,
                   measured=_plan_short(total, expected))


def memory(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("meminfo")
    if o is None or not o.ok:
        return [missing("os.memory", o, "the memory size")]
    m = facts_of(out).parse_text("meminfo", parse_meminfo)
    assert m is not None
    if m.total_kib is None:
        return [garbled("os.memory", o, "/proc/meminfo", m.problems or o.lines()[:5])]
    total = gib(m.total_kib)
    ev = [f"{o.source}:{ln}" for ln in o.lines() if ln.startswith("MemTotal:")]
    need = plan.get("host_ram_min_gib")
    expected = plan.get("host_ram_gib")
    missing_dimms = _installed_short(total, expected, tuple(ev))
    if missing_dimms is not None and missing_dimms.verdict is Verdict.FAIL:
        return [missing_dimms]  # memory missing from what is installed outranks the workload's need (walk 21)
    if isinstance(need, (int, float)) and need > 0 and total < need:
        return [Finding("os.memory", Verdict.WARN,
                        Msg("{total:.1f} GiB of memory, less than the {need:g} GiB the planned workload needs", total=total, need=need),
                        "host", tuple(ev),
                        "Add memory, or lower what the workload holds in host RAM (CPU offload, data-loader "
                        "workers, checkpoint loading on every rank): see the plan & sizing screen (z), or `bringup size`.",
                        "bringup's judgement: host RAM counted from the planned workload (Rajbhandari et al., ZeRO: Memory "
                        "Optimizations Toward Training Trillion Parameter Models, 2020, https://arxiv.org/abs/1910.02054)",
                        measured=ram_measure(total, plan))]
    if missing_dimms is not None:
        return [missing_dimms]
    small = ram_floor(total, tuple(ev), plan)
    if small is not None:
        return [small]
    planned = any(isinstance(plan.get(k), (int, float)) and not isinstance(plan.get(k), bool) and plan.get(k)
                  for k in ("host_ram_gib", "host_ram_min_gib"))
    msg = (Msg("{total:.1f} GiB of memory", total=total) if planned else
           Msg("{total:.1f} GiB of memory; no plan figure to compare with (host_ram_gib, or host_ram_min_gib from "
               "sizing), so only bringup's {floor:g} GiB floor was checked", total=total, floor=HOST_RAM_FLOOR_GIB))
    return [Finding("os.memory", Verdict.PASS, msg, "host", tuple(ev), "", SRC_A8,
                    measured=ram_measure(total, plan))]


def judge_free(f: FreeFacts, exp: Mapping[str, Any], source: str = "free", unit_known: bool = True) -> list[Finding]:
    """``free`` facts -> ``os.memory_pressure`` (+ ``os.memory`` vs the plan, ``os.swap`` for Kubernetes).
    ``unit_known=False``: the figures are as printed, in a unit the paste does not show (``free -m`` or ``-g`` with
    the command left out): judged by their ratios only (available share, swap share), the sizes shown as printed."""
    ev = tuple(x for x in (f.header, f.mem_line, f.buffers_line, f.swap_line) if x)
    total, avail = f.total, f.available
    human_bytes = _human if unit_known else _as_printed
    if not total:
        return [Finding("os.memory_pressure", Verdict.UNKNOWN, "could not read the memory total from free", "host",
                        tuple([source] + f.problems[:10]) if f.problems else (source,),
                        "Run `free -b` and give bringup its whole output.", SRC_MEM)]
    findings: list[Finding] = []
    st, su = f.swap.get("total"), f.swap.get("used")
    sf = f.swap.get("free")
    swap_full = bool(st) and ((sf == 0) or (su is not None and st and 100.0 * su / st >= SWAP_FULL_PCT))
    swap_txt = (Msg("no swap") if not st else
                Msg("swap {used} of {total} used (full)", used=human_bytes(su), total=human_bytes(st)) if swap_full else
                Msg("swap {used} of {total} used", used=human_bytes(su), total=human_bytes(st)))
    if avail is None:
        findings.append(Finding("os.memory_pressure", Verdict.UNKNOWN,
                                Msg("{human_bytes} of memory; this free does not print 'available' ({swap_txt})", human_bytes=human_bytes(total), swap_txt=swap_txt), "host",
                                ev, "Use a procps free with the 'available' column (procps-ng 3.3.10+), or read "
                                "MemAvailable in /proc/meminfo.", SRC_MEM))
    else:
        pct = 100.0 * avail / total
        desc = (Msg('{human_bytes} of {human_bytes2} available ({pct:.1f}%), {swap_txt}', human_bytes=human_bytes(avail), human_bytes2=human_bytes(total), pct=pct, swap_txt=swap_txt))
        am = measure(pct, LOW_AVAILABLE_PCT, "%", "at_least", "host memory available")
        remedy = (Msg('Find what holds the memory (`ps aux --sort=-rss | head`, containers, tmpfs/shm in `df -h`), stop it or lower data-loader workers and pinned buffers, then re-check; if the job itself needs it, the host needs more RAM.'))
        if pct < LOW_AVAILABLE_PCT and (swap_full or not st):
            findings.append(Finding("os.memory_pressure", Verdict.FAIL,
                                    (Msg("host RAM is exhausted and swap is full: {desc}; the next allocation wakes the OOM killer (data "
                                         "loaders die first)", desc=desc) if st else
                                     Msg("host RAM is exhausted and there is no swap: {desc}; the next allocation wakes the OOM "
                                         "killer (data loaders die first)", desc=desc)), "host", ev,
                                    remedy, SRC_MEM, measured=am))
        elif pct < LOW_AVAILABLE_PCT:
            findings.append(Finding("os.memory_pressure", Verdict.WARN,
                                    Msg("host RAM is nearly exhausted: {desc} (below {LOW_AVAILABLE_PCT:g}%, a derived threshold)", desc=desc, LOW_AVAILABLE_PCT=LOW_AVAILABLE_PCT), "host", ev, remedy, SRC_MEM, measured=am))
        else:
            findings.append(Finding("os.memory_pressure", Verdict.PASS, Msg("memory: {desc}", desc=desc), "host", ev, "", SRC_MEM,
                                    measured=am))
    if not unit_known:  # sizes unknown: nothing to compare with the plan or the floor; swap by its share only
        if st and (is_kubernetes(exp) or (su and 100.0 * su / st >= SWAP_HEAVY_PCT)):  # swap_heavy's share rule
            findings.append(swap_finding(Msg("swap is on ({total}, {used} used)", total=human_bytes(st),
                                             used=human_bytes(su or 0)), ev[-1:], exp, used_bytes=su, total_bytes=st))
        return findings
    expected = exp.get("host_ram_gib")
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and expected > 0:
        have = total / GIB
        short = 100.0 * (expected - have) / expected
        if short > MEMORY_SHORT_PCT:
            findings.append(Finding("os.memory", Verdict.WARN,
                                    Msg("{have:.1f} GiB of memory, {short:.0f}% below the plan's {expected:g} GiB", have=have, short=short, expected=expected), "host",
                                    ev[:2], "Check every DIMM is seated and detected (dmidecode -t 17).", SRC_A8,
                                    measured=_plan_short(have, expected)))
    small = ram_floor(total / GIB, ev[:2], exp)
    if small is not None:
        findings.append(small)
    if st and (is_kubernetes(exp) or swap_heavy(su, st)):  # only when it matters (the free view has no device list)
        findings.append(swap_finding(Msg("swap is on ({total}, {used} used)", total=human_bytes(st), used=human_bytes(su or 0)),
                                     ev[-1:], exp,
                                     used_bytes=su, total_bytes=st))
    return findings


BYTES_GUESS_KIB = 16 * 1024 ** 3
"""A plain ``free`` total above this many KiB (16 TiB) is taken to be ``free -b`` bytes instead:
no single host holds that much RAM, and a 16+ GiB host prints more than that in bytes (heuristic)."""


def _free_unit(command: str) -> int | None:
    """The unit of unsuffixed numbers from the ``free`` command typed (procps free(1): -b bytes, -k KiB (default),
    -m MiB, -g GiB, --tebi TiB; --kilo/--mega/--giga powers of 1000); None when the command is not shown."""
    if not re.match(r"^(?:sudo\s+)?free\b", command.strip()):
        return None
    flags = {"-b": 1, "--bytes": 1, "-k": 1024, "--kibi": 1024, "-m": 1024 ** 2, "--mebi": 1024 ** 2, "-g": 1024 ** 3,
             "--gibi": 1024 ** 3, "--tebi": 1024 ** 4, "--kilo": 1000, "--mega": 1000 ** 2, "--giga": 1000 ** 3}
    for tok in command.split()[1:]:
        if tok in flags:
            return flags[tok]
        if re.fullmatch(r"-[a-z]+", tok):
            for ch in reversed(tok[1:]):
                if f"-{ch}" in flags:
                    return flags[f"-{ch}"]
    return 1024


def judge_free_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge: unsuffixed numbers are KiB (plain ``free``), unless they only make sense as
    bytes (``free -b``, see :data:`BYTES_GUESS_KIB`) or as a larger unit the paste does not show (a total under
    :data:`KIB_TOTAL_MIN`: ``free -m`` or ``-g``; judged by ratios, held-out r37 #08)."""
    unit = _free_unit(str(exp.get("command", "")))
    f = parse_free(text, unit or 1024)
    plain = not re.search(r"\d[KMGTP]i?\b|\dB\b", f.mem_line)
    if unit is None and f.total and f.total > BYTES_GUESS_KIB * 1024 and plain:
        f = parse_free(text, 1)
    elif unit is None and f.total and f.total < KIB_TOTAL_MIN * 1024 and plain:
        return judge_free(parse_free(text, 1), exp, "free", unit_known=False)
    return judge_free(f, exp, "free")


SRC_MEMINFO = ("proc(5), /proc/meminfo (MemTotal, MemAvailable, SwapTotal, SwapFree in kB; HardwareCorrupted: memory "
               "the kernel took out of use after a hardware error, CONFIG_MEMORY_FAILURE) "
               "(https://man7.org/linux/man-pages/man5/proc.5.html); the kernel's hwpoison documentation "
               "(https://docs.kernel.org/mm/hwpoison.html)")


HUGEPAGES_WARN_FRACTION = 0.25
"""Static huge pages holding this share of the host's memory or more warn (bringup's judgement: a quarter of RAM out of
reach of the training processes is more than any GPU host's own needs reserve)."""
SRC_HUGEPAGES = ("the Linux kernel's HugeTLB Pages documentation (https://docs.kernel.org/admin-guide/mm/hugetlbpage.html): "
                 "HugePages_Total pages of Hugepagesize are reserved in the kernel's huge page pool, used only through "
                 "hugetlbfs or MAP_HUGETLB")


def judge_meminfo_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """/proc/meminfo judged as ``free`` is (the same facts: :func:`judge_free`, its MemTotal/MemAvailable and swap
    lines as evidence); static huge pages holding :data:`HUGEPAGES_WARN_FRACTION` of it or more warn; and ``health.host_memory`` WARN when HardwareCorrupted is above 0 kB (pages the kernel poisoned
    after an uncorrectable memory error: a DIMM to look at)."""
    m = parse_meminfo(text)
    k = m.kib
    lines = {ln.split(":")[0].strip(): ln.strip() for ln in text.splitlines() if ":" in ln}
    kb = lambda key: k[key] * 1024 if key in k else None  # noqa: E731 - kB (KiB) -> bytes
    st, sf = kb("SwapTotal"), kb("SwapFree")
    avail = kb("MemAvailable")
    if avail is None and all(x in k for x in ("MemFree", "Buffers", "Cached")):
        # a kernel before 3.14 has no MemAvailable: free, buffers and page cache, as procps free's old
        # "-/+ buffers/cache" line counted it (held-out round 208)
        avail = (k["MemFree"] + k["Buffers"] + k["Cached"]) * 1024
    f = FreeFacts(mem={"total": kb("MemTotal"), "available": avail, "free": kb("MemFree")},
                  swap={"total": st, "free": sf, "used": st - sf if st is not None and sf is not None else None},
                  header="/proc/meminfo", mem_line=" ".join(lines.get(x, "") for x in ("MemTotal", "MemAvailable")).strip(),
                  swap_line=" ".join(lines.get(x, "") for x in ("SwapTotal", "SwapFree")).strip())
    out = judge_free(f, exp, "/proc/meminfo")
    total, huge = k.get("MemTotal"), k.get("HugePages_Total", 0) * k.get("Hugepagesize", 0)
    if total and huge >= HUGEPAGES_WARN_FRACTION * total:
        # static huge pages are held by hugetlbfs whether used or not: PyTorch, its pinned buffers and the data loaders
        # allocate ordinary pages and cannot use them (held-out round 286: 540 GB of 593 GB reserved, 34 GB available)
        out = [x for x in out if not (x.id == "os.memory_pressure" and x.verdict is Verdict.PASS)]
        out.append(Finding("os.memory_pressure", Verdict.WARN,
                           Msg("static huge pages hold {huge} ({pct:.0f}% of {total}; {free} of them free): memory that "
                               "ordinary allocations (the training processes, pinned buffers, data loaders) cannot use",
                               huge=human_bytes(huge * 1024), pct=100.0 * huge / total, total=human_bytes(total * 1024),
                               free=human_bytes(k.get("HugePages_Free", 0) * k.get("Hugepagesize", 0) * 1024)), "host",
                           tuple(lines[x] for x in ("MemTotal", "MemAvailable", "HugePages_Total", "HugePages_Free",
                                                    "Hugepagesize") if x in lines),
                           "If no program on this node needs them (a database, DPDK, VMs), lower vm.nr_hugepages (sysctl, "
                           "or the hugepages= kernel parameter) so the memory returns to ordinary use.", SRC_HUGEPAGES))
    bad = k.get("HardwareCorrupted", 0)
    if bad:
        out.append(Finding("health.host_memory", Verdict.WARN,
                           Msg("HardwareCorrupted {kib} kB: the kernel took memory out of use after an uncorrectable "
                               "hardware error (poisoned pages)", kib=f"{bad:,}"), "host",
                           (lines.get("HardwareCorrupted", ""),),
                           "Find the DIMM in the kernel log (`journalctl -k | grep -i -e mce -e EDAC -e 'Memory failure'`) "
                           "and the BMC's event log (`ipmitool sel elist`); replace it if its errors recur.", SRC_MEMINFO))
    elif "HardwareCorrupted" in k:
        out = [dataclasses.replace(x, message=x.message + Msg("; HardwareCorrupted 0 kB"))
               if x.id == "os.memory_pressure" and x.verdict is Verdict.PASS else x for x in out]
    return out


KIB_TOTAL_MIN = 65536
"""A plain ``free`` total below this many KiB (64 MiB) is not KiB: no Linux host that runs ``free`` has so little
memory, so the paste is ``free -m`` or ``free -g`` with the command left out (heuristic)."""


def _human(n: float | None) -> str:
    return human_bytes(n) if n is not None else "?"


def _as_printed(n: float | None) -> str:
    """A ``free`` figure whose unit the paste does not show: as printed, saying so."""
    return "?" if n is None else Msg("{n} (unit not shown)", n=f"{n:g}")


def judge_top_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge of ``top``'s Mem/Swap summary (:func:`wizard.parsers.hosttools.parse_top_memory`): judged as
    ``free`` is (held-out r38 #12: an old top's "Swap: 8388592k total, 8388592k used, 0k free" was not recognised)."""
    return judge_free(parse_top_memory(text), exp, "top")


def memory_pressure(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over the ``free_b`` probe (``free -b``): ``os.memory_pressure`` (and
    ``os.memory`` against the plan's host_ram_gib, ``os.swap`` for Kubernetes nodes)."""
    o = out.get("free_b")
    if o is None or not o.ok:
        return [missing("os.memory_pressure", o, "the memory use", source=SRC_MEM)]
    f = facts_of(out).parse_text("free_b", parse_free_bytes)
    assert f is not None
    return judge_free(f, plan, o.source)


def judge_swapon_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``swapon --show`` -> ``os.swap``: pass (a policy choice) unless the node is planned for
    Kubernetes (warn) or swap is full (warn)."""
    devs, header, problems = parse_swapon(text)
    if not devs:
        return [Finding("os.swap", Verdict.UNKNOWN, "could not read any swap device from swapon", "host",
                        tuple(([header] if header else []) + problems[:10]),
                        "Run `swapon --show --bytes` and give bringup the output (no output at all means swap is off).",
                        SRC_SWAP)]
    ev = tuple([header] + [d.line for d in devs])
    size = sum(d.size or 0 for d in devs)
    used = sum(d.used or 0 for d in devs)
    desc = (Msg('swap is on: {n_devs} device(s) ({items}), {human_bytes} of {human_bytes2} used', n_devs=len(devs), items=', '.join(f'{d.name} {d.type}' for d in devs), human_bytes=human_bytes(used), human_bytes2=human_bytes(size)))
    return [swap_finding(desc, ev, exp, full=bool(size) and 100.0 * used / size >= SWAP_FULL_PCT, used_bytes=used,
                         total_bytes=size)]


SRC_ZRAM = ("zramctl(8) (DISKSIZE: the device's size; DATA: uncompressed data stored; TOTAL: the memory it takes, "
            "compressed, with metadata; MOUNTPOINT [SWAP]); Linux kernel documentation, zram "
            "(https://docs.kernel.org/admin-guide/blockdev/zram.html)")


def judge_zramctl_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``zramctl`` -> ``os.swap`` through the one swap rule (:func:`wizard.rules.os.swap_finding`): the zram devices
    used as swap, their data against their size (heavy or full use warns: the host is short of RAM, and zram's pages
    sit in RAM themselves). zramctl shows no disk swap: without a zram swap device, unknown."""
    devs, header, problems = parse_zramctl(text)
    if not devs:
        return [Finding("os.swap", Verdict.UNKNOWN, Msg("could not read any zram device from zramctl"), "host",
                        tuple(([header] if header else []) + problems[:10]),
                        "Run `zramctl` (or `swapon --show --output-all` for every swap device) and give bringup its "
                        "whole output.", SRC_ZRAM)]
    swaps = [d for d in devs if d.mountpoint == "[SWAP]"]
    ev = tuple([header] + [d.line for d in devs][:8])
    if not swaps:
        return [Finding("os.swap", Verdict.UNKNOWN,
                        Msg("one zram device, not used as swap (no [SWAP] mount point); swap on a disk is not in "
                            "zramctl's output") if len(devs) == 1 else
                        Msg("{n} zram devices, none used as swap (no [SWAP] mount point); swap on a disk is not in "
                            "zramctl's output", n=len(devs)), "host", ev,
                        "Run `swapon --show --output-all` to see every swap device.", f"{SRC_ZRAM}; {SRC_SWAP}")]
    size = sum(d.disksize or 0 for d in swaps)
    data = sum(d.data or 0 for d in swaps)
    ram = sum(d.total or 0 for d in swaps)
    desc = Msg("zram swap is on: {items}, {data} of {size} used", items=", ".join(d.name for d in swaps),
               data=human_bytes(data), size=human_bytes(size))
    if ram:
        desc += Msg(" (held in {ram} of RAM, compressed)", ram=human_bytes(ram))
    return [swap_finding(desc, ev, exp, full=bool(size) and 100.0 * data / size >= SWAP_FULL_PCT, used_bytes=data,
                         total_bytes=size)]


def judge_lscpu(f: LscpuFacts, exp: Mapping[str, Any], source: str = "lscpu") -> list[Finding]:
    """``lscpu`` facts -> ``bios.cpu`` (offline CPUs fail) and ``bios.numa``."""
    findings: list[Finding] = []
    if f.cpus is None and f.sockets is None:
        if f.numa_nodes is None and not f.numa_cpus:
            return [Finding("bios.cpu", Verdict.UNKNOWN, "could not read the CPU counts from lscpu", "host",
                            tuple([source] + f.problems[:10]), "Run `lscpu` and give bringup its whole output.", SRC_A8)]
        # an excerpt from below the counts (held-out round 114: it starts at "NUMA node(s):"): its NUMA layout is
        # judged, the CPU count is not shown
        findings.append(Finding("bios.cpu", Verdict.SKIP, N_("this lscpu excerpt has no CPU(s) or Socket(s) line: the "
                                                             "CPU count and offline CPUs are not shown"), "host",
                                tuple(f.lines[k] for k in ("Model name",) if k in f.lines),
                                "Run `lscpu` and give bringup its whole output to check the CPU count.", SRC_A8))
        return findings + _lscpu_numa(f, exp)
    keys = ("Model name", "CPU(s)", "On-line CPU(s) list", "Off-line CPU(s) list", "Thread(s) per core",
            "Core(s) per socket", "Socket(s)", "NUMA node(s)")
    ev = tuple(f.lines[k] for k in keys if k in f.lines)
    s, c, t = f.sockets, f.cores_per_socket, f.threads_per_core
    shape = (Msg("{s} socket(s) x {c} cores x {t} threads", s=s, c=c, t=t) if s and c and t else "")  # walk 31
    desc = (f"{f.model or 'CPU'}: " + (shape + ' = ' if shape else '') + Msg('{value} CPUs', value=f.cpus or '?'))
    offline = f.fields.get("Off-line CPU(s) list", "").strip()
    listed = f.fields.get("On-line CPU(s) list", "").strip()
    online = cpulist_count(listed) if listed else None  # an excerpt without the line says nothing about it
    if offline:
        findings.append(Finding("bios.cpu", Verdict.FAIL, Msg("{desc}; CPUs {offline} are offline", desc=desc, offline=offline), "host", ev,
                                "Bring them online (echo 1 > /sys/devices/system/cpu/cpuN/online) or find why the "
                                "kernel could not (maxcpus=/nr_cpus= on the kernel command line, a BIOS core limit).",
                                SRC_A8))
    elif f.cpus and online is not None and online < f.cpus:
        findings.append(Finding("bios.cpu", Verdict.FAIL, Msg("{desc}; only {online} are online", desc=desc, online=online), "host", ev,
                                "Bring the offline CPUs online, or find why the kernel could not.", SRC_A8))
    else:
        vuln = [k for k, v in f.fields.items() if v.startswith("Vulnerable")]
        note = (Msg("; lscpu lists {n} CPU vulnerabilities as not mitigated ({names}{micro}): a security matter for "
                    "a BIOS/microcode update, not the GPUs' readiness", n=len(vuln), names=", ".join(vuln[:4]),
                    micro=Msg(", no microcode") if any("no microcode" in f.fields[k] for k in vuln) else "")
                if vuln else "")
        findings.append(Finding("bios.cpu", Verdict.PASS, (desc + (Msg(', all online') if online else '') + note),
                                "host", ev + tuple(f.lines[k] for k in vuln[:4]), "",
                                SRC_A8 + ("; Linux kernel docs, Hardware vulnerabilities (/sys/devices/system/cpu/"
                                          "vulnerabilities: 'Vulnerable' = no mitigation in use), "
                                          "https://docs.kernel.org/admin-guide/hw-vuln/index.html" if vuln else "")))
    return findings + _lscpu_numa(f, exp)


def _lscpu_numa(f: LscpuFacts, exp: Mapping[str, Any]) -> list[Finding]:
    """``bios.numa`` from lscpu's "NUMA node(s)" and "NUMA nodeN CPU(s)" lines; none when it shows neither."""
    nodes = f.numa_nodes if f.numa_nodes is not None else (len(f.numa_cpus) or None)
    if nodes is None:
        return []
    with_cpus = [n for n, v in f.numa_cpus.items() if v.strip()]
    without = [n for n, v in f.numa_cpus.items() if not v.strip()]
    nev = tuple([f.lines["NUMA node(s)"]] if "NUMA node(s)" in f.lines else []) + tuple(
        f.lines[k] for k in f.lines if k.startswith("NUMA node") and k != "NUMA node(s)")
    found = _numa_verdict(nodes, len(with_cpus) if f.numa_cpus else None, without, exp, nev[:16])
    # a paste cut inside the "NUMA nodeN CPU(s)" lines (fewer lines than "NUMA node(s)" says) counts the nodes it states
    listed = bool(f.numa_cpus) and (f.numa_nodes is None or len(f.numa_cpus) >= f.numa_nodes)
    cpu_nodes = len(with_cpus) if listed else nodes
    arch = f.fields.get("Architecture", "")
    # x86-64 and Arm servers give every socket its own memory controllers; other machines group sockets on one node's
    # memory by design (SGI Altix ia64: 2 sockets a node, held-out round 323), and lscpu's socket count is not a
    # package count on SPARC T-series or POWER partitions
    other = re.search(r"ppc|s390|sparc|ia64|POWER\d|UltraSPARC|SPARC|Itanium|IBM/S390",
                      f"{arch} {f.fields.get('Model name', '')} {f.fields.get('Vendor ID', '')} "
                      f"{f.fields.get('Model', '')}", re.I)
    # a guest's sockets are what its hypervisor presents (a 2-vCPU KVM guest as 2 sockets on one node: held-out round
    # 343), not the machine's memory controllers
    guest = bool(f.fields.get("Hypervisor vendor", "").strip())
    per_socket = arch in ("", "x86_64", "aarch64", "i686", "i386") and not other and not guest
    if (found.verdict is Verdict.PASS and per_socket and f.sockets and cpu_nodes < f.sockets
            and not exp.get("numa_nodes")):
        # each socket has its own memory controllers, so Linux shows at least one node per socket unless the BIOS
        # interleaves memory across the sockets (NUMA off, "node interleaving") or a socket has no memory of its own
        return [Finding("bios.numa", Verdict.WARN,
                       Msg("{nodes} NUMA node(s) with CPUs for {sockets} sockets: the BIOS interleaves memory across "
                           "the sockets (NUMA off) or a socket has no memory, so the kernel cannot keep a GPU's host "
                           "memory and data-loader threads on the socket the GPU hangs off", nodes=cpu_nodes,
                           sockets=f.sockets), "host",
                       tuple(f.lines[k] for k in ("Socket(s)",) if k in f.lines) + nev[:8],
                       "Turn NUMA on in the BIOS (disable Node/Memory Interleaving; on AMD EPYC choose NPS1 or more, "
                       "on Intel keep UMA off), and check that every socket has DIMMs (`dmidecode -t memory`); then "
                       "`lscpu` shows a NUMA node per socket or more.", SRC_NUMA)]
    return [found]


def _numa_verdict(nodes: int, cpu_nodes: int | None, memory_only: list[int], exp: Mapping[str, Any],
                  ev: tuple[str, ...]) -> Finding:
    desc = (Msg('{nodes} NUMA node(s)', nodes=nodes))
    if memory_only:
        desc += (Msg(', {cpu_nodes} with CPUs and {n_memory_only} memory-only (CPU-less) node(s) {map}: device or CXL memory the kernel exposes as NUMA nodes, not a fault', cpu_nodes=cpu_nodes, n_memory_only=len(memory_only), map=', '.join(map(str, memory_only))))
    expected = exp.get("numa_nodes")
    if isinstance(expected, int) and not isinstance(expected, bool) and expected > 0 and expected != nodes and not (
            cpu_nodes is not None and memory_only and expected == cpu_nodes):
        return Finding("bios.numa", Verdict.FAIL, Msg("{desc}; the plan expects {expected}", desc=desc, expected=expected), "host", ev,
                       "Check the BIOS NUMA setting (NPS on AMD EPYC, SNC on Intel Xeon) and that every socket has "
                       "memory in its channels.", SRC_NUMA)
    return Finding("bios.numa", Verdict.PASS, desc, "host", ev, "", SRC_NUMA)


def judge_lscpu_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    return judge_lscpu(parse_lscpu(text), exp)


def cpu_layout(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over the ``lscpu`` probe: ``bios.cpu`` (offline CPUs fail) and
    ``bios.numa`` (NUMA node count against the plan; memory-only nodes explained)."""
    o = out.get("lscpu")
    if o is None or not o.ok:
        return [missing("bios.cpu", o, "the CPU layout", source=SRC_A8)]
    f = facts_of(out).parse_text("lscpu", parse_lscpu)
    assert f is not None
    return judge_lscpu(f, plan, o.source)


def judge_numactl(f: NumactlFacts, exp: Mapping[str, Any]) -> list[Finding]:
    """``numactl --hardware`` facts -> ``bios.numa`` and ``bios.numa_memory`` (+ ``os.memory`` vs the plan). Its
    node distance table alone (the header row's node ids) gives the node count, judged as the whole output's is; the
    CPUs and memory of each node are not in it, and are said to be missing."""
    if not f.nodes and f.distance_nodes:
        count = len(f.distance_nodes)
        only = _numa_verdict(count, None, [], exp, tuple(f.distance_lines[:8]))
        return [dataclasses.replace(only, message=only.message + Msg(
            " (from the node distance table alone: each node's CPUs and memory are not in this paste)"))]
    if not f.nodes:
        return [Finding("bios.numa", Verdict.UNKNOWN, "could not read any NUMA node from numactl --hardware", "host",
                        tuple(([f.available_line] if f.available_line else []) + f.problems[:10]),
                        "Run `numactl --hardware` and give bringup its whole output.", SRC_NUMA)]
    nodes = sorted(f.nodes.values(), key=lambda n: n.id)
    count = f.available if f.available is not None else len(nodes)
    memory_only = [n.id for n in nodes if not n.cpus]
    cpu_nodes = [n for n in nodes if n.cpus]
    ev = tuple(([f.available_line] if f.available_line else []) + [ln for n in nodes for ln in n.lines][:16])
    findings = [_numa_verdict(count, len(cpu_nodes), memory_only, exp, ev)]
    sizes = [(n, n.size_mib) for n in cpu_nodes if n.size_mib is not None]
    if sizes:
        biggest = max(s for _, s in sizes)
        low = [(n, s) for n, s in sizes if biggest and s < NUMA_MEMORY_IMBALANCE * biggest]
        mev = tuple(ln for n in nodes for ln in n.lines if " size:" in ln)
        per = joined(", ", (Msg("node {id} {gib:.1f} GiB", id=n.id, gib=s / 1024) for n, s in sizes))
        least, least_mib = min(sizes, key=lambda x: x[1])
        nm = measure(least_mib / 1024, NUMA_MEMORY_IMBALANCE * biggest / 1024, "GiB", "at_least",
                     f"NUMA node {least.id} memory ({NUMA_MEMORY_IMBALANCE:.0%} of the largest node)")
        if low:
            findings.append(Finding("bios.numa_memory", Verdict.WARN,
                                    Msg("memory is uneven across NUMA nodes ({per}): node(s) {a1} hold less than "
                                        "{NUMA_MEMORY_IMBALANCE:.0%} of the largest", per=per, a1=', '.join(str(n.id) for n, _ in low), NUMA_MEMORY_IMBALANCE=NUMA_MEMORY_IMBALANCE), "host", mev,
                                    "Check that every memory channel of every socket holds a DIMM of the same size "
                                    "(dmidecode -t 17); a missing or failed DIMM empties a channel.", SRC_NUMA,
                                    measured=nm))
        else:
            findings.append(Finding("bios.numa_memory", Verdict.PASS, Msg("memory is even across NUMA nodes ({per})", per=per),
                                    "host", mev, "", SRC_NUMA, measured=nm))
        total_gib = sum(s for _, s in sizes) / 1024
        expected = exp.get("host_ram_gib")
        if isinstance(expected, (int, float)) and not isinstance(expected, bool) and expected > 0:
            short = 100.0 * (expected - total_gib) / expected
            if short > MEMORY_SHORT_PCT:
                findings.append(Finding("os.memory", Verdict.WARN, Msg("{total_gib:.1f} GiB of memory in the NUMA nodes, {short:.0f}% below the plan's "
                                                                       "{expected:g} GiB", total_gib=total_gib, short=short, expected=expected), "host", mev,
                                        "Check every DIMM is seated and detected (dmidecode -t 17).", SRC_A8,
                                        measured=_plan_short(total_gib, expected)))
    return findings


def judge_numactl_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    return judge_numactl(parse_numactl(text), exp)


# ------------------------------------------------------------------ ulimit -a

LIMITS_ID = "node.host_limits"
SRC_MEMLOCK = ("getrlimit(2), RLIMIT_MEMLOCK (the bytes a process may lock in RAM: RDMA memory registration pins "
               "pages and counts against it), https://man7.org/linux/man-pages/man2/getrlimit.2.html; IBM support, "
               "'OFED ... not able to pin a large enough amount of memory: increase the memlock limits' "
               "(https://www.ibm.com/support/pages/node/129429); NCCL troubleshooting, containers (--ulimit "
               "memlock=-1), https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html")


def judge_ulimit_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``node.host_limits`` from ``ulimit -a``: the locked-memory limit (``-l``) unlimited passes; a number warns,
    because RDMA (NCCL over InfiniBand/RoCE, GPUDirect RDMA) pins its buffers against it and fails to register memory
    ("ibv_reg_mr failed", "Cannot allocate memory") when it is small. Open files and processes are reported, not
    judged (no public floor for a training job)."""
    from wizard.parsers.hosttools import parse_ulimit

    lim = parse_ulimit(text)
    if "l" not in lim:
        return [Finding(LIMITS_ID, Verdict.UNKNOWN, "this ulimit output has no max locked memory (-l) row", "host",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `ulimit -a` output "
                        "(as the user that runs the training jobs, in the same kind of session).", SRC_MEMLOCK)]
    value, row = lim["l"]
    words = {"n": N_("open files {n}"), "u": N_("max user processes {n}")}
    others = SEMICOLON.join(Msg(w, n=lim[k][0]) for k, w in words.items() if k in lim)
    ev = tuple(r for k in ("l", "n", "u") if k in lim for r in [lim[k][1]])
    if value == "unlimited":
        return [Finding(LIMITS_ID, Verdict.PASS,
                        Msg("max locked memory is unlimited: RDMA can pin its buffers{others}",
                            others=Msg(" ({others})", others=others) if others else ""), "host", ev, "",
                        SRC_MEMLOCK)]
    return [Finding(LIMITS_ID, Verdict.WARN,
                    Msg("max locked memory is {value} KiB: RDMA (NCCL over InfiniBand or RoCE, GPUDirect RDMA) pins "
                        "its buffers against this limit and fails to register memory when it is this small",
                        value=value), "host", ev,
                    "Set it unlimited for the users that run jobs (`* soft memlock unlimited` and `* hard memlock "
                    "unlimited` in /etc/security/limits.conf, LimitMEMLOCK=infinity for services and slurmd, "
                    "`--ulimit memlock=-1` for containers), log in again and check `ulimit -l`.", SRC_MEMLOCK)]


# ------------------------------------------------------------------ sensors (lm-sensors)

SENSORS_ID = "health.host_sensors"
SRC_SENSORS = ("sensors(1) (lm-sensors: each reading with the limits its chip holds, and ALARM when the chip's alarm "
               "flag is set), https://man7.org/linux/man-pages/man1/sensors.1.html; the kernel's hwmon sysfs interface "
               "(temp*_max/_crit, fan*_min, *_alarm), https://docs.kernel.org/hwmon/sysfs-interface.html")


def judge_sensors_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.host_sensors`` from lm-sensors' ``sensors``: a temperature at or above its chip's crit limit fails;
    one at or above its high limit, or any reading lm-sensors flags ALARM (a fan under its minimum, a value outside
    the chip's limits), warns; otherwise passes with the hottest reading. Limits are the chip's own, as printed."""
    from wizard.parsers.hosttools import parse_sensors

    rs = parse_sensors(text)
    if not rs:
        return [Finding(SENSORS_ID, Verdict.UNKNOWN, "no sensor reading could be read from this sensors output", "host",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `sensors` output.",
                        SRC_SENSORS)]
    out: list[Finding] = []
    unset: list[Any] = []
    for r in rs:
        where = f"{r.chip} {r.label}"
        crit, high = r.limits.get("crit"), r.limits.get("high", r.limits.get("max"))
        if r.unit == "°C" and crit is not None and crit > 0 and r.value >= crit:
            out.append(Finding(SENSORS_ID, Verdict.FAIL, Msg("{where}: {value:g} °C, at or above its critical limit "
                                                             "{crit:g} °C", where=where, value=r.value, crit=crit),
                               where, r.lines, "Find why it runs this hot (fans, airflow, blanking panels, a blocked "
                               "filter, the room's inlet temperature) before the node takes load.", SRC_SENSORS))
        elif r.unit == "°C" and high is not None and high > 0 and r.value >= high:
            out.append(Finding(SENSORS_ID, Verdict.WARN, Msg("{where}: {value:g} °C, at or above its high limit "
                                                             "{high:g} °C", where=where, value=r.value, high=high),
                               where, r.lines, "Check the cooling of that part (fans, airflow) and read it again under "
                               "load.", SRC_SENSORS))
        elif r.alarm and r.limits.get("min") == 0 and r.limits.get("max") == 0 and r.value != 0:
            unset.append(r)  # min = max = 0: the limits were never set, so any reading is "outside" them
        elif r.alarm:
            out.append(Finding(SENSORS_ID, Verdict.WARN, Msg("{where}: lm-sensors flags ALARM ({value:g} {unit}): the "
                                                             "chip's alarm is set, a reading outside its limits or a "
                                                             "fan below its minimum", where=where, value=r.value,
                                                             unit=r.unit), where, r.lines,
                               "Check that part (a fan that reads 0 RPM under its minimum is stopped or unplugged); if "
                               "the reading is fine, the chip's limits are set wrong (sensors.conf), so fix them to "
                               "keep the alarm meaningful.", SRC_SENSORS))
    if out:
        return out
    temps = [r for r in rs if r.unit == "°C"]
    hot = max(temps, key=lambda r: r.value) if temps else None
    if unset:  # held-out round 374: nct6779 voltage inputs flagged ALARM against limits of +0.00 V / +0.00 V
        return [Finding(SENSORS_ID, Verdict.PASS,
                        Msg("{n} readings within their chips' limits; the ALARM on {names} is against limits never set "
                            "(min = max = 0), not a fault", n=len(rs) - len(unset),
                            names=", ".join(f"{r.chip} {r.label}" for r in unset[:6])
                            + (f" and {len(unset) - 6} more" if len(unset) > 6 else ""))
                        + (Msg("; hottest {where} {value:g} °C", where=f"{hot.chip} {hot.label}", value=hot.value)
                           if hot else ""), "host", tuple(ln for r in unset[:3] for ln in r.lines), "", SRC_SENSORS)]
    return [Finding(SENSORS_ID, Verdict.PASS,
                    Msg("{n} readings within their chips' limits, no ALARM", n=len(rs))
                    + (Msg("; hottest {where} {value:g} °C", where=f"{hot.chip} {hot.label}", value=hot.value)
                       if hot else ""), "host", hot.lines if hot else rs[0].lines, "", SRC_SENSORS)]


SRC_LSHW = ("lshw(1): a device node marked UNCLAIMED has no driver bound to it (https://ezix.org/project/wiki/"
            "HardwareLiSter); the Linux driver model, sysfs 'driver' link of a PCI device "
            "(https://docs.kernel.org/driver-api/driver-model/binding.html)")
_COMPUTE_VENDOR = re.compile(r"NVIDIA|Advanced Micro Devices|AMD/ATI", re.I)
_NOT_COMPUTE = re.compile(r"virtual VGA|ASPEED|Matrox|\bVGA\b.*\bBMC\b", re.I)


def judge_lshw_display_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``lshw -class display`` -> ``driver.loaded``: an NVIDIA or AMD GPU marked UNCLAIMED fails (no kernel driver
    bound: nothing can use it); GPUs with their driver pass, naming it; display adapters of a BMC or hypervisor are
    not GPUs for training and are left out."""
    from wizard.parsers.hosttools import parse_lshw_display

    gpus = [d for d in parse_lshw_display(text)
            if _COMPUTE_VENDOR.search(d.vendor + " " + d.product) and not _NOT_COMPUTE.search(d.product)]
    bad = [d for d in gpus if d.unclaimed or not d.driver]
    if bad:
        return [Finding("driver.loaded", Verdict.FAIL,
                        Msg("no kernel driver is bound to {gpus} (lshw: {word}): nothing can use the GPU",
                            gpus=", ".join(f"{d.product} ({d.bus})" if d.bus else d.product for d in bad),
                            word="UNCLAIMED" if any(d.unclaimed for d in bad) else "no driver= in its configuration"),
                        "host", tuple(ln for d in bad for ln in d.lines)[:8],
                        N_("See why the driver did not bind: `dmesg | grep -i -e nvidia -e NVRM -e amdgpu` (a probe "
                           "error, a module built for another kernel, Secure Boot refusing it), `lsmod`, and `lspci -nnk "
                           "-s BUS`; install the GPU's driver for the running kernel (in a VM, one that supports the "
                           "passed-through or virtual function), then reboot and check again."), SRC_LSHW)]
    if not gpus:
        return [Finding("driver.loaded", Verdict.UNKNOWN, Msg("lshw lists no NVIDIA or AMD GPU here"), "host",
                        tuple(ln for d in parse_lshw_display(text) for ln in d.lines[:2])[:4],
                        N_("Paste `sudo lshw -class display` from the GPU node (as root: lshw lists less without it)."),
                        SRC_LSHW)]
    return [Finding("driver.loaded", Verdict.PASS,
                    Msg("every GPU lshw lists has its driver: {gpus}",
                        gpus=", ".join(f"{d.product} (driver={d.driver})" for d in gpus)),
                    "host", tuple(ln for d in gpus for ln in d.lines if "driver=" in ln or "product" in ln)[:6], "",
                    SRC_LSHW)]
