"""Engine behaviour: probes run concurrently, a crashing check is contained, reboot detection."""

from __future__ import annotations

import asyncio
import time

import pytest

import steps
from tests.conftest import frozen_clock
from wizard.engine import Build, judge, run_checks
from wizard.hosts import CommandResult
from wizard.model import Finding, Step, Verdict
from wizard.probes import ProbeOutput


def test_a_crashing_check_becomes_unknown_and_others_still_run(monkeypatch):
    from wizard import registry

    def boom(out, plan):
        raise RuntimeError("bug")

    def fine(out, plan):
        return [Finding("x.fine", Verdict.PASS, "ok")]

    monkeypatch.setattr(registry, "RULES", (registry.Rule("x.boom", "x.boom", boom, ()),
                                            registry.Rule("x.fine", "x.fine", fine, ())))
    res = judge([Step("x.boom", "t", "w"), Step("x.fine", "t", "w")], {}, {})
    assert res["x.boom"][0].verdict is Verdict.UNKNOWN and "bug" in res["x.boom"][0].message
    assert res["x.fine"][0].verdict is Verdict.PASS and res["x.fine"][0].step == "x.fine"


class SlowHost:
    """Every command takes 0.3 s: four of them concurrently must take ~0.3 s, not 1.2 s."""

    name = "slow"

    async def run(self, argv, timeout_s=20):
        await asyncio.sleep(0.3)
        return CommandResult(list(argv), 0, b"ok\n")

    async def read(self, path):  # pragma: no cover - not used
        raise AssertionError

    async def glob(self, pattern):  # pragma: no cover
        return []

    async def builtin(self, name):  # pragma: no cover
        raise AssertionError


def test_resume_goes_on_from_the_last_visited_step_to_the_next_open_one(state_dir):
    """Issue 15: resuming at the step visited last when it is still open, past it when it is done (to the first
    open step after it, else before it), and at it when every step is done."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm"}, create=True, clock=frozen_clock)
    ids = [s.id for s in b.steps()]
    b.set_cursor("plan.host")
    assert b.resume_point().step.id == "plan.host"  # visited, still open: there
    b.confirm("plan.host")
    b.skip("plan.power", "existing rack")
    assert b.resume_point().step.id == ids[ids.index("plan.power") + 1]  # done: the next open one after it
    for sid in ids[ids.index("plan.host"):]:
        b.skip(sid, "test")
    assert b.resume_point().step.id == "plan.workload"  # only one open step left, before the visited one
    b.skip("plan.workload", "test")
    assert b.resume_point().step.id == "plan.host"  # all done: where the operator was
    b.close()


def test_probes_run_concurrently(monkeypatch):
    from wizard import registry
    from wizard.probes import command_probe

    names = []
    extra = dict(registry.PROBES)
    for i in range(4):
        n = f"test_slow_{i}"
        extra[n] = command_probe(n, "slow", ["true", str(i)])
        names.append(n)
    monkeypatch.setattr(registry, "PROBES", extra)
    step = Step("x.slow", "t", "w")
    monkeypatch.setattr(registry, "RULES", (registry.Rule("x.slow", "x.slow", lambda out, plan: [
        Finding("x.slow", Verdict.PASS, ",".join(sorted(out)))], tuple(names)),))
    t0 = time.monotonic()
    res, outs = asyncio.run(run_checks(SlowHost(), [step], {}))
    took = time.monotonic() - t0
    assert set(outs) == set(names) and all(o.text == "ok\n" for o in outs.values())
    assert took < 0.9, took  # sequential would be >= 1.2 s


def test_reboot_marks_boot_sensitive_steps_for_recheck(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    b.record_findings("bios.iommu", [Finding("bios.iommu", Verdict.PASS, "off")], frozen_clock())
    b.record_findings("os.memory", [Finding("os.memory", Verdict.PASS, "512 GiB")], frozen_clock())
    assert not b.stale("bios.iommu")
    b.close()
    after = Build.open(state_dir, steps.STAGES, {"boot_id": "boot-2"})
    assert after.stale("bios.iommu")  # boot-sensitive, verified under boot-1
    assert not after.stale("os.memory")  # not boot-sensitive
    after.close()


def test_skip_verdict_skips_the_step_with_the_reason(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.record_findings("health.nvml", [Finding("health.nvml", Verdict.SKIP, "no NVIDIA GPU on the PCI bus")],
                      frozen_clock())
    st = b.store.step_states()["health.nvml"]
    assert st.status.value == "skipped" and "no NVIDIA GPU" in st.reason
    b.close()


def test_a_persons_skip_stands_through_later_checks_unless_one_passes(state_dir):
    """Walk 24: `bringup check` turned os.tools, skipped by a person ("VM: no PCI devices to list"), back to failed and
    the reason, who and when were gone. A person's skip stands as a confirmation does; the findings are still stored;
    a check that passes the step passes it; the machine's own "not applicable" skip is not a person's."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    fail = [Finding("os.tools", Verdict.FAIL, "lspci: command not found")]
    b.record_findings("os.tools", fail, frozen_clock())
    b.skip("os.tools", "VM: no PCI devices to list")
    for verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN):
        b.record_findings("os.tools", [Finding("os.tools", verdict, "still")], frozen_clock())
        st = b.store.step_states()["os.tools"]
        assert (st.status.value, st.reason) == ("skipped", "VM: no PCI devices to list"), verdict
    assert b.store.latest_check("os.tools")[1][0].message == "still"  # the check's findings are kept
    b.record_findings("os.tools", [Finding("os.tools", Verdict.PASS, "lspci 3.9.0")], frozen_clock())
    assert b.store.step_states()["os.tools"].status.value == "passed"
    b.record_findings("health.nvml", [Finding("health.nvml", Verdict.SKIP, "no NVIDIA GPU on the PCI bus")],
                      frozen_clock())  # the machine's skip ("not applicable: ...") follows the next check
    b.record_findings("health.nvml", [Finding("health.nvml", Verdict.FAIL, "NVML: driver not loaded")], frozen_clock())
    assert b.store.step_states()["health.nvml"].status.value == "failed"
    b.close()


