"""Tests of wizard/rules/kernel_log.py."""

from __future__ import annotations

import functools
import re

import pytest
import steps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.engine import Build
from wizard.explain import explain_text
from wizard.model import Finding, Verdict, overall
from wizard.parsers import edac as ed
from wizard.parsers import kernellog as kl
from wizard.parsers.smi import parse_smi_table
from wizard.probes import ProbeOutput
from wizard.rules import edac as edac_rules
from wizard.rules import kernel_log as klog
from wizard.rules import smi as smi_checks
from wizard.rules.kernel_log import kernel_log

from tests.conftest import DATA, frozen_clock
from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def _ids(findings: list[Finding], verdict: Verdict | None = None) -> set[str]:
    return {f.id for f in findings if verdict is None or f.verdict is verdict}


def test_nouveau_conflict_absorbs_no_adapter_probed():
    e = explain_text(text(CASES / "dmesg__v100-nouveau-conflict-probe-not-called.txt"))
    assert _ids(e.findings) == {"health.driver_conflict"}
    f = e.findings[0]
    assert f.verdict is Verdict.FAIL and "3 GPUs" in f.message
    assert "blacklist nouveau" in f.remedy and "initramfs" in f.remedy
    assert any("No NVIDIA graphics adapter probed" in ln for ln in f.evidence)


def test_rminitadapter_gives_the_bar_and_above_4g_remedy():
    e = explain_text(text(CASES / "syslog__rtx5090-rminitadapter-failed-rebar-off.txt"))
    (f,) = e.findings
    assert f.id == "health.gpu_init" and f.verdict is Verdict.FAIL and f.subject == "GPU (0000:01:00.0)"
    assert "Above 4G" in f.remedy and "Resizable BAR" in f.remedy


PUBLIC_EXPECTED = {
    # file: (kind, verdict, finding ids that must be present)
    "kernel-log__gpu-operator-492-bar1-0m-probe-failed.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    # the RTX 3090's BAR 1 and BAR 3 "can't assign; no space": its driver cannot map them (fail since r36 #03)
    "kernel-log__rockchip-2-rtx3090-limited-x4-bar-no-space-partial.txt": ("kernel-log", "fail",
                                                                          {"health.pcie_limited", "health.gpu_init"}),
    "kernel-log__nvsentinel-155-fallen-off-bus-no-xid.txt": ("kernel-log", "fail", {"health.gpu_bus"}),
    "kernel-log__vgpu-unlock-114-aer-uncorrected-fatal-sdes.txt": ("kernel-log", "fail", {"health.aer"}),
    "kernel-log__pop-os-3363-correctable-aer-journal-partial.txt": ("kernel-log", "warn", {"health.aer"}),
    "kernel-log__gsconnect-1052-localised-month-corrected-aer-partial.txt": ("kernel-log", "warn", {"health.aer"}),
    "kernel-log__negativo17-73-nouveau-gm204-partial.txt": ("kernel-log", "fail", {"health.driver_conflict"}),
    "kernel-log__nixpkgs-29514-nouveau-loaded-journal-partial.txt": ("kernel-log", "fail", {"health.driver_conflict"}),
    "kernel-log__olares-3963-already-bound-novacore.txt": ("kernel-log", "fail", {"health.driver_conflict"}),
    "kernel-log__open-gpu-1151-rtx5080-rm-init-adapter-syslog.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    "kernel-log__open-gpu-789-rtx3090-rminit-gsp-firmware-partial.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    "kernel-log__bazzite-2612-bar1-0m-journal-partial.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    "kernel-log__mbp-2016-linux-60-tb3-egpu-bar-no-space-partial.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    "kernel-log__gpud-dmesg-decode-iso-xid13-xid43.txt": ("kernel-log", "warn", {"health.xid"}),
    "kernel-log__gpud-journalctl-short-iso-peermem-errors.txt": ("kernel-log", "warn", {"health.kernel_log"}),
    "kernel-log__dev-vm-firecracker-dmesg-local.txt": ("kernel-log", "pass", {"health.kernel_log"}),
    # review round 3 (PROVENANCE.md; judged in detail in tests/rules/test_xid.py and tests/rules/test_smi.py)
    "kernel-log__nvl-xid45-caused-by-xid149-xid145.txt": ("kernel-log", "fail", {"health.xid"}),  # NVLink killed it
    "kernel-log__gpud-xid149-145-94-nvlink5-kmsg.txt": ("kernel-log", "fail", {"health.xid"}),
    "ras-mc-ctl__rasdaemon-121-errors-mce-corrected.txt": ("ras-mc-ctl", "warn", {"health.mce"}),
    "ras-mc-ctl__rasdaemon-121-error-count-all-zero.txt": ("ras-mc-ctl", "pass", {"health.host_memory"}),
    "ras-mc-ctl__rasdaemon-67-error-count-5539-ce.txt": ("ras-mc-ctl", "warn", {"health.host_memory"}),
    "ras-mc-ctl__nixos-infra-523-errors-mce-corrected-partial.txt": ("ras-mc-ctl", "warn", {"health.mce"}),
    "ras-mc-ctl__osm-759-errors-memory-ce-partial.txt": ("ras-mc-ctl", "warn", {"health.host_memory"}),
    "edac-sysfs__edac-utils-15-rank-dimm-ce-count-grep.txt": ("edac-sysfs", "warn", {"health.host_memory"}),
    "edac-sysfs__netdata-1508-find-cat-server-b-zero.txt": ("edac-sysfs", "pass", {"health.host_memory"}),
    "edac-util__edac-utils-15-report-full-all-zero.txt": ("edac-util", "pass", {"health.host_memory"}),
}


SYNTHETIC_EXPECTED = {
    "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt": ("kernel-log", "warn", {"health.xid"}),
    "synthetic_kernel-log__xid-unknown-code-and-154-node-reboot.txt": ("kernel-log", "fail", {"health.xid"}),
    "synthetic_kernel-log__clean-boot-nvidia-load.txt": ("kernel-log", "pass", {"health.kernel_log"}),
    "synthetic_edac-util__dimm-ue-and-ce.txt": ("edac-util", "fail", {"health.host_memory"}),
    "synthetic_ras-mc-ctl__summary-memory-ue-aer-fatal.txt": ("ras-mc-ctl", "fail", {"health.host_memory",
                                                                                      "health.aer"}),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_EXPECTED))
def test_public_sample(name):
    kind, verdict, ids = PUBLIC_EXPECTED[name]
    e = explain_text(text(PUBLIC / name), name)
    assert e.kind == kind
    assert e.verdict.value == verdict, [(f.verdict.value, f.message) for f in e.findings]
    assert ids <= _ids(e.findings)
    for f in e.findings:
        assert f.source, f
        if f.verdict not in (Verdict.PASS, Verdict.SKIP):
            assert f.remedy, f
        assert f.evidence, f


@pytest.mark.parametrize("name", sorted(SYNTHETIC_EXPECTED))
def test_synthetic_sample(name):
    kind, verdict, ids = SYNTHETIC_EXPECTED[name]
    e = explain_text(text(SYNTHETIC / name), name)
    assert e.kind == kind
    assert e.verdict.value == verdict, [(f.verdict.value, f.message) for f in e.findings]
    assert ids <= _ids(e.findings)


def test_every_public_and_synthetic_file_of_this_area_is_tested():
    import csv

    with open(PUBLIC / "expected.csv", newline="") as fh:  # rows there are judged by tests/e2e/test_cases.py
        with_a_verdict_row = {r["file"] for r in csv.DictReader(fh)}
    mine = {p.name for p in PUBLIC.glob("*") if p.is_file() and p.name.startswith(("kernel-log__", "edac", "ras-mc-ctl"))}
    assert mine - with_a_verdict_row == set(PUBLIC_EXPECTED) - with_a_verdict_row
    syn = {p.name for p in SYNTHETIC.glob("synthetic_*") if p.is_file() and p.name.startswith(
        ("synthetic_kernel-log", "synthetic_edac", "synthetic_ras"))}
    assert syn == set(SYNTHETIC_EXPECTED)


def test_limited_by_names_the_upstream_port_and_width_remedy():
    e = explain_text(text(PUBLIC / "kernel-log__rockchip-2-rtx3090-limited-x4-bar-no-space-partial.txt"))
    f = next(f for f in e.findings if f.id == "health.pcie_limited")
    assert "upstream port 0000:00:00.0" in f.message and "x4" in f.message and "x16" in f.message
    assert f.subject == "GPU (0000:01:00.0)"  # vendor 10de, class 0x0300 in the enumeration line
    assert "narrower" in f.remedy


def test_nova_conflict_blacklists_nova_too():
    e = explain_text(text(PUBLIC / "kernel-log__olares-3963-already-bound-novacore.txt"))
    f = e.findings[0]
    assert "NovaCore" in f.message and "blacklist nova_core" in f.remedy and "blacklist nouveau" in f.remedy


def test_fallen_off_bus_three_line_form_finds_the_bus_and_absorbs_probe_failure():
    e = explain_text(text(PUBLIC / "kernel-log__nvsentinel-155-fallen-off-bus-no-xid.txt"))
    assert _ids(e.findings) == {"health.gpu_bus"}
    f = e.findings[0]
    assert f.subject == "GPU (0000:b3:00.0)" and "power-cycle" in f.remedy.lower()
    assert any("probe routine failed" in ln for ln in f.evidence)


