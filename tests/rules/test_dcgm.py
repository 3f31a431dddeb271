"""Tests of wizard/rules/dcgm.py."""

from __future__ import annotations

import functools

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers.dcgm import parse_dcgm_exporter, parse_dcgm_json, parse_dcgm_text
from wizard.rules import dcgm
from wizard.rules import dcgm as dcgm_checks

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def test_dcgm_text_cases_parse() -> None:
    d = parse_dcgm_text(text(CASES / "dcgmi-diag__t4-gpu0-cuda-busy-unavailable-fail-section.txt"))
    mem = d.results[0]
    assert mem.test == "GPU Memory" and mem.per_gpu == {1: "pass", 0: "fail"}
    assert "busy or unavailable" in mem.messages[0][0]
    d = parse_dcgm_text(text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt"))
    assert d.metadata["DCGM Version"] == "3.3.9" and d.device_ids == ["1db4"] and dcgm.finding_id(d) == "node.dcgm_l3"


def test_dcgm_json_dcgm3_and_dcgm4() -> None:
    d = parse_dcgm_json(text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm3-gpu1-memory-fail.json"))
    assert [r.test for r in d.results] == ["Denylist", "GPU Memory", "EUD Test"]
    f = dcgm.judge(d, "", {})
    fails = [x for x in f if x.verdict is Verdict.FAIL]
    assert [x.subject for x in fails] == ["GPU 1"]
    assert all(x.verdict is Verdict.SKIP for x in f if "EUD" in x.message)
    d = parse_dcgm_json(text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm4-entity-pcie-skip.json"))
    assert d.metadata["DCGM Version"] == "4.2.3"
    f = dcgm.judge(d, "", {})
    assert [x.verdict for x in f if x.subject == "GPU 0"] == [Verdict.WARN]  # skip is not pass
    assert [x.verdict for x in f if x.subject == "GPU 1"] == [Verdict.PASS]


def test_dcgm_any_failed_test_fails_and_pcie_only_nvlink_is_false_alarm() -> None:
    head = text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt")
    # every DCGM test must pass for acceptance: a failed Targeted Power is no longer a mere warning
    body = head.replace("| Targeted Power            | Pass - All ", "| Targeted Power            | Fail - All ")
    f = dcgm.judge(parse_dcgm_text(body), body, {})
    assert [x.verdict for x in f if "Targeted Power" in x.message] == [Verdict.FAIL]
    # a hand-made NVLink row on the real V100 PCIe (1db4) run: no real PCIe-SKU sample with it at hand
    body = head.replace("| PCIe                      | Pass - All ",
                        "| NVLink                    | Fail - All                                     |\n"
                        "| Warning                   | GPU 0 NvLink 0 is down                         |\n"
                        "| PCIe                      | Pass - All ")
    f = dcgm.judge(parse_dcgm_text(body), body, {})
    nv = [x for x in f if "NVLink" in x.message]
    assert nv and nv[0].verdict is Verdict.SKIP and "false alarm" in nv[0].message


def test_dcgm_metadata_only_is_unknown() -> None:
    body = "\n".join(text(CASES / "dcgmi-diag__l40s-4gpu-dcgm423-header-partial.txt").splitlines()[:10])
    e = explain_text(body)
    assert e.kind == "dcgmi-diag" and e.verdict is Verdict.UNKNOWN


FM_DOWN = "dcgmi-diag__r3-8xh100-cuinit-system-not-yet-initialized-fm-down.txt"


PM_FAIL = "dcgmi-diag__r4-rtx2060s-persistence-fail-memtest-pass.txt"


@functools.lru_cache(maxsize=None)
def body(name: str) -> str:
    return text(PUBLIC / name)


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


def test_dcgm_excerpt_rows_are_judged_and_say_the_rest_of_the_run_is_not_in_the_paste() -> None:
    # NVIDIA/DCGM#49: only the Integration rows of a run, no banner/header/metadata, last row cut
    body = text(PUBLIC / "dcgmi-diag__dcgm49-a100-pcie-fail-all-nvlink-down-excerpt.txt")
    e = explain_text(body)
    assert e.kind == "dcgmi-diag" and e.verdict is Verdict.FAIL
    f = [x for x in e.findings if x.verdict is Verdict.FAIL][0]
    assert "'PCIe'" in f.message and "NvLink link 0 is currently down" in f.message
    assert "excerpt" in f.message and "level and its other tests are not in it" in f.message
    # said once, on the worst finding, not on every GPU's line (walk 38 #22)
    assert sum("excerpt" in x.message for x in e.findings) == 1
    # the PCIe failure rests on NVLink-down rows: the remedy covers both an NVLink board and a PCIe card
    assert "nvidia-smi nvlink -s" in f.remedy and "false alarm" in f.remedy and "DCGM/issues/49" in f.source
    # a whole run is not called an excerpt
    whole = text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt")
    assert not any("excerpt" in x.message for x in dcgm.judge(parse_dcgm_text(whole), whole, {}))


def test_dcgm_narrow_hand_cut_rows_are_recognised_and_judged() -> None:
    # synthetic: rows re-typed at a narrower width, no borders (no real sample of this shape at hand)
    body = ("| Memory  | Fail - GPU: 0 |\n"
            "| Warning | GPU 0 had uncorrectable memory errors and row remapping failed. |\n"
            "| PCIe    | Pass - All    |\n")
    e = explain_text(body)
    assert e.kind == "dcgmi-diag" and e.verdict is Verdict.FAIL
    f = [x for x in e.findings if x.verdict is Verdict.FAIL][0]
    assert f.subject.startswith("GPU 0") and "'Memory'" in f.message and "excerpt" in f.message


def test_dcgm_paste_cut_inside_the_deployment_checks_is_unknown() -> None:
    # IBM/autopilot#68 (4x A100 PCIe, -r 3): the paste stops after three deployment checks
    body = text(PUBLIC / "dcgmi-diag__autopilot68-4xa100pcie-r3-header-partial.txt")
    d = parse_dcgm_text(body)
    assert d.banner and d.header and not d.closed and not d.excerpt
    f = dcgm.judge(d, body, {})
    unk = [x for x in f if x.verdict is Verdict.UNKNOWN]
    assert len(unk) == 1 and "ends inside the deployment checks" in unk[0].message
    assert unk[0].evidence == ("| CUDA Main Library         | Pass                                           |",)
    # the same run closed after the deployment rows (a level-1 run) is a pass
    closed = body + "+---------------------------+------------------------------------------------+\n"
    assert not [x for x in dcgm.judge(parse_dcgm_text(closed), closed, {}) if x.verdict is not Verdict.PASS]


def test_dcgmi_health_tree_form_warning_names_gpu_system_and_message() -> None:
    """DCGM user guide, Health and Diagnostics: Healthy / Warning / Failure per watched system. The real L4 report
    (tree form, DCGM 3.x/4.x) has one Power system warning on GPU 0 with DCGM's three message rows joined."""
    from wizard.parsers.dcgm import parse_dcgm_health

    h = parse_dcgm_health(text(PUBLIC / "dcgmi-health__l4-power-system-warning-tree-form.txt"))
    assert h.overall == "warning" and h.gpus == {0: "warning"}
    assert [(i.gpu, i.system, i.state) for i in h.incidents] == [(0, "Power", "warning")]
    assert h.incidents[0].message.endswith("This GPU can still perform workload.")
    f = dcgm.judge_health(h, "")
    assert [x.verdict for x in f] == [Verdict.WARN] and f[0].subject == "GPU 0"


def test_dcgmi_health_json_healthy_passes_and_says_it_is_passive() -> None:
    r = explain_text(text(PUBLIC / "dcgmi-health-json__8gpu-healthy-while-gpu1-needs-reset.txt"), "x")
    assert r.kind == "dcgmi-health" and r.verdict is Verdict.PASS
    assert "not a diagnostic run" in r.findings[0].message


def test_dcgmi_health_failure_fails_and_watches_off_is_unknown() -> None:
    """A Failure state fails (the same rows with the state changed: synthetic); watches not enabled is unknown."""
    from wizard.parsers.dcgm import parse_dcgm_health

    t = text(PUBLIC / "dcgmi-health__l4-power-system-warning-tree-form.txt").replace("Warning ", "Failure ")
    assert [x.verdict for x in dcgm.judge_health(parse_dcgm_health(t), t)] == [Verdict.FAIL]
    off = "Error: Health watches not enabled. Please enable watches.\n"
    r = explain_text(off, "x")
    assert r.kind == "dcgmi-health" and r.verdict is Verdict.UNKNOWN and "dcgmi health -s a" in r.findings[0].remedy


# ------------------------------------------------------------------ dcgmi discovery -l and dcgmi dmon


def test_discovery_counts_against_the_plan_and_the_sxm_board() -> None:
    from wizard.parsers.dcgm import parse_dcgmi_discovery

    t = text(PUBLIC / "dcgmi-discovery__8x-h800-sxm-0-nvswitches.txt")
    f = {x.id: x for x in dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {})}
    assert f["health.gpu_count"].verdict is Verdict.PASS and f["health.nvlink"].verdict is Verdict.WARN
    assert "0 NVSwitches" in f["health.nvlink"].message and "nscq" in f["health.nvlink"].remedy
    f = {x.id: x for x in dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {"gpu_count": 16})}
    assert f["health.gpu_count"].verdict is Verdict.FAIL and "expects 16" in f["health.gpu_count"].message
    t = text(PUBLIC / "dcgmi-discovery__7x-b300-sxm6-0-nvswitches.txt")
    f = {x.id: x for x in dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {})}
    assert f["health.gpu_count"].verdict is Verdict.WARN and "7 suggests a GPU is missing" in f["health.gpu_count"].message
    f = {x.id: x for x in dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {"gpu_count": 7})}
    assert f["health.gpu_count"].verdict is Verdict.PASS


