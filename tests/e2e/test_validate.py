"""`bringup validate` end to end (real subprocesses: bringup, its detached supervisor, the validation script,
torchrun with gloo on this CPU), and the action resolvers that build the commands.

`--quick` (a hidden option; plan key validate_quick) makes the script use small sizes so each run takes seconds.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import jsonschema
import pytest

from tests.conftest import ROOT, bringup_cmd, env_for_cli
from wizard.actions import ActionContext
from wizard.probes import ProbeOutput

SCHEMA = json.loads((ROOT / "assets" / "schema" / "check.schema.json").read_text())
STATUS_SCHEMA = json.loads((ROOT / "assets" / "schema" / "status.schema.json").read_text())
EXIT = {"pass": 0, "skip": 0, "warn": 1, "unknown": 1, "fail": 2}


def bringup(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = env_for_cli()
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_validate_gpu_cpu_json(tmp_path):
    r = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--quick", "--json")
    doc = json.loads(r.stdout)  # stdout holds the document alone; progress went to stderr
    jsonschema.validate(doc, SCHEMA)
    assert r.returncode == EXIT[doc["verdict"]] and r.returncode in (0, 1), r.stderr
    ids = {f["id"]: f for f in doc["findings"]}
    assert ids["gpu.memory"]["verdict"] == "pass" and ids["gpu.train"]["verdict"] == "pass"
    assert ids["gpu.gemm"]["verdict"] == "skip" and all(f["step"] == "gpu.validate" for f in doc["findings"])
    assert doc["step"] == "gpu.validate" and doc["stage"] == "gpu" and doc["run"]["state"] == "succeeded"
    assert doc["run"]["argv"][0][1].endswith("bringup_validate.py") and "--quick" in doc["run"]["argv"][0]
    tests = {row["test"] for row in doc["results"]}
    assert {"gemm", "memcpy", "memory", "train"} <= tests
    assert "started gpu on cpu" in r.stderr and "train: loss" in r.stderr
    # recorded in the build like any action, with its verdict; but a CPU run proves the software path, not the
    # GPU: the step is cpu-only, never passed, and its stage is not passed
    assert doc["step_status"] == "cpu-only"
    st = json.loads(bringup("--state", str(tmp_path / "s"), "status", "--json").stdout)
    jsonschema.validate(st, STATUS_SCHEMA)
    step = [s for stg in st["stages"] for s in stg["steps"] if s["id"] == "gpu.validate"][0]
    assert step["status"] == "cpu-only" and step["status"] != "passed" and step["verdict"] == doc["verdict"]
    assert step["reason"] == "ran on the CPU: the software path works, the GPU is not validated"
    assert [stg for stg in st["stages"] if stg["id"] == "gpu"][0]["status"] != "passed"
    text = bringup("--state", str(tmp_path / "s"), "status").stdout
    line = [ln for ln in text.splitlines() if "gpu.validate" in ln][0]
    assert line.lstrip().startswith("[CPU ]") and "cpu-only" in line and "passed" not in line
    block = text.split("gpu.validate", 1)[1].split("\n    [", 1)[0]  # the step's line and its wrapped rows
    assert "the GPU is not validated" in " ".join(block.split())


def test_validate_gpu_cpu_text_says_the_gpu_is_not_validated(tmp_path):
    r = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--quick")
    lines = r.stdout.splitlines()
    overall = [ln for ln in lines if ln.startswith("overall: ")][0]
    assert overall.endswith("(of the software path on the CPU: the GPU is not validated)"), overall
    assert any(ln.startswith("step gpu.validate: cpu-only") for ln in lines)


def test_validate_in_chinese_ends_with_the_step_s_reason_translated_as_status_shows_it(tmp_path):
    """Walk 23 #4: the closing step line kept the stored English reason while `bringup status` translated it."""
    r = bringup("--state", str(tmp_path / "s"), "--lang", "zh_CN", "validate", "gpu", "--device", "cpu", "--quick")
    last = r.stdout.splitlines()[-1]
    assert last.startswith("步骤 gpu.validate：") and "在 CPU 上运行：软件路径可用，GPU 未经验证" in last, last
    assert "ran on the CPU" not in r.stdout


