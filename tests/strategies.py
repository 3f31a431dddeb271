"""The one set of hypothesis strategies of the fuzz tests: garbage, and mutations of real text.

Every fuzz test draws its inputs from here; what differs between areas is only *which* real outputs
are mutated (the files of ``tests/data`` an area reads) and which area tokens (format fragments such as
``"LnkSta:"`` or ``"NVRM: Xid (PCI:0000:"``) are mixed in. Nothing here knows a format.

- :func:`garbage`: random text, random bytes decoded as hosts decode them (UTF-8, bad bytes replaced),
  and soups of the area's tokens.
- :func:`mutated`: one real output with 1-6 random edits (:data:`OPS`): truncation at any character, a
  cut after any line, lines dropped, duplicated, swapped, cut short, replaced by random text or glued to
  the next, random text or byte garbage inserted, a number replaced by a huge / negative / odd one, an
  area token inserted, CRLF line ends, all lines joined into one.
- :func:`inputs`: either of them.

The end of the module holds the fuzz settings, real outputs and tokens of the areas that several test
files fuzz (``TOOLS_*``: nvcc, torch, NCCL, DCGM and the host tools; ``HOST_*``: the host probes' text;
``LINKS_*``: lspci, topology and NVLink), so that each is written once; those tokens are format fragments.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC
from wizard.model import Finding, Verdict
from tests.probe_data import text as _read

HUGE_NUMBERS = ["9" * 40, "18446744073709551616", "-1", "-99999999999999999999", "0", "00000000", "1e400",
                "NaN", "inf", "0x" + "F" * 20, "4294967295", "1.7976931348623157e309", "१२३"]
"""Numbers a parser must survive in place of a real one: overflow, negative, exponent, NaN, non-ASCII digits."""

NOISE = ["\0", "\x1b[31m", "\x1b[0m", "\ufffd", "\r", "\t", "\u00a0", "\u200b", "é", "\x7f"]
"""Control characters, terminal colour codes and Unicode oddities that pastes and decoded bytes bring."""

OPS = ("truncate", "cut_lines", "drop", "dup", "swap", "cut_line", "garble", "insert", "bytes", "splice",
       "huge", "token", "crlf", "join")
"""The edits :func:`mutated` applies (see the module docstring)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def decoded_bytes(max_size: int = 1500) -> st.SearchStrategy[str]:
    """Random bytes decoded the way hosts decode probe output (UTF-8, bad bytes replaced)."""
    return st.binary(max_size=max_size).map(lambda b: b.decode("utf-8", errors="replace"))


def garbage(tokens: Sequence[str] = (), max_size: int = 1500, max_tokens: int = 60) -> st.SearchStrategy[str]:
    """Random text, random decoded bytes, and (when ``tokens`` are given) strings of area tokens."""
    parts = [st.text(max_size=max_size), decoded_bytes(max_size)]
    if tokens:
        parts.append(st.lists(st.sampled_from(list(tokens)), max_size=max_tokens).map("".join))
    return st.one_of(*parts)


@functools.cache
def _file_text(path: Path) -> str:
    return _read(path)


def _body(source: str | Path) -> str:
    return _file_text(source) if isinstance(source, Path) else source