def test_discovery_pcie_cards_need_no_nvswitch() -> None:
    from wizard.parsers.dcgm import parse_dcgmi_discovery

    for name in ("dcgmi-discovery__1x-v100-pcie-16gb.txt", "dcgmi-discovery__rtx3090-8-found-4-listed-grace-cpus-partial.txt"):
        t = text(PUBLIC / name)
        f = dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {})
        assert [(x.id, x.verdict) for x in f] == [("health.gpu_count", Verdict.PASS)]
    t = "Error: unable to establish a connection to the specified host: localhost\n"
    assert dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {})[0].verdict is Verdict.UNKNOWN


def test_discovery_gpus_named_null_warn_as_dcgm_unable_to_read_nvml() -> None:
    """NVIDIA/DCGM#229: 4x H100 SXM listed by bus id and UUID, every name DCGM's blank string <<<NULL>>>."""
    r = explain_text(text(PUBLIC / "dcgmi-discovery__4x-h100-name-null-partial.txt"))
    f = {x.id: x for x in r.findings}
    assert r.kind == "dcgmi-discovery" and r.verdict is Verdict.WARN
    assert f["health.gpu_count"].verdict is Verdict.PASS and "<<<NULL>>>" not in f["health.gpu_count"].message
    w = f["driver.dcgm"]
    assert w.verdict is Verdict.WARN and w.message.startswith("every GPU DCGM lists (2 in this paste) has the name <<<NULL>>>")
    assert "cannot read their names from NVML" in w.message and "not a GPU fault" in w.message
    assert "nvidia-smi -L" in w.remedy and "restart nvidia-dcgm" in w.remedy and "DCGM_STR_BLANK" in w.source
    assert len(w.evidence) == 2 and all("Name: <<<NULL>>>" in e for e in w.evidence)