def test_bar_hint_from_the_bridge_joins_the_gpu_failure():
    e = explain_text(text(PUBLIC / "kernel-log__mbp-2016-linux-60-tb3-egpu-bar-no-space-partial.txt"))
    (f,) = e.findings
    assert f.subject == "GPU (0000:0a:00.0)"
    assert any("BAR 15: no space" in ln for ln in f.evidence)
    assert "Above 4G Decoding" in f.remedy


def test_gpu_driver_context_lines_join_the_init_failure():
    e = explain_text(text(PUBLIC / "kernel-log__open-gpu-1151-rtx5080-rm-init-adapter-syslog.txt"))
    assert _ids(e.findings) == {"health.gpu_init"}
    assert any("Cannot attach gpu" in ln for ln in e.findings[0].evidence)


def test_corrected_aer_within_a_fraction_of_a_second_on_a_root_port_is_a_burst():
    """Timeout, BadTLP, Timeout on one root port within 0.11 s (19 hours after boot): a burst, not information."""
    e = explain_text(text(PUBLIC / "kernel-log__pop-os-3363-correctable-aer-journal-partial.txt"))
    (f,) = e.findings
    assert f.verdict is Verdict.WARN and "3 PCIe AER errors" in f.message and "[1022:1453]" in f.message
    assert "burst of 3 corrected errors" in f.message and "riser" in f.remedy


def test_one_corrected_aer_error_is_information_only():
    lines = ("[68183.615790] pcieport 0000:00:03.1: AER: Correctable error message received from 0000:00:00.0\n"
             "[68183.615810] pcieport 0000:00:03.1: PCIe Bus Error: severity=Correctable, type=Data Link Layer, "
             "(Transmitter ID)\n"
             "[68183.615818] pcieport 0000:00:03.1:   device [1022:1453] error status/mask=00001000/00006000\n"
             "[68183.615826] pcieport 0000:00:03.1:    [12] Timeout               \n")
    (f,) = explain_text(lines).findings  # the first report of the real pop-os paste alone
    assert f.verdict is Verdict.PASS and "information" in f.message and f.remedy == ""


def test_aer_cant_recover_fails():
    lines = ("[ 10.1] pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:3b:00.0\n"
             "[ 10.1] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
             "(Requester ID)\n"
             "[ 10.2] nvidia 0000:3b:00.0: AER: can't recover (no error_detected callback)\n")
    log = kl.parse_kernel_log(lines)
    aer = [e for e in log.events if e.kind == "aer"]
    assert aer[0].fields["port"] == "0000:00:03.0" and aer[0].fields["severity"] == "nonfatal"
    assert any(e.fields.get("recovery_failed") for e in aer)
    findings = klog.judge_kernel_log(log, {})
    f = next(f for f in findings if f.id == "health.aer")
    assert f.verdict is Verdict.FAIL and "could not recover" in f.message


def test_uncorrected_non_fatal_aer_warns():
    lines = ("[ 10.1] pcieport 0000:00:03.0: AER: Uncorrected (Non-Fatal) error received: 0000:00:03.0\n"
             "[ 10.1] pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
             "(Requester ID)\n")
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(lines), {})
    assert f.verdict is Verdict.WARN and "non-fatal" in f.message


def test_speed_only_limit_suggests_checking_under_load():
    line = ("[    2.9] pci 0000:41:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link at "
            "0000:40:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {})
    assert f.verdict is Verdict.WARN and "under load" in f.remedy and "0000:40:01.1" in f.message


def test_boot_only_counts_the_last_boot_and_lists_the_rest():
    log = kl.parse_kernel_log(text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt"))
    findings = klog.judge_kernel_log(log, {"boot_only": True})
    assert overall(findings) is Verdict.PASS
    skip = next(f for f in findings if f.id == "health.kernel_log_ignored")
    assert skip.verdict is Verdict.SKIP and "1 from earlier boots" in skip.message
    assert any("Xid (PCI:0000:18:00): 79" in ln for ln in skip.evidence)
    # a pasted journal of several boots (explain): the earlier boot's Xid 79 is said as such and warns, not fails
    # (walk 28 #5: it failed the paste and asked for the power cycle the node had had)
    (x,) = [f for f in klog.judge_kernel_log(log, {"boot_only": False}) if f.id == "health.xid"]
    assert x.verdict is Verdict.WARN and x.message.endswith("(in an earlier boot of this log: the node has rebooted since)")
    assert x.remedy.startswith("The node has rebooted since this event") and "Power-cycle" in x.remedy
    # the same Xid in the log's last boot fails as before
    last = kl.parse_kernel_log(text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt")
                               .split("-- Boot 9a8b", 1)[0])
    assert overall(klog.judge_kernel_log(last, {"boot_only": False})) is Verdict.FAIL


def test_event_key_is_stable_and_acknowledgement_removes_the_event():
    body = text(CASES / "dmesg__xid13-xid109-sm-exception-ctx-switch-timeout.txt")
    a = kl.parse_kernel_log(body)
    b = kl.parse_kernel_log(body)
    assert [kl.event_key(e) for e in a.events] == [kl.event_key(e) for e in b.events]
    assert all(re.fullmatch(r"[0-9a-f]{16}", kl.event_key(e)) for e in a.events)
    keys = {kl.event_key(e) for e in a.events}
    assert len(keys) == len(a.events)  # identical Xid 13 texts at the same second differ in text here
    x109 = next(e for e in a.events if e.fields.get("code") == 109)
    findings = klog.judge_kernel_log(a, {"acknowledged": {kl.event_key(x109)}})
    assert not any("Xid 109" in f.message for f in findings if f.id == "health.xid")
    skip = next(f for f in findings if f.id == "health.kernel_log_ignored")
    assert "1 acknowledged" in skip.message and kl.event_key(x109) in skip.evidence[0]


def test_acknowledged_accepts_a_mapping_of_reasons():
    log = kl.parse_kernel_log(text(CASES / "dmesg__a100-xid63-row-remapper-new-row-marked.txt"))
    key = kl.event_key(log.events[0])
    findings = klog.judge_kernel_log(log, {"acknowledged": {key: "remap done, GPU reset on 2026-11-30"}})
    assert overall(findings) is Verdict.PASS


def test_empty_and_meta_only_logs_are_unknown():
    for t in ("", "-- No entries --\n", "\n\n"):
        (f,) = klog.judge_kernel_log(kl.parse_kernel_log(t), {})
        assert f.verdict is Verdict.UNKNOWN and f.id == "health.kernel_log"


def test_benign_module_signature_line_is_not_unrecognised():
    e = explain_text(text(SYNTHETIC / "synthetic_kernel-log__clean-boot-nvidia-load.txt"))
    assert e.verdict is Verdict.PASS
    noisy = "[ 3.9] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping"
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(noisy), {})
    assert f.verdict is Verdict.WARN and kl.event_key(kl.parse_kernel_log(noisy).events[0]) in f.remedy


def test_gpu_index_names_the_gpu():
    log = kl.parse_kernel_log(text(CASES / "dmesg__a100-xid63-row-remapper-new-row-marked.txt"))
    (f,) = klog.judge_kernel_log(log, {}, gpu_index={"0000:10:1c.0": 5})
    assert f.subject == "GPU 5 (0000:10:1c.0)"


def _cmd(name: str, argv: str, body: str = "", rc: int = 0, error: str = "", stderr: str = "") -> ProbeOutput:
    return ProbeOutput(name=name, source="$ " + argv, text=body, rc=rc, error=error, stderr=stderr)


JOURNAL = "journalctl -k -b --no-pager -o short-monotonic"


def test_kernel_log_check_reads_the_journal_with_boot_only():
    body = text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt")
    outs = {"kernel_log_journal": _cmd("kernel_log_journal", JOURNAL, body)}
    findings = klog.kernel_log(outs, {"boot_only": False})  # forced true: the probe is this boot only
    assert overall(findings) is Verdict.PASS
    assert "health.kernel_log_ignored" in _ids(findings)
    assert findings[0].evidence[0] == "$ " + JOURNAL


def test_kernel_log_check_falls_back_to_dmesg_and_names_gpu_index():
    journal = _cmd("kernel_log_journal", JOURNAL, "-- No entries --\n",
                   stderr="No journal files were found.")  # as on the development VM
    dmesg = _cmd("kernel_log_dmesg", "dmesg", text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt"))
    nvml = ProbeOutput("nvml", "NVML", text='{"init": "ok", "count": 8, "gpus": [{"index": 4, '
                                            '"pci_bus_id": "00000000:9B:00.0"}]}')
    findings = klog.kernel_log({"kernel_log_journal": journal, "kernel_log_dmesg": dmesg, "nvml": nvml}, {})
    x = next(f for f in findings if f.id == "health.xid")
    assert x.verdict is Verdict.FAIL and x.subject == "GPU 4 (0000:9b:00.0, serial 0000000000000)"


def test_kernel_log_check_dmesg_restricted_is_unknown_not_a_crash():
    journal = _cmd("kernel_log_journal", JOURNAL, error="command not found: journalctl", rc=None)
    dmesg = _cmd("kernel_log_dmesg", "dmesg", rc=1, stderr="dmesg: read kernel buffer failed: Operation not permitted")
    (f,) = klog.kernel_log({"kernel_log_journal": journal, "kernel_log_dmesg": dmesg}, {})
    assert f.verdict is Verdict.UNKNOWN and f.id == "health.kernel_log"
    assert any("Operation not permitted" in ln for ln in f.evidence)
    assert "dmesg_restrict" in f.remedy
    (g,) = klog.kernel_log({}, {})
    assert g.verdict is Verdict.UNKNOWN


def test_bar_failure_that_a_later_allocator_pass_fixed_is_not_reported():
    base = ("[ 0.2] pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n"
            "[ 0.3] pci 0000:18:00.0: BAR 1: no space for [mem size 0x2000000000 64bit pref]\n"
            "[ 0.3] pci 0000:18:00.0: BAR 1: failed to assign [mem size 0x2000000000 64bit pref]\n")
    fixed = base + "[ 0.4] pci 0000:18:00.0: BAR 1: assigned [mem 0x220000000000-0x221fffffffff 64bit pref]\n"
    assert overall(klog.judge_kernel_log(kl.parse_kernel_log(fixed), {})) is Verdict.PASS
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(base), {})
    assert f.verdict is Verdict.FAIL and f.subject == "GPU (0000:18:00.0)" and "Above 4G" in f.remedy


def test_a_devices_own_memory_bar_left_unassigned_fails_whatever_the_device():
    """Held-out r36 #03 (a Supermicro GPU server's boot log): bridges' windows and BAR 0 of 53:00.0/.1 "no space" /
    "failed to assign", no NVRM line. The device's own memory BAR (0-5) unassigned means its driver cannot use it:
    fail, naming the devices. Synthetic variants: an I/O BAR, a ROM (BAR 6) or a bridge window alone is not judged;
    a later "assigned" clears it."""
    mem = ("[ 23.8] pci 0000:51:00.0: BAR 15: no space for [mem size 0x04000000 64bit pref]\n"
           "[ 23.8] pci 0000:53:00.0: BAR 0: no space for [mem size 0x02000000 64bit pref]\n"
           "[ 23.8] pci 0000:53:00.0: BAR 0: failed to assign [mem 0x8fffc000000-0x8fffdffffff 64bit pref]\n")
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(mem), {})
    assert f.verdict is Verdict.FAIL and "0000:53:00.0" in f.message and "BAR 0" in f.message
    assert "lspci -s 0000:53:00.0" in f.remedy and "pci=realloc" in f.remedy
    assert any("BAR 15" in ln for ln in f.evidence)
    io = ("[ 0.3] pci 0000:00:1c.0: bridge window [io  size 0x1000]: can't assign; no space\n"
          "[ 0.3] pci 0000:02:00.0: BAR 4: no space for [io  size 0x0020]\n"
          "[ 0.3] pci 0000:03:00.0: BAR 6: no space for [mem size 0x00010000 pref]\n"
          "[ 0.3] pci 0000:51:00.0: BAR 15: failed to assign [mem size 0x04000000 64bit pref]\n")
    assert overall(klog.judge_kernel_log(kl.parse_kernel_log(io), {})) is Verdict.PASS
    fixed = mem + "[ 23.9] pci 0000:53:00.0: BAR 0: assigned [mem 0x8fffc000000-0x8fffdffffff 64bit pref]\n"
    assert overall(klog.judge_kernel_log(kl.parse_kernel_log(fixed), {})) is Verdict.PASS