@st.composite
def mutate(draw, body: str, tokens: Sequence[str] = (), max_ops: int = 4) -> str:
    """``body`` with 1 to ``max_ops`` random edits of :data:`OPS`."""
    toks = list(tokens) + HUGE_NUMBERS + NOISE
    for _ in range(draw(st.integers(1, max(1, max_ops)))):
        op = draw(st.sampled_from(OPS))
        lines = body.splitlines(keepends=True)
        if op == "truncate":
            body = body[: draw(st.integers(0, len(body)))]
            continue
        if op == "crlf":
            body = body.replace("\r\n", "\n").replace("\n", "\r\n")
            continue
        if op == "join":
            body = " ".join(ln.rstrip("\r\n") for ln in lines)
            continue
        if op == "insert" or op == "bytes":
            at = draw(st.integers(0, len(body)))
            junk = draw(st.text(max_size=20) if op == "insert" else decoded_bytes(24))
            body = body[:at] + junk + body[at:]
            continue
        if not lines:
            continue
        i = draw(st.integers(0, len(lines) - 1))
        line, end = lines[i].rstrip("\r\n"), lines[i][len(lines[i].rstrip("\r\n")):]
        if op == "cut_lines":
            lines = lines[:i]
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines[i:i] = [lines[i]] * draw(st.integers(1, 4))
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut_line":
            lines[i] = line[: draw(st.integers(0, len(line)))] + end
        elif op == "garble":
            lines[i] = draw(st.text(max_size=80)) + end
        elif op == "splice":  # the line loses its end and runs into the next
            lines[i] = line
        elif op == "huge":
            numbers = list(_NUMBER.finditer(line))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                line = line[: m.start()] + draw(st.sampled_from(HUGE_NUMBERS)) + line[m.end():]
            else:
                line += " " + draw(st.sampled_from(HUGE_NUMBERS))
            lines[i] = line + end
        else:  # token: appended, put in front, or replacing the line's second half
            tok = draw(st.sampled_from(toks))
            where = draw(st.sampled_from(["end", "start", "half"]))
            line = {"end": line + tok, "start": tok + line, "half": line[: len(line) // 2] + tok}[where]
            lines[i] = line + end
        body = "".join(lines)
    return body


def mutated(sources: Sequence[str | Path], tokens: Sequence[str] = (), max_ops: int = 4) -> st.SearchStrategy[str]:
    """One of ``sources`` (real texts, or paths of real outputs read as hosts decode them), mutated."""
    srcs = list(sources)
    if not srcs:
        raise ValueError("mutated() needs at least one real output")
    return st.sampled_from(srcs).flatmap(lambda s: mutate(_body(s), tokens, max_ops))


def inputs(sources: Sequence[str | Path], tokens: Sequence[str] = (), max_size: int = 1500,
           max_ops: int = 4) -> st.SearchStrategy[str]:
    """Garbage or a mutated real output: what a fuzz test feeds a parser, a judge or ``explain``."""
    return st.one_of(garbage(tokens, max_size), mutated(sources, tokens, max_ops))


# --- the areas several test files fuzz -----------------------------------------------------------------

TOOLS_FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TOOLS_TOKENS = ["|", "+", "-", " ", "\n", ":", "#", "GPU", "Pass", "Fail", "Skip", "N/A", "0", "1",
                "9" * 400, "NCCL INFO", "NCCL WARN", "NET/IB : Using", "[0]", "float", "sum", "-1",
                "torch", "True", "12.4", "Mem:", "Swap:", "node 0 size:", "MB", "{", "}", "\"",
                "Successfully ran diagnostic for group.", "CPU(s):", "release 12.4, V12.4.1",
                "100.0%  proc'd: ", " (", " Gflop/s)", "errors: ", "temps: ", " C", "(DIED!)", "Tested 2 GPUs:",
                "GPU 0: OK", "#Entity   ", "XIDER", "8 GPUs found.", "| Name: ", "NvSwitches found."]


tools_garbage = garbage(TOOLS_TOKENS, max_size=1500, max_tokens=80)


TOOLS_REAL = sorted(p for d in (CASES, PUBLIC, SYNTHETIC) for p in d.glob("*")
                    if p.is_file() and p.name.startswith(("nvcc", "torch", "nccl", "dcgmi", "gpu-burn", "free", "swapon", "lscpu",
                                                          "numactl", "synthetic_nccl", "synthetic_dcgm", "synthetic_free",
                                                          "synthetic_lscpu", "synthetic_numactl")))


def tools_mutated() -> st.SearchStrategy[str]:
    """A real output of the tools area, mutated."""
    return mutated(TOOLS_REAL, TOOLS_TOKENS)


tools_inputs = st.one_of(tools_garbage, tools_mutated())


HOST_FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


HOST_TOKENS = ["0", "1", "-", ",", ":", "=", " ", "\t", "\n", "\0", "\"", "'", "\\", "#",
               "kB", "GPU ", "0x10de", "%", "9" * 5000, "[", "{", "}"]


host_garbage = garbage(HOST_TOKENS, max_size=2000)
"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


HOST_REAL: dict[str, list[Path]] = {
    "os_release": [LOCAL_VM / "etc/os-release", PUBLIC / "os-release__ubuntu-24.04.txt",
                   PUBLIC / "os-release__rhel-9.6.txt"],
    "meminfo": [LOCAL_VM / "proc/meminfo"],
    "swaps": [LOCAL_VM / "proc/swaps", PUBLIC / "proc-swaps__arm64-nvme-partition.txt",
              PUBLIC / "proc-swaps__cygwin-size-used-run-together.txt"],
    "cmdline": [LOCAL_VM / "proc/cmdline", CASES / "proc-cmdline__iommu-pt.txt"],
    "cpuinfo": [LOCAL_VM / "proc/cpuinfo"],
    "mounts": [LOCAL_VM / "proc/self/mounts"],
    "df": [LOCAL_VM / "df-P-T-B1-l.txt", SYNTHETIC / "synthetic_df__data-volume-96pct.txt"],
    "modules": [CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", PUBLIC / "proc-modules__cloudlinux9-vm.txt",
                PUBLIC / "lsmod__quadro-t2000-nouveau-loaded-partial.txt"],
    "nvidia_smi_l": [PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt",
                     CASES / "nvidia-smi__driver-not-loaded-failed-to-communicate.txt",
                     CASES / "nvidia-smi__rtx5090-no-devices-found.txt",
                     SYNTHETIC / "synthetic_nvidia-smi-L__gpu3-device-handle-error.txt"],
    "nvml": [LOCAL_VM / "nvml-probe.json"],
    "nvidia_driver_version": [CASES / "proc-driver-nvidia-version__open-565.txt",
                              PUBLIC / "proc-driver-nvidia-version__proprietary-515.txt"],
}


def host_mutated(paths: list[Path]) -> st.SearchStrategy[str]:
    """One real output of the host probes, mutated."""
    return mutated(paths, HOST_TOKENS)


def host_real_or_mutated(name: str):
    """A mutated real output of host probe ``name``, or garbage."""
    return st.one_of(host_mutated(HOST_REAL[name]), host_garbage)


LINKS_REAL = [p for d in (CASES, PUBLIC, SYNTHETIC) for p in sorted(Path(d).iterdir())
              if p.name.startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink", "dcgmi-nvlink", "synthetic_lspci",
                                    "synthetic_nvidia-smi-topo", "synthetic_nvidia-smi-nvlink"))]