def test_expectations_carry_when_the_build_started(state_dir):
    """The BMC's event log counts records from the build's start (wizard/rules/bmc.py): the engine hands it over."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    exp = b.expectations()
    assert exp["build_started"] == frozen_clock() == b.store.meta()["created"]
    b.close()


def test_prefetched_argv_are_the_probes_argv():
    """wizard.prefetch starts slow probes early by argv: they must be exactly the probes' argv,
    or the prefetch silently never gets used."""
    import sys as _sys

    from wizard import prefetch
    from wizard.hosts import RecordingHost, LocalHost
    from wizard.registry import KINDS
    from wizard.probes import BUILTINS, collect
    from wizard.registry import PROBES as REGISTRY

    pass  # the registry lists every kind and probe; nothing to load

    class Refuse(LocalHost):
        async def run(self, argv, timeout_s=20):  # record the argv without running anything
            from wizard.hosts import CommandResult
            return CommandResult(list(argv), 127, error="not run in this test")

    host = RecordingHost(Refuse(builtins=BUILTINS))
    asyncio.run(collect(host, list(REGISTRY.values())))
    ran = {tuple(op.argv) for op in host.ops if op.kind == "command"}
    for argv in prefetch.PREFETCH:
        if argv == prefetch.NVML_ARGV:
            assert argv[0] == _sys.executable
            continue
        assert argv in ran, argv


def test_a_prefetched_process_is_taken_once(tmp_path):
    from wizard import prefetch
    from wizard.hosts import LocalHost

    argv = ("echo", "prefetched")
    prefetch.start((argv,))
    r = asyncio.run(LocalHost().run(list(argv)))
    assert r.rc == 0 and r.stdout == b"prefetched\n"
    assert prefetch.take(argv) is None  # used up: the next run starts its own


def test_a_stage_whose_steps_were_all_skipped_is_skipped_not_passed(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    stage = steps.stage_by_id("gpu")
    for s in stage.steps:
        b.skip(s.id, "no GPU yet")
    assert b.stage_status(stage).value == "skipped"
    # a step a person does and confirms (gpu.validate, which automates it, was skipped: a note says how)
    b.confirm(next(s.id for s in stage.steps if s.manual), "nvbandwidth by hand: 55 GB/s each way")
    assert b.stage_status(stage).value == "confirmed"  # nothing in it was checked by the machine: not "passed"
    b.close()


# ------------------------------------------------------------------ statuses that never overstate

def _settle(b, step_id, log_text, tmp_path, signal_it=False):
    """Run ``step_id``'s action as a command that prints ``log_text`` (a recorded log), and settle it."""
    import signal as _signal
    import sys as _sys
    from pathlib import Path

    from wizard import actions as act
    from wizard.actions import Resolved

    src = tmp_path / "replay.log"
    src.write_text(log_text)
    code = (f"import sys, time; sys.stdout.write(open({str(src)!r}).read()); sys.stdout.flush()"
            + ("; print('replayed', flush=True); time.sleep(60)" if signal_it else ""))
    run = b.start_action(b.step(step_id), Resolved(ops=[{"argv": [_sys.executable, "-c", code]}]))
    if signal_it:
        deadline = time.monotonic() + 60
        # the printed line, not the command line the log starts with (which holds the word too)
        while "\nreplayed\n" not in Path(run.log_path).read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert act.cancel(run, "b", _signal.SIGTERM)
    return b.wait_action(run, timeout_s=120)


def test_a_validation_that_ran_on_the_cpu_is_cpu_only_never_passed(state_dir, tmp_path):
    """A CPU run proves the software path, not the GPU: cpu-only with the reason, not done, the stage not passed."""
    from tests.conftest import ROOT
    from wizard.model import StepStatus
    from wizard.rules.validate import CPU_ONLY_REASON

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    log = (ROOT / "tests" / "data" / "validate" / "node-cpu-2ranks.log").read_text()
    run = _settle(b, "node.validate", log, tmp_path)
    st = b.store.step_states()["node.validate"]
    assert run.state.value == "succeeded" and run.check_run is not None  # recorded, with its findings
    assert st.status is StepStatus.CPU_ONLY and st.reason == CPU_ONLY_REASON and st.verdict is Verdict.PASS
    assert not b.status("node.validate").done
    stage = steps.stage_by_id("node")
    for s in stage.steps:
        if s.id != "node.validate":
            if s.manual:
                with pytest.raises(ValueError, match="has not passed"):  # node.validate automates it (walk 24)
                    b.confirm(s.id)
                b.confirm(s.id, "nccl-tests run by hand on the GPUs")
            else:
                b.skip(s.id, "not this test's concern")
    assert b.stage_status(stage) is StepStatus.PENDING  # every other step done: still not passed
    b.close()


def test_a_cuda_log_is_judged_by_its_verdict_not_cpu_only(state_dir, tmp_path):
    """The same log with device cuda is not a CPU run: its status comes from its verdict."""
    from tests.conftest import ROOT
    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    log = (ROOT / "tests" / "data" / "validate" / "node-cpu-2ranks.log").read_text().replace('"device":"cpu"',
                                                                                              '"device":"cuda"')
    _settle(b, "node.validate", log, tmp_path)
    assert b.status("node.validate") is not StepStatus.CPU_ONLY
    b.close()


