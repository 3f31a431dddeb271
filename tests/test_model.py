import json

import pytest

from wizard.model import Finding, Measure, StepStatus, Verdict, measure, overall, status_for_verdict, tightest, worst


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


def test_a_measured_value_round_trips_through_the_json_shape_and_is_added_only_when_set():
    m = Measure(182.4, 150, "GB/s", "at_least", "busbw at 8 GiB")
    f = Finding("node.allreduce", Verdict.PASS, "all-reduce ok", "host", ("8589934592 ... 182.4",), "", "nccl-tests",
                "node.allreduce", measured=m)
    d = json.loads(json.dumps(f.to_dict()))
    assert d["measured"] == {"value": 182.4, "threshold": 150.0, "unit": "GB/s", "direction": "at_least",
                             "label": "busbw at 8 GiB"}
    assert Finding.from_dict(d) == f
    plain = Finding("node.allreduce", Verdict.PASS, "ok")
    assert "measured" not in plain.to_dict()  # the contract only adds the field where a number was judged
    assert Finding.from_dict(plain.to_dict()).measured is None
    assert Finding.from_dict({**plain.to_dict(), "measured": None}).measured is None
    no_limit = Finding("health.bar1", Verdict.PASS, "BAR1", measured=Measure(64, None, "GiB", "at_least", "BAR1"))
    assert Finding.from_dict(no_limit.to_dict()) == no_limit and no_limit.measured.met is None


@pytest.mark.parametrize("bad", [
    "182 GB/s",
    {"value": 1.0, "unit": "GB/s"},
    {"value": "fast", "threshold": 1, "unit": "GB/s", "direction": "at_least"},
    {"value": 1.0, "threshold": 1, "unit": "GB/s", "direction": "above"},
    {"value": float("nan"), "threshold": 1, "unit": "GB/s", "direction": "at_least"},
    {"value": 1.0, "threshold": 1, "unit": 5, "direction": "at_least"},
])
def test_a_malformed_measured_object_raises_value_error(bad):
    d = {**Finding("a.b", Verdict.PASS, "x").to_dict(), "measured": bad}
    with pytest.raises(ValueError):
        Finding.from_dict(d)


def test_measure_text_met_and_tightest():
    floor = Measure(182.4, 150, "GB/s", "at_least", "busbw at 8 GiB")
    assert floor.text() == "busbw at 8 GiB: 182.4 GB/s, expected ≥ 150 GB/s" and floor.met is True
    narrow = Measure(8, 16, "lanes")
    assert narrow.text() == "8 lanes, expected ≥ 16 lanes" and narrow.met is False
    ceiling = Measure(20_000_001, 20_000_000, "count", "at_most")
    assert ceiling.text() == "20,000,001 count, expected ≤ 20,000,000 count" and ceiling.met is False
    assert Measure(4, 4, "GPUs", "equal").met is True
    assert measure(None, 1, "W") is None and measure(float("inf"), 1, "W") is None
    assert measure(5, float("nan"), "W") == Measure(5, None, "W")
    assert tightest([Measure(30, 15, "°C"), None, Measure(18, 15, "°C"), Measure(40, 15, "°C")]) == Measure(18, 15, "°C")
    assert tightest([None]) is None

