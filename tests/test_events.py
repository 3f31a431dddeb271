"""Kernel log events, the Xid catalogue and host memory errors (area "events").

Real outputs: tests/data/cases (real servers' output from public reports) and tests/data/public; hand-built
edge cases: tests/data/synthetic/synthetic_* (tests/data/PROVENANCE.md says where each
file comes from and why a synthetic one was needed).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, collect_tree, text
from wizard import probes
from wizard import registry
from wizard.rules import edac as edac_rules
from wizard.rules import kernel_log as klog
from wizard.rules import xid as xid_rules
from wizard.data import table
from wizard.explain import explain_text
from wizard.model import Finding, Verdict, overall
from wizard.parsers import edac as ed
from wizard.parsers import kernellog as kl
from wizard.probes import ProbeOutput

MY_PREFIXES = ("dmesg__", "journal__", "syslog__", "edac-util__", "ras-mc-ctl-summary__")


LOCAL_EXPECTED = CASES / "expected.csv"
"""The cases' verdicts and sources (this area's rows are picked by file-name prefix)."""


def _expected_rows(path: Path | None = None) -> list[dict[str, str]]:
    if path is None:
        path = LOCAL_EXPECTED
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["file"].startswith(MY_PREFIXES)]


def _blob(findings: list[Finding]) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


def _ids(findings: list[Finding], verdict: Verdict | None = None) -> set[str]:
    return {f.id for f in findings if verdict is None or f.verdict is verdict}


# ------------------------------------------------------------------ the shared cases


CASE_ROWS = _expected_rows()


def test_all_thirteen_case_files_are_here():
    assert len(CASE_ROWS) == 13
    assert _expected_rows(LOCAL_EXPECTED) == CASE_ROWS
    for r in CASE_ROWS:
        assert (CASES / r["file"]).is_file()
        assert r["source"].strip(), r["file"]


@pytest.mark.parametrize("row", CASE_ROWS, ids=[r["file"] for r in CASE_ROWS])
def test_case_through_explain(row):
    """Every case file of this area gets its expected verdict, through detection, and names one
    of its expected words."""
    e = explain_text(text(CASES / row["file"]), row["file"])
    assert e.kind in ("kernel-log", "edac-util", "ras-mc-ctl"), e.kind
    assert e.verdict.value in row["verdict"].split("|"), [(f.verdict, f.message) for f in e.findings]
    words = [w.lower() for w in row["mentions"].split("|") if w]
    if words:
        assert any(w in _blob(e.findings) for w in words), (words, [f.message for f in e.findings])


@pytest.mark.parametrize("row", CASE_ROWS, ids=[r["file"] for r in CASE_ROWS])
def test_case_with_command_line_and_cut_short(row):
    """A paste that starts with the command line, and one cut to its first half, still go to
    this area's kind and never crash."""
    body = text(CASES / row["file"])
    cmd = {"dmesg": "dmesg -T", "journal": "journalctl -k -b", "syslog": "grep NVRM /var/log/syslog",
           "edac-util": "edac-util -v", "ras-mc-ctl-summary": "ras-mc-ctl --summary"}[row["file"].split("__")[0]]
    e = explain_text(f"$ {cmd}\n{body}")
    assert e.verdict.value in row["verdict"].split("|")
    lines = body.splitlines()
    half = "\n".join(lines[: max(1, len(lines) // 2)])
    cut = explain_text(half)
    assert cut.kind in ("kernel-log", "edac-util", "ras-mc-ctl")
    assert cut.findings and all(isinstance(f.verdict, Verdict) for f in cut.findings)


# ------------------------------------------------------------------ specific case content


def test_xe9680_xid119_names_gpu_serial_and_merges_gsp_lines():
    e = explain_text(text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt"))
    xid = [f for f in e.findings if f.id == "health.xid"]
    assert len(xid) == 1 and xid[0].verdict is Verdict.FAIL
    assert xid[0].subject == "GPU (0000:9b:00.0, serial 0000000000000)"
    assert "5 events" in xid[0].message and "GSP_RPC_TIMEOUT" in xid[0].message
    # the "Rate limiting GSP RPC error prints" line is evidence for the same GPU, not a second finding
    assert any("Rate limiting GSP RPC error prints" in ln for ln in xid[0].evidence)
    assert "health.gsp" not in _ids(e.findings)
    assert "power-cycle" in xid[0].remedy and "RESET_GPU" in xid[0].remedy


def test_talos_xid154_reports_the_action_and_gsp_timeout():
    e = explain_text(text(CASES / "dmesg__gsp-rpc-timeout-xid154-gpu-reset-required.txt"))
    x154 = [f for f in e.findings if f.id == "health.xid"]
    assert len(x154) == 1 and x154[0].verdict is Verdict.FAIL
    assert "'GPU Reset Required'" in x154[0].message
    assert "nvidia-smi -r" in x154[0].remedy
    gsp = [f for f in e.findings if f.id == "health.gsp"]
    assert gsp and gsp[0].subject == "GPU (0000:0b:00.0)"  # the only GPU in the log
    assert any("rpcRecvPoll timedout" in ln for ln in gsp[0].evidence)


def test_rtx_pro_6000_chain_xid48_171_63_154():
    e = explain_text(text(CASES / "journal__rtxpro6000-xid48-xid171-xid63-xid154-dbe-row-remap-drain-reset.txt"))
    by_msg = {re.search(r"Xid (\d+)", f.message).group(1): f for f in e.findings if f.id == "health.xid"}
    assert by_msg["48"].verdict is Verdict.FAIL
    assert by_msg["171"].verdict is Verdict.FAIL
    assert by_msg["63"].verdict is Verdict.WARN
    assert by_msg["154"].verdict is Verdict.FAIL and "'Drain and Reset'" in by_msg["154"].message
    assert all(f.subject == "GPU (0000:55:00.0, serial 0000000000000)" for f in by_msg.values())


def test_xid13_and_109_are_warnings_not_failures():
    e = explain_text(text(CASES / "dmesg__xid13-xid109-sm-exception-ctx-switch-timeout.txt"))
    assert e.verdict is Verdict.WARN
    msgs = [f.message for f in e.findings if f.id == "health.xid"]
    assert any("Xid 13 " in m and "3 events" in m and "application" in m for m in msgs)
    assert any("Xid 109 " in m for m in msgs)
    x13 = next(f for f in e.findings if "Xid 13 " in f.message)
    assert "compute-sanitizer" in x13.remedy


def test_tesla_aer_fatal_names_port_and_gpu_and_xid79_needs_power_cycle():
    e = explain_text(text(CASES / "dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt"))
    aer = next(f for f in e.findings if f.id == "health.aer")
    assert aer.verdict is Verdict.FAIL
    assert "0000:00:02.0" in aer.message and "[8086:6f04]" in aer.message and "Surprise Down Error" in aer.message
    assert aer.subject.startswith("GPU (0000:02:00.0")
    x79 = next(f for f in e.findings if "Xid 79" in f.message)
    assert x79.verdict is Verdict.FAIL and "power-cycle" in x79.remedy.lower()


def test_edac_ue_fails_and_apei_pcie_error_on_nvme_warns():
    e = explain_text(text(CASES / "dmesg__edac-ue-memory-error-apei-pcie-error.txt"))
    mem = next(f for f in e.findings if f.id == "health.host_memory")
    assert mem.verdict is Verdict.FAIL and "CPU_SrcID#1_MC#1_Chan#2_DIMM#0" in mem.message
    assert "Replace the DIMM" in mem.remedy
    aer = next(f for f in e.findings if f.id == "health.aer")
    assert aer.verdict is Verdict.WARN and "0000:5e:00.0 [144d:a808]" in aer.message
    # the interleaved "mce: ... Machine check events logged" line is not a third finding
    assert "health.mce" not in _ids(e.findings)


def test_journal_edac_ce_sums_the_counts_per_dimm():
    e = explain_text(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt"))
    (mem,) = [f for f in e.findings if f.id == "health.host_memory"]
    assert mem.verdict is Verdict.WARN and "16 corrected (CE)" in mem.message  # 4+2+6+1+1+1+1
    assert "CPU#0Channel#2_DIMM#0" in mem.subject


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


# ------------------------------------------------------------------ public and synthetic samples

PUBLIC_EXPECTED = {
    # file: (kind, verdict, finding ids that must be present)
    "kernel-log__gpu-operator-492-bar1-0m-probe-failed.txt": ("kernel-log", "fail", {"health.gpu_init"}),
    "kernel-log__rockchip-2-rtx3090-limited-x4-bar-no-space-partial.txt": ("kernel-log", "warn",
                                                                          {"health.pcie_limited", "health.gpu_init"}),
    "kernel-log__nvsentinel-155-fallen-off-bus-no-xid.txt": ("kernel-log", "fail", {"health.gpu_bus"}),
    "kernel-log__vgpu-unlock-114-aer-uncorrected-fatal-sdes.txt": ("kernel-log", "fail", {"health.aer"}),
    "kernel-log__pop-os-3363-correctable-aer-journal-partial.txt": ("kernel-log", "pass", {"health.aer"}),
    "kernel-log__gsconnect-1052-localised-month-corrected-aer-partial.txt": ("kernel-log", "pass", {"health.aer"}),
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
    # review round 3 (PROVENANCE.md; judged in detail in tests/test_review_events_smi.py)
    "kernel-log__nvl-xid45-caused-by-xid149-xid145.txt": ("kernel-log", "warn", {"health.xid"}),
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
    "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt": ("kernel-log", "fail", {"health.xid"}),
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
    mine = {p.name for p in PUBLIC.glob("*") if p.is_file() and p.name.startswith(("kernel-log__", "edac", "ras-mc-ctl"))}
    assert mine == set(PUBLIC_EXPECTED)
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


def test_corrected_aer_is_information_only():
    e = explain_text(text(PUBLIC / "kernel-log__pop-os-3363-correctable-aer-journal-partial.txt"))
    (f,) = e.findings
    assert f.verdict is Verdict.PASS and "3 PCIe AER errors" in f.message and "[1022:1453]" in f.message
    assert "information" in f.message and f.remedy == ""


def test_unknown_xid_code_says_look_it_up():
    e = explain_text(text(SYNTHETIC / "synthetic_kernel-log__xid-unknown-code-and-154-node-reboot.txt"))
    unk = next(f for f in e.findings if "Xid 999" in f.message)
    assert unk.verdict is Verdict.WARN and "catalog" in unk.remedy.lower()
    reboot = next(f for f in e.findings if "154" in f.message)
    assert "'Node Reboot Required'" in reboot.message and "reboot" in reboot.remedy.lower()


def test_ras_memory_ue_names_the_dimm():
    e = explain_text(text(SYNTHETIC / "synthetic_ras-mc-ctl__summary-memory-ue-aer-fatal.txt"))
    ue = next(f for f in e.findings if f.verdict is Verdict.FAIL and f.id == "health.host_memory")
    assert ue.subject == "DIMM CPU1_DIMM_C1" and "Replace the DIMM CPU1_DIMM_C1" in ue.remedy


# ------------------------------------------------------------------ the parser


def test_formats_are_recognised():
    samples = {
        "[  123.456789] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, boom": "dmesg",
        "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:3b:00): 13, boom": "dmesg-ctime",
        "May  7 06:45:12 node01 kernel: [21584690.529862] EDAC MC0: 4 CE error on X (channel:2)": "syslog",
        "Aug 10 15:36:05 node01 kernel: NVRM: Xid (PCI:0000:55:00): 63, reset gpu to activate.": "syslog",
        "2025-01-17T17:10:43+0000 host kernel: NVRM: Xid (PCI:0000:55:00): 63, x": "syslog-iso",
        "[    5.123456] node01 kernel: NVRM: Xid (PCI:0000:55:00): 63, x": "journal-monotonic",
        "10.0.0.1: kern: warning: [2026-04-22T21:30:51.52643656Z]: NVRM: Xid (PCI:0000:0b:00): 31, x": "talos",
        "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-decode",
        "<4>[  12.5] NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-raw",
        "2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-iso",
    }
    for line, fmt in samples.items():
        log = kl.parse_kernel_log(line)
        assert log.formats == {fmt}, line
        assert [e.kind for e in log.events] == ["xid"] or [e.kind for e in log.events] == ["edac"], line


def test_monotonic_stamp_inside_syslog_prefix_is_read():
    log = kl.parse_kernel_log(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt"))
    assert log.records[1].mono_s == pytest.approx(21584690.529877)
    assert log.records[1].host == "node01" and log.records[1].msg.startswith("EDAC MC0: 4 CE error")


def test_continuation_lines_join_their_record():
    log = kl.parse_kernel_log(text(CASES / "dmesg__v100-nouveau-conflict-probe-not-called.txt"))
    rec = next(r for r in log.records if r.msg.startswith("NVRM: This can occur"))
    assert len(rec.raw) == 3 and "nouveau, rivafb" in rec.msg
    assert len(log.records) == 6


def test_xid_fields():
    log = kl.parse_kernel_log(text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt"))
    xids = [e for e in log.events if e.kind == "xid"]
    assert [e.fields["code"] for e in xids] == [119] * 5
    assert xids[0].bus_id == "0000:9b:00.0" and xids[0].fields["pid"] == "2024380"
    assert xids[0].fields["name"] == "nvidia-smi"
    assert log.gpus["0000:9b:00.0"].serial == "0000000000000"
    assert log.gpus["0000:9b:00.0"].uuid == "GPU-00000000-0000-0000-0000-000000000001"


def test_xid154_action_fields():
    log = kl.parse_kernel_log(text(CASES / "journal__rtxpro6000-xid48-xid171-xid63-xid154-dbe-row-remap-drain-reset.txt"))
    e = next(e for e in log.events if e.fields.get("code") == 154)
    assert e.fields["action"] == "Drain and Reset" and e.fields["action_code"] == "0x4"
    assert e.fields["from_action"] == "None"


def test_xid154_cut_before_the_action_name_falls_back_to_the_code():
    line = "NVRM: Xid (PCI:0000:55:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reb"
    e = explain_text(line)
    (f,) = e.findings
    assert f.verdict is Verdict.FAIL and "Node Reboot Required" in f.message


def test_partial_xid_line_before_the_code():
    e = explain_text("[240314.528856] NVRM: Xid (PCI:0000:07:00): ")
    (f,) = [f for f in e.findings if f.id == "health.xid"]
    assert f.verdict is Verdict.WARN and "cut before the Xid number" in f.message


def test_aer_fields_old_and_new_kernels():
    old = kl.parse_kernel_log(text(CASES / "dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt"))
    fatal = [e for e in old.events if e.kind == "aer" and e.fields["severity"] == "fatal"]
    assert fatal[0].bus_id == "0000:00:02.0" and fatal[0].fields["type"] == "Transaction Layer"
    assert fatal[0].fields["errors"] == ["Surprise Down Error"] and fatal[0].fields["pci_id"] == "8086:6f04"
    assert fatal[0].fields["affects_gpu"] == "0000:02:00.0"
    new = kl.parse_kernel_log(text(PUBLIC / "kernel-log__gsconnect-1052-localised-month-corrected-aer-partial.txt"))
    aer = [e for e in new.events if e.kind == "aer"]
    assert len(aer) == 2 and aer[0].fields["severity"] == "corrected" and aer[0].fields["errors"] == ["RxErr"]


def test_aer_requester_id_decoding():
    assert kl._aer_requester("id=0010", "0000:00:02.0") == "0000:00:02.0"
    assert kl._aer_requester("id=00e8(Receiver ID)", "0000:00:1d.0") == "0000:00:1d.0"
    assert kl._aer_requester("0000:03:00.0", "0000:00:1d.0") == "0000:03:00.0"


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


def test_limited_fields():
    log = kl.parse_kernel_log(text(PUBLIC / "kernel-log__rockchip-2-rtx3090-limited-x4-bar-no-space-partial.txt"))
    (e,) = [e for e in log.events if e.kind == "pcie_limited"]
    assert e.fields == {"avail_gbit_s": "31.504", "speed_gts": "8.0", "width": "4", "port": "0000:00:00.0",
                        "cap_gbit_s": "252.048", "cap_speed_gts": "16.0", "cap_width": "16"}


def test_speed_only_limit_suggests_checking_under_load():
    line = ("[    2.9] pci 0000:41:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link at "
            "0000:40:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {})
    assert f.verdict is Verdict.WARN and "under load" in f.remedy and "0000:40:01.1" in f.message


def test_edac_fields():
    log = kl.parse_kernel_log(text(CASES / "dmesg__edac-ue-memory-error-apei-pcie-error.txt"))
    (e,) = [e for e in log.events if e.kind == "edac"]
    assert e.fields["mc"] == 3 and e.fields["type"] == "UE" and e.fields["count"] == 1
    assert e.fields["label"] == "CPU_SrcID#1_MC#1_Chan#2_DIMM#0"
    (g,) = [e for e in log.events if e.kind == "ghes"]
    assert g.fields["severity"] == "nonfatal" and g.fields["section"] == "pcie error"
    assert g.bus_id == "0000:5e:00.0" and g.fields["pci_id"] == "144d:a808"


def test_old_edac_format_with_quoted_label():
    line = ('[ 5.1] EDAC MC0: CE page 0x1f4c, offset 0x1d0, grain 8, syndrome 0x5c, row 0, channel 1, '
            'label "DIMM_B1": i5000 CE')
    (e,) = kl.parse_kernel_log(line).events
    assert e.fields["label"] == "DIMM_B1" and e.fields["type"] == "CE"


def test_boot_markers_split_boots():
    log = kl.parse_kernel_log(text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt"))
    assert log.boots == 2
    (x,) = [e for e in log.events if e.kind == "xid"]
    assert x.boot == 0
    # a monotonic clock that restarts is a new boot too
    restarted = kl.parse_kernel_log("[ 900.1] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
                                    "[   0.5] Booting the kernel\n")
    assert restarted.boots == 2 and restarted.events[0].boot == 0


def test_boot_only_counts_the_last_boot_and_lists_the_rest():
    log = kl.parse_kernel_log(text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt"))
    findings = klog.judge_kernel_log(log, {"boot_only": True})
    assert overall(findings) is Verdict.PASS
    skip = next(f for f in findings if f.id == "health.kernel_log_ignored")
    assert skip.verdict is Verdict.SKIP and "1 from earlier boots" in skip.message
    assert any("Xid (PCI:0000:18:00): 79" in ln for ln in skip.evidence)
    assert overall(klog.judge_kernel_log(log, {"boot_only": False})) is Verdict.FAIL


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


def test_event_key_ignores_host_and_prefix_format():
    dm = kl.parse_kernel_log("[ 5021.337470] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    jr = kl.parse_kernel_log("[ 5021.337470] node01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, "
                             "GPU has fallen off  the bus.")
    assert kl.event_key(dm.events[0]) == kl.event_key(jr.events[0])
    later = kl.parse_kernel_log("[ 6021.337470] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    assert kl.event_key(later.events[0]) != kl.event_key(dm.events[0])


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


def test_oops_is_unrecognised_warning_once_per_trace():
    lines = ("[ 1.0] WARNING: CPU: 3 PID: 1 at drivers/foo.c:1 bar+0x1/0x2\n[ 1.0] Call Trace:\n"
             "[ 1.0]  <TASK>\n[ 9.0] INFO: task python:42 blocked for more than 120 seconds.\n")
    evs = [e for e in kl.parse_kernel_log(lines).events if e.kind == "unrecognised"]
    assert len(evs) == 2


def test_gpu_index_names_the_gpu():
    log = kl.parse_kernel_log(text(CASES / "dmesg__a100-xid63-row-remapper-new-row-marked.txt"))
    (f,) = klog.judge_kernel_log(log, {}, gpu_index={"0000:10:1c.0": 5})
    assert f.subject == "GPU 5 (0000:10:1c.0)"


def test_bus_id_forms():
    assert kl.bus_id("0000:9b:00") == "0000:9b:00.0"
    assert kl.bus_id("00000000:9B:00.0") == "0000:9b:00.0"
    assert kl.bus_id("9b:00.1") == "0000:9b:00.1"
    assert kl.bus_id("") == ""


def test_detector_scores():
    assert kl.detect_kernel_log("") == 0.0
    assert kl.detect_kernel_log("hello world\nnothing here") == 0.0
    assert kl.detect_kernel_log(text(CASES / "dmesg__a100-xid63-row-remapper-new-row-marked.txt")) >= 0.8
    assert ed.detect_edac_util("mc0: 0 Uncorrected Errors with no DIMM info") > 0.9
    assert ed.detect_ras_mc_ctl("No Memory errors.\n\nNo PCIe AER errors.\n") > 0.9
    assert ed.detect_edac_util(text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt")) == 0.0
    assert ed.detect_ras_mc_ctl(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt")) == 0.0


# ------------------------------------------------------------------ edac-util / ras-mc-ctl / sysfs parsers


def test_edac_util_formats():
    f = ed.parse_edac_util("mc0: Correctable errors:   7\nmc0: Uncorrectable errors: 0\nTotal CE: 7\nTotal UE: 0\n")
    (c,) = f.counts
    assert (c.mc, c.ce, c.ue) == ("mc0", 7, 0)
    f = ed.parse_edac_util("edac-util: No errors to report.\n")
    assert f.no_errors_line and not f.counts
    assert edac_rules.judge_edac_facts(f, {})[0].verdict is Verdict.PASS
    f = ed.parse_edac_util("edac-util: Error: No memory controller data found.\n")
    (x,) = edac_rules.judge_edac_facts(f, {})
    assert x.verdict is Verdict.UNKNOWN and "amd64_edac" in x.remedy
    f = ed.parse_edac_util("mc0:csrow0:all:UE:1\nmc0:csrow0:all:CE:4\nmc0:csrow0:DIMM_A1:CE:4\n")
    verdicts = {x.verdict for x in edac_rules.judge_edac_facts(f, {})}
    assert Verdict.FAIL in verdicts


def test_edac_util_case_fields():
    f = ed.parse_edac_util(text(CASES / "edac-util__31-corrected-errors-dimm.txt"))
    (c,) = f.counts
    assert (c.mc, c.where, c.label, c.ce, c.ue) == ("mc1", "csrow1", "CPU_SrcID#1_Channel#1_DIMM#0", 31, None)


def test_ras_sections():
    f = ed.parse_ras_mc_ctl(text(CASES / "ras-mc-ctl-summary__1-corrected-mce.txt"))
    (it,) = f.items
    assert (it.section, it.severity, it.count) == ("mce", "ce", 1)
    assert len(f.clean) == 6 and not f.unread
    f = ed.parse_ras_mc_ctl(text(PUBLIC / "ras-mc-ctl__rasdaemon-67-error-count-5539-ce.txt"))
    hits = [i for i in f.items if i.severity]
    assert [(i.label, i.count) for i in hits] == [("CPU_SrcID#1_Ha#0_Chan#0_DIMM#0", 5539)]


def test_ras_all_clean_passes_and_garbage_is_unknown():
    clean = "No Memory errors.\n\nNo PCIe AER errors.\n\nNo MCE errors.\n"
    assert edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl(clean), {})[0].verdict is Verdict.PASS
    (f,) = edac_rules.judge_ras_mc_ctl(ed.parse_ras_mc_ctl("ras-mc-ctl: Error: can't access the database\n"), {})
    assert f.verdict is Verdict.UNKNOWN


def test_sysfs_parser_reads_dimm_rank_csrow_and_noinfo():
    files = {
        "/sys/devices/system/edac/mc/mc0/ce_count": "5\n", "/sys/devices/system/edac/mc/mc0/ue_count": "0\n",
        "/sys/devices/system/edac/mc/mc0/ue_noinfo_count": "2\n",
        "/sys/devices/system/edac/mc/mc0/csrow1/ch0_ce_count": "5\n",
        "/sys/devices/system/edac/mc/mc0/csrow1/ch0_dimm_label": "DIMM_A2\n",
        "/sys/devices/system/edac/mc/mc1/ce_count": None,
    }
    f = ed.parse_edac_sysfs(files)
    by = {(c.mc, c.where): c for c in f.counts}
    assert by[("mc0", "csrow1/ch0")].ce == 5 and by[("mc0", "csrow1/ch0")].label == "DIMM_A2"
    assert by[("mc0", "noinfo")].ue == 2
    assert f.unread == ["/sys/devices/system/edac/mc/mc1/ce_count: <unreadable>"]
    findings = edac_rules.judge_edac_facts(f, {})
    assert {x.verdict for x in findings} == {Verdict.FAIL, Verdict.WARN}
    assert not any(x.message.startswith("host memory mc0:") for x in findings)  # totals not double-counted


# ------------------------------------------------------------------ the live/snapshot checks


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


def test_edac_check_on_saved_trees():
    outs = collect_tree(SYNTHETIC / "synthetic_edac-tree__dimm-ue", ["edac_sysfs"])
    findings = edac_rules.edac(outs, {})
    assert {(f.verdict, f.subject) for f in findings} == {
        (Verdict.FAIL, "DIMM CPU0_DIMM_B1 (mc0 dimm1)"), (Verdict.WARN, "DIMM CPU0_DIMM_A1 (mc0 dimm0)")}
    outs = collect_tree(PUBLIC / "edac-tree__edac-utils-15-rank-ce", ["edac_sysfs"])
    (f,) = edac_rules.edac(outs, {})
    assert f.verdict is Verdict.WARN and "mc0 rank4" in f.message
    assert "/sys/devices/system/edac/mc/mc0/rank4/dimm_ce_count:1" in f.evidence


def test_edac_check_without_edac_is_unknown(tmp_path):
    outs = collect_tree(tmp_path, ["edac_sysfs"])
    (f,) = edac_rules.edac(outs, {})
    assert f.verdict is Verdict.UNKNOWN and "EDAC" in f.message


def test_probes_are_registered():
    kl_journal = registry.PROBES["kernel_log_journal"]
    assert kl_journal.title.startswith("Kernel log of this boot")
    assert "kernel_log_dmesg" in registry.PROBES and "edac_sysfs" in registry.PROBES


# ------------------------------------------------------------------ the reference tables


def test_xid_table_rows_have_sources_and_known_severities():
    classes = {r["severity"] for r in table("xid_severity.csv")}
    codes = [r["code"] for r in table("xid.csv")]
    assert len(codes) == len(set(codes))
    for r in table("xid.csv"):
        assert r["source"] and "docs.nvidia.com" in r["source"], r
        assert r["severity"] in classes | {"recovery"}, r
        assert r["name"] and r["follow_up"], r
    for r in table("xid_severity.csv") + table("xid154_actions.csv") + table("xid_buckets.csv") + table(
            "kernel_log_benign.csv"):
        assert r["source"], r


def test_b5_hardware_class_codes_fail_unless_a_sourced_exception():
    rows = xid_rules.xid_rows()
    b5 = [48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120]
    for code in b5:
        row = rows[code]
        if row["severity"] != "critical":
            # NVIDIA's resolution bucket overrides Azure's hardware-class list, and the row says so
            assert "docs.nvidia.com" in row["source"] and "Azure's hardware-class list" in row["follow_up"], code


def test_recovery_action_table_covers_the_catalog_strings():
    actions = {r["action"] for r in xid_rules.recovery_actions()}
    assert {"None", "Drain P2P", "Drain and Reset", "GPU Reset Required", "Node Reboot Required"} <= actions
    verdicts = {r["action"]: r["verdict"] for r in xid_rules.recovery_actions()}
    assert verdicts["None"] == "pass" and verdicts["GPU Reset Required"] == "fail"


def test_xid79_row_says_bare_metal_power_cycle():
    row = xid_rules.xid_rows()[79]
    assert row["immediate_action"] == "RESTART_BM" and "power-cycle" in row["follow_up"].lower()


def test_bar_failure_that_a_later_allocator_pass_fixed_is_not_reported():
    base = ("[ 0.2] pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n"
            "[ 0.3] pci 0000:18:00.0: BAR 1: no space for [mem size 0x2000000000 64bit pref]\n"
            "[ 0.3] pci 0000:18:00.0: BAR 1: failed to assign [mem size 0x2000000000 64bit pref]\n")
    fixed = base + "[ 0.4] pci 0000:18:00.0: BAR 1: assigned [mem 0x220000000000-0x221fffffffff 64bit pref]\n"
    assert overall(klog.judge_kernel_log(kl.parse_kernel_log(fixed), {})) is Verdict.PASS
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(base), {})
    assert f.verdict is Verdict.WARN and f.subject == "GPU (0000:18:00.0)" and "Above 4G" in f.remedy


def test_gpu_held_by_vfio_pci_is_not_a_blacklist_case():
    line = "[ 12.1] NVRM: GPU 0000:3b:00.0 is already bound to vfio-pci."
    (f,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {})
    assert f.verdict is Verdict.FAIL and "vfio-pci" in f.message and "blacklist" not in f.remedy
    (g,) = klog.judge_kernel_log(kl.parse_kernel_log(line), {"virtualization": True})
    assert g.verdict is Verdict.WARN