def test_validate_node_cpu_json(tmp_path):
    r = bringup("--state", str(tmp_path / "s"), "validate", "node", "--device", "cpu", "--quick", "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert r.returncode == EXIT[doc["verdict"]] and r.returncode in (0, 1), r.stderr
    ids = {f["id"]: f for f in doc["findings"]}
    assert ids["node.sanity"]["verdict"] == "pass" and "all 2 ranks" in ids["node.sanity"]["message"]
    assert ids["node.allreduce_sweep"]["verdict"] == "pass" and ids["node.p2p"]["verdict"] == "pass"
    points = doc["series"]["points"]
    assert len(points) >= 10 and points[0][0] == 8 and doc["series"]["floor_gb_s"] is None
    argv = doc["run"]["argv"][0]
    assert argv[:4] == [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    assert "--nproc_per_node=2" in argv


def test_validate_node_human_output_and_nproc(tmp_path):
    r = bringup("--state", str(tmp_path / "s"), "validate", "node", "--device", "cpu", "--quick", "--nproc", "3")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    out = r.stdout
    assert "--nproc_per_node=3" in out and "started node on cpu, 3 ranks" in out
    assert "all-reduce 1 MiB" in out and "the run succeeded (exit status 0)" in out
    assert "node.sanity" in out and "all 3 ranks" in out and "overall:" in out
    assert "busbw (GB/s) by message size" in out  # the chart of the sweep
    assert "step node.validate: cpu-only -- ran on the CPU: the software path works, the GPU is not validated" in out


def test_validate_with_a_python_that_cannot_start_fails_with_a_remedy(tmp_path):
    """A Python that does not exist is refused before anything runs (exit 3, nothing recorded); one that exists but
    cannot be started (not executable: the torch check cannot tell) runs, and the supervisor's "could not start" fails
    it with a remedy."""
    gone = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--python",
                   str(tmp_path / "no-such-python"), "--json")
    assert gone.returncode == 3 and "no-such-python was not found" in gone.stderr, gone.stderr
    assert not list((tmp_path / "s").glob("builds/*/actions/*.log"))
    python = tmp_path / "python"
    python.write_text("not a program\n")  # no exec bit
    r = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--python", str(python), "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["verdict"] == "fail" and r.returncode == 2
    f = doc["findings"][0]
    assert f["id"] == "gpu.run" and "could not start" in f["message"] and "torch_python" in f["remedy"]
    assert doc["run"]["state"] == "failed"
    # --verbose prints the raw log: the supervisor's own line says why
    human = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--python", str(python),
                    "--verbose")
    assert human.returncode == 2 and "# could not start" in human.stdout and "[FAIL] gpu.run" in human.stdout


