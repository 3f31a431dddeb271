"""Tests of wizard/rules/xid.py."""

from __future__ import annotations

import functools
import re

import pytest

from wizard.data import table
from wizard.explain import explain_text
from wizard.model import Finding, Verdict
from wizard.parsers import kernellog as kl
from wizard.rules import xid as xid_rules

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def _ids(findings: list[Finding], verdict: Verdict | None = None) -> set[str]:
    return {f.id for f in findings if verdict is None or f.verdict is verdict}


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


def test_unknown_xid_code_says_look_it_up():
    e = explain_text(text(SYNTHETIC / "synthetic_kernel-log__xid-unknown-code-and-154-node-reboot.txt"))
    unk = next(f for f in e.findings if "Xid 999" in f.message)
    assert unk.verdict is Verdict.WARN and "catalog" in unk.remedy.lower()
    reboot = next(f for f in e.findings if "154" in f.message)
    assert "'Node Reboot Required'" in reboot.message and "reboot" in reboot.remedy.lower()


def test_xid154_cut_before_the_action_name_falls_back_to_the_code():
    line = "NVRM: Xid (PCI:0000:55:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reb"
    e = explain_text(line)
    (f,) = e.findings
    assert f.verdict is Verdict.FAIL and "Node Reboot Required" in f.message


def test_partial_xid_line_before_the_code():
    e = explain_text("[240314.528856] NVRM: Xid (PCI:0000:07:00): ")
    (f,) = [f for f in e.findings if f.id == "health.xid"]
    assert f.verdict is Verdict.WARN and "cut before the Xid number" in f.message


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


XID45 = "kernel-log__nvl-xid45-caused-by-xid149-xid145.txt"


NVL5 = "kernel-log__gpud-xid149-145-94-nvlink5-kmsg.txt"


CHIA = "dmesg__chia-xid31-xid62-xid45-chain.txt"


@functools.lru_cache(maxsize=None)
def body(name: str) -> str:
    return text(PUBLIC / name)


def by_id(findings, fid: str) -> list[Finding]:
    return [f for f in findings if f.id == fid]


def test_xid45_caused_by_nvlink_xids_fails_naming_every_gpu():
    """Xid 45 "caused by previous Xid 149/145" (NVLink5 errors, NVIDIA Xid catalog) on four GPUs: NVLink errors
    killed the workload -> fail on each GPU (reset, check links, re-validate) plus one finding naming all four."""
    log = kl.parse_kernel_log(body(XID45))
    assert {e.fields.get("caused_by") for e in log.events} == {149, 145}
    e = explain_text(body(XID45))
    xids = by_id(e.findings, "health.xid")
    assert len(xids) == 5 and all(f.verdict is Verdict.FAIL for f in xids)
    dc = next(f for f in xids if "0000:dc:00.0" in f.subject)
    assert "caused by previous Xid 149" in dc.message and "judged as Xid 149" in dc.message
    assert "NVLink error (Xid 149) killed the workload" in dc.message
    assert "Find the Xid 149 line" in dc.remedy and "nvidia-smi nvlink -e" in dc.remedy and "re-validate" in dc.remedy
    assert "not solo" in dc.source
    summary = next(f for f in xids if f.subject == "4 GPUs")
    for bus in ("0000:dc:00.0", "0000:ed:00.0", "0000:ba:00.0", "0000:97:00.0"):
        assert bus in summary.message
    assert "Xid 145/149" in summary.message


@pytest.mark.parametrize("cause", [74, 144, 150])
def test_xid45_after_an_nvlink_xid_on_the_same_gpu_fails(cause):
    # synthetic: an NVLink Xid, then an Xid 45 on the same GPU that does not name its cause (older drivers)
    lines = (f"[  100.000001] NVRM: Xid (PCI:0000:65:00): {cause}, pid=<unknown>, name=<unknown>, NVLink: fatal error "
             "detected on link 2\n"
             "[  100.500000] NVRM: Xid (PCI:0000:65:00): 45, pid=4242, name=python3, Ch 00000010\n")
    xids = by_id(explain_text(lines).findings, "health.xid")
    assert xids and all(f.verdict is Verdict.FAIL for f in xids)
    assert any(f"NVLink error (Xid {cause}) killed the workload" in f.message for f in xids)
    assert len(xids) == 2  # one GPU: its Xid N finding and its Xid 45 finding, no all-GPU summary


def test_xid45_after_a_non_nvlink_xid_is_not_an_nvlink_kill():
    lines = ("[  100.000001] NVRM: Xid (PCI:0000:65:00): 31, pid=4242, name=python3, Ch 00000010, intr 00000000. MMU "
             "Fault\n[  100.500000] NVRM: Xid (PCI:0000:65:00): 45, pid=4242, name=python3, Ch 00000010\n"
             "[  100.600000] NVRM: Xid (PCI:0000:66:00): 74, pid=<unknown>, name=<unknown>, NVLink: fatal error\n")
    xids = by_id(explain_text(lines).findings, "health.xid")
    assert not any("killed the workload" in f.message for f in xids)  # the 74 is on another GPU, after the 45


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


def test_a_reset_class_xid_that_recurred_needs_the_reset_now():
    # synthetic lines in the journal form of the real RTX 5080 log (Xid 109 at driver load, five times)
    line = ("kwi 15 07:56:59 host kernel: NVRM: Xid (PCI:0000:07:00): 109, pid=326, name=modprobe, channel 0x00000007, "
            "errorString CTX SWITCH TIMEOUT, Info 0x74007\n")
    once = explain_text(line)
    (f1,) = [f for f in once.findings if f.id == "health.xid"]
    assert f1.verdict is Verdict.WARN and "needs a GPU reset" in f1.message
    twice = explain_text(line + line.replace("07:56:59", "07:57:03"))
    (f2,) = [f for f in twice.findings if f.id == "health.xid"]
    assert f2.verdict is Verdict.FAIL and "recurred (2 events)" in f2.message