LINKS_REAL_TEXT = [_read(p) for p in LINKS_REAL]


LINKS_TOKENS = ["GPU0", "GPU1", "NIC0", "NV18", "NV", "X", "OK", "CNS", "PIX", "SYS", "CPU Affinity", "LnkSta:", "LnkCap:",
                "Speed 8GT/s", "Speed unknown", "Width x16", "Width x0", "(downgraded)", "(ok)", "\t", "\n", " ", ":",
                "IOMMU Group 1:", "IOMMU Group 7 ", "01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330]",
                "0000:19:00.0 PCI bridge [0604]: x [1000:c010]", "Express (v2) Downstream Port (Slot+), MSI 00",
                "Bus: primary=00, secondary=01, subordinate=ff", "ACSCtl:\tSrcValid+", "UESta:\tDLP+", "UESvrt:\tDLP+",
                "Region 1: Memory at <unassigned> (64-bit, prefetchable)", "[size=99999999999999999999G]",
                "Capabilities: <access denied>", "GPU 0: NVIDIA H100 (UUID: GPU-1)", "Link 0: 26.562 GB/s",
                "Link 1: <inactive>", "Link 0: Replay Errors: 7", "gpuId 0:", "U", "D", "_", "[...]", "9" * 40, "\0", "é"]


def links_mutated() -> st.SearchStrategy[str]:
    """A real input of the links area, mutated."""
    return mutated(LINKS_REAL_TEXT, LINKS_TOKENS)


links_inputs = st.one_of(tools_garbage, links_mutated())
"""Garbage of the tools area's tokens, or a mutated real links input."""


plans = st.sampled_from([{}, {"gpu_model": "H100 NVL", "gpu_count": 2}, {"gpu_model": "L40S", "virtualization": True},
                         {"gpu_model": "RTX 5090", "under_load": True, "gpu_count": "eight"},
                         {"gpu_model": 7, "virtualization": "yes"}])
"""Plans ``explain`` is fuzzed with: empty, ordinary, and ones with wrong types."""


# ------------------------------------------------------------------ the kernel log, EDAC and rasdaemon area

EVENTS_FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