def test_a_warning_is_warned_and_the_stage_is_warned_not_passed(state_dir):
    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    stage = steps.stage_by_id("report")
    b.confirm("report.capture")
    b.confirm("report.document")
    b.record_findings("report.handover", [Finding("report.handover", Verdict.WARN, "a warning")], frozen_clock())
    assert b.status("report.handover") is StepStatus.WARNED and b.status("report.handover").done
    assert b.stage_status(stage) is StepStatus.WARNED
    b.record_findings("report.handover", [Finding("report.handover", Verdict.PASS, "fine")], frozen_clock())
    assert b.stage_status(stage) is StepStatus.PASSED
    b.close()


def test_cancelling_the_idle_baseline_records_cancelled_not_failed(state_dir, tmp_path):
    """An operator's cancel of a read-only action: the run is cancelled, the step pending with why, the stage
    not failed, even when what it sampled before the cancel warned."""
    import json as _json

    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    hot = {"samples": 3, "host_max_c": 40, "nvml": "ok",
           "gpus": [{"index": 0, "pci_bus_id": "0000:01:00.0", "max_temp_c": 80, "slowdown_c": 87, "samples": 3}]}
    run = _settle(b, "health.idle_baseline", "# summary " + _json.dumps(hot) + "\n", tmp_path, signal_it=True)
    st = b.store.step_states()["health.idle_baseline"]
    assert run.state.value == "cancelled"
    assert st.status is StepStatus.PENDING and "cancelled" in st.reason and "not a failure" in st.reason
    assert b.stage_status(steps.stage_by_id("health")) is not StepStatus.FAILED
    # the run's findings open with the cancel (what the action screen's result line shows), not with what the
    # judge says of the cut log
    first = b.run_findings(run)[0]
    assert "was cancelled before it finished" in first.message and first.remedy.startswith("Not a failure")
    # walk 28 #18: a cancel before any summary is said once, not again as "the baseline left no readable summary"
    early = _settle(b, "health.idle_baseline", "sampling...\n", tmp_path, signal_it=True)
    said = b.run_findings(early)
    assert [f.verdict for f in said] == [Verdict.UNKNOWN] and "was cancelled" in said[0].message, said
    assert "torchrun" not in said[0].message
    # walk 39 #1: torchrun's traceback for the cancel's SIGTERM (its elastic agent's SignalException) is said to be that
    torn = _settle(b, "health.idle_baseline", "sampling...\ntorch.distributed.elastic.multiprocessing.api.SignalException:"
                   " Process 14922 got signal: 15\n", tmp_path, signal_it=True)
    first = b.run_findings(torn)[0]
    assert "is torchrun reporting that it was stopped, not a fault" in first.message and "got signal: 15" in first.message
    b.close()


def test_a_gpu_check_skipped_for_no_gpu_waits_when_the_plan_expects_gpus(state_dir):
    """Walk finding: with 8 GPUs planned and none on the bus, every Driver & CUDA step read "n/a" (nothing to do),
    and the report left them out of the steps not done. They wait for the GPUs now; with no GPU planned they wait
    for one too (walk 27 #7: the whole stage read "n/a" while health.gpu_pci failed the node for having none)."""
    from wizard.model import WAITS_FOR_GPUS, Finding, StepStatus, Verdict

    skip = [Finding("driver.branch", Verdict.SKIP, "not checked: no NVIDIA GPU on the PCI bus (see health.gpu_pci)",
                    "host", waits_for=WAITS_FOR_GPUS)]
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.record_findings("driver.branch", skip, "2026-12-04T00:00:00+00:00")
    st = b.store.step_states()["driver.branch"]
    assert st.status is StepStatus.PENDING and not st.not_applicable
    assert b.reason_shown(st) == ("waiting for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus): not checked: "
                                  "no NVIDIA GPU on the PCI bus (see health.gpu_pci)")
    # walk 30 #8: the step screen shows the finding below its note, so the note does not repeat it
    assert b.reason_shown(st, brief=True) == "waiting for an NVIDIA GPU (health.gpu_pci finds none on the PCI bus)"
    b.store.set_plan(gpu_count=8)
    b.store.set_step("driver.branch", StepStatus.PENDING)
    b.record_findings("driver.branch", skip, "2026-12-04T00:00:01+00:00")
    st = b.store.step_states()["driver.branch"]
    assert st.status is StepStatus.PENDING and not st.not_applicable and "waiting for the planned GPUs" in st.reason
    # walk 18: a person's confirmation of a waiting step (with its note) survives the next check that still waits
    b.confirm("driver.branch", "checked the driver branch by hand")
    confirmed = b.store.step_states()["driver.branch"]
    assert confirmed.status is StepStatus.CONFIRMED
    events = b.store.conn.execute("SELECT COUNT(*) FROM step_event WHERE step_id = 'driver.branch'").fetchone()[0]
    b.store.clock = lambda: "2026-12-04T09:00:00+00:00"  # a later check, at another time
    b.record_findings("driver.branch", skip, "2026-12-04T00:00:02+00:00")
    st = b.store.step_states()["driver.branch"]
    assert st.status is StepStatus.CONFIRMED and st.reason == confirmed.reason and "by hand" in st.reason
    # walk 19: the check left the person's record as it was: no new event, their time kept (it re-stamped both)
    assert st.updated_at == confirmed.updated_at and st.user == confirmed.user
    assert b.store.conn.execute("SELECT COUNT(*) FROM step_event WHERE step_id = 'driver.branch'").fetchone()[0] == events
    b.close()


