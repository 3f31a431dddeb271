"""Tests of wizard/rules/gpu_presence.py."""

from __future__ import annotations

import json
import re

import pytest
from wizard.model import Finding, Verdict
from wizard.parsers.gpu import parse_gpu_information
from wizard.parsers.pcie import parse_lspci
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence
from wizard.rules import gpu_presence as gc

from tests.outputs import _gpu_base, _vm_base, gpu_host, nvml_output, only, SMI_L, vm  # noqa: F401  (fixtures)
from tests.probe_data import (
    CASES,
    PUBLIC,
    SYNTHETIC,
    failed,
    file_output,
    text,
    tree_output,
)

def without_gpus(tree_out: ProbeOutput, keep: int) -> ProbeOutput:
    """The H200 tree with all but the first ``keep`` GPUs removed from the bus."""
    gpus = sorted({p.split("/")[5] for p, c in tree_out.files.items()
                   if p.endswith("/class") and (c or "").startswith("0x0302")})
    gone = set(gpus[keep:])
    files = {p: c for p, c in tree_out.files.items() if not any(g in p for g in gone)}
    return tree_output("pci", files, tree_out.source)


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


def test_nvidia_smi_lists_gpus(gpu_host):
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "nvidia-smi lists 8 GPUs"
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
    assert f.message == "nvidia-smi cannot reach 1 GPU(s) (it lists 7): GPU (0000:04:00.0)"  # names the lost GPU
    assert f.subject == "GPU (0000:04:00.0)"
    assert "Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error" in f.evidence
    assert "Xid 79" in f.remedy


def test_nvidia_smi_not_installed_fails(gpu_host):
    gpu_host["nvidia_smi_l"] = failed("nvidia_smi_l", SMI_L, "command not found: nvidia-smi", rc=127)
    f = only(gc.nvidia_smi(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert f.message == "nvidia-smi is not installed"
    assert "error: command not found: nvidia-smi" in f.evidence


def test_nvml_synthetic_sees_every_gpu_on_the_bus(gpu_host):
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "NVML sees 8 GPUs, driver 565.57.01, CUDA 12.7 supported by the driver"
    assert "GPU 0: NVIDIA H200 00000000:18:00.0 serial 1651024000000" in f.evidence


def test_nvml_synthetic_sees_fewer_gpus_than_the_bus_fails(gpu_host):
    gpu_host["nvml"] = nvml_output(7)
    f = only(gc.nvml(gpu_host, {}))
    assert f.verdict is Verdict.FAIL
    assert "NVML sees 7 GPUs" in f.message and "but 8 are on the PCI bus" in f.message
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


SUPERMICRO = PUBLIC / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"


NONROOT = PUBLIC / "lspci-vv__asus-esc4000-g2-nonroot-access-denied-excerpt.txt"


IOMMU_H200 = CASES / "lspci-iommu-groups__h200-sxm-8gpu-nvswitch-partial.txt"


def by_id(findings, fid):
    return [f for f in findings if f.id == fid]


def test_gpu_count_against_plan():
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=text(IOMMU_H200))}
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 8}), "health.lspci_gpu_count")[0].verdict is Verdict.PASS
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 9}), "health.lspci_gpu_count")[0].verdict is Verdict.FAIL
    assert by_id(gpu_presence.iommu_groups(o, {"gpu_count": 4}), "health.lspci_gpu_count")[0].verdict is Verdict.WARN
    # a bus listing of more than three functions, none a GPU (the same functions listed twice count once: held-out
    # round 337), so two real listings of other functions side by side
    plx = PUBLIC / "lspci__supermicro-7048gr-tr-pex8747-switches-grep-plx.txt"
    whole_no_gpu = {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(NONROOT) + text(plx))}
    assert by_id(gpu_presence.lspci_gpus(whole_no_gpu, {}), "health.lspci_gpu_count")[0].verdict is Verdict.FAIL


