"""The acceptance report (wizard/report.py, `bringup report`): one model from a build or from capture bundles, rendered
as HTML, Markdown and JSON; checked in a real headless Chromium (DOM, screenshot, PDF).

Real cases only: a bundle assembled from real captured outputs in tests/data (an 8-GPU topology, nvidia-smi -q -x, a
kernel log with an Xid, lscpu, dmidecode -t 17, lspci; see tests/data/PROVENANCE.md), the development VM's real
bundle, and this machine (`plan`, `check`, a real CPU validation run, then `report`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jsonschema
import pytest

import steps
from tests.conftest import DATA, DEVVM_BUNDLE, ROOT, bringup_cmd, env_for_cli, frozen_clock
from tests.validate_fixtures import logs, synthetic_gpu_log, synthetic_node_log  # noqa: F401
from wizard import report as rpt
from wizard.capture import capture
from wizard.engine import Build
from wizard.hosts import CommandResult, LocalHost
from wizard.model import Finding, Verdict
from wizard.rules.validate import results_gpu, results_node, results_soak
from wizard.store import ActionState

SCHEMA = json.loads((ROOT / "assets" / "schema" / "report.schema.json").read_text())
CASES = DATA / "cases"
PLATFORM = DATA / "platform" / "public"

CASE_COMMANDS = {
    ("nvidia-smi", "-q", "-x"): CASES / "nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml",
    ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"): CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt",
    ("nvidia-smi", "topo", "-m"): CASES / "nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt",
    ("nvcc", "--version"): CASES / "nvcc-version__cuda-12.4-h100-node.txt",
    ("lscpu",): CASES / "lscpu__epyc-8434p-nps8-1socket.txt",
    ("lspci", "-D", "-nn", "-vvv"): CASES / "lspci-vv__a100-sxm4-header-partial.txt",
    ("dmidecode", "-t", "17"): PLATFORM / "dmidecode-t17__supermicro-as4124gs-2x-epyc7452-1dpc-partial.txt",
}
"""Each command the assembled node answers, with the real captured output it answers with."""
CASE_FILES = {
    "proc/driver/nvidia/version": CASES / "proc-driver-nvidia-version__open-565.txt",
    "proc/cmdline": CASES / "proc-cmdline__iommu-pt.txt",
}
"""Files the assembled node has (real captured contents at their real paths); every other file is absent."""


class CaseHost(LocalHost):
    """Commands answered from real case files, files from a tree holding only :data:`CASE_FILES`; anything else:
    not found (the report must say "not available", never guess)."""

    def __init__(self, root: Path) -> None:
        for rel, src in CASE_FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
        super().__init__(root=str(root))

    async def run(self, argv, timeout_s=20):
        case = CASE_COMMANDS.get(tuple(argv))
        if case is None:
            return CommandResult(list(argv), 127, error=f"command not found: {argv[0]}")
        return CommandResult(list(argv), 0, case.read_bytes())

    async def builtin(self, name):
        return CommandResult([f"builtin:{name}"], 127, error="no NVML in this assembled node")


@pytest.fixture(scope="module")
def case_bundle(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("case-bundle")
    bundle = d / "case-node.tar.gz"
    asyncio.run(capture(CaseHost(d / "root"), bundle, {"hostname": "case-node"}, plan={"gpu_count": 8}))
    return bundle


def run_cli(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, env=env_for_cli(), cwd=ROOT,
                          timeout=timeout)


# ------------------------------------------------------------------ the real-case bundle


def test_report_of_a_real_case_bundle_holds_inventory_findings_and_verdict(case_bundle, tmp_path):
    out = tmp_path / "case.json"
    p = run_cli("report", "--snapshot", str(case_bundle), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert f"wrote {out}: not ready" in p.stdout
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    # failed and not done counted apart, as the hand-over dialog counts them (walk 18)
    failed = sum(s["status"] == "failed" for s in doc["steps_not_done"])
    steps_failed = f"{failed} step failed" if failed == 1 else f"{failed} steps failed"  # singular and plural (walk 36 #12)
    assert f"{steps_failed}, {len(doc['steps_not_done']) - failed} not done" in p.stdout, p.stdout
    assert "(s)" not in p.stdout, p.stdout
    node = doc["nodes"][0]
    assert node["name"] == "case-node" and node["source"]["kind"] == "snapshot" and doc["verdict"] == "not ready"
    inv = node["inventory"]
    gpu = inv["gpus"][0]  # the A100 80GB XML: its name, bus id and VBIOS as nvidia-smi printed them
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB" and gpu["bus_id"].endswith(":00.0") and gpu["vbios"]
    assert dict(inv["host"])["CPU"] == "AMD EPYC 8434P 48-Core Processor"
    assert dict(inv["software"])["NVIDIA driver"].startswith("565.") and "open" in dict(inv["software"])["NVIDIA driver"]
    assert dict(inv["software"])["CUDA toolkit (nvcc)"].startswith("12.4")
    assert inv["memory"]["slots"] and inv["memory"]["dimms"][0]["locator"]  # the Supermicro dmidecode -t 17
    assert dict(inv["host"])["System"].startswith("not available")  # no DMI in the bundle: said, not guessed
    # the XE9680 kernel log: Xid 119 blocks, with its evidence line and a public source
    xid = [f for f in node["findings"] if f["verdict"] == "fail" and "119" in f["message"]]
    assert xid and any("Xid" in e for e in xid[0]["evidence"]) and xid[0]["source"]
    assert any(b["id"] == xid[0]["id"] for b in doc["blocking"])
    # steps only a build records (actions, confirmations) are pending with that reason, never passed
    val = next(s for st in node["stages"] for s in st["steps"] if s["id"] == "node.validate")
    assert val["status"] == "pending" and "not in a capture bundle" in val["reason"]
    assert "NV18" in json.dumps([f for f in node["findings"] if f["step"] == "health.topology"])


def test_markdown_form_of_the_case_bundle(case_bundle, tmp_path):
    out = tmp_path / "case.md"
    assert run_cli("report", "--snapshot", str(case_bundle), "-o", str(out)).returncode == 0
    md = out.read_text()
    assert md.startswith("# Acceptance report: case-node\n")
    assert "**Verdict: NOT READY**" in md
    assert "| 0 | NVIDIA A100-SXM4-80GB |" in md
    assert re.search(r"^\| --- \| --- \| --- \| --- \| --- \| --- \| --- \| --- \| --- \| --- \|$", md, re.M)
    assert "<details><summary>Evidence" in md and "```text" in md
    # every table row has as many cells as its header (a | in machine text would add one)
    for block in re.findall(r"((?:^\|.*\|\n)+)", md, re.M):
        rows = [r for r in block.splitlines() if r.strip()]
        widths = {len(re.split(r"(?<!\\)\|", r)) for r in rows}
        assert len(widths) == 1, rows[:3]


def test_report_to_standard_output_and_bad_input_are_clear(case_bundle, tmp_path):
    p = run_cli("report", "--snapshot", str(case_bundle), "--format", "md")
    assert p.returncode == 0 and p.stdout.startswith("# Acceptance report") and "not ready" in p.stderr
    garbage = tmp_path / "not-a-bundle.tar.gz"
    garbage.write_text("hello")
    bad = run_cli("report", "--snapshot", str(garbage))
    assert bad.returncode == 3 and "not a bringup capture bundle" in bad.stderr and "Traceback" not in bad.stderr
    none = run_cli("--state", str(tmp_path / "empty"), "report")
    assert none.returncode == 3 and "no build under" in none.stderr
    both = run_cli("report", "--snapshot", str(case_bundle), "--builds", str(tmp_path))
    assert both.returncode == 3 and "not both" in both.stderr
    notbuild = run_cli("report", "--builds", str(tmp_path))
    assert notbuild.returncode == 3 and "is not a build directory" in notbuild.stderr


def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(case_bundle, tmp_path):
    """-o naming a FIFO or a symbolic link: refused (exit 3, said), nothing replaced by the rename, no summary or
    part file left; ``-o -`` is still standard output."""
    import stat

    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    target = tmp_path / "real.html"
    target.write_text("old report\n")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    for path, kind in ((fifo, "is a FIFO"), (link, f"is a symbolic link (to {target})")):
        p = run_cli("report", "--snapshot", str(case_bundle), "-o", str(path))
        assert p.returncode == 3 and p.stdout == "", p.stdout
        assert p.stderr.startswith(f"bringup: error: cannot write the report: {path} {kind}"), p.stderr
        assert "left as it is" in p.stderr and "Traceback" not in p.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(link) == str(target)
    assert target.read_text() == "old report\n"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["link.html", "pipe.html", "real.html"]
    out = run_cli("report", "--snapshot", str(case_bundle), "-o", "-", "--format", "md")
    assert out.returncode == 0 and out.stdout.startswith("# Acceptance report: case-node\n")


def test_the_same_bundle_given_twice_is_reported_once_and_said(case_bundle, tmp_path):
    alias = tmp_path / "alias.tar.gz"
    alias.symlink_to(case_bundle)  # another name of the same file
    out = tmp_path / "r.json"
    p = run_cli("report", "--snapshot", str(case_bundle), str(case_bundle), str(alias), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert f"bringup: note: bundle {case_bundle} was given twice: it is reported once" in p.stderr
    assert f"bringup: note: bundle {alias} was given twice (it is {case_bundle}): it is reported once" in p.stderr
    doc = json.loads(out.read_text())
    assert [n["name"] for n in doc["nodes"]] == ["case-node"] and doc["matrix"] is None


def test_html_stage_rows_and_code_spans(case_bundle, tmp_path):
    """A stage row's status sits under the "status" column; `code` in bringup's text is a <code> element in HTML
    (escaped first: machine text cannot add markup) and stays a code span in Markdown."""
    doc = rpt.assemble([asyncio.run(rpt.node_from_bundle(case_bundle, steps.STAGES))])
    html = rpt.render(doc, "html")
    rows = re.findall(r'<tr class="stage-row">(.*?)</tr>', html)
    assert rows and all(re.fullmatch(r'<th>[^<]+</th><td class="s-[a-z-]+"><span class="g">.</span> [a-z-]+</td>'
                                     r'<td colspan="2"></td>', r) for r in rows), rows[:2]
    assert "not its version: <code>ipmitool mc info</code> shows it" in html and "`ipmitool" not in html
    assert "<code>bringup report</code> on the machine" in html  # a step's reason: not in a capture bundle
    assert str(rpt.html_code_spans("run `<b>x</b>` & `y`")) == "run <code>&lt;b&gt;x&lt;/b&gt;</code> &amp; <code>y</code>"
    md = rpt.render(doc, "md")
    assert "not its version: `ipmitool mc info` shows it" in md
    assert rpt.md_cell("a `x | y` b_c | ` lone") == "a `x \\| y` b\\_c \\| \\` lone"
    # an "&" that would start an entity is escaped, a plain one is not (walk 34 #19d: "Plan &amp; sizing"), and "<"
    assert rpt.md_cell("Plan & sizing &amp; <b>") == "Plan & sizing &amp;amp; &lt;b>"


# ------------------------------------------------------------------ several nodes


def test_several_bundles_make_one_report_with_the_odd_node_out(case_bundle, tmp_path):
    copies = []
    for i in (1, 2):
        c = tmp_path / f"vm{i}.tar.gz"
        shutil.copyfile(DEVVM_BUNDLE, c)
        copies.append(str(c))
    out = tmp_path / "fleet.json"
    p = run_cli("report", "--snapshot", *copies, str(case_bundle), "-o", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    rows = {r["node"]: r for r in doc["matrix"]["rows"]}
    # two bundles of one host stay two nodes, told apart by name (each with its own source)
    assert [r["node"] for r in doc["matrix"]["rows"]] == ["vm (1 of 2)", "vm (2 of 2)", "case-node"]
    assert [Path(n["source"]["path"]).name for n in doc["nodes"]][:2] == ["vm1.tar.gz", "vm2.tar.gz"]
    # the case node's driver stage failed where both VMs' driver checks found nothing to judge: that marks it out
    assert rows["case-node"]["odd_node_out"] and "driver" in rows["case-node"]["odd"]
    assert not doc["matrix"]["rows"][0]["odd_node_out"]
    html = rpt.render(doc, "html")
    assert 'class="odd-out"' in html and "odd one out" in html


def test_several_build_directories_make_one_report(tmp_path):
    dirs = []
    for name, verdict in (("gpu01", Verdict.PASS), ("gpu02", Verdict.FAIL)):
        b = Build.open(tmp_path / name, steps.STAGES, {"hostname": name, "boot_id": "b"}, create=True,
                       clock=frozen_clock)
        b.record_findings("os.release", [Finding("os.release", verdict, f"release on {name}", source="s")],
                          frozen_clock())
        dirs.append(str(b.info.path))
        b.close()
    out = tmp_path / "two.json"
    p = run_cli("report", "--builds", *dirs, "-o", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [n["name"] for n in doc["nodes"]] == ["gpu01", "gpu02"]
    assert [r["cells"]["os"] for r in doc["matrix"]["rows"]] == ["pending", "failed"]
    assert doc["blocking"] == [{"node": "gpu02", "id": "os.release", "step": "os.release", "subject": "host",
                                "message": "release on gpu02", "verdict": "fail"}]
    assert not any(r["odd_node_out"] for r in doc["matrix"]["rows"])  # two nodes: no majority to differ from
    # nothing was written into the builds: a multi-build report keeps no summary in them
    assert not list(tmp_path.glob("*/builds/*/reports"))


def test_two_builds_of_one_machine_are_one_node_the_newest(tmp_path):
    """Walk 25 #13: two builds of host vm (a bring-up started again) made "2 nodes" with every failure counted
    twice. A report counts each machine once (same machine id, else hostname): the newest build is reported, the
    older one is named as left out on standard error and in the report; another machine stays its own node."""
    def build(where: str, host: str, at: str, verdict: Verdict) -> str:
        b = Build.open(tmp_path / where, steps.STAGES, {"hostname": host, "boot_id": "b", "machine_id": "m-" + host},
                       create=True, clock=lambda: at)
        b.record_findings("os.release", [Finding("os.release", verdict, f"release on {host} at {at}", source="s")],
                          frozen_clock())
        b.close()
        return str(b.info.path)

    old = build("a", "vm", "2026-12-01T10:00:00+00:00", Verdict.FAIL)
    other = build("b", "gpu02", "2026-12-01T11:00:00+00:00", Verdict.PASS)
    new = build("c", "vm", "2026-12-02T10:00:00+00:00", Verdict.PASS)
    out = tmp_path / "r.json"
    p = run_cli("report", "--builds", old, other, new, "-o", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [n["name"] for n in doc["nodes"]] == ["gpu02", "vm"]  # no "vm (1 of 2)": one node per machine
    assert [n["source"]["path"] for n in doc["nodes"]] == [other, new]
    assert doc["blocking"] == []  # the old build's failure is not the machine's now
    assert doc["superseded"] == [{"build_id": Path(old).name, "path": old, "node": "vm",
                                  "newer_build_id": Path(new).name}]
    assert f"build {Path(old).name} is of the same machine as build {Path(new).name}" in p.stderr
    md = rpt.render(doc, "md")
    assert "Left out: older builds" in md and f"`{Path(old).name}`" in md and "# Acceptance report: 2 nodes" in md
    assert f"<code>{Path(old).name}</code>" in rpt.render(doc, "html")
    # the same build twice is one node, with nothing left out but the repeat
    p = run_cli("report", "--builds", new, new, "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert [n["name"] for n in json.loads(out.read_text())["nodes"]] == ["vm"]
    assert "superseded" not in json.loads(out.read_text()) and "was given twice: it is reported once" in p.stderr


# ------------------------------------------------------------------ a build: escaping, actions, what changed


def _build(state_dir: Path, clock=frozen_clock) -> Build:
    return Build.open(state_dir, steps.STAGES, {"hostname": "node7", "boot_id": "b"}, create=True, clock=clock)


def test_machine_text_is_escaped_in_html_and_markdown(state_dir):
    b = _build(state_dir)
    evil = "<script>alert('x')</script> | <img src=x onerror=alert(1)>"
    b.record_findings("os.release", [Finding("os.release", Verdict.WARN, f"os says {evil}", "host", (evil, "``` end"),
                                             "remedy", "os-release(5)")], frozen_clock())
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    doc = rpt.assemble([node])
    html = rpt.render(doc, "html")
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    md = rpt.render(doc, "md")
    # "<" escaped (no tag can open); a ">" stays literal (plain text in a cell: "-> driver", ">= 580")
    assert "<script>" not in md.split("```text", 1)[0] and "&lt;script>" in md and "&gt;" not in md
    assert "````text\n" in md  # the evidence holds ``` : its fence is longer


def test_action_runs_say_their_exit_in_words(state_dir):
    from wizard import actions as act
    from wizard.actions import Resolved
    from wizard.store import utcnow

    b = _build(state_dir, utcnow)  # real time: the runs' durations are measured
    ok = b.wait_action(b.start_action(steps.step_by_id("report.capture"),
                                      Resolved(ops=[{"argv": [sys.executable, "-c", "pass"]}])), timeout_s=30)
    bad = b.wait_action(b.start_action(steps.step_by_id("report.capture"),
                                       Resolved(ops=[{"argv": [sys.executable, "-c", "raise SystemExit(2)"]}])),
                        timeout_s=30)
    go = "import time; print('go', flush=True); time.sleep(60)"
    run = b.start_action(steps.step_by_id("report.capture"), Resolved(ops=[{"argv": [sys.executable, "-c", go]}]))
    deadline = time.monotonic() + 10
    while "go" not in Path(run.log_path).read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert act.cancel(run, b.boot_id)  # SIGTERM, as the TUI's cancel sends
    stopped = b.wait_action(run, timeout_s=30)
    node = rpt.node_from_build(b, None, "none")
    b.close()
    by_id = {a["id"]: a for a in node["actions"]}
    assert by_id[ok.id]["exit"] == "succeeded (exit status 0)"
    assert by_id[bad.id]["exit"] == "failed (exit status 2)"
    assert stopped.exit_status == -15 and by_id[run.id]["exit"] == "cancelled (SIGTERM)"
    assert by_id[run.id]["commands"] == [shlex.join([sys.executable, "-c", go])] and by_id[run.id]["log"].endswith(".log")
    assert by_id[run.id]["user"] == "tester" and re.fullmatch(r"\d+ s", by_id[run.id]["duration"])


def test_a_runs_end_in_the_report_is_the_one_wording_of_wizard_actions():
    """The report's run table says how a run ended with wizard.actions.outcome_words (also the screens' and the
    CLI's), where a cancel is never a failure."""
    from wizard.actions import outcome_words
    from wizard.store import ActionState

    assert outcome_words(ActionState.CANCELLED, -15) == "cancelled (SIGTERM)"
    assert outcome_words(ActionState.FAILED, -9) == "killed by SIGKILL"
    assert outcome_words(ActionState.INTERRUPTED, None).startswith("interrupted")
    assert outcome_words(ActionState.FAILED, 1) == "failed (exit status 1)"


