"""Checks (wizard/rules/host.py, gpu.py, identity.py) through probe outputs.

Every test builds :class:`wizard.probes.ProbeOutput` objects (from real captured output where
one exists, see tests/data/PROVENANCE.md), calls the check with ``{probe name: output}`` and a
plan, and asserts the verdict, that the message names the right thing, that the evidence holds
the raw line the verdict rests on, and that a fail/warn says what to do next.
"""

from __future__ import annotations

import json

import pytest

from tests.probe_data import (
    CASES,
    LOCAL_VM,
    PUBLIC,
    SYNTHETIC,
    collect_tree,
    command_output,
    failed,
    file_output,
    grep_tree,
    text,
    tree_output,
)
from wizard.model import Finding, Verdict, overall
from wizard.probes import ProbeOutput
from wizard.rules import bios as bios_rules
from wizard.rules import gpu_presence as gc
from wizard.rules import host as host_rules
from wizard.rules import os as os_rules
from wizard.rules import pcie
from wizard.rules.identity import dmi_identity

H200_TREE = SYNTHETIC / "synthetic_sysfs-pci-h200x8-nvswitch"
VM_PROBES = ["os_release", "kernel", "cpuinfo", "cpu_topology", "numa", "meminfo", "swaps", "cmdline",
             "iommu", "mounts", "modules", "sys_module", "nvidia_driver_version", "pci", "dmi"]
DMI = "/sys/class/dmi/id/"
CPU = "/sys/devices/system/cpu"
NODE = "/sys/devices/system/node"
SMI_L = "$ nvidia-smi -L"


@pytest.fixture(scope="module")
def _vm_base():
    outs = collect_tree(LOCAL_VM, VM_PROBES)
    outs["df"] = command_output("df", LOCAL_VM / "df-P-T-B1-l.txt", "df -P -T -B1 -l")
    outs["nvidia_smi_l"] = failed("nvidia_smi_l", SMI_L, "command not found: nvidia-smi", rc=127)
    # the NVML probe as it ran on the dev VM: exit status 1, JSON on stdout
    outs["nvml"] = command_output("nvml", LOCAL_VM / "nvml-probe.json", "python -m wizard.nvml_probe", rc=1)
    return outs


@pytest.fixture
def vm(_vm_base):
    """The development VM (Debian 12 Firecracker VM, no GPU), as its probes saw it."""
    return dict(_vm_base)


def nvml_output(count: int, listed: int | None = None) -> ProbeOutput:
    """A synthetic NVML probe output (the JSON wizard.nvml_probe prints) for an H200 board."""
    bdfs = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
    n = count if listed is None else listed
    return ProbeOutput("nvml", "NVML (pynvml)", rc=0, text=json.dumps({
        "init": "ok", "driver_version": "565.57.01", "cuda_driver_version": 12070, "count": count,
        "gpus": [{"index": i, "name": "NVIDIA H200", "pci_bus_id": f"00000000:{b}:00.0",
                  "serial": f"16510240{i:05d}", "uuid": f"GPU-{i:08x}", "errors": {}}
                 for i, b in enumerate(bdfs[:n])]}))