def test_a_check_skipped_for_a_missing_plan_answer_waits_for_it(state_dir):
    """Walk 17: node.storage read "n/a" for "no data path in the plan", which is a missing answer, not a step that does
    not apply, and it dropped out of the report's steps not done. A skip that waits for a plan answer keeps the step
    pending, its reason naming the key (shown translated); a plain skip is still "not applicable"."""
    from wizard import i18n
    from wizard.model import Finding, StepStatus, Verdict, waits_for_plan
    from wizard.rules import storage

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    found = storage.storage({}, {})
    assert found[0].waits_for == waits_for_plan("data_path")
    b.record_findings("node.storage", found, "2026-12-04T00:00:00+00:00")
    st = b.store.step_states()["node.storage"]
    assert st.status is StepStatus.PENDING and not st.not_applicable
    assert b.reason_shown(st).startswith("waiting for a plan answer (data_path): no data path in the plan")
    i18n.set_language("zh_CN")
    try:
        zh = b.reason_shown(st)
    finally:
        i18n.set_language("en")
    assert "data_path" in zh and "waiting for" not in zh, zh
    b.record_findings("node.storage", [Finding("node.storage", Verdict.SKIP, "does not apply here")],
                      "2026-12-04T00:00:01+00:00")
    assert b.store.step_states()["node.storage"].not_applicable
    b.close()


def test_handing_over_a_machine_the_report_calls_not_ready_is_recorded_warned(state_dir):
    """Walk finding: report.handover was confirmed without a word while the report said NOT READY, and the Report
    stage showed passed. Confirmed then, it is recorded warned, its reason naming the counts; with every step
    outside the hand-over stage done and none failed it is a plain confirmation."""
    from wizard.model import HANDOVER_STAGES, StepStatus, Verdict

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    outside = [s.id for st in steps.STAGES if st.id not in HANDOVER_STAGES for s in st.steps]
    b.store.set_step("health.gpu_pci", StepStatus.FAILED, verdict=Verdict.FAIL, reason="no GPU")
    assert b.handover_open() == (1, len(outside) - 1)
    # walk 18: without a note it is refused (a skip and an unverified confirmation need one too)
    with pytest.raises(ValueError, match="needs a note"):
        b.confirm("report.handover", "  ")
    b.confirm("report.handover", "ticket 123")
    st = b.store.step_states()["report.handover"]
    assert st.status is StepStatus.WARNED and st.verdict is Verdict.WARN
    assert st.reason.startswith(f"handed over while not ready (1 step(s) failed, {len(outside) - 1} not done)")
    assert st.reason.endswith(": ticket 123")
    for sid in outside:
        b.store.set_step(sid, StepStatus.CONFIRMED, reason="done")
    assert b.handover_open() == (0, 0)
    b.store.set_step("report.handover", StepStatus.PENDING)
    b.confirm("report.handover", "ticket 124")
    assert b.status("report.handover") is StepStatus.CONFIRMED
    b.close()


def test_a_cpu_only_step_cannot_be_confirmed_and_a_warning_is_accepted_only_with_a_note(state_dir):
    """Confirm never turns a CPU-only validation, or a step proven only by its run, into done, and accepting a
    warning keeps it visibly warned."""
    import pytest
    from wizard.model import StepStatus, Verdict

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.store.set_step("gpu.validate", StepStatus.CPU_ONLY, verdict=Verdict.PASS, reason="ran on the CPU")
    assert "CPU only" in b.confirm_refusal("gpu.validate")
    with pytest.raises(ValueError):
        b.confirm("gpu.validate", "looks fine")
    assert b.status("gpu.validate") is StepStatus.CPU_ONLY
    # a step proven by its own judged run is never confirmed by a note (no run, or a run that could not judge)
    for sid in ("node.validate", "node.soak", "health.idle_baseline", "multinode.allreduce", "gpu.stress",
                "health.dcgm_l1", "gpu.dcgm_l2", "node.dcgm_l3"):
        assert "proven by its run" in b.confirm_refusal(sid, "ran it by hand, fine")
        with pytest.raises(ValueError, match="proven by its run"):
            b.confirm(sid, "ran it by hand, fine")
        assert b.status(sid) is StepStatus.PENDING
    assert b.confirm_refusal("gpu.host_bandwidth", "nvbandwidth clean") == ""  # a manual step is confirmed by a person
    b.store.set_step("os.kernel_headers", StepStatus.WARNED, verdict=Verdict.WARN)
    with pytest.raises(ValueError, match="needs a note"):
        b.confirm("os.kernel_headers", "  ")
    b.confirm("os.kernel_headers", "headers come with the next kernel update, DKMS not used here")
    st = b.store.step_states()["os.kernel_headers"]
    assert st.status is StepStatus.WARNED and st.verdict is Verdict.WARN and "DKMS not used here" in st.reason


def test_a_re_check_keeps_what_a_person_decided_while_the_machine_says_the_same(state_dir):
    """A confirmation over a check that could not tell stands while the machine still cannot tell, and accepted
    warnings stay accepted while the re-check warns about the same things; a failure, or a new warning, ends them."""
    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    unknown = [Finding("bios.iommu", Verdict.UNKNOWN, "IOMMU state not readable", source="s")]
    b.record_findings("bios.iommu", unknown, frozen_clock())
    b.confirm("bios.iommu", "seen in the BIOS setup: IOMMU on, passthrough")
    b.record_findings("bios.iommu", unknown, frozen_clock())
    st = b.store.step_states()["bios.iommu"]
    assert st.status is StepStatus.CONFIRMED and "passthrough" in st.reason
    b.record_findings("bios.iommu", [Finding("bios.iommu", Verdict.FAIL, "IOMMU off", source="s")], frozen_clock())
    assert b.status("bios.iommu") is StepStatus.FAILED  # the machine's evidence wins over the note

    warn = Finding("os.kernel_headers", Verdict.WARN, "no headers for 6.1", source="s")
    b.record_findings("os.kernel_headers", [warn], frozen_clock())
    b.confirm("os.kernel_headers", "DKMS not used on this image")
    b.record_findings("os.kernel_headers", [warn], frozen_clock())
    st = b.store.step_states()["os.kernel_headers"]
    assert st.status is StepStatus.WARNED and "DKMS not used" in st.reason
    other = Finding("os.kernel_headers", Verdict.WARN, "headers of another kernel", subject="/usr/src", source="s")
    b.record_findings("os.kernel_headers", [warn, other], frozen_clock())
    st = b.store.step_states()["os.kernel_headers"]
    assert st.status is StepStatus.WARNED and st.reason == ""  # a new warning: asked again
    b.close()