def test_the_report_line_says_what_the_new_findings_are():
    """Walk 23 #10: "3 blocking ...; since the previous report: 3 new" read as three new problems; they were passes."""
    from wizard import i18n
    from wizard.cli import new_findings_said

    passes = [{"id": "node.sanity", "verdict": "pass"}, {"id": "node.p2p", "verdict": "pass"}]
    assert new_findings_said(passes) == " (all pass)" and new_findings_said([]) == ""
    assert new_findings_said(passes + [{"id": "os.swap", "verdict": "fail"}, {"id": "x", "verdict": "skip"}]) == (
        " (2 not a pass)")
    i18n.set_language("zh_CN")
    try:
        assert new_findings_said(passes) == "（均通过）" and new_findings_said([{"verdict": "warn"}]) == "（1 条未通过）"
    finally:
        i18n.set_language("en")


def test_what_changed_since_the_previous_report_of_the_build(state_dir, tmp_path):
    b = _build(state_dir)
    b.record_findings("os.release", [Finding("os.release", Verdict.FAIL, "unsupported release", source="s")],
                      frozen_clock())
    b.record_findings("os.memory", [Finding("os.memory", Verdict.WARN, "32 GiB of RAM", source="s")], frozen_clock())
    b.close()
    first = run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "1.json"))
    assert first.returncode == 0, first.stderr
    assert json.loads((tmp_path / "1.json").read_text())["changes"]["previous"] is None
    b = Build.open(state_dir, steps.STAGES, {"boot_id": "b"}, clock=frozen_clock)
    b.record_findings("os.release", [Finding("os.release", Verdict.PASS, "Ubuntu 24.04", source="s")], frozen_clock())
    b.record_findings("os.memory", [Finding("os.memory", Verdict.FAIL, "16 GiB of RAM", source="s"),
                                    Finding("os.swap", Verdict.FAIL, "swap is on", source="s")], frozen_clock())
    b.close()
    second = run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "2.md"))
    # walk 23: the new one said what it is ("3 new" beside "3 blocking" read as three new problems; they were passes)
    assert "since the previous report: 1 new (1 not a pass), 1 resolved, 1 changed" in " ".join(
        second.stdout.split()), second.stdout
    first, *rest = second.stdout.splitlines()  # "wrote PATH: VERDICT" whole on one line, the counts wrapped under it
    assert first.startswith(f"wrote {tmp_path / '2.md'}: not ready") and rest
    assert all(ln.startswith("    ") and len(ln) <= 80 for ln in rest), second.stdout
    md = (tmp_path / "2.md").read_text()
    assert "| resolved | `os.release` | was fail, now pass: unsupported release |" in md
    assert "| changed | `os.memory` | warn → fail: 16 GiB of RAM |" in md
    assert "| new | `os.swap` | fail: swap is on |" in md
    summaries = sorted((state_dir / "builds").glob("*/reports/*.json"))
    assert len(summaries) == 2