def test_discovery_one_blank_name_among_named_gpus_is_named() -> None:
    from wizard.parsers.dcgm import parse_dcgmi_discovery

    # the real file with GPU 0's name put back (a variant made here): only GPU 1 is blank
    t = text(PUBLIC / "dcgmi-discovery__4x-h100-name-null-partial.txt").replace(
        "| 0      | Name: <<<NULL>>>        ", "| 0      | Name: NVIDIA H100 80GB HBM3", 1)
    f = {x.id: x for x in dcgm.judge_discovery(parse_dcgmi_discovery(t), t, {})}
    assert f["driver.dcgm"].message.startswith("GPU 1 has the name <<<NULL>>>")
    assert "NVIDIA H100 80GB HBM3" in f["health.gpu_count"].message
    named = text(PUBLIC / "dcgmi-discovery__1x-v100-pcie-16gb.txt")
    assert "driver.dcgm" not in {x.id for x in dcgm.judge_discovery(parse_dcgmi_discovery(named), named, {})}


def test_dmon_xid_by_the_xid_table_ecc_and_replay_warn() -> None:
    from wizard.parsers.dcgm import parse_dcgmi_dmon

    t = text(SYNTHETIC / "synthetic_dcgmi-dmon__xider-79-gpu1-ecc-replay.txt")
    f = dcgm.judge_dmon(parse_dcgmi_dmon(t), t, {})
    by = {(x.id, x.subject): x for x in f if x.verdict is not Verdict.PASS}
    assert by[("health.xid", "GPU 1")].verdict is Verdict.FAIL and "Xid 79" in by[("health.xid", "GPU 1")].message
    assert by[("health.pcie_errors", "GPU 2")].verdict is Verdict.WARN
    assert by[("health.ecc", "GPU 2")].verdict is Verdict.WARN and "single-bit" in by[("health.ecc", "GPU 2")].message
    assert by[("health.ecc", "GPU 3")].verdict is Verdict.WARN and "double-bit" in by[("health.ecc", "GPU 3")].message
    # an application-class Xid warns instead of failing
    t2 = "#Entity   XIDER\nID\nGPU 0     13\n"
    assert [x.verdict for x in dcgm.judge_dmon(parse_dcgmi_dmon(t2), t2, {})] == [Verdict.WARN]