def test_following_a_run_hands_over_every_line_even_when_the_reader_is_far_behind(state_dir):
    """A run that wrote tens of MiB before its follower's next look: ``follow_action`` hands over every line up to
    the exit status (it read one 1 MiB chunk after the end and dropped the rest, so the screen and ``bringup run``
    lost the log's tail)."""
    import sys as _sys
    from pathlib import Path

    from wizard import actions as act
    from wizard.actions import Resolved

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    n = 300_000  # about 18 MB: many reads of 1 MiB
    code = f"import sys\nfor i in range({n}): sys.stdout.write(f'line {{i:>8}} of a verbose tool output ok\\n')"
    run = b.start_action(b.step("report.capture"), Resolved(ops=[{"argv": [_sys.executable, "-c", code]}]))
    deadline = time.monotonic() + 60
    while act.read_status(run.status_path) is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the run ends before the follower reads anything: it is as far behind as it can be
    got: list[str] = []
    done = asyncio.run(b.follow_action(run, got.extend, poll_s=0.05))
    assert done.state is act.ActionState.SUCCEEDED
    body = [ln for ln in got if ln.startswith("line ")]
    assert len(body) == n and body[0].startswith("line        0") and body[-1] == f"line {n - 1:>8} of a verbose tool output ok"
    assert got[-1].startswith("# exit status 0")
    assert len(got) == sum(1 for _ in open(Path(done.log_path), "rb"))
    b.close()


def test_confirming_a_checked_step_the_machine_could_not_tell_needs_a_note_and_says_so(state_dir):
    """nvidia-smi not installed: driver.nvidia_smi's check skipped. A person may confirm it, but only with a note, and
    the record (status, reason shown, report) says the machine's check could not tell: never a plain ✓."""
    import pytest
    from wizard import report as rpt
    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.record_findings("driver.nvidia_smi", [Finding("driver.nvidia_smi", Verdict.SKIP, "nvidia-smi is not installed",
                                                    source="s")], frozen_clock())
    assert b.unverified("driver.nvidia_smi") == "skip" and b.unverified("plan.host") == ""
    with pytest.raises(ValueError, match="needs a note"):
        b.confirm("driver.nvidia_smi", " ")
    b.confirm("driver.nvidia_smi", "ran nvidia-smi from the vendor's live USB: 8 GPUs")
    st = b.store.step_states()["driver.nvidia_smi"]
    assert st.status is StepStatus.CONFIRMED
    assert b.reason_shown(st) == ("confirmed by hand; the machine's check could not tell here (skip): ran nvidia-smi "
                                  "from the vendor's live USB: 8 GPUs")
    node = rpt.node_from_build(b, None, "none")
    listed = [w for w in node["waived"] if w["step"] == "driver.nvidia_smi"]
    assert listed and listed[0]["confirmed"] and listed[0]["unproven"]
    assert node["verdict"] != rpt.READY
    doc = rpt.assemble([node])
    md, html = rpt.render(doc, "md"), rpt.render(doc, "html")
    assert "1 confirmed by hand where the machine's check could not tell (listed)" in md
    assert "✓ confirmed by hand `driver.nvidia_smi`" in md and "✓ confirmed by hand</span>" in html
    b.confirm("plan.host", "")  # a step only a person can confirm still takes no note
    b.close()


def test_a_confirmation_a_failing_check_withdrew_stays_in_the_record(state_dir):
    """walk 29 #13: bios.numa confirmed by hand with a note (its check could not tell), then a check failed it and a
    later one could not tell again: the step is pending, and status, the step screen and the report say that the
    person's confirmation (who, when, note) was withdrawn by the failing check. A person's own later skip, or a new
    confirmation, or a pass, is not a withdrawal."""
    from wizard import report as rpt
    from wizard.model import StepStatus

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    cannot_tell = [Finding("bios.numa", Verdict.SKIP, "numa_nodes is not in the plan", source="s")]
    b.record_findings("bios.numa", cannot_tell, frozen_clock())
    b.confirm("bios.numa", "BIOS photo filed in ticket INC-000123")
    assert b.store.withdrawn_confirmations() == {} and b.withdrawn_confirmation("bios.numa") == ""
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.FAIL, "1 NUMA node, 2 planned", source="s")],
                      frozen_clock())
    b.record_findings("bios.numa", cannot_tell, frozen_clock())
    assert b.status("bios.numa") is not StepStatus.CONFIRMED
    confirmed, reopened = b.store.withdrawn_confirmations()["bios.numa"]
    assert "INC-000123" in confirmed.reason and reopened.status is StepStatus.FAILED
    line = b.withdrawn_confirmation("bios.numa")
    assert "INC-000123" in line and "reopened at" in line and line.endswith("a later check or run failed")
    node = rpt.node_from_build(b, None, "none")
    assert [w["step"] for w in node["withdrawn_confirmations"]] == ["bios.numa"]
    doc = rpt.assemble([node])
    assert doc["withdrawn_confirmations"][0]["reopened_status"] == "failed"
    md, html = rpt.render(doc, "md"), rpt.render(doc, "html")
    assert "**Confirmed by hand, then replaced by a later check or run**" in md and "INC-000123" in md
    assert "↺ reopened</span> <code>bios.numa</code>" in html and "INC-000123" in html
    b.confirm("bios.numa", "checked again in the BIOS: NPS1 as planned")  # confirmed again: nothing withdrawn now
    assert b.store.withdrawn_confirmations() == {}
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.FAIL, "1 NUMA node, 2 planned", source="s")],
                      frozen_clock())
    b.skip("bios.numa", "single-socket board")  # the person's own decision after the fail: still the history
    assert "bios.numa" in b.store.withdrawn_confirmations()
    b.confirm("plan.host", "")
    b.skip("plan.host", "not this one")  # a skip right after the confirmation is the person's decision, not a check's
    assert "plan.host" not in b.store.withdrawn_confirmations()
    # walk 31 #2: a later check that passes keeps the person's words in the record too
    b.record_findings("bios.numa", cannot_tell, frozen_clock())
    b.confirm("bios.numa", "NPS1 set, photo in ticket 42")
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.PASS, "2 NUMA nodes")], frozen_clock())
    assert b.status("bios.numa") is StepStatus.PASSED
    line = b.withdrawn_confirmation("bios.numa")
    assert "ticket 42" in line and "a later check or run passed it at" in line
    b.close()


