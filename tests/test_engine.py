"""Engine behaviour: probes run concurrently, a crashing check is contained, reboot detection."""

from __future__ import annotations

import asyncio
import time

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
    b.confirm(stage.steps[0].id)
    assert b.stage_status(stage).value == "passed"
    b.close()