@pytest.fixture(scope="module")
def _gpu_base(_vm_base):
    outs = dict(_vm_base)
    outs["pci"] = collect_tree(H200_TREE, ["pci"])["pci"]
    outs["modules"] = file_output("modules", CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", "/proc/modules")
    outs["nvidia_driver_version"] = file_output(
        "nvidia_driver_version", CASES / "proc-driver-nvidia-version__open-565.txt", "/proc/driver/nvidia/version")
    outs["nvidia_smi_l"] = command_output("nvidia_smi_l", PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt",
                                          "nvidia-smi -L")
    outs["nvml"] = nvml_output(8)
    outs["dmi"] = tree_output("dmi", {DMI + "sys_vendor": "Supermicro\n", DMI + "product_name": "SYS-821GE-TNHR\n",
                                      DMI + "product_serial": "S123456X4A12345\n"}, "/sys/class/dmi/id/*")
    return outs


@pytest.fixture
def gpu_host(_gpu_base):
    """The dev VM's host probes plus a (synthetic) 8-GPU board with the driver loaded."""
    return dict(_gpu_base)


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    f = findings[0]
    assert f.message
    if f.verdict in (Verdict.FAIL, Verdict.WARN):
        assert f.remedy.strip(), f"{f.id} {f.verdict} without a remedy"
    if f.verdict in (Verdict.PASS, Verdict.WARN, Verdict.FAIL):
        assert f.source, f"{f.id} judged without naming its rule's source"
    return f


def without_gpus(tree_out: ProbeOutput, keep: int) -> ProbeOutput:
    """The H200 tree with all but the first ``keep`` GPUs removed from the bus."""
    gpus = sorted({p.split("/")[5] for p, c in tree_out.files.items()
                   if p.endswith("/class") and (c or "").startswith("0x0302")})
    gone = set(gpus[keep:])
    files = {p: c for p, c in tree_out.files.items() if not any(g in p for g in gone)}
    return tree_output("pci", files, tree_out.source)


# ------------------------------------------------------------------ missing and failed probes

MISSING = [
    (os_rules.os_release, "os.release", "os_release"),
    (bios_rules.cpu, "bios.cpu", "cpu_topology"),
    (bios_rules.numa, "bios.numa", "numa"),
    (host_rules.memory, "os.memory", "meminfo"),
    (os_rules.swap, "os.swap", "swaps"),
    (bios_rules.iommu, "bios.iommu", "cmdline"),
    (bios_rules.iommu, "bios.iommu", "iommu"),  # the dev VM's command line names no IOMMU mode
    (os_rules.filesystems, "os.filesystem", "df"),
    (gc.gpu_pci, "health.gpu_pci", "pci"),
    (gc.nvidia_smi, "driver.nvidia_smi", "nvidia_smi_l"),
    (gc.nvml, "health.nvml", "nvml"),
    (dmi_identity, "grounding.serials", "dmi"),
]


@pytest.mark.parametrize("check, fid, probe", MISSING, ids=[f"{m[1]}-{m[2]}" for m in MISSING])
def test_probe_not_collected_is_unknown(gpu_host, check, fid, probe):
    del gpu_host[probe]
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert "not collected" in f.message
    assert f.evidence  # says there was nothing to show, rather than showing nothing


@pytest.mark.parametrize("check, fid, probe", MISSING, ids=[f"{m[1]}-{m[2]}" for m in MISSING])
def test_failed_probe_is_unknown_with_the_error_as_evidence(gpu_host, check, fid, probe):
    gpu_host[probe] = failed(probe, f"source of {probe}", "permission denied")
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert "permission denied" in f.message
    assert f"source of {probe}" in f.evidence
    assert "error: permission denied" in f.evidence


@pytest.mark.parametrize("check, fid", [(gc.nouveau, "os.nouveau"), (gc.driver, "driver.loaded")])
def test_no_module_list_at_all_is_unknown(gpu_host, check, fid):
    gpu_host["modules"] = failed("modules", "/proc/modules", "permission denied")
    del gpu_host["sys_module"]
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert "error: permission denied" in f.evidence


def test_nvidia_smi_synthetic_timeout_is_unknown_with_the_timeout_as_evidence(gpu_host):
    gpu_host["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", SMI_L, text="GPU 0: NVIDIA H200 (UUID: GPU-1)\n",
                                           rc=124, error="timed out after 30 s")
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert "error: timed out after 30 s" in f.evidence
    assert "exit status 124" in f.evidence


# ------------------------------------------------------------------ garbled output

GARBLED = [
    (os_rules.os_release, "os.release", "os_release", "<html><body>502 Bad Gateway</body></html>\n"),
    (host_rules.memory, "os.memory", "meminfo", "MemFree:  1024 kB\nthis is not meminfo\n"),
    (os_rules.swap, "os.swap", "swaps", text(PUBLIC / "proc-swaps__cygwin-size-used-run-together.txt")),
    (os_rules.swap, "os.swap", "swaps", "/dev/sda2 partition 8388604 0 -2\n"),  # no header
    (os_rules.filesystems, "os.filesystem", "df", "df: unrecognized option: B\nBusyBox v1.36.1 multi-call binary.\n"),
    (gc.nouveau, "os.nouveau", "modules", "\ufffd\ufffd binary junk\n"),
    (gc.driver, "driver.loaded", "modules", "\ufffd\ufffd binary junk\n"),
    (gc.nvidia_smi, "driver.nvidia_smi", "nvidia_smi_l", "Segmentation fault (core dumped)\n"),
    (gc.nvml, "health.nvml", "nvml", "Traceback (most recent call last):\nImportError: libc.so.6\n"),
]


@pytest.mark.parametrize("check, fid, probe, raw", GARBLED, ids=[f"{g[1]}-{i}" for i, g in enumerate(GARBLED)])
def test_garbled_output_is_unknown_with_the_raw_lines(gpu_host, check, fid, probe, raw):
    gpu_host[probe] = ProbeOutput(probe, f"source of {probe}", text=raw, rc=0 if probe in ("df", "nvml", "nvidia_smi_l") else None)
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert f"source of {probe}" in f.evidence
    raw_lines = [line for line in raw.splitlines() if line.strip()]
    assert any(line in f.evidence for line in raw_lines), f.evidence
    assert all(line in raw_lines for line in f.evidence[1:])  # only raw lines, unrewritten
    assert f.remedy


def test_cpu_garbled_sysfs_is_unknown_and_shows_the_line(vm):
    files = dict(vm["cpu_topology"].files)
    files[f"{CPU}/online"] = "0-1,x\n"
    vm["cpu_topology"] = tree_output("cpu_topology", files, vm["cpu_topology"].source)
    findings = bios_rules.cpu(vm, {})
    assert overall(findings) is Verdict.UNKNOWN
    unknown = [f for f in findings if f.verdict is Verdict.UNKNOWN]
    assert f"{CPU}/online:0-1,x" in unknown[0].evidence


def test_numa_garbled_node_is_unknown_not_a_count(vm):
    files = dict(vm["numa"].files)
    files[f"{NODE}/node1/cpulist"] = "\ufffd\n"
    vm["numa"] = tree_output("numa", files, vm["numa"].source)
    f = only(bios_rules.numa(vm, {"numa_nodes": 2}))
    assert f.verdict is Verdict.UNKNOWN  # not "1 NUMA node; the plan expects 2"
    assert f"{NODE}/node1/cpulist:\ufffd" in f.evidence


# ------------------------------------------------------------------ os.release


def test_os_release_dev_vm(vm):
    f = only(os_rules.os_release(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "Debian GNU/Linux 12 (bookworm), kernel 6.18.44-fc-v657"
    assert '/etc/os-release:PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"' in f.evidence  # the raw line
    assert "/proc/sys/kernel/osrelease:6.18.44-fc-v657" in f.evidence


@pytest.mark.parametrize("name, pretty, ids", [
    ("os-release__ubuntu-24.04.txt", "Ubuntu 24.04.3 LTS", "ID=ubuntu VERSION_ID=24.04"),
    ("os-release__rhel-9.6.txt", "Red Hat Enterprise Linux 9.6 (Plow)", "ID=rhel VERSION_ID=9.6"),
])
def test_os_release_other_distributions_without_kernel_probe(vm, name, pretty, ids):
    vm["os_release"] = file_output("os_release", PUBLIC / name, "/etc/os-release")
    del vm["kernel"]
    f = only(os_rules.os_release(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == f"{pretty}, kernel unknown"
    for pair in ids.split():  # the raw lines (values may be quoted in the file)
        key, value = pair.split("=")
        assert any(e.startswith(f"/etc/os-release:{key}=") and e.rstrip('"').endswith(value) for e in f.evidence), pair


# ------------------------------------------------------------------ bios.cpu


def test_cpu_dev_vm(vm):
    f = only(bios_rules.cpu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "Intel(R) Xeon(R) Processor: 1 socket(s), 2 cores, 2 logical CPUs, SMT off"
    assert "model name\t: Intel(R) Xeon(R) Processor" in f.evidence
    assert f"{CPU}/online:0-1" in f.evidence


def _cpu_tree(vm, online: str, possible: str, present: str | None = None) -> None:
    files: dict[str, str | None] = {f"{CPU}/online": online + "\n", f"{CPU}/possible": possible + "\n"}
    if present is not None:
        files[f"{CPU}/present"] = present + "\n"
    for c in range(4):
        files[f"{CPU}/cpu{c}/topology/physical_package_id"] = "0\n"
        files[f"{CPU}/cpu{c}/topology/core_id"] = f"{c}\n"
    vm["cpu_topology"] = tree_output("cpu_topology", files, "sysfs cpu")


def test_cpu_synthetic_offline_cpus_fail(vm):
    _cpu_tree(vm, online="0-1", possible="0-3")
    f = only(bios_rules.cpu(vm, {}))
    assert f.verdict is Verdict.FAIL
    assert "2 of 4 possible CPUs are offline" in f.message
    assert f"{CPU}/online:0-1" in f.evidence and f"{CPU}/possible:0-3" in f.evidence
    assert "online" in f.remedy


def test_cpu_synthetic_offline_present_cpus_fail(vm):
    _cpu_tree(vm, online="0-1", possible="0-7", present="0-3")
    f = only(bios_rules.cpu(vm, {}))
    assert f.verdict is Verdict.FAIL
    assert "2 of 4 present CPUs are offline" in f.message
    assert f"{CPU}/present:0-3" in f.evidence


def test_cpu_synthetic_empty_hotplug_slots_are_not_offline_cpus(vm):
    # The shape of a real boot log (PROVENANCE.md): "SMP: Allowing 4 CPUs, 2 hotplug CPUs" and
    # "Brought up 2 CPUs": possible 0-3, present 0-1, online 0-1 on a healthy machine.
    _cpu_tree(vm, online="0-1", possible="0-3", present="0-1")
    f = only(bios_rules.cpu(vm, {}))
    assert f.verdict is Verdict.PASS


def test_cpu_without_cpuinfo_still_reports_topology(vm):
    vm["cpuinfo"] = failed("cpuinfo", "/proc/cpuinfo", "permission denied")
    f = only(bios_rules.cpu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message.startswith("unknown CPU model: 1 socket(s), 2 cores")


# ------------------------------------------------------------------ bios.numa


@pytest.mark.parametrize("plan", [{}, {"numa_nodes": 1}, {"numa_nodes": 0}, {"numa_nodes": "2"}])
def test_numa_dev_vm_passes(vm, plan):
    f = only(bios_rules.numa(vm, plan))
    assert f.verdict is Verdict.PASS
    assert f.message == "1 NUMA node(s)"
    assert f"{NODE}/node0/cpulist:0-1" in f.evidence


def test_numa_dev_vm_fails_a_plan_of_two_nodes(vm):
    f = only(bios_rules.numa(vm, {"numa_nodes": 2}))
    assert f.verdict is Verdict.FAIL
    assert f.message == "1 NUMA node(s); the plan expects 2"
    assert "NPS" in f.remedy and "SNC" in f.remedy
    assert f"{NODE}/online:0" in f.evidence


def test_numa_synthetic_two_nodes_and_a_memory_only_node(vm):
    vm["numa"] = tree_output("numa", {f"{NODE}/online": "0-2\n", f"{NODE}/node0/cpulist": "0-63\n",
                                      f"{NODE}/node1/cpulist": "64-127\n", f"{NODE}/node2/cpulist": "\n"},
                             "sysfs node")
    f = only(bios_rules.numa(vm, {"numa_nodes": 3}))
    assert f.verdict is Verdict.PASS
    assert f.message == "3 NUMA node(s), 1 without CPUs"


# ------------------------------------------------------------------ os.memory

MEMTOTAL_GIB = 24684092 / 1024 / 1024  # the dev VM: 23.54 GiB


@pytest.mark.parametrize("expected_gib, verdict", [
    (None, Verdict.PASS), (24, Verdict.PASS), (24.7, Verdict.PASS),  # 4.7% short: within 5%
    (24.9, Verdict.WARN), (32, Verdict.WARN), (16, Verdict.PASS),
])
def test_memory_dev_vm_against_the_plan(vm, expected_gib, verdict):
    plan = {} if expected_gib is None else {"host_ram_gib": expected_gib}
    f = only(host_rules.memory(vm, plan))
    assert f.verdict is verdict
    assert f.message.startswith(f"{MEMTOTAL_GIB:.1f} GiB of memory")
    assert any(e.startswith("/proc/meminfo:MemTotal:") and e.endswith("24684092 kB") for e in f.evidence)
    if verdict is Verdict.WARN:
        short = 100 * (expected_gib - MEMTOTAL_GIB) / expected_gib
        assert f"{short:.0f}% below the plan's {expected_gib:g} GiB" in f.message
        assert "DIMM" in f.remedy


# ------------------------------------------------------------------ os.swap


def test_swap_dev_vm_is_off(vm):
    f = only(os_rules.swap(vm, {"scheduler": "kubernetes"}))
    assert f.verdict is Verdict.PASS
    assert f.message == "swap is off"
    assert "/proc/swaps: no swap devices" in f.evidence


@pytest.mark.parametrize("scheduler, verdict", [("kubernetes", Verdict.WARN), ("slurm", Verdict.PASS),
                                                (None, Verdict.PASS)])
def test_swap_on_depends_on_the_scheduler(vm, scheduler, verdict):
    raw = text(PUBLIC / "proc-swaps__arm64-nvme-partition.txt")
    vm["swaps"] = file_output("swaps", PUBLIC / "proc-swaps__arm64-nvme-partition.txt", "/proc/swaps")
    f = only(os_rules.swap(vm, {"scheduler": scheduler} if scheduler else {}))
    assert f.verdict is verdict
    assert f"swap is on ({466838356 / 1024 / 1024:.1f} GiB)" in f.message
    assert raw.splitlines()[1] in f.evidence
    if verdict is Verdict.WARN:
        assert "Kubernetes" in f.message
        assert "failSwapOn" in f.remedy


# ------------------------------------------------------------------ bios.iommu


def test_iommu_dev_vm_off(vm):
    f = only(bios_rules.iommu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "IOMMU off or not exposed (no IOMMU arguments)"
    assert "/proc/cmdline: no IOMMU arguments" in f.evidence


def test_iommu_pt_on_the_command_line_passes(vm):
    vm["cmdline"] = file_output("cmdline", CASES / "proc-cmdline__iommu-pt.txt", "/proc/cmdline")
    f = only(bios_rules.iommu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert "iommu=pt" in f.message
    assert "/proc/cmdline: iommu=pt" in f.evidence


def test_iommu_pt_on_the_command_line_decides_without_sysfs(vm):
    vm["cmdline"] = file_output("cmdline", CASES / "proc-cmdline__iommu-pt.txt", "/proc/cmdline")
    del vm["iommu"]
    f = only(bios_rules.iommu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert "passthrough" in f.message and "iommu=pt" in f.message
    assert "/proc/cmdline: iommu=pt" in f.evidence


def test_iommu_identity_groups_pass(vm):
    vm["iommu"] = tree_output("iommu", grep_tree(PUBLIC / "iommu-groups-type__exynos-identity-grep.txt"),
                              "/sys/kernel/iommu_groups/*/type")
    f = only(bios_rules.iommu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message.startswith("IOMMU in passthrough mode")
    assert "/sys/kernel/iommu_groups/*/type: identity (11 groups)" in f.evidence


@pytest.mark.parametrize("virtualization, verdict", [(False, Verdict.WARN), (True, Verdict.PASS)])
def test_iommu_synthetic_translated_domains(vm, virtualization, verdict):
    vm["iommu"] = tree_output("iommu", grep_tree(SYNTHETIC / "synthetic_iommu-tree__dmar-dma-fq.txt"),
                              "/sys/kernel/iommu_groups/*/type")
    f = only(bios_rules.iommu(vm, {"virtualization": virtualization}))
    assert f.verdict is verdict
    assert "/sys/kernel/iommu_groups/*/type: DMA-FQ (6 groups)" in f.evidence
    assert "/sys/class/iommu: dmar0 dmar1" in f.evidence
    if verdict is Verdict.WARN:
        assert "DMA, DMA-FQ" in f.message
        assert "iommu=pt" in f.remedy
    else:
        assert f.message.startswith("IOMMU present")


def test_iommu_synthetic_identity_with_units(vm):
    vm["iommu"] = tree_output("iommu", grep_tree(SYNTHETIC / "synthetic_iommu-tree__dmar-identity.txt"),
                              "/sys/kernel/iommu_groups/*/type")
    vm["cmdline"] = file_output("cmdline", CASES / "proc-cmdline__iommu-pt.txt", "/proc/cmdline")
    f = only(bios_rules.iommu(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "IOMMU in passthrough mode (iommu=pt)"


# ------------------------------------------------------------------ os.filesystem


def test_filesystems_dev_vm_root(vm):
    raw = text(LOCAL_VM / "df-P-T-B1-l.txt")
    root_line = next(line for line in raw.splitlines() if line.endswith(" /"))
    f = only(os_rules.filesystems(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.subject == "/"
    assert f.message == "/: ext4, 271 GB, 22% used"
    assert f.evidence == (root_line,)


def data_df(path: str, stdout: str = "", stderr: str = "", rc: int = 0) -> ProbeOutput:
    return ProbeOutput("data_path_df", f"$ df -P -T -B1 -- {path}", text=stdout, stderr=stderr, rc=rc,
                       error="" if rc == 0 else f"df exited with status {rc}")


def test_filesystems_data_path_on_the_root_filesystem_warns(vm):
    vm["data_path_df"] = data_df("/tmp", text(LOCAL_VM / "df-P-T-B1--tmp.txt"))
    findings = os_rules.filesystems(vm, {"data_path": "/tmp"})
    assert [(f.subject, f.verdict) for f in findings] == [("/", Verdict.PASS), ("/tmp", Verdict.WARN)]
    assert "is on the root filesystem" in findings[1].message
    assert findings[1].evidence[0].endswith(" /") and "mount it" in findings[1].remedy


def test_filesystems_missing_data_path_fails(vm):
    err = text(LOCAL_VM / "df-P-T-B1--raid.stderr.txt")
    vm["data_path_df"] = data_df("/raid", stderr=err, rc=1)
    root, data = os_rules.filesystems(vm, {"data_path": "/raid"})
    assert data.verdict is Verdict.FAIL and data.message == "the data path /raid does not exist"
    assert err.strip() in data.evidence and "bringup plan data_path=" in data.remedy


def test_filesystems_synthetic_full_data_volume_warns(vm):
    raw = text(SYNTHETIC / "synthetic_df__data-volume-96pct.txt")
    header = raw.splitlines()[0]
    data_line = next(line for line in raw.splitlines() if line.endswith(" /data"))
    vm["data_path_df"] = data_df("/data/checkpoints", header + "\n" + data_line + "\n")
    root, data = os_rules.filesystems(vm, {"data_path": "/data/checkpoints"})
    assert root.verdict is Verdict.PASS
    assert data.verdict is Verdict.WARN and data.subject == "/data/checkpoints"
    assert data.message == "/data/checkpoints (on /data): xfs, 3840 GB, 96% used (above 90%)"
    assert data.evidence == (data_line,) and data.remedy


def test_filesystems_df_without_a_root_row_is_unknown(vm):
    vm["df"] = ProbeOutput("df", "$ df -P -T -B1 -l", rc=0, text=(
        "Filesystem Type 1-blocks Used Available Capacity Mounted on\n"
        "/dev/nvme0n1p1 xfs 1000 10 990 1% /data\n"))
    root = only(os_rules.filesystems(vm, {}))
    assert root.verdict is Verdict.UNKNOWN and "no / row" in root.message


# ------------------------------------------------------------------ health.gpu_pci


def test_gpu_pci_dev_vm_has_no_gpu(vm):
    f = only(gc.gpu_pci(vm, {}))
    assert f.verdict is Verdict.FAIL
    assert f.message == "no NVIDIA GPU on the PCI bus"
    assert "6 PCI functions" in f.evidence[0]
    assert "/sys/bus/pci/devices/0000:00:01.0/vendor:0x1af4" in f.evidence  # raw sysfs lines
    assert "seated" in f.remedy and "Above 4G" in f.remedy


@pytest.mark.parametrize("check, fid", [(gc.driver, "driver.loaded"), (gc.nvidia_smi, "driver.nvidia_smi"),
                                        (gc.nvml, "health.nvml")])
def test_driver_checks_skip_when_no_gpu_is_on_the_bus(vm, check, fid):
    f = only(check(vm, {}))
    assert (f.id, f.verdict) == (fid, Verdict.SKIP)
    assert "no NVIDIA GPU on the PCI bus" in f.message


def test_gpu_pci_synthetic_nvswitch_alone_is_not_a_gpu(gpu_host):
    gpu_host["pci"] = without_gpus(gpu_host["pci"], keep=0)
    f = only(gc.gpu_pci(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "/sys/bus/pci/devices/0000:05:00.0/class:0x068000" in f.evidence
    assert only(gc.nvml(gpu_host, {})).verdict is Verdict.SKIP


def test_gpu_pci_synthetic_empty_bus_is_unknown_not_no_gpu(gpu_host):
    gpu_host["pci"] = ProbeOutput("pci", "/sys/bus/pci/devices/*/{vendor,...}")  # read, but nothing there
    f = only(gc.gpu_pci(gpu_host, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert only(gc.nvml(gpu_host, {})).verdict is Verdict.PASS  # not skipped on an unknown bus


@pytest.mark.parametrize("plan", [{}, {"gpu_count": 8}])
def test_gpu_pci_synthetic_eight_gpus_pass(gpu_host, plan):
    f = only(gc.gpu_pci(gpu_host, plan))
    assert f.verdict is Verdict.PASS
    assert f.message == "8 NVIDIA GPU(s) on the PCI bus: 8x NVIDIA H200 (H200 SXM 141GB) (10de:2335), 2 NVSwitch/bridge function(s)"
    assert "/sys/bus/pci/devices/0000:db:00.0/vendor:0x10de" in f.evidence
    assert "/sys/bus/pci/drivers/nvidia/0000:db:00.0" in f.evidence


def test_gpu_pci_more_gpus_than_planned_warns_like_every_count_rule(gpu_host):
    # was PASS here while lspci and nvidia-smi counts warned: one count verdict (gpu_presence.count_verdict)
    f = only(gc.gpu_pci(gpu_host, {"gpu_count": 4}))
    assert f.verdict is Verdict.WARN and "the plan expects only 4" in f.message and "gpu_count" in f.remedy
    assert "/sys/bus/pci/devices/0000:db:00.0/vendor:0x10de" in f.evidence


def test_gpu_pci_synthetic_missing_gpu_fails_the_plan(gpu_host):
    gpu_host["pci"] = without_gpus(gpu_host["pci"], keep=7)
    f = only(gc.gpu_pci(gpu_host, {"gpu_count": 8}))
    assert f.verdict is Verdict.FAIL
    assert f.message.startswith("7 NVIDIA GPU(s) on the PCI bus") and "the plan expects 8" in f.message
    assert "/sys/bus/pci/devices/0000:5d:00.0/vendor:0x10de" in f.evidence
    assert "reseat" in f.remedy


# ------------------------------------------------------------------ os.nouveau


def test_nouveau_dev_vm_uses_sys_module_when_proc_modules_is_absent(vm):
    assert vm["modules"].error == "no such file"  # a kernel booted with nomodule
    f = only(gc.nouveau(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.evidence == ("/sys/module (no /proc/modules: no such file): no nouveau",)


def test_nouveau_synthetic_built_in_found_through_sys_module(vm):
    vm["sys_module"] = ProbeOutput("sys_module", "ls -d /sys/module/nouveau", text="/sys/module/nouveau",
                                   files={"/sys/module/nouveau": ""})
    f = only(gc.nouveau(vm, {}))
    assert f.verdict is Verdict.FAIL
    assert f.evidence == ("/sys/module/nouveau",)


@pytest.mark.parametrize("path, line", [
    (PUBLIC / "lsmod__quadro-t2000-nouveau-loaded-partial.txt", "nouveau              2416640  0"),
    (SYNTHETIC / "synthetic_proc-modules__nouveau-loaded.txt", "nouveau 2416640 0 - Live 0x0000000000000000"),
])
def test_nouveau_loaded_fails(gpu_host, path, line):
    gpu_host["modules"] = file_output("modules", path, "/proc/modules")
    f = only(gc.nouveau(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "nouveau" in f.message
    assert f.evidence == (line,)
    assert "blacklist nouveau" in f.remedy


def test_nouveau_absent_from_real_module_lists(gpu_host):
    for path in (CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", PUBLIC / "proc-modules__cloudlinux9-vm.txt"):
        gpu_host["modules"] = file_output("modules", path, "/proc/modules")
        f = only(gc.nouveau(gpu_host, {}))
        assert f.verdict is Verdict.PASS
        assert f.evidence == ("/proc/modules: no nouveau",)


# ------------------------------------------------------------------ driver.loaded


def test_driver_loaded_open_module(gpu_host):
    f = only(gc.driver(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "nvidia kernel module loaded: 565.57.01 (open kernel module)"
    assert text(CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt").splitlines()[1] in f.evidence
    assert text(CASES / "proc-driver-nvidia-version__open-565.txt").splitlines()[0].strip() in f.evidence


def test_driver_loaded_proprietary_module(gpu_host):
    gpu_host["nvidia_driver_version"] = file_output(
        "nvidia_driver_version", PUBLIC / "proc-driver-nvidia-version__proprietary-515.txt",
        "/proc/driver/nvidia/version")
    f = only(gc.driver(gpu_host, {}))
    assert f.message == "nvidia kernel module loaded: 515.76 (proprietary kernel module)"


def test_driver_not_loaded_fails(gpu_host):
    gpu_host["modules"] = file_output("modules", PUBLIC / "proc-modules__cloudlinux9-vm.txt", "/proc/modules")
    gpu_host["nvidia_driver_version"] = failed("nvidia_driver_version", "/proc/driver/nvidia/version",
                                               "no such file")
    f = only(gc.driver(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert f.message == "the nvidia kernel module is not loaded"
    assert "/proc/modules: no nvidia module" in f.evidence
    assert "/proc/driver/nvidia/version: no such file" in f.evidence
    assert "modprobe nvidia" in f.remedy


def test_driver_synthetic_found_through_sys_module(gpu_host):
    gpu_host["modules"] = failed("modules", "/proc/modules", "no such file")
    gpu_host["sys_module"] = ProbeOutput("sys_module", "ls -d /sys/module/...", text="/sys/module/nvidia",
                                         files={"/sys/module/nvidia": "", "/sys/module/nvidia_uvm": ""})
    f = only(gc.driver(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert "/sys/module/nvidia" in f.evidence


# ------------------------------------------------------------------ driver.nvidia_smi


def test_nvidia_smi_lists_gpus(gpu_host):
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "nvidia-smi lists 8 GPU(s)"
    assert text(PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt").splitlines()[0] in f.evidence


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_nvidia_smi_driver_not_loaded_fails(gpu_host, stream):
    raw = text(CASES / "nvidia-smi__driver-not-loaded-failed-to-communicate.txt")
    gpu_host["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", SMI_L, rc=9, **{"text" if stream == "stdout" else "stderr": raw})
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "driver" in f.message
    assert raw.strip() in f.evidence
    assert "reinstall the driver" in f.remedy


def test_nvidia_smi_no_devices_fails(gpu_host):
    raw = text(CASES / "nvidia-smi__rtx5090-no-devices-found.txt")
    gpu_host["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", SMI_L, text=raw, rc=6)
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "no devices" in f.message and "not initialise" in f.message
    assert "No devices were found" in f.evidence
    assert "Above 4G" in f.remedy


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_nvidia_smi_synthetic_gpu_that_stopped_answering_fails(gpu_host, stream):
    raw = text(SYNTHETIC / "synthetic_nvidia-smi-L__gpu3-device-handle-error.txt")
    error, listing = raw.split("\n", 1)
    out = {"text": listing, "stderr": error} if stream == "stderr" else {"text": raw}
    gpu_host["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", SMI_L, rc=0, **out)
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.FAIL  # not "nvidia-smi lists 7 GPU(s)"
    assert f.message == "nvidia-smi cannot reach 1 GPU(s) (it lists 7)"
    assert "Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error" in f.evidence
    assert "Xid 79" in f.remedy


def test_nvidia_smi_not_installed_fails(gpu_host):
    gpu_host["nvidia_smi_l"] = failed("nvidia_smi_l", SMI_L, "command not found: nvidia-smi", rc=127)
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert f.message == "nvidia-smi is not installed"
    assert "error: command not found: nvidia-smi" in f.evidence


# ------------------------------------------------------------------ health.nvml


def test_nvml_synthetic_sees_every_gpu_on_the_bus(gpu_host):
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "NVML sees 8 GPU(s), driver 565.57.01, CUDA 12.7 supported by the driver"
    assert "GPU 0: NVIDIA H200 00000000:18:00.0 serial 1651024000000" in f.evidence


def test_nvml_synthetic_sees_fewer_gpus_than_the_bus_fails(gpu_host):
    gpu_host["nvml"] = nvml_output(7)
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "NVML sees 7 GPU(s)" in f.message and "but 8 are on the PCI bus" in f.message
    assert "could not bring up 1" in f.message
    assert "GPU 6: NVIDIA H200 00000000:ba:00.0 serial 1651024000006" in f.evidence
    assert "Xid" in f.remedy


def test_nvml_synthetic_gpu_it_cannot_open_fails(gpu_host):
    d = json.loads(nvml_output(8).text)
    d["gpus"][3] = {"index": 3, "errors": {"handle": "GPU is lost"}}
    gpu_host["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", text=json.dumps(d), rc=0)
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.FAIL  # NVML counts 8, but one is gone
    assert "cannot open 1 of them" in f.message
    assert "GPU 3: handle: GPU is lost" in f.evidence


def test_nvml_synthetic_per_gpu_errors_other_than_the_handle_do_not_fail(gpu_host):
    d = json.loads(nvml_output(8).text)
    d["gpus"][0]["errors"] = {"serial": "Not Supported"}  # GeForce cards have no serial
    gpu_host["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", text=json.dumps(d), rc=0)
    assert only(gc.nvml(gpu_host, {})).verdict is Verdict.PASS


def test_nvml_library_missing_on_a_gpu_host_fails(gpu_host, _vm_base):
    gpu_host["nvml"] = _vm_base["nvml"]  # the real dev VM output: libnvidia-ml.so.1 not found
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert f.message.startswith("NVML did not initialise: NVML shared library (libnvidia-ml.so.1) not found")
    assert "libnvidia-ml.so.1" in f.remedy
    assert any("libnvidia-ml.so.1" in line for line in f.evidence)


def test_nvml_synthetic_without_a_gpu_count_is_unknown(gpu_host):
    raw = json.dumps({"init": "ok", "driver_version": "565.57.01", "gpus": [],
                      "errors": {"count": "Unknown Error"}})
    gpu_host["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", text=raw, rc=0)
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.UNKNOWN  # not "NVML sees None GPU(s)"
    assert raw in f.evidence


# ------------------------------------------------------------------ grounding.serials


def test_dmi_dev_vm_exposes_none(vm):
    f = only(dmi_identity(vm, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert "no DMI identity exposed" in f.message
    assert f.evidence and f.evidence[0].startswith("/sys/class/dmi/id/")


def test_dmi_synthetic_identity_passes(gpu_host):
    f = only(dmi_identity(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "Supermicro SYS-821GE-TNHR, serial S123456X4A12345"
    assert "/sys/class/dmi/id/product_serial:S123456X4A12345" in f.evidence


def test_dmi_synthetic_serial_readable_only_by_root(gpu_host):
    files = {DMI + "sys_vendor": "Dell Inc.\n", DMI + "product_name": "PowerEdge XE9680\n",
             DMI + "product_serial": None}
    gpu_host["dmi"] = tree_output("dmi", files, "/sys/class/dmi/id/*",
                                  file_errors={DMI + "product_serial": "permission denied"})
    f = only(dmi_identity(gpu_host, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert f.message == "Dell Inc. PowerEdge XE9680; serial number unreadable (permission denied)"
    assert "/sys/class/dmi/id/product_serial: <permission denied>" in f.evidence
    assert "root" in f.remedy


def test_nouveau_loaded_but_blacklisted_asks_for_a_reboot():
    """After the action wrote the blacklist, the check says what is left: the reboot."""
    mods = ProbeOutput("modules", "/proc/modules", text=text(SYNTHETIC / "synthetic_proc-modules__nouveau-loaded.txt"))
    conf = "/etc/modprobe.d/blacklist-nouveau.conf"
    mp = ProbeOutput("modprobe_d", "/etc/modprobe.d/*.conf",
                     files={conf: "# written by bringup\nblacklist nouveau\noptions nouveau modeset=0\n"})
    f = only(gc.nouveau({"modules": mods, "modprobe_d": mp}, {}))
    assert f.verdict is Verdict.FAIL and "reboot" in f.message
    assert f"{conf}:blacklist nouveau" in f.evidence
    f = only(gc.nouveau({"modules": mods, "modprobe_d": ProbeOutput("modprobe_d", "x", files={})}, {}))
    assert f.verdict is Verdict.FAIL and "Blacklist nouveau" in f.remedy


def test_aer_counters_from_sysfs_synthetic_gpu():
    """sysfs aer_dev_* counters (format of drivers/pci/pcie/aer.c: 'Name count' lines and a TOTAL
    line; synthetic values): fatal -> fail, non-fatal -> warn, zero -> pass."""
    base = "/sys/bus/pci/devices/0000:9b:00.0"
    files = {
        f"{base}/vendor": "0x10de\n", f"{base}/class": "0x030200\n", f"{base}/device": "0x2330\n",
        f"{base}/aer_dev_correctable": "RxErr 0\nBadTLP 3\nTOTAL_ERR_COR 3\n",
        f"{base}/aer_dev_nonfatal": "Undefined 0\nCmpltTO 2\nTOTAL_ERR_NONFATAL 2\n",
        f"{base}/aer_dev_fatal": "Undefined 0\nSurpriseDown 0\nTOTAL_ERR_FATAL 0\n",
    }
    out = {"pci": ProbeOutput("pci", "sysfs", files=files)}
    f = only(pcie.aer_counters(out, {}))
    assert f.verdict is Verdict.WARN and "2 uncorrectable" in f.message and "0000:9b:00.0" in f.subject
    assert f"{base}/aer_dev_nonfatal:CmpltTO 2" in f.evidence
    files[f"{base}/aer_dev_fatal"] = "Undefined 0\nSurpriseDown 1\nTOTAL_ERR_FATAL 1\n"
    assert only(pcie.aer_counters(out, {})).verdict is Verdict.FAIL
    gpu = only(gc.gpu_pci(out, {}))
    assert gpu.verdict is Verdict.PASS and "H100" in gpu.message  # the id resolved to a name


def test_memory_below_the_workload_minimum_warns_without_blaming_dimms(vm):
    f = only(host_rules.memory(vm, {"host_ram_min_gib": 105}))
    assert f.verdict is Verdict.WARN and "needs" in f.message and "DIMM" not in f.remedy
    assert only(host_rules.memory(vm, {"host_ram_min_gib": 16})).verdict is Verdict.PASS