def test_gpu_held_by_vfio_pci_is_not_a_blacklist_case():
    line = "[ 12.1] NVRM: GPU 0000:3b:00.0 is already bound to vfio-pci."
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {})
    assert f.verdict is Verdict.FAIL and "vfio-pci" in f.message and "blacklist" not in f.remedy
    (g,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {"virtualization": True})
    assert g.verdict is Verdict.WARN


def test_acknowledged_xid_no_longer_counts(state_dir):
    text = (DATA / "cases" / "dmesg__xe9680-h100-xid119-gsp-timeout.txt").read_text()
    out = {"kernel_log_journal": ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=text, rc=0)}
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    first = kernel_log(out, b.expectations())
    bad = [f for f in first if f.verdict is Verdict.FAIL]
    assert bad and all(f.key for f in bad), [(f.id, f.key) for f in first]
    for f in bad:
        b.acknowledge(f, "GSP timeouts from the 2025-02 driver, fixed by the driver update")
    again = kernel_log(out, b.expectations())
    assert not [f for f in again if f.verdict is Verdict.FAIL]
    ignored = [f for f in again if f.id == "health.kernel_log_ignored"]
    assert ignored and "acknowledged" in ignored[0].message
    # walk 28 #13: "1 acknowledged by the operator" stayed English on a Chinese screen
    from wizard import i18n
    i18n.set_language("zh_CN")
    try:
        shown = i18n.tr(ignored[0].message)
    finally:
        i18n.set_language("en")
    assert "个由操作人知悉" in shown and "acknowledged" not in shown, shown
    # a new event (a later Xid line) still counts
    newer = text + "\n[Sun Feb 23 17:00:00 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off the bus.\n"
    out["kernel_log_journal"] = ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=newer, rc=0)
    assert [f for f in kernel_log(out, b.expectations()) if f.verdict is Verdict.FAIL]
    b.close()


from tests.strategies import (  # noqa: F401 - the kernel-log area's fuzz inputs, shared
    EVENTS_FUZZ as FUZZ,
    EVENTS_REAL as REAL,
    EVENTS_REAL_TEXT as REAL_TEXT,
    EVENTS_TOKENS as TOKENS,
    events_findings_valid as _valid,
    events_garbage as garbage,
    events_inputs as inputs,
    events_mutated_real as mutated_real,
)


FEW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])




@FUZZ
@given(inputs)
def test_kernel_log_parser_and_judge_never_raise(t):
    log = kl.parse_kernel_log(t)
    for e in log.events:
        assert e.evidence and len(kl.event_key(e)) == 16
    _valid(klog.judge_kernel_log(log, {"boot_only": True}))
    _valid(klog.judge_kernel_log(log, {"acknowledged": {kl.event_key(e) for e in log.events[:2]}}))
    assert 0.0 <= kl.detect_kernel_log(t) <= 1.0


@FEW
@given(inputs, st.sampled_from(["kernel-log", "edac-util", "ras-mc-ctl", "edac-sysfs"]))
def test_explain_with_each_kind_never_crashes(t, kind):
    e = explain_text(t, kind=kind)
    assert e.findings and not any("crashed" in f.message for f in e.findings)


@FEW
@given(inputs, st.sampled_from([0, 1, None]), st.sampled_from(["", "Operation not permitted", "timed out"]),
       st.dictionaries(st.sampled_from(["/sys/devices/system/edac/mc/mc0/ce_count",
                                        "/sys/devices/system/edac/mc/mc1/dimm0/dimm_ue_count",
                                        "/sys/devices/system/edac/mc/mc1/dimm0/dimm_label",
                                        "/sys/devices/system/edac/mc/mc0/csrow0/ch1_ce_count", "/sys/x/y"]),
                       st.one_of(st.none(), st.text(max_size=20)), max_size=5))
def test_checks_never_raise(t, rc, error, files):
    outs = {"kernel_log_journal": ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=t, rc=rc, error=error),
            "kernel_log_dmesg": ProbeOutput("kernel_log_dmesg", "$ dmesg", text=t[::-1], rc=rc),
            "nvml": ProbeOutput("nvml", "NVML", text=t),
            "edac_sysfs": ProbeOutput("edac_sysfs", "/sys/devices/system/edac/mc", files=dict(files), error=error)}
    _valid(klog.kernel_log(outs, {"acknowledged": t[:20]}))
    _valid(edac_rules.edac(outs, {}))


def test_garbage_that_is_no_kernel_log_is_unknown():
    (f,) = klog.judge_kernel_log_text("hello\nworld\n", {})
    assert f.verdict is Verdict.UNKNOWN and "hello" in f.evidence
    (g,) = edac_rules.judge_edac_facts(ed.parse_edac_util("hello\nworld"), {})
    assert g.verdict is Verdict.UNKNOWN and "world" in g.evidence


AER_H = "dmesg-H__returnn-aer-fatal-cmpltto-nvidia-cant-recover.txt"


CMCI_H = "dmesg-H__ovro-lwa-cmci-storm-edac-ue.txt"


DUNKEL = "dmesg-T__dunkel-edac-262-ce-overflow.txt"


RADIASOFT = "journal__radiasoft-edac-sbridge-ce-scrubbing.txt"


TITANV = "dmesg__titanv-rminitadapter-failed-0x25.txt"


@functools.lru_cache(maxsize=None)
def body(name: str) -> str:
    return text(PUBLIC / name)


def ids(findings, verdict: Verdict | None = None) -> list[str]:
    return [f.id for f in findings if verdict is None or f.verdict is verdict]


def by_id(findings, fid: str) -> list[Finding]:
    return [f for f in findings if f.id == fid]