def test_dmon_without_error_fields_or_samples() -> None:
    from wizard.parsers.dcgm import parse_dcgmi_dmon

    t = text(PUBLIC / "dcgmi-dmon__8gpu-temp-power-energy-util-idle-partial.txt")
    assert [x.verdict for x in dcgm.judge_dmon(parse_dcgmi_dmon(t), t, {})] == [Verdict.SKIP]
    t = text(PUBLIC / "dcgmi-dmon__l40s-fp64a-feature-not-supported.txt")
    f = dcgm.judge_dmon(parse_dcgmi_dmon(t), t, {})
    assert [x.verdict for x in f] == [Verdict.UNKNOWN] and "Feature not supported" in f[0].message


def test_dcgm_json_with_elisions_and_cut_short_is_still_read() -> None:
    """The real DCGM#139 paste: the reporter elided a category as {"..."} and the paste stops mid-array (invalid
    JSON). The elision marks are dropped and the open brackets closed: the five tests it shows are read (all Skip)."""
    d = parse_dcgm_json(text(PUBLIC / "dcgmi-diag-json__r3-t400-all-skip-elided-partial.txt"))
    assert [r.test for r in d.results] == ["PCIe", "GPU Memory", "Diagnostic", "EUD Test", "Targeted Stress"]
    assert {s for r in d.results for s in r.per_gpu.values()} == {"skip"}


def test_a_closed_level_2_table_with_an_empty_stress_section_is_whole():
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "dcgmi-diag__r2-p4de.txt"))
    assert r.verdict.value == "pass" and not any("section header" in f.message for f in r.findings)


def _row(name: str, cell: str) -> str:
    """One row of a DCGM 3.x table, padded as dcgmi pads it (27 + 48 characters between the bars)."""
    return f"| {name:<26}| {cell:<47}|"


def test_dcgm_failed_diagnostic_miscompare_fails_not_warns() -> None:
    head = text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt")
    body = head.replace(_row("Diagnostic", "Pass - All"),
                        _row("Diagnostic", "Fail - All") + "\n" + _row("Warning", "GPU 0 Detected 12 miscompares"))
    assert body != head
    f = dcgm.judge(parse_dcgm_text(body), body, {})
    diag = [x for x in f if "'Diagnostic'" in x.message]
    assert [x.verdict for x in diag] == [Verdict.FAIL] and "miscompares" in diag[0].message


def _json_with(pcie_gpu0: str) -> str:
    body = text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm4-entity-pcie-skip.json")
    old = ('"entity_id": 0, "status": "Skip",\n'
           '               "info": ["The test was skipped because its plugin is not available for this GPU."]}')
    assert old in body
    return body.replace(old, f'"entity_id": 0, {pcie_gpu0}}}')