def test_a_message_that_differs_only_in_a_figure_is_not_a_change():
    """Same verdict, another figure in the message (a memory-pressure reading moving on the same side of its
    threshold): not "changed"; a verdict change is, the message included."""
    def summ(*findings: tuple[str, str, str]) -> dict:
        return {"generated_at": "t", "content_hash": "h", "verdict": "ready",
                "findings": [{"node": "n", "id": i, "subject": "host", "verdict": v, "message": m}
                             for i, v, m in findings]}

    before = summ(("os.memory_pressure", "pass", "some avg10 0.12%"), ("os.swap", "warn", "swap 2 GiB"))
    after = summ(("os.memory_pressure", "pass", "some avg10 0.31%"), ("os.swap", "fail", "swap 9 GiB"))
    c = rpt.changes(before, after)
    assert [(f["id"], f["was_verdict"], f["verdict"], f["was_message"]) for f in c["changed"]] == [
        ("os.swap", "warn", "fail", "swap 2 GiB")]
    assert c["new"] == [] and c["resolved"] == []


def test_a_finding_a_plan_edit_settled_is_not_called_a_repair(state_dir, tmp_path):
    """Walk 31 #3: a GPU-count fail that passed after the plan's ``gpu_count`` was lowered read "resolved" as if the
    machine had been fixed; "What changed" says the plan changed (which answer, from what to what), not a repair. A
    fail fixed on the machine stays "resolved"."""
    b = _build(state_dir)
    b.set_plan(gpu_count=8)
    b.record_findings("health.gpu_count", [Finding("health.gpu_count", Verdict.FAIL, "4 GPUs, 8 planned", source="s")],
                      frozen_clock(), plan_read={"gpu_count": 8})
    b.record_findings("os.release", [Finding("os.release", Verdict.FAIL, "unsupported release", source="s")],
                      frozen_clock(), plan_read={})
    b.close()
    assert run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "1.json")).returncode == 0
    b = Build.open(state_dir, steps.STAGES, {"boot_id": "b"}, clock=frozen_clock)
    b.set_plan(gpu_count=4)
    b.record_findings("health.gpu_count", [Finding("health.gpu_count", Verdict.PASS, "4 GPUs", source="s")],
                      frozen_clock(), plan_read={"gpu_count": 4})
    b.record_findings("os.release", [Finding("os.release", Verdict.PASS, "Ubuntu 24.04", source="s")], frozen_clock())
    b.close()
    second = run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "2.md"))
    assert "2 resolved (1 by a plan change, not a repair)" in " ".join(second.stdout.split()), second.stdout
    md = (tmp_path / "2.md").read_text()
    assert ("| plan changed | `health.gpu_count` | was fail, now pass because the plan changed (`gpu_count` 8 -> 4),"
            " not a repair: 4 GPUs, 8 planned |") in md, md
    assert "| resolved | `os.release` | was fail, now pass: unsupported release |" in md
    third = run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "3.json"))
    doc = json.loads((tmp_path / "3.json").read_text())
    assert third.returncode == 0 and doc["changes"]["resolved"] == []  # nothing left to settle
    assert [f["plan_read"] for f in doc["nodes"][0]["findings"] if f["id"] == "health.gpu_count"] == [{"gpu_count": 4}]