def test_dmesg_human_aer_fatal_fails_and_names_the_gpu():
    log = kl.parse_kernel_log(body(AER_H))
    assert log.formats == {"dmesg-reltime"}
    assert all(r.msg.startswith(("nvidia ", "snd_hda_intel ", "pcieport ")) for r in log.records)
    e = explain_text(body(AER_H))
    aer = by_id(e.findings, "health.aer")
    gpu = next(f for f in aer if f.subject == "GPU (0000:03:00.0)")
    assert gpu.verdict is Verdict.FAIL and "could not recover" in gpu.message
    assert "[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)" in gpu.evidence
    port = next(f for f in aer if "0000:00:03.0" in f.subject)
    assert port.verdict is Verdict.FAIL and "CmpltTO" in port.message and "Uncorrected (Fatal)" in " ".join(
        port.evidence)


def test_cmci_storm_and_edac_machine_check_ue_fail():
    e = explain_text(body(CMCI_H))
    (mem,) = by_id(e.findings, "health.host_memory")
    assert mem.verdict is Verdict.FAIL and mem.subject == "memory controller MC3"
    assert "uncorrectable (UE)" in mem.message and "fc00010001010092" in mem.message and "UC set" in mem.message
    assert "[  +0.000001] EDAC skx MC3: CPU 10: Machine Check Event: 0 Bank 8: fc00010001010092" in mem.evidence
    assert "DIMM" in mem.remedy and "Intel SDM" in mem.source
    (storm,) = by_id(e.findings, "health.mce")
    assert storm.verdict is Verdict.WARN and "CMCI" in storm.message
    assert "[May19 19:57] CMCI storm detected: switching to poll mode" in storm.evidence


@pytest.mark.parametrize("name,count", [(DUNKEL, "262"), (RADIASOFT, "1")])
def test_machine_check_detail_joins_its_edac_ce_line(name, count):
    e = explain_text(body(name))
    assert ids(e.findings) == ["health.host_memory"], [(f.id, f.message) for f in e.findings]
    (f,) = e.findings
    assert f.verdict is Verdict.WARN and f"{count} corrected (CE)" in f.message
    assert any("Machine Check Event" in ln for ln in f.evidence)


def test_plain_kernel_machine_check_line_is_decoded_too():
    # synthetic: the kernel's own __print_mce line for the ovro status value (real value, kernel format)
    log = kl.parse_kernel_log("[11219.196673] mce: [Hardware Error]: CPU 10: Machine Check: 0 Bank 8: "
                              "fc00010001010092\n")
    (ev,) = [e for e in log.events if e.kind == "mce"]
    assert ev.fields["severity"] == "uncorrected" and ev.fields["bank"] == 8 and ev.fields["mc"] is None
    f = by_id(klog.judge_kernel_log(log, {}), "health.mce")[0]
    assert f.verdict is Verdict.FAIL and "bank 8" in f.message


def rebar_only_at_default(t: str) -> bool:
    """Every mention of Resizable BAR says to leave it at the vendor default (knowledge.md section 3)."""
    return all("at the vendor default" in m for m in re.findall(r"Resizable BAR[^.;]{0,30}", t, re.I))


def test_rminitadapter_remedy_puts_the_hardware_path_first_and_never_enables_rebar():
    (f,) = explain_text(body(TITANV)).findings
    assert f.id == "health.gpu_init" and f.verdict is Verdict.FAIL and f.subject == "GPU (0000:81:00.0)"
    r = f.remedy
    assert r.index("reseat") < r.index("Above 4G") and "cold power-cycle" in r and "AER" in r
    assert "new enough for this GPU" in r and "vendor default" in r
    assert rebar_only_at_default(r)
    assert "machine-shop-maintenance#76" in f.source


def test_rminitadapter_case_keeps_its_mentions_without_rebar_advice():
    (f,) = explain_text(text(CASES / "syslog__rtx5090-rminitadapter-failed-rebar-off.txt")).findings
    assert f.verdict is Verdict.FAIL and "RmInitAdapter" in f.message and "4G" in f.remedy
    assert rebar_only_at_default(f.remedy)


def test_rminitadapter_on_a_gpu_that_worked_before_is_the_hardware_path_only():
    # synthetic: the GPU's own init line ("NVRM: GPU at PCI:...: GPU-<uuid>", format of the chia log) before
    # the real Titan V failure lines
    lines = ["[Sun Apr 14 10:00:00 2024] NVRM: GPU at PCI:0000:81:00: GPU-760d0170-b7c5-6817-9414-6cc7112645de"]
    e = explain_text("\n".join(lines) + "\n" + body(TITANV))
    (f,) = by_id(e.findings, "health.gpu_init")
    assert f.remedy == klog.RMINIT_REMEDY_WORKED and "Above 4G" not in f.remedy


def test_no_bringup_text_repeats_resizable_bar_advice():
    """knowledge.md section 9 item 4 and section 3: never 'disable/enable ReBAR', only vendor default."""
    texts = [klog.BAR_REMEDY, klog.RMINIT_REMEDY, klog.RMINIT_REMEDY_WORKED]
    doc = parse_smi_table("No devices were found\n")
    texts += [f.remedy for f in smi_checks.judge_doc(doc, {})]
    for t in texts:
        assert rebar_only_at_default(t), t


def test_a_kernel_line_about_a_lost_gpu_stays_a_kernel_log():
    # synthetic one-liner: an NVRM line that says "GPU is lost" is the kernel's, not nvidia-smi's
    assert explain_text("NVRM: GPU 0000:02:00.0: GPU is lost\n").kind == "kernel-log"


# ---- rates of corrected AER errors, not only counts

def test_aer_corrected_burst_warns_with_threshold_and_source():
    """10 corrected messages (9 of them "Multiple": 19 errors at least) on root port 00:1c.5 within 35 s (real
    forum dmesg): a pace above 8 per minute (DCGM's PCIe replay-rate limit) is a marginal link -> warn, remedy
    reseat/riser, watch for Xid 79."""
    e = explain_text(text(PUBLIC / "dmesg__forum-2019-rootport-1c5-corrected-rxerr-burst.txt"))
    (f,) = [x for x in e.findings if x.id == "health.aer"]
    assert f.verdict is Verdict.WARN and "burst of 19 corrected errors within 35.1 s" in f.message
    assert "a pace above 8 per minute" in f.message and "Xid 79" in f.remedy and "riser" in f.remedy
    assert "DCGM_FR_PCI_REPLAY_RATE" in f.source and "pcieaer-howto" in f.source
    assert f.evidence[0].startswith("[    9.388382]")


@pytest.mark.parametrize("name", ["dmesg-T__linux-pci-dunkel-rootport-06-rxerr-sparse-hourly.txt"])
def test_sparse_corrected_aer_is_information(name):
    e = explain_text(text(PUBLIC / name))
    (f,) = [x for x in e.findings if x.id == "health.aer"]
    assert f.verdict is Verdict.PASS and "no burst" in f.message and not f.remedy


def test_aer_burst_window():
    from wizard.rules.kernel_log import aer_burst

    assert aer_burst([(0.0, "a")]) is None  # one error is information
    assert aer_burst([(0.0, "a"), (0.5, "b")]) is not None  # two within a second: 60 per minute
    assert aer_burst([(0.0, "a"), (30.0, "b")]) is None  # two half a minute apart: 2 per minute
    n, span, ev = aer_burst([(float(i), f"l{i}") for i in range(9)])
    assert (n, span, ev[0], ev[-1]) == (9, 8.0, "l0", "l8")
    assert aer_burst([(0.0, "a"), (5.0, "b"), (10.0, "c")]) is not None  # one every 5 s: 12 per minute
    assert aer_burst([(0.0, "a"), (10.0, "b"), (20.0, "c")]) is None  # one every 10 s: 6 per minute
    assert aer_burst([(i * 10.0, "x") for i in range(20)]) is None  # one every 10 s: 6 per minute
    assert aer_burst([(0.0, "Multiple Corrected error received"), (5.0, "Corrected error received")])[0] == 3
    assert aer_burst([(i * 7.0, "x") for i in range(20)])[0] == 9  # one every 7 s: 9 within 56 s


def test_aer_burst_from_error_reports_without_received_lines():
    # synthetic: twelve corrected Bad DLLP reports (no "error received" line) on a GPU, one per second
    lines = []
    for i in range(12):
        t = f"[ {100 + i:4d}.000000]"
        lines += [f"{t} nvidia 0000:17:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Receiver ID)",
                  f"{t} nvidia 0000:17:00.0:   device [10de:2330] error status/mask=00000080/00002000",
                  f"{t} nvidia 0000:17:00.0:    [ 7] BadDLLP"]
    e = explain_text("\n".join(lines) + "\n")
    (f,) = [x for x in e.findings if x.id == "health.aer"]
    assert f.verdict is Verdict.WARN and "burst of 12 corrected errors within 11.0 s" in f.message


def test_a_localised_month_is_read_for_the_rate_and_no_timestamps_says_it_cannot_be_told():
    """journalctl in a Russian locale prints "фев 12 00:48:02": two corrected errors in one second are a burst; the
    same lines with their stamps cut (synthetic: the real lines' messages only) cannot be paced."""
    body = text(PUBLIC / "kernel-log__gsconnect-1052-localised-month-corrected-aer-partial.txt")
    (f,) = [x for x in explain_text(body).findings if x.id == "health.aer"]
    assert f.verdict is Verdict.WARN and "burst of 2 corrected errors" in f.message
    bare = "\n".join(ln.split(" kernel: ", 1)[1] for ln in body.splitlines() if " kernel: " in ln) + "\n"
    (f,) = [x for x in explain_text(bare).findings if x.id == "health.aer"]
    assert f.verdict is Verdict.PASS and "no timestamps" in f.message


