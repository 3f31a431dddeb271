"""Tests of wizard/slurm.py (drain / resume, LBNL NHC's way) and of `validate nodes` through srun, against a real
Slurm on this machine (tests/slurmd.py: munged, slurmctld and two slurmd, started once for the module).

The health check runs through Slurm itself: slurmd runs its HealthCheckProgram (a wrapper around
``bringup check --profile health --slurm --snapshot BUNDLE``) every HealthCheckInterval (2 s) on idle and drained
nodes, and the tests change only which real bundle it judges (tests/health_bundles.py), then watch the node's state
with ``scontrol show node``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.health_bundles import make_bundle
from wizard.model import Finding, Verdict
from wizard.slurm import MAX_REASON_CHARS, NodeState, decide, node_name, ours, parse_show_node, short_reason


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    d = tmp_path_factory.mktemp("health-bundles")
    return {k: make_bundle(k, d) for k in ("healthy", "xid79")}


@pytest.fixture(scope="module")
def slurm(bundles):
    """A real one-host Slurm (two slurmd on this machine); Slurm and munge are installed first when missing. When it
    cannot run, the test fails with the reason (never a skip)."""
    from tests.slurmd import SlurmUnavailable, ensure_slurm, start_cluster

    try:
        ensure_slurm()
        cluster = start_cluster(bundles["healthy"])
    except SlurmUnavailable as exc:
        pytest.fail(f"a real Slurm cannot run here: {exc}")
    yield cluster
    cluster.stop()


def _wait_for(pred, timeout_s: float, what: str, cluster, node: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = cluster.show_node(node)
        if pred(parse_show_node(line)):
            return line
        time.sleep(0.5)
    raise AssertionError(f"{what} within {timeout_s:g} s; node now: {cluster.show_node(node)}\n"
                         f"health program log:\n{cluster.health_log(node)[-3000:]}\n"
                         f"slurmd log:\n{cluster.log_tail(f'slurmd-{node}')}")


def _wait_said(cluster, node: str, words: str, timeout_s: float = 30) -> None:
    """Wait until the health program's log holds ``words``: a run's output is appended when bringup exits, after the
    scontrol call it reports has already changed the node (CI at stop 49: the node resumed, its "resuming" line not
    yet in the log when it was read)."""
    deadline = time.monotonic() + timeout_s
    while words not in cluster.health_log(node):
        assert time.monotonic() < deadline, f"{words!r} not in the health program's log within {timeout_s:g} s:\n" \
                                            f"{cluster.health_log(node)[-3000:]}"
        time.sleep(0.3)


def _wait_runs(cluster, node: str, more: int, timeout_s: float = 120) -> None:
    start = cluster.health_runs(node)
    deadline = time.monotonic() + timeout_s
    while cluster.health_runs(node) < start + more:
        assert time.monotonic() < deadline, f"slurmd ran the health program {cluster.health_runs(node) - start} " \
                                            f"times in {timeout_s:g} s; log:\n{cluster.health_log(node)[-2000:]}"
        time.sleep(0.3)


def test_slurmd_drains_on_a_failure_resumes_when_healthy_and_leaves_an_operators_drain(slurm, bundles):
    node = slurm.nodes[0]
    before = slurm.show_node(node)
    st = parse_show_node(before)
    assert st is not None and st.name == node and not st.drained and st.reason == "", before
    print(f"\nbefore:  {before}")

    # a real kernel log with Xid 79 (GPU fallen off the bus): slurmd's own health check run drains the node
    slurm.choose_bundle(bundles["xid79"], node)
    after = _wait_for(lambda s: s.drained, 60, "the node was not drained", slurm, node)
    print(f"drained: {after}")
    got = parse_show_node(after)
    assert got.reason.startswith("bringup: xid GPU 02:00.0: Xid 79"), after
    assert len(got.reason) <= MAX_REASON_CHARS and '"' not in got.reason

    # the same failure again changes nothing (the reason is not rewritten on every run)
    _wait_runs(slurm, node, 2)
    assert "rc=2" in slurm.health_log(node)  # NHC's convention: non-zero when unhealthy
    assert parse_show_node(slurm.show_node(node)).reason == got.reason
    assert "already drained for this" in slurm.health_log(node)

    # healthy again: bringup resumes the node it drained
    slurm.choose_bundle(bundles["healthy"], node)
    resumed = _wait_for(lambda s: not s.drained, 60, "the node was not resumed", slurm, node)
    print(f"resumed: {resumed}")
    assert parse_show_node(resumed).reason == "" and "State=IDLE" in resumed

    # an operator's drain is never undone by a healthy run
    r = slurm.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=operator maintenance")
    assert r.returncode == 0, r.stderr
    _wait_runs(slurm, node, 3)
    kept = slurm.show_node(node)
    print(f"operator: {kept}")
    assert parse_show_node(kept).drained and parse_show_node(kept).reason == "operator maintenance", kept
    assert "drained by someone else (operator maintenance): left drained" in slurm.health_log(node)

    # ...nor overwritten by a failing one: its reason is kept
    slurm.choose_bundle(bundles["xid79"], node)
    _wait_runs(slurm, node, 2)
    assert parse_show_node(slurm.show_node(node)).reason == "operator maintenance"
    slurm.choose_bundle(bundles["healthy"], node)
    r = slurm.run("scontrol", "update", f"NodeName={node}", "State=RESUME")
    assert r.returncode == 0, r.stderr


def test_the_health_program_run_as_slurmd_runs_it_reports_json_and_exit_status(slurm, bundles):
    """The same program by hand, as slurmd starts it (SLURMD_NODENAME set), with --json: the document says what was
    done to the node; exit 2 when unhealthy, 0 when healthy."""
    from tests.conftest import env_for_cli

    node = slurm.nodes[1]
    env = {**env_for_cli(), **{k: v for k, v in slurm.env.items() if k in ("SLURM_CONF", "PATH")},
           "SLURMD_NODENAME": node, "BRINGUP_STATE_DIR": str(slurm.dir / "bringup-state")}
    argv = [sys.executable, "-m", "wizard.cli", "check", "--profile", "health", "--slurm", "--json", "--snapshot"]
    slurm.choose_bundle(bundles["xid79"], node)  # slurmd's own runs agree with this one
    # a node slurmctld still sees as NOT_RESPONDING (slurmd slow to register on a loaded machine) is offline, and
    # bringup rightly keeps its state: wait until it answers, as an operator would see it in sinfo
    deadline = time.monotonic() + 90
    while "NOT_RESPONDING" in parse_show_node(slurm.show_node(node)).state and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        r = subprocess.run(argv + [str(bundles["xid79"])], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
        assert r.returncode == 2, r.stderr
        doc = json.loads(r.stdout)
        assert doc["profile"] == "health" and doc["healthy"] is False
        assert doc["slurm"]["node"] == node and doc["slurm"]["action"] in ("drain", "none")
        assert parse_show_node(slurm.show_node(node)).reason.startswith("bringup: xid")
        slurm.choose_bundle(bundles["healthy"], node)
        r = subprocess.run(argv + [str(bundles["healthy"])], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["healthy"] is True and doc["slurm"]["action"] in ("resume", "none")
        _wait_for(lambda s: not s.drained, 60, "the node was not resumed", slurm, node)
    finally:
        slurm.choose_bundle(bundles["healthy"], node)


def test_as_a_prolog_it_keeps_the_job_off_a_sick_node(slurm, bundles):
    """Prolog=bringup check --profile health --slurm: on a failure the job's step is refused (slurmd drains a node
    whose prolog exits non-zero) and bringup drained it first with its own reason. When that reason is still the
    node's, the periodic health check resumes the node once it is healthy; when Slurm recorded its own
    "Prolog error" instead (seen on a loaded machine), bringup leaves that drain to the operator, like any other."""
    from tests.slurmd import SBIN_PATH

    node = slurm.nodes[1]
    prolog = slurm.dir / "prolog.sh"
    prolog.write_text(f"#!/bin/sh\nPATH={SBIN_PATH} SLURM_CONF={slurm.conf} BRINGUP_STATE_DIR={slurm.dir}/bringup-state "
                      f"PYTHONPATH={ROOT} {sys.executable} -m wizard.cli check --profile health --slurm --snapshot "
                      f"{bundles['xid79']} >> {slurm.dir}/prolog.log 2>&1\n")
    prolog.chmod(0o755)
    conf = slurm.conf.read_text()
    slurm.conf.write_text(conf + f"Prolog={prolog}\n")
    try:
        assert slurm.run("scontrol", "reconfigure").returncode == 0
        time.sleep(1)
        r = slurm.run("srun", "-N1", "-w", node, "--immediate=60", "hostname", timeout=120)
        assert r.returncode != 0 and "prolog failed" in r.stderr.lower(), (r.returncode, r.stderr)
        said = (slurm.dir / "prolog.log").read_text()
        # bringup drained it with its own reason, or found it drained for this same reason already (a periodic health
        # run still holding the previous test's sick bundle got there first on a loaded machine: CI this stop)
        assert (f"draining {node} (bringup: xid" in said
                or f"{node} is already drained for this (bringup: xid" in said), said
        # bringup's drain: the periodic health check (a clean bundle on this node) resumes it (or already has);
        # unless slurmd's own "Prolog error" drain replaces bringup's reason, which on a loaded machine may come a
        # few seconds after the step was refused (CI at stop 44: read as bringup's, then replaced)
        line = _wait_for(lambda s: not s.drained or not ours(s), 60, "the node the prolog drained was not resumed",
                         slurm, node)
        st = parse_show_node(line)
        if st.drained:
            assert st.reason == "Prolog error", st
            _wait_runs(slurm, node, 2)
            assert parse_show_node(slurm.show_node(node)).drained
            _wait_said(slurm, node, "drained by someone else (Prolog error): left drained")
        else:
            _wait_said(slurm, node, f"resuming {node}, drained by bringup (bringup: xid")
    finally:
        slurm.conf.write_text(conf)
        slurm.run("scontrol", "reconfigure")
        if parse_show_node(slurm.show_node(node)).drained:  # leave the cluster as it was for the next test
            slurm.run("scontrol", "update", f"NodeName={node}", "State=RESUME")


def test_validate_nodes_runs_through_srun_inside_an_allocation(slurm, tmp_path):
    """`salloc -N2 bringup validate nodes --device cpu`: no hostfile; the step takes the allocation's nodes, and the
    launcher (the detached action, recorded in the build like any other) copies the script with sbcast, asks every
    node for its facts and starts one torchrun per node on gloo with `srun --label`; the judged run passes."""
    from tests.conftest import env_for_cli

    env = {**env_for_cli(), **{k: v for k, v in slurm.env.items() if k in ("SLURM_CONF", "PATH")},
           "BRINGUP_STATE_DIR": str(tmp_path / "state")}
    r = subprocess.run(["salloc", "-N2", "--time=10", "--immediate=120", sys.executable, "-m", "wizard.cli", "validate", "nodes",
                        "--device", "cpu", "--python", sys.executable, "--quick", "--json"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=420)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    doc = json.loads(r.stdout)
    assert doc["step"] == "multinode.allreduce" and doc["verdict"] == "pass", doc["findings"]
    got = {f["id"]: f for f in doc["findings"]}
    assert "reachable over srun" in got["multinode.nodes"]["message"]
    assert "--hostfile" not in doc["run"]["argv"][0] and "srun --nodes=2" in r.stderr  # the commands it showed
    log = Path(doc["run"]["log"]).read_text()
    hosts = next(json.loads(ln[8:]) for ln in log.splitlines() if '"event":"hosts"' in ln)
    assert hosts["launcher"] == "srun" and [n["name"] for n in hosts["nodes"]] == slurm.nodes
    assert f"[{slurm.nodes[1]}] BRINGUP" in log  # srun --label task numbers mapped back to the node names
    # outside an allocation the same command still asks for a hostfile
    plain = {k: v for k, v in env.items() if not k.startswith("SLURM_JOB")}
    r = subprocess.run([sys.executable, "-m", "wizard.cli", "validate", "nodes", "--device", "cpu"],
                       capture_output=True, text=True, env=plain, cwd=ROOT, timeout=60)
    assert r.returncode == 3 and "bringup plan hostfile=" in r.stderr


# ------------------------------------------------------------------ the decision, without a cluster


def _fail(msg: str = "Xid 79 (GPU has fallen off the bus)") -> Finding:
    return Finding("health.xid", Verdict.FAIL, f"GPU 3 (0000:9b:00.0): {msg}", "GPU 3 (0000:9b:00.0)")


def test_explain_reads_the_real_scontrol_and_sinfo_of_a_drained_node(slurm, bundles):
    """`bringup explain` of what this real Slurm prints (`scontrol show node` in its multi-line form, `sinfo`,
    `sinfo -R`, `sinfo -N -l`) with one node drained by an operator: fail, naming the node and its reason; resumed:
    `sinfo` passes."""
    from wizard.explain import explain_text

    node = slurm.nodes[1]
    slurm.choose_bundle(bundles["healthy"], node)
    r = slurm.run("scontrol", "update", f"NodeName={node}", "State=DRAIN", "Reason=explain test")
    assert r.returncode == 0, r.stderr
    try:
        outputs = {cmd: slurm.run(*cmd.split()).stdout for cmd in
                   (f"scontrol show node {node}", "sinfo", "sinfo -R", "sinfo -N -l")}
        for cmd, out in outputs.items():
            e = explain_text(out, cmd)
            print(f"\n$ {cmd}\n{out}-> {e.kind} {e.verdict.value}")
            assert e.kind == ("slurm-scontrol-node" if cmd.startswith("scontrol") else "slurm-sinfo"), (cmd, out)
            assert e.verdict.value == "fail", (cmd, [(f.verdict.value, f.message) for f in e.findings])
            bad = [f for f in e.findings if f.verdict.value == "fail"]
            assert any(node in f.message for f in bad), (cmd, [f.message for f in bad])
            assert all(f.remedy for f in bad) and all(f.evidence for f in e.findings)
        assert "explain test" in explain_text(outputs[f"scontrol show node {node}"]).findings[0].message
        log = (slurm.dir / "slurmctld.log").read_text(errors="replace")  # slurmctld's own log of the drain
        e = explain_text(log)
        print(f"\n$ tail slurmctld.log\n{log[-1500:]}-> {e.kind} {e.verdict.value}")
        assert e.kind == "slurmctld-log" and e.verdict.value == "fail", [(f.verdict.value, f.message) for f in e.findings]
        assert any(node in f.message and "explain test" in f.message for f in e.findings if f.verdict.value == "fail")
    finally:
        assert slurm.run("scontrol", "update", f"NodeName={node}", "State=RESUME").returncode == 0
    # just resumed, slurmctld may show the node "idle*" (not responding: no new work) until slurmd answers its ping
    deadline = time.monotonic() + 90
    while (e := explain_text(slurm.run("sinfo").stdout)).verdict.value != "pass" and time.monotonic() < deadline:
        assert "not responding" in e.findings[0].message, [(f.verdict.value, f.message) for f in e.findings]
        time.sleep(1)
    assert e.verdict.value == "pass", [(f.verdict.value, f.message) for f in e.findings]
    log = (slurm.dir / "slurmctld.log").read_text(errors="replace")  # the resume is the node's last event now
    e = explain_text(log)
    assert e.kind == "slurmctld-log" and e.verdict.value == "pass", (log[-800:], [f.message for f in e.findings])
    assert node in e.findings[0].message and "back in service" in e.findings[0].message


def test_explain_reads_the_real_scontrol_show_job_of_a_failed_and_a_finished_job(slurm, bundles):
    """`bringup explain` of this real Slurm's `scontrol show job` (slurmctld keeps a finished job's record for
    MinJobAge): a batch job that exits 3 is FAILED with ExitCode=3:0, warned as the job's own failure (not a node
    fault); one that exits 0 is COMPLETED and passes."""
    from wizard.explain import explain_text

    node = slurm.nodes[0]
    slurm.choose_bundle(bundles["healthy"], node)
    ids = {}
    for rc in (3, 0):
        r = slurm.run("sbatch", "--parsable", "-N1", "-w", node, "-o", "/dev/null", "--wrap", f"exit {rc}")
        assert r.returncode == 0, r.stderr
        ids[rc] = r.stdout.strip().split(";")[0]
    records = {}
    for rc, jid in ids.items():
        deadline = time.monotonic() + 120
        while not re.search(r"JobState=(FAILED|COMPLETED)\b", rec := slurm.run("scontrol", "show", "job", jid).stdout):
            assert time.monotonic() < deadline, (jid, rec, slurm.log_tail("slurmctld"))
            time.sleep(0.5)
        records[rc] = rec
    failed, done = explain_text(records[3], "scontrol show job"), explain_text(records[0], "scontrol show job")
    print(f"\n$ scontrol show job {ids[3]}\n{records[3]}-> {failed.kind} {failed.verdict.value}")
    assert failed.kind == "slurm-scontrol-job" and failed.verdict is Verdict.WARN
    assert "FAILED" in failed.findings[0].message and "3:0" in failed.findings[0].message
    assert "not by itself a node fault" in failed.findings[0].message and failed.findings[0].remedy
    assert done.kind == "slurm-scontrol-job" and done.verdict is Verdict.PASS
    assert "1 COMPLETED" in done.findings[0].message


@pytest.mark.parametrize("state,reason,healthy,action", [
    ("IDLE", "", False, "drain"),
    ("MIXED", "", False, "drain"),
    ("IDLE+DRAIN", "bringup: xid GPU 3: Xid 79 (GPU has fallen off the bus)", True, "resume"),
    ("ALLOCATED+DRAIN", "bringup: gpu_count: nvidia-smi lists 7 GPUs", True, "resume"),
    ("IDLE+DRAIN", "operator maintenance", True, "none"),
    ("IDLE+DRAIN", "", True, "none"),
    ("IDLE+DRAIN", "operator maintenance", False, "none"),
    ("DOWN+NOT_RESPONDING", "Not responding", False, "none"),
    ("IDLE", "", True, "none"),
    ("IDLE+DRAIN", "bringup: gpu_pci: no NVIDIA GPU on the PCI bus", False, "drain"),  # a new failure: new reason
])
def test_drain_and_resume_decisions_follow_nhc(state, reason, healthy, action):
    out = decide("gpu7", healthy, NodeState("gpu7", state, reason), None if healthy else _fail())
    assert out.action == action, out
    if action == "drain":
        assert out.argv == ("scontrol", "update", "NodeName=gpu7", "State=DRAIN", f"Reason={out.reason}")
        assert out.reason == "bringup: xid GPU 3: Xid 79 (GPU has fallen off the bus)"
    if action == "resume":
        assert out.argv == ("scontrol", "update", "NodeName=gpu7", "State=RESUME")
    if action == "none":
        assert out.argv == ()


def test_the_reason_is_short_plain_ascii_and_starts_with_bringup():
    nasty = 'Xid 79 "quoted" \\ back`tick\nnew line\ttab \u00e9' + " and more" * 20
    r = short_reason(_fail(nasty))
    assert r.startswith("bringup: xid GPU 3: Xid 79") and len(r) <= MAX_REASON_CHARS
    assert all(32 <= ord(c) < 127 for c in r) and not any(c in r for c in "\"'`\\")


def test_node_name_is_slurmd_nodename_else_the_short_host_name():
    assert node_name({"SLURMD_NODENAME": "gpu042"}) == "gpu042"
    assert node_name({}) == socket.gethostname().split(".", 1)[0]


def test_an_scontrol_that_is_missing_is_a_clear_error_and_exit_3(bundles, tmp_path):
    """--slurm where Slurm's commands are not installed: the health verdict is still printed, the error names
    scontrol, exit 3 (bringup could not do what it was asked), never a traceback."""
    from tests.conftest import env_for_cli

    env = {**env_for_cli(), "PATH": str(tmp_path), "BRINGUP_STATE_DIR": str(tmp_path / "s"), "SLURMD_NODENAME": "n1"}
    r = subprocess.run([sys.executable, "-m", "wizard.cli", "check", "--profile", "health", "--slurm", "--snapshot",
                        str(bundles["healthy"])], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "scontrol not found" in r.stderr and "Traceback" not in r.stderr
    assert "overall:" in r.stdout
