"""Robustness: parsers and checks never raise, whatever the probes bring back.

DESIGN.md: "Parsers never raise on garbage: they return what they could read and say what they
could not." A check fed garbage returns findings with valid verdicts; for output with nothing in
it a parser could read, the verdict is ``unknown`` with the raw lines as evidence.

Inputs: random text, random bytes decoded as hosts decode them (UTF-8, errors="replace"), and
truncations and line mutations of the real outputs in tests/data (see PROVENANCE.md).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wizard.rules import gpu_presence as gc
from wizard.rules import bios as bios_rules
from wizard.rules import host as host_rules
from wizard.rules import os as os_rules
from wizard.rules.identity import dmi_fields, dmi_identity
from wizard.model import Finding, Verdict
from wizard.parsers.gpu import parse_driver_version, parse_nvidia_smi_l, parse_nvml, parse_pci
from wizard.parsers.host import (
    mount_for, parse_cmdline, parse_cpu, parse_cpulist, parse_df, parse_iommu, parse_meminfo,
    parse_modules, parse_mounts, parse_numa, parse_os_release, parse_proc_swaps,
)
from wizard.probes import ProbeOutput, tree_text

from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC, collect_tree, command_output, file_output
from tests import strategies

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ inputs

TOKENS = ["0", "1", "-", ",", ":", "=", " ", "\t", "\n", "\0", "\"", "'", "\\", "#",
          "kB", "GPU ", "0x10de", "%", "9" * 5000, "[", "{", "}"]
garbage = strategies.garbage(TOKENS, max_size=2000)
"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""

REAL: dict[str, list[Path]] = {
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


def mutated(paths: list[Path]) -> st.SearchStrategy[str]:
    """One real output, mutated (tests/strategies.py)."""
    return strategies.mutated(paths, TOKENS)


def real_or_mutated(name: str):
    return st.one_of(mutated(REAL[name]), garbage)


# ------------------------------------------------------------------ text parsers

TEXT_PARSERS: dict[str, Callable] = {
    "os_release": parse_os_release, "meminfo": parse_meminfo, "swaps": parse_proc_swaps,
    "cmdline": parse_cmdline, "cpuinfo": lambda t: parse_cpu(t, {}), "mounts": parse_mounts,
    "df": parse_df, "modules": parse_modules, "nvidia_smi_l": parse_nvidia_smi_l, "nvml": parse_nvml,
    "nvidia_driver_version": parse_driver_version,
}


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@FUZZ
@given(data=st.data())
def test_text_parsers_never_raise(name, data):
    raw = data.draw(real_or_mutated(name))
    result = TEXT_PARSERS[name](raw)
    assert result is not None


@FUZZ
@given(raw=garbage)
def test_parse_cpulist_returns_a_set_of_ints_or_none(raw):
    cpus = parse_cpulist(raw)
    assert cpus is None or all(isinstance(c, int) and c >= 0 for c in cpus)


@FUZZ
@given(path=st.text(max_size=40), mps=st.lists(st.text(max_size=20), max_size=8))
def test_mount_for_returns_one_of_the_mount_points(path, mps):
    mp = mount_for(path, mps)
    assert mp is None or mp in mps


@FUZZ
@given(raw=garbage)
def test_unreadable_lines_are_kept_verbatim(raw):
    """What a parser could not read it reports as the raw lines, for the evidence."""
    lines = raw.splitlines()
    for problems in (parse_meminfo(raw).problems, parse_proc_swaps(raw).problems, parse_df(raw)[1],
                     parse_modules(raw)[1], parse_mounts(raw)[1], parse_os_release(raw).problems,
                     parse_nvidia_smi_l(raw).problems):
        assert all(p in lines for p in problems)


# ------------------------------------------------------------------ tree parsers

CPU, NODE, PCI = "/sys/devices/system/cpu", "/sys/devices/system/node", "/sys/bus/pci/devices"
digits = st.text(alphabet="0123456789", min_size=1, max_size=6000)
contents = st.one_of(st.none(), garbage, st.sampled_from(["0\n", "1\n", "0-1\n", "0-3,8\n", "-1\n", "identity\n",
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
trees = st.dictionaries(tree_paths, contents, max_size=40)


@FUZZ
@given(tree=trees, cpuinfo=garbage)
def test_tree_parsers_never_raise(tree, cpuinfo):
    f = parse_cpu(cpuinfo, tree)
    assert f.logical is None or f.logical >= 0
    n = parse_numa(tree)
    assert all(isinstance(k, int) for k in n.nodes)
    parse_iommu(tree)
    facts = parse_pci(ProbeOutput("pci", "sysfs", files=tree))
    assert facts.devices_seen >= len({fn.bdf for fn in facts.functions})
    dmi_fields(tree)


# ------------------------------------------------------------------ checks

CHECKS: dict[str, tuple[Callable, str]] = {
    "os_release": (os_rules.os_release, "os.release"), "cpu": (bios_rules.cpu, "bios.cpu"), "numa": (bios_rules.numa, "bios.numa"),
    "memory": (host_rules.memory, "os.memory"), "swap": (os_rules.swap, "os.swap"), "iommu": (bios_rules.iommu, "bios.iommu"),
    "filesystems": (os_rules.filesystems, "os.filesystem"), "gpu_pci": (gc.gpu_pci, "health.gpu_pci"),
    "nouveau": (gc.nouveau, "os.nouveau"), "driver": (gc.driver, "driver.loaded"),
    "nvidia_smi": (gc.nvidia_smi, "driver.nvidia_smi"), "nvml": (gc.nvml, "health.nvml"),
    "dmi": (dmi_identity, "grounding.serials"),
}
TEXT_PROBES = {  # probe -> how it was collected (command probes have an exit status)
    "os_release": "/etc/os-release", "kernel": "/proc/sys/kernel/osrelease", "cpuinfo": "/proc/cpuinfo",
    "meminfo": "/proc/meminfo", "swaps": "/proc/swaps", "cmdline": "/proc/cmdline", "modules": "/proc/modules",
    "nvidia_driver_version": "/proc/driver/nvidia/version", "df": "$ df -P -T -B1 -l",
    "nvidia_smi_l": "$ nvidia-smi -L", "nvml": "NVML (pynvml)",
}
TREE_PROBES = ["cpu_topology", "numa", "iommu", "pci", "dmi", "sys_module"]


@functools.lru_cache(maxsize=None)
def base(kind: str) -> dict[str, ProbeOutput]:
    """'vm': the dev VM as captured (no GPU); 'gpu': the same host with a synthetic 8-GPU board."""
    outs = collect_tree(LOCAL_VM, ["os_release", "kernel", "cpuinfo", "cpu_topology", "numa", "meminfo",
                                   "swaps", "cmdline", "iommu", "mounts", "modules", "sys_module",
                                   "nvidia_driver_version", "pci", "dmi"])
    outs["df"] = command_output("df", LOCAL_VM / "df-P-T-B1-l.txt", "df -P -T -B1 -l")
    outs["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", "$ nvidia-smi -L", rc=127, error="command not found: nvidia-smi")
    outs["nvml"] = command_output("nvml", LOCAL_VM / "nvml-probe.json", "python -m wizard.nvml_probe", rc=1)
    if kind == "gpu":
        outs["pci"] = collect_tree(SYNTHETIC / "synthetic_sysfs-pci-h200x8-nvswitch", ["pci"])["pci"]
        outs["modules"] = file_output("modules", CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", "/proc/modules")
        outs["nvidia_driver_version"] = file_output("nvidia_driver_version",
                                                    CASES / "proc-driver-nvidia-version__open-565.txt",
                                                    "/proc/driver/nvidia/version")
        outs["nvidia_smi_l"] = command_output("nvidia_smi_l", PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt",
                                              "nvidia-smi -L")
        outs["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", rc=0, text=json.dumps(
            {"init": "ok", "driver_version": "565.57.01", "cuda_driver_version": 12070, "count": 8, "gpus": []}))
    return outs


def text_output(probe: str, raw: str) -> ProbeOutput:
    source = TEXT_PROBES[probe]
    return ProbeOutput(probe, source, text=raw, rc=0 if source.startswith(("$", "NVML")) else None)


def assert_sane(findings: list[Finding], fid: str) -> None:
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding)
        assert f.id == fid
        assert isinstance(f.verdict, Verdict)
        assert isinstance(f.message, str) and f.message
        assert isinstance(f.evidence, tuple) and all(isinstance(e, str) for e in f.evidence)
        if f.verdict in (Verdict.UNKNOWN, Verdict.WARN, Verdict.FAIL):
            assert f.evidence, f"{f.id} {f.verdict} without evidence: {f.message}"
        if f.verdict in (Verdict.WARN, Verdict.FAIL):
            assert f.remedy, f"{f.id} {f.verdict} without a remedy"
        f.to_dict()  # the JSON contract holds


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FUZZ
@given(data=st.data())
def test_checks_survive_garbled_text_probes(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(sorted(TEXT_PROBES)), min_size=1, max_size=4, unique=True)):
        raw = data.draw(real_or_mutated(probe) if probe in REAL else garbage)
        outs[probe] = text_output(probe, raw)
    plan = data.draw(st.fixed_dictionaries({}, optional={
        "gpu_count": st.integers(-1, 16), "numa_nodes": st.integers(-1, 8), "host_ram_gib": st.floats(-1, 4096),
        "scheduler": st.sampled_from(["kubernetes", "slurm", ""]), "data_path": st.text(max_size=20),
        "virtualization": st.booleans()}))
    for check, fid in CHECKS.values():
        assert_sane(check(outs, plan), fid)


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FUZZ
@given(data=st.data())
def test_checks_survive_garbled_trees(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(TREE_PROBES), min_size=1, max_size=3, unique=True)):
        files = data.draw(trees)
        errors = {p: "permission denied" for p, c in files.items() if c is None}
        outs[probe] = ProbeOutput(probe, f"sysfs {probe}", text=tree_text(files, errors), files=files,
                                  file_errors=errors)
    for check, fid in CHECKS.values():
        assert_sane(check(outs, {}), fid)


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FEW
@given(data=st.data())
def test_checks_survive_failed_probes(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(sorted(outs)), min_size=1, max_size=5, unique=True)):
        if data.draw(st.booleans()):
            del outs[probe]
        else:
            outs[probe] = ProbeOutput(probe, f"src {probe}", text=data.draw(garbage), error=data.draw(st.text(min_size=1, max_size=30)),
                                      rc=data.draw(st.sampled_from([None, 1, 124, 126, 127])),
                                      stderr=data.draw(garbage))
    for check, fid in CHECKS.values():
        assert_sane(check(outs, {}), fid)


# Output with nothing a parser could read: no digits, no ':' or '=' (so no "KEY=value",
# "Key: 123", GPU, size or module lines), not blank, and not a bare header ("Module  Size  Used
# by" alone is lsmod with no module loaded; "Filename ..." alone is /proc/swaps with swap off).
unreadable = st.text(alphabet=st.characters(blacklist_categories=("Nd", "No", "Nl", "Cs"),
                                            blacklist_characters=":="),
                     min_size=1, max_size=500).filter(
    lambda t: t.strip() and not any(line.startswith("Filename") or line.split()[:1] == ["Module"]
                                    for line in t.splitlines()))
UNREADABLE = [  # check, its text probe
    ("os_release", "os_release"), ("memory", "meminfo"), ("swap", "swaps"), ("filesystems", "df"),
    ("nouveau", "modules"), ("driver", "modules"), ("nvidia_smi", "nvidia_smi_l"), ("nvml", "nvml"),
]


@pytest.mark.parametrize("name, probe", UNREADABLE, ids=[u[0] for u in UNREADABLE])
@FUZZ
@given(raw=unreadable)
def test_unreadable_output_is_unknown_with_evidence(name, probe, raw):
    outs = dict(base("gpu"))
    outs[probe] = text_output(probe, raw)
    check, fid = CHECKS[name]
    findings = check(outs, {})
    assert_sane(findings, fid)
    assert [f.verdict for f in findings] == [Verdict.UNKNOWN], findings
    assert TEXT_PROBES[probe] in findings[0].evidence  # what was read, then its lines
    lines = raw.splitlines()
    for line in findings[0].evidence[1:]:  # raw lines (NVML's may be stripped), or the count of the rest
        assert any(line in raw_line for raw_line in lines) or line.endswith("more unreadable lines")


@pytest.mark.parametrize("name, probe", [("memory", "meminfo"), ("swap", "swaps"), ("filesystems", "df"),
                                         ("nvidia_smi", "nvidia_smi_l"), ("os_release", "os_release")])
@FEW
@given(data=st.data())
def test_truncated_real_output_gets_a_verdict_the_parser_supports(name, probe, data):
    """A cut or mutated real output: the verdict follows what the parser could still read."""
    raw = data.draw(mutated(REAL[probe]))
    outs = dict(base("gpu"))
    outs[probe] = text_output(probe, raw)
    check, fid = CHECKS[name]
    findings = check(outs, {})
    assert_sane(findings, fid)
    verdicts = {f.verdict for f in findings}
    readable = {
        "memory": lambda: parse_meminfo(raw).total_kib is not None,
        "swap": lambda: (lambda s: s.header_seen and not s.problems)(parse_proc_swaps(raw)),
        "filesystems": lambda: bool(parse_df(raw)[0]),
        "nvidia_smi": lambda: (lambda s: bool(s.gpus) or s.error_kind in ("no_driver", "no_devices", "gpu_unreachable"))(
            parse_nvidia_smi_l(raw)),
        "os_release": lambda: (lambda r: bool(r.id or r.pretty_name))(parse_os_release(raw)),
    }[name]()
    if not readable:
        assert verdicts == {Verdict.UNKNOWN}
    elif name != "filesystems":  # df: a readable table can still lack "/" (unknown for that path)
        assert Verdict.UNKNOWN not in verdicts


# ------------------------------------------------------------------ the multi-node hostfile

HOSTFILE_TOKENS = ["gpu1", "host-a", "admin@", " ", "\t", "\n", "#", "8", "0", "-1", "=", "slots=", "python=",
                   "addr=", ":", "@", "[", "]", "ssh://", "-o", "\0", "9" * 5000]


@FUZZ
@given(raw=strategies.garbage(HOSTFILE_TOKENS, max_size=2000))
def test_hostfile_parser_never_raises_and_names_what_it_could_not_read(raw):
    from wizard.parsers.hostfile import MAX_GPUS_PER_NODE, Hostfile, parse_hostfile

    hf = parse_hostfile(raw, "fuzz")
    assert isinstance(hf, Hostfile) and hf.source == "fuzz"
    assert hf.nodes or hf.problems
    assert all(p.startswith(("line ", "no nodes")) for p in hf.problems), hf.problems
    assert len({n.name for n in hf.nodes}) == len(hf.nodes)
    assert all(n.gpus is None or 1 <= n.gpus <= MAX_GPUS_PER_NODE for n in hf.nodes)
    assert all(not n.name.startswith("-") and not n.target.startswith("-") for n in hf.nodes)