def test_rsyslog_escaped_line_feeds_are_lines_again_and_an_api_mismatch_fails():
    """rsyslog writes NVRM's four-line API-mismatch message as one line with #012 for each line feed (real:
    stackhpc/ansible-slurm-appliance#287)."""
    e = explain_text(text(PUBLIC / "kernel-log__syslog-012-escaped-nvrm-api-mismatch.txt"))
    (f,) = [x for x in e.findings if x.id == "health.driver_conflict"]
    assert f.verdict is Verdict.FAIL and "530.30.02" in f.message and "535.54.03" in f.message
    log = kl.parse_kernel_log(text(PUBLIC / "kernel-log__syslog-012-escaped-nvrm-api-mismatch.txt"))
    assert any(r.msg.startswith("NVRM: this kernel module has the version 530.30.02") for r in log.records)


def test_an_oops_in_the_nvidia_module_fails_and_a_kernel_warning_does_not():
    """A BUG/Oops taints the kernel D until reboot (real: tensorflow/tensorflow#26653, an oops inside nvidia.ko while
    nvidia-smi ran); a WARNING: report the kernel survives stays a warning."""
    e = explain_text(text(PUBLIC / "kernel-log__oops-in-nvidia-module-nvidia-smi.txt"))
    (f,) = [x for x in e.findings if x.id == "health.kernel_log"]
    assert f.verdict is Verdict.FAIL and "nvidia module" in f.message and "nvidia-smi" in f.message
    assert "tainted 'D'" in f.message
    warn = explain_text("[  5.0] WARNING: CPU: 3 PID: 1 at drivers/base/core.c:100 device_add+0x1/0x2\n")
    assert [x.verdict for x in warn.findings if x.id == "health.kernel_log"] == [Verdict.WARN]


def test_a_link_that_drops_again_and_again_is_judged_and_one_drop_is_not():
    """An InfiniBand link that flaps fails (Meta GCM's link-flaps check: critical; Azure HPC NHC: no IB flap in 6
    hours), an Ethernet one warns (GCM: a warning); one drop at boot is no flap."""
    body = text(PUBLIC / "kernel-log__syslog-ib6-lost-carrier-flaps.txt")
    log = kl.parse_kernel_log(body)
    assert sum(1 for e in log.events if e.kind == "link" and not e.fields["up"]) == 6
    r = explain_text(body)
    assert r.kind == "kernel-log" and r.verdict is Verdict.FAIL
    f = [x for x in r.findings if x.id == "health.nic_link"][0]
    assert "ib6 lost its link 6 times" in f.message and f.key  # acknowledgeable like other events
    eth = ("[ 4435.1] mlx5_core 0000:53:00.0 enp83s0f0np0: Link down\n[ 4436.2] mlx5_core 0000:53:00.0 enp83s0f0np0: Link up\n"
           "[ 4440.1] mlx5_core 0000:53:00.0 enp83s0f0np0: Link down\n[ 4441.2] mlx5_core 0000:53:00.0 enp83s0f0np0: Link up\n")
    assert [x.verdict for x in explain_text(eth).findings if x.id == "health.nic_link"] == [Verdict.WARN]
    # an interface coming up at boot prints one link-down first: not a flap
    once = ("[    8.101] mlx5_core 0000:17:00.0 ens1f0np0: Link down\n"
            "[    9.402] mlx5_core 0000:17:00.0 ens1f0np0: Link up\n")
    assert not [x for x in explain_text(once).findings if x.id == "health.nic_link"]


def test_nv_err_reset_required_fails_as_a_gpu_that_needs_a_reset():
    r = explain_text(text(PUBLIC / "kernel-log__gsp-reset-required.txt"))
    f = [x for x in r.findings if x.id == "health.gsp"]
    assert r.verdict is Verdict.FAIL and len(f) == 1 and "NV_ERR_RESET_REQUIRED" in f[0].message
    assert "only a reset clears" in f[0].message


def test_two_corrected_aer_errors_within_milliseconds_are_a_burst():
    r = explain_text(text(PUBLIC / "kernel-log__aer-corrected-badtlp.txt"))
    f = [x for x in r.findings if x.id == "health.aer"]
    assert r.verdict is Verdict.WARN and f and "burst of 2 corrected errors" in f[0].message


def test_a_driver_release_that_does_not_support_the_gpu_fails_naming_release_and_pci_id():
    r = explain_text(text(PUBLIC / "kernel-log__nvrm-gpu-not-supported-h100.txt"))
    f = [x for x in r.findings if x.id == "health.gpu_init"]
    assert r.verdict is Verdict.FAIL and "550.90.07 does not support this GPU (PCI ID 10de:2330)" in f[0].message
    assert "Appendix A" in f[0].remedy


def test_a_process_crashing_inside_a_gpu_library_warns_and_kmsg_records_are_read():
    r = explain_text(text(PUBLIC / "kernel-log__libnccl-segfault.txt"))
    assert r.verdict is Verdict.WARN and "crashes inside libnccl.so.2" in r.findings[0].message
    k = explain_text(text(PUBLIC / "kernel-log__kmsg-raw-nvswitch-open-benign.txt"))
    assert k.kind == "kernel-log" and k.verdict is Verdict.PASS and "(kmsg)" in k.findings[0].message


def test_nvswitch_sxid_lines_warn_when_non_fatal_and_fail_when_fatal():
    """Real dmesg of an H100 TDX guest (NVIDIA/nvtrust): NVSwitch SXid 22013 'Non-fatal, Link 44 Minion Link DLREQ
    interrupt' warns (health.sxid) where it passed before ("no Xid ..."); the same line marked Fatal (synthetic: the
    one word changed) fails."""
    body = text(PUBLIC / "kernel-log__nvtrust-h100-tdx-sxid-22013-nonfatal-minion-dlreq.txt")
    (f,) = [x for x in explain_text(body).findings if x.id == "health.sxid"]
    assert f.verdict is Verdict.WARN and "SXid 22013" in f.message and "nvidia-nvswitch3" in f.message
    fatal = body.replace("22013, Non-fatal, Link 44", "22013, Fatal, Link 44")
    (f,) = [x for x in explain_text(fatal).findings if x.id == "health.sxid"]
    assert f.verdict is Verdict.FAIL and "fatal NVSwitch error" in f.message


def test_a_crash_asked_for_with_sysrq_is_not_a_fault_but_is_said():
    """The real pstore record of a kernel crashed with SysRq 'c' (held-out round 11; leptonai/gpud test data): the
    oops in sysrq_handle_crash follows 'SysRq : Trigger a crash', so it warns (confirm it was planned) instead of
    failing as a kernel fault."""
    r = explain_text(text(PUBLIC / "pstore__dmesg-erst-sysrq-triggered-crash-oops.txt"))
    (f,) = r.findings
    assert (f.id, f.verdict) == ("health.kernel_log", Verdict.WARN)
    assert "SysRq 'c'" in f.message and "from bash" in f.message and "sysrq.html" in f.source
    assert f.evidence[0].endswith("sysrq: SysRq : Trigger a crash")


def test_a_task_hung_inside_the_nvidia_driver_fails_and_names_the_module():
    """Real hung-task reports (held-out round 12): 'INFO: task nvc:[driver]:5403 blocked for more than 120 seconds'
    (NVIDIA/k8s-device-plugin#77) and a 'task:python3.11 state:D' stack in uvm_ioctl (rwth-i6/returnn#1480): the
    stack runs through [nvidia_uvm], so the driver is stuck: fail, one finding per task, instead of an unrecognised
    message. A synthetic_ stack outside NVIDIA modules warns."""
    for name, comm in (("dmesg__hung-task-nvc-driver-uvm-retain.txt", "nvc:[driver]"),
                       ("dmesg__hung-task-python-nvidia-uvm-ioctl.txt", "python3.11")):
        r = explain_text(text(PUBLIC / name))
        (f,) = r.findings
        assert (f.verdict, f.id) == (Verdict.FAIL, "health.kernel_log"), name
        assert f"process {comm} hung" in f.message and "nvidia_uvm" in f.message
        assert "nvidia-bug-report.sh" in f.remedy and any("nvidia_uvm" in ln for ln in f.evidence)
    nfs = ("[  100.1] INFO: task cp:812 blocked for more than 120 seconds.\n"
           "[  100.2] Call Trace:\n[  100.3]  nfs_wait_bit_killable+0x1e/0x90 [nfs]\n")  # synthetic_
    (w,) = explain_text(nfs).findings
    assert w.verdict is Verdict.WARN and "not in a GPU driver module" in w.message


