"""Review round 3: real outputs bringup had not seen (tests/data/PROVENANCE.md), for the
kernel log (dmesg -H/-e stamps, MCE status decode, Xid 45 "caused by", NVLink5 Fatal/Nonfatal,
RmInitAdapter remedy), nvidia-smi (dead-GPU errors on their own, cut ``-q`` text, persistence
mode) and DCGM (CUDA error 802 = Fabric Manager, persistence-mode failure invalidating a run).

Each test asserts what would break if the rule broke; every file named here is real, except the
few inline lines marked "synthetic" (format variations of real lines, to test one rule alone).
"""

from __future__ import annotations

import functools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe_data import CASES, PUBLIC, text
from tests import strategies
from wizard.rules import dcgm as dcgm_checks
from wizard.rules import kernel_log as klog
from wizard.rules import xid as xid_rules
from wizard.rules import smi as smi_checks
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers import kernellog as kl
from wizard.parsers.dcgm import parse_dcgm_text
from wizard.parsers.smi import parse_smi_table, parse_smi_text, parse_smi_xml, unreachable_gpus

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
A10_FULL = CASES / "nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt"

# file -> (kind, verdict) that a careful operator gives it (SOURCES of the review; PROVENANCE.md)
EXPECTED = {
    AER_H: ("kernel-log", "fail"),
    CMCI_H: ("kernel-log", "fail"),
    DUNKEL: ("kernel-log", "warn"),
    RADIASOFT: ("kernel-log", "warn"),
    XID45: ("kernel-log", "warn"),
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


def ids(findings, verdict: Verdict | None = None) -> list[str]:
    return [f.id for f in findings if verdict is None or f.verdict is verdict]


def by_id(findings, fid: str) -> list[Finding]:
    return [f for f in findings if f.id == fid]


def well_formed(findings) -> None:
    for f in findings:
        assert isinstance(f, Finding) and f.verdict in Verdict and f.id and f.subject and f.source
        if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
            assert f.remedy, f


# ------------------------------------------------------------------ every file: kind, verdict, evidence


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_review_file_gets_the_operators_verdict(name):
    kind, verdict = EXPECTED[name]
    e = explain_text(body(name), name)
    assert (e.kind, e.verdict.value) == (kind, verdict), [(f.id, f.verdict.value, f.message) for f in e.findings]
    well_formed(e.findings)
    raw = body(name)
    for f in e.findings:
        for ln in f.evidence:
            if not ln.startswith("... ") and ln not in ("pasted kernel log",):
                assert ln in raw, (f.id, ln)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if not body(n).lstrip().startswith(("$", "["))
                                        or n.startswith(("dmesg", "kernel-log"))))
def test_review_file_with_a_prompt_line_first(name):
    kind, verdict = EXPECTED[name]
    cmd = {"kernel-log": "dmesg -H", "nvidia-smi": "nvidia-smi", "nvidia-smi-q": "nvidia-smi -q",
           "dcgmi-diag": "dcgmi diag -r 3"}[kind]
    e = explain_text(f"root@gpu01:~# {cmd}\n" + body(name))
    assert (e.kind, e.verdict.value) == (kind, verdict)


# ------------------------------------------------------------------ 2. dmesg -H / -e / -d stamps


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