def test_a_step_automated_by_a_validation_that_ran_on_the_cpu_needs_a_note_and_is_listed_by_hand(state_dir):
    """walk 24 #5: node.validate ran on the CPU (cpu-only), then node.allreduce, which it automates, was confirmed with
    an empty note and the report listed a confirmed bandwidth. A step whose automating step (Step.automated_by) has
    not passed needs a note and is reported among the confirmations by hand; once it passed, no note is asked."""
    from wizard import report as rpt
    from wizard.model import StepStatus
    from wizard.rules.validate import CPU_ONLY_REASON

    automated = [s for st in steps.STAGES for s in st.steps if s.automated_by]
    assert {"node.nccl_sanity", "node.allreduce"} <= {s.id for s in automated}
    assert all(s.manual for s in automated)  # a confirm-by-hand step another step's run automates
    by_id = {s.id: s for st in steps.STAGES for s in st.steps}
    assert all(by_id[s.automated_by].action is not None for s in automated)  # a step with a run, by its real id
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.store.set_step("node.validate", StepStatus.CPU_ONLY, verdict=Verdict.PASS, reason=CPU_ONLY_REASON)
    assert b.automation_open("node.allreduce") == "node.validate" and b.unverified("node.allreduce") == "cpu-only"
    why = b.confirm_refusal("node.allreduce", "")
    assert "node.validate measures this step and has not passed (cpu-only)" in why and "needs a note" in why
    with pytest.raises(ValueError, match="needs a note"):
        b.confirm("node.allreduce", "  ")
    b.confirm("node.allreduce", "all_reduce_perf -b 8 -e 16G by hand: 452 GB/s busbw at 16 GB")
    st = b.store.step_states()["node.allreduce"]
    assert st.status is StepStatus.CONFIRMED
    assert b.reason_shown(st) == ("confirmed by hand; the machine's check could not tell here (cpu-only): "
                                  "all_reduce_perf -b 8 -e 16G by hand: 452 GB/s busbw at 16 GB")
    node = rpt.node_from_build(b, None, "none")
    listed = [w for w in node["waived"] if w["step"] == "node.allreduce"]
    assert listed and listed[0]["confirmed"] and listed[0]["unproven"]
    md = rpt.render(rpt.assemble([node]), "md")
    assert "✓ confirmed by hand `node.allreduce`" in md
    # never run at all: the same rule (pending)
    assert b.unverified("node.nccl_sanity") == "cpu-only"
    b.store.set_step("node.validate", StepStatus.PENDING)
    assert "(pending)" in b.confirm_refusal("node.nccl_sanity", "")
    # node.validate passed on the GPUs: the step is confirmed as before, a note optional, not listed by hand
    b.store.set_step("node.validate", StepStatus.PASSED, verdict=Verdict.PASS)
    assert b.automation_open("node.nccl_sanity") == "" and b.unverified("node.nccl_sanity") == ""
    b.confirm("node.nccl_sanity", "")
    node = rpt.node_from_build(b, None, "none")
    assert not [w for w in node["waived"] if w["step"] == "node.nccl_sanity"]
    b.close()


def test_the_engines_own_reasons_are_shown_in_the_operators_language(state_dir):
    """walk 19: in Chinese the step screen and `status` showed "ran on the CPU: the software path works, ..." and
    "handed over while not ready (3 step(s) failed, 59 not done) by root: ..." in English. The engine's words are now
    read back and shown translated; the person's note stays as typed."""
    from wizard import i18n
    from wizard.model import StepStatus
    from wizard.rules.validate import CPU_ONLY_REASON

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.store.set_step("gpu.validate", StepStatus.CPU_ONLY, reason=CPU_ONLY_REASON)
    b.store.set_step("report.handover", StepStatus.WARNED, user="root",
                     reason="handed over while not ready (3 step(s) failed, 59 not done) by root: lab node, no GPUs")
    b.store.set_step("health.temperature", StepStatus.WARNED, user="root",
                     reason="warnings accepted by root: fans replaced")
    states = b.store.step_states()
    i18n.set_language("zh_CN")
    try:
        cpu = b.reason_shown(states["gpu.validate"])
        handover = b.reason_shown(states["report.handover"])
        accepted = b.reason_shown(states["health.temperature"])
    finally:
        i18n.set_language("en")
    assert cpu == "在 CPU 上运行：软件路径可用，GPU 未经验证"
    assert "3 个步骤失败" in handover and "59 个未完成" in handover and handover.endswith("lab node, no GPUs")
    assert "接受了警告" in accepted and accepted.endswith("fans replaced")
    assert b.reason_shown(states["report.handover"]).startswith("handed over while not ready (3 step(s) failed")
    b.close()