def test_storage_io_errors_fail_naming_each_device():
    """The real log of an NVMe write failing under an md/XFS volume (held-out round 13): the block layer's 'I/O
    error, dev nvme2n1 ... op 0x1:(WRITE)' and XFS's 'log I/O error' are storage failures: health.storage_io fails,
    counting each device's errors (it passed as a clean log before)."""
    r = explain_text(text(PUBLIC / "dmesg__nvme2n1-write-io-errors-xfs-md127-log-error.txt"))
    (f,) = [f for f in r.findings if f.id == "health.storage_io"]
    assert r.verdict is Verdict.FAIL and f.verdict is Verdict.FAIL
    assert "nvme2n1 (write error x3)" in f.message and "md127 (XFS error x2)" in f.message
    assert "nvme smart-log" in f.remedy and f.evidence[0].endswith("prio class 0")


def test_the_host_running_out_of_memory_or_file_handles_warns():
    """The real 'VFS: file-max limit 1000000 reached' lines (held-out round 13) and a synthetic_ OOM-killer line: the
    host ran out of something a job needs: health.host_limits warns with how often."""
    r = explain_text(text(PUBLIC / "dmesg__vfs-file-max-limit-reached.txt"))
    (f,) = [f for f in r.findings if f.id == "health.host_limits"]
    assert f.verdict is Verdict.WARN and "fs.file-max 1000000" in f.message and "2 times" in f.message
    oom = explain_text("[12.3] Out of memory: Killed process 4242 (python3) total-vm:123kB, anon-rss:99kB\n"
                       "[13.0] usb 1-1: new device\n")
    (o,) = [f for f in oom.findings if f.id == "health.host_limits"]
    assert "OOM killer killed python3 (pid 4242)" in o.message
    assert "the host ran out of memory" in o.message
    # round 19: a memory cgroup's OOM kill, one line without a timestamp, is a kernel log and says the job's limit
    cg = explain_text(text(PUBLIC / "dmesg__cgroup-oom-killed-trainer.txt"))
    (c,) = [f for f in cg.findings if f.id == "health.host_limits"]
    assert cg.kind == "kernel-log" and "killed onmt_train (pid 629)" in c.message and "memory limit" in c.message
    assert "host ran out" not in c.message
    # round 31: earlyoom, the userspace OOM killer, killing python twice in a journal: the same host limit, said as its
    ea = explain_text(text(PUBLIC / "journal-earlyoom__comfyui-workstation-host-ram-exhausted.txt"))
    (e,) = [f for f in ea.findings if f.id == "health.host_limits"]
    assert ea.kind == "kernel-log" and e.verdict is Verdict.WARN and "earlyoom" in e.message
    assert "python3.13 (pid 322603)" in e.message and "2 times" in e.message


def test_a_link_that_went_down_and_did_not_come_back_warns_and_old_hung_task_reports_are_read():
    """Real syslog lines 'eth0: Lost carrier' / 'ib1: Lost carrier' with nothing after them, and a 3.16-era hung-task
    report without timestamps (held-out round 13; node-problem-detector test data): recognised and judged."""
    link = explain_text(text(PUBLIC / "syslog__eth0-ib1-lost-carrier.txt"))
    assert link.kind == "kernel-log" and {f.subject for f in link.findings if f.verdict is Verdict.WARN} == {"eth0", "ib1"}
    hung = explain_text(text(PUBLIC / "dmesg__hung-task-docker-blocked-120s.txt"))
    assert hung.kind == "kernel-log" and hung.findings[0].verdict is Verdict.WARN
    assert "process docker hung" in hung.findings[0].message


def test_a_crash_test_modules_panic_is_a_requested_crash():
    r = explain_text(text(PUBLIC / "pstore__previous-boot-kernel-panic-crash-test-module.txt"))
    (f,) = r.findings
    assert f.verdict is Verdict.WARN and "crashed on request: a crash test" in f.message


def test_an_aer_received_message_without_its_report_is_judged_by_its_own_severity():
    """Walk 22: "AER: Corrected error received: <dev>" alone (the kernel rate-limits the reports after it) was said to
    be "no ... AER ... errors"; beside Xid lines it was dropped. It is a health.aer finding now, by the message's own
    severity: corrected information, uncorrected non-fatal a warn, fatal a fail; a port with its reports is said once."""
    from wizard.explain import explain_text

    line = "[ 3100.442211] pcieport 0000:00:01.0: AER: {sev} error received: 0000:2a:00.0\n"
    for sev, verdict in (("Corrected", Verdict.PASS), ("Uncorrected (Non-Fatal)", Verdict.WARN),
                         ("Uncorrected (Fatal)", Verdict.FAIL)):
        r = explain_text(line.format(sev=sev))
        (f,) = [x for x in r.findings if x.id == "health.aer"]
        assert f.verdict is verdict and "reported by the port above it" in f.message and "0000:2a:00.0" in f.message
        assert not any("no Xid, AER" in x.message for x in r.findings)
    with_xid = ("[ 3000.1] NVRM: Xid (PCI:0000:2a:00): 79, pid=1, GPU has fallen off the bus.\n"
                + line.format(sev="Corrected"))
    assert any(x.id == "health.aer" for x in explain_text(with_xid).findings)


def test_the_unrecognised_lines_remedy_says_where_a_key_can_be_acknowledged():
    """Walk 41 #1 (dead end): `bringup explain` of a pasted dmesg said "acknowledge it by its key", and `bringup ack KEY`
    was refused (a paste is not a build). The remedy says the key is acknowledged on that machine, after a check there
    found it (x on the step, or `bringup ack`)."""
    from wizard.explain import explain_text

    e = explain_text("[  1.0] nvidia 0000:01:00.0: something odd failed badly\n"
                     "[  2.0] WARNING: CPU: 3 PID: 1 at drivers/foo.c:10 bar+0x1/0x2\n")
    f = next(x for x in e.findings if x.id == "health.kernel_log" and "no rule recognises" in x.message)
    assert "once a check on that machine has found it; a pasted log is not a build" in f.remedy
    assert "bringup ack KEY --reason WHY" in f.remedy


def _found(name: str, fid: str) -> Finding:
    r = explain_text(text(PUBLIC / name))
    return next(f for f in r.findings if f.id == fid)


def test_iommu_page_faults_on_a_gpu_fail_naming_the_device():
    """Held-out round 116: a storm of AMD-Vi IO_PAGE_FAULTs from the GPU at 07:00.0 (its DMA blocked by the IOMMU)
    passed as a clean log. On an NVIDIA GPU they fail health.iommu_fault; on another device (an Intel DMAR fault of a
    NIC: synthetic) they warn."""
    f = _found("journalctl-k__amd-iommu-host-nvidia-gpu-amd-vi-io-page-fault-storm-during-p2p-sample-partial.txt",
               "health.iommu_fault")
    assert f.verdict is Verdict.FAIL and "0000:07:00.0" in f.message and "9 IOMMU page fault" in f.message
    assert "iommu=pt" in f.remedy
    log = kl.parse_kernel_log("[  10.1] DMAR: [DMA Read NO_PASID] Request device [3b:00.0] fault addr 0x7f000000 "
                              "[fault reason 0x06] PTE Read access is not set\n")
    got = klog.judge_kernel_log(log, {})
    assert [(g.id, g.verdict) for g in got if g.id == "health.iommu_fault"] == [("health.iommu_fault", Verdict.WARN)]


def test_a_gpudirect_module_missing_its_rdma_symbols_fails_the_driver_conflict():
    """Held-out round 116: nv_peer_mem refused by the loader ("Unknown symbol ib_register_peer_memory_client"): built
    against another RDMA stack, so no GPUDirect RDMA; the log had passed."""
    f = _found("dmesg-T__rhel78-nv-peer-mem-unknown-symbol-ib-register-peer-memory-client-ofed-mismatch.txt",
               "health.driver_conflict")
    assert f.verdict is Verdict.FAIL and "nv_peer_mem" in f.message and "GPUDirect RDMA" in f.message
    assert "ib_register_peer_memory_client" in f.message and "OFED" in f.remedy


def test_known_harmless_lines_and_an_installers_own_lines_are_not_unrecognised_errors():
    """Held-out round 116: i2c-nvidia-gpu's timeout on the card's USB-C function (.3) is harmless for compute; round
    119: nvidia-installer's own "WARNING: ..." after the kernel messages it quoted was joined to the last kernel line
    as its continuation and reported as an unrecognised driver error."""
    for name in ("dmesg-grep-nvidia__rtx2060-egpu-525.60.11-clean-load-uvm-drm-i2c-timeout-on-usb-c-function.txt",
                 "nvidia-installer__hgx-8gpu-4-nvswitch-ubuntu-5.15-550.163.01-runfile-install-complete-"
                 "sanity-check-passed-partial.txt"):
        r = explain_text(text(PUBLIC / name))
        assert overall(r.findings) is Verdict.PASS, [(f.id, f.verdict, f.message) for f in r.findings]


def test_storage_io_reads_the_block_layers_status_words_and_leaves_a_rejected_discard_alone():
    """Older kernels print a failed request by its status, 'print_req_error: critical medium error, dev nvme0n1'
    (real, held-out round 131): health.storage_io FAIL naming the device and the status; a DISCARD (TRIM) the target
    rejected ('critical target error ... op 0x3:(DISCARD)', real, Linuxfabrik) loses no data and is not one."""
    r = explain_text(text(PUBLIC / "dmesg__nvme-critical-medium-error.txt"), "dmesg")
    (f,) = [f for f in r.findings if f.id == "health.storage_io"]
    assert f.verdict is Verdict.FAIL and "nvme0n1 (critical medium error x4)" in f.message
    d = explain_text(text(PUBLIC / "dmesg__sda-discard-critical-target-error.txt"), "dmesg")
    assert not [f for f in d.findings if f.id == "health.storage_io"]


