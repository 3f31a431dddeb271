"""The acceptance report (wizard/report.py, `bringup report`): one model from a build or from capture bundles, rendered
as HTML, Markdown and JSON; checked in a real headless Chromium (DOM, screenshot, PDF).

Real cases only: a bundle assembled from real captured outputs in tests/data (an 8-GPU topology, nvidia-smi -q -x, a
kernel log with an Xid, lscpu, dmidecode -t 17, lspci; see tests/data/PROVENANCE.md), the development VM's real
bundle, and this machine (`plan`, `check`, a real CPU validation run, then `report`)."""

from __future__ import annotations

import asyncio
import fcntl
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
from wizard import report as rpt
from wizard.capture import capture
from wizard.engine import Build
from wizard.hosts import CommandResult, LocalHost
from wizard.model import Finding, Verdict

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
    assert [r["node"] for r in doc["matrix"]["rows"]] == ["vm", "vm", "case-node"]
    assert rows["case-node"]["odd_node_out"] and "bios" in rows["case-node"]["odd"]
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
    assert "<script>" not in md.split("```text", 1)[0] and "&lt;script&gt;" in md
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


def test_exit_words():
    from wizard.store import ActionState

    assert rpt.exit_words(ActionState.CANCELLED, -15) == "cancelled (SIGTERM)"
    assert rpt.exit_words(ActionState.FAILED, -9) == "killed by SIGKILL"
    assert rpt.exit_words(ActionState.INTERRUPTED, None).startswith("interrupted")
    assert rpt.exit_words(ActionState.FAILED, 1) == "failed (exit status 1)"


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
    b.record_findings("os.memory", [Finding("os.memory", Verdict.WARN, "64 GiB of RAM", source="s"),
                                    Finding("os.swap", Verdict.FAIL, "swap is on", source="s")], frozen_clock())
    b.close()
    second = run_cli("--state", str(state_dir), "report", "-o", str(tmp_path / "2.md"))
    assert "since the previous report: 1 new, 1 resolved, 1 changed" in second.stdout, second.stdout
    md = (tmp_path / "2.md").read_text()
    assert "| resolved | `os.release` | was fail, now pass: unsupported release |" in md
    assert "| changed | `os.memory` | warn → warn: 64 GiB of RAM |" in md
    assert "| new | `os.swap` | fail: swap is on |" in md
    summaries = sorted((state_dir / "builds").glob("*/reports/*.json"))
    assert len(summaries) == 2


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
    b = Build.open(state_dir, steps.STAGES, {"boot_id": "b"})
    assert b.status("report.document").value == "passed"
    b.close()


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
    html, js = d / "r.html", d / "r.json"
    for out in (html, js):
        p = run_cli("--state", st, "report", "-o", str(out))
        assert p.returncode == 0, p.stderr
    return {"dir": d, "html": html, "json": json.loads(js.read_text())}


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


CHROMIUM_MANUAL = "Debian's chromium package is needed for the report's browser tests: apt-get install chromium"


@pytest.fixture(scope="module")
def chromium() -> str:
    """The chromium binary; installed with apt-get (tests/sshd.apt_install) when missing, one worker at a time.
    Skipped with the reason only where it cannot be installed (not root, no apt-get)."""
    from tests.sshd import apt_install

    class Unavailable(Exception):
        pass

    found = shutil.which("chromium")
    if found:
        return found
    with open(Path(tempfile.gettempdir()) / "bringup-tests-chromium-install.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shutil.which("chromium"):
            try:
                apt_install(("chromium",), CHROMIUM_MANUAL, Unavailable, "chromium")
            except Unavailable as exc:
                if os.geteuid() != 0 or shutil.which("apt-get") is None:
                    pytest.skip(str(exc))
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