@pytest.mark.parametrize("command", ["gpu", "node", "soak", "burnin", "nodes"])
def test_a_step_whose_run_goes_on_is_not_started_again(state_dir, command):
    """Walk 24 #3: a second run of a step beside its first (two burn-ins on the same GPUs). While a run of the step
    lives, every way to start its action (`run`, `validate TARGET`, the TUI) is refused as ``running``, naming that
    run; once it has ended, the refusal goes."""
    import signal as _signal
    import sys as _sys

    from wizard import actions as act
    from wizard.actions import Resolved
    from wizard.cli import validate_step
    from wizard.engine import local_host
    from wizard.store import ActionState

    sid = validate_step(command).id
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    assert b.running_run(sid) is None
    run = b.start_action(b.step(sid), Resolved(ops=[{"argv": [_sys.executable, "-c", "import time; time.sleep(60)"]}]))
    try:
        assert run.state is ActionState.RUNNING
        assert b.running_run(sid) is not None and b.running_run(sid).id == run.id  # type: ignore[union-attr]
        prep = asyncio.run(b.prepare_action(local_host(), sid, {"validate_device": "cpu"}))
        assert prep.refusal_kind == "running" and prep.running is not None and prep.running.id == run.id
        assert str(run.pid) in prep.refusal and run.log_path in prep.refusal
        out = asyncio.run(b.run_action(local_host(), sid, {"validate_device": "cpu"}, confirm=lambda p: True))
        assert out.run is None and out.prepared.refusal_kind == "running"
        assert [r.id for r in b.store.action_runs(step_id=sid)] == [run.id]  # nothing else started
    finally:
        act.cancel(run, "b", _signal.SIGTERM)
    assert b.wait_action(run, timeout_s=30).state is not ActionState.RUNNING
    assert b.running_run(sid) is None
    assert asyncio.run(b.prepare_action(local_host(), sid, {"validate_device": "cpu"})).refusal_kind != "running"
    b.close()


def test_no_second_gpu_load_starts_beside_another_steps_run(state_dir):
    """Two steps that load the same GPUs (a validation during a burn-in) spoil each other's figures, as DCGM refuses a
    second diagnostic (DCGM_ST_IN_USE): while gpu.stress runs, every other GPU-loading step's action is refused as
    ``running``, naming that run, in the engine and in the CLI's words; a step that does not load the GPUs
    (node.storage_read) and a dry run are not held back; once the run ends, the refusal goes."""
    import signal as _signal
    import sys as _sys

    from wizard import actions as act
    from wizard.actions import Resolved
    from wizard.cli import running_refusal
    from wizard.engine import local_host
    from wizard.store import ActionState

    loads = {s.id for st in steps.STAGES for s in st.steps if s.action is not None and s.action.loads_gpus}
    assert loads == {"health.idle_baseline", "health.dcgm_l1", "gpu.validate", "gpu.dcgm_l2", "gpu.stress",
                     "node.validate", "node.soak", "node.dcgm_l3", "multinode.transport", "multinode.allreduce"}
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    assert b.gpu_load_run() is None
    run = b.start_action(b.step("gpu.stress"), Resolved(ops=[{"argv": [_sys.executable, "-c", "import time; time.sleep(60)"]}]))
    try:
        assert b.gpu_load_run("gpu.stress") is None and b.gpu_load_run().id == run.id  # type: ignore[union-attr]
        prep = asyncio.run(b.prepare_action(local_host(), "gpu.validate", {"validate_device": "cpu"}))
        assert prep.refusal_kind == "running" and prep.running is not None and prep.running.id == run.id
        assert "gpu.stress" in prep.refusal and str(run.pid) in prep.refusal and "spoil" in prep.refusal
        words = running_refusal(prep.running, "gpu.validate")
        assert "gpu.stress" in words and "gpu.validate is not started" in words and run.log_path in words
        # walk 28 #9: the running step may sample the host only (no GPU, no NVML): "on this node", not "on its GPUs"
        assert "still running on this node (pid" in prep.refusal and "still running on this node (pid" in words
        assert "GPU" not in str(prep.refusal) and "GPU" not in words
        from wizard import i18n
        i18n.set_language("zh_CN")
        try:
            zh, zh_cli = i18n.tr(prep.refusal), running_refusal(prep.running, "gpu.validate")
        finally:
            i18n.set_language("en")
        assert "仍在本节点上运行（pid" in zh and "仍在本节点上运行（pid" in zh_cli and "GPU" not in zh + zh_cli
        out = asyncio.run(b.run_action(local_host(), "node.validate", {"validate_device": "cpu"}, confirm=lambda p: True))
        assert out.run is None and out.prepared.refusal_kind == "running"
        assert b.store.action_runs(step_id="node.validate") == []
        dry = asyncio.run(b.prepare_action(local_host(), "gpu.validate", {"validate_device": "cpu"}, dry_run=True))
        assert dry.refusal_kind != "running"
        fio = asyncio.run(b.prepare_action(local_host(), "node.storage_read", {"data_path": str(state_dir)}))
        assert fio.refusal_kind != "running"
    finally:
        act.cancel(run, "b", _signal.SIGTERM)
    assert b.wait_action(run, timeout_s=30).state is not ActionState.RUNNING
    assert b.gpu_load_run() is None
    assert asyncio.run(b.prepare_action(local_host(), "gpu.validate", {"validate_device": "cpu"})).refusal_kind != "running"
    b.close()