def test_a_nic_that_failed_its_probe_or_firmware_health_is_out_of_service():
    """mlx5_core's "probe of 0000:03:00.0 failed with error -22" and a ConnectX-6 Dx's "device's health compromised" /
    "Health issue observed, firmware internal error" (both real, held-out round 133): health.nic_link FAIL naming each
    adapter, functions with the same error grouped; a DRM "Cannot find any crtc or sizes" on a headless GPU is benign."""
    r = explain_text(text(PUBLIC / "dmesg-grep-mlx5__connectx4lx-handle-hca-cap-failed-probe-failed-error-22.txt"), "k")
    (f,) = [f for f in r.findings if f.id == "health.nic_link"]
    assert f.verdict is Verdict.FAIL and "0000:03:00.0: driver probe failed (error -22)" in f.message
    r = explain_text(text(PUBLIC / "dmesg__connectx6dx-fw-22.44.1036-health-compromised-firmware-internal-error-all-"
                                   "functions.txt"), "k")
    (f,) = [f for f in r.findings if f.id == "health.nic_link"]
    assert "0000:0d:00.0, 0000:0d:00.1: firmware health error (firmware internal error)" in f.message
    assert "0000:0d:00.2" in f.message and "(health compromised)" in f.message
    clean = explain_text(text(PUBLIC / "journalctl-k-b-grep-nvidia__4x-rtx-pro-6000-blackwell-610.57.04-open-clean-"
                                       "reboot-no-xid-partial.txt"), "k")
    assert clean.verdict is Verdict.PASS


def test_an_ext4_checksum_error_and_its_error_count_are_storage_failures():
    """'EXT4-fs error (device sda1): ... bad block bitmap checksum' and 'error count since last fsck: 1758' (real,
    held-out round 142): health.storage_io FAIL on sda1."""
    r = explain_text(text(PUBLIC / "dmesg__ext4-sda1-bad-block-bitmap-checksum-1758-errors-partial.txt"), "k")
    (f,) = [f for f in r.findings if f.id == "health.storage_io"]
    assert f.verdict is Verdict.FAIL and "sda1" in f.message


def test_stack_frames_through_a_gpu_driver_without_their_header_warn():
    """Held-out round 147: a CentOS 7 call trace through nvidia_ioctl/rm_ioctl cut from the line that starts it."""
    r = explain_text(text(PUBLIC / "journalctl__centos7-nvidia-rm-ioctl-stuck-call-trace-gpu-hung-partial.txt"))
    f = next(f for f in r.findings if f.id == "health.kernel_log")
    assert f.verdict is Verdict.WARN and "stack trace runs through the GPU driver (nvidia" in f.message


def test_hung_task_inside_amdgpu_is_the_gpu_driver_stuck():
    r = explain_text(text(PUBLIC / "dmesg__rocm-amdgpu-kworker-hung-task-dma-fence-wait-partial.txt"))
    f = next(f for f in r.findings if "hung" in f.message)
    assert f.verdict is Verdict.FAIL and "inside the GPU driver (amdgpu)" in f.message


def test_amdgpu_uncorrectable_ras_error_and_failed_smu_fail():
    r = explain_text(text(PUBLIC / "dmesg-t__mi50-athub-uncorrectable-ras-error-gpu-reset-smu-fail-partial.txt"))
    f = next(f for f in r.findings if "amdgpu driver reports a GPU fault" in f.message)
    assert f.verdict is Verdict.FAIL and "0000:e3:00.0" in f.message and "ERREVENT_ATHUB_INTERRUPT" in f.message


def test_dram_ecc_disabled_on_every_memory_node_warns():
    r = explain_text(text(PUBLIC / "dmesg-grep-edac__128cpu-epyc-zen1-8-nodes-dram-ecc-disabled-all-nodes.txt"))
    f = next(f for f in r.findings if f.id == "health.host_memory")
    assert f.verdict is Verdict.WARN and "8 memory node(s)" in f.message


def test_a_port_named_in_this_boot_that_never_came_up_has_not_lost_its_link():
    """Held-out round 179 (real HGX H100 boot): three unused Ethernet ports, renamed by udev in this log, print one
    'Link down' when opened without a carrier: no health.nic_link warning. The same port shown up earlier in the log
    (an edit) and then down has lost its link: warn."""
    from wizard.explain import explain_text

    t = text(PUBLIC / "dmesg__hgx-h100-boot-nvswitch-cx7-healthy.txt")
    r = explain_text(t, "x")
    assert r.verdict is Verdict.PASS and not [f for f in r.findings if f.id == "health.nic_link"]
    assert "4 NVSwitch(es) probed" in r.findings[0].message
    up = "kern  :info  : 2025-01-17T15:37:00,000000+00:00 mlx5_core 0000:9d:00.1 enp157s0f1np1: Link up\n"
    i = t.index("kern  :info  : 2025-01-17T15:37:28,650514")
    lost = [f for f in explain_text(t[:i] + up + t[i:], "y").findings if f.id == "health.nic_link"]
    assert [f.verdict for f in lost] == [Verdict.WARN] and "enp157s0f1np1 lost its link" in lost[0].message


def test_a_network_filesystem_client_that_lost_its_servers_fails_and_warns_once_it_reconnects():
    """Held-out round 230 (real): a DGX-1's Lustre client with LNet transmits timed out and an MDT ping failing with
    rc = -107 (ENOTCONN): I/O there hangs. The reconnection line added after it (synthetic_, Lustre's own wording)
    turns it into a warning."""
    body = text(PUBLIC / "kernel-log__dgx1-lustre-client-mgc-mdt-o2ib-timeouts.txt")
    fs = [f for f in explain_text(body).findings if f.id == "health.storage_io"]
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "rc = -107" in fs[0].message and "lctl ping" in fs[0].remedy
    back = body + ("[Mon Oct 16 10:09:00 2017] Lustre: jmain01-MDT0000-mdc-ffff88203810d800: Connection restored to "
                   "172.31.126.88@o2ib (at 172.31.126.88@o2ib)\n")
    fs = [f for f in explain_text(back).findings if f.id == "health.storage_io"]
    assert [f.verdict for f in fs] == [Verdict.WARN] and "came back" in fs[0].message


def test_a_limited_by_line_cut_before_its_port_and_a_tools_status_lines_around_quoted_kernel_lines():
    """Held-out rounds 250 and 253 (real): talosctl dmesg grepped to a GPU's "32.000 Gb/s available PCIe bandwidth,
    limited by 2.5 GT/s PCIe x16 link" (no "at <port>") warns health.pcie_limited; a validation kit's "[OK] gpu-burn"
    lines after the NVRM banner it quoted are its own, not a continuation of the banner: the log passes."""
    from wizard.explain import explain_text

    cut = explain_text(text(PUBLIC / "dmesg__talos-gpu1-rtx5070ti-pcie-link-limited-2.5gts-x16.txt"))
    (f,) = [f for f in cut.findings if f.id == "health.pcie_limited"]
    assert f.verdict is Verdict.WARN and "limited by 2.5 GT/s x16 on its path" in f.message
    kit = explain_text(text(PUBLIC / "unrecognised__gpu-validation-kit-summary-false-fail.txt"))
    assert kit.kind == "kernel-log" and kit.verdict is Verdict.PASS


def test_network_filesystem_mounts_and_flaps_gsp_history_nic_fatal_and_no_gpu_found():
    """Held-out rounds 257-263 (real): a Lustre client losing two OSTs six times, each time reconnecting, fails (the
    connection does not hold); lustre_fill_super's "Unable to mount" fails; a GSP RPC history row still pending is a
    GSP timeout; mlx5's "Fatal error 1 detected" after a surprise link down fails health.nic_link; "NVRM: No NVIDIA GPU
    found" fails health.gpu_init; a laptop firmware's _acpiDsmCapsInit note is known harmless."""
    from wizard.explain import explain_text

    def one(name: str, fid: str) -> Finding:
        (f,) = [f for f in explain_text(text(PUBLIC / name)).findings if f.id == fid]
        return f

    flap = one("dmesg__cscs-clariden-lustre-lnet-timeouts.txt", "health.storage_io")
    assert flap.verdict is Verdict.FAIL and "6 times, each time coming back" in flap.message
    mount = one("dmesg__al2023-lustre-client-mgs-config-log-failed-rc-5.txt", "health.storage_io")
    assert mount.verdict is Verdict.FAIL and "llite: Unable to mount <unknown> (rc = -5)" in mount.message
    gsp = one("kernel-log__a100-sxm4-hgx-gsp-rpc-history-dump-pending-control.txt", "health.gsp")
    assert gsp.verdict is Verdict.FAIL
    nic = one("kernel-log__mlx5-surprise-link-down-fatal-hung-task.txt", "health.nic_link")
    assert nic.verdict is Verdict.FAIL and "Fatal error 1 detected" in nic.message
    nogpu = one("kernel-log__lenovo-82xt-nvidia-loaded-no-nvidia-gpu-found.txt", "health.gpu_init")
    assert nogpu.verdict is Verdict.FAIL
    assert explain_text(text(PUBLIC / "dmesg__msi-laptop-rtx4050-open-590-nvidia-load-acpi-dsm-notes.txt")).verdict \
        is Verdict.PASS


