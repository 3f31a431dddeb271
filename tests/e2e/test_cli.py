"""End to end: cli (real inputs through the CLI or explain, as an operator runs them)."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import steps

from tests.conftest import DEVVM_BUNDLE, ROOT, bringup_cmd, env_for_cli
from wizard.model import subject_prefix

SCHEMA = json.loads((ROOT / "assets" / "schema" / "check.schema.json").read_text())
STATUS_SCHEMA = json.loads((ROOT / "assets" / "schema" / "status.schema.json").read_text())


def run(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          env=env_for_cli(), cwd=kw.pop("cwd", ROOT), **kw)


def nvidia_gpus_on_this_bus() -> int:
    n = 0
    for d in Path("/sys/bus/pci/devices").glob("*"):
        try:
            if (d / "vendor").read_text().strip() == "0x10de" and (d / "class").read_text().startswith(("0x0300", "0x0302")):
                n += 1
        except OSError:
            pass
    return n


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("bringup ")


def test_check_json_on_this_machine(tmp_path):
    r = run("--state", str(tmp_path / "s"), "check", "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    ids = {f["id"] for f in doc["findings"]}
    # OS, CPU, memory, swap and PCI facts are all there
    assert {"os.release", "bios.cpu", "os.memory", "os.swap", "health.gpu_pci", "bios.numa",
            "bios.iommu", "os.filesystem"} <= ids
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["os.release"]["message"].startswith(doc["host"]["os"])
    assert doc["host"]["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    if nvidia_gpus_on_this_bus() == 0:
        gpu = by_id["health.gpu_pci"]
        assert gpu["verdict"] == "fail" and gpu["message"] == "no NVIDIA GPU on the PCI bus" and gpu["remedy"]
        assert doc["verdict"] == "fail" and r.returncode == 2
        assert by_id["health.nvml"]["verdict"] == "skip"
    expected_rc = {"pass": 0, "skip": 0, "warn": 1, "unknown": 1, "fail": 2}[doc["verdict"]]
    assert r.returncode == expected_rc


def test_check_human_output_and_stage_filter(tmp_path):
    r = run("--state", str(tmp_path / "s"), "check", "--stage", "os", "--snapshot", str(DEVVM_BUNDLE))
    assert "os.memory" in r.stdout and "health.gpu_pci" not in r.stdout
    assert "overall:" in r.stdout
    bad = run("--state", str(tmp_path / "s"), "check", "--stage", "nonsense")
    assert bad.returncode == 3 and "unknown stage" in bad.stderr


def test_capture_to_a_missing_directory_or_to_a_directory_is_an_error_not_a_crash(tmp_path):
    """walk 20: `capture -o` into a directory that does not exist, or onto a directory, ended in "internal error"
    after every probe had run. It is refused first, with exit status 3 and the path named; nothing is written."""
    for target, words in ((tmp_path / "nope" / "x.tar.gz", "does not exist"), (tmp_path, "is a directory")):
        r = run("--state", str(tmp_path / "s"), "capture", "-o", str(target))
        assert r.returncode == 3 and words in r.stderr and "internal error" not in r.stderr, r.stderr
    assert not (tmp_path / "nope").exists() and not list(tmp_path.glob("*.tar.gz*"))


def test_capture_then_snapshot_gives_the_same_findings(tmp_path):
    state = str(tmp_path / "s")
    live = json.loads(run("--state", state, "check", "--json").stdout)
    bundle = tmp_path / "x.tar.gz"
    cap = run("capture", "-o", str(bundle))
    assert cap.returncode == 0 and bundle.exists()
    snap1 = run("--state", state, "check", "--json", "--snapshot", str(bundle))
    snap2 = run("check", "--json", "--snapshot", str(bundle), "--state", state)
    a, b = json.loads(snap1.stdout), json.loads(snap2.stdout)
    assert a["findings"] == b["findings"]  # replay is deterministic
    jsonschema.validate(a, SCHEMA)
    assert a["host"]["hostname"] == live["host"]["hostname"]

    moving = {"os.filesystem", "os.memory_pressure", "health.kernel_log"}  # disk use, free memory, log length

    def key(doc):  # these facts move between two runs on a live machine; their verdicts must not
        return [(f["id"], f["verdict"], f["subject"], f["message"] if f["id"] not in moving else "")
                for f in doc["findings"]]

    assert key(a) == key(live)
    assert snap1.returncode == {"pass": 0, "skip": 0, "warn": 1, "unknown": 1, "fail": 2}[a["verdict"]]


def test_snapshot_of_the_dev_vm_bundle_is_stable():
    r = run("check", "--json", "--snapshot", str(DEVVM_BUNDLE), "--state", "/tmp/bringup-test-state-devvm")
    doc = json.loads(r.stdout)
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["health.gpu_pci"]["verdict"] == "fail"
    assert by_id["os.release"]["message"].startswith("Debian GNU/Linux 12 (bookworm), kernel 6.18")
    assert by_id["bios.cpu"]["verdict"] == "pass"
    assert r.returncode == 2


def test_garbage_bundle_is_a_clear_error(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x00not a bundle" * 50)
    r = run("check", "--snapshot", str(junk), "--state", str(tmp_path / "s"))
    assert r.returncode == 3 and "not a bringup capture bundle" in r.stderr and "Traceback" not in r.stderr


def test_unusable_state_dir_fails_writers_before_anything_runs(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("x")
    for args in (["plan", "gpu_count=8"], ["run", "health.idle_baseline", "--yes"]):
        r = run("--state", str(blocker / "state"), *args)
        assert r.returncode == 3, args
        assert "state directory" in r.stderr and str(blocker) in r.stderr
        assert "Traceback" not in r.stderr
    assert not (blocker.parent / "state").exists()
    empty = run("--state", "", "status")
    assert empty.returncode == 3 and "--state is empty" in empty.stderr


def test_read_only_commands_never_create_the_state_dir(tmp_path):
    state = tmp_path / "nowhere"
    r = run("--state", str(state), "status")
    assert r.returncode == 0 and "no build" in r.stdout
    r = run("--state", str(state), "check", "--json")
    assert json.loads(r.stdout)["findings"]
    assert not state.exists()


def immutable(path: Path, on: bool) -> None:
    subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True)


def test_unwritable_build_is_viewed_read_only(tmp_path):
    """Really unwritable (immutable directory: even root gets EPERM): status and check still
    work, read-only, and say so; writers refuse with a clear error."""
    state = tmp_path / "s"
    assert run("--state", str(state), "plan", "gpu_count=8").returncode == 0
    assert run("--state", str(state), "check").returncode in (0, 1, 2)
    build_dir = next((state / "builds").iterdir())
    dirs = [state, state / "builds", build_dir]
    for d in dirs:
        immutable(d, True)
    try:
        st = run("--state", str(state), "status", "--json")
        assert st.returncode == 0 and "read-only" in st.stderr
        doc = json.loads(st.stdout)
        assert doc["observing"] is True and doc["build"] == build_dir.name
        ck = run("--state", str(state), "check", "--json", "--stage", "bios")
        assert "not recorded" in ck.stderr and json.loads(ck.stdout)["findings"]
        pl = run("--state", str(state), "plan", "gpu_count=4")
        assert pl.returncode == 3 and "not writable" in pl.stderr
    finally:
        for d in reversed(dirs):
            immutable(d, False)


def test_corrupt_build_file_is_refused_and_kept(tmp_path):
    state = tmp_path / "s"
    assert run("--state", str(state), "plan", "gpu_count=8").returncode == 0
    db = next((state / "builds").glob("*/build.db"))
    for ext in ("-wal", "-shm"):
        Path(str(db) + ext).unlink(missing_ok=True)
    db.write_bytes(b"garbage" * 1000)
    h = hashlib.sha256(db.read_bytes()).hexdigest()
    for args in (["status"], ["check"], ["plan"]):
        r = run("--state", str(state), *args)
        assert r.returncode == 3 and str(db) in r.stderr and "untouched" in r.stderr, args
    assert hashlib.sha256(db.read_bytes()).hexdigest() == h


def test_plan_answers_feed_the_checks(tmp_path):
    state = str(tmp_path / "s")
    r = run("--state", state, "plan", "gpu_count=8", "numa_nodes=64", "scheduler=kubernetes")
    # what it set, one line each, not the whole plan (walk 17)
    assert r.returncode == 0 and "set gpu_count = 8 (was unset)" in r.stdout and "data_path" not in r.stdout
    zh = run("--state", state, "--lang", "zh_CN", "plan", "hostfile=/tmp/hosts")  # walk 35 #15: "（原为 未设置）"
    assert "已设置 hostfile = \"/tmp/hosts\"（原为未设置）" in zh.stdout, zh.stdout
    # a model no table names is kept, with a warning (walk 18: driver.branch then said "no gpu_model in the plan")
    odd = run("--state", state, "plan", "gpu_model=H999")
    assert odd.returncode == 0 and "not a GPU bringup's tables name" in odd.stderr
    branch = json.loads(run("--state", state, "check", "--json", "--step", "driver.branch").stdout)
    assert any("'H999' is not a GPU" in f["message"] for f in branch["findings"]), branch["findings"]
    assert run("--state", state, "plan", "gpu_model=H100 SXM5").stderr == ""
    if not list(Path("/sys/bus/pci/devices").glob("*")) or not any(
            (d / "vendor").read_text().strip() == "0x10de" for d in Path("/sys/bus/pci/devices").glob("*")):
        # GPUs planned, none on the bus: the driver checks wait for them, and the note says so (walk 18: "not applicable")
        drv = json.loads(run("--state", state, "check", "--json", "--stage", "driver").stdout)
        assert drv["verdict"] == "skip" and "wait" in drv["note"] and "not applicable here)" not in drv["note"]
    bad = run("--state", state, "plan", "gpu_count=eight")
    assert bad.returncode == 3 and "gpu_count takes a number" in bad.stderr
    for nonsense, why in (("gpu_count=-1", "between 1 and"), ("numa_nodes=0", "between 1 and"),
                          ("host_ram_gib=nan", "more than 0"), ("baseline_minutes=-3", "more than 0"),
                          ("scheduler=banana", "one of none, slurm, kubernetes"),
                          ("data_path=relative/dir", "absolute path"),
                          ("colour=blue", "unknown plan key"), ("colour=", "unknown plan key")):
        r = run("--state", state, "plan", nonsense)
        assert r.returncode == 3 and why in r.stderr, (nonsense, r.stderr)
    # KEY= clears an answer, as the plan form's empty field does (walk 18: no CLI way to clear one)
    cleared = run("--state", state, "plan", "scheduler=")
    assert cleared.returncode == 0 and 'cleared scheduler (was "kubernetes")' in cleared.stdout, cleared.stdout
    assert '"kubernetes"' not in run("--state", state, "plan").stdout
    doc = json.loads(run("--state", state, "check", "--json", "--stage", "bios").stdout)
    numa = next(f for f in doc["findings"] if f["id"] == "bios.numa")
    assert numa["verdict"] == "fail" and "plan expects 64" in numa["message"]


def test_status_without_and_with_a_build(tmp_path):
    state = str(tmp_path / "s")
    r = run("--state", state, "status", "--json")
    assert json.loads(r.stdout)["build"] is None
    run("--state", state, "plan", "gpu_count=8")
    run("--state", state, "check")
    doc = json.loads(run("--state", state, "status", "--json").stdout)
    assert doc["build"] and [s["id"] for s in doc["stages"]][0] == "plan"
    cpu = next(s for st in doc["stages"] for s in st["steps"] if s["id"] == "bios.cpu")
    assert cpu["status"] in ("passed", "failed") and cpu["verdict"] is not None
    text = run("--state", state, "status").stdout
    assert "resume at:" in text and "bios.cpu" in text
    # a step this machine's check found not applicable reads so, not as a person's [SKIP]
    assert re.search(r"\[ -- \] [a-z_]+\.[a-z0-9_]+\s+not applicable: ", text), text
    # with 8 GPUs planned and none on the bus, a GPU check's skip waits for them, never "n/a" (nothing to do)
    assert re.search(r"\[    \] bios\.above_4g_decoding\s+pending -- waiting for the planned GPUs", text), text
    jsonschema.validate(doc, STATUS_SCHEMA)
    jsonschema.validate(json.loads(run("--state", state + "-none", "status", "--json").stdout), STATUS_SCHEMA)


def test_status_says_warned_never_passed_for_a_step_that_warns(tmp_path):
    """Issue 10: a step whose check warns prints `warned` (text and JSON), its stage is not passed."""
    from wizard.engine import Build
    from wizard.model import Finding, Verdict

    state = tmp_path / "s"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    b.confirm("report.capture")
    b.confirm("report.document")
    b.record_findings("report.handover", [Finding("report.handover", Verdict.WARN, "w")], "2026-01-01T00:00:00+00:00")
    b.close()
    doc = json.loads(run("--state", str(state), "status", "--json").stdout)
    jsonschema.validate(doc, STATUS_SCHEMA)
    report = next(st for st in doc["stages"] if st["id"] == "report")
    assert report["status"] == "warned" and report["steps"][2]["status"] == "warned"
    line = next(ln for ln in run("--state", str(state), "status").stdout.splitlines() if "report.handover" in ln)
    assert line.split()[:3] == ["[WARN]", "report.handover", "warned"] and "passed" not in line


def test_status_names_a_hand_confirmation_a_failing_check_withdrew(tmp_path):
    """walk 29 #13: a confirmation with its note, withdrawn by a failing check and then back to "cannot tell": status
    (text, in both languages, and JSON) says who confirmed it, the note, and that a check reopened it."""
    from wizard.engine import Build
    from wizard.model import Finding, Verdict

    state = tmp_path / "s"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    b.confirm("bios.numa", "photo-in-INC-000123")
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.FAIL, "1 NUMA node")], "2026-01-01T00:00:00+00:00")
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.UNKNOWN, "cannot read")], "2026-01-01T00:00:00+00:00")
    b.close()
    doc = json.loads(run("--state", str(state), "status", "--json").stdout)
    jsonschema.validate(doc, STATUS_SCHEMA)
    step = next(s for st in doc["stages"] for s in st["steps"] if s["id"] == "bios.numa")
    assert step["withdrawn_confirmation"]["note"] == "photo-in-INC-000123" and step["status"] == "pending"
    assert step["withdrawn_confirmation"]["reopened_status"] == "failed"
    text = " ".join(run("--state", str(state), "status").stdout.split())  # unwrapped
    assert "(photo-in-INC-000123); reopened at" in text and "a later check or run failed" in text
    zh = re.sub(r"\s*\n\s*", "", run("--state", str(state), "--lang", "zh_CN", "status").stdout)
    assert "人工确认（photo-in-INC-000123）" in zh and "之后的检查或运行失败" in zh


def test_plan_change_names_the_steps_to_check_again_and_status_marks_them(tmp_path):
    """walk 30 #1: `bringup plan numa_nodes=2` after bios.numa was checked with no numa_nodes names bios.numa to check
    again; status marks it (text and JSON) until it is checked again."""
    from wizard.engine import Build
    from wizard.model import Finding, Verdict

    state = tmp_path / "s"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    b.record_findings("bios.numa", [Finding("bios.numa", Verdict.PASS, "1 NUMA node")], "2026-01-01T00:00:00+00:00",
                      plan_read={"numa_nodes": None})
    b.close()
    out = " ".join(run("--state", str(state), "plan", "numa_nodes=2").stdout.split())
    assert "these steps were checked before this change; check them again: bios.numa" in out
    doc = json.loads(run("--state", str(state), "status", "--json").stdout)
    jsonschema.validate(doc, STATUS_SCHEMA)
    step = next(s for st in doc["stages"] for s in st["steps"] if s["id"] == "bios.numa")
    assert step["plan_changed_since_check"] == ["numa_nodes"]
    text = " ".join(run("--state", str(state), "status").stdout.split())
    assert "(re-check: the plan changed since: numa_nodes: unset -> 2)" in text
    zh = re.sub(r"\s*\n\s*", "", run("--state", str(state), "--lang", "zh_CN", "status").stdout)
    assert "（需重新检查：此后规划已更改：numa_nodes:" in zh


def test_run_dry_run_prints_exact_commands_and_runs_nothing(tmp_path):
    state = str(tmp_path / "s")
    r = run("--state", state, "--dry-run", "run", "os.nouveau")
    osr = Path("/etc/os-release").read_text().lower()
    assert "debian" in osr or "ubuntu" in osr  # this project's machines; other distros: see test_actions
    assert r.returncode == 0, r.stderr
    assert "$ update-initramfs -u -k all" in r.stdout and "write /etc/modprobe.d/blacklist-nouveau.conf" in r.stdout
    assert "dry run: nothing was run" in r.stdout
    assert not Path("/etc/modprobe.d/blacklist-nouveau.conf").exists()
    doc = json.loads(run("--state", state, "status", "--json").stdout)
    step = next(s for st in doc["stages"] for s in st["steps"] if s["id"] == "os.nouveau")
    assert step["status"] == "pending" and doc["running_actions"] == []
    log = next(Path(state).glob("builds/*/actions/*os.nouveau.log")).read_text()
    assert log.startswith("# dry run of: Blacklist nouveau")


def test_run_needs_yes_without_a_terminal(tmp_path):
    r = run("--state", str(tmp_path / "s"), "run", "health.idle_baseline", stdin=subprocess.DEVNULL)
    assert r.returncode == 3 and "--yes" in r.stderr


def test_run_of_a_step_without_an_action_says_how_it_is_completed(tmp_path):
    """Walk 48 #21: `bringup run grounding.esd` said "it is checked or confirmed instead" for a step with no check and
    named no way to confirm it from a shell; a checked step points at `bringup check`."""
    r = run("--state", str(tmp_path / "s"), "run", "grounding.esd", stdin=subprocess.DEVNULL)
    assert r.returncode == 3 and "no check" in r.stderr and "[confirm]" in r.stderr and "d on the step" in r.stderr
    r = run("--state", str(tmp_path / "s"), "run", "bios.iommu", stdin=subprocess.DEVNULL)
    assert r.returncode == 3 and "`bringup check` checks it" in r.stderr


def test_killed_bringup_leaves_the_action_running_and_status_finds_it(tmp_path):
    state = str(tmp_path / "s")
    # 12 s: long enough that `status` (a fresh interpreter, seconds on a loaded CI machine) sees it still running
    assert run("--state", state, "plan", "baseline_minutes=0.2").returncode == 0
    p = subprocess.Popen(bringup_cmd("--state", state, "run", "health.idle_baseline", "--yes"),
                         stdout=subprocess.PIPE, text=True, env=env_for_cli(), cwd=ROOT)
    assert p.stdout is not None
    for line in p.stdout:
        if line.startswith("started run"):
            break
    p.send_signal(signal.SIGKILL)
    p.wait()
    doc = json.loads(run("--state", state, "status", "--json").stdout)
    logs = list(Path(state).glob("builds/*/actions/*.log"))
    assert [a["step"] for a in doc["running_actions"]] == ["health.idle_baseline"], (doc, [l.read_text() for l in logs])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        doc = json.loads(run("--state", state, "status", "--json").stdout)
        if not doc["running_actions"]:
            break
        time.sleep(0.5)
    step = next(s for st in doc["stages"] for s in st["steps"] if s["id"] == "health.idle_baseline")
    log = next(Path(state).glob("builds/*/actions/*health.idle_baseline.log")).read_text()
    assert "# summary " in log and "# exit status 0" in log
    # the run finished and was judged from its log, not passed for exiting 0
    assert step["verdict"] is not None, step
    if nvidia_gpus_on_this_bus() == 0:
        assert step["status"] == "pending" and step["verdict"] == "unknown", step


def test_capture_carries_the_plan_to_snapshot_checks(tmp_path):
    state = str(tmp_path / "s")
    run("--state", state, "plan", "numa_nodes=64")
    bundle = tmp_path / "b.tar.gz"
    assert run("--state", state, "capture", "-o", str(bundle)).returncode == 0
    other = str(tmp_path / "support-desk")  # someone else's machine, no build there
    doc = json.loads(run("--state", other, "check", "--json", "--stage", "bios", "--snapshot", str(bundle)).stdout)
    numa = next(f for f in doc["findings"] if f["id"] == "bios.numa")
    assert numa["verdict"] == "fail" and "plan expects 64" in numa["message"]


def test_cli_dry_run_of_driver_install_on_this_machine(tmp_path):
    """``bringup --dry-run run driver.install`` prints the exact argv for this host and runs nothing.
    On the development VM (Debian 12) that is NVIDIA's Debian 12 repository route."""
    r = subprocess.run([sys.executable, "-m", "wizard.cli", "--state", str(tmp_path), "--dry-run", "run", "driver.install"],
                       capture_output=True, text=True, env=env_for_cli(), cwd=ROOT, timeout=120)
    out = r.stdout
    osr = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    from wizard.distro import packaged_kernel

    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    if not Path("/proc/modules").exists() or ("ID=debian" in osr and not packaged_kernel("debian", release)):
        # walk 21: a kernel that cannot take the NVIDIA modules (no loadable modules, or no headers package: the
        # development VM's own) is refused before any command, naming why; nothing was run
        assert r.returncode == 3 and "cannot run here" in out and release in out, (r.returncode, out)
        assert "$ apt-get" not in out
    elif 'ID=debian' in osr and 'VERSION_ID="12"' in osr:
        assert r.returncode == 0, r.stderr
        assert "$ apt-get update" in out and "nvidia-driver-pinning-580" in out
        assert "nvidia-driver-cuda nvidia-kernel-open-dkms" in out and "$ add-apt-repository -y contrib" in out
        assert "--no-remove" in out and "/compute/cuda/repos/debian12/" in out and "dry run: nothing was run" in out
    else:  # another machine: the command either lists argv or says it cannot run here, never guesses
        assert ("dry run: nothing was run" in out) or ("cannot run here" in out)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, env=env_for_cli(), timeout=300)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def test_check_stage_bios_reports_this_machine(tmp_path):
    r = _run("--state", str(tmp_path / "s"), "check", "--stage", "bios", "--json")
    doc = json.loads(r.stdout)
    by = {}
    for f in doc["findings"]:
        by.setdefault(f["id"], []).append(f)
    assert {s.id for s in steps.stage_by_id("bios").steps} <= set(by)
    iommu = by["bios.iommu"][0]
    assert any(e.startswith("/proc/cmdline") for e in iommu["evidence"])
    driver = (_read("/sys/devices/system/cpu/cpuidle/current_driver") or "").strip()
    power = by["bios.power_profile"][0]
    if driver in ("", "none") and not list(Path("/sys/devices/system/cpu").glob("cpufreq/policy*")):
        assert power["verdict"] == "skip" and "not exposed" in power["message"]
    elif not list(Path("/sys/devices/system/cpu").glob("cpufreq/policy*")):
        # C-states only (this VM): they are never judged, and no frequency policy shows: the BIOS is where to look
        assert power["verdict"] == "unknown" and f"cpuidle driver {driver}" in power["message"]
        assert "BIOS" in power["remedy"]
    else:
        assert power["verdict"] == "pass" and "cpufreq" in power["message"]
    nodes = len(list(Path("/sys/devices/system/node").glob("node[0-9]*")))
    assert f"{nodes} NUMA node(s)" in by["bios.numa"][0]["message"]
    mem = by["bios.memory_channels"][0]
    if not Path("/sys/firmware/dmi").exists():
        assert mem["verdict"] == "unknown" and "not exposed" in mem["message"]  # a person checks it in the BIOS/BMC
    sb = by["bios.secure_boot"][0]
    if not Path("/sys/firmware/efi").exists():
        assert sb["verdict"] == "skip" and "UEFI" in sb["message"]
    human = _run("--state", str(tmp_path / "s"), "check", "--stage", "bios")
    assert "bios.power_profile" in human.stdout and "overall:" in human.stdout