def test_a_runs_outcome_follows_what_the_run_found_not_its_steps_status_now(state_dir):
    """Walk 24 #6: "succeeded (exit status 0)" beside "Result: FAIL" once a person skipped the step. A run that exited
    0 whose own findings fail "ended (exit status 0)" (zh: 已结束（退出状态 0）) for the screens, the CLI and the
    report alike, whatever the step's status became; "succeeded" when they do not fail."""
    import sys as _sys

    from wizard import report as rpt
    from wizard.actions import Resolved
    from wizard.i18n import current_language, set_language, tr

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    found = {}
    for verdict in (Verdict.FAIL, Verdict.PASS):
        run = b.wait_action(b.start_action(b.step("report.capture"),
                                           Resolved(ops=[{"argv": [_sys.executable, "-c", "pass"]}])), timeout_s=30)
        cid = b.store.record_check("report.capture", [Finding("report.capture", verdict, "what it found",
                                                              step="report.capture")], verdict, "b", run.started_at)
        b.store.update_action_run(run.id, check_run=cid)
        found[verdict] = b.store.action_run(run.id)
    b.skip("report.capture", "a person's skip afterwards")
    failed, passed = found[Verdict.FAIL], found[Verdict.PASS]
    assert failed.exit_status == 0 and str(b.run_outcome(failed)) == "ended (exit status 0)"
    assert str(b.run_outcome(passed)) == "succeeded (exit status 0)"
    exits = {a["id"]: a["exit"] for a in rpt.node_from_build(b, None, "none")["actions"]}
    assert exits[failed.id] == "ended (exit status 0)" and exits[passed.id] == "succeeded (exit status 0)"
    was = current_language()
    set_language("zh_CN")
    try:
        assert tr(b.run_outcome(failed)) == "已结束（退出状态 0）"
    finally:
        set_language(was)
    b.close()


def test_a_step_is_not_skipped_while_its_action_runs(state_dir):
    """Walk 29 #20: `s` during a run recorded the skip over the earlier run's failure, which stayed as the step's
    findings (the report "waived" it) although the run then succeeded. While the step's action runs, skip is refused
    naming the run; once the run has ended, it is allowed."""
    import signal as _signal
    import sys as _sys

    from wizard import actions as act
    from wizard.actions import Resolved
    from wizard.model import StepStatus
    from wizard.store import ActionState

    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    run = b.start_action(b.step("gpu.validate"),
                         Resolved(ops=[{"argv": [_sys.executable, "-c", "import time; time.sleep(60)"]}]))
    try:
        with pytest.raises(ValueError, match=f"run {run.id} of this step is still running"):
            b.skip("gpu.validate", "single node")
        assert b.status("gpu.validate") is not StepStatus.SKIPPED
    finally:
        act.cancel(run, "b", _signal.SIGTERM)
    assert b.wait_action(run, timeout_s=30).state is not ActionState.RUNNING
    b.skip("gpu.validate", "single node")
    assert b.status("gpu.validate") is StepStatus.SKIPPED
    b.close()


def test_a_plan_change_names_the_steps_checked_against_the_old_answer(state_dir):
    """walk 30 #1: bios.numa and os.memory checked, then numa_nodes set: each check recorded the plan answers its
    rules read (PlanReads), so the change names bios.numa (not os.memory) to check again, the step says what
    changed, and the report lists it and is at best ready with warnings; a new check clears it."""
    from wizard import report as rpt
    from wizard.hosts import LocalHost

    by_id = {s.id: s for st in steps.STAGES for s in st.steps}
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    asyncio.run(b.check_steps(LocalHost(), [by_id["bios.numa"], by_id["os.memory"]]))
    assert "numa_nodes" in (b.store.latest_plan_read("bios.numa") or {})
    assert "numa_nodes" not in (b.store.latest_plan_read("os.memory") or {})
    assert b.plan_changed("bios.numa") == []
    assert b.set_plan(numa_nodes=2) == ["bios.numa"]
    assert b.plan_changed("bios.numa") == [("numa_nodes", None, 2)] and b.plan_changed("os.memory") == []
    assert b.plan_changed_words("bios.numa") == "numa_nodes: unset -> 2"
    doc = rpt.assemble([rpt.node_from_build(b, None, "none")])
    assert [c["step"] for c in doc["plan_changed"]] == ["bios.numa"] and doc["verdict"] != rpt.READY
    md = rpt.render(doc, "md")
    assert "**Checked against an earlier plan: check again**" in md and "`numa_nodes` = unset, now 2" in md
    assert "| `numa_nodes` | 2 |" in md  # the plan it is judged against
    assert "**↻ re-check: the plan changed since (numa_nodes)**" in md  # in the steps table too (walk 31 #4)
    assert b.set_plan(numa_nodes=2) == []  # the same value again: nothing changed
    b.confirm("bios.numa", "NPS2 in the BIOS")  # walk 31 #1: a confirmation over a check is named too
    b.set_plan(numa_nodes=4)
    assert b.plan_changed("bios.numa") == [("numa_nodes", None, 4)]
    b.set_plan(numa_nodes=2)
    asyncio.run(b.check_steps(LocalHost(), [by_id["bios.numa"]]))
    assert b.plan_changed("bios.numa") == []
    b.close()


def test_plan_change_words_show_a_whole_number_as_the_plan_does(state_dir):
    """walk 31 #10: host_ram_gib entered as 24 (stored 24.0) read "unset -> 24.0" while `bringup plan` shows 24."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    b.record_findings("os.memory", [Finding("os.memory", Verdict.PASS, "ok")], "2026-01-01T00:00:00+00:00",
                      plan_read={"host_ram_gib": None})
    assert b.set_plan(host_ram_gib=24.0) == ["os.memory"]
    assert b.plan_changed_words("os.memory") == "host_ram_gib: unset -> 24"
    b.close()


def test_plan_reads_record_what_rules_ask_for():
    from wizard.engine import PlanReads

    r = PlanReads({"a": 1})
    assert r.get("a") == 1 and "b" not in r and r.get("c", 3) == 3
    assert r.read == {"a", "b", "c"}
    dict(r)  # a rule that copies the plan reads all of it
    assert r.read == {"a", "b", "c"}