def test_an_optional_gpu_module_that_will_not_load_warns_naming_what_is_lost():
    """Held-out round 261 (real): nvidia_fs refused for GPL-only nvidia_p2p_* symbols of the proprietary module: no
    GPUDirect Storage, the GPUs work: warn; the peer-memory module (GPUDirect RDMA) still fails (test above)."""
    f = _found("dmesg__nvidia-fs-gpl-only-symbols-unknown-p2p.txt", "health.driver_conflict")
    assert f.verdict is Verdict.WARN and "no GPUDirect Storage" in f.message


def test_a_clean_log_names_the_driver_its_banner_loaded_open_module_and_modeset_banners_too():
    """Held-out rounds 250 and 259 (real): the open module's "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64
    590.48.01" and, without an NVRM banner, nvidia-modeset's "Loading NVIDIA Kernel Mode Setting Driver for UNIX
    platforms 535.104.12" are the driver a clean log's pass says was loaded."""
    from wizard.explain import explain_text

    for name, version in (("dmesg__msi-laptop-rtx4050-open-590-nvidia-load-acpi-dsm-notes.txt", "590.48.01"),
                          ("dmesg__eks-gpu-node-new-ami-535.104.12-unsigned-module-clean-load.txt", "535.104.12")):
        r = explain_text(text(PUBLIC / name))
        assert r.verdict is Verdict.PASS and f"NVIDIA driver {version} loaded" in r.findings[0].message, name


def _kfind(name: str) -> list[Finding]:
    return explain_text(text(PUBLIC / name)).findings


def test_audit_records_alone_say_nothing_about_the_gpus():
    """Held-out round 274 (real): seven AppArmor profile_load records (one names nvidia_modprobe) passed as 'no
    errors in 7 kernel log lines'; they are audit records only: unknown. A clean log with driver lines still passes."""
    (f,) = _kfind("dmesg__apparmor-profile-loads-only.txt")
    assert f.verdict is Verdict.UNKNOWN and "audit records only" in f.message
    assert [x.verdict for x in _kfind("dmesg__azure-p100-hv-pci-boot-excerpt.txt")] == [Verdict.PASS]


def test_tab_indented_dmesg_and_module_loader_lines_are_a_kernel_log():
    """Held-out round 274 (real): a dmesg whose every line the paste indented with a tab was not recognised; the
    module loader's 'nvidia_modeset: Unknown symbol ... (err -2)' lines without stamps neither (now: the driver
    stack did not load, fail)."""
    r = explain_text(text(PUBLIC / "dmesg__azure-p100-hv-pci-boot-excerpt.txt"))
    assert r.kind == "kernel-log" and "in 18 kernel log lines" in r.findings[0].message
    sym = explain_text(text(PUBLIC / "dmesg__talos-arm64-nvidia-modeset-unknown-symbol.txt"))
    assert sym.kind == "kernel-log" and sym.verdict is Verdict.FAIL
    assert any("acpi_video_register_backlight" in f.message for f in sym.findings)


def test_mlx5_memory_key_cache_refill_failures_warn_naming_the_hca():
    """Held-out round 278 (real): mlx5's 'create_mkey_callback ... async reg mr failed. status -12' lines (the MR
    cache refill failing, ENOMEM) warn health.nic_link, naming the HCA, the status and the count."""
    (f,) = _kfind("dmesg__mlx5_0-async-reg-mr-failed-status-12.txt")
    assert f.id == "health.nic_link" and f.verdict is Verdict.WARN
    assert "mlx5_0 (10 line(s), status -12)" in f.message and "ENOMEM" in f.message


def test_an_iommu_fault_flood_on_a_non_gpu_device_fails_a_few_faults_warn():
    """Held-out round 286 (real): DMAR faults with '893 callbacks suppressed' (the ratelimit's unprinted faults) are a
    flood: the device's DMA is blocked continuously, fail. The same faults without the suppressed count warn, as
    before (synthetic: the ratelimit line removed)."""
    t = text(PUBLIC / "dmesg__dmar-pte-read-fault-igpu-passthrough.txt")
    (f,) = [x for x in explain_text(t).findings if x.id == "health.iommu_fault"]
    assert f.verdict is Verdict.FAIL and "a flood" in f.message and "1,786 more unprinted" in f.message
    calm = "\n".join(ln for ln in t.splitlines() if "callbacks suppressed" not in ln)
    (g,) = [x for x in explain_text(calm).findings if x.id == "health.iommu_fault"]
    assert g.verdict is Verdict.WARN and "flood" not in g.message
    assert klog.IOMMU_FLOOD == 100


def test_gsp_that_never_boots_is_a_gpu_that_did_not_initialise():
    """Held-out round 281 (real): 'kgspBootstrapRiscvOSEarly_GH100: Timeout waiting for GSP target mask release' was
    two unrecognised messages (warn); the GSP never booted, so the GPU did not initialise: fail."""
    f = _kfind("kernel-log__nvtrust52-h100-gsp-bootstrap-timeout.txt")
    assert [x.id for x in f if x.verdict is Verdict.FAIL] == ["health.gpu_init"]


def test_bar_failures_of_chipset_functions_and_sr_iov_vfs_warn():
    """Held-out rounds 203 and 259 (real): a BAR left unassigned on a function of the root bus (the PCH's SPI
    controller 00:1f.5) is not a GPU, NIC or NVMe drive: warn (it failed); a ConnectX-4 Lx's SR-IOV VF BAR 7 with
    'no space' leaves its VFs unusable: warn (it passed, once the tab-indented lines were read)."""
    (pch,) = _kfind("dmesg__lambda-pch-bar-no-space-spi-io-window.txt")
    assert pch.verdict is Verdict.WARN and "root bus" in pch.message and "0000:00:1f.5" in pch.message
    (vf,) = _kfind("dmesg__unraid-connectx4lx-sriov-bar7-no-space.txt")
    assert vf.verdict is Verdict.WARN and "SR-IOV" in vf.message and "BAR 7" in vf.message


def test_a_port_down_while_its_driver_brings_it_up_at_boot_is_not_a_lost_link():
    """Held-out round 294 (real): an 8-GPU server's clean boot log with an Emulex port's 'Link is Down' twice at 9 s
    (never up: no cable) warned 'lost its link 2 times: a flapping link'; downs in the first BOOT_LINK_S seconds before
    a port was ever up are its driver bringing it up."""
    (f,) = _kfind("dmesg__rtx-pro-6000-blackwell-x8-595-open-driver-load-clean.txt")
    assert f.verdict is Verdict.PASS and "NVIDIA driver 595.58.03" in f.message
    assert klog.BOOT_LINK_S == 60.0
    assert [x.verdict for x in _kfind("kernel-log__syslog-ib6-lost-carrier-flaps.txt")
            if x.id == "health.nic_link"] == [Verdict.FAIL]


def test_a_fabric_nics_ports_down_at_boot_and_never_up_warn():
    """Held-out round 302 (real): a ConnectX-7's two ports 'Link down' at 11 s and never up (the paste is a grep for
    mlx5_core): the fabric is missing, warn each; the boot-time exemption is for other NICs' unused ports (round 294)."""
    f = [x for x in _kfind("dmesg__igx-cx7-mlx5_core-both-ports-link-down-cable-plugged.txt") if x.id == "health.nic_link"]
    assert [x.verdict for x in f] == [Verdict.WARN, Verdict.WARN]


def test_amdgpu_that_cannot_initialise_its_gpu_fails_naming_the_gpus_and_the_bar_or_firmware_cause():
    r = explain_text(text(PUBLIC / "dmesg-grep-amdgpu__2x-mi210-fatal-error-gpu-init-probe-failed-12.txt"))
    (f,) = [f for f in r.findings if f.verdict is Verdict.FAIL]
    assert f.id == "health.kernel_log" and "0000:c3:00.0" in f.message and "0000:83:00.0" in f.message
    assert "error -12" in f.message and "Fatal error during GPU init" in f.message and "Above 4G" in f.remedy
    psp = explain_text(text(PUBLIC / "dmesg-grep-amdgpu__amd-gpu-psp-firmware-loading-failed-hw-init-psp-22.txt"))
    assert psp.verdict is Verdict.FAIL and "PSP firmware loading failed" in psp.findings[0].message
    ok = "[    8.798469] [drm] amdgpu kernel modesetting enabled.\n[    8.802165] [drm] amdgpu version: 6.16.13\n"
    assert explain_text(ok).verdict is not Verdict.FAIL  # synthetic_: the module loading is not a failure


def test_mlx5_error_completions_warn_with_the_syndromes_meaning():
    r = explain_text(text(PUBLIC / "kernel-log__mlx5-roce-nvmeof-responder-error-cqe-syndrome-0x5-repeated.txt"))
    (f,) = [f for f in r.findings if f.id == "health.nic_link"]
    assert f.verdict is Verdict.WARN and "rocep33s0f0" in f.message
    assert "syndrome 0x5 (work request flushed" in f.message and "first other syndrome" in f.remedy