def test_check_stage_os_reports_this_machine(tmp_path):
    r = _run("--state", str(tmp_path / "s"), "check", "--stage", "os", "--json")
    doc = json.loads(r.stdout)
    by = {f["id"]: f for f in doc["findings"]}
    assert {s.id for s in steps.stage_by_id("os").steps} <= set(by)
    swaps = [ln for ln in (_read("/proc/swaps") or "").splitlines()[1:] if ln.strip()]
    assert (by["os.swap"]["message"] == "swap is off") == (not swaps)
    rel = os.uname().release
    assert rel in by["os.kernel_headers"]["message"]
    assert (by["os.kernel_headers"]["verdict"] == "pass") == Path(f"/lib/modules/{rel}/build/Makefile").exists()
    assert by["os.swap_rollback"]["verdict"] == "skip"
    assert by["os.mount_options"]["verdict"] in ("pass", "warn") and "/" in by["os.mount_options"]["message"]


def test_size_json_is_the_screens_computation(tmp_path):
    """`bringup size ... --json` through a real subprocess: valid against assets/schema/size.schema.json, the same
    numbers as wizard.sizing.size (the screen's computation), and the issue's case: 70B full fine-tune, ZeRO-3,
    checkpointing, 8 x H100 80 GB -> the ZeRO paper's 16 GPUs, DeepSpeed's estimate_zero3_model_states_mem_needs
    (4*LL + 18psi/N) 18: the larger counts; sharded init (zero.Init) host RAM 12 GiB, not 1,120 GB."""
    from wizard import sizing as szm
    from wizard.cli import SIZE_FLAGS

    assert set(SIZE_FLAGS) == set(szm.FIELDS)  # one option per field of the sizing form
    r = run("--state", str(tmp_path / "s"), "size", "--params", "70e9", "--method", "full", "--zero", "3",
            "--gpus", "8", "--gpu", "H100 SXM5", "--checkpointing", "full", "--json")
    assert r.returncode == 1, r.stderr  # 18 GPUs needed, 8 given
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((ROOT / "assets" / "schema" / "size.schema.json").read_text()))
    assert doc["min_gpus"]["paper"] == 16 and doc["min_gpus"]["deepspeed"] == 18 and doc["min_gpus"]["total"] == 18
    assert doc["host_ram"]["loading"] == "sharded" and doc["host_ram"]["min_gib"] == 12
    inputs, errors = szm.parse_inputs({"params": "70e9", "zero_stage": "3", "checkpointing": "full"})
    here = szm.to_json(szm.size(inputs))
    assert doc["per_gpu"] == here["per_gpu"] and doc["results"] == here["results"]
    assert "whole model on one device" in doc["per_gpu"]["accelerate_estimate_scope"]  # not this GPU's share
    assert not (tmp_path / "s").exists()  # sizing reads nothing and writes nothing


