"""Prometheus metrics of a check (wizard/metrics.py, `bringup check --prometheus FILE`).

Real runs only: `bringup check --snapshot` of the development VM's real capture bundle (tests/data/bundles), the file
parsed back with prometheus_client's own parser; validation figures from real validation-script logs (a CPU run made
this session, tests/data/validate/node-cpu-2ranks.log, and one `synthetic_gpu_log` edit of the real CPU log for the
GPU path) stored in a build by a real action run; and a real prometheus-node-exporter (the Debian package, installed
as root when missing) scraping the file through its textfile collector.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import steps
from tests.conftest import DATA, DEVVM_BUNDLE, ROOT, bringup_cmd, env_for_cli, frozen_clock
from tests.validate_fixtures import real_log, synthetic_gpu_log
from wizard import __version__
from wizard.engine import Build
from wizard.metrics import VERDICT_CODE, check_registry, validation_figures, write_check_metrics
from wizard.model import Finding, Verdict, worst

NODE_LOG = DATA / "validate" / "node-cpu-2ranks.log"
EXPORTER = "prometheus-node-exporter"
INSTALL_LOCK = Path(tempfile.gettempdir()) / "bringup-tests-node-exporter-install.lock"


def run_cli(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, env=env_for_cli(), cwd=ROOT,
                          timeout=timeout)


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Metric family name -> [(labels, value)], parsed by prometheus_client's text-format parser."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def one(got: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    hits = [v for ls, v in got.get(name, []) if all(ls.get(k) == x for k, x in labels.items())]
    assert len(hits) == 1, f"{name}{labels}: {hits} in {sorted(got)}"
    return hits[0]


def findings_of(doc: dict[str, Any]) -> list[Finding]:
    """The ``check --json`` document's findings as :class:`Finding` (id, verdict, subject, message, step)."""
    return [Finding(f["id"], Verdict(f["verdict"]), f["message"], f["subject"], step=f["step"]) for f in doc["findings"]]


@pytest.fixture(scope="module")
def devvm_check(tmp_path_factory) -> dict[str, Any]:
    """`check --snapshot devvm.tar.gz` three ways: plain, with --prometheus, and --json (for the findings)."""
    d = tmp_path_factory.mktemp("metrics")
    prom = d / "bringup.prom"
    plain = run_cli("check", "--snapshot", str(DEVVM_BUNDLE))
    before = time.time()
    with_file = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(prom))
    after = time.time()
    as_json = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--json")
    return {"plain": plain, "with_file": with_file, "doc": json.loads(as_json.stdout), "prom": prom,
            "text": prom.read_text(), "before": before, "after": after}


# ------------------------------------------------------------------ a check's metrics, parsed back


def test_snapshot_check_metrics_parse_back(devvm_check):
    doc, got = devvm_check["doc"], samples(devvm_check["text"])
    assert doc["host"]["hostname"] == "vm"
    by_id: dict[tuple[str, str], list[Verdict]] = {}
    for f in doc["findings"]:
        by_id.setdefault((f["id"], f["step"]), []).append(Verdict(f["verdict"]))
    series = {(ls["id"], ls["step"]): v for ls, v in got["bringup_check"]}
    assert series == {k: VERDICT_CODE[worst(vs)] for k, vs in by_id.items()}
    assert {ls["node"] for ls, _ in got["bringup_check"]} == {"vm"}  # the snapshot's host, not this machine's
    assert one(got, "bringup_check", id="health.gpu_pci") == 2  # the bundle's one fail (a VM with no GPU)
    counts = {ls["verdict"]: v for ls, v in got["bringup_findings"]}
    assert counts == {v.value: sum(1 for f in doc["findings"] if f["verdict"] == v.value) for v in Verdict}
    assert sum(counts.values()) == len(doc["findings"]) and counts["fail"] >= 1
    stamp = one(got, "bringup_check_timestamp_seconds", node="vm")
    assert devvm_check["before"] <= stamp <= devvm_check["after"]
    assert 0 < one(got, "bringup_check_duration_seconds", node="vm") <= devvm_check["after"] - devvm_check["before"]
    assert got["bringup_info"] == [({"node": "vm", "version": __version__, "source": "snapshot"}, 1.0)]
    assert not [n for n in got if n.startswith("bringup_validation_")]  # a bundle holds no validation run
    assert "0 pass, 1 warn, 2 fail, 3 unknown, 4 skip" in devvm_check["text"]  # the mapping is in the HELP text
    assert "the worst" in devvm_check["text"]