def test_validate_soak_cpu(tmp_path):
    r = bringup("--state", str(tmp_path / "s"), "validate", "soak", "--device", "cpu", "--quick", "--minutes", "0.03",
                "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert r.returncode == EXIT[doc["verdict"]] and doc["run"]["state"] == "succeeded", r.stderr
    perf = [f for f in doc["findings"] if f["id"] == "soak.perf"]
    assert perf and all(f["verdict"] == "skip" and "start" in f["message"] for f in perf)
    # on cpu the soak runs 2 ranks under torchrun, so its all-reduce is exercised too
    assert any("soak_allreduce" in f["message"] for f in perf), perf
    assert doc["step"] == "node.soak" and doc["step_status"] in ("cpu-only", "failed", "pending")  # never passed or skipped
    argv = doc["run"]["argv"][0]
    assert argv[0] == sys.executable and argv[1:3] == ["-m", "torch.distributed.run"]
    assert "--nproc_per_node=2" in argv and argv[argv.index("--minutes") + 1] == "0.03"


def test_validate_refuses_what_it_cannot_do(tmp_path):
    snap = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--snapshot", "x.tar.gz")
    assert snap.returncode == 3 and "--snapshot" in snap.stderr
    bad = bringup("--state", str(tmp_path / "s"), "validate", "soak", "--minutes", "-1")
    assert bad.returncode == 3 and "soak_minutes" in bad.stderr
    helptext = bringup("validate", "--help").stdout
    assert "gpu" in helptext and "node" in helptext and "soak" in helptext
    assert "--quick" not in bringup("validate", "gpu", "--help").stdout  # hidden: tests and smoke runs


def test_validate_commands_are_the_catalogues_and_the_table_is_the_hook(monkeypatch):
    """Each `bringup validate NAME` runs the one step whose ActionSpec.command is NAME, judged by that step's
    judge (the TUI reads the same); the CLI's table holds only help and options, so a new command is one entry."""
    import steps
    from wizard import cli

    declared = {s.action.command: s for st in steps.STAGES for s in st.steps if s.action is not None and s.action.command}
    assert set(declared) == set(cli.VALIDATE_COMMANDS) == {"gpu", "node", "soak", "burnin", "nodes"}
    for name, step in declared.items():
        assert cli.validate_step(name) is step and step.action.judge is not None and step.action.results is not None
    assert cli.validate_step("nodes").id == "multinode.allreduce"
    cmds = dict(cli.VALIDATE_COMMANDS)
    cmds["nodes"] = cli.ValidateCommand("several nodes", lambda p: p.add_argument("--hostfile", required=True),
                                        lambda a: {"validate_nproc": None})
    monkeypatch.setattr(cli, "VALIDATE_COMMANDS", cmds)
    args = cli.build_parser().parse_args(["validate", "nodes", "--hostfile", "h.txt", "--json"])
    assert args.kind == "nodes" and args.hostfile == "h.txt" and args.json


# ------------------------------------------------------------------ resolvers


def _ctx(plan=None, pci_gpus=0, nvml_count=None):
    from wizard.probes import NVIDIA_VENDOR

    files = {"/sys/bus/pci/devices/0000:00:01.0/vendor": "0x8086"}
    for i in range(pci_gpus):
        files[f"/sys/bus/pci/devices/0000:{0x17 + i:02x}:00.0/vendor"] = NVIDIA_VENDOR
        files[f"/sys/bus/pci/devices/0000:{0x17 + i:02x}:00.0/class"] = "0x030200"
    outputs = {"pci": ProbeOutput(name="pci", source="sysfs", text="", files=files)}
    if nvml_count is not None:
        outputs["nvml"] = ProbeOutput(name="nvml", source="NVML", text=json.dumps(
            {"init": "ok", "count": nvml_count, "gpus": []}))
    return ActionContext(outputs, plan or {}, "/tmp/backups")


def test_cuda_asked_on_a_node_without_gpus_is_refused_before_it_runs():
    """Walk 22: validate_device cuda on a GPU-less node ran, failed, told the operator to install a CUDA build of
    torch and turned a cpu-only step into a failed one. Every validation resolver refuses it now, naming the empty
    PCI bus and offering the plan answer; with a GPU on the bus, or the bus unread, it runs as before."""
    from wizard import validate as v

    for resolve in (v.resolve_gpu, v.resolve_node, v.resolve_soak, lambda c: v.resolve_gemm_burnin(c, 1.0)):
        r = resolve(_ctx({"validate_device": "cuda"}, pci_gpus=0))
        assert not r.ops and "no NVIDIA GPU is on this node's PCI bus" in r.manual and r.plan_key == "validate_device"
        assert resolve(_ctx({"validate_device": "cuda"}, pci_gpus=2)).ops
    unread = ActionContext({}, {"validate_device": "cuda"}, "/tmp/backups")
    assert v.resolve_gpu(unread).ops  # the bus was not read: nothing to refuse on


def test_resolvers_pick_python_device_and_ranks(tmp_path, monkeypatch):
    from wizard import validate as v

    # this venv has torch: its own interpreter runs the script; torchrun is `python -m torch.distributed.run`
    gpu = v.resolve_gpu(_ctx())
    assert gpu.ops[0]["argv"][:2] == [sys.executable, str(v.script_path())]
    assert gpu.ops[0]["argv"][2:5] == ["gpu", "--device", "cpu"] and gpu.env["OMP_NUM_THREADS"] == "1"
    assert v.resolve_gpu(_ctx({"torch_python": sys.executable})).ops[0]["argv"][0] == sys.executable
    monkeypatch.setattr(v, "torch_importable", lambda: False)
    assert v.target_python({})[0] == "python3"
    monkeypatch.undo()
    # auto = cuda when the PCI bus shows an NVIDIA GPU; one rank per GPU, NVML's count first
    node = v.resolve_node(_ctx(pci_gpus=4, nvml_count=4))
    argv = node.ops[0]["argv"]
    assert argv[1:4] == ["-m", "torch.distributed.run", "--standalone"] and "--nproc_per_node=4" in argv
    assert argv[-2:] == ["--device", "cuda"] and node.env["NCCL_DEBUG"] == "INFO"
    assert "--nproc_per_node=2" in v.resolve_node(_ctx({"validate_device": "cpu"}, pci_gpus=4)).ops[0]["argv"]
    assert "--nproc_per_node=6" in v.resolve_node(_ctx({"validate_nproc": 6}, pci_gpus=4)).ops[0]["argv"]
    assert "--quick" in v.resolve_node(_ctx({"validate_quick": True})).ops[0]["argv"]
    # nccl-tests' all_reduce_perf, when on PATH, runs after torchrun on cuda (-c 1 checks results)
    fake = tmp_path / "all_reduce_perf"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    two = v.resolve_node(_ctx(pci_gpus=8))
    assert two.ops[1]["argv"] == [str(fake), "-b", "8", "-e", "4G", "-f", "2", "-g", "8", "-c", "1"]
    assert len(v.resolve_node(_ctx({"validate_device": "cpu"}, pci_gpus=8)).ops) == 1
    # soak: minutes from the plan; the node validation's ranks under torchrun (2 on cpu, so the all-reduce runs too;
    # one per GPU on cuda; validate_nproc overrides); a single rank runs without torchrun
    soak = v.resolve_soak(_ctx({"soak_minutes": 2.5}))
    argv = soak.ops[0]["argv"]
    assert argv[0] == sys.executable and argv[1:3] == ["-m", "torch.distributed.run"] and argv[-2:] == ["--minutes", "2.5"]
    assert "--nproc_per_node=2" in argv and argv[argv.index("--device") + 1] == "cpu"
    assert "--nproc_per_node=3" in v.resolve_soak(_ctx({"validate_nproc": 3})).ops[0]["argv"]
    assert "--nproc_per_node=8" in v.resolve_soak(_ctx(pci_gpus=8)).ops[0]["argv"]
    one_rank = v.resolve_soak(_ctx({"validate_nproc": 1})).ops[0]["argv"]
    assert one_rank[0] == sys.executable and one_rank[1] == str(v.script_path())
    assert v.resolve_soak(_ctx()).ops[0]["argv"][-1] == "10"


def test_wizard_never_imports_torch():
    code = ("import sys, steps, wizard.cli, wizard.validate, wizard.rules.validate\n"
            "wizard.cli.build_parser()\nprint('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_for_cli(), cwd=ROOT)
    assert r.stdout.strip() == "False", r.stderr


@pytest.mark.parametrize("line,expect", [
    ('BRINGUP {"v":1,"event":"progress","rank":0,"node":"n","test":"allreduce","phase":"all-reduce 64 MiB",'
     '"done":3,"total":18,"busbw_gb_s":123.45}', "[3/18] all-reduce 64 MiB  busbw 123 GB/s"),
    ('BRINGUP {"v":1,"event":"error","rank":0,"node":"n","test":"p2p","kind":"oom","message":"CUDA out of memory"}',
     "error in P2P: CUDA out of memory"),
    # a sub-test starting: its 1-based number, not the count of finished ones ("[0/6] gemm")
    ('BRINGUP {"v":1,"event":"progress","rank":0,"node":"n","test":"gpu","phase":"gemm on cpu","done":0,"index":1,'
     '"total":6}', "starting gemm on cpu (1/6)"),
    ('BRINGUP {"v":1,"event":"progress","rank":0,"node":"n","test":"gpu","phase":"train on cpu","done":5,"index":6,'
     '"total":6}', "starting train on cpu (6/6)"),
    ("NCCL INFO something", None),
    ("BRINGUP {broken", None),
])
def test_event_lines(line, expect):
    from wizard.validate import event_line

    assert event_line(line) == expect


def test_bringup_run_follows_a_validation_with_readable_lines(capsys):
    """Walk 34 #17: `bringup run multinode.allreduce` printed each raw `BRINGUP {json}` event line; it prints what the
    TUI shows (the log file keeps the events), and other lines as they are."""
    from wizard.cli import print_run_lines

    print_run_lines(['BRINGUP {"v":1,"event":"progress","rank":0,"node":"n","test":"allreduce","phase":"all-reduce 64 MiB",'
                     '"done":3,"total":18,"busbw_gb_s":123.45}', "NCCL INFO Using network IB"])
    out = capsys.readouterr().out.splitlines()
    assert out == ["[3/18] all-reduce 64 MiB  busbw 123 GB/s", "NCCL INFO Using network IB"]


def test_a_validation_on_the_cpu_says_why_and_what_it_proves_before_it_runs():
    """Walk 22: the run dialog of gpu.validate showed `--device cpu` and nothing about why, or that it proves no GPU.
    Every validation resolver on the CPU carries a note (the confirmation shows it, CLI and TUI); on cuda none."""
    from wizard import validate as v

    auto = v.resolve_gpu(_ctx(pci_gpus=0))
    assert "no NVIDIA GPU is on this node's PCI bus" in auto.note and "not a GPU" in auto.note
    assert "validate_device is cpu" in v.resolve_node(_ctx({"validate_device": "cpu"}, pci_gpus=4)).note
    assert v.resolve_node(_ctx(pci_gpus=4, nvml_count=4)).note == ""


def test_a_validation_whose_python_has_no_torch_is_refused_asking_for_torch_python(tmp_path):
    """Walk 35 #9: gpu.validate's dialog offered the run with a python3 that has no torch; it failed at once, and the
    run was recorded as failed (walk 44) though nothing of the machine was tested. Every validation is now refused
    before it runs, naming the Python and asking for the plan's torch_python (the TUI's dialog takes it there); a
    Python that does not exist too; one with torch runs (a real Python without torch: a bare venv)."""
    import venv

    from wizard import validate as v

    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(bare)
    python = str(bare / "bin" / "python")
    # walk 37 #1: gpu.stress's burn-in without DCGM runs the same Python
    for resolve in (v.resolve_gpu, v.resolve_node, v.resolve_soak, lambda c: v.resolve_gemm_burnin(c, 10)):
        r = resolve(_ctx({"torch_python": python}, pci_gpus=4, nvml_count=4))
        assert not r.ops and r.plan_key == "torch_python", r
        assert f"{python} has no PyTorch" in r.manual and "cannot run" in r.manual, r.manual
    gone = v.resolve_gpu(_ctx({"torch_python": "/nonexistent/python3"}, pci_gpus=4, nvml_count=4))
    assert "/nonexistent/python3 was not found" in gone.manual and gone.plan_key == "torch_python", gone
    ok = v.resolve_gpu(_ctx({"torch_python": sys.executable}, pci_gpus=0))  # this venv has torch (the test extra)
    assert ok.ops and not ok.manual and ok.note.startswith("Runs on the CPU"), ok


def test_the_cli_refuses_a_validation_without_torch_and_records_nothing(tmp_path):
    """`bringup validate gpu` with a torch_python that has no torch: exit 3 (cannot run), the reason on standard error,
    no run recorded (the step stays as it was: not failed)."""
    import venv

    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(bare)
    sd = tmp_path / "s"
    env = env_for_cli()
    subprocess.run(bringup_cmd("--state", str(sd), "plan", f"torch_python={bare / 'bin' / 'python'}"), check=True,
                   capture_output=True, env=env, cwd=ROOT, timeout=120)
    r = subprocess.run(bringup_cmd("--state", str(sd), "validate", "gpu", "--device", "cpu"), capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "has no PyTorch" in r.stderr and "torch_python" in r.stderr, r.stderr
    assert not list(sd.glob("builds/*/actions/*.log"))
    st = subprocess.run(bringup_cmd("--state", str(sd), "status", "--json"), capture_output=True, text=True, env=env,
                        cwd=ROOT, timeout=120)
    step = next(x for stage in json.loads(st.stdout)["stages"] for x in stage["steps"] if x["id"] == "gpu.validate")
    assert step["status"] == "pending" and step["verdict"] is None, step


def test_the_cli_confirmation_wraps_the_cpu_note_with_the_words_not_the_commands(tmp_path):
    """`bringup --dry-run run gpu.validate` on this GPU-less VM: the note is wrapped to 80 columns like the
    description; the command stays one line, verbatim."""
    r = subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "--dry-run", "run", "gpu.validate"),
                       capture_output=True, text=True, env={**env_for_cli(), "COLUMNS": "80"}, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    if any(ln.startswith("  $ ") and ln.endswith("--device cuda") for ln in lines):
        return  # a machine with NVIDIA GPUs: no note to show (the resolvers' test covers both)
    note = [i for i, ln in enumerate(lines) if ln.startswith("  Runs on the CPU")]
    assert note and all(len(ln) <= 80 for ln in lines[:note[0] + 2])
    assert any(ln.startswith("  $ ") and ln.endswith("--device cpu") for ln in lines)


def test_the_progress_words_of_a_validation_are_the_operators_language():
    """Walks 21-22: the Chinese progress line showed the script's own words ("starting gemm on cpu"). Each sub-test
    phase, a soak interval and the started/error lines are translated; English keeps the script's words, and GPU
    memory is 显存 where the CPU run's is 内存."""
    from wizard import i18n
    from wizard.validate import event_line, phase_words

    start = ('BRINGUP {"v":1,"event":"progress","rank":0,"node":"n","test":"gpu","phase":"memory on cuda:0","done":4,'
             '"index":5,"total":6}')
    assert event_line(start) == "starting memory on cuda:0 (5/6)"
    assert phase_words("all-reduce 64 MiB") == "all-reduce 64 MiB"  # the field's words, in both languages
    assert phase_words("copy the script to 1 node(s)") == "copy the script to 1 node"
    i18n.set_language("zh_CN")
    try:
        assert event_line(start) == "开始显存模式测试（cuda:0）（5/6）"
        assert phase_words("memory on cpu") == "内存模式测试（cpu）"
        assert phase_words("soak interval 3") == "持续负载第 3 段"
        assert phase_words("gemm on cpu") == "GEMM 矩阵乘（cpu）"
        # walk 24: the multi-node run's own phases (wizard.multinode)
        assert phase_words("copy the script to 2 node(s)") == "将脚本复制到 2 个节点"
        assert phase_words("facts from 0 node(s)") == "读取 0 个节点的信息" and phase_words("facts from n1") == "读取 n1 的信息"
    finally:
        i18n.set_language("en")


def test_a_second_start_of_a_step_whose_run_goes_on_is_refused(tmp_path):
    """Walk 24 #3: `validate burnin` started again while the first burn-in went on (detached by Ctrl-C) answered
    "started run 2" and two burn-ins loaded the same GPUs. A real burn-in on the CPU, still running: `validate
    burnin` and `run gpu.stress` are refused (exit 3, nothing started), naming its pid and log and how to follow
    it."""
    import signal
    import time

    state = str(tmp_path / "s")
    env = env_for_cli()
    env["OMP_NUM_THREADS"] = "1"
    first = subprocess.Popen(bringup_cmd("--state", state, "validate", "burnin", "--device", "cpu", "--minutes", "5"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert first.stdout is not None
    line = ""
    t0 = time.monotonic()
    while "started run" not in line and time.monotonic() - t0 < 120:
        line = first.stdout.readline()
        assert line or first.poll() is None, first.stderr.read() if first.stderr else ""
    assert "started run" in line, line
    first.send_signal(signal.SIGINT)  # stop following: the run goes on, detached
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 130 and "keeps running" in err, err
    from wizard.store import ActionState, Store

    (db,) = (tmp_path / "s").glob("builds/*/*.db")
    store = Store.open(db, readonly=True)
    (live,) = store.action_runs(step_id="gpu.stress")
    try:
        assert live.state is ActionState.RUNNING and live.pid
        os.kill(live.pid, 0)  # its supervisor is alive
        for args in (("validate", "burnin", "--device", "cpu", "--minutes", "5"), ("run", "gpu.stress", "--yes"),
                     ("--lang", "zh_CN", "validate", "burnin", "--device", "cpu")):
            again = bringup("--state", state, *args, timeout=120)
            assert again.returncode == 3, (args, again.stdout, again.stderr)
            assert f"pid {live.pid}" in again.stderr, again.stderr
            assert live.log_path in again.stderr and f"tail -f {live.log_path}" in again.stderr, again.stderr
            assert "started run" not in again.stdout + again.stderr
            if args[0] == "--lang":
                assert "仍在运行" in again.stderr, again.stderr
            else:
                assert f"run {live.id} of gpu.stress is still running" in again.stderr, again.stderr
        assert [r.id for r in store.action_runs(step_id="gpu.stress")] == [live.id]  # nothing else started
    finally:
        for r in store.action_runs(step_id="gpu.stress"):  # every run this test started (one, unless it broke)
            _end_run(r)
        store.close()


def _end_run(run) -> None:
    """End a detached run while its supervisor lives (the run's lock held, not a reused pid): SIGTERM to its
    process group, SIGKILL after 60 s."""
    import signal
    import time

    from wizard.actions import cancel, is_alive

    if not cancel(run, run.boot_id):
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and is_alive(run, run.boot_id):
        time.sleep(0.2)
    if is_alive(run, run.boot_id):
        cancel(run, run.boot_id, signal.SIGKILL)


def test_a_gpu_validation_that_fell_back_to_the_cpu_exits_1(tmp_path):
    """Walk 28 #3: `validate gpu --device auto` on a node with no GPU ran on the CPU, printed a pass and exited 0, so a
    script or a fleet hook read the GPUs as validated. It exits 1 and the JSON says ran_on_cpu; a CPU run asked for by
    name (--device cpu) still exits by its verdict. (This machine has no GPU: auto picks the CPU.)"""
    r = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "auto", "--quick", "--json")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["ran_on_cpu"] is True and doc["step_status"] == "cpu-only" and doc["verdict"] == "pass"
    assert r.returncode == 1, r.stderr
    text = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "auto", "--quick")
    assert text.returncode == 1 and "exit status 1: validate_device is auto and no GPU was used" in text.stdout
    asked = bringup("--state", str(tmp_path / "s"), "validate", "gpu", "--device", "cpu", "--quick", "--json")
    assert json.loads(asked.stdout)["ran_on_cpu"] is True and asked.returncode == 0, asked.stderr