def test_size_human_table_refusals_and_stored_inputs(tmp_path):
    r = run("size", "--params", "7B", "--method", "qlora", "--gpus", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("workload ") and "min GPUs" in r.stdout and "source: " in r.stdout
    # no count is enough: the summary row says why (walk 17: the reason sat 40 lines further down)
    short = run("size", "--params", "70e9", "--method", "full", "--zero", "3", "--gpus", "8", "--gpu", "H100 SXM5")
    assert "the activations alone" in " ".join(short.stdout.split()) and "--checkpointing full" in short.stdout
    # walk 24: the summary's GiB figure grouped by thousands as every other figure (it read "= 1043.1 GiB")
    full = run("size", "--params", "70B", "--gpus", "8", "--gpu", "H100 SXM5")
    assert "1,120.0 GB needed = 1,043.1 GiB" in " ".join(full.stdout.split())
    # walk 32 #10: at ZeRO-0 the summary named DeepSpeed (no estimator there) and no way out; it gives ZeRO-3's count
    zero0 = run("size", "--params", "7e9", "--gpus", "8", "--gpu", "H100 SXM5")
    row = next(ln for ln in zero0.stdout.splitlines() if ln.startswith("min GPUs"))
    assert "no GPU count is enough at ZeRO-0; 8 given (ZeRO-3: 3)" in row and "DeepSpeed" not in row, row
    # --gpu ? lists the names (plan's unknown-model warning points at it; walk 19: it was an error, exit 3)
    names = run("size", "--gpu", "?")
    assert names.returncode == 0 and "H100 SXM5" in names.stdout.splitlines() and not names.stderr
    bad = run("size", "--zero", "9", "--params", "seven")
    assert bad.returncode == 3 and not bad.stdout
    assert "--zero '9': ZeRO stage: between 0 and 3" in bad.stderr and "--params 'seven'" in bad.stderr
    # --from-build: the inputs the sizing screen kept with the build (meta sizing_inputs); options still win
    from wizard import sizing as szm
    from wizard.engine import Build

    state = tmp_path / "s"
    b = Build.open(state, steps.STAGES, {"hostname": "vm", "boot_id": "x"}, create=True)
    b.store.set_meta(**{szm.STORE_KEY: {"params": "405B", "zero_stage": "3", "gpu_count": "8"}})
    b.close()
    doc = json.loads(run("--state", str(state), "size", "--from-build", "--gpus", "16", "--json").stdout)
    assert doc["inputs"]["params"] == "405B" and doc["parallel"]["zero_stage"] == 3 and doc["parallel"]["dp"] == 16


# ---------------------------------------------------------------- private state and honest words (issue 11 #7, #10)

def _loose(root: Path) -> list[str]:
    """Entries under ``root`` (itself included) that group or others could use: a directory not 0700, a file
    with any group/other bit."""
    out = []
    for p in [root, *root.rglob("*")]:
        m = p.lstat().st_mode & 0o777
        if (p.is_dir() and not p.is_symlink() and m != 0o700) or (p.is_file() and m & 0o077):
            out.append(f"{oct(m)} {p}")
    return out


def test_everything_bringup_writes_is_private_under_umask_022(tmp_path):
    """Issue 11 #7: as root with umask 022 the state dirs were 0755 and the DB, logs, specs, status files and
    bundles 0644, though they hold the machine id, serials and the kernel log."""
    state, bundle = tmp_path / "s", tmp_path / "node.tar.gz"

    def run022(*args: str) -> subprocess.CompletedProcess:
        return run("--state", str(state), *args, umask=0o022)

    assert run022("plan", "gpu_count=1", "baseline_minutes=0.01").returncode == 0
    r = run022("run", "health.idle_baseline", "--yes")
    assert r.returncode in (0, 1, 2), r.stderr
    assert run022("capture", "-o", str(bundle)).returncode == 0
    made = [p for p in state.rglob("*")]
    assert any(p.name == "build.db" for p in made) and any(p.suffix == ".log" for p in made)
    assert any(p.suffix == ".status" for p in made) and any(p.suffix == ".json" for p in made)
    assert _loose(state) == [] and bundle.stat().st_mode & 0o777 == 0o600


def test_a_loose_state_tree_is_tightened_and_said_once(tmp_path):
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="bringup-test-"))  # reachable by other users (pytest's tmp_path is not)
    try:
        top.chmod(0o755)
        state = top / "s"
        assert run("--state", str(state), "plan", "gpu_count=1").returncode == 0
        for p in [state, *state.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)  # as an older bringup left it
        r = run("--state", str(state), "status")
        assert r.returncode == 0
        assert "could be read by other users; they are now readable by their owner only" in r.stderr, r.stderr
        assert _loose(state) == []
        again = run("--state", str(state), "status")
        assert "could be read" not in again.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run_while_held(tmp_path, *args: str):
    """(``bringup ARGS``'s result, the build directory) while this test process holds the build's lock, as another
    bringup (a TUI) would: a build with gpu_count=1 under tmp_path/s."""
    from wizard.store import BuildLock

    state = tmp_path / "s"
    assert run("--state", str(state), "plan", "gpu_count=1").returncode == 0
    build_dir = next((state / "builds").iterdir())
    lock = BuildLock(build_dir)
    assert lock.acquire()
    try:
        return run("--state", str(state), *args), build_dir
    finally:
        lock.release()