def test_writing_metrics_changes_neither_the_output_nor_the_exit_status(devvm_check):
    plain, with_file = devvm_check["plain"], devvm_check["with_file"]
    assert plain.returncode == with_file.returncode == 2  # the bundle's fail
    assert with_file.stdout == plain.stdout and "overall: fail" in plain.stdout
    assert with_file.stderr == plain.stderr == ""


def test_several_findings_with_one_id_count_as_the_worst(devvm_check):
    """The real findings plus extra findings under ids the check reported: the series is the worst of each id."""
    real = findings_of(devvm_check["doc"])
    passed = [f for f in real if f.verdict is Verdict.PASS]
    extra = [dataclasses.replace(passed[0], verdict=Verdict.FAIL, subject="GPU 1"),  # pass + fail -> fail
             dataclasses.replace(passed[1], verdict=Verdict.UNKNOWN, subject="GPU 1"),  # pass + unknown -> unknown
             dataclasses.replace(passed[1], verdict=Verdict.SKIP, subject="GPU 2")]  # ... + skip: still unknown
    got = samples(generate_latest(check_registry(real + extra, "n1", finished=1.0, duration_s=0.5)).decode())
    assert one(got, "bringup_check", id=passed[0].id, step=passed[0].step) == VERDICT_CODE[Verdict.FAIL] == 2
    assert one(got, "bringup_check", id=passed[1].id, step=passed[1].step) == VERDICT_CODE[Verdict.UNKNOWN] == 3
    assert len(got["bringup_check"]) == len({(f.id, f.step) for f in real})  # one series per id, never one per finding
    assert one(got, "bringup_findings", verdict="fail") == sum(f.verdict is Verdict.FAIL for f in real) + 1


# ------------------------------------------------------------------ writing: errors, atomic replacement, mode


def test_a_missing_or_unwritable_directory_is_a_clear_error_and_keeps_the_output(devvm_check, tmp_path):
    plain = devvm_check["plain"]
    missing = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(tmp_path / "nowhere" / "b.prom"))
    assert missing.returncode == 3 and missing.stdout == plain.stdout
    assert missing.stderr == (f"bringup: error: cannot write the metrics file {tmp_path / 'nowhere' / 'b.prom'}: its "
                              f"directory {tmp_path / 'nowhere'} does not exist (node-exporter's "
                              f"--collector.textfile.directory; create it first)\n")
    d = tmp_path / "locked"
    d.mkdir()
    old = d / "bringup.prom"
    old.write_text("bringup_info{node=\"old\"} 1\n")
    root = os.geteuid() == 0
    if root:
        subprocess.run(["chattr", "+i", str(d)], check=True)  # immutable: even root gets EPERM
    else:
        d.chmod(0o500)
    try:
        locked = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--json", "--prometheus", str(old))
    finally:
        if root:
            subprocess.run(["chattr", "-i", str(d)], check=True)
        else:
            d.chmod(0o700)
    assert locked.returncode == 3, locked.stderr
    assert json.loads(locked.stdout)["findings"] == devvm_check["doc"]["findings"]  # the check's own output, whole
    assert locked.stderr.startswith(f"bringup: error: cannot write the metrics file {old} (")
    assert f"its directory {d} is not writable by this user" in locked.stderr
    assert "Traceback" not in locked.stderr and len(locked.stderr.splitlines()) == 1
    assert old.read_text() == "bringup_info{node=\"old\"} 1\n" and sorted(p.name for p in d.iterdir()) == ["bringup.prom"]
    empty = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", "")
    assert empty.returncode == 3 and "--prometheus is empty" in empty.stderr


