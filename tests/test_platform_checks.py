"""BIOS/OS platform checks on real outputs, on this VM's own /sys and /proc, and through
`bringup explain` and `bringup check --stage bios|os` (tests/data/PROVENANCE.md)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import steps
from tests.conftest import bringup_cmd, env_for_cli
from tests.probe_data import collect_tree, command_output, failed, grep_tree, text, tree_output
from wizard.rules import bios as bios_rules
from wizard.rules import os as os_rules
from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.probes import ProbeOutput

PLAT = Path(__file__).resolve().parent / "data" / "platform"
PUB, SYN, VM = PLAT / "public", PLAT / "synthetic", PLAT / "local-vm"


def lspci(path: Path) -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(path), rc=0)}


def one(findings, fid=None):
    fs = [f for f in findings if fid is None or f.id == fid]
    assert len(fs) == 1, findings
    return fs[0]


def all_findings_well_formed(findings):
    for f in findings:
        assert f.message and f.subject and f.source, f
        assert f.verdict in (Verdict.PASS, Verdict.SKIP) or f.remedy, f
        assert all(isinstance(e, str) for e in f.evidence)


# ------------------------------------------------------------------ Above 4G decoding


def test_above_4g_large_bar1_proves_64bit_mmio_on():
    f = one(bios_rules.above_4g(lspci(PUB / "lspci-vv__a100-sxm4-header-partial.txt"), {}))
    assert f.verdict is Verdict.PASS and "0000:da:00.0 BAR1 64 GiB (above 4 GB)" in f.message
    assert "Above 4G decoding) is on" in f.message
    assert "Region 1: Memory at 52000000000 (64-bit, prefetchable) [size=64G]" in f.evidence


def test_above_4g_small_bar1_does_not_claim_either_way():
    f = one(bios_rules.above_4g(lspci(PUB / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"), {}))
    assert f.verdict is Verdict.PASS and "BAR1 256 MiB" in f.message and "does not show whether" in f.message


def test_above_4g_invalid_bar_in_kernel_log_fails_per_gpu():
    out = {"kernel_log_dmesg": command_output("kernel_log_dmesg",
                                              PUB / "kernel-log__gpu-operator-492-bar1-0m-probe-failed.txt", "dmesg")}
    fs = bios_rules.above_4g(out, {})
    assert [f.verdict for f in fs] == [Verdict.FAIL, Verdict.FAIL]
    assert [f.subject for f in fs] == ["GPU (0000:14:00.0)", "GPU (0000:1c:00.0)"]
    assert any("BAR1 is 0M" in e for e in fs[0].evidence)
    assert "Above 4G Decoding" in fs[0].remedy and "Resizable BAR at the vendor default" in fs[0].remedy
    all_findings_well_formed(fs)


def test_above_4g_rminit_without_bar_hint_is_a_warning():
    out = {"kernel_log_journal": command_output("kernel_log_journal",
                                                PUB / "syslog__rtx5090-rminitadapter-failed-rebar-off.txt",
                                                "journalctl -k -b --no-pager -o short-monotonic")}
    f = one(bios_rules.above_4g(out, {}))
    assert f.verdict is Verdict.WARN and "RmInitAdapter failed" in f.message and f.subject == "GPU (0000:01:00.0)"


def test_above_4g_unassigned_bar_in_lspci_fails():
    # the A100 section with its BAR1 line as lspci prints a BAR the firmware could not place
    raw = text(PUB / "lspci-vv__a100-sxm4-header-partial.txt").replace(
        "Region 1: Memory at 52000000000 (64-bit, prefetchable) [size=64G]",
        "Region 1: Memory at <unassigned> (64-bit, prefetchable) [size=64G]")
    f = one(bios_rules.above_4g({"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -vv", text=raw)}, {}))
    assert f.verdict is Verdict.FAIL and "left unassigned" in f.message


def test_above_4g_on_this_vm_skips_without_a_gpu():
    out = collect_tree(VM, ["pci"])
    f = one(bios_rules.above_4g(out, {}))
    assert f.verdict is Verdict.SKIP and "no NVIDIA GPU" in f.message


def test_nvidia_smi_xml_bar1():
    xml = ('<nvidia_smi_log><gpu id="00000000:9B:00.0"><bar1_memory_usage>\n<total>131072 MiB</total>\n<used>1 MiB</used>'
           '</bar1_memory_usage></gpu></nvidia_smi_log>')
    assert bios_rules.smi_bar1(xml) == {"0000:9b:00.0": (131072 * 1024 ** 2,
                                                  "<bar1_memory_usage><total>131072 MiB</total>")}


# ------------------------------------------------------------------ root ports, ACS, SR-IOV


def test_root_port_idle_downtrain_is_recheck_under_load():
    out = lspci(PUB / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt")
    f = one(bios_rules.pcie_root_ports(out, {}))
    assert f.verdict is Verdict.WARN and "re-check under load" in f.message and "0000:60:03.1" in f.message
    assert one(bios_rules.pcie_root_ports(out, {"under_load": True})).verdict is Verdict.FAIL


def test_root_port_target_capped_by_configuration():
    f = one(bios_rules.pcie_root_ports(lspci(SYN / "synthetic_lspci-vvv__rootport-target-capped-2.5gts.txt"), {}))
    assert f.verdict is Verdict.WARN and "LnkCtl2 target speed 2.5 GT/s is below the 8 GT/s" in f.message
    assert "LnkCtl2: Target Link Speed: 2.5GT/s, EnterCompliance- SpeedDis-" in f.evidence
    assert "Auto" in f.remedy


def test_acs_reuses_the_health_rule_under_the_bios_id():
    f = one(bios_rules.pcie_acs(lspci(PUB / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"), {}))
    assert f.id == "bios.pcie_acs" and f.verdict is Verdict.PASS and "0000:60:07.1" in f.message
    g = one(bios_rules.pcie_acs(lspci(PUB / "lspci-vvv__epyc-rome-gpp-bridge-acs-on-elided.txt"), {}))
    assert g.id == "bios.pcie_acs" and g.verdict is Verdict.WARN and "SrcValid+" in g.message
    assert one(bios_rules.pcie_acs(lspci(PUB / "lspci-vvv__epyc-rome-gpp-bridge-acs-on-elided.txt"),
                           {"virtualization": True})).verdict is Verdict.PASS


def test_sriov_reported_never_failed():
    files = {}
    for line in text(SYN / "synthetic_sriov-tree__connectx6-4-vfs.txt").splitlines():
        p, _, v = line.rpartition(":")
        files[p] = v + "\n"
    f = one(bios_rules.sriov({"sriov": tree_output("sriov", files, "/sys/bus/pci/devices/*/sriov_*")}, {}))
    assert f.verdict is Verdict.PASS and "0000:3b:00.0 (InfiniBand controller, 4/8 VFs)" in f.message
    assert "VFs are enabled on 1" in f.message
    vm = one(bios_rules.sriov(collect_tree(VM, ["sriov"]), {}))
    assert vm.verdict is Verdict.PASS and "no PCI function exposes SR-IOV" in vm.message


# ------------------------------------------------------------------ C-states, Secure Boot, memory


def test_power_profile_real_server_reports_c3_disabled():
    out = {"cpuidle": tree_output("cpuidle", grep_tree(PUB / "cpuidle-tree__pepc-bdwde0-c3-disabled-cpu0-cpu10-partial.txt"),
                                  "cpuidle sysfs"),
           "cpufreq": tree_output("cpufreq", grep_tree(PUB / "cpufreq-tree__pepc-bdwde0-schedutil-policy0-policy10-partial.txt"),
                                  "cpufreq sysfs")}
    f = one(bios_rules.power_profile(out, {}))
    assert f.verdict is Verdict.PASS
    assert "C3 (40 us) disabled" in f.message and "C6 (133 us)" in f.message and "schedutil x2" in f.message
    assert "/sys/devices/system/cpu/cpu0/cpuidle/state3/disable:1" in f.evidence


def test_power_profile_on_this_vm_is_not_exposed_not_a_fault():
    f = one(bios_rules.power_profile(collect_tree(VM, ["cpuidle", "cpufreq"]), {}))
    assert f.verdict is Verdict.SKIP and "not exposed" in f.message and "cpuidle driver: none" in f.message
    assert "/sys/devices/system/cpu/cpuidle/current_driver:none" in f.evidence


@pytest.mark.parametrize("name, verdict, phrase", [
    ("mokutil-sb-state__insights-core-enabled.txt", Verdict.PASS, "only signed modules"),
    ("mokutil-sb-state__r-pufky-docs-disabled-setup-mode.txt", Verdict.PASS, "Setup Mode"),
    ("mokutil-sb-state__insights-core-efi-not-supported.txt", Verdict.SKIP, "not available"),
])
def test_secure_boot_from_mokutil(name, verdict, phrase):
    f = one(bios_rules.secure_boot({"mokutil_sb_state": command_output("mokutil_sb_state", PUB / name, "mokutil --sb-state")}, {}))
    assert f.verdict is verdict and phrase in f.message
    if "enabled" in name:
        assert "MOK" in f.message or "Machine Owner Key" in f.message


def test_secure_boot_from_efivars_when_mokutil_is_missing():
    out = {"mokutil_sb_state": failed("mokutil_sb_state", "$ mokutil --sb-state", "command not found: mokutil", 127),
           "efi_secureboot": tree_output("efi_secureboot", grep_tree(SYN / "synthetic_efivars-hex__secureboot-on.txt"),
                                         "efivars")}
    f = one(bios_rules.secure_boot(out, {}))
    assert f.verdict is Verdict.PASS and f.message.startswith("Secure Boot is on")


def test_secure_boot_on_this_vm_is_not_exposed():
    out = collect_tree(VM, ["efi_firmware", "efi_secureboot", "module_signing"])
    out["mokutil_sb_state"] = command_output("mokutil_sb_state", VM / "mokutil.stdout", "mokutil --sb-state", rc=127,
                                             stderr=text(VM / "mokutil.stderr"))
    out["mokutil_sb_state"].error = "command not found: mokutil"
    f = one(bios_rules.secure_boot(out, {}))
    assert f.verdict is Verdict.SKIP and "not booted through UEFI" in f.message


def test_memory_channels_every_channel_filled_on_a_1dpc_server():
    out = {"dmidecode_17": command_output("dmidecode_17", PUB / "dmidecode-t17__supermicro-as4124gs-2x-epyc7452-1dpc-partial.txt",
                                          "dmidecode -t 17")}
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.PASS and "every memory channel has a DIMM" in f.message
    assert "4 of 8 DIMM slots populated (128 GiB, DDR4, 3200 MT/s" in f.message
    assert "socket 0: 2 of 4 slots, 2 of 2 channels populated" in f.message


def test_memory_channels_empty_channel_warns():
    out = {"dmidecode_17": command_output("dmidecode_17", SYN / "synthetic_dmidecode-t17__supermicro-p0-channel1-empty.txt",
                                          "dmidecode -t 17")}
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.WARN and "socket 0 channel 1" in f.message and "every memory channel" in f.remedy
    assert "Bank Locator: P0_Node0_Channel1_Dimm1" in f.evidence
    raw = {"smbios_memory": tree_output("smbios_memory", grep_tree(SYN / "synthetic_smbios17-raw-hex__p0-channel-c-empty.txt"),
                                        "/sys/firmware/dmi/entries/17-*/raw (hex)")}
    g = one(bios_rules.memory_channels(raw, {}))
    assert g.verdict is Verdict.WARN and "socket 0 channel C" in g.message and "144 GiB, DDR5, 4800 MT/s" in g.message


def test_memory_channels_unnamed_slots_cannot_tell():
    out = {"dmidecode_17": command_output("dmidecode_17", PUB / "dmidecode-t17__dell-2s-ddr4-a1-a6-unnamed-channels-partial.txt",
                                          "dmidecode -t 17")}
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.UNKNOWN and "A3, A6" in f.message and "cannot tell" in f.message


def test_memory_channels_socket_without_cpu_is_not_an_empty_channel():
    # the real 1DPC listing with socket 1's DIMMs taken out, on a host whose topology shows one socket
    raw = text(PUB / "dmidecode-t17__supermicro-as4124gs-2x-epyc7452-1dpc-partial.txt")
    head, sep, tail = raw.partition("\tLocator: P2-DIMMA1")
    tail = tail.replace("\tSize: 32 GB", "\tSize: No Module Installed")
    out = {"dmidecode_17": ProbeOutput("dmidecode_17", "$ dmidecode -t 17", text=head + sep + tail, rc=0),
           "cpu_topology": tree_output("cpu_topology", {"/sys/devices/system/cpu/cpu0/topology/physical_package_id": "0\n",
                                                        "/sys/devices/system/cpu/cpu0/topology/core_id": "0\n"},
                                       "cpu topology")}
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.PASS and "socket 1 has no DIMM and no CPU" in f.message
    del out["cpu_topology"]
    assert one(bios_rules.memory_channels(out, {})).verdict is Verdict.WARN  # without the topology it cannot tell


def test_memory_channels_on_this_vm_is_not_exposed():
    out = collect_tree(VM, ["smbios_memory", "dmi_tables"])
    out["dmidecode_17"] = failed("dmidecode_17", "$ dmidecode -t 17", "command not found: dmidecode", 127)
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.SKIP and "not exposed" in f.message and "/sys/firmware/dmi" in f.message


def test_memory_channels_non_root_is_unknown():
    out = {"smbios_memory": tree_output("smbios_memory", {"/sys/firmware/dmi/entries/17-0/raw": None}, "raw",
                                        {"/sys/firmware/dmi/entries/17-0/raw": "permission denied"}),
           "dmi_tables": tree_output("dmi_tables", {"/sys/firmware/dmi": ""}, "ls -d"),
           "dmidecode_17": failed("dmidecode_17", "$ dmidecode -t 17", "exit status 1", 1,
                                  "/sys/firmware/dmi/tables/smbios_entry_point: Permission denied")}
    f = one(bios_rules.memory_channels(out, {}))
    assert f.verdict is Verdict.UNKNOWN and "root" in f.remedy


# ------------------------------------------------------------------ OS checks


def _os(osr: str, kernel: str = "6.8.0-41-generic") -> dict[str, ProbeOutput]:
    return {"os_release": ProbeOutput("os_release", "/etc/os-release", text=osr),
            "kernel": ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=kernel + "\n")}


UBUNTU_2404 = text(Path(__file__).resolve().parent / "data" / "public" / "os-release__ubuntu-24.04.txt")
RHEL_96 = text(Path(__file__).resolve().parent / "data" / "public" / "os-release__rhel-9.6.txt")


def test_os_support_listed_unlisted_and_unknown():
    f = one(os_rules.os_support(_os(UBUNTU_2404), {}))
    assert f.verdict is Verdict.PASS and "R580" in f.message and "6.8.0-31" in f.message and "DKMS" in f.message
    assert one(os_rules.os_support(_os(RHEL_96, "5.14.0-570.el9.x86_64"), {"driver_branch": "R590"})).verdict is Verdict.PASS
    old = UBUNTU_2404.replace('VERSION_ID="24.04"', 'VERSION_ID="20.04"')
    w = one(os_rules.os_support(_os(old), {"driver_branch": "590"}))
    assert w.verdict is Verdict.WARN and "Ubuntu 22.04 LTS" in w.message and "release notes" in w.message
    u = one(os_rules.os_support(_os(UBUNTU_2404), {"driver_branch": "570"}))
    assert u.verdict is Verdict.UNKNOWN and "release notes" in u.message  # no table for the branch: never a fail
    vm = one(os_rules.os_support(collect_tree(VM, ["os_release", "kernel"]), {}))
    # Debian 12 is in the CUDA 13.0 Update 1 table (R580): listed, with the table's source named
    assert vm.verdict is Verdict.PASS and "Debian GNU/Linux 12" in vm.message and "listed" in vm.message
    assert "cuda-installation-guide-linux" in vm.source and "CUDA 13.0 Update 1" in vm.message


def test_kernel_headers():
    kern = ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text="6.8.0-41-generic\n")
    ok = {"kernel": kern, "kernel_build": tree_output("kernel_build", {"/lib/modules/6.8.0-41-generic/build": "",
                                                                       "/lib/modules/6.8.0-41-generic/build/Makefile": ""},
                                                      "ls -d")}
    assert one(os_rules.kernel_headers(ok, {})).verdict is Verdict.PASS
    dangling = {"kernel": kern, "kernel_build": tree_output("kernel_build", {"/lib/modules/6.8.0-41-generic/build": "",
                                                                             "/lib/modules/6.8.0-40-generic/build/Makefile": ""},
                                                            "ls -d")}
    f = one(os_rules.kernel_headers(dangling, {}))
    assert f.verdict is Verdict.WARN and "no Makefile" in f.message and "linux-headers-6.8.0-41-generic" in f.remedy
    vm = one(os_rules.kernel_headers(collect_tree(VM, ["kernel", "kernel_build"]), {}))
    assert vm.verdict is Verdict.WARN and "6.18.44-fc-v657" in vm.message


def test_mount_options_barrier_off_warns_and_is_never_suggested():
    out = {"mounts": ProbeOutput("mounts", "/proc/self/mounts", text=text(SYN / "synthetic_proc-mounts__raid-ext4-nobarrier.txt")),
           "fstab": ProbeOutput("fstab", "/etc/fstab", text=text(SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt"))}
    fs = os_rules.mount_options(out, {"data_path": "/raid/datasets"})
    warn = [f for f in fs if f.verdict is Verdict.WARN]
    assert len(warn) == 1 and "/raid (holds /raid/datasets) is mounted with nobarrier" in warn[0].message
    assert warn[0].remedy.startswith("Remove nobarrier")
    assert any(f.verdict is Verdict.PASS and "/: ext4" in f.message for f in fs)
    # configured in fstab only (not mounted so yet): still a warning, saying so
    out["mounts"] = ProbeOutput("mounts", "/proc/self/mounts", text="/dev/nvme0n1p2 / ext4 rw 0 0\n/dev/md0 /raid ext4 rw 0 0\n")
    fs = os_rules.mount_options(out, {"data_path": "/raid"})
    assert [f.verdict for f in fs if "configured in /etc/fstab" in f.message] == [Verdict.WARN]
    # the data volume is not mounted now: its fstab entry still decides how it will be mounted
    out["mounts"] = ProbeOutput("mounts", "/proc/self/mounts", text="/dev/nvme0n1p2 / ext4 rw 0 0\n")
    fs = os_rules.mount_options(out, {"data_path": "/raid/ckpt"})
    assert [(f.verdict, f.subject) for f in fs if f.verdict is Verdict.WARN] == [(Verdict.WARN, "/raid")]
    for f in os_rules.mount_options(collect_tree(VM, ["mounts", "fstab"]), {}):
        assert f.verdict is Verdict.PASS and "barrier=0" not in f.remedy


def test_time_sync_on_this_vm_is_unknown_with_the_reason():
    out = {"timedatectl": command_output("timedatectl", VM / "timedatectl-show.stdout",
                                         "timedatectl show -p NTPSynchronized -p NTP",
                                         rc=int(text(VM / "timedatectl-show.rc")), stderr=text(VM / "timedatectl-show.stderr")),
           "chronyc_tracking": failed("chronyc_tracking", "$ chronyc tracking", "command not found: chronyc", 127)}
    f = one(os_rules.time_sync(out, {}))
    assert f.verdict is Verdict.UNKNOWN and any("not been booted with systemd" in e for e in f.evidence)


def test_time_sync_not_synchronised_warns_and_chrony_is_the_fallback():
    out = {"timedatectl": failed("timedatectl", "$ timedatectl show", "command not found: timedatectl", 127),
           "chronyc_tracking": command_output("chronyc_tracking", PUB / "chronyc-tracking__pingcap-docs-5283-not-synchronised-line.txt",
                                              "chronyc tracking")}
    f = one(os_rules.time_sync(out, {}))
    assert f.verdict is Verdict.WARN and "not synchronised" in f.message and "line up" in f.message
    assert "Leap status    : Not synchronised" in f.evidence


# ------------------------------------------------------------------ every check survives missing probes


ALL_CHECKS = [bios_rules.above_4g, bios_rules.pcie_acs, bios_rules.power_profile, bios_rules.pcie_root_ports, bios_rules.sriov, bios_rules.secure_boot,
              bios_rules.memory_channels, os_rules.os_support, os_rules.kernel_headers, os_rules.mount_options, os_rules.time_sync,
              os_rules.swap_rollback_info]


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_no_probe_output_is_unknown_or_skip_never_a_crash(check):
    fs = check({}, {})
    assert fs and all(f.verdict in (Verdict.UNKNOWN, Verdict.SKIP) for f in fs)
    all_findings_well_formed(fs)


def test_bios_steps_are_boot_sensitive_and_checked():
    for s in steps.stage_by_id("bios").steps:
        assert s.boot_sensitive and s.check is not None and s.probes, s.id
    ids = [s.id for s in steps.stage_by_id("bios").steps]
    for sid in ("bios.above_4g_decoding", "bios.iommu", "bios.pcie_acs", "bios.power_profile", "bios.cpu", "bios.numa",
                "bios.pcie", "bios.sriov", "bios.secure_boot", "bios.memory_channels"):
        assert sid in ids


# ------------------------------------------------------------------ explain picks these kinds


@pytest.mark.parametrize("path, kind, verdict", [
    (PUB / "mokutil-sb-state__insights-core-enabled.txt", "mokutil-sb-state", "pass"),
    (PUB / "mokutil-sb-state__insights-core-efi-not-supported.txt", "mokutil-sb-state", "skip"),
    (PUB / "dmidecode-t17__supermicro-as4124gs-2x-epyc7452-1dpc-partial.txt", "dmidecode-memory", "pass"),
    (PUB / "dmidecode-t17__dell-2s-ddr4-a1-a6-unnamed-channels-partial.txt", "dmidecode-memory", "unknown"),
    (SYN / "synthetic_dmidecode-t17__supermicro-p0-channel1-empty.txt", "dmidecode-memory", "warn"),
    (PUB / "timedatectl-status__bigtreetech-cb1-188-not-synchronized.txt", "timedatectl", "warn"),
    (PUB / "timedatectl-status__deis-2563-old-ntp-synchronized.txt", "timedatectl", "pass"),
    (SYN / "synthetic_timedatectl-show__synchronized.txt", "timedatectl", "pass"),
    (PUB / "chronyc-tracking__nelisys-docs-ubuntu2004-synchronised.txt", "chronyc-tracking", "pass"),
    (PUB / "chronyc-tracking__pingcap-docs-5283-not-synchronised-line.txt", "chronyc-tracking", "warn"),
    (PUB / "cpuidle-tree__pepc-bdwde0-c3-disabled-cpu0-cpu10-partial.txt", "cpu-power-sysfs", "pass"),
    (PUB / "cpufreq-tree__pepc-bdwde0-schedutil-policy0-policy10-partial.txt", "cpu-power-sysfs", "pass"),
    (PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt", "fstab", "pass"),
    (SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt", "fstab", "warn"),
    (SYN / "synthetic_proc-mounts__raid-ext4-nobarrier.txt", "fstab", "warn"),
])
def test_explain_detects_and_judges(path, kind, verdict):
    r = explain_text(text(path))
    assert r.kind == kind and r.verdict.value == verdict, (r.kind, r.verdict, [f.message for f in r.findings])
    # also with the command line pasted in front, and cut short
    raw = text(path)
    assert explain_text(f"$ {kind.split('-')[0]}\n" + raw).kind == kind
    cut = "\n".join(raw.splitlines()[: max(2, len(raw.splitlines()) * 2 // 3)]) + "\n"
    assert explain_text(cut).kind == kind


def test_explain_kubernetes_plan_turns_fstab_swap_into_a_warning():
    r = explain_text(text(PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt"), expectations={"scheduler": "kubernetes"})
    swap = [f for f in r.findings if f.id == "os.swap"]
    assert swap and swap[0].verdict is Verdict.WARN and "kubelet" in swap[0].message


# ------------------------------------------------------------------ `bringup check --stage` on this machine


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, env=env_for_cli(), timeout=300)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def test_check_stage_bios_reports_this_machine(tmp_path):
    r = _run("--state", str(tmp_path / "s"), "check", "--stage", "bios", "--json")
    doc = json.loads(r.stdout)
    by = {}
    for f in doc["findings"]:
        by.setdefault(f["id"], []).append(f)
    assert {s.id for s in steps.stage_by_id("bios").steps} <= set(by)
    iommu = by["bios.iommu"][0]
    assert any(e.startswith("/proc/cmdline") for e in iommu["evidence"])
    driver = (_read("/sys/devices/system/cpu/cpuidle/current_driver") or "").strip()
    power = by["bios.power_profile"][0]
    if driver in ("", "none") and not list(Path("/sys/devices/system/cpu").glob("cpufreq/policy*")):
        assert power["verdict"] == "skip" and "not exposed" in power["message"]
    else:
        assert power["verdict"] == "pass" and (f"cpuidle driver {driver}" in power["message"] or "cpufreq" in power["message"])
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    assert f"{nodes} NUMA node(s)" in by["bios.numa"][0]["message"]
    mem = by["bios.memory_channels"][0]
    if not Path("/sys/firmware/dmi").exists():
        assert mem["verdict"] == "skip" and "not exposed" in mem["message"]
    sb = by["bios.secure_boot"][0]
    if not Path("/sys/firmware/efi").exists():
        assert sb["verdict"] == "skip" and "UEFI" in sb["message"]
    human = _run("--state", str(tmp_path / "s"), "check", "--stage", "bios")
    assert "bios.power_profile" in human.stdout and "overall:" in human.stdout


def test_check_stage_os_reports_this_machine(tmp_path):
    r = _run("--state", str(tmp_path / "s"), "check", "--stage", "os", "--json")
    doc = json.loads(r.stdout)
    by = {f["id"]: f for f in doc["findings"]}
    assert {s.id for s in steps.stage_by_id("os").steps} <= set(by)
    swaps = [ln for ln in (_read("/proc/swaps") or "").splitlines()[1:] if ln.strip()]
    assert (by["os.swap"]["message"] == "swap is off") == (not swaps)
    rel = os.uname().release
    assert rel in by["os.kernel_headers"]["message"]
    assert (by["os.kernel_headers"]["verdict"] == "pass") == Path(f"/lib/modules/{rel}/build/Makefile").exists()
    assert by["os.swap_rollback"]["verdict"] == "skip"
    assert by["os.mount_options"]["verdict"] in ("pass", "warn") and "/" in by["os.mount_options"]["message"]