def test_driver_binding_vfio_on_bare_metal_warns_nouveau_fails():
    # synthetic: the real H200 listing with the drivers edited
    vfio = text(IOMMU_H200).replace("(driver: nvidia)", "(driver: vfio-pci)")
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=vfio)}
    bare = by_id(gpu_presence.iommu_groups(o, {}), "health.gpu_driver_binding")
    assert {f.verdict for f in bare} == {Verdict.WARN} and len(bare) == 8
    vm = by_id(gpu_presence.iommu_groups(o, {"virtualization": True}), "health.gpu_driver_binding")
    assert [f.verdict for f in vm] == [Verdict.PASS]
    # synthetic: the real Supermicro GPU section without its "Kernel driver in use" line (module not loaded)
    t = text(SUPERMICRO).replace("\tKernel driver in use: nvidia\n", "")
    (nodrv,) = by_id(gpu_presence.lspci_gpus({"lspci_vvv": ProbeOutput("lspci_vvv", "x", text=t)}, {}), "health.gpu_driver_binding")
    assert nodrv.verdict is Verdict.WARN and "Kernel modules: nvidiafb, nouveau, nvidia_drm, nvidia" in nodrv.evidence
    nouveau = text(IOMMU_H200).replace("(driver: nvidia)", "(driver: nouveau)", 1)
    o = {"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "x", text=nouveau)}
    assert Verdict.FAIL in {f.verdict for f in gpu_presence.iommu_groups(o, {})}


HARDWARE_ADVICE = re.compile(r"reseat|power cable|above 4g", re.IGNORECASE)


def words(f: Finding) -> str:
    return " ".join([f.message, f.subject, f.remedy, *f.evidence])


def lspci_out(body: str, source: str = "lspci -vv (pasted)") -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", source, text=body)}


def test_whole_listing_without_gpu_still_fails_with_hardware_advice():
    # in memory: the two real root-port sections without the GPU, twice (second copy renumbered), given as the
    # node's own probe output (a whole bus scan): there the missing GPU is a hardware fault
    bridges = text(SUPERMICRO).split("\n61:00.0")[0] + "\n"
    body = bridges + bridges.replace("60:0", "40:0")
    assert len(parse_lspci(body).devices) == 4 and not parse_lspci(body).gpus
    f = gpu_presence.lspci_gpus(lspci_out(body, source="$ lspci -D -nn -vvv"), {})
    assert [x.verdict for x in f] == [Verdict.FAIL] and HARDWARE_ADVICE.search(f[0].remedy)
    pasted = gpu_presence.lspci_gpus(lspci_out(body), {})
    assert [x.verdict for x in pasted] == [Verdict.SKIP] and not HARDWARE_ADVICE.search(words(pasted[0]))


def test_full_util_at_a_fraction_of_the_power_limit_is_a_spinning_kernel():
    """Real (lambdal/deeplearning-benchmark#21): H100 PCIe at GPU-Util 100 % drawing ~70 W of 350 W -> warn."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text

    e = explain_text(text(PUBLIC / "nvidia-smi__lambdal21-4x-h100-pcie-100pct-util-at-70w-freeze-partial.txt"))
    spin = [f for f in e.findings if f.id == "health.gpu_responsive" and f.verdict is Verdict.WARN]
    assert len(spin) == 3 and "spinning or hung" in spin[0].message
    busy = explain_text(text(PUBLIC / "nvidia-smi__gpuburn114-h100-hbm3-gpu0-1-100pct-698w-under-burn-partial.txt"))
    assert not [f for f in busy.findings if f.id == "health.gpu_responsive" and f.verdict is Verdict.WARN]


def test_an_architecture_only_end_of_life_branches_drive_warns() -> None:
    """Kepler's last driver branch is R470 (end of life): the real Tesla K40c -q header warns naming Kepler; a V100
    (Volta: R580 drives it) gets no driver.branch finding (NVIDIA CUDA GPUs compute-capability pages; driver
    installation guide)."""
    from wizard.explain import explain_text

    k40 = explain_text(text(PUBLIC / "nvidia-smi-q__tesla-k40c-440-header-partial.txt"), "k40")
    br = [f for f in k40.findings if f.id == "driver.branch"]
    assert [f.verdict for f in br] == [Verdict.WARN] and "Kepler" in br[0].message and "R470" in br[0].message
    v100 = explain_text(text(PUBLIC / "nvidia-smi-q__v100-sxm2-ecc-section-old-format-all-zero.txt"), "v100")
    assert not [f for f in v100.findings if f.id == "driver.branch"]


def smi_l_out(name: str, folder=PUBLIC) -> dict[str, ProbeOutput]:
    return {"nvidia_smi_l": ProbeOutput("nvidia_smi_l", "$ nvidia-smi -L (pasted)", text=text(folder / name), rc=0)}


def test_smi_list_counts_gpus_against_the_plan():
    out = smi_l_out("nvidia-smi-L__4x-rtx3090-prompt.txt")
    (f,) = gc.smi_list(out, {"gpu_count": 4})
    assert f.id == "health.gpu_count" and f.verdict is Verdict.PASS
    assert f.message == "nvidia-smi -L lists 4 GPUs: 4x NVIDIA GeForce RTX 3090, as the plan expects"
    (f,) = gc.smi_list(out, {"gpu_count": 8})
    assert f.verdict is Verdict.FAIL and "the plan expects 8" in f.message and "lspci -d 10de:" in f.remedy
    (f,) = gc.smi_list(out, {"gpu_count": 2})
    assert f.verdict is Verdict.WARN


def test_smi_list_mixed_models_warn():
    fs = gc.smi_list(smi_l_out("nvidia-smi-L__4x-k80-1x-rtx2080ti-mixed-empty-uuid.txt"), {})
    mixed = [f for f in fs if f.verdict is Verdict.WARN]
    assert len(mixed) == 1 and "mixed GPU models" in mixed[0].message
    assert "4x Tesla K80, 1x GeForce RTX 2080 Ti" in mixed[0].message
    assert "pytorch.org" in mixed[0].source


def test_smi_list_notes_mig_per_gpu():
    fs = gc.smi_list(smi_l_out("nvidia-smi-L__4x-a100-sxm4-80gb-gpu0-mig-4x-1g.20gb.txt"), {"gpu_count": 4})
    mig, mixed = [f for f in fs if f.id == "health.mig"]
    assert mig.verdict is Verdict.PASS and mig.subject == "GPU 0 (NVIDIA A100-SXM4-80GB)"
    assert "4 MIG device(s) (4x 1g.20gb)" in mig.message and "-mig 0" in mig.remedy
    # MIG on GPU 0 only, three whole GPUs beside it: a whole-node job expects identical GPUs (as nvidia-smi -q says it)
    assert mixed.verdict is Verdict.WARN and "3 other GPU(s)" in mixed.message
    assert [f.verdict for f in fs if f.id == "health.gpu_count"] == [Verdict.PASS]


def test_smi_list_lost_gpu_fails_through_the_driver_check_and_does_not_count():
    out = smi_l_out("synthetic_nvidia-smi-L__gpu3-device-handle-error.txt", SYNTHETIC)
    (count,) = gc.smi_list(out, {"gpu_count": 8})
    assert count.verdict is Verdict.FAIL and "lists 7 GPU(s)" in count.message and "1 more it could not open" in count.message
    (drv,) = gc.nvidia_smi(out, {})
    assert drv.verdict is Verdict.FAIL and drv.subject == "GPU (0000:04:00.0)"


def test_smi_list_garbage_is_unknown():
    out = {"nvidia_smi_l": ProbeOutput("nvidia_smi_l", "x", text="Segmentation fault (core dumped)\n", rc=0)}
    (f,) = gc.smi_list(out, {})
    assert f.verdict is Verdict.UNKNOWN


def test_lspci_rev_ff_gpu_fails_naming_it():
    fs = gpu_presence.lspci_gpus(lspci_out(text(PUBLIC / "lspci-nnk-grep-vga__gt520m-rev-ff-dell14z.txt")), {})
    (dead,) = [f for f in fs if f.verdict is Verdict.FAIL]
    assert dead.id == "health.lspci_gpu_count" and dead.subject == "GPU (0000:01:00.0)"
    assert "does not answer config reads" in dead.message and "rev ff" in dead.message and "Xid 79" in dead.remedy
    # with a plan, the GPU that does not answer does not count towards it
    fs = gpu_presence.lspci_gpus(lspci_out(text(PUBLIC / "lspci-nnk-grep-vga__gt520m-rev-ff-dell14z.txt")), {"gpu_count": 1})
    assert [f.verdict for f in fs if f.id == "health.lspci_gpu_count"] == [Verdict.FAIL, Verdict.FAIL]


def test_lspci_healthy_rev_a1_list_has_no_rev_ff_finding():
    fs = gpu_presence.lspci_gpus(lspci_out(text(PUBLIC / "lspci-grep-nvidia__hgx-h100-8gpu-4-nvswitch-fm-guide.txt")),
                                 {"gpu_count": 8})
    (f,) = [f for f in fs if f.id == "health.lspci_gpu_count"]
    assert f.verdict is Verdict.PASS and "8 NVIDIA GPU(s)" in f.message and "4 NVSwitch function(s)" in f.message


def test_nvidia_smi_from_another_driver_than_the_loaded_one_warns() -> None:
    """The real nvidia-docker#759 table: NVIDIA-SMI 390.48 against Driver Version 390.59 (a container's own nvidia-smi):
    driver.version warns naming both; a table whose two versions agree passes (NVIDIA driver README: nvidia-smi and
    libnvidia-ml ship with the driver)."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "nvidia-smi__nvdocker759-2x-tesla-m40-smi-390.48-vs-driver-390.59-busy.txt"), "x")
    dv = [f for f in r.findings if f.id == "driver.version"]
    assert [f.verdict for f in dv] == [Verdict.WARN] and "390.48" in dv[0].message and "390.59" in dv[0].message
    ok = explain_text(text(PUBLIC / "nvidia-smi__vortex7579-gh200-480gb-570-ecc-off.txt"), "y")
    assert [f.verdict for f in ok.findings if f.id == "driver.version"] == [Verdict.PASS]
    # the same real table prints Off in the Volatile Uncorr. ECC cell of a data-center GPU: ECC is disabled
    assert [f.verdict for f in ok.findings if f.id == "health.ecc_mode"] == [Verdict.WARN]


def test_nvidia_smi_from_another_driver_branch_fails_and_wsl_and_old_version_forms_do_not() -> None:
    """Real tensorflow#19266 table: NVIDIA-SMI 352.63 against Driver Version 384.130, two driver branches installed side
    by side: fail. WSL's Linux build next to its Windows driver (510.47.03 / 511.79, real caffe#7049) and the old
    "NVIDIA-SMI 5.325.15" form of 325.15 (real cbio-cluster#39) are not two installs."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "nvidia-smi__tf19266-titanx-smi-352.63-vs-driver-384.130-partial.txt"), "x")
    dv = [f for f in r.findings if f.id == "driver.version"]
    assert [f.verdict for f in dv] == [Verdict.FAIL] and "branch 352 next to branch 384" in dv[0].message
    wsl = explain_text(text(PUBLIC / "nvidia-smi__wsl-geforce-3gb-511.79-idle-table.txt"), "w")
    assert [f.verdict for f in wsl.findings if f.id == "driver.version"] == [Verdict.WARN]
    old = explain_text(text(PUBLIC / "nvidia-smi__cbio39-3xgtxtitan-driver325.txt"), "o")
    assert [f.verdict for f in old.findings if f.id == "driver.version"] == [Verdict.PASS]


def _info(name: str) -> str:
    """A real /proc/driver/nvidia/gpus/<bus>/information paste of tests/data/public."""
    from tests.probe_data import PUBLIC, text

    return text(PUBLIC / f"proc-driver-nvidia-gpu-information__{name}.txt")


def test_gpu_information_h100_passes_naming_model_bus_and_firmware():
    """The real H100 information file: the driver sees it, GPU Excluded: No, GSP firmware 535.129.03."""
    from wizard.explain import explain_text

    r = explain_text(_info("h100-80gb-hbm3-gsp-535.129.03"), "info")
    assert r.kind == "proc-driver-nvidia-gpu-information" and r.verdict is Verdict.PASS
    (f,) = r.findings
    assert f.id == "health.gpu_driver_binding" and f.subject == "GPU (0000:62:00.0)"
    assert f.message.startswith("the driver sees NVIDIA H100 80GB HBM3 at 0000:62:00.0 (device minor 5, VBIOS "
                                "96.00.99.00.01, GSP firmware 535.129.03); not excluded (GPU Excluded: No)")
    assert "driver 535.129.03" in f.message and "GPU Excluded:    No" in f.evidence


def test_gpu_information_excluded_gpu_fails_and_others_still_pass():
    """Synthetic edit of the real H100 block (no public paste shows 'GPU Excluded: Yes'), next to the real L4 block."""
    h100 = _info("h100-80gb-hbm3-gsp-535.129.03").replace("GPU Excluded:    No", "GPU Excluded:    Yes")
    fs = gpu_presence.gpu_information(parse_gpu_information(h100 + _info("snapd14893-l4-tab-separated")))
    bad = [f for f in fs if f.verdict is Verdict.FAIL]
    assert len(bad) == 1 and bad[0].subject == "GPU (0000:62:00.0)" and "GPU Excluded: Yes" in bad[0].message
    assert "NVreg_ExcludedGpus" in bad[0].remedy and "nv-reg.h" in bad[0].source
    ok = [f for f in fs if f.verdict is Verdict.PASS and f.id == "health.gpu_driver_binding"]
    assert len(ok) == 1 and "NVIDIA L4 at 0000:70:00.0" in ok[0].message and "H100" not in ok[0].message
    old = _info("h100-80gb-hbm3-gsp-535.129.03").replace("GPU Excluded:    No", "Blacklisted:     Yes")
    from wizard.rules.pasted import gpu_information_judge

    assert Verdict.FAIL in {f.verdict for f in gpu_information_judge(old, {})}  # the older name of the same line


def test_gpu_information_placeholders_warn_and_no_model_is_unknown():
    from wizard.rules.pasted import gpu_information_judge

    fs = gpu_information_judge(_info("kvm-guest-gtx1080-vbios-unread-367"), {})  # real: RmInitAdapter failed
    assert [f.verdict for f in fs] == [Verdict.WARN]
    assert "has not brought it up (Video BIOS ??.??.??.??.??" in fs[0].message and "RmInitAdapter" in fs[0].remedy
    fs = gpu_information_judge(_info("snapd14893-l4-tab-separated").replace("Model: \t\t NVIDIA L4\n", ""), {})
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN] and "without its Model line" in fs[0].message
    fs = gpu_information_judge(_info("snapd14893-l4-tab-separated"), {})
    assert [f.verdict for f in fs] == [Verdict.PASS] and "no GPU Firmware line" in fs[0].message


def test_gsp_firmware_against_the_loaded_driver():
    """`head /proc/driver/nvidia/version /proc/driver/nvidia/gpus/*/information` (synthetic arrangement: the real
    H100 block under a version file of the same release, then of another): equal passes, different fails."""
    from wizard.explain import explain_text

    block = _info("h100-80gb-hbm3-gsp-535.129.03").split("\n", 1)[1]

    def head(version: str) -> str:
        return ("==> /proc/driver/nvidia/version <==\n"
                f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  "
                "(dvs-builder@U16-I3-B03-4-3)  Thu Oct 26 2023\nGCC version:  gcc version 12.3.0\n\n"
                f"==> /proc/driver/nvidia/gpus/0000:62:00.0/information <==\n{block}")

    same = explain_text(head("535.129.03"), "same")
    assert same.kind == "proc-driver-nvidia-gpu-information" and same.verdict is Verdict.PASS
    assert any(f.id == "driver.version" and "is the loaded driver's own version" in f.message for f in same.findings)
    other = explain_text(head("535.104.05"), "other")
    bad = [f for f in other.findings if f.verdict is Verdict.FAIL]
    assert other.verdict is Verdict.FAIL and [f.id for f in bad] == ["driver.version"]
    assert "GSP firmware 535.129.03 on 0000:62:00.0, but the loaded kernel module is 535.104.05" in bad[0].message
    assert any(f.id == "driver.version" and "535.104.05 loaded" in f.message for f in other.findings)
    two = block + block.replace("0000:62:00.0", "0000:63:00.0").replace("535.129.03", "550.54.15")
    fs = gpu_presence.gpu_information(parse_gpu_information(two))
    assert [f.verdict for f in fs if f.id == "driver.version"] == [Verdict.WARN]


def test_a_driver_that_reports_no_cuda_version_warns_that_cuda_cannot_run_on_the_host():
    """The real `nvidia-smi -q` of a vGPU host (held-out round 10): 'CUDA Version : Not Found' is no libcuda for this
    driver, not a CUDA version: driver.version warns instead of saying 'supports CUDA up to Not Found'."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "nvidia-smi-q__vgpu-host-driver-cuda-version-not-found.txt"))
    (f,) = [f for f in r.findings if f.id == "driver.version"]
    assert f.verdict is Verdict.WARN and "CUDA Version: Not Found" in f.message and "up to Not Found" not in f.message
    assert "libcuda" in f.remedy and "vgpu" in f.source.lower()


def _smi_l(lines: list[str], **plan) -> list[Finding]:
    return gpu_presence.smi_list({"nvidia_smi_l": ProbeOutput("nvidia_smi_l", "nvidia-smi -L", text="\n".join(lines) + "\n",
                                                              rc=0)}, plan)


H100_L = (PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt").read_text().splitlines()
"""Eight H100 80GB HBM3 (SXM) listed by nvidia-smi -L in a VM (real)."""


def test_sxm_gpus_in_a_count_no_hgx_node_has_warn_without_a_plan():
    """The real 8-GPU listing with one GPU line dropped (synthetic, made here): 7 SXM GPUs is no HGX board or VM
    size (1, 2, 4, 8), so a GPU is probably missing; the same 7 with the plan saying 7, and the real 8, pass."""
    seven = _smi_l(H100_L[:7])
    count = next(f for f in seven if f.id == "health.gpu_count")
    assert count.verdict is Verdict.WARN and "so 7 suggests a GPU is missing" in count.message
    assert "hgx" in count.source.lower()
    assert next(f for f in _smi_l(H100_L[:7], gpu_count=7) if f.id == "health.gpu_count").verdict is Verdict.PASS
    assert next(f for f in _smi_l(H100_L) if f.id == "health.gpu_count").verdict is Verdict.PASS
    assert next(f for f in _smi_l(H100_L[:4]) if f.id == "health.gpu_count").verdict is Verdict.PASS  # a 4-GPU slice


def test_pcie_gpus_in_any_count_are_not_doubted():
    """PCIe cards come in any number per server: 3 RTX 3090s (real listing, one line dropped) pass without a plan."""
    rtx = [ln for ln in (PUBLIC / "nvidia-smi-L__4x-rtx3090-prompt.txt").read_text().splitlines() if ln.startswith("GPU ")]
    assert next(f for f in _smi_l(rtx[:3]) if f.id == "health.gpu_count").verdict is Verdict.PASS
    assert gc.sxm_count_doubt(3, ["NVIDIA GeForce RTX 3090"]) is None
    assert gc.sxm_count_doubt(6, ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"]) is None  # mixed: not this rule


def test_an_unknown_error_cell_in_a_headerless_csv_warns_naming_its_column():
    """Held-out round 32 (tutulino/Megaminer#376): eight GTX 1080 Ti rows of `--format=csv,noheader`, GPU 0's fan
    column "[Unknown Error]" (NVML could not read it): a warn naming GPU 0 and the column, the others answer."""
    from wizard.explain import explain_text

    from tests.probe_data import PUBLIC, text

    fs = [f for f in explain_text(text(PUBLIC / "nvidia-smi-csv__8x-gtx1080ti-rig-fan-unknown-error-over-power-limit.txt"))
          .findings if f.id == "health.gpu_responsive"]
    warn = [f for f in fs if f.verdict is Verdict.WARN]
    assert len(warn) == 1 and warn[0].message.startswith("GPU 0: nvidia-smi cannot read its column 7 ([Unknown Error])")
    assert any(f.verdict is Verdict.PASS and "the other 7 GPUs answer" in f.message for f in fs)


def test_a_cuda_newer_than_the_driver_is_the_forward_compat_library_and_warns_off_data_center_gpus() -> None:
    """Held-out round 88 (real, a container on a GeForce RTX 2080 Ti): driver 450.102.04 with "CUDA Version: 11.2".
    CUDA 11.2 needs driver 460.27.03 (NVIDIA's Table 3), so the 11.2 libcuda is the forward-compatibility package's,
    which NVIDIA supports only on data-center GPUs: on this GeForce CUDA fails with error 804. driver.version warns
    and no longer says the driver "supports CUDA up to 11.2". The same table on a data-center GPU passes, saying
    so; a Jetson's L4T driver (540.4.0 with CUDA 12.6, another numbering) is not judged by the x86_64 table."""
    from wizard.explain import explain_text

    t = text(PUBLIC / "nvidia-smi__rtx2080ti-driver-450-reports-cuda-11-2-in-container.txt")
    (dv,) = [f for f in explain_text(t, "x").findings if f.id == "driver.version"]
    assert dv.verdict is Verdict.WARN and "forward-compatibility" in dv.message and "804" in dv.message
    assert "460.27.03" in dv.message and "supports CUDA up to 11.2" not in dv.message and "11.0" in dv.remedy
    dc = t.replace("GeForce RTX 208...", "Tesla T4          ")
    (ok,) = [f for f in explain_text(dc, "y").findings if f.id == "driver.version"]
    assert ok.verdict is Verdict.PASS and "supported on data-center GPUs" in ok.message
    jetson = explain_text(text(PUBLIC / "nvidia-smi__jetson-orin-nvgpu-na-fields.txt"), "j")
    assert all("forward" not in f.message for f in jetson.findings if f.id == "driver.version")


def test_needs_gpu_does_not_repeat_a_skip_the_check_already_said(vm):
    """Walk 38 #8: "not checked: no NVIDIA GPU on the PCI bus (see health.gpu_pci); observed: GPU health skipped: no
    NVIDIA GPU on the PCI bus (see health.gpu_pci)": a finding its own check skipped stands as said; one that observed
    something else keeps it after "observed:"."""
    from wizard.rules.compose import needs_gpu

    def inner(out, plan):
        return [Finding("a", Verdict.SKIP, "GPU health skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci)",
                        "host", (), "", "s"),
                Finding("b", Verdict.UNKNOWN, "could not tell the GPUs' PCIe link width", "host", (), "fix", "s")]

    a, b = needs_gpu(inner)(vm, {})
    assert a.message == "GPU health skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci)"
    assert str(b.message) == ("not checked: no NVIDIA GPU on the PCI bus (see health.gpu_pci); observed: could not tell "
                              "the GPUs' PCIe link width")
    assert (a.verdict, b.verdict, b.remedy) == (Verdict.SKIP, Verdict.SKIP, "")


def test_err_in_two_fields_and_na_where_same_model_gpus_read_values_does_not_respond():
    """Held-out r95: two of four A100 80GB PCIe showed ERR! (fan, MIG) and N/A for power, GPU-Util and ECC, which the
    other two read: the driver no longer reads them (fail), not "one unreadable sensor" (warn)."""
    from wizard.explain import explain_text
    from tests.probe_data import PUBLIC, text

    e = explain_text(text(PUBLIC / "nvidia-smi__4xa100-pcie-595-gpus-2-3-err-fan-power-na-ecc-err.txt"))
    resp = {f.subject: f for f in e.findings if f.id == "health.gpu_responsive"}
    bad = [f for f in resp.values() if f.verdict is Verdict.FAIL]
    assert sorted(f.subject for f in bad) == ["GPU 2 (0000:ca:00.0)", "GPU 3 (0000:e3:00.0)"], resp
    assert "which the other NVIDIA A100 80GB PCIe GPUs here read" in bad[0].message
    assert any(f.verdict is Verdict.PASS and "other 2 GPUs" in f.message for f in resp.values())


def test_an_sxm_count_no_hgx_board_has_is_doubted_in_a_noheader_csv_indexed_from_zero():
    """Held-out r95: seven A100-SXM4-80GB rows of `--format=csv,noheader`, indexed 0-6: an HGX board carries 4 or 8."""
    from wizard.explain import explain_text
    from tests.probe_data import PUBLIC, text

    body = text(PUBLIC / "nvidia-smi-query-gpu-csv__7xa100-sxm4-80gb-noheader-one-of-8-missing.txt")
    f = [x for x in explain_text(body).findings if x.id == "health.gpu_count"]
    assert [x.verdict for x in f] == [Verdict.WARN] and "suggests a GPU is missing" in f[0].message
    cut = "\n".join(body.splitlines()[1:])  # rows 1-6: not indexed from 0, so not known whole
    assert all(x.verdict is not Verdict.WARN for x in explain_text(cut).findings if x.id == "health.gpu_count")


def test_nvswitch_chips_tell_the_board_and_the_gpus_it_carries():
    """Held-out round 289 (real): `lspci | grep NVIDIA` with four H100 NVSwitches (10de:22a3, an HGX H100/H200 8-GPU
    baseboard) and four H100s passed as '4 NVIDIA GPU(s)'; the board carries eight: four missing, fail. Without a
    whole board's switches (an excerpt with two of them) the count is not inferred."""
    from wizard.explain import explain_text

    t = text(PUBLIC / "lspci__hgx-h100-4-nvswitch-only-4-gpus.txt")
    (f,) = [x for x in explain_text(t).findings if x.id == "health.lspci_gpu_count"]
    assert f.verdict is Verdict.FAIL and "HGX H100/H200 8-GPU baseboard, which carries 8 GPUs: 4 of them" in f.message
    assert gc.board_gpus(["22a3"] * 4) == (8, "H100", "HGX H100/H200 8-GPU") and gc.board_gpus(["22a3"] * 2) is None
    cut = "\n".join(ln for ln in t.splitlines() if not ln.startswith(("07:00.0", "08:00.0")))
    (g,) = [x for x in explain_text(cut).findings if x.id == "health.lspci_gpu_count"]
    assert g.verdict is Verdict.PASS


def test_nvidia_smi_list_with_mig_on_one_gpu_of_two_warns_as_mixed_mig():
    from wizard.explain import explain_text
    from tests.probe_data import PUBLIC, text

    r = explain_text(text(PUBLIC / "nvidia-smi-l__2xh100-gpu0-mig-2g-1g-partitioned-vllm-lambda.txt"))
    (f,) = [f for f in r.findings if f.id == "health.mig" and f.verdict is Verdict.WARN]
    assert "MIG is on for GPU 0" in f.message and "1 other GPU" in f.message


def test_a_datacenter_gpu_at_100_percent_and_28_percent_of_its_power_limit_is_spinning():
    from wizard.explain import explain_text
    from tests.probe_data import PUBLIC, text

    r = explain_text(text(PUBLIC / "nvidia-smi__8xl40s-100pct-util-low-power-stuck-vllm.txt"))
    spin = [f for f in r.findings if f.id == "health.gpu_responsive" and f.verdict is Verdict.WARN]
    assert len(spin) == 2 and "spinning or hung" in spin[0].message