def test_a_rewrite_goes_to_a_temporary_file_renamed_into_place(devvm_check, tmp_path):
    """strace shows the writes: the text goes to FILE.<pid>.<thread> (not *.prom: the collector never reads it),
    then rename(2) replaces FILE; FILE itself is never opened for writing. An open descriptor of the old file
    still reads the old text whole afterwards: it was never truncated or written in place."""
    from tests.faults import ToolUnavailable, ensure_strace

    try:
        strace = ensure_strace()
    except ToolUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    prom = tmp_path / "bringup.prom"
    shutil.copyfile(devvm_check["prom"], prom)
    old_text = prom.read_text()
    trace = tmp_path / "strace.txt"
    with open(prom) as held:
        old_inode = os.fstat(held.fileno()).st_ino
        p = subprocess.run([strace, "-f", "-qq", "-s", "4096", "-o", str(trace), "-e",
                            "trace=open,openat,rename,renameat,renameat2,truncate,ftruncate",
                            *bringup_cmd("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(prom))],
                           capture_output=True, text=True, env=env_for_cli(), cwd=ROOT, timeout=180)
        assert p.returncode == 2, p.stderr
        assert held.read() == old_text  # the old file, intact: the new one is another inode
    assert os.stat(prom).st_ino != old_inode
    lines = trace.read_text().splitlines()
    q = re.escape(str(prom))
    opened = [i for i, ln in enumerate(lines) if re.search(rf'open(at)?\(.*"{q}\.\d+\.\d+", O_WRONLY\|O_CREAT\|O_TRUNC', ln)]
    renamed = [i for i, ln in enumerate(lines) if re.search(rf'rename(at2?)?\(.*"{q}\.\d+\.\d+", .*"{q}"', ln)
               and ln.rstrip().endswith("= 0")]
    assert len(opened) == 1 and len(renamed) == 1 and opened[0] < renamed[0], "\n".join(lines[-30:])
    in_place = [ln for ln in lines if re.search(rf'"{q}", [^)]*O_(WRONLY|RDWR|CREAT|TRUNC)', ln)
                or re.search(rf'truncate\("{q}"', ln)]
    assert in_place == []
    assert not list(tmp_path.glob("bringup.prom.*"))  # no temporary file left behind
    got = samples(prom.read_text())
    assert {ls["id"] for ls, _ in got["bringup_check"]} == {f["id"] for f in devvm_check["doc"]["findings"]}


def test_the_file_is_readable_by_node_exporters_user_under_bringups_private_umask(devvm_check):
    """bringup runs under umask 077 (its state is private), but node-exporter runs as another user (Debian's
    `prometheus`): the metrics file is 0644."""
    assert devvm_check["prom"].stat().st_mode & 0o777 == 0o644


def test_a_name_the_collector_would_not_read_is_written_and_said(tmp_path):
    p = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(tmp_path / "bringup.txt"))
    assert p.returncode == 2
    assert "node-exporter's textfile collector reads only *.prom files: name it bringup.prom" in p.stderr
    assert samples((tmp_path / "bringup.txt").read_text())["bringup_check"]


# ------------------------------------------------------------------ validation figures from the build's store


def _replay(b: Build, step_id: str, log_text: str, tmp_path: Path) -> Any:
    """Run ``step_id``'s action as a command that prints ``log_text`` (a recorded log): judged and stored for real."""
    from wizard.actions import Resolved

    src = tmp_path / f"replay-{step_id}-{time.monotonic_ns()}.log"
    src.write_text(log_text)
    code = f"import sys; sys.stdout.write(open({str(src)!r}).read()); sys.stdout.flush()"
    run = b.start_action(b.step(step_id), Resolved(ops=[{"argv": [sys.executable, "-c", code]}]))
    done = b.wait_action(run, timeout_s=60)
    assert done.results.get("results"), done.results
    return done


def _rows(run: Any, test: str) -> list[dict[str, Any]]:
    return [r for r in run.results["results"] if r["test"] == test]


def test_cpu_validation_figures_in_base_units_labelled_cpu(tmp_path_factory, tmp_path):
    """A real CPU run of each: `bringup check` on this machine exports the build's newest figures, labelled cpu."""
    state = tmp_path / "state"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    gpu_run = _replay(b, "gpu.validate", real_log(tmp_path_factory, "gpu_cpu"), tmp_path)
    node_run = _replay(b, "node.validate", NODE_LOG.read_text(), tmp_path)
    b.close()
    prom = tmp_path / "bringup.prom"
    p = run_cli("--state", str(state), "check", "--prometheus", str(prom))  # the whole check: a part is refused
    assert p.returncode in (0, 1, 2) and "Traceback" not in p.stderr, p.stderr
    got = samples(prom.read_text())
    host = socket.gethostname()
    [gemm_row] = _rows(gpu_run, "gemm")
    assert one(got, "bringup_validation_gemm_flops_per_second", node=host, step="gpu.validate", device="host",
               device_type="cpu") == pytest.approx(gemm_row["value"] * 1e12)
    size, busbw = node_run.results["series"]["points"][-1]
    assert size == max(s for s, _ in node_run.results["series"]["points"])
    assert one(got, "bringup_validation_allreduce_busbw_bytes_per_second", node=host, step="node.validate",
               device_type="cpu") == pytest.approx(busbw * 1e9)
    assert one(got, "bringup_validation_allreduce_message_bytes", step="node.validate") == size
    assert "bringup_validation_h2d_bytes_per_second" not in got  # not measured on the CPU
    assert {ls["device_type"] for n, ss in got.items() if n.startswith("bringup_validation_") for ls, _ in ss} == {"cpu"}
    assert one(got, "bringup_validation_timestamp_seconds", step="gpu.validate") == datetime.fromisoformat(
        gpu_run.started_at).timestamp()
    assert got["bringup_info"][0][0]["source"] == "live" and one(got, "bringup_check", id="os.release") in (0, 1, 3)


def test_the_newest_run_of_a_step_gives_its_figures_and_a_gpu_run_is_labelled_gpu(tmp_path_factory, tmp_path):
    """A CPU run, then a GPU run of the same step (synthetic_gpu_log: the real CPU log's device fields edited to
    one H100's, 700 TFLOPS and 52 GB/s host-to-device): only the newest run's figures, labelled gpu."""
    cpu_log = real_log(tmp_path_factory, "gpu_cpu")
    b = Build.open(tmp_path / "state", steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True,
                   clock=frozen_clock)
    _replay(b, "gpu.validate", cpu_log, tmp_path)
    gpu_run = _replay(b, "gpu.validate", synthetic_gpu_log(cpu_log, tflops=700.0, h2d_gb_s=52.0), tmp_path)
    runs = b.store.action_runs()
    b.close()
    [fig] = validation_figures(runs)
    assert (fig.step, fig.run, fig.device_type) == ("gpu.validate", gpu_run.id, "gpu")
    [gemm_row], [h2d_row] = _rows(gpu_run, "gemm"), _rows(gpu_run, "h2d")
    device = gemm_row["subject"]
    assert device.startswith("GPU 0") and h2d_row["subject"] == device
    reg = check_registry([], "n1", finished=1.0, duration_s=0.5, figures=[fig])
    got = samples(generate_latest(reg).decode())
    labels = {"node": "n1", "step": "gpu.validate", "device": device, "device_type": "gpu"}
    assert one(got, "bringup_validation_gemm_flops_per_second", **labels) == pytest.approx(700e12)
    assert one(got, "bringup_validation_h2d_bytes_per_second", **labels) == pytest.approx(52e9)
    assert "bringup_validation_allreduce_busbw_bytes_per_second" not in got  # no node run stored
    assert len(got["bringup_validation_gemm_flops_per_second"]) == 1  # the older CPU run's figure is gone


SYNTHETIC_SOAK = DATA / "validate" / "synthetic_soak-2x-h100-gpu1-thermal.log"
"""A 5-minute soak of two H100s, exactly as the validation script prints it (synthetic: tests/data/PROVENANCE.md)."""


def test_a_soaks_last_interval_is_exported(tmp_path):
    """node.soak's stored figures: each GPU's GEMM and the all-reduce busbw of the soak's last interval, in base
    units, labelled gpu; written by write_check_metrics from the build's store and parsed back."""
    state = tmp_path / "state"
    b = Build.open(state, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    run = _replay(b, "node.soak", SYNTHETIC_SOAK.read_text(), tmp_path)
    b.close()
    series = {(x["test"], x.get("subject")): x["last"]["value"] for x in run.results["telemetry"]["soak"]}
    prom = tmp_path / "bringup.prom"
    assert write_check_metrics(prom, [], node="n1", state_dir=state) == []
    got = samples(prom.read_text())
    gemm = [(k[1], v) for k, v in series.items() if k[0] == "soak_gemm"]
    assert len(gemm) == 2
    for device, tflops in gemm:
        assert one(got, "bringup_validation_soak_gemm_flops_per_second", node="n1", step="node.soak", device=device,
                   device_type="gpu") == pytest.approx(tflops * 1e12)
    [busbw] = [v for k, v in series.items() if k[0] == "soak_allreduce"]
    assert one(got, "bringup_validation_soak_allreduce_busbw_bytes_per_second", node="n1", step="node.soak",
               device_type="gpu") == pytest.approx(busbw * 1e9)
    assert one(got, "bringup_validation_timestamp_seconds", step="node.soak") > 0


# ------------------------------------------------------------------ outputs that are not regular files, partial checks


def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(devvm_check, tmp_path):
    """A FIFO, a symbolic link (to a regular file) and a directory: each refused, exit 3, the check's output whole,
    and nothing replaced (the rename would have put a regular file in their place; /dev/full was lost that way)."""
    import stat

    fifo = tmp_path / "pipe.prom"
    os.mkfifo(fifo)
    target = tmp_path / "real.prom"
    target.write_text("old\n")
    link = tmp_path / "link.prom"
    link.symlink_to(target)
    folder = tmp_path / "dir.prom"
    folder.mkdir()
    for path, kind in ((fifo, "is a FIFO"), (link, f"is a symbolic link (to {target})"), (folder, "is a directory")):
        p = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(path))
        assert p.returncode == 3 and p.stdout == devvm_check["plain"].stdout, p.stderr
        assert p.stderr.startswith(f"bringup: error: cannot write the metrics file: {path} {kind}")
        assert "left as it is" in p.stderr and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.readlink(link) == str(target)
    assert target.read_text() == "old\n" and folder.is_dir() and not list(folder.iterdir())
    assert sorted(x.name for x in tmp_path.iterdir()) == ["dir.prom", "link.prom", "pipe.prom", "real.prom"]


def test_a_partial_check_is_refused_with_prometheus(tmp_path):
    """--stage or --step with --prometheus: the file would hold no series of the other steps and a zero fail count
    on a node whose full check fails, so an alert would stop firing: refused before anything runs or is written."""
    prom = tmp_path / "st.prom"
    for flag, value in (("--stage", "gpu"), ("--step", "os.release")):
        p = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), flag, value, "--prometheus", str(prom))
        assert p.returncode == 3 and p.stdout == "", p.stdout
        assert p.stderr.startswith(f"bringup: error: --prometheus writes the whole check's metrics; with {flag} ")
        assert "stop alerting" in p.stderr and "Traceback" not in p.stderr
    assert not prom.exists()