def test_dcgm_json_error_category_and_severity_word_the_remedy() -> None:
    body = _json_with('"status": "Fail", "errors": [{"error_id": 42, "category": 13, "severity": 2, '
                      '"error": "GPU 0 is running at PCI link width 8X"}]')
    f = dcgm.judge(parse_dcgm_json(body), body, {})
    g0 = [x for x in f if x.subject == "GPU 0"]
    assert [x.verdict for x in g0] == [Verdict.FAIL]
    assert "hardware PCIe" in g0[0].message and g0[0].remedy.startswith("DCGM rates it 'isolate'")
    # DCGM_FR_EC_INTERNAL_OTHER: DCGM's own error, not the GPU's
    body = _json_with('"status": "Fail", "errors": [{"error_id": 1, "category": 16, "severity": 3, '
                      '"error": "plugin setup"}]')
    g0 = [x for x in dcgm.judge(parse_dcgm_json(body), body, {}) if x.subject == "GPU 0"]
    assert [x.verdict for x in g0] == [Verdict.UNKNOWN] and "internal" in g0[0].message


def test_dcgm_unknown_status_is_unknown_and_cut_json_is_said() -> None:
    body = _json_with('"status": "banana"')
    g0 = [x for x in dcgm.judge(parse_dcgm_json(body), body, {}) if x.subject == "GPU 0"]
    assert [x.verdict for x in g0] == [Verdict.UNKNOWN] and "banana" in g0[0].message
    whole = text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm4-entity-pcie-skip.json")
    cut = whole[:whole.index('"category": "Deployment"') + 30]
    d = parse_dcgm_json(cut)
    assert d.truncated
    f = dcgm.judge(d, cut, {})
    assert [x.verdict for x in f] == [Verdict.UNKNOWN] and "truncated" in f[0].message
    cut = whole[:whole.index('"name": "pcie"') + 20]
    f = dcgm.judge(parse_dcgm_json(cut), cut, {})
    assert any(x.verdict is Verdict.UNKNOWN and "cut short" in x.message for x in f)


def test_dcgm_planned_gpu_without_result_fails() -> None:
    import dataclasses

    body = text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm4-entity-pcie-skip.json").replace('"Skip"', '"Pass"')
    d = dataclasses.replace(parse_dcgm_json(body), level=2)
    assert not [x for x in dcgm.judge(d, body, {"gpu_count": 2}) if x.verdict is not Verdict.PASS]
    miss = [x for x in dcgm.judge(d, body, {"gpu_count": 4}) if x.verdict is Verdict.FAIL]
    assert len(miss) == 1 and miss[0].id == "gpu.dcgm_l2" and "GPU 2, GPU 3" in miss[0].message
    # the real V100 run: one device id, "Pass - All"; a plan of 2 GPUs leaves GPU 1 untested
    v100 = text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt")
    miss = [x for x in dcgm.judge(parse_dcgm_text(v100), v100, {"gpu_count": 2}) if x.verdict is Verdict.FAIL]
    assert len(miss) == 1 and miss[0].id == "node.dcgm_l3" and "GPU 1" in miss[0].message
    # no device ids and no per-GPU result: how many GPUs were tested cannot be told
    blind = "\n".join(ln for ln in v100.splitlines() if "Device IDs" not in ln)
    f = dcgm.judge(parse_dcgm_text(blind), blind, {"gpu_count": 2})
    assert any(x.verdict is Verdict.UNKNOWN and "cannot be told" in x.message for x in f)


