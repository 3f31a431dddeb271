"""Probe outputs of whole hosts shared by the rule tests: the development VM as its probes saw it, and
the same VM with a (synthetic) 8-GPU H200 board and its driver, plus :func:`only`, the check that a rule
gave one well-formed finding.

``vm`` and ``gpu_host`` are fixtures: a test module imports them with their base fixtures
(``_vm_base``, ``_gpu_base``), which stay module-scoped in each module that imports them.
"""

from __future__ import annotations

import functools
import json

import pytest
from wizard.model import Finding, Verdict
from wizard.probes import ProbeOutput

from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC, collect_tree, command_output, failed, file_output, text, tree_output

H200_TREE = SYNTHETIC / "synthetic_sysfs-pci-h200x8-nvswitch"


VM_PROBES = ["os_release", "kernel", "cpuinfo", "cpu_topology", "numa", "meminfo", "swaps", "cmdline",
             "iommu", "mounts", "modules", "sys_module", "nvidia_driver_version", "pci", "dmi"]


DMI = "/sys/class/dmi/id/"


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


def findings_ok(findings: list[Finding]) -> None:
    """``findings`` is a list of findings, each with a verdict, an id, a message and text evidence."""
    assert isinstance(findings, list)
    for f in findings:
        assert isinstance(f.verdict, Verdict) and f.id and f.message
        assert all(isinstance(e, str) for e in f.evidence)


def pci(*gpus: str, bridges: tuple[str, ...] = ()) -> ProbeOutput:
    """A synthetic ``pci`` probe output: NVIDIA GPU functions with these device ids (class 0302), plus
    NVIDIA bridges (class 0680, NVSwitch) and one non-NVIDIA function."""
    files: dict[str, str | None] = {"/sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n"}
    for i, did in enumerate(gpus):
        bdf = f"0000:{0x17 + i * 0x10:02x}:00.0"
        files[f"/sys/bus/pci/devices/{bdf}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{bdf}/device"] = f"0x{did}\n"
        files[f"/sys/bus/pci/devices/{bdf}/class"] = "0x030200\n"
    for j, did in enumerate(bridges):
        bdf = f"0000:{0xc0 + j:02x}:00.0"
        files[f"/sys/bus/pci/devices/{bdf}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{bdf}/device"] = f"0x{did}\n"
        files[f"/sys/bus/pci/devices/{bdf}/class"] = "0x068000\n"
    return tree_output("pci", files, "/sys/bus/pci/devices/*/{vendor,device,class,...}")


def kernel(release: str) -> ProbeOutput:
    return ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=release + "\n")


def cmd(name: str, argv: str, body: str, rc: int = 0, stderr: str = "") -> ProbeOutput:
    return ProbeOutput(name, "$ " + argv, text=body, rc=rc, stderr=stderr)


def ids(findings, fid=None):
    return [(f.id, f.verdict) for f in findings if fid is None or f.id == fid]


# Real outputs a reviewer collected (tests/data/public, PROVENANCE.md): file names shared by the case and
# contract tests.
AER_H = "dmesg-H__returnn-aer-fatal-cmpltto-nvidia-cant-recover.txt"
CMCI_H = "dmesg-H__ovro-lwa-cmci-storm-edac-ue.txt"
DUNKEL = "dmesg-T__dunkel-edac-262-ce-overflow.txt"
RADIASOFT = "journal__radiasoft-edac-sbridge-ce-scrubbing.txt"
XID45 = "kernel-log__nvl-xid45-caused-by-xid149-xid145.txt"
NVL5 = "kernel-log__gpud-xid149-145-94-nvlink5-kmsg.txt"
CHIA = "dmesg__chia-xid31-xid62-xid45-chain.txt"
TITANV = "dmesg__titanv-rminitadapter-failed-0x25.txt"
HANDLE = "nvidia-smi__device-handle-unknown-error-prompt.txt"
P4 = "nvidia-smi__tesla-p4-nas-device-handle-unknown-error.txt"
LOST = "nvidia-smi__owod-gpu-is-lost-reboot.txt"
GCP_A100 = "nvidia-smi__a100-sxm4-40gb-gcp-580-healthy.txt"
L40S_Q = "nvidia-smi-q__l40s-595-tlimit-relative-temps.txt"
FM_DOWN = "dcgmi-diag__r3-8xh100-cuinit-system-not-yet-initialized-fm-down.txt"
PM_FAIL = "dcgmi-diag__r4-rtx2060s-persistence-fail-memtest-pass.txt"


# file -> (kind, verdict) that a careful operator gives it (SOURCES of the review; PROVENANCE.md)
EXPECTED = {
    AER_H: ("kernel-log", "fail"),
    CMCI_H: ("kernel-log", "fail"),
    DUNKEL: ("kernel-log", "warn"),
    RADIASOFT: ("kernel-log", "warn"),
    XID45: ("kernel-log", "fail"),  # NVLink errors killed the workload
    NVL5: ("kernel-log", "fail"),
    CHIA: ("kernel-log", "fail"),
    TITANV: ("kernel-log", "fail"),
    HANDLE: ("nvidia-smi", "fail"),
    P4: ("nvidia-smi", "fail"),
    LOST: ("nvidia-smi", "fail"),
    GCP_A100: ("nvidia-smi", "warn"),  # persistence off, not known to be a VM: A4 WARN
    L40S_Q: ("nvidia-smi-q", "pass"),  # persistence off inside a Pass-Through VM: a note
    FM_DOWN: ("dcgmi-diag", "fail"),
    PM_FAIL: ("dcgmi-diag", "unknown"),
}


@functools.lru_cache(maxsize=None)
def body(name: str) -> str:
    return text(PUBLIC / name)


def well_formed(findings) -> None:
    for f in findings:
        assert isinstance(f, Finding) and f.verdict in Verdict and f.id and f.subject and f.source
        if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
            assert f.remedy, f