def test_run_is_refused_before_its_commands_while_another_bringup_holds_the_build(tmp_path):
    """Walk finding: `bringup run` printed the whole action, then refused "in this window"; it refuses first now, in
    a shell's words, and runs nothing."""
    r, _ = run_while_held(tmp_path, "run", "health.idle_baseline", "--yes")
    assert r.returncode == 3 and "$ " not in r.stdout and "this window" not in r.stderr
    assert f"another bringup (pid {os.getpid()}) holds this build: run the step's action from its window" in r.stderr


def test_a_dry_run_while_another_bringup_holds_the_build_shows_and_is_not_an_error(tmp_path):
    """Walk 33 #14: `--dry-run run os.tools` listed the commands, then failed with "another bringup holds this build":
    a dry run only shows; it is not recorded (said, with the holder), and exits 0."""
    r, build_dir = run_while_held(tmp_path, "--dry-run", "run", "os.tools")
    assert r.returncode == 0, (r.stdout, r.stderr)
    said = " ".join(r.stdout.split())  # wrapped to the terminal
    assert "$ " in r.stdout and "dry run: nothing was run; not recorded in the build" in said
    assert f"another bringup (pid {os.getpid()}) holds this build" in said and "error" not in r.stderr
    assert not list((build_dir / "actions").glob("*.log")) if (build_dir / "actions").exists() else True


def test_a_dry_run_while_another_bringup_holds_the_build_says_why_it_could_not_run_anyway(tmp_path):
    """Walk 38 #19: `--dry-run run` of an action that cannot run on this machine (driver.persistence without an NVIDIA
    driver, as on this test machine) said only "not recorded ... another bringup holds this build" while the TUI was
    open, so the preview the step's instructions send the operator to showed nothing: it says why, as it does
    without the other bringup."""
    r, _ = run_while_held(tmp_path, "--dry-run", "run", "driver.persistence")
    said = " ".join(r.stdout.split())
    assert "cannot run here: install the NVIDIA driver first (driver.install)" in said, said
    assert "not recorded in the build" in said and r.returncode == 0


def test_validate_is_refused_in_runs_words_while_another_bringup_holds_the_build(tmp_path):
    """Walk 23 #2: validate said "cannot run it here: another bringup holds this build: actions are disabled in this
    window" (half English in zh); it says what `run` says, with the holder's pid, translated."""
    r, _ = run_while_held(tmp_path, "validate", "gpu", "--device", "cpu")
    assert r.returncode == 3 and "this window" not in r.stderr and "started run" not in r.stdout
    assert f"another bringup (pid {os.getpid()}) holds this build: run the step's action from its window" in r.stderr
    r, _ = run_while_held(tmp_path, "--lang", "zh_CN", "validate", "gpu", "--device", "cpu")
    assert r.returncode == 3 and f"另一个 bringup（pid {os.getpid()}）正占用这个构建" in r.stderr
    assert "another bringup" not in r.stderr and "window" not in r.stderr


def test_check_says_its_findings_are_not_recorded_while_another_bringup_holds_the_build(tmp_path):
    """Issue 11 #10: it said nothing, and recorded nothing."""
    import sqlite3

    r, build_dir = run_while_held(tmp_path, "check", "--stage", "bios")
    assert r.returncode in (0, 1, 2) and "bios." in r.stdout
    assert f"another bringup (pid {os.getpid()}) holds this build: findings are not recorded" in r.stderr
    with sqlite3.connect(f"file:{build_dir / 'build.db'}?mode=ro", uri=True) as db:
        assert db.execute("SELECT count(*) FROM check_run").fetchone()[0] == 0


def test_a_read_only_filesystem_is_named_and_read(tmp_path):
    """Issue 11 #10 on a real read-only mount (a tmpfs remounted read-only in a private mount namespace):
    status, check and plan read; the words name the read-only filesystem, never "run as root" nor another
    bringup; a write says why it cannot."""
    import shutil

    if shutil.which("unshare") is None:
        import pytest

        pytest.skip("unshare (util-linux) is not installed")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    state = mnt / "s"
    py = " ".join(bringup_cmd())
    script = (f"set -e\nmount -t tmpfs -o size=16m tmpfs {mnt}\n{py} --state {state} plan gpu_count=2 >/dev/null\n"
              f"mount -o remount,ro {mnt}\nset +e\n"
              f"for c in status 'check --stage bios' plan 'plan gpu_count=4'; do\n"
              f"  echo \"== $c\"; {py} --state {state} $c 2>&1; echo \"rc=$?\"\ndone\n")
    root = ["--map-root-user"] if os.geteuid() != 0 else []
    r = subprocess.run(["unshare", "--mount", *root, "sh", "-c", script], capture_output=True, text=True, timeout=300,
                       env=env_for_cli(), cwd=ROOT)
    if "== status" not in r.stdout:
        import pytest

        pytest.skip(f"cannot mount a tmpfs in a private mount namespace here: {r.stderr.strip()[-300:]}")
    parts = dict(p.split("\n", 1) for p in r.stdout.split("== ")[1:])
    for name in ("status", "check --stage bios", "plan"):
        out = parts[name]
        assert out.rstrip().endswith("rc=0") or name.startswith("check"), (name, out)
        assert f"the state directory {state} is on a read-only filesystem" in out, (name, out)
        assert "run as root" not in out and "another bringup" not in out, (name, out)
    assert "(read-only: the state directory cannot be written)" in parts["status"]
    assert "findings are not recorded" in parts["check --stage bios"]
    assert re.search(r"^gpu_count +2 ", parts["plan"], re.M)
    assert parts["plan gpu_count=4"].rstrip().endswith("rc=3") and "read-only filesystem" in parts["plan gpu_count=4"]


# ---------------------------------------------------------------------------------- issue 15: the command line