def test_dcgm_exporter_metrics_are_judged_as_the_dcgm_fields_they_are() -> None:
    """Held-out r99: dcgm-exporter's Prometheus metrics (what a fleet scrapes) were not recognised. The DCGM_FI_* samples
    are read with prometheus_client's exposition parser into the dmon shape and judged by the same rules: the last Xid
    by the Xid table, ECC and PCIe replay counters, and the NVLink-C2C link of Grace-Hopper/Blackwell boards."""
    zeros = explain_text(text(PUBLIC / "dcgm-exporter-metrics__a30-mig-1g6gb-xid-errors-all-zero-partial.txt"))
    assert zeros.kind == "dcgm-exporter-metrics" and zeros.verdict is Verdict.PASS
    assert any(f.id == "health.xid" and "GPU 0, GPU 1" in f.message for f in zeros.findings)  # MIG series: one per GPU
    c2c = explain_text(text(PUBLIC / "dcgm-exporter-metrics__4xgb200-c2c-link-status-all-active-partial.txt"))
    assert [(f.id, f.verdict) for f in c2c.findings] == [("health.nvlink", Verdict.PASS)]
    assert "active on 4 GPU(s)" in c2c.findings[0].message
    bad = explain_text(text(SYNTHETIC / "synthetic_dcgm-exporter__xid79-gpu1-dbe-c2c-down.txt"))
    by = {(f.id, f.verdict): f for f in bad.findings}
    assert bad.verdict is Verdict.FAIL
    assert "Xid 79" in by[("health.xid", Verdict.FAIL)].message and by[("health.xid", Verdict.FAIL)].subject.startswith("GPU 1")
    assert "2 double-bit ECC errors" in by[("health.ecc", Verdict.WARN)].message
    assert "NVLink-C2C link to the CPU is inactive" in by[("health.nvlink", Verdict.FAIL)].message
    # no gpu label: nothing to judge, said
    none = dcgm.judge_dmon(parse_dcgm_exporter('DCGM_FI_DEV_XID_ERRORS{Hostname="a"} 0\n'), "", {})
    assert [f.verdict for f in none] == [Verdict.UNKNOWN]


def test_dcgmi_modules_that_failed_to_load_warn_with_what_they_take_away():
    """Held-out round 118: `dcgmi modules -l` with Profiling "Failed to load": no profiling fields; Diag or Core failing
    fails (synthetic rows); lazy "Not loaded" modules pass."""
    r = explain_text(text(PUBLIC / "dcgmi-modules-l__profiling-module-failed-to-load.txt"))
    assert r.kind == "dcgmi-modules"
    f = r.findings[0]
    assert f.id == "driver.dcgm" and f.verdict is Verdict.WARN and "Profiling" in f.message
    diag = dcgm.judge_modules_text("List Modules\n| 7         | Diag               | Failed to load        |\n", {})
    assert diag[0].verdict is Verdict.FAIL
    ok = dcgm.judge_modules_text("List Modules\n| 0         | Core               | Loaded                |\n"
                                 "| 7         | Diag               | Not loaded            |\n", {})
    assert ok[0].verdict is Verdict.PASS


def test_dcgmi_stats_is_a_job_report_not_a_health_check():
    """Held-out round 118: a job's `dcgmi stats` report was read as `dcgmi health -c`. It is its own kind: a job with
    its events at 0 passes for the job; one that recorded no process says nothing (unknown)."""
    ok = explain_text(text(PUBLIC / "dcgmi-stats__slurm-epilog-job-232-single-gpu-no-ecc-no-xid-overall-healthy-partial.txt"))
    assert ok.kind == "dcgmi-stats" and ok.findings[0].verdict is Verdict.PASS and "job 232" in ok.findings[0].message
    empty = explain_text(text(PUBLIC / "dcgmi-stats-j__a100-mig-ci-job-0-processes-power-na-not-supported.txt"))
    assert empty.kind == "dcgmi-stats" and empty.findings[0].verdict is Verdict.UNKNOWN


def test_dcgm_exporter_and_host_engine_logs_judge_driver_dcgm():
    """dcgm-exporter / nv-hostengine logs (real, held-out round 132 and earlier): no NVML -> FAIL, the host engine
    lost -> FAIL, a fatal-level line -> FAIL quoting it (WARN for the exporter: monitoring), the NvSwitch libraries missing -> WARN, a clean start -> PASS."""
    from wizard.explain import explain_text

    def one(name):
        r = explain_text((PUBLIC / name).read_text(), name)
        assert r.kind == "dcgm-log", (name, r.kind)
        (f,) = [f for f in r.findings if f.id == "driver.dcgm"]
        return f

    assert one("dcgm-exporter-log__t4-gpu-operator-nvml-doesnt-exist-no-gpu-metrics.txt").verdict is Verdict.FAIL
    assert "NVML" in one("nv-hostengine-log__rosa-gpu-operator-cannot-load-nvml-proceed-without-gpus-partial.txt").message
    f = one("dcgm-exporter-log__2-1-8-hostengine-restarted-connection-invalid-stale-metrics.txt")
    assert f.verdict is Verdict.FAIL and "stale" in f.message
    f = one("dcgm-exporter-log__v100-fatal-error-adding-gpu-1-not-supported-by-dcgm.txt")
    # the exporter is monitoring: its fatal exit warns (the GPUs still work); the host engine's fails
    assert f.verdict is Verdict.WARN and "This GPU is not supported by DCGM" in f.message and "monitoring" in f.message
    f = one("nv-hostengine-log__l4-dcgm-4-0-nvswitch-nvsdm-nscq-not-loaded-no-switches-partial.txt")
    assert f.verdict is Verdict.WARN and "NSCQ" in f.message
    assert one("dcgm-exporter-log__3-1-7-dcp-collecting-no-switches-pipeline-started-healthy.txt").verdict is Verdict.PASS


