"""The DCGM steps' actions and the GPU burn-in (wizard/dcgm_diag.py): the resolvers (DCGM present or absent, the
host engine stopped, the level chosen), and real runs through ``Build.run_action`` (detached supervisor, the progress
wrapper, the judge) with a fake ``dcgmi`` first on PATH that prints a real captured output and exits with the status
DCGM gives such a run (NVIDIA/DCGM dcgmi/main_dcgmi.cpp returns the dcgmReturn_t: DCGM_ST_NVVS_ERROR = -30, a
diagnostic that ran and reported a failure, is exit status 226; DCGM_ST_CONNECTION_NOT_VALID = -21 is 235;
dcgmlib/dcgm_structs.h). The burn-in's fallback runs the validation script for real on this CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import steps
from tests.conftest import DATA, frozen_clock
from tests.probe_data import command_output
from wizard import dcgm_diag
from wizard.actions import ActionContext
from wizard.engine import Build, local_host
from wizard.model import StepStatus, Verdict
from wizard.probes import ProbeOutput
from wizard.rules import dcgm as dcgm_rules
from wizard.store import ActionState

ALL_PASS_JSON = DATA / "dcgm" / "dcgmi-diag-json__8gpu-dcgm310-deployment-software-all-pass.json"
PCIE_FAIL_TABLE = DATA / "public" / "dcgmi-diag__r2-8x-rtx3090-dcgm330-pcie-fail-unsupported-driver-cuda-combination.txt"
NO_HOSTENGINE = DATA / "dcgm" / "dcgmi__unable-to-connect-host-engine.txt"
SYN_DRIVER = DATA / "synthetic" / "driver"
DPKG_WITH_DCGM = DATA / "synthetic" / "driver" / "synthetic_dpkg-query__debian12-nvidia-repo-580-open-complete.txt"
DPKG_WITHOUT_DCGM = DATA / "public" / "driver" / "dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt"
BOOT = "boot-test"


def fake_dcgmi(d: Path, output: Path, rc: int, args: str) -> Path:
    """A directory holding a ``dcgmi`` that prints ``output`` (a real captured output) for exactly ``args`` and
    exits ``rc``; anything else is refused (exit 9). Written in Python so that PATH needs nothing else."""
    d.mkdir(parents=True, exist_ok=True)
    p = d / "dcgmi"
    p.write_text(f"#!{sys.executable}\nimport sys\n"
                 f"if ' '.join(sys.argv[1:]) != {args!r}:\n"
                 "    sys.stderr.write('test fixture: only ' + " f"{args!r}" " + ' was captured\\n'); sys.exit(9)\n"
                 f"sys.stdout.write(open({str(output)!r}).read()); sys.stdout.flush(); sys.exit({rc})\n")
    p.chmod(0o755)
    return d


@pytest.fixture
def build(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "node1", "boot_id": BOOT}, create=True, clock=frozen_clock)
    yield b
    b.close()


@pytest.fixture
def only_path(monkeypatch):
    """PATH holding only the given directory: the fake dcgmi, and no systemctl, so this machine's own services
    (``driver_services`` answers 127) do not change the commands."""
    def use(d: Path) -> None:
        monkeypatch.setenv("PATH", str(d))
    return use


async def _yes(_prep):
    return True


def ctx(plan=None, services: str | None = None) -> ActionContext:
    outputs = {}
    if services:
        outputs["driver_services"] = command_output("driver_services", SYN_DRIVER / services, "systemctl show ...")
    return ActionContext(outputs, dict(plan or {}), "/tmp/b", python=sys.executable)


# ---------------------------------------------------------------- resolvers


def test_without_dcgmi_every_level_is_manual_and_names_the_install_and_bringups_own_checks(tmp_path, only_path):
    only_path(tmp_path)
    for resolve, level, equivalent in ((dcgm_diag.resolve_l1, 1, "Health stage"), (dcgm_diag.resolve_l2, 2, "gpu.validate"),
                                       (dcgm_diag.resolve_node, 3, "node.soak")):
        r = resolve(ctx())
        assert not r.ops and f"DCGM is not installed here (no `dcgmi` on PATH): level {level} has not run" in r.manual
        assert "driver.dcgm" in r.manual and "bringup run driver.dcgm" in r.manual and equivalent in r.manual
        # bringup's own checks cover part of a level, never "the same ground"
        assert "same ground" not in r.manual and "cover part of it" in r.manual and "not replace it" in r.manual
    assert "no memtest, targeted power" in dcgm_diag.resolve_node(ctx()).manual


def test_with_dcgmi_the_level_runs_under_the_progress_wrapper_and_says_how_long(tmp_path, only_path):
    d = fake_dcgmi(tmp_path / "bin", ALL_PASS_JSON, 0, "diag -r 1 -j")
    only_path(d)
    r = dcgm_diag.resolve_l2(ctx(services="synthetic_systemctl-show__all-active.txt"))
    assert [op["argv"][-5:] for op in r.ops] == [[str(d / "dcgmi"), "diag", "-r", "2", "-j"]]
    argv = r.ops[0]["argv"]
    assert argv[:3] == [sys.executable, "-m", "wizard.progress"] and argv[argv.index("--expect-s") + 1] == "120"
    assert not r.needs_root and not r.changes_system  # nvidia-dcgm is active: nothing to start
    shown = "\n".join(r.describe())
    assert "approximately two minutes" in shown and "dcgmi diag -r 2 -j" in shown


def test_a_stopped_nvidia_dcgm_is_started_first_and_then_it_needs_root(tmp_path, only_path):
    only_path(fake_dcgmi(tmp_path / "bin", ALL_PASS_JSON, 0, "diag -r 1 -j"))
    r = dcgm_diag.resolve_l1(ctx(services="synthetic_systemctl-show__dcgm-installed-inactive.txt"))
    assert r.ops[0]["argv"] == ["systemctl", "start", "nvidia-dcgm"] and r.needs_root and r.changes_system
    assert r.ops[1]["argv"][-5:-1] == [str(tmp_path / "bin" / "dcgmi"), "diag", "-r", "1"]
    assert "inactive" in r.describe()[0] + " ".join(r.ops[0]["detail"])


@pytest.mark.parametrize("answer,level", [(None, "3"), ("3", "3"), ("long", "3"), ("4", "4"), ("xlong", "4")])
def test_the_node_level_is_the_plans_choice(tmp_path, only_path, answer, level):
    only_path(fake_dcgmi(tmp_path / "bin", ALL_PASS_JSON, 0, "diag -r 3 -j"))
    r = dcgm_diag.resolve_node(ctx({"dcgm_node_level": answer} if answer else {}))
    assert r.ops[-1]["argv"][-3:] == ["-r", level, "-j"]
    assert r.ops[-1]["argv"][r.ops[-1]["argv"].index("--expect-s") + 1] == ("900" if level == "3" else "7200")


def test_the_burnin_uses_dcgm_targeted_stress_and_power_when_dcgm_is_there_else_the_gemm(tmp_path, only_path):
    only_path(fake_dcgmi(tmp_path / "bin", ALL_PASS_JSON, 0, "diag -r 1 -j"))
    r = dcgm_diag.resolve_burnin(ctx({"burnin_minutes": 4, "validate_device": "cuda"}))
    tails = [op["argv"][-6:] for op in r.ops]
    assert tails == [["diag", "-r", "targeted_stress", "-p", "targeted_stress.test_duration=120", "-j"],
                     ["diag", "-r", "targeted_power", "-p", "targeted_power.test_duration=120", "-j"]]
    on_cpu = dcgm_diag.resolve_burnin(ctx({"burnin_minutes": 4, "validate_device": "cpu", "validate_quick": True}))
    argv = on_cpu.ops[0]["argv"]
    assert argv[1].endswith("bringup_validate.py") and argv[2:] == ["soak", "--device", "cpu", "--minutes", "4", "--quick"]
    only_path(tmp_path / "empty")
    assert dcgm_diag.resolve_burnin(ctx({"validate_device": "cuda"})).ops[0]["argv"][2:6] == ["soak", "--device", "cuda",
                                                                                               "--minutes"]


# ---------------------------------------------------------------- the check: is DCGM there?


def test_the_check_says_dcgm_is_missing_and_never_passes_a_level():
    bare = {"driver_dpkg": command_output("driver_dpkg", DPKG_WITHOUT_DCGM, "dpkg -l")}
    f = dcgm_rules.installed_l2(bare, {})
    assert [(x.id, x.verdict) for x in f] == [("gpu.dcgm_l2", Verdict.UNKNOWN)]
    assert f[0].message == "DCGM is not installed: level 2 has not run" and "driver.dcgm" in f[0].remedy
    full = {"driver_dpkg": command_output("driver_dpkg", DPKG_WITH_DCGM, "dpkg-query -W")}
    assert dcgm_rules.installed_l1(full, {}) == [] and dcgm_rules.installed_l3(full, {}) == []
    assert dcgm_rules.installed_l3({}, {})[0].verdict is Verdict.UNKNOWN  # no package manager answered


# ---------------------------------------------------------------- real runs through Build.run_action


async def test_an_all_pass_level_1_run_passes_the_step_per_gpu(build, tmp_path, only_path):
    only_path(fake_dcgmi(tmp_path / "bin", ALL_PASS_JSON, 0, "diag -r 1 -j"))
    lines: list[str] = []
    out = await build.run_action(local_host(), "health.dcgm_l1", confirm=_yes, on_lines=lines.extend, poll_s=0.05)
    assert out.run is not None and out.run.state is ActionState.SUCCEEDED, out.error or out.prepared.refusal
    assert any(ln.startswith("# dcgmi diag -r 1: started") for ln in lines)
    assert {(f.id, f.verdict) for f in out.findings} == {("health.dcgm_l1", Verdict.PASS)}
    assert sorted(f.subject for f in out.findings) == [f"GPU {i}" for i in range(8)]
    assert build.status("health.dcgm_l1") is StepStatus.PASSED
    # a later check (DCGM installed: no finding) neither skips nor undoes what the run proved
    full = {"driver_dpkg": command_output("driver_dpkg", DPKG_WITH_DCGM, "dpkg-query -W")}
    build.record_findings("health.dcgm_l1", dcgm_rules.installed_l1(full, {}), build.store.clock())
    assert build.status("health.dcgm_l1") is StepStatus.PASSED


async def test_a_failing_level_2_run_fails_the_step_on_the_failed_test(build, tmp_path, only_path):
    """No whole real failing ``-j`` document is public: the fake answers with the table a real failing ``dcgmi diag
    -r 2`` printed (8x RTX 3090, PCIe Fail - All), which the judge reads as well."""
    only_path(fake_dcgmi(tmp_path / "bin", PCIE_FAIL_TABLE, 226, "diag -r 2 -j"))
    out = await build.run_action(local_host(), "gpu.dcgm_l2", confirm=_yes, poll_s=0.05)
    assert out.run is not None and out.run.state is ActionState.FAILED and out.run.exit_status == 226
    fails = [f for f in out.findings if f.verdict is Verdict.FAIL]
    assert fails and all(f.id == "gpu.dcgm_l2" for f in fails) and "failed DCGM 'PCIe'" in fails[0].message
    assert {f.subject for f in fails} >= {"GPU 0", "GPU 7"}
    assert build.status("gpu.dcgm_l2") is StepStatus.FAILED


async def test_a_host_engine_dcgmi_cannot_reach_is_unknown_not_a_gpu_failure(build, tmp_path, only_path):
    only_path(fake_dcgmi(tmp_path / "bin", NO_HOSTENGINE, 235, "diag -r 3 -j"))
    out = await build.run_action(local_host(), "node.dcgm_l3", confirm=_yes, poll_s=0.05)
    assert out.run is not None and out.run.state is ActionState.FAILED
    assert [(f.id, f.verdict) for f in out.findings] == [("node.dcgm_l3", Verdict.UNKNOWN)]
    assert "systemctl start nvidia-dcgm" in out.findings[0].remedy and "nv-hostengine" in out.findings[0].remedy
    assert build.status("node.dcgm_l3") is StepStatus.PENDING


async def test_without_dcgmi_the_run_is_refused_with_the_manual_text_and_the_check_stays_unknown(build, tmp_path,
                                                                                                only_path):
    only_path(tmp_path)
    out = await build.run_action(local_host(), "gpu.dcgm_l2", confirm=lambda p: pytest.fail("asked for a manual step"))
    assert out.run is None and out.prepared.refusal_kind == "manual"
    assert "DCGM is not installed here" in out.prepared.refusal and not build.store.action_runs()
    bare = {"driver_dpkg": command_output("driver_dpkg", DPKG_WITHOUT_DCGM, "dpkg -l")}
    build.record_findings("gpu.dcgm_l2", dcgm_rules.installed_l2(bare, {}), build.store.clock())
    assert build.status("gpu.dcgm_l2") is StepStatus.PENDING
    assert build.store.latest_check("gpu.dcgm_l2")[1][0].message == "DCGM is not installed: level 2 has not run"


async def test_the_burnin_fallback_runs_the_gemm_on_this_cpu_and_stays_cpu_only(build, tmp_path, only_path):
    only_path(tmp_path)  # no dcgmi: the validation script's sustained GEMM
    plan = {"burnin_minutes": 0.05, "validate_device": "cpu", "validate_quick": True}
    out = await build.run_action(local_host(), "gpu.stress", plan, confirm=_yes, poll_s=0.1)
    assert out.run is not None and out.run.state is ActionState.SUCCEEDED, out.error
    assert "soak" in out.run.argv[0] and "--minutes" in out.run.argv[0]
    assert out.findings and all(f.id.startswith("gpu.stress") for f in out.findings)
    assert not any(f.verdict is Verdict.FAIL for f in out.findings), [(f.id, f.message) for f in out.findings]
    assert build.status("gpu.stress") is StepStatus.CPU_ONLY  # the software path, never a GPU's pass
    assert out.results.get("results")  # the soak's results table, stored with the run


def test_each_dcgm_step_runs_its_action_and_gpu_stress_is_bringup_validate_burnin():
    for sid in ("health.dcgm_l1", "gpu.dcgm_l2", "node.dcgm_l3", "gpu.stress"):
        s = steps.step_by_id(sid)
        assert not s.manual and s.action is not None and s.action.judge is not None and not s.action.needs_root
    assert steps.step_by_id("gpu.stress").action.command == "burnin"
    assert ProbeOutput  # imported for the type of ctx outputs


def test_a_resolution_that_starts_the_host_engine_needs_root_and_says_so(build, monkeypatch):
    from wizard.actions import Resolved
    from wizard.engine import PreparedAction

    step = steps.step_by_id("gpu.dcgm_l2")
    resolved = Resolved(ops=[{"argv": ["systemctl", "start", "nvidia-dcgm"]}, {"argv": [sys.executable, "-c", "pass"]}],
                        needs_root=True, changes_system=True)
    assert "changes the system: yes; needs root: yes" in "\n".join(PreparedAction(step, resolved).confirmation())
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(PermissionError, match="needs root"):
        build.start_action(step, resolved)
    assert not build.store.action_runs()


def test_the_dcgm_burnin_is_judged_by_the_dcgm_judge_under_the_steps_id():
    """Real outputs in a log as the wrapper leaves it: all passing, and a real Targeted Power failure on GPU 1 of
    4x A10G (every DCGM test must pass: a failure, whatever the test), and an exit status nothing explains."""
    def log(path: Path, rc: int) -> str:
        return ("$ python -m wizard.progress --label dcgmi diag -r targeted_power -- dcgmi diag -r targeted_power -j\n"
                "# dcgmi diag -r targeted_power: started; expected to take about 2 min\n" + path.read_text()
                + f"# dcgmi diag -r targeted_power: ended after 2 min 1 s, exit status {rc}\n")
    ok = dcgm_diag.judge_burnin(log(ALL_PASS_JSON, 0), {})
    assert ok and {(f.id, f.verdict) for f in ok} == {("gpu.stress", Verdict.PASS)}
    tp = dcgm_diag.judge_burnin(log(DATA / "public" / "dcgmi-diag__r3-4x-a10g-dcgm339-targeted-power-fail-gpu1.txt", 226), {})
    gpu1 = [f for f in tp if f.subject == "GPU 1"]
    assert gpu1 and gpu1[0].verdict is Verdict.FAIL and "Targeted Power" in gpu1[0].message
    assert all(f.id == "gpu.stress" for f in tp) and [f.subject for f in tp if f.verdict is Verdict.FAIL] == ["GPU 1"]
    silent = dcgm_diag.judge_burnin("# dcgmi diag -r targeted_stress: ended after 1 s, exit status 1\n", {})
    assert [(f.id, f.verdict) for f in silent] == [("gpu.stress", Verdict.UNKNOWN)] and "status 1" in silent[0].message