def _help(*args: str, columns: int = 80) -> str:
    env = {**env_for_cli(), "COLUMNS": str(columns)}
    r = subprocess.run(bringup_cmd(*args, "--help"), capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert r.returncode == 0 and not r.stderr, r.stderr
    return r.stdout


def test_help_says_no_command_opens_the_tui_and_each_commands_exit_statuses():
    from wizard import cli

    top = _help()
    assert max(len(ln) for ln in top.splitlines()) <= 80
    assert "With no command, bringup opens the TUI: the full-screen wizard" in top
    assert "--basic" in top and "--nodes NODESET" in top  # the TUI's own options are shown there
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(cli.COMMANDS)  # a new command without its help and exit statuses fails here
    for name, ch in cli.COMMANDS.items():
        assert f"    {name:<17}{ch.summary.split()[0]}" in top  # one line in the command list
        row = next(ln for ln in top.splitlines() if ln.startswith(f"  {name} ") and ln.split()[1:2] == ["0"])
        assert row.split()[1:] == [str(c) for c, _ in ch.exits]
        text = _help(name)
        assert ch.summary[1:].split(",")[0] in " ".join(text.split())  # its one-line description atop its help
        assert max(len(ln) for ln in text.splitlines()) <= 80, name  # readable on an 80-column console
        table = text.split("\nexit status:\n", 1)[1]
        for code, what in ch.exits:
            assert f"  {code}" in table and " ".join(what.split()[:3]) in " ".join(table.split()), (name, code)
        never = [c for c in (0, 1, 2, 3) if c not in dict(ch.exits)]
        assert (f"It never exits {' or '.join(map(str, never))}" in text) == bool(never), name
    assert "It never exits 1 or 2" in _help("plan")
    assert "It never exits" not in _help("check")


def test_check_help_shows_only_the_global_options_that_apply():
    check = _help("check")
    assert "--state DIR" in check and "--snapshot BUNDLE" in check
    assert "--basic" not in check and "--dry-run" not in check  # the TUI's / actions' options
    assert "--dry-run" in _help("run") and "--snapshot" not in _help("run")
    assert "--state" not in _help("explain")  # it reads no build
    # still accepted where they were (scripts keep working): --snapshot on status is refused with its reason
    r = run("status", "--snapshot", str(DEVVM_BUNDLE))
    assert r.returncode == 3 and "--snapshot does not apply" in r.stderr


def test_plan_help_lists_every_key_with_its_meaning():
    from wizard.plan import PLAN_KEYS

    text = _help("plan")
    flat = " ".join(text.split())
    for k in PLAN_KEYS.values():
        assert f"\n  {k.name}  " in text and " ".join(k.help.split()) in flat, k.name
    assert max(len(ln) for ln in text.splitlines()) <= 80


def test_run_help_lists_the_steps_it_runs_by_stage_within_80_columns():
    text = _help("run")
    listed = text.split("STEP is one of these", 1)[1].split("\nexit status:")[0]
    flat = " ".join(listed.split())
    for st in steps.STAGES:
        runnable = [s for s in st.steps if s.action is not None]
        assert (f"\n  {st.title}\n" in listed) == bool(runnable), st.id
        for s in runnable:
            assert f"\n    {s.id} " in listed and f"{s.id} {' '.join(s.title.split())}" in flat, s.id
    assert "health.gpu_pci" not in listed  # checked, not run
    assert max(len(ln) for ln in text.splitlines()) <= 80, text


def test_chinese_help_aligns_usage_by_cells_and_ends_headings_in_a_full_width_colon():
    """Issue 15 (reviewer): in Chinese the usage's second line started 3 columns left of its words ("用法：" is 3
    characters, 6 cells) and group headings ended in an ASCII colon ("选项:") beside "退出状态：". Each line of the
    usage after the first starts under the first option; every heading ends in "："."""
    from rich.cells import cell_len

    for cmd in ("run", "check", "size"):
        text = _help("--lang", "zh_CN", cmd)
        usage = text.split("\n\n", 1)[0].splitlines()
        assert usage[0].startswith("用法：bringup ") and len(usage) > 1, text
        col = cell_len(usage[0][:usage[0].index("[")])  # where the first option starts, in cells
        assert all(len(ln) - len(ln.lstrip()) == col for ln in usage[1:]), usage
        headings = [ln for ln in text.splitlines() if ln and not ln.startswith(" ") and ln.endswith((":", "："))]
        assert headings and all(h.endswith("：") for h in headings), headings


def test_argparse_errors_are_in_the_readers_language_and_exit_3():
    """Walk 25 #7: argparse's own errors stayed English in Chinese ("the following arguments are required",
    "invalid choice", "unrecognized arguments"); they go through bringup's catalogue, still exit 3 (a usage error,
    never 2, a hardware verdict), and the "error:" prefix scripts grep for stays."""
    cases = {("capture",): "缺少以下必需的参数：-o/--output", ("nosuchcommand",): "无效的选择：'nosuchcommand'（可选：",
             ("report", "--format", "pdf"): "参数 --format：无效的选择：'pdf'（可选：'html', 'md', 'json'）",
             ("check", "--timeout", "abc"): "参数 --timeout：无效的 float 值：'abc'", ("status", "extra"): "无法识别的参数：extra"}
    for argv, words in cases.items():
        zh = run("--lang", "zh_CN", *argv)
        assert zh.returncode == 3 and words in zh.stderr and "error: " in zh.stderr, (argv, zh.stderr)
    en = run("capture")
    assert en.returncode == 3 and "error: the following arguments are required: -o/--output" in en.stderr


def test_run_of_an_action_with_nothing_to_do_says_so_and_exits_0(tmp_path):
    """os.swap_rollback on a machine whose /etc/fstab has no line bringup commented out (bringup never edits this
    machine's fstab in tests): "nothing to roll back", exit 0 (done: the machine already is as it would leave it),
    nothing recorded as run, and the description wrapped to the terminal."""
    from wizard.parsers.platform import SWAP_OFF_MARK

    fstab = Path("/etc/fstab")
    if fstab.exists() and SWAP_OFF_MARK in fstab.read_text(errors="replace"):
        pytest.fail("this machine's /etc/fstab has lines bringup commented out: not a machine to test on")
    state = str(tmp_path / "s")
    env = {**env_for_cli(), "COLUMNS": "60"}
    r = subprocess.run(bringup_cmd("--state", state, "--dry-run", "run", "os.swap_rollback"), capture_output=True,
                       text=True, timeout=120, env=env, cwd=ROOT)
    if not fstab.exists():  # a container without one: bringup cannot tell, a person must look (not "done")
        assert r.returncode == 3 and "could not read /etc/fstab" in " ".join(r.stdout.split()), r.stdout
        return
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "nothing to roll back: /etc/fstab has no line bringup commented out" in " ".join(r.stdout.split())
    assert "cannot run here" not in r.stdout and not list(Path(state).glob("builds/*/actions/*.log"))
    assert all(len(ln) <= 60 for ln in r.stdout.splitlines() if not ln.lstrip().startswith(("$", "write "))), r.stdout


def test_size_text_wraps_to_the_terminal():
    """Issue 15 (reviewer): `size` printed source lists of up to 761 columns. Every line is within the width but
    for one word longer than the room (a URL stays whole)."""
    env = {**env_for_cli(), "COLUMNS": "80"}
    r = subprocess.run(bringup_cmd("size", "--params", "70e9", "--method", "full", "--zero", "3", "--gpus", "8",
                                   "--gpu", "H100 SXM5"), capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr
    for ln in r.stdout.splitlines():
        assert len(ln) <= 80 or len(ln.split()[-1]) > 40, ln
    assert "source: ZeRO paper" in r.stdout


def _check_counts(findings) -> str:
    n = {v: sum(f["verdict"] == v for f in findings) for v in ("pass", "warn", "fail", "skip", "unknown")}
    return (f"{n['pass']} pass, {n['warn']} warn, {n['fail']} fail, {n['skip']} skip"
            + (f", {n['unknown']} unknown" if n["unknown"] else ""))


@pytest.mark.parametrize("columns", [60, 100])
def test_check_text_has_stage_headings_counts_and_wraps_to_the_terminal(tmp_path, columns):
    """Issue 15: `check`'s text is grouped under its stages with counts per verdict, every finding wrapped to the
    terminal (COLUMNS) with its continuation lines under the message, and --json does not change."""
    env = {**env_for_cli(), "COLUMNS": str(columns)}

    def check(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "check", "--snapshot", str(DEVVM_BUNDLE),
                                          *extra), capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)

    r, j = check(), check("--json")
    doc = json.loads(j.stdout)
    assert r.returncode == j.returncode == 2
    jsonschema.validate(doc, SCHEMA)
    plain = json.loads(run("--state", str(tmp_path / "s"), "check", "--snapshot", str(DEVVM_BUNDLE), "--json").stdout)
    assert doc["findings"] == plain["findings"]  # the terminal's width never reaches the JSON
    lines = r.stdout.splitlines()
    by_stage: dict[str, list] = {}
    for f in doc["findings"]:
        by_stage.setdefault(steps.step_by_id(f["step"]).stage_id, []).append(f)
    paragraphs = [" ".join(p.split()) for p in r.stdout.split("\n\n")]  # a heading opens each stage's paragraph
    headings = [p.split(" [", 1)[0] for p in paragraphs[1:-1]]
    assert headings == [f"{st.title}: {_check_counts(by_stage[st.id])}" for st in steps.STAGES if st.id in by_stage]
    assert paragraphs[-1] == f"overall: {doc['verdict']} ({_check_counts(doc['findings'])})"
    for ln in lines:  # within the width, a word longer than the room too: it folds (the new-operator review: the
        assert len(ln) <= columns, ln  # mount options string, indented to the message column, ran to 92 columns)
    if columns == 60:  # folded at the width, under the message column
        mount = next(i for i, ln in enumerate(lines) if ln.startswith("[ OK ] os.mount_options "))
        # after an option's comma, not inside "resuid" (walk 31 #8)
        opts = "(rw,relatime,discard,resv_strict,resuid=65534,resgid=65534)"
        shown = [ln.strip() for ln in lines[mount:mount + 5]]
        end = next(i for i, ln in enumerate(shown) if ln.endswith("resgid=65534)"))
        start = next(i for i, ln in enumerate(shown) if "(rw," in ln)
        assert "".join(shown[start:end + 1]).endswith(opts), shown
        assert all(ln.endswith(",") for ln in shown[start:end]), shown  # each break after an option's comma
    bare = "".join(r.stdout.split())  # a folded word reads whole without the line breaks and indents
    for f in doc["findings"]:  # nothing lost or cut: each message (and a non-pass's remedy) reads whole
        subject = subject_prefix(f["subject"], f["message"])  # "host"/"node" (the machine itself) not repeated
        assert "".join((subject + f["message"]).split()) in bare, f["id"]
        if f["verdict"] in ("fail", "warn", "unknown") and f["remedy"]:
            assert "->" + "".join(f["remedy"].split()) in bare, f["id"]
        # a finding whose id is not a step's names its step: what `run`, `check --step` and `skip` take
        said = f"]{f['id']}" + "".join((subject + f["message"]).split())
        step_named = said + f"(step{f['step']})" in bare
        assert step_named == (f["id"] != f["step"]), f["id"]
    assert any(f["id"] != f["step"] for f in doc["findings"])
    # one message column for every stage: as wide as the longest id (18 to 26 characters, 34 left for the message)
    col = 7 + max(18, min(26, columns - 42, max(len(f["id"]) for f in doc["findings"]))) + 1
    gpu_pci = next(i for i, ln in enumerate(lines) if ln.startswith("[FAIL] health.gpu_pci ")
                   and ln.endswith(" no NVIDIA GPU on the PCI bus"))
    assert lines[gpu_pci + 1].startswith("       -> Check that the GPUs")
    assert lines[gpu_pci + 2].startswith(" " * 10) and lines[gpu_pci + 2][10] != " "  # under the remedy
    long_ones = [i for i, ln in enumerate(lines) if ln.startswith("[SKIP] bios.secure_boot ")]
    assert long_ones and lines[long_ones[0] + 1].startswith(" " * col) and lines[long_ones[0] + 1][col] != " "
    assert all(ln[col - 1] == " " and ln[col] != " " for ln in lines if ln.startswith("[") and len(ln) > col
               and len(ln[7:].split()[0]) <= col - 8), "a message out of its column"
    wrapped = sum(1 for ln in lines if ln.startswith(" " * col))
    assert wrapped > (40 if columns == 60 else 10)
    assert all(h.isascii() for h in headings + paragraphs[:1] + paragraphs[-1:])
    assert all(ln[:6] in ("[ OK ]", "[WARN]", "[FAIL]", "[SKIP]", "[ ?? ]") for ln in lines if ln.startswith("["))


def test_validate_nodes_text_wraps_its_findings_to_the_terminal(tmp_path):
    """The new-operator review: `validate nodes` printed its verdict lines unwrapped (150-400 columns: "[FAIL]
    multinode.nodes  n2 (127.0.0.2) unreachable: ... (step multinode.allreduce)"), where `check` wraps each to the
    terminal with continuation lines under the message. Two nodes whose ssh port is closed: no sshd needed."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = tmp_path / "ssh_config"
    cfg.write_text("".join(f"Host {n}\n  HostName 127.0.0.1\n  Port {port}\n  StrictHostKeyChecking no\n"
                           f"  UserKnownHostsFile /dev/null\n" for n in ("n1", "n2")))
    hf = tmp_path / "hostfile"
    hf.write_text("n1 n1 1\nn2 n2 1\n")
    r = subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "validate", "nodes", "--device", "cpu",
                                   "--hostfile", str(hf), "--ssh-config", str(cfg)), capture_output=True, text=True,
                       timeout=120, env={**env_for_cli(), "COLUMNS": "80"}, cwd=ROOT)
    assert r.returncode == 2, r.stdout + r.stderr
    verdicts = r.stdout[r.stdout.index("the run "):].splitlines()[1:]  # the commands shown before it may stay long
    assert [ln for ln in verdicts if ln.startswith("[FAIL] multinode.nodes ")], r.stdout
    assert all(len(ln) <= 80 for ln in verdicts), r.stdout
    # the message's first column (which node it names first, or a folded n[1-2], depends on which ssh answers first)
    col = re.match(r"\[FAIL\] multinode\.nodes +", next(ln for ln in verdicts
                                                       if ln.startswith("[FAIL] multinode.nodes "))).end()
    nodes = verdicts.index(next(ln for ln in verdicts if ln.startswith("[FAIL] multinode.nodes ")))
    assert verdicts[nodes + 1].startswith(" " * col) and verdicts[nodes + 1][col] != " "  # under the message
    assert "unreachable" in " ".join(r.stdout.split()) and "-> Check that `ssh n1 true` works" in r.stdout


def test_check_of_a_stage_without_checks_says_what_the_build_recorded(tmp_path):
    """`check --stage multinode` has nothing to probe (its steps are runs): its skip and exit 0 are the check's, and
    the text and JSON say the stage this build records (a failed multi-node run stays failed) so a script reading
    exit 0 alone is not the only word."""
    from wizard.model import StepStatus, Verdict
    from wizard.store import Store

    state = tmp_path / "s"
    assert run("--state", str(state), "plan", "gpu_count=8").returncode == 0
    pending = run("--state", str(state), "check", "--stage", "multinode", "--json")
    assert pending.returncode == 0 and json.loads(pending.stdout)["stage_status"] == "pending"
    store = Store.open(next((state / "builds").glob("*/build.db")))
    store.set_step("multinode.allreduce", StepStatus.FAILED, Verdict.FAIL, "busbw 3 GB/s")
    store.close()
    doc = json.loads(run("--state", str(state), "check", "--stage", "multinode", "--json").stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["verdict"] == "skip" and doc["stage_status"] == "failed"
    assert "records the stage failed" in doc["note"]
    text = run("--state", str(state), "check", "--stage", "multinode")
    assert text.returncode == 0 and "records the stage failed" in " ".join(text.stdout.split())


def test_status_text_counts_the_steps_left_in_a_stage_under_way(tmp_path):
    """A stage with some steps done and none failed is still pending in the JSON (the contract) and says in the
    text how many of its steps are left, so "pending" never stands beside finished work."""
    from wizard.model import StepStatus, Verdict
    from wizard.store import Store

    state = tmp_path / "s"
    assert run("--state", str(state), "plan", "gpu_count=8").returncode == 0
    store = Store.open(next((state / "builds").glob("*/build.db")))
    store.set_step("plan.workload", StepStatus.CONFIRMED)
    store.set_step("plan.host", StepStatus.PASSED, Verdict.PASS)
    store.close()
    doc = json.loads(run("--state", str(state), "status", "--json").stdout)
    plan = next(st for st in doc["stages"] if st["id"] == "plan")
    assert plan["status"] == "pending"
    text = run("--state", str(state), "status").stdout
    assert f"Plan & sizing (1 of {len(plan['steps'])} steps left)" in text
    report = next(st for st in doc["stages"] if st["id"] == "report")
    # an untouched stage says its count too (walk 33 #12: some stages had one and others none)
    assert f"Report ({len(report['steps'])} of {len(report['steps'])} steps left)" in text
    # walk 27 #5: a done stage with a person's skip in it said a bare "[ OK ]"; it says how many were skipped
    store = Store.open(next((state / "builds").glob("*/build.db")))
    store.set_step("plan.host", StepStatus.SKIPPED, None, "test skip", user="root")
    store.set_step("plan.power", StepStatus.CONFIRMED)
    store.close()
    text = run("--state", str(state), "status").stdout
    assert "[ OK ] Plan & sizing (1 step skipped by a person)" in text, text
    zh = run("--state", str(state), "--lang", "zh_CN", "status").stdout
    assert "规划与容量估算（1 个步骤手动跳过）" in zh


def test_plan_listing_keeps_its_columns_with_a_long_value(tmp_path):
    """walk 20: a long torch_python pushed its help onto the value's line, out of the help column; 1044 read 1044.0.
    A long value stands alone, its help under the help column; a whole number prints without '.0'."""
    state = str(tmp_path / "s")
    run("--state", state, "check")
    r = run("--state", state, "plan", "torch_python=/opt/a-long-venv-name/bin/python", "host_ram_min_gib=1044")
    assert "set host_ram_min_gib = 1044" in r.stdout and "1044.0" not in r.stdout
    lines = run("--state", state, "plan").stdout.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("torch_python"))
    assert lines[i].split() == ["torch_python", '"/opt/a-long-venv-name/bin/python"']
    col = next(len(ln) - len(ln.lstrip()) for ln in lines[i + 1:i + 2])
    first_help = next(ln for ln in lines if ln.startswith("data_path"))
    assert col == first_help.index("absolute"), (lines[i + 1], first_help)
    assert any(ln.startswith("host_ram_min_gib") and " 1044 " in ln for ln in lines)


def test_a_quoted_table_row_is_cut_not_wrapped():
    """walk 20: nvidia-smi's box rows quoted as evidence wrapped at 80 columns and the table fell apart. A table row
    is cut at the width with an ellipsis (--json keeps it whole); so is any other evidence line (the new-operator
    review: one convention, a folded line read as several input lines)."""
    from rich.cells import cell_len

    from wizard.cli import _cut_row

    row = "|   1  NVIDIA H100 80GB HBM3          On  |   00000000:2A:00.0 Off |                    0 |"
    assert _cut_row(row, 60) == row[:59] + "…"
    assert _cut_row("+-----------------------------------------+------------------------+----------------------+", 40).endswith("…")
    prose = "NVRM: Xid (PCI:0000:2a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    assert _cut_row(prose, 60) == prose[:59] + "…" and _cut_row(prose, 100) == prose
    assert cell_len(_cut_row("GPU 0 温度过高 " * 20, 61)) <= 61 and len(_cut_row("a\tb" * 40, 40)) == 40


def test_explain_cuts_a_long_evidence_line_to_the_width_with_an_ellipsis(tmp_path):
    """The new-operator review: `explain` of a base64 blob folded its one input line into rows ("| 0+A32dp..." then
    "| 9TWNMRR") that read as separate input lines. Each evidence line is one row under "| ", cut to the terminal with
    "…"; --json quotes it whole."""
    import base64

    blob = tmp_path / "g.txt"
    blob.write_text(base64.b64encode(bytes(range(256)) * 6).decode())  # one line of 2,048 characters
    env = {**env_for_cli(), "COLUMNS": "80"}
    r = subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "explain", str(blob)), capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    rows = [ln for ln in r.stdout.splitlines() if ln.lstrip().startswith("| ")]
    assert len(rows) == 1 and len(rows[0]) == 80 and rows[0].endswith("…"), r.stdout
    assert rows[0].strip()[2:-1] in blob.read_text()
    # walk 32 #18: the text says where the whole line is, once
    assert " ".join(r.stdout.split()).count("--json keeps them whole") == 1, r.stdout
    j = json.loads(run("--state", str(tmp_path / "s"), "explain", "--json", str(blob)).stdout)
    assert any(len(e) > 80 for f in j["inputs"][0]["findings"] for e in f["evidence"])


def test_ack_takes_the_key_check_prints_and_lists_it_with_its_subject(tmp_path):
    """A past event's finding prints the command that sets it aside (its key); `bringup ack KEY --reason` takes that
    key, and `bringup ack` lists it as the check named it (subject, then message). Walk 20: the error told the
    operator `check` prints the key, and it did not."""
    import io

    from wizard.cli import print_findings
    from wizard.engine import Build
    from wizard.model import Finding, Verdict

    state = tmp_path / "s"
    xid = Finding("health.kernel_log", Verdict.WARN, "Xid 13 at 12.5 s: Graphics SM Warp Exception", "GPU 0",
                  ("[   12.5] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics SM Warp Exception",), "rerun the job",
                  "NVIDIA Xid Errors", key="xid-13-3b-125")
    b = Build.open(state, steps.STAGES, {"boot_id": "boot-a"}, create=True)
    try:
        b.record_findings("health.kernel_log", [xid], "2026-12-04T00:00:00+00:00")
    finally:
        b.close()
    out = io.StringIO()
    print_findings([xid], out=out, width=80)
    assert "once dealt with: bringup ack xid-13-3b-125 --reason TEXT" in out.getvalue()
    r = run("--state", str(state), "ack", "xid-13-3b-125", "--reason", "GPU reseated, job reran clean")
    assert r.returncode == 0, r.stderr
    assert "it no longer counts in checks of this build" in r.stdout
    listed = run("--state", str(state), "ack")
    assert listed.returncode == 0
    assert "xid-13-3b-125  health.kernel_log  GPU 0: Xid 13 at 12.5 s" in listed.stdout
    assert "GPU reseated, job reran clean" in listed.stdout
    zh = run("--state", str(state), "--lang", "zh_CN", "ack")
    assert "GPU 0：" in zh.stdout and "GPU 0: " not in zh.stdout


def test_capture_refuses_an_output_that_is_not_a_regular_file_and_leaves_it(tmp_path):
    """Walk 22: `capture -o` replaced a FIFO, a device node and a symbolic link with its bundle (as root, -o /dev/null
    made /dev/null a regular file). It refuses them before any probe runs, as report -o does, and leaves each as it
    was; a new file name is written as before."""
    import stat as st

    fifo, link = tmp_path / "ff", tmp_path / "link.tgz"
    os.mkfifo(fifo)
    link.symlink_to(tmp_path / "elsewhere.tgz")
    for path, kind in ((fifo, "is a FIFO"), (link, "is a symbolic link")):
        r = run("--state", str(tmp_path / "s"), "capture", "-o", str(path))
        assert r.returncode == 3 and kind in r.stderr and "left as it is" in r.stderr, (r.returncode, r.stderr)
    assert st.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()


def test_a_soaks_seconds_are_printed_every_thirty_not_every_one():
    """Walk 28 #19: `validate burnin --minutes 1` printed 60 lines of "[N s of 60 s] soak interval N"; the CLI prints
    the first, one every 30 s and the last (the log keeps every line)."""
    import json as _json

    from wizard.cli import quiet_tick

    def ev(done: int) -> str:
        return "BRINGUP " + _json.dumps({"v": 1, "event": "progress", "t": 0, "rank": 0, "node": "n", "test": "soak",
                                            "phase": f"soak interval {done}", "done": done, "total": 60, "unit": "s"})

    last: list[int] = []
    shown = [d for d in range(1, 61) if not quiet_tick(ev(d), last)]
    assert shown == [1, 31, 60], shown
    assert not quiet_tick('{"event": "measure"}', last)  # anything else is never held back


def test_the_overall_lines_joiner_is_chinese_in_chinese(tmp_path):
    """Walk 28 #17: "总体：跳过（0 通过，0 警告，0 失败，1 跳过; 没有验证任何内容…" had an ASCII ";" after Chinese."""
    from tests.conftest import DEVVM_BUNDLE

    zh = run("--state", str(tmp_path / "s"), "--lang", "zh_CN", "check", "--snapshot", str(DEVVM_BUNDLE),
             "--step", "health.nvlink")
    en = run("--state", str(tmp_path / "s"), "--lang", "en", "check", "--snapshot", str(DEVVM_BUNDLE),
             "--step", "health.nvlink")
    assert "1 略过；没有验证任何内容" in zh.stdout and "略过; " not in zh.stdout, zh.stdout
    assert "1 skip; nothing was verified" in en.stdout, en.stdout


def test_the_results_tables_subjects_read_in_chinese(capsys):
    """Walk 28 #17: `validate burnin` in Chinese printed "[SKIP] soak_gemm rank 0 on vm tflops": the subject was
    English. "rank 0 on vm" reads "rank 0（vm）"; the test and metric keys in the reader's words (walk 41 #2: raw
    "soak_gemm", "tflops" on a Chinese screen), the stored keys unchanged."""
    from wizard import i18n
    from wizard.cli import _print_results

    rows = {"results": [{"test": "soak_gemm", "subject": "rank 0 on vm", "metric": "tflops", "value": 0.104,
                         "unit": "TFLOPS", "verdict": "skip"}]}
    i18n.set_language("zh_CN")
    try:
        _print_results(rows)
    finally:
        i18n.set_language("en")
    zh = capsys.readouterr().out
    assert "[SKIP] 持续负载 GEMM rank 0（vm） · 吞吐：0.104 TFLOPS" in zh and " on vm" not in zh, zh
    _print_results(rows)
    assert "[SKIP] soak GEMM rank 0 on vm · throughput: 0.104 TFLOPS" in capsys.readouterr().out
    assert rows["results"][0]["test"] == "soak_gemm"


def test_the_machines_skip_verdict_has_one_chinese_word_apart_from_the_persons_skip(tmp_path):
    """Walk 29 #12: the machine verdict "skip" read 未检查 on the step screen but 跳过 in `check` and the confirm
    dialog, the word of the operator's own skip (已跳过, with a reason). Walk 32 #1: 未检查 ("not checked") also said
    a check that ran and skipped was never run (尚未检查 is the step never checked). The verdict word is 略过 everywhere:
    apart from the person's 已跳过 and from 尚未检查."""
    from tests.conftest import DEVVM_BUNDLE

    zh = run("--state", str(tmp_path / "s"), "--lang", "zh_CN", "check", "--snapshot", str(DEVVM_BUNDLE),
             "--step", "health.nvlink")
    assert "总体：略过" in zh.stdout and "1 略过" in zh.stdout and "跳过" not in zh.stdout, zh.stdout
    assert "1 未检查" not in zh.stdout and "[SKIP]" in zh.stdout, zh.stdout


def test_status_shows_an_earlier_build_by_its_id(tmp_path):
    """Walk 29 #16: once a newer build existed, nothing showed the earlier one (`status --build` was refused).
    `status --build ID` shows that build; an unknown id says which builds directory it looked in."""
    import steps as _steps

    from wizard.engine import Build

    state = tmp_path / "s"
    ids = []
    for _ in range(2):
        b = Build.open(state, _steps.STAGES, {"hostname": "gpu01", "boot_id": "b"}, create=True)
        ids.append(b.info.build_id)
        b.close()
    assert ids[0] != ids[1]
    newest = run("--state", str(state), "status").stdout
    earlier = run("--state", str(state), "status", "--build", ids[0]).stdout
    assert newest.startswith(f"build {ids[1]}") and earlier.startswith(f"build {ids[0]}"), (newest, earlier)
    bad = run("--state", str(state), "status", "--build", "nope")
    assert bad.returncode == 3 and "no build nope under" in bad.stderr
    # --build before the command (the TUI's option): the command's own --build, or refused; never the newest build
    # in silence (walk 34 #3: `bringup --build ID report` wrote the newest build's acceptance report)
    before = run("--state", str(state), "--build", ids[0], "status").stdout
    assert before.startswith(f"build {ids[0]}"), before
    bad = run("--state", str(state), "--build", "nope", "status")
    assert bad.returncode == 3 and "no build nope under" in bad.stderr
    for cmd in (["report", "-o", str(tmp_path / "r.md")], ["check"], ["status", "--build", ids[1]]):
        r = run("--state", str(state), "--build", ids[0], *cmd)
        assert r.returncode == 3 and "--build before the command picks the build the TUI opens" in r.stderr, cmd
    assert not (tmp_path / "r.md").exists()


def test_a_reader_that_leaves_early_does_not_change_the_exit_status(tmp_path):
    """Walk 34 #2: `bringup check | head -1` exited 0 where the check fails (2): a closed pipe is not a verdict. The
    same check's status with its output read to the end and with the reader gone after one line."""
    state = str(tmp_path / "s")
    whole = run("--state", state, "explain", str(ROOT / "tests/data/public/"
                                                 "aer__corrected-dll-timeout-burst-rootport-gpu-unknown-error-nvidia-smi.txt"))
    assert whole.returncode == 2
    aer = str(ROOT / "tests/data/public/aer__corrected-dll-timeout-burst-rootport-gpu-unknown-error-nvidia-smi.txt")
    for args in (["explain", "--json"], ["explain"]):
        # 60 inputs: more than the 64 KiB a pipe holds, so bringup is still writing when the reader leaves
        assert len(run("--state", state, *args, *[aer] * 60).stdout) > 65536
        p = subprocess.Popen(bringup_cmd("--state", state, *args, *[aer] * 60),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for_cli(), cwd=ROOT)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.read(1)
        p.stdout.close()  # the reader leaves before bringup has written its output
        err = p.stderr.read().decode()
        assert p.wait(timeout=120) == 2 and "Exception ignored" not in err and "BrokenPipe" not in err, err


def test_validation_result_unit_words_are_in_the_readers_language(capsys):
    """walk 30 #12: "pattern_errors: 0 count" and "loss_ratio: 0.000233 ratio" in the Chinese results table."""
    from wizard import cli, i18n

    rows = {"results": [{"test": "memory", "metric": "pattern_errors", "value": 0, "unit": "count", "floor": 0,
                         "verdict": "pass"},
                        {"test": "gemm", "metric": "tflops", "value": 0.143, "unit": "TFLOPS", "floor": None,
                         "verdict": "pass"},
                        {"test": "h2d", "metric": "gb_s", "value": None, "unit": "GB/s", "floor": None,
                         "verdict": "skip"}]}
    i18n.set_language("zh_CN")
    try:
        cli._print_results(rows)
    finally:
        i18n.set_language("en")
    out = capsys.readouterr().out
    # a count is a bare number (walk 39: one value_shown for every view; "0 个" read as a unit), never "0 count"
    assert "内存模式测试 · 模式错误：0（限值 0）" in out and " count" not in out and "0.143 TFLOPS" in out
    assert "主机到设备拷贝（H2D） · 带宽：-\n" in out  # walk 31: a value not measured has no unit after its dash ("- GB/s")



def _terminal_lines(master: int, slave: int) -> list[str]:
    """What a command wrote to the pseudo-terminal ``slave`` (closed here, as the command's own copy keeps it open
    until it exits), read from ``master`` to its end, as lines."""
    import os

    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the command has exited and closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out.decode().replace("\r\n", "\n").strip("\n").split("\n")


def test_an_error_on_a_terminal_wraps_to_its_width_and_to_a_pipe_stays_one_line(tmp_path):
    """Walk 37 #12: `bringup plan foo=1` printed one 490-cell line on an 80-column terminal. On a terminal bringup's
    own error and note lines wrap to its width (the continuation indented); to a pipe (what scripts read) the line
    stays whole."""
    import pty

    from rich.cells import cell_len

    from tests.conftest import bringup_cmd, env_for_cli

    master, slave = pty.openpty()
    env = {**env_for_cli(), "COLUMNS": "80", "BRINGUP_STATE_DIR": str(tmp_path / "s")}
    p = subprocess.run(bringup_cmd("--lang", "zh_CN", "plan", "foo=1"), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=slave, env=env, timeout=60)
    lines = _terminal_lines(master, slave)
    assert p.returncode == 3 and lines[0].startswith("bringup: error: ") and len(lines) > 3, lines
    assert all(cell_len(ln) <= 80 for ln in lines) and all(ln.startswith("    ") for ln in lines[1:]), lines
    assert "nic_gbit_s" in lines[-1]
    piped = subprocess.run(bringup_cmd("--lang", "zh_CN", "plan", "foo=1"), capture_output=True, text=True, env=env,
                           timeout=60)
    assert piped.stderr.count("\n") == 1 and "nic_gbit_s" in piped.stderr


def test_the_lang_help_names_json_only_where_the_command_has_it():
    """Walk 37 #17: `validate --help` and `answers check --help` said "--json output is always English" without a
    --json; `validate gpu --help`, which has one, did not say it."""
    for args, has in ((("validate",), False), (("validate", "gpu"), True), (("answers", "check"), False),
                      (("check",), True)):
        out = run(*args, "--help").stdout
        assert ("--json output is always English" in out) is has and ("--json" in out) is has, args


def test_run_and_validate_lines_wrap_on_a_terminal_and_a_command_stays_whole(tmp_path):
    """Walk 38 #3: on an 80-column terminal `bringup validate gpu` printed its title line at 83 cells and its error
    lines at 136-143, and the Linux console's fallback notice ran 153 cells on stderr. On a terminal they wrap to its
    width; a command line ("$ ...") stays whole, to copy; to a pipe every line is as before (one line each)."""
    import os
    import pty

    from rich.cells import cell_len

    from tests.conftest import bringup_cmd, env_for_cli

    master, slave = pty.openpty()
    env = {**env_for_cli(), "COLUMNS": "80", "BRINGUP_STATE_DIR": str(tmp_path / "s"), "TERM": "linux",
           "LANG": "zh_CN.UTF-8"}
    env.pop("LC_ALL", None)
    p = subprocess.Popen(bringup_cmd("status"), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    lines = _terminal_lines(master, slave)
    p.wait(timeout=60)
    assert lines[0].startswith("bringup: the Linux console") and all(cell_len(ln) <= 80 for ln in lines), lines
    from wizard import cli

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    long = "error in gpu: torch missing: torch is not importable by /very/long/path/to/python3 (ModuleNotFoundError)"
    cmd = "$ /work/main/.venv/bin/python3 /work/main/assets/scripts/bringup_validate.py gpu --device cpu --quick"
    old = cli.sys.stdout
    cli.sys.stdout = cli.WrappedOut(tty)  # as main() installs it on a terminal
    try:
        os.environ["COLUMNS"] = "80"
        cli.print_run_lines([long, cmd])
    finally:
        cli.sys.stdout = old
    shown = tty.getvalue().splitlines()
    assert all(len(ln) <= 80 for ln in shown) and len(shown) == 4, shown
    # walk 39: the command wraps where a shell reads it back the same: at a space, " \" at the end, indented
    import shlex
    assert shown[2].startswith("$ ") and shown[2].endswith(" \\") and shown[3].startswith("    ")
    assert shlex.split(" ".join(r.rstrip("\\") for r in shown[2:])[2:]) == shlex.split(cmd[2:])


def test_every_command_wraps_its_output_on_a_terminal_and_leaves_documents_whole(tmp_path):
    """Walk 39 #2: `check --profile health`, `auto`, `answers check`, `validate nodes` and the Ctrl-C hint printed lines
    past an 80-column terminal, so the terminal broke words mid-token ("见 healt" / "h.gpu_pci"). On a terminal every
    line of standard output wraps to its width (a verdict row's message under itself); a --json document to the same
    terminal is left as written."""
    import json as json_
    import pty

    from rich.cells import cell_len

    from tests.conftest import bringup_cmd, env_for_cli

    env = {**env_for_cli(), "COLUMNS": "80", "BRINGUP_STATE_DIR": str(tmp_path / "s"), "LANG": "zh_CN.UTF-8"}
    env.pop("LC_ALL", None)

    def on_tty(*args):
        master, slave = pty.openpty()
        p = subprocess.Popen(bringup_cmd(*args), stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
        lines = _terminal_lines(master, slave)
        p.wait(timeout=120)
        return lines

    lines = on_tty("check", "--profile", "health")
    assert len(lines) > 10 and all(cell_len(ln) <= 80 for ln in lines), [ln for ln in lines if cell_len(ln) > 80]
    row = next(i for i, ln in enumerate(lines) if ln.startswith("[SKIP] ") and i + 1 < len(lines)
               and lines[i + 1].startswith(" " * 29))  # a wrapped message continues under itself
    assert lines[row + 1][29] != " "
    doc = "\n".join(on_tty("check", "--profile", "health", "--json"))
    assert json_.loads(doc)["findings"] and max(cell_len(ln) for ln in doc.splitlines()) > 80  # whole, not wrapped


def test_explain_from_a_terminal_says_how_to_end_the_paste(tmp_path):
    """Walk 39 #6b: `bringup explain -` typed at a terminal waited on a blank screen: it says to paste, then Ctrl-D."""
    import os
    import pty

    from tests.conftest import bringup_cmd, env_for_cli

    master, slave = pty.openpty()
    p = subprocess.Popen(bringup_cmd("explain", "-"), stdin=slave, stdout=slave, stderr=slave,
                         env={**env_for_cli(), "BRINGUP_STATE_DIR": str(tmp_path / "s")})
    os.write(master, b"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n\x04")
    lines = _terminal_lines(master, slave)
    p.wait(timeout=60)
    said = "\n".join(lines)
    assert "paste the output, then press Ctrl-D on a new line" in said and "79" in said, said


def test_a_wrapped_commands_continuation_rows_are_not_wrapped_again(monkeypatch):
    """Walk 40: `run report.capture`'s confirmation broke the capture's path after a "/" inside the command (a row after
    " \\" longer than the terminal was wrapped again as prose), so the rows no longer pasted as the command."""
    from wizard import cli

    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    w = cli.WrappedOut(out)
    path = "/tmp/w40/state-c1/builds/20261206T153621Z-vm/capture-20261206T153621Z-with-a-long-name.tar.gz"
    w.write("\n".join(cli.shell_wrap(f"  $ /work/main/.venv/bin/python3 -m wizard.cli --state /tmp/s capture -o {path}",
                                     80)) + "\n")
    w.write("plain " * 30 + "\n")
    rows = out.getvalue().splitlines()
    # walk 42: a path longer than a row is broken inside with "\\" at the row's end, which the shell joins again
    # (bash removes a backslash-newline); every row fits, and the prose after it wraps as before
    assert all(len(r) <= 80 for r in rows), rows
    import shlex

    command = "\n".join(r for r in rows if not r.strip().startswith("plain"))
    assert shlex.split(re.sub(r"\\\n", "", command).strip()[2:])[-1] == path


def test_a_note_in_parentheses_continues_inside_them(monkeypatch):
    """Walk 46 #5: a note in parentheses under a dry run's commands went on 4 columns further in; its continuation
    now starts under its first word (one column in for "(", two for the full-width "（"), other prose as before."""
    from wizard import cli

    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    w = cli.WrappedOut(out)
    w.write("        (torchrun gets --local-addr=ADDR, the node's address, where the node's torch is 2.2 or later)\n")
    w.write("        （节点上的 torch 为 2.2 或更新时，torchrun 会得到 --local-addr=ADDR，即该节点的地址）\n")
    w.write("    plain words " * 6 + "\n")
    rows = out.getvalue().splitlines()
    assert rows[1].startswith(" " * 9) and rows[1][9] != " ", rows
    zh = next(i for i, r in enumerate(rows) if r.lstrip().startswith("（"))
    assert rows[zh + 1].startswith(" " * 10) and rows[zh + 1][10] != " ", rows
    assert rows[-1].startswith(" " * 8) and rows[-1][8] != " ", rows


def test_run_says_when_the_steps_last_check_passes_before_a_system_change(tmp_path):
    """Walk 45 #10: `bringup run os.nouveau` on a node whose check passed asked "Run it? [y/N]" with no word that the
    machine needs nothing, which the TUI's dialog says. The CLI's confirmation says it too (here: nouveau is not
    loaded on this VM, so os.nouveau passes)."""
    sd = str(tmp_path / "s")
    for args in (("--dry-run", "run", "os.nouveau"), ("check",)):  # a build first (check records into one)
        subprocess.run(bringup_cmd("--state", sd, *args), capture_output=True, text=True, env=env_for_cli(), cwd=ROOT,
                       timeout=300)
    st = subprocess.run(bringup_cmd("--state", sd, "status"), capture_output=True, text=True, env=env_for_cli(),
                        cwd=ROOT, timeout=120).stdout
    assert re.search(r"os\.nouveau\s+passed", st), st
    r = subprocess.run(bringup_cmd("--state", sd, "--dry-run", "run", "os.nouveau"), capture_output=True, text=True,
                       env=env_for_cli(), cwd=ROOT, timeout=120)
    assert "last check passes: the machine needs nothing from this action" in r.stdout, r.stdout
