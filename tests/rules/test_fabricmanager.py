"""Tests of wizard/rules/fabricmanager.py and wizard/parsers/fabricmanager.py (Fabric Manager's own log)."""

from __future__ import annotations

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers.fabricmanager import detect_fm_log, parse_fm_log
from wizard.rules.fabricmanager import judge_fm_log_text

from tests.probe_data import PUBLIC, text

LOG = PUBLIC / "fabricmanager-log__nvswitch-nonfatal.txt"


def test_real_log_with_a_non_fatal_nvswitch_error_warns_naming_switch_and_port():
    body = text(LOG)
    log = parse_fm_log(body)
    assert log.records[0].level == "INFO" and log.records[-1].level == "ERROR"
    fs = judge_fm_log_text(body, {})
    assert [f.verdict for f in fs] == [Verdict.WARN]
    assert "non-fatal" in fs[0].message and "physical id 3 port 61" in fs[0].message and fs[0].remedy
    # it is Fabric Manager's log, not a kernel log whose bracketed stamps it resembles
    assert detect_fm_log(body) > 0.9 and explain_text(body).kind == "fabricmanager-log"


def test_fatal_error_fails_and_info_only_passes():
    info = "\n".join(line for line in text(LOG).splitlines() if "[ERROR]" not in line)
    assert [f.verdict for f in judge_fm_log_text(info, {})] == [Verdict.PASS]
    fatal = info + ("\n[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch fatal error 20034 on fid 0 on "
                    "NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61\n")
    fs = judge_fm_log_text(fatal, {})
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "reset" in fs[0].remedy


def test_the_start_scripts_unknown_option_is_fabric_manager_not_started():
    """The real console output of Fabric Manager's NVLink5 start script rejecting its arguments (held-out round 11,
    NVIDIA/gpu-operator#1595): recognised as Fabric Manager's, and a failure with how to start it."""
    body = text(PUBLIC / "fabricmanager__nvlink5-start-script-unknown-option.txt")
    assert detect_fm_log(body) == 0.9 and parse_fm_log(body).start_errors
    r = explain_text(body)
    (f,) = r.findings
    assert r.kind == "fabricmanager-log" and f.verdict is Verdict.FAIL and "Unknown option" in f.message
    assert "systemctl enable --now nvidia-fabricmanager" in f.remedy


def test_a_refused_nvlink_multicast_team_fails_and_other_errors_get_no_nvswitch_remedy():
    """Held-out round 34 (an expert's fail): Fabric Manager logged "failed to find the GPU handle ... in the multicast
    team request setup" and answered status 57: NCCL's NVLS cannot run. A plain ERROR record is still a warning, but
    its remedy no longer says "non-fatal NVSwitch errors are corrected by the hardware"."""
    from tests.probe_data import PUBLIC, text
    from wizard.model import Verdict
    from wizard.rules.fabricmanager import judge_fm_log_text

    (f,) = judge_fm_log_text(text(PUBLIC / "fabricmanager__multicast-team-setup-gpu-handle-not-found.txt"), {})
    assert f.verdict is Verdict.FAIL and "NVLink multicast (NVLS) team" in f.message and "status 57" in f.message
    assert "NCCL_NVLS_ENABLE=0" in f.remedy
    plain = "[Oct 31 2023 21:11:20] [ERROR] [tid 1] could not read the topology file\n"  # synthetic_
    (w,) = judge_fm_log_text(plain, {})
    assert w.verdict is Verdict.WARN and "Non-fatal NVSwitch" not in w.remedy


def test_imex_ctl_passes_a_connected_domain_and_fails_a_lost_connection():
    """`nvidia-imex-ctl -N` of 18 GB200 nodes (real, held-out round 139): all READY, all C, domain UP -> multinode.imex
    PASS; the same with one connection D and the domain DEGRADED (synthetic, built here) -> FAIL naming them."""
    from wizard.explain import explain_text

    text = (PUBLIC / "nvidia-imex-ctl-N__18x-p6e-gb200-ultraserver-all-ready-connected-domain-up.txt").read_text()
    r = explain_text(text, "imex")
    assert r.kind == "nvidia-imex-ctl" and r.verdict is Verdict.PASS and "18 node(s)" in r.findings[0].message
    lines = text.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.strip().startswith("3 ") and ln.count(" C") > 10)
    lines[row] = lines[row][::-1].replace("C", "D", 1)[::-1]
    broken = "\n".join(lines).replace("Domain State: UP", "Domain State: DEGRADED")
    b = explain_text(broken, "synthetic_imex")
    assert b.verdict is Verdict.FAIL and "3->17 D" in b.findings[0].message and "DEGRADED" in b.findings[0].message


def test_one_fabric_manager_record_pasted_alone_is_read_and_an_abort_fails():
    """Held-out round 160: single Fabric Manager lines (one without its [tid N]) are its log, not a kernel log; the
    NVSwitch-count mismatch that aborts Fabric Manager leaves the fabric unset: fail."""
    for name, verdict in (("fabricmanager-log__nvswitch-fatal-error-20034-physical-id-3-port-33.txt", Verdict.FAIL),
                          ("fabricmanager-log__nvswitch-count-mismatch-aborting-fabric-manager.txt", Verdict.FAIL),
                          ("fabricmanager-log__multicast-team-setup-failed-to-find-gpu-handle.txt", Verdict.FAIL)):
        r = explain_text(text(PUBLIC / name))
        assert r.kind == "fabricmanager-log" and r.verdict is verdict, (name, r.kind, r.verdict)


def test_the_imex_daemons_log_is_named_and_a_peer_retried_for_ever_fails():
    """Held-out round 229 (real): a compute-domain daemon at attempt #557516 to nodes 13 and 15 (the domain never
    formed); and a healthy single-node IMEX start (public, connected to its one node)."""
    (f,) = judge_fm_log_text(text(PUBLIC / "imex-log__compute-domain-daemon-peer-connect-retries.txt"), {})
    assert f.verdict is Verdict.FAIL and "node(s) 13, 15" in f.message and "557516" in f.message
    (ok,) = judge_fm_log_text(text(PUBLIC / "nvidia-imex-log__gb200-computedomain-570.124.06-single-node-connected-"
                                            "gpu-event-subscribed-healthy-partial.txt"), {})
    assert ok.verdict is Verdict.PASS and "IMEX daemon" in ok.message and "connected to 1 node" in ok.message