EVENTS_REAL: list[Path] = sorted(
    [p for p in CASES.glob("*") if p.name.startswith(("dmesg__", "journal__", "syslog__", "edac-util__",
                                                      "ras-mc-ctl-summary__"))]
    + [p for p in PUBLIC.glob("*") if p.is_file() and p.name.startswith(("kernel-log__", "edac", "ras-mc-ctl"))]
    + [p for p in SYNTHETIC.glob("synthetic_*") if p.is_file() and p.name.startswith(
        ("synthetic_kernel-log", "synthetic_edac", "synthetic_ras"))])


EVENTS_REAL_TEXT = [_read(p) for p in EVENTS_REAL]


EVENTS_TOKENS = ["NVRM: Xid (PCI:0000:", "9b:00): ", "154, ", "GPU recovery action changed from 0x0 (None) to 0x",
          "(Drain and Reset)", "79, GPU has fallen off the bus.", "[  12.345678] ", "[Sun Feb 23 16:24:18 2025] ",
          "May  7 06:45:12 node01 kernel: ", "10.0.0.1: kern: warning: [2026-04-22T21:30:51Z]: ", "-- Boot 1a --",
          "pcieport 0000:00:02.0: ", "AER: Corrected error received: id=0010", "PCIe Bus Error: severity=",
          "Uncorrected (Fatal), type=Transaction Layer, ", "  device [8086:6f04] error status/mask=1/2", "[ 5] x",
          "EDAC MC3: ", "1 UE memory read error on ", "DIMM_A1 (channel:2)", "{1}[Hardware Error]: ",
          "section_type: PCIe error", "event severity: fatal", "mce: [Hardware Error]: ", "RmInitAdapter failed! ",
          "limited by 8.0 GT/s PCIe x4 link at ", "(capable of 1 Gb/s with 16.0 GT/s PCIe x16 link)",
          "nouveau 0000:01:00.0: ", "NVRM: GPU 0000:01:00.0 is already bound to nouveau.", "Call Trace:",
          "mc0: csrow0: DIMM: ", "31 Corrected Errors", "No Memory errors.", "MCE records summary:",
          "\t1 Corrected error, no action required. errors", "Label\tCE\tUE", "/sys/devices/system/edac/mc/mc0/",
          "ce_count:", "9" * 5000, "\n", " ", "\t", ":", ",", "(", ")", "\0", "\x1b[31m"]


events_garbage = garbage(EVENTS_TOKENS, max_size=2000)


def events_mutated_real() -> st.SearchStrategy[str]:
    """A real kernel-log / EDAC / rasdaemon output, mutated."""
    return mutated(EVENTS_REAL_TEXT, EVENTS_TOKENS)


events_inputs = st.one_of(events_garbage, events_mutated_real())


def events_findings_valid(findings: list[Finding]) -> None:
    """Findings of the kernel-log area are well formed: ids, messages, subjects, remedies on non-passes."""
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding)
        assert isinstance(f.verdict, Verdict)
        # driver.kernel_module: modprobe / insmod refusing the nvidia module in the same journal (rules/driver_install)
        assert f.id.startswith(("health.", "explain.", "driver.kernel_module")) and f.message and f.subject
        assert all(isinstance(e, str) for e in f.evidence)
        if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
            assert f.remedy, f


# ------------------------------------------------------------------ sysfs trees of the host probes

CPU, NODE, PCI = "/sys/devices/system/cpu", "/sys/devices/system/node", "/sys/bus/pci/devices"


digits = st.text(alphabet="0123456789", min_size=1, max_size=6000)


contents = st.one_of(st.none(), host_garbage, st.sampled_from(["0\n", "1\n", "0-1\n", "0-3,8\n", "-1\n", "identity\n",
                                                          "DMA-FQ\n", "0x10de\n", "0x030200\n", "0x068000\n",
                                                          "16\n", "32.0 GT/s PCIe\n", ""]))


bdf = st.sampled_from(["0000:18:00.0", "0000:05:00.0", "0000:00:01.0"]) | st.text(max_size=12)