# The same real message under every dmesg time format (util-linux dmesg --time-format / -H / -e / -d /
# -x / -r) and the journalctl -o formats that print them. The stamps are synthetic; the message is a
# real line of the returnn log.
MSG = "pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)"
STAMPS = {
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


@pytest.mark.parametrize("stamp", sorted(STAMPS))
def test_every_dmesg_time_format_is_stripped(stamp):
    fmt, printed = STAMPS[stamp]
    log = kl.parse_kernel_log(stamp + MSG + "\n")
    (rec,) = log.records
    assert (rec.fmt, rec.stamp, rec.msg) == (fmt, printed, MSG)
    (ev,) = [e for e in log.events if e.kind == "aer"]
    assert ev.fields["severity"] == "fatal"


def test_dmesg_delta_keeps_the_seconds_since_boot():
    (rec,) = kl.parse_kernel_log("[    5.123456 <    0.000127>] " + MSG).records
    assert rec.mono_s == pytest.approx(5.123456)


# ------------------------------------------------------------------ MCE status decode, CMCI storm (B15)


def test_mci_status_bits_decode():
    ue = kl.decode_mci_status("fc00010001010092")  # ovro: EDAC skx MC3, the case's "1 UE" on MC3
    assert ue["val"] and ue["uc"] and ue["over"] and not ue["pcc"]
    ce = kl.decode_mci_status("cc00418000010091")  # dunkel: "262 CE memory read error"
    assert ce["val"] and not ce["uc"] and ce["over"]
    assert not kl.decode_mci_status("8c00004f000800c2")["uc"]  # radiasoft: "1 CE memory scrubbing error"
    assert kl.decode_mci_status("not hex") == {}


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


# ------------------------------------------------------------------ 4. Xid 45 caused by, NVLink5 Fatal/Nonfatal


def test_xid45_caused_by_previous_xid_takes_that_xids_severity():
    log = kl.parse_kernel_log(body(XID45))
    assert {e.fields.get("caused_by") for e in log.events} == {149, 145}
    e = explain_text(body(XID45))
    xids = by_id(e.findings, "health.xid")
    assert len(xids) == 4 and all(f.verdict is Verdict.WARN for f in xids)  # 149/145: "needs a look", not info
    dc = next(f for f in xids if "0000:dc:00.0" in f.subject)
    assert "caused by previous Xid 149" in dc.message and "judged as Xid 149" in dc.message
    assert "Find the Xid 149 line" in dc.remedy and "Xid 144-150 Decode" in dc.remedy
    assert "not solo" in dc.source


def test_xid45_joins_the_cause_when_the_cause_is_in_the_log():
    # synthetic combination: the real gpud Xid 149 'Fatal' line and the real nvl Xid 45 line, on one bus
    fatal = body(NVL5).splitlines()[0]
    follow = body(XID45).splitlines()[0].replace("0000:dc:00", "0019:01:00")
    e = explain_text(fatal + "\n" + follow + "\n")
    (f,) = by_id(e.findings, "health.xid")
    assert f.verdict is Verdict.FAIL and "Xid 149" in f.message and follow in f.evidence


def test_xid45_without_a_named_cause_stays_informational():
    e = explain_text(body(CHIA))
    x45 = [f for f in by_id(e.findings, "health.xid") if "Xid 45" in f.message]
    assert len(x45) == 1 and x45[0].verdict is Verdict.PASS
    assert any(f.verdict is Verdict.FAIL and "Xid 62" in f.message for f in e.findings)


def test_nvlink5_fatal_fails_and_nonfatal_warns():
    e = explain_text(body(NVL5))
    xids = {f.subject: f for f in by_id(e.findings, "health.xid")}
    for bus in ("0019:01:00.0", "0000:00:00.0"):
        f = xids[f"GPU ({bus})"]
        assert f.verdict is Verdict.FAIL and "Xid 149" in f.message and "says Fatal" in f.message
        assert "drain" in f.remedy.lower() and "gpud PR #1160" in f.source
    rlw = xids["GPU (0018:01:00.0)"]
    assert rlw.verdict is Verdict.WARN and "Nonfatal" in rlw.message
    assert xids["GPU (0000:9b:00.0)"].verdict is Verdict.WARN  # Xid 94: RESTART_APP


def test_text_severity_table_is_sourced_and_ordered():
    rows = xid_rules.text_severity_rows()
    assert rows and all(src for *_, src in rows)
    first = next(r for r in rows if r[0] <= 145 <= r[1])
    assert first[2].search("RLW_RXPIPE Nonfatal XC0") and first[3] is Verdict.WARN  # Nonfatal before Fatal


# ------------------------------------------------------------------ 11. RmInitAdapter remedy


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


# ------------------------------------------------------------------ 3. nvidia-smi's dead-GPU messages alone


@pytest.mark.parametrize("name,bus,reason", [(HANDLE, "0000:0b:00.0", "Unknown Error"),
                                             (P4, "0000:07:00.0", "Unknown Error"),
                                             (LOST, "0000:02:00.0", "GPU is lost")])
def test_unreachable_gpu_message_fails_and_names_the_bus(name, bus, reason):
    e = explain_text(body(name))
    assert e.kind == "nvidia-smi"
    (f,) = e.findings
    assert f.id == "health.gpu_responsive" and f.verdict is Verdict.FAIL
    assert f.subject == f"GPU ({bus})" and bus in f.message and reason in f.message
    assert "Xid 79" in f.remedy and bus in f.remedy
    if reason == "GPU is lost":
        assert "power-cycle" in f.remedy


def test_unreachable_line_without_a_space_before_the_bus():
    ((b, reason, line),) = unreachable_gpus(body(P4).splitlines())
    assert (b, reason) == ("0000:07:00.0", "Unknown Error") and line.startswith("Unable to determine")


# ------------------------------------------------------------------ 12. persistence mode (A4)


def test_persistence_off_warns_when_not_known_to_be_a_vm():
    (f,) = by_id(explain_text(body(GCP_A100)).findings, "health.persistence")
    assert f.verdict is Verdict.WARN and "nvidia-persistenced" in f.remedy and "VM guest" in f.message


def test_persistence_off_inside_a_passthrough_vm_is_a_note():
    (f,) = by_id(explain_text(body(L40S_Q)).findings, "health.persistence")
    assert f.verdict is Verdict.PASS and "inside a VM guest" in f.message and f.remedy
    assert any("Pass-Through" in ln for ln in f.evidence)


def test_persistence_off_on_bare_metal_xml_warns():
    """The A100 MIG case says Virtualization Mode None (bare metal) with persistence off."""
    doc = parse_smi_xml(text(CASES / "nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml"))
    (f,) = by_id(smi_checks.judge_doc(doc, {}), "health.persistence")
    assert f.verdict is Verdict.WARN
    vm = parse_smi_xml(text(CASES / "nvidia-smi-q-x__a100-sxm4-40gb-mig-passthrough-vm.xml"))
    (g,) = by_id(smi_checks.judge_doc(vm, {}), "health.persistence")
    assert g.verdict is Verdict.PASS


# ------------------------------------------------------------------ 7. a cut nvidia-smi -q text


def first_half(path) -> str:
    lines = text(path).splitlines()
    return "\n".join(lines[: len(lines) // 2]) + "\n"


def test_cut_q_text_says_which_sections_were_not_seen():
    cut = first_half(A10_FULL)
    e = explain_text(cut)
    assert e.kind == "nvidia-smi-q" and e.verdict is Verdict.UNKNOWN
    unknown = {f.id: f for f in e.findings if f.verdict is Verdict.UNKNOWN}
    assert {"health.ecc_mode", "health.ecc", "health.row_remap", "health.retired_pages",
            "health.temperature", "health.power_limit"} <= set(unknown)
    assert "'Remapped Rows'" in unknown["health.row_remap"].message
    assert "GPU 00000000:07:00.0" in unknown["health.row_remap"].evidence
    assert "health.pcie_width" not in unknown  # the PCI section was seen and judged
    assert not any(f.verdict is Verdict.PASS and f.id in unknown for f in e.findings)


def test_whole_q_text_has_no_cut_findings():
    for path in (A10_FULL, PUBLIC / L40S_Q, CASES / "nvidia-smi-q__8x-rtx4090-server-gpu0-section.txt"):
        doc = parse_smi_text(text(path))
        assert doc.gpus[-1].sections[0] == "product name" and "processes" in doc.gpus[-1].sections
        assert not smi_checks._cut_sections(doc, {})


@pytest.mark.parametrize("name", ["nvidia-smi-q-d-performance__desktop-idle-no-throttle.txt",
                                  "nvidia-smi-q__a100-pci-gen4-x16-section.txt",
                                  "nvidia-smi-q__remapped-rows-uncorrectable-pending.txt"])
def test_sections_and_d_selections_are_not_called_cut(name):
    assert not smi_checks._cut_sections(parse_smi_text(text(CASES / name)), {})


def test_cut_a10_keeps_failing_once_the_remap_section_is_in():
    lines = text(A10_FULL).splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.strip().startswith("Temperature"))
    e = explain_text("\n".join(lines[:end]) + "\n")
    assert e.verdict is Verdict.FAIL
    assert {f.id for f in e.findings if f.verdict is Verdict.UNKNOWN} == {"health.temperature", "health.power_limit"}


# ------------------------------------------------------------------ 5. DCGM: CUDA error 802 = Fabric Manager


def test_dcgm_system_not_yet_initialized_points_at_fabric_manager():
    e = explain_text(body(FM_DOWN))
    fails = [f for f in e.findings if f.verdict is Verdict.FAIL]
    assert len(fails) == 8 and {f.subject for f in fails} == {f"GPU {i}" for i in range(8)}
    for f in fails:
        assert "CUDA error 802" in f.message and "not a measured failure" in f.message
        assert "nvidia-fabricmanager" in f.remedy and "560.35.03" in f.remedy and "H100" in f.remedy
        assert "ECC" not in f.remedy and "RMA it" not in f.remedy and "Do not RMA" in f.remedy
        assert "fabric-manager-user-guide" in f.source and "knowledge.md" not in f.source
    skips = [f for f in e.findings if f.verdict is Verdict.WARN]
    assert skips and all("Fabric Manager" in f.remedy for f in skips)


def test_dcgm_memory_failure_without_802_keeps_the_memory_remedy():
    e = explain_text(text(CASES / "dcgmi-diag__r2-gpu0-memory-fail-thermal-violation-partial.txt"))
    f = next(f for f in e.findings if f.verdict is Verdict.FAIL)
    assert "ECC" in f.remedy and "fabricmanager" not in f.remedy


# ------------------------------------------------------------------ 12. DCGM: persistence mode failed


def test_dcgm_persistence_failure_that_skipped_the_hardware_tests_is_not_a_valid_run():
    e = explain_text(body(PM_FAIL))
    assert e.verdict is Verdict.UNKNOWN
    (f,) = [f for f in e.findings if f.verdict is not Verdict.SKIP]
    assert f.verdict is Verdict.UNKNOWN and f.subject == "GPU 0"
    assert "does not count" in f.message and "GPU Memory" in f.message and "Memtest (pass)" in f.message
    assert "nvidia-smi -pm 1" in f.remedy and "rerun" in f.remedy
    assert "| Persistence Mode          | Fail                                           |" in f.evidence


def test_dcgm_persistence_failure_with_hardware_tests_run_is_a_warn():
    # synthetic: the real r4 table with its skipped tests marked as run (Pass), to test the rule alone
    ran = body(PM_FAIL).replace("Skip - All", "Pass - All")
    d = parse_dcgm_text(ran)
    fs = dcgm_checks.judge(d, ran, {})
    (pm,) = [f for f in fs if "Persistence Mode" in f.message]
    assert pm.verdict is Verdict.WARN and pm.remedy == dcgm_checks.PM_REMEDY
    assert not any(f.verdict is Verdict.UNKNOWN for f in fs)


def test_dcgm_persistence_info_alone_does_not_invalidate():
    """The r3 run says persistence is disabled only as Info (its Persistence Mode test passes)."""
    d = parse_dcgm_text(body(FM_DOWN))
    assert not dcgm_checks._invalid_without_persistence(d, dcgm_checks._gpu_ids(d))


# ------------------------------------------------------------------ robustness (hypothesis)

REVIEW_TEXTS = [body(n) for n in sorted(EXPECTED)] + [first_half(A10_FULL)]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])
STAMP_TOKENS = list(STAMPS) + ["[", "]", "+", "<", ">", "Bank 8: ", "fc00010001010092", "zz00010001010092",
                               "Machine Check Event: 0 ", "EDAC skx MC3: CPU 10: ", "caused by previous Xid ",
                               "99999999999999999999", "Fatal", "Nonfatal", "\n", " "]


def mutated() -> st.SearchStrategy[str]:
    """A review input, mutated (tests/strategies.py)."""
    return strategies.mutated(REVIEW_TEXTS, STAMP_TOKENS, max_ops=5)


inputs = st.one_of(mutated(), strategies.garbage(STAMP_TOKENS, max_size=800, max_tokens=40))


@FUZZ
@given(inputs)
def test_review_inputs_never_break_parsers_or_judges(t):
    log = kl.parse_kernel_log(t)
    well_formed(klog.judge_kernel_log(log, {}))
    for parse in (parse_smi_text, parse_smi_table):
        well_formed(smi_checks.judge_doc(parse(t), {}))
    d = parse_dcgm_text(t)
    well_formed(dcgm_checks.judge(d, t, {}))
    e = explain_text(t)
    assert e.verdict in Verdict


def test_a_kernel_line_about_a_lost_gpu_stays_a_kernel_log():
    # synthetic one-liner: an NVRM line that says "GPU is lost" is the kernel's, not nvidia-smi's
    assert explain_text("NVRM: GPU 0000:02:00.0: GPU is lost\n").kind == "kernel-log"