# ------------------------------------------------------------------ a real node-exporter scrapes the file


def _install_node_exporter() -> str:
    """The node-exporter binary; installed with apt-get (tests/sshd.ensure_installed) when missing, one process at a
    time. Fails (never skips) with what to install by hand when it cannot be."""
    from tests.sshd import ensure_installed

    class Unavailable(RuntimeError):
        pass

    try:
        ensure_installed(lambda: [] if shutil.which(EXPORTER) else [EXPORTER], (EXPORTER,),
                         lambda _m: (f"{EXPORTER} not found: the textfile end-to-end test scrapes a real node-exporter. "
                                     f"Install it as root (`apt-get install -y --no-install-recommends {EXPORTER}`) or "
                                     "run the tests as root, and the test set-up installs it"),
                         Unavailable, EXPORTER, INSTALL_LOCK)
    except Unavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    return shutil.which(EXPORTER) or EXPORTER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


@pytest.fixture
def node_exporter(tmp_path):
    """A real node-exporter on 127.0.0.1 with only the textfile collector, reading ``tmp_path/textfile``."""
    binary = _install_node_exporter()
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    flags = ("--web.listen-address", "--collector.disable-defaults", "--collector.textfile",
             "--collector.textfile.directory")
    assert all(f in helptext.stdout + helptext.stderr for f in flags), helptext.stdout + helptext.stderr
    textdir = tmp_path / "textfile"
    textdir.mkdir()
    port = _free_port()
    log = open(tmp_path / "node-exporter.log", "w+")
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                             "--collector.textfile", f"--collector.textfile.directory={textdir}"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _scrape(port)
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"{binary} did not serve /metrics on 127.0.0.1:{port} (exit status {proc.poll()}):\n"
                                f"{log.read()[-3000:]}", pytrace=False)
                time.sleep(0.1)
        yield port, textdir
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_a_real_node_exporter_serves_the_checks_metrics(node_exporter, devvm_check):
    port, textdir = node_exporter
    prom = textdir / "bringup.prom"
    p = run_cli("check", "--snapshot", str(DEVVM_BUNDLE), "--prometheus", str(prom))
    assert p.returncode == 2 and p.stdout == devvm_check["plain"].stdout, p.stderr
    scraped = _scrape(port)
    got = samples(scraped)
    assert one(got, "node_textfile_scrape_error") == 0, scraped
    [mtime] = [v for ls, v in got["node_textfile_mtime_seconds"] if ls["file"].endswith("bringup.prom")]
    assert mtime == pytest.approx(prom.stat().st_mtime, abs=1)
    from_file = samples(prom.read_text())
    for name in ("bringup_check", "bringup_findings", "bringup_info", "bringup_check_timestamp_seconds",
                 "bringup_check_duration_seconds"):
        assert sorted((sorted(ls.items()), float(v)) for ls, v in got[name]) == sorted(
            (sorted(ls.items()), float(v)) for ls, v in from_file[name]), name
    assert one(got, "bringup_check", id="health.gpu_pci", node="vm") == 2
    assert one(got, "bringup_findings", verdict="fail", node="vm") == sum(
        f["verdict"] == "fail" for f in devvm_check["doc"]["findings"])
    assert one(got, "bringup_info", version=__version__, node="vm") == 1
    help_line = next(ln for ln in scraped.splitlines() if ln.startswith("# HELP bringup_check "))
    assert "0 pass, 1 warn, 2 fail, 3 unknown, 4 skip" in help_line

    # rewritten again and again while the exporter is scraped: it always reads a whole file, never a part of one
    findings = findings_of(devvm_check["doc"])
    n_series = len(got["bringup_check"])
    stop = threading.Event()
    written = [0]

    def rewrite() -> None:
        while not stop.is_set():
            write_check_metrics(prom, findings[: 1 + written[0] % len(findings)] + findings, node="vm", snapshot=True)
            written[0] += 1

    t = threading.Thread(target=rewrite)
    t.start()
    try:
        for _ in range(40):
            s = samples(_scrape(port))
            assert one(s, "node_textfile_scrape_error") == 0
            assert len(s["bringup_check"]) == n_series and len(s["bringup_findings"]) == 5
            assert one(s, "bringup_info", node="vm") == 1
    finally:
        stop.set()
        t.join(timeout=30)
    assert written[0] > 10, written  # the scrapes really raced the rewrites
    assert not [x for x in textdir.iterdir() if x.name != "bringup.prom"]  # no temporary file left