tree_paths = st.one_of(
    st.sampled_from([f"{CPU}/online", f"{CPU}/possible", f"{CPU}/present", f"{CPU}/smt/active",
                     f"{CPU}/smt/control", f"{NODE}/online"]),
    st.builds(lambda n, k: f"{CPU}/cpu{n}/topology/{k}", digits, st.sampled_from(["physical_package_id", "core_id"])),
    st.builds(lambda n: f"{NODE}/node{n}/cpulist", digits),
    st.builds(lambda g: f"/sys/kernel/iommu_groups/{g}/type", st.text(max_size=8)),
    st.builds(lambda u: f"/sys/class/iommu/{u}/uevent", st.text(max_size=8)),
    st.builds(lambda b, a: f"{PCI}/{b}/{a}", bdf, st.sampled_from(
        ["vendor", "device", "class", "numa_node", "current_link_width", "max_link_speed", "subsystem_vendor",
         "subsystem_device"])),
    st.builds(lambda d, b: f"/sys/bus/pci/drivers/{d}/{b}", st.sampled_from(["nvidia", "vfio-pci"]), bdf),
    st.builds(lambda f: f"/sys/class/dmi/id/{f}", st.sampled_from(["sys_vendor", "product_name", "product_serial"])),
    st.text(max_size=60),
)


host_trees = st.dictionaries(tree_paths, contents, max_size=40)
"""Random sysfs trees (path -> content, None = unreadable) in the shape the host probes read."""


# ------------------------------------------------------------------ the BIOS/OS area (tests/data/platform)

PLATFORM_SAMPLES = sorted(p for d in ("public", "synthetic") for p in (CASES.parent / "platform" / d).iterdir() if p.is_file())


PLATFORM_TOKENS = ["Size: ", "No Module Installed", "Locator: ", "Bank Locator: P0 CHANNEL ", "Handle 0x1, DMI type 17, 84 bytes\n",
          "Memory Device\n", "\t", "\n", " ", ":", "=", "GB", "MB", "MT/s", "Leap status", "NTPSynchronized=",
          "System clock synchronized: ", "yes", "no", "SecureBoot enabled", "swap", "#", "barrier=0",
          "nobarrier", "/sys/devices/system/cpu/cpu0/cpuidle/state1/latency:", "9" * 4000, "0x", "\0"]


platform_garbage = garbage(PLATFORM_TOKENS, max_size=1500)


def platform_mutated_sample() -> st.SearchStrategy[str]:
    """A real BIOS/OS-area sample (tests/data/platform), mutated."""
    return mutated(PLATFORM_SAMPLES, PLATFORM_TOKENS)


platform_inputs = st.one_of(platform_garbage, platform_mutated_sample())


def sysfs_listing_tree(t: str) -> dict[str, str | None]:
    """A `grep . FILES` listing (path:value lines) as the path -> content map of a tree probe."""
    files: dict[str, str | None] = {}
    for ln in t.splitlines():
        p, sep, v = ln.rpartition(":")
        if sep:
            files[p] = v
    return files


# ------------------------------------------------------------------ kernel-log time stamps

KERNEL_LOG_STAMPS = {
    "[  +0.000004] ": ("dmesg-reltime", "+0.000004"),
    "[ +12.345678] ": ("dmesg-reltime", "+12.345678"),
    "[May19 19:57] ": ("dmesg-reltime", "May19 19:57"),
    "[Jan 5 03:04] ": ("dmesg-reltime", "Jan 5 03:04"),
    "[    5.123456 <    0.000127>] ": ("dmesg-delta", "0.000127"),
    "[<    0.000127>] ": ("dmesg-delta", "0.000127"),
    "kern  :err   : [  +0.000004] ": ("dmesg-decode", "+0.000004"),
    "kern  :err   : [May19 19:57] ": ("dmesg-decode", "May19 19:57"),
    "<3>[  +0.000004] ": ("dmesg-raw", "+0.000004"),
    "[    5.123456] ": ("dmesg", ""),
    "[Sun May 19 19:57:01 2022] ": ("dmesg-ctime", "Sun May 19 19:57:01 2022"),
    # journalctl -k -o short-delta / short-full (the same stamps, with the "host kernel:" prefix)
    "[    5.123456 <    0.000127>] gpu01 kernel: ": ("journal-delta", "0.000127"),
    "Sun 2024-05-19 19:57:01 CEST gpu01 kernel: ": ("journal-full", "Sun 2024-05-19 19:57:01 CEST"),
}
"""Every stamp style of dmesg and journalctl -k, with the format name and the stamp as printed."""
