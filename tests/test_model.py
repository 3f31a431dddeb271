from wizard.model import Finding, StepStatus, Verdict, overall, status_for_verdict, worst


def test_worst_follows_contract_order():
    # DESIGN.md: fail > warn > unknown > pass > skip
    assert worst([Verdict.SKIP, Verdict.PASS]) is Verdict.PASS
    assert worst([Verdict.PASS, Verdict.UNKNOWN]) is Verdict.UNKNOWN
    assert worst([Verdict.UNKNOWN, Verdict.WARN]) is Verdict.WARN
    assert worst([Verdict.WARN, Verdict.FAIL, Verdict.PASS]) is Verdict.FAIL
    assert worst([]) is Verdict.SKIP


def test_exit_codes_follow_nhc_convention():
    assert Verdict.PASS.exit_code == 0
    assert Verdict.SKIP.exit_code == 0
    assert Verdict.WARN.exit_code == 1
    assert Verdict.UNKNOWN.exit_code == 1
    assert Verdict.FAIL.exit_code == 2


def test_finding_round_trips_through_json_shape():
    f = Finding("health.gpu_pci", Verdict.FAIL, "no NVIDIA GPU on the PCI bus", "host",
                ("line [with] brackets",), "reseat", "catalogue A1", "health.gpu_pci")
    d = f.to_dict()
    assert set(d) >= {"id", "verdict", "subject", "message", "evidence", "remedy", "source"}
    assert d["verdict"] == "fail"
    assert Finding.from_dict(d) == f


def test_status_after_a_check():
    assert status_for_verdict(Verdict.PASS) is StepStatus.PASSED
    assert status_for_verdict(Verdict.WARN) is StepStatus.WARNED  # a warning is not a pass
    assert status_for_verdict(Verdict.FAIL) is StepStatus.FAILED
    assert status_for_verdict(Verdict.SKIP) is StepStatus.SKIPPED  # not applicable is not "passed"
    # unknown means nothing was verified: the step stays open
    assert status_for_verdict(Verdict.UNKNOWN) is StepStatus.PENDING
    assert overall([]) is Verdict.SKIP


def test_warned_is_done_but_cpu_only_is_not():
    """warned: checked, with warnings the operator can read (the stage moves on, rolled up as warned);
    cpu-only: a GPU validation that ran on the CPU never counts as done."""
    assert StepStatus.WARNED.done and StepStatus.WARNED is not StepStatus.PASSED
    assert not StepStatus.CPU_ONLY.done and StepStatus.CPU_ONLY.value == "cpu-only"
    assert {s.value for s in StepStatus} >= {"pending", "running", "passed", "confirmed", "failed", "skipped",
                                             "interrupted", "warned", "cpu-only"}  # only ever added