def test_the_report_stage_action_writes_the_report_into_the_build_directory(state_dir):
    b = _build(state_dir)
    b.close()
    p = run_cli("--state", str(state_dir), "run", "report.document", "--yes", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    build_dir = next((state_dir / "builds").iterdir())
    written = list(build_dir.glob("report-*.html"))
    assert len(written) == 1 and "Acceptance report: node7" in written[0].read_text()
    log = next((build_dir / "actions").glob("*.log")).read_text()
    assert f"wrote {written[0]}" in log  # the path the TUI's action screen shows in the log
    # walk 23: the child wrapped at 80 and the action pane wrapped its lines again; its sentence is one line of the log
    wrote = next(ln for ln in log.splitlines() if ln.startswith(f"wrote {written[0]}"))
    assert wrote.endswith(" not done"), log
    b = Build.open(state_dir, steps.STAGES, {"boot_id": "b"})
    assert b.status("report.document").value == "passed"
    b.close()
    # walk 24: actions run with LC_ALL=C; the bringup it starts is told the operator's language, so a Chinese
    # screen's log reads Chinese (it was "wrote ...: not ready" under a Chinese screen)
    p = run_cli("--state", str(state_dir), "--lang", "zh_CN", "run", "report.document", "--yes", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    logs = sorted((build_dir / "actions").glob("*.log"))
    zh = logs[-1].read_text()
    assert "--lang zh_CN" in zh and "已写出" in zh and "wrote /" not in zh, zh


def test_status_points_at_the_report(state_dir):
    _build(state_dir).close()
    out = run_cli("--state", str(state_dir), "status").stdout
    assert "`bringup report`" in out.splitlines()[-1]
    assert "report.document" in out


# ------------------------------------------------------------------ this machine, and a real headless Chromium


@pytest.fixture(scope="module")
def local_report(tmp_path_factory) -> dict:
    """This machine: a build (`plan`), `check`, a real CPU validation run (2 gloo ranks), then `report` as HTML
    and JSON."""
    d = tmp_path_factory.mktemp("local")
    st = str(d / "state")
    assert run_cli("--state", st, "plan", "validate_device=cpu", "validate_quick=true").returncode == 0
    run_cli("--state", st, "check")  # its verdict is this machine's; the report holds whatever it is
    v = run_cli("--state", st, "validate", "node", "--device", "cpu", "--quick", "--yes", timeout=600)
    assert "node.validate" in v.stdout, v.stdout + v.stderr
    v = run_cli("--state", st, "validate", "soak", "--device", "cpu", "--quick", "--minutes", "0.05", "--yes",
                timeout=600)
    assert "node.soak" in v.stdout, v.stdout + v.stderr
    html, js = d / "r.html", d / "r.json"
    for out in (html, js):
        p = run_cli("--state", st, "report", "-o", str(out))
        assert p.returncode == 0, p.stderr
    return {"dir": d, "html": html, "json": json.loads(js.read_text())}


SYNTHETIC_SOAK = DATA / "validate" / "synthetic_soak-2x-h100-gpu1-thermal.log"
"""A 5-minute soak of two H100s (GPU 1 throttles and slows, a corrected ECC rise), exactly as the validation script
prints it; synthetic: no GPU here (tests/data/PROVENANCE.md)."""


def _store_run(b: Build, step_id: str, log: Path, results: dict) -> int:
    """A finished validation run recorded as the engine records one: its log and its judged results."""
    rid = b.store.add_action_run(step_id, "soak", [["python3", "bringup_validate.py", "soak"]], "tester", False,
                                 ActionState.SUCCEEDED, str(log), "", "b")
    b.store.update_action_run(rid, results=results, exit_status=0, ended_at=frozen_clock())
    return rid


@pytest.fixture(scope="module")
def gpu_soak_report(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("gpu-soak")
    (d / "state").mkdir()
    b = Build.open(d / "state", steps.STAGES, {"hostname": "hgx-h100-01", "boot_id": "b"}, create=True,
                   clock=frozen_clock)
    _store_run(b, "node.soak", SYNTHETIC_SOAK, results_soak(SYNTHETIC_SOAK.read_text(), {}))
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    doc = rpt.assemble([node], now=frozen_clock())
    html = d / "soak.html"
    html.write_text(rpt.render(doc, "html"))
    return {"doc": doc, "html": html, "md": rpt.render(doc, "md")}


def test_gpu_soak_draws_temperature_and_power_per_gpu(gpu_soak_report):
    doc = gpu_soak_report["doc"]
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    v = doc["nodes"][0]["validations"][0]
    assert v["device"] == "gpu" and v["label"] == "GPU run"
    assert [s["subject"] for s in v["samples"]] == ["GPU 0 (0000:18:00.0)", "GPU 1 (0000:2a:00.0)"]
    html = gpu_soak_report["html"].read_text()
    charts = re.findall(r'<svg class="tchart (temp_c|power_w)"[^>]*data-points="(\d+)"[^>]*>(.*?)</svg>', html, re.S)
    assert [(m, n) for m, n, _ in charts] == [("temp_c", "120"), ("power_w", "120")] * 2
    for m, _, body in charts:
        points = re.search(r'<polyline points="([^"]+)"', body).group(1).split()
        assert len(points) == 120 and all(re.fullmatch(r"[\d.]+,[\d.]+", p) for p in points)
        assert ">elapsed (s)</text>" in body
        assert (">temperature (°C)</text>" if m == "temp_c" else ">power (W)</text>") in body
        assert ("limit 700 W" in body) is (m == "power_w")  # the power limit drawn on the power chart
    assert "<b>GPU 1 (0000:2a:00.0)</b>: temperature 36–87 °C" in html
    assert "SW Thermal Slowdown (0x20, warn) in 31 samples" in html
    assert "<script" not in html and "<link" not in html


def test_gpu_soak_table_and_counters_before_after(gpu_soak_report):
    html = gpu_soak_report["html"].read_text()
    rows = re.findall(r'<tr class="soak-row">(.*?)</tr>', html)
    assert len(rows) == 3
    gpu1 = next(r for r in rows if r.startswith("<td>GPU 1 (0000:2a:00.0)</td>"))
    assert "741.08" in gpu1 and "(#15 of 15)" in gpu1 and "-5.2%" in gpu1 and "756.23 → 701.12 (-7.3%" in gpu1
    assert '<span class="g v-fail">fail</span>' in gpu1
    assert "<td>all-reduce across 2 ranks, 256 MiB</td>" in rows[2] and "v-pass" in rows[2]
    # the counters: one table, a column per GPU; the one counter that rose is marked, the others are not
    assert html.count('class="delta"') == 1
    assert re.search(r'<tr class="changed"><th>ecc_volatile_corrected</th><td>0 → 0</td><td class="delta">0 → 2 '
                     r'<b>\(Δ \+2\)</b></td></tr>', html)
    assert "<tr><th>aer.correctable</th><td>0 → 0</td><td>5 → 5</td></tr>" in html
    md = gpu_soak_report["md"]
    assert ("| GPU 1 (0000:2a:00.0) | GEMM (TFLOPS) | 741.08 (#1) | 702.50 (#15 of 15) | -5.2% | 756.23 → 701.12 "
            "(-7.3%; allowed −5%) | fail |") in md
    assert "| ecc\\_volatile\\_corrected | 0 → 0 | **0 → 2 (Δ +2)** |" in md
    # Markdown: no chart, one line per GPU's series with its min/max
    assert "<svg" not in md
    assert re.search(r"^- GPU 1 \(0000:2a:00\.0\): temperature 36–87 °C \(mean 75\.3\); power 95–696\.7 W "
                     r"\(mean 544\.2, limit 700 W\); SM clock 1,755–1,980 MHz", md, re.M)
    for block in re.findall(r"((?:^\|.*\|\n)+)", md, re.M):
        widths = {len(re.split(r"(?<!\\)\|", r)) for r in block.splitlines() if r.strip()}
        assert len(widths) == 1, block[:300]


def test_results_stored_before_the_telemetry_or_damaged_still_render(state_dir):
    b = _build(state_dir)
    old = results_soak(SYNTHETIC_SOAK.read_text(), {})
    del old["telemetry"]  # what a build made before the telemetry was stored holds
    _store_run(b, "node.soak", SYNTHETIC_SOAK, old)
    _store_run(b, "node.soak", SYNTHETIC_SOAK, {**old, "telemetry": {
        "samples": [{"series": {"temp_c": [[1, "x"], "bad"]}, "stats": 5}], "counters": "no", "soak": [{"first": 3}]}})
    node = rpt.node_from_build(b, None, "none")
    b.close()
    before, damaged = node["validations"]
    assert before["rows"] and before["soak"] == before["samples"] == before["counters"] == []
    assert damaged["samples"][0]["series"]["temp_c"] == [] and damaged["soak"][0]["verdict"] == "unknown"
    doc = rpt.assemble([node])
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    html = rpt.render(doc, "html")
    assert '<svg class="tchart' not in html and "<b>?</b>: temperature not sampled" in html
    assert "Error counters" not in rpt.render(doc, "md")


def test_one_gpu_run_shows_each_gpu_against_the_floors(logs, state_dir):
    """A real ``gpu --device cpu`` run edited into one H100's (tests.validate_fixtures.synthetic_gpu_log): GEMM, memory
    copy and host<->device copies each against its floor in one row per GPU; its NVML samples drawn."""
    log = state_dir / "gpu.log"
    log.write_text(synthetic_gpu_log(logs("gpu_cpu"), tflops=760.0, d2d_gb_s=2800.0, h2d_gb_s=50.0, d2h_gb_s=10.0,
                                     pcie={"current_gen": 5, "current_width": 16, "max_gen": 5, "max_width": 16},
                                     samples=[0, 0, 0, 0, 0]))
    b = _build(state_dir)
    _store_run(b, "gpu.validate", log, results_gpu(log.read_text(), {}))
    node = rpt.node_from_build(b, None, "none")
    b.close()
    v = node["validations"][0]
    assert v["device"] == "gpu"
    assert [c["test"] for c in v["per_gpu"]["columns"]] == ["gemm", "memcpy", "h2d", "d2h"]
    (row,) = v["per_gpu"]["rows"]
    assert row["subject"] == "GPU 0 (0000:17:00.0)"
    assert [c["verdict"] for c in row["cells"]] == ["pass", "pass", "pass", "fail"]
    assert all(c["floor"] for c in row["cells"]) and row["cells"][3]["value"] == 10.0
    doc = rpt.assemble([node])
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    html = rpt.render(doc, "html")
    table = re.search(r'<table class="fixed small per-gpu">.*?</table>', html, re.S).group(0)
    assert "<th>GEMM</th><th>memory copy</th><th>host → device</th><th>device → host</th>" in table
    assert re.search(r"<td>760.00 TFLOPS <span class=\"muted\">\(≥ [\d,.]+\)</span> <span class=\"g v-pass\">pass</span>",
                     table)
    assert re.search(r"<td>10.00 GB/s <span class=\"muted\">\(≥ 13.00\)</span> <span class=\"g v-fail\">fail</span>", table)
    assert len(re.findall(r'<svg class="tchart', html)) == 2 and 'data-points="5"' in html
    md = rpt.render(doc, "md")
    assert "| GPU | GEMM | memory copy | host → device | device → host |" in md
    assert "| GPU 0 (0000:17:00.0) | 760.00 TFLOPS (≥ " in md


def test_node_run_draws_the_busbw_curve_with_its_floor_and_the_p2p_heat_map(logs, state_dir):
    """A real 2-rank ``node --device cpu`` run edited into 8x H100 with NVLink (tests.validate_fixtures): the busbw
    curve with the floor it was judged against drawn, and the P2P pairs as a shaded source x destination table."""
    log = state_dir / "node.log"
    log.write_text(synthetic_node_log(logs("node_cpu"), busbw_at_max=470.0, nvlink={"links_active": 18, "version": 4},
                                      p2p=[300.0, 310.0, 305.0, 150.0]))
    b = _build(state_dir)
    _store_run(b, "node.validate", log, results_node(log.read_text(), {}))
    node = rpt.node_from_build(b, None, "none")
    b.close()
    v = node["validations"][0]
    assert v["device"] == "gpu" and v["series"]["floor_gb_s"] == 460 and v["series"]["points"][-1] == [4 << 30, 470.0]
    html = rpt.render(rpt.assemble([node]), "html")
    chart = re.search(r'<svg class="busbw".*?</svg>', html, re.S).group(0)
    assert '<line class="floor"' in chart and "floor 460.00 GB/s" in chart and ">busbw (GB/s)</text>" in chart
    assert len(re.search(r'<polyline points="([^"]+)"', chart).group(1).split()) == len(v["series"]["points"])
    heat = re.search(r'<table class="heat small">.*?</table>', html, re.S).group(0)
    assert heat.count("<tr>") == 1 + len(v["p2p"]["devices"]) and "rgba(31,95,168," in heat and ">150.00<" in heat


def test_time_chart_axes():
    ch = rpt.time_chart([[0, 40.0], [700, 80.0], [1300, 82.0]], label="temperature", unit="°C")
    assert ch["x_label"] == "elapsed (min)" and ch["y_label"] == "temperature (°C)" and ch["points"] == 3
    assert [t["label"] for t in ch["xticks"]] == ["0", "10", "20", "30"]  # minutes past 10 minutes
    assert [t["label"] for t in ch["yticks"]] == ["40", "60", "80", "100"]
    assert ch["limit_y"] is None and rpt.time_chart([], label="power", unit="W") is None
    flat = rpt.time_chart([[0, 1980.0], [10, 1980.0]], label="SM clock", unit="MHz")
    assert len(flat["yticks"]) >= 2  # a flat series still gets an axis


def test_report_of_this_machine(local_report):
    doc = local_report["json"]
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    node = doc["nodes"][0]
    assert dict(node["inventory"]["host"])["Kernel"] == os.uname().release
    assert node["inventory_source"].startswith("this machine")
    v = node["validations"][0]
    assert v["device"] == "cpu" and "not GPU results" in v["label"] and v["series"]["points"]
    # a CPU run never counts as a GPU result: its step is cpu-only and not done, so the machine is not ready
    assert {"node": node["name"], "step": "node.validate", "status": "cpu-only"}.items() <= \
        next(s for s in doc["steps_not_done"] if s["step"] == "node.validate").items()
    assert doc["verdict"] == "not ready"
    assert doc["changes"]["previous"] is not None  # the second report of the build compared with the first
    html = local_report["html"].read_text()
    # self-contained: no script, nothing loaded from elsewhere (URLs appear only as text, in sources)
    assert "<script" not in html and "<link" not in html and "@import" not in html and "url(" not in html
    assert not re.search(r"""\b(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert 'class="busbw"' in html and "Ran on the CPU (gloo): not a GPU result." in html
    # the CPU soak: labelled, its soak table said to be the CPU's, nothing of it drawn or tabled as a GPU's
    soak = next(x for x in node["validations"] if x["step"] == "node.soak")
    assert soak["device"] == "cpu" and soak["label"].startswith("CPU run: proves the software path, not a GPU")
    assert soak["samples"] == [] and soak["per_gpu"] is None and len(soak["soak"]) >= 2
    assert all(s["verdict"] == "skip" for s in soak["soak"]) and not soak["counters"][0]["available"]
    block = html.split('<section class="validation">', 1)[1].split("<code>node.soak</code>, ", 1)[1]
    block = block.split('<div class="vrun', 1)[0].split("</section>", 1)[0]
    assert '<p class="label cpu-label">CPU run: proves the software path, not a GPU' in block
    assert '<span class="cpu-label">CPU run: proves the software path, not a GPU</span>' in block
    assert '<tr class="soak-row">' in block and "counters not read: no CUDA device" in block
    assert '<svg class="tchart' not in html and "Per GPU against the floors" not in html


CHROMIUM_MANUAL = "Debian's chromium package is needed for the report's browser tests: apt-get install chromium"


@pytest.fixture(scope="module")
def chromium() -> str:
    """The chromium binary; installed with apt-get (tests/sshd.ensure_installed) when missing, one worker at a time.
    Fails (never skips) with what to install by hand when it cannot be."""
    from tests.sshd import ensure_installed

    class Unavailable(Exception):
        pass

    try:
        ensure_installed(lambda: [] if shutil.which("chromium") else ["chromium"], ("chromium",),
                         lambda _m: CHROMIUM_MANUAL, Unavailable, "chromium",
                         Path(tempfile.gettempdir()) / "bringup-tests-chromium-install.lock")
    except Unavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    found = shutil.which("chromium")
    assert found, "apt-get installed chromium but it is not on PATH"
    return found


def _chromium(binary: str, tmp: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp)}
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={tmp / 'profile'}", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


A4_CSS_PX = 794
"""The width of an A4 page at CSS's 96 px per inch (210 mm): a table wider than the page at this width would be cut."""

MEASURE = """<script>
window.addEventListener('load', function () {
  var bad = [];
  document.querySelectorAll('table').forEach(function (t) {
    if (t.scrollWidth > document.documentElement.clientWidth) { bad.push(t.id || t.className); }
  });
  document.body.setAttribute('data-overflowing-tables', String(bad.length));
  document.body.setAttribute('data-overflowing-names', bad.join(','));
});
</script>"""
"""Added to a copy of the report for the DOM test only (the report itself has no JavaScript): counts tables wider
than the page."""


def test_chromium_renders_the_report_dom(chromium, local_report, tmp_path):
    page = tmp_path / "measure.html"
    page.write_text(local_report["html"].read_text().replace("</body>", MEASURE + "</body>"))
    p = _chromium(chromium, tmp_path, f"--window-size={A4_CSS_PX},1200", "--dump-dom", page.as_uri())
    dom = p.stdout
    assert p.returncode == 0 and "<body" in dom, p.stderr[-2000:]
    assert re.search(r'<p id="verdict" class="verdict v-not-ready">Verdict: <strong>NOT READY</strong>', dom)
    assert re.search(r"<tr><th>Kernel</th><td>" + re.escape(os.uname().release) + "</td></tr>", dom)
    assert re.search(r'<svg class="busbw"[^>]*>.*<polyline', dom, re.S)
    assert 'data-overflowing-tables="0"' in dom, re.search(r'data-overflowing-names="[^"]*"', dom)


MEASURE_CHARTS = """<script>
window.addEventListener('load', function () {
  var width = document.documentElement.clientWidth, drawn = 0, out = [];
  document.querySelectorAll('svg.tchart').forEach(function (s) {
    var r = s.getBoundingClientRect(), line = s.querySelector('polyline');
    if (r.width > 100 && r.height > 50 && line && line.getTotalLength() > 0) { drawn++; }
    if (r.right > width + 0.5) { out.push(s.getAttribute('class')); }
  });
  document.body.setAttribute('data-drawn-charts', String(drawn));
  document.body.setAttribute('data-overflowing-charts', String(out.length));
});
</script>"""
"""Added to a copy of the GPU soak report for the DOM test only: counts the temperature/power charts drawn with a line
and those reaching past the page's width."""


def test_chromium_draws_the_soak_charts_within_the_page(chromium, gpu_soak_report, tmp_path):
    page = tmp_path / "charts.html"
    page.write_text(gpu_soak_report["html"].read_text().replace("</body>", MEASURE + MEASURE_CHARTS + "</body>"))
    p = _chromium(chromium, tmp_path, f"--window-size={A4_CSS_PX},1200", "--dump-dom", page.as_uri())
    dom = p.stdout
    assert p.returncode == 0 and "<body" in dom, p.stderr[-2000:]
    assert 'data-drawn-charts="4"' in dom, re.search(r'data-drawn-charts="[^"]*"', dom)
    assert 'data-overflowing-charts="0"' in dom
    assert 'data-overflowing-tables="0"' in dom, re.search(r'data-overflowing-names="[^"]*"', dom)


def test_chromium_screenshot_of_the_report(chromium, local_report, tmp_path):
    png = tmp_path / "report.png"
    p = _chromium(chromium, tmp_path, "--window-size=1280,2000", f"--screenshot={png}",
                  local_report["html"].as_uri())
    assert p.returncode == 0, p.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000  # a rendered page, not a blank one


def pdf_pages(pdf: bytes) -> int:
    """Pages of a PDF: its ``/Type /Page`` objects (``/Type /Pages`` is the page tree, not a page)."""
    return len(re.findall(rb"/Type\s*/Page(?![A-Za-z])", pdf))


def test_chromium_prints_the_report_to_pdf(chromium, local_report, tmp_path):
    pdf = tmp_path / "report.pdf"
    p = _chromium(chromium, tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", local_report["html"].as_uri())
    assert p.returncode == 0, p.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    n = pdf_pages(data)
    # the summary page, then each section of the node on its own page (inventory, steps over several pages,
    # findings, validation, action runs): never one long page, never hundreds
    assert 6 <= n <= 60, n


def test_chromium_prints_the_evidence_of_closed_details(chromium, state_dir, tmp_path):
    """The evidence sits in closed <details> on screen; printed (no JavaScript), it is on paper: the PDF of the report
    as written has as many pages as the same report with every <details> open, and more than the same report
    without the evidence. The evidence: the real A10G nvidia-smi -q -x, 354 lines."""
    lines = tuple((CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml").read_text().splitlines())
    b = _build(state_dir)
    b.record_findings("os.release", [Finding("os.release", Verdict.PASS, "the GPU answers", evidence=lines,
                                             source="nvidia-smi(1)")], frozen_clock())
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    html = rpt.render(rpt.assemble([node]), "html")
    assert html.count("<details>") == 1
    pages = {}
    for name, text in (("closed", html), ("open", html.replace("<details>", "<details open>")),
                       ("none", re.sub(r"<details>.*?</details>", "", html, flags=re.S))):
        page, pdf = tmp_path / f"{name}.html", tmp_path / f"{name}.pdf"
        page.write_text(text)
        p = _chromium(chromium, tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.as_uri())
        assert p.returncode == 0, p.stderr[-2000:]
        pages[name] = pdf_pages(pdf.read_bytes())
    assert pages["closed"] == pages["open"] > pages["none"] + 2, pages


def test_findings_of_a_cpu_run_are_never_shown_as_a_gpu_pass(local_report):
    """The real CPU validation runs' steps are cpu-only: each of their findings carries cpu_run and a pass among
    them reads "pass (CPU run)" in HTML and Markdown, never a green "✓ pass"."""
    doc = local_report["json"]
    node = doc["nodes"][0]
    cpu_steps = {s["id"] for st in node["stages"] for s in st["steps"] if s["status"] == "cpu-only"}
    assert {"node.validate", "node.soak"} <= cpu_steps
    of_cpu = [f for f in node["findings"] if f["step"] in cpu_steps]
    assert of_cpu and all(f.get("cpu_run") is True for f in of_cpu)
    assert not any(f.get("cpu_run") for f in node["findings"] if f["step"] not in cpu_steps)
    passes = [f for f in of_cpu if f["verdict"] == "pass"]
    assert passes
    html = local_report["html"].read_text()
    for f in passes:
        assert '<span class="g s-cpu-only">○ pass (CPU run)</span>' in html
        assert not re.search(r'<span class="g v-pass">✓ pass</span>(?: <span class="measured">[^<]*</span>)? <code>'
                             + re.escape(f["id"]) + "</code>", html), f["id"]
    md = rpt.render(doc, "md")
    assert any("○ pass (CPU run)" in ln and f"`{f['id']}`" in ln for f in passes for ln in md.splitlines())


def test_findings_show_their_measured_value_against_the_threshold(state_dir):
    """Findings judged from real outputs by the rules (the real 8x H100 nccl-tests all-reduce against its floor, the
    real A10G nvidia-smi -q -x link width and temperature) keep their measured value through the store: the JSON
    report carries it (schema-valid), the HTML and the Markdown show the value against the threshold next to the
    verdict, and a finding without one shows none."""
    from wizard.explain import explain_text
    from wizard.rules import nccl

    b = _build(state_dir)
    allreduce = nccl.judge_nccl_tests((CASES / "nccl-tests__1node-8xh100-allreduce-256m-2g.txt").read_text(), {})
    b.record_findings("node.allreduce", allreduce, frozen_clock())
    smi = explain_text((CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml").read_text()).findings
    b.record_findings("health.pcie_width", [f for f in smi if f.id == "health.pcie_width"], frozen_clock())
    b.record_findings("health.thermal", [f for f in smi if f.id == "health.temperature"], frozen_clock())
    b.record_findings("os.release", [Finding("os.release", Verdict.PASS, "Ubuntu 24.04", source="os-release(5)")],
                      frozen_clock())
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    doc = rpt.assemble([node])
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(rpt.render(doc, "json")))
    by_id = {f["id"]: f for f in doc["nodes"][0]["findings"]}
    assert by_id["node.allreduce"]["measured"] == {"value": 470.63, "threshold": 460.0, "unit": "GB/s",
                                                   "direction": "at_least", "label": "busbw at 2 GiB"}
    assert "measured" not in by_id["os.release"]
    html = rpt.render(doc, "html")
    assert re.search(r"✓ pass</span> <span class=\"measured\">\(busbw at 2 GiB: 470\.6 GB/s, expected ≥ 460 GB/s\)"
                     r"</span> <code>node\.allreduce</code>", html)
    assert "(GPU 0 (0000:00:1e.0) link width: 8 lanes, expected ≥ 16 lanes)" in html
    assert "headroom to slowdown: 78 °C, expected ≥ 15 °C" in html
    assert html.count('class="measured"') == 3
    md = rpt.render(doc, "md")
    assert "**! warn** (GPU 0 (0000:00:1e.0) link width: 8 lanes, expected ≥ 16 lanes) `health.pcie_width`" in md
    assert "| ✓ pass (busbw at 2 GiB: 470.6 GB/s, expected ≥ 460 GB/s) | `node.allreduce` |" in md
    assert "| ✓ pass | `os.release` |" in md


def test_steps_a_person_skipped_are_listed_with_the_reason_and_the_ones_found_not_applicable_are_not(tmp_path):
    b = Build.open(tmp_path, steps.STAGES, {"hostname": "gpu01", "boot_id": "b"}, create=True, clock=frozen_clock)
    b.skip("health.nvlink", "PCIe-only board: no NVLink bridges fitted", user="alice")
    b.record_findings("driver.fabric_manager",
                      [Finding("driver.fabric_manager", Verdict.SKIP, "no NVSwitch on this board", source="s")],
                      frozen_clock())
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    doc = rpt.assemble([node], now=frozen_clock())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [(w["step"], w["user"]) for w in doc["waived"]] == [("health.nvlink", "alice")]
    html, md = rpt.render(doc, "html"), rpt.render(doc, "md")
    for text in (html, md):
        assert "1 step skipped by a person (listed)" in text and "PCIe-only board: no NVLink bridges fitted" in text
        assert "Skipped by a person" in text
    assert "driver.fabric_manager</code> —" not in html  # found not applicable by its check: not a person's waiver


def test_the_failed_findings_of_a_step_a_person_skipped_are_waived_with_it_not_blocking(tmp_path):
    """Walk 24: a single-node build whose multi-node step failed ('n1 unreachable') and was then skipped by a person
    ('single node') stayed NOT READY for ever: every failed finding blocked, whatever its step's status. They are
    listed with the skip (and in waived_findings), the node at best 'ready with warnings'; another step's failure
    still blocks."""
    from wizard.model import StepStatus

    b = Build.open(tmp_path, steps.STAGES, {"hostname": "gpu01", "boot_id": "b"}, create=True, clock=frozen_clock)
    for st in steps.STAGES:
        for s in st.steps:
            b.store.set_step(s.id, StepStatus.CONFIRMED, user="alice", boot_id="b")
    b.record_findings("multinode.consistency", [Finding("multinode.nodes", Verdict.FAIL, "n1 (localhost) unreachable",
                                                        source="s")], frozen_clock(), from_run=True)
    b.skip("multinode.consistency", "single node", user="alice")
    node = rpt.node_from_build(b, None, "no inventory in this test")
    doc = rpt.assemble([node], now=frozen_clock())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["verdict"] == "ready with warnings" and doc["blocking"] == []
    assert [(f["id"], f["node"]) for f in doc["waived_findings"]] == [("multinode.nodes", "gpu01")]
    md, html = rpt.render(doc, "md"), rpt.render(doc, "html")
    assert "waived with the skip: ✗ fail `multinode.nodes` n1 (localhost) unreachable" in md
    # walk 29 #6: the first waived finding was glued onto the skip's line; each is a sub-item on a line of its own
    assert "\n  - waived with the skip: ✗ fail `multinode.nodes`" in md
    assert "waived with the skip: ✗ fail <code>multinode.nodes</code>" in html
    b.record_findings("os.tools", [Finding("os.tools", Verdict.FAIL, "lspci: command not found", source="s")],
                      frozen_clock())  # a step nobody skipped: its failure blocks
    doc = rpt.assemble([rpt.node_from_build(b, None, "no inventory in this test")], now=frozen_clock())
    b.close()
    assert doc["verdict"] == "not ready" and [f["id"] for f in doc["blocking"]] == ["os.tools"]


def test_a_bundle_s_not_applicable_steps_are_not_listed_as_skipped_by_a_person(case_bundle):
    node = asyncio.run(rpt.node_from_bundle(case_bundle, steps.STAGES))
    assert node["waived"] == []
    skipped = [s for st in node["stages"] for s in st["steps"] if s["status"] == "skipped"]
    assert skipped  # the bundle has steps its checks found not applicable: none of them is a person's decision


def test_inventory_names_each_hca_s_firmware_and_ports_and_the_dcgm_package(tmp_path):
    """The NIC rows carry the RDMA devices' firmware and port states read from sysfs (the node.fabric probe; a real
    8x NDR H100 node's tree), and the DCGM row the installed package's version, not 'not collected'."""
    from tests.fabric_data import tree_outputs
    from wizard.probes import ProbeOutput

    outs = dict(tree_outputs(tmp_path, "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt", "ib_sysfs"))
    assert outs["ib_sysfs"].files
    inv = rpt.inventory(outs)
    by_port = {n["port"].split(" port ")[0]: n for n in inv["nics"]}
    mlx = by_port["mlx5_0"]
    assert re.match(r"\d+\.\d+\.\d+", mlx["firmware"]) and "mlx5_0 port 1: active linkup 400 Gb/s InfiniBand" in \
        mlx["port"].replace("ACTIVE", "active").replace("LinkUp", "linkup")
    assert all(not n["firmware"].startswith(rpt.NOT_COLLECTED) for n in inv["nics"])
    software = dict(inv["software"])
    assert software["DCGM"] == rpt.NOT_READ  # no package list read: said, not guessed
    pkgs = ProbeOutput(  # dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package} ${Version} ${Architecture}\n' form
        name="driver_dpkg", source="dpkg-query", text=(
        "ii  datacenter-gpu-manager-4-cuda12 1:4.2.3-1 amd64\nii  datacenter-gpu-manager-4-core 1:4.2.3-1 amd64\n"),
        rc=0)
    software = dict(rpt.inventory({**outs, "driver_dpkg": pkgs})["software"])
    assert software["DCGM"].startswith("4.2.3") and "datacenter-gpu-manager-4" in software["DCGM"]


def test_a_person_s_skip_of_a_measurement_leaves_the_node_ready_with_warnings_not_ready(tmp_path):
    """Skipping a step only its run proves (a DCGM level, fio's read test) is a decision, not a proof: the node reads
    'ready with warnings' and the skip says nothing proved it; skipping a by-hand step (NVLink on a PCIe board) does
    not lower the verdict."""
    from wizard.model import StepStatus

    def verdict_with(skipped: dict[str, str]) -> dict:
        state = tmp_path / "-".join(skipped)
        b = Build.open(state, steps.STAGES, {"hostname": "gpu01", "boot_id": "b"}, create=True, clock=frozen_clock)
        for st in steps.STAGES:  # every other step done by hand, so only the skips decide
            for s in st.steps:
                if s.id not in skipped:
                    b.store.set_step(s.id, StepStatus.CONFIRMED, user="alice", boot_id="b")
        for sid, why in skipped.items():
            b.skip(sid, why, user="alice")
        node = rpt.node_from_build(b, None, "no inventory in this test")
        b.close()
        return rpt.assemble([node], now=frozen_clock())

    by_hand = verdict_with({"health.nvlink": "PCIe-only board: no NVLink bridges fitted"})
    assert by_hand["verdict"] == "ready" and by_hand["waived"][0]["unproven"] is False
    measured = verdict_with({"node.dcgm_l3": "DCGM not allowed on this site", "node.storage_read": "dataset on NFS"})
    jsonschema.Draft202012Validator(SCHEMA).validate(measured)
    assert measured["verdict"] == "ready with warnings"
    assert [w["unproven"] for w in measured["waived"]] == [True, True]
    assert "(a measurement: nothing proved it)" in rpt.render(measured, "html")
    assert "**(a measurement: nothing proved it)**" in rpt.render(measured, "md")


def test_a_fio_run_is_labelled_a_storage_test_not_a_gpu_run(tmp_path):
    """node.storage_read's results are fio jobs: the report says so, never "GPU run"."""
    from wizard.rules.storage import results_fio

    log = ROOT / "tests" / "data" / "storage" / "fio-json__dev-vm-vda-seqread-1m-randread-128k.json"
    (tmp_path / "state").mkdir()
    b = Build.open(tmp_path / "state", steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    _store_run(b, "node.storage_read", log, results_fio(log.read_text(), {"data_read_gb_s": 1}))
    node = rpt.node_from_build(b, None, "no inventory in this test")
    b.close()
    doc = rpt.assemble([node], now=frozen_clock())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    (v,) = doc["nodes"][0]["validations"]
    assert v["label"] == rpt.STORAGE_LABEL and ": GPU run" not in rpt.render(doc, "md")  # was ": GPU run"
    assert [r["test"] for r in v["rows"]] == ["fio seqread", "fio randread"]
    assert "| fio job | metric | measured |" in rpt.render(doc, "md") and "<th>fio job</th>" in rpt.render(doc, "html")


def test_no_memory_module_table_says_why_from_the_probes_own_record():
    """Walk 21: the report said "dmidecode -t 17 was not read (it needs root)" to root on a machine without
    dmidecode. The reason comes from the probe's record: not installed, not root, or no SMBIOS table."""
    from wizard.probes import ProbeOutput

    def why(o):
        return rpt.inventory({} if o is None else {"dmidecode_17": o})["memory"]["why"]

    assert "not installed" in why(ProbeOutput("dmidecode_17", "$ dmidecode -t 17",
                                              error="command not found: dmidecode"))
    assert "needs root" in why(ProbeOutput("dmidecode_17", "$ dmidecode -t 17", rc=1,
                                           stderr="/dev/mem: Permission denied\n", error="exit status 1"))
    assert "no memory device" in why(ProbeOutput("dmidecode_17", "$ dmidecode -t 17", rc=0,
                                                 text="# dmidecode 3.4\n# No SMBIOS nor DMI entry point found, sorry.\n"))
    assert "not collected" in why(None)


def test_a_not_applicable_step_is_by_nobody_and_the_report_step_writing_it_is_this_document(tmp_path, monkeypatch):
    """walk 30 #3: a step the machine's own check found not applicable read "– skipped, root" in the report (as if a
    person skipped it); it reads "not applicable", by nobody. walk 30 #4: the report written by report.document's own
    run showed that step, and its stage, as running; it is "this document", and the stage is not "running"."""
    from wizard import report as rpt
    from wizard.engine import Build
    from wizard.model import Finding, StepStatus, Verdict

    b = Build.open(tmp_path / "s", steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True)
    b.record_findings("bios.secure_boot", [Finding("bios.secure_boot", Verdict.SKIP, "no EFI: legacy boot")],
                      "2026-01-01T00:00:00+00:00")
    b.store.set_step("report.document", StepStatus.RUNNING, user="root")
    b.store.add_action_run("report.document", "Write the acceptance report", [["bringup", "report"]], "root", False,
                           ActionState.RUNNING, str(tmp_path / "l.log"), str(tmp_path / "s.json"), "b")
    monkeypatch.setenv(rpt.WRITING_STEP_ENV, "report.document")
    doc = rpt.assemble([rpt.node_from_build(b, None, "none")])
    b.close()
    by_id = {s["id"]: s for st in doc["nodes"][0]["stages"] for s in st["steps"]}
    assert by_id["bios.secure_boot"]["not_applicable"] and by_id["bios.secure_boot"]["user"] == ""
    assert by_id["report.document"]["this_document"] and not by_id["bios.cpu"]["this_document"]
    # walk 31: its own run, in the action runs, is this document being written, not "running"
    own = [a for a in doc["nodes"][0]["actions"] if a["step"] == "report.document"]
    assert own and all(a["exit"] == "writing this document" for a in own)
    report_stage = next(st for st in doc["nodes"][0]["stages"] if st["id"] == "report")
    assert report_stage["status"] != "running"
    md, html = rpt.render(doc, "md"), rpt.render(doc, "html")
    assert "| – not applicable |" in md and "✎ this document" in md
    assert "</span> not applicable</td>" in html and "</span> this document</td>" in html
    jsonschema.validate(json.loads(rpt.render(doc, "json")), json.loads(
        (Path(__file__).resolve().parent.parent / "assets" / "schema" / "report.schema.json").read_text()))
    # the report step's run sets the variable for the report it writes
    from wizard.actions import ActionContext
    from steps.report import resolve_report

    r = resolve_report(ActionContext({}, {}, str(tmp_path / "b" / "backups"), state_dir=str(tmp_path / "s")))
    assert r.env[rpt.WRITING_STEP_ENV] == "report.document"


def test_two_summaries_written_in_one_second_compare_with_the_later_one(tmp_path):
    """Summaries are named by the second and a hash: the one written last is the previous report, even when its hash
    sorts first (the plan-edit test once compared with the older of two reports of one second)."""
    base = {"generated_at": "2026-12-06T05:00:00+0000", "nodes": [], "verdict": "pass"}
    first = rpt.store_summary(tmp_path, dict(base, content_hash="sha256:ffff0000"))
    second = rpt.store_summary(tmp_path, dict(base, content_hash="sha256:00000000", verdict="fail"))
    os.utime(first, ns=(1, 1_000_000_000))
    os.utime(second, ns=(2, 2_000_000_000))
    assert second.name < first.name
    assert rpt.previous_summary(tmp_path) == json.loads(second.read_text())
    os.utime(first, ns=(3, 3_000_000_000))
    assert rpt.previous_summary(tmp_path) == json.loads(first.read_text())


def test_two_reports_of_one_build_state_have_one_content_hash(state_dir, tmp_path):
    """Walk 34 #12: the inventory's source carried the clock ("this machine when the report was made (05:06:01)"), so
    two reports of an unchanged build, seconds apart, had two content hashes; the hash is over content only."""
    assert run_cli("--state", str(state_dir), "plan", "gpu_count=1").returncode == 0
    hashes = []
    for i in range(2):
        out = tmp_path / f"{i}.json"
        assert run_cli("--state", str(state_dir), "report", "--format", "json", "-o", str(out)).returncode in (0, 1, 2)
        doc = json.loads(out.read_text())
        assert doc["nodes"][0]["inventory_source"] == "this machine when the report was made"
        hashes.append(doc["content_hash"])
        time.sleep(1.1)
    assert hashes[0] == hashes[1]


def test_the_markdown_passed_table_lists_a_finding_two_steps_gave_once():
    """Walk 34 #19e: multinode.nodes, judged from one log by two steps' runs, was listed twice in the Markdown table of
    passed findings; the JSON keeps both (each with its step)."""
    a = {"verdict": "pass", "id": "multinode.nodes", "subject": "2 nodes", "message": "all 2 nodes reachable",
         "step": "multinode.consistency"}
    b = dict(a, step="multinode.transport")
    c = dict(a, subject="3 nodes")
    assert rpt.distinct_rows([a, b, c]) == [a, c]