def test_dcgmi_discovery_c_reads_the_mig_hierarchy_and_an_unreachable_host_engine_fails_driver_dcgm():
    """``dcgmi discovery -c`` (real, held-out round 132): health.mig PASS with each GPU's instances; the same table with
    one compute instance removed (synthetic, built here) WARNs naming the empty GPU instance; a dcgmi that could not
    reach the host engine (real) fails driver.dcgm."""
    from wizard.explain import explain_text

    text = (PUBLIC / "dcgmi-discovery-c__mig-hierarchy-2-gpus-2-gi-ci-each-healthy-partial.txt").read_text()
    r = explain_text(text, "c")
    assert r.verdict is Verdict.PASS and "GPU 1: 2 GPU instance(s), 2 compute instance(s)" in r.findings[0].message
    empty = "\n".join(ln for ln in text.splitlines() if "CI 1/2/0" not in ln)
    w = explain_text(empty, "synthetic_gi_without_ci")
    assert w.verdict is Verdict.WARN and "1/2" in w.findings[0].message
    down = explain_text((PUBLIC / "dcgmi-discovery__remote-host-unable-to-connect-host-engine-disconnected.txt")
                        .read_text(), "d")
    assert any(f.id == "driver.dcgm" and f.verdict is Verdict.FAIL for f in down.findings)


def test_dcgm_fragments_judged_by_their_own_words():
    """Held-out rounds 151 and 155: one GPU's `dcgmi diag -j` result object cut from its test (a string wrapped onto a
    second line), and a Deployment 'Error' row whose test row is cut off above it."""
    j = explain_text(text(PUBLIC / "dcgmi-diag-json__80gb-gpu5-diagnostic-511-gflops-below-threshold-partial.txt"))
    assert j.kind == "dcgmi-diag-json" and j.verdict is Verdict.FAIL
    assert any("GPU 5" in f.message and "511.70 GFLOPs" in f.message for f in j.findings)
    e = explain_text(text(PUBLIC / "dcgmi-diag__h100-node-gpu3-uncorrectable-memory-errors-row-remap-pending-partial.txt"))
    assert e.verdict is Verdict.FAIL and "GPU 3: DCGM reports an error in its Deployment checks" in e.findings[0].message


def test_dcgm_exporter_slog_errors_and_skipped_profiling_metrics():
    nvml = explain_text(text(PUBLIC / "dcgm-exporter-log__k8s-exporter-4.8.4-nvml-library-not-found-exits.txt"))
    assert nvml.verdict is Verdict.FAIL and "cannot load the driver's NVML" in nvml.findings[0].message
    dcp = explain_text(text(PUBLIC / "dcgm-exporter-log__centos79-k8s120-dcp-module-not-loaded-profiling-skipped.txt"))
    assert dcp.verdict is Verdict.WARN and "no profiling (DCP) metrics" in dcp.findings[0].message  # a monitoring gap
    assert "DCGM_FI_PROF_*" in dcp.findings[0].remedy


def test_dcgm_exporter_crash_in_the_go_runtime_is_a_fatal_error():
    """Held-out round 280 (real): dcgm-exporter started, then 'SIGSEGV: segmentation violation' in
    dcgmGetDeviceTopology and a goroutine dump: it was read as a clean start (pass); the Go runtime's crash is the
    process ending: fail, quoting it."""
    (f,) = explain_text(text(PUBLIC / "dcgm-exporter-log__kind-gpu-operator-sigsegv-device-topology.txt")).findings
    assert f.id == "driver.dcgm" and f.verdict is Verdict.WARN and "SIGSEGV: segmentation violation" in f.message
