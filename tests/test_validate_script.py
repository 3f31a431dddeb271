"""The shipped validation script (``assets/scripts/bringup_validate.py``) run for real: this venv's Python and
CPU torch, real ``torchrun`` processes talking gloo over loopback, a real hang named by a monitored barrier,
and an interpreter that has no torch (``python -I -S``: no site-packages).

Each test reads the ``BRINGUP {json}`` event lines the script prints (protocol v1) and checks them against
the protocol and the arithmetic (busbw = algbw * 2(n-1)/n, nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "assets" / "scripts" / "bringup_validate.py"
PY = sys.executable
TORCHRUN = str(Path(sys.executable).parent / "torchrun")
MARKER = "BRINGUP "
MiB = 1024 * 1024
HOST = socket.gethostname()

_DIST_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "BRINGUP_TEST_HANG_RANK", "BRINGUP_TEST_HANG_PHASE")


class Run:
    def __init__(self, proc: subprocess.CompletedProcess, elapsed: float):
        self.rc = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.elapsed = elapsed
        self.events = []
        for line in proc.stdout.splitlines():
            if line.startswith(MARKER):
                self.events.append(json.loads(line[len(MARKER):]))  # every event line must be valid JSON

    def of(self, event, **match):
        return [e for e in self.events if e["event"] == event and all(e.get(k) == v for k, v in match.items())]

    def one(self, event, **match):
        got = self.of(event, **match)
        assert len(got) == 1, (event, match, got, self.stderr[-3000:])
        return got[0]

    def why(self) -> str:
        return "rc=%s\nstdout tail:\n%s\nstderr tail:\n%s" % (self.rc, self.stdout[-3000:], self.stderr[-3000:])


def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _DIST_ENV}
    env.update(extra or {})
    return env


def run_script(*args: str, python: list[str] | None = None, env: dict | None = None, timeout: float = 120) -> Run:
    t0 = time.monotonic()
    proc = subprocess.run([*(python or [PY]), str(SCRIPT), *args], capture_output=True, text=True,
                          env=_env(env), timeout=timeout, cwd=str(ROOT))
    return Run(proc, time.monotonic() - t0)


def torchrun(nproc: int, *args: str, env: dict | None = None, timeout: float = 120) -> Run:
    # --standalone: torchrun binds its own free port and a unique run id, so two runs started at once by parallel
    # test workers never meet in one rendezvous (a port picked here and released could be taken by the other)
    argv = [TORCHRUN, "--standalone", "--nnodes=1", "--nproc_per_node=%d" % nproc, str(SCRIPT), *args]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(env), timeout=timeout, cwd=str(ROOT))
    return Run(proc, time.monotonic() - t0)


def assert_common(run: Run, ranks: set[int]) -> None:
    """Protocol basics: common fields on every event, one start and exactly one end (the last) per rank."""
    assert run.events, run.why()
    for e in run.events:
        assert e["v"] == 1 and isinstance(e["t"], float) and e["node"] == HOST and e["rank"] in ranks, e
    for r in ranks:
        mine = [e for e in run.events if e["rank"] == r]
        assert mine[0]["event"] == "start", mine[0]
        assert [e["event"] for e in mine].count("end") == 1
        assert mine[-1]["event"] == "end", mine[-1]


def torch_version() -> str:
    return metadata.version("torch")


# ------------------------------------------------------------------------------------------------ gpu
def test_gpu_on_cpu_quick_measures_every_subtest():
    run = run_script("gpu", "--device", "cpu", "--quick", "--cpu-mem-mib", "64")
    assert run.rc == 0, run.why()
    assert_common(run, {0})
    start = run.one("start")
    assert start["test"] == "gpu" and start["device"] == "cpu" and start["world_size"] == 1
    assert start["versions"]["torch"] == torch_version() and start["versions"]["cuda"] is None
    assert start["args"]["mem_fraction"] == 0.9 and start["args"]["quick"] is True
    dev = run.one("device")
    assert dev["index"] == 0 and dev["total_memory_bytes"] > 0 and dev["compute_capability"] is None

    gemm = run.one("measure", test="gemm")
    assert gemm["metric"] == "tflops" and gemm["unit"] == "TFLOPS" and gemm["dtype"] == "fp32"
    assert gemm["value"] > 0 and gemm["m"] == gemm["n"] == gemm["k"] > 0
    assert gemm["value"] == _approx(2 * gemm["m"] ** 3 * gemm["iters"] / gemm["seconds"] / 1e12)

    cp = run.one("measure", test="memcpy")
    assert cp["metric"] == "d2d_gb_s" and cp["unit"] == "GB/s" and cp["value"] > 0
    assert cp["value"] == _approx(2 * cp["bytes"] * cp["iters"] / cp["seconds"] / 1e9)  # read + write

    for direction in ("h2d", "d2h"):
        assert not run.of("measure", test=direction)
        res = run.one("result", test=direction)
        assert res["ok"] is True and res["summary"]["skipped"] == "no CUDA device"

    mem = run.one("measure", test="memory")
    assert mem["metric"] == "pattern_errors" and mem["value"] == 0 and mem["unit"] == "count"
    assert mem["bytes_tested"] == 64 * MiB and mem["patterns"] == 3
    assert 0 < mem["fraction"] <= 0.9

    tr = run.one("measure", test="train")
    assert tr["loss_last"] < tr["loss_first"] * 0.5, tr  # a learnable task: the loss must fall
    assert tr["value"] == _approx(tr["loss_last"] / tr["loss_first"]) and tr["unit"] == "ratio"
    assert tr["steps"] == 60 and tr["max_memory_allocated_bytes"] is None and tr["tokens_per_s"] > 0

    for test in ("gemm", "memcpy", "h2d", "d2h", "memory", "train"):
        assert run.one("result", test=test)["ok"] is True
    counters = run.of("counters")
    assert [c["when"] for c in counters] == ["before", "after"]
    for c in counters:
        assert c["available"] is False and c["reason"] and c["device"] is None and c["xid_count"] is None
    assert not run.of("error") and not run.of("sample")  # NVML samples are for CUDA devices only
    assert run.one("end")["rc"] == 0


def test_gpu_subtest_failure_is_reported_and_the_others_still_run():
    """A GEMM far beyond host memory: an `oom` error and a failed result, the rest runs, exit 2."""
    run = run_script("gpu", "--device", "cpu", "--quick", "--gemm-size", "400000", "--cpu-mem-mib", "16",
                     "--steps", "5")
    assert run.rc == 2, run.why()
    err = run.one("error")
    assert err["test"] == "gemm" and err["kind"] == "oom" and err["remedy"] and "allocate" in err["message"]
    assert run.one("result", test="gemm")["ok"] is False
    assert run.one("result", test="memory")["ok"] is True and run.one("measure", test="train")
    assert run.one("end")["rc"] == 2


def _approx(x, rel=1e-9):
    return pytest.approx(x, rel=rel)


# ------------------------------------------------------------------------------------------------ node
def _check_node(run: Run, n: int, max_bytes: int) -> None:
    assert run.rc == 0, run.why()
    assert_common(run, set(range(n)))
    starts = run.of("start")
    assert sorted(s["rank"] for s in starts) == list(range(n))
    for s in starts:
        assert s["world_size"] == n and s["versions"]["backend"] == "gloo" and s["versions"]["torch"]
    sanity = run.of("measure", test="sanity")
    assert sorted(m["rank"] for m in sanity) == list(range(n))
    assert all(m["value"] == 1.0 and m["allreduce_sum"] == n and m["world_size"] == n for m in sanity)
    assert run.one("result", test="sanity")["ok"] is True

    ar = run.of("measure", test="allreduce")
    assert all(m["rank"] == 0 for m in ar)  # collective measures come from rank 0 only
    sizes = [m["size_bytes"] for m in ar]
    expected_sizes = []
    b = 8
    while b <= max_bytes:
        expected_sizes.append(b)
        b *= 2
    assert sizes == expected_sizes
    factor = 2 * (n - 1) / n
    for m in ar:
        assert m["wrong"] == 0 and m["world_size"] == n and m["dtype"] == "float32"
        assert m["count"] * 4 == m["size_bytes"]
        assert m["algbw_gb_s"] == _approx(m["size_bytes"] / (m["time_us"] / 1e6) / 1e9)
        assert m["busbw_gb_s"] == _approx(m["algbw_gb_s"] * factor) and m["value"] == m["busbw_gb_s"]
        assert m["busbw_gb_s"] > 0
    prog = run.of("progress", test="allreduce")
    assert [p["done"] for p in prog] == list(range(1, len(sizes) + 1)) and prog[-1]["total"] == len(sizes)
    res = run.one("result", test="allreduce")
    assert res["ok"] is True and res["summary"]["wrong"] == 0

    p2p = run.of("measure", test="p2p")
    pairs = sorted((m["src"], m["dst"]) for m in p2p)
    assert pairs == [(s, d) for s in range(n) for d in range(n) if s != d]
    assert all(m["wrong"] == 0 and m["value"] > 0 and m["unit"] == "GB/s" for m in p2p)
    assert run.one("result", test="p2p")["ok"] is True
    assert not run.of("error")
    assert sorted(e["rc"] for e in run.of("end")) == [0] * n


def test_node_two_ranks_under_torchrun():
    run = torchrun(2, "node", "--device", "cpu", "--quick", "--timeout", "10")
    _check_node(run, 2, 1 * MiB)


def test_node_three_ranks_busbw_arithmetic():
    run = torchrun(3, "node", "--device", "cpu", "--quick", "--timeout", "10", "--max-bytes", "64K",
                   "--p2p-bytes", "64K")
    _check_node(run, 3, 64 * 1024)
    # n = 3: busbw = algbw * 4/3; the correctness check expects 1+2+3 = 6 on every element
    for m in run.of("measure", test="allreduce"):
        assert m["busbw_gb_s"] == _approx(m["algbw_gb_s"] * 4 / 3)


def test_hanging_rank_is_named_and_the_run_ends():
    run = torchrun(2, "node", "--device", "cpu", "--quick", "--timeout", "8",
                   env={"BRINGUP_TEST_HANG_RANK": "1", "BRINGUP_TEST_HANG_PHASE": "allreduce"}, timeout=90)
    assert run.rc != 0
    assert run.elapsed < 60, run.elapsed  # rank 0 names the hang after --timeout 8 s; torchrun stops the rest
    errs = run.of("error", kind="collective_timeout", rank=0)
    assert len(errs) == 1, run.why()
    err = errs[0]
    assert err["ranks"] == [1] and err["nodes"] == [HOST] and err["phase"] == "allreduce"
    assert "rank(s) 1" in err["message"] and err["remedy"]
    assert run.one("end", rank=0)["rc"] == 124
    assert run.one("end", rank=1)["rc"] == 143  # torchrun stopped the hung rank with SIGTERM: it still ends
    assert run.one("result", test="sanity")["ok"] is True  # the phase before the hang completed
    assert not run.of("measure", test="allreduce")


def test_watchdog_ends_a_rank_that_makes_no_progress():
    """A world of one (no torchrun) hangs at its first phase: no peer can name it, the watchdog does."""
    run = run_script("node", "--device", "cpu", "--quick", "--timeout", "1",
                     env={"BRINGUP_TEST_HANG_RANK": "0", "BRINGUP_TEST_HANG_PHASE": "sanity"}, timeout=60)
    assert run.rc == 124, run.why()
    err = run.one("error")
    assert err["kind"] == "collective_timeout" and err["phase"] == "sanity" and err["ranks"] == [0]
    assert "watchdog" in err["message"] and err["nodes"] == [HOST]
    assert run.one("end")["rc"] == 124 and run.elapsed < 30


# ------------------------------------------------------------------------------------------------ torch missing
def test_torch_missing_gives_a_remedy_and_exit_3():
    no_site = [PY, "-I", "-S"]
    probe = subprocess.run([*no_site, "-c", "import torch"], capture_output=True, text=True)
    assert probe.returncode != 0, "precondition: `python -I -S` must not see the venv's torch"
    for cmd in ("gpu", "node", "soak"):
        run = run_script(cmd, "--device", "cpu", python=no_site)
        assert run.rc == 3, run.why()
        err = run.one("error")
        assert err["kind"] == "torch_missing" and err["test"] == cmd
        assert "torch_python=/path/to/python" in err["remedy"]
        assert run.one("end")["rc"] == 3


def test_bad_arguments_exit_3_with_an_event():
    run = run_script("gpu", "--mem-fraction", "2", python=[PY, "-I", "-S"])
    assert run.rc == 3 and run.one("error")["kind"] == "exception" and run.one("end")["rc"] == 3
    assert "--mem-fraction" in run.one("error")["message"]


# ------------------------------------------------------------------------------------------------ soak
def test_soak_under_torchrun_alternates_gemm_and_allreduce():
    run = torchrun(2, "soak", "--device", "cpu", "--quick", "--minutes", "0.1", "--timeout", "20")
    assert run.rc == 0, run.why()
    assert_common(run, {0, 1})
    for rank in (0, 1):
        gemm = run.of("measure", test="soak_gemm", rank=rank)
        assert len(gemm) >= 2 and [m["interval"] for m in gemm] == list(range(1, len(gemm) + 1))
        assert all(m["value"] > 0 for m in gemm)
        assert [m["elapsed_s"] for m in gemm] == sorted(m["elapsed_s"] for m in gemm)
        res = run.one("result", test="soak", rank=rank)["summary"]
        assert res["intervals"] == len(gemm) and res["seconds"] >= 6.0  # 0.1 minute honoured
        g = res["gemm"][0]
        assert g["first_tflops"] == gemm[0]["value"] and g["last_tflops"] == gemm[-1]["value"]
        assert g["change_pct"] == _approx((g["last_tflops"] - g["first_tflops"]) / g["first_tflops"] * 100)
    ar = run.of("measure", test="soak_allreduce")
    assert ar and all(m["rank"] == 0 and m["busbw_gb_s"] > 0 and m["world_size"] == 2 for m in ar)
    assert [m["interval"] for m in ar] == list(range(1, len(ar) + 1))
    summ = run.one("result", test="soak", rank=0)["summary"]["allreduce"]
    assert summ["first_busbw_gb_s"] == ar[0]["value"] and summ["last_busbw_gb_s"] == ar[-1]["value"]
    assert [c["when"] for c in run.of("counters", rank=0)] == ["before", "after"]


def test_soak_single_process_gemm_only():
    # 3.6 s: two GEMM intervals even on a loaded 2-core machine (at 1.2 s one interval took 1.28 s under a full CI run)
    run = run_script("soak", "--device", "cpu", "--quick", "--minutes", "0.06")
    assert run.rc == 0, run.why()
    assert_common(run, {0})
    gemm = run.of("measure", test="soak_gemm")
    assert len(gemm) >= 2 and all(m["value"] > 0 and m["unit"] == "TFLOPS" for m in gemm)
    assert not run.of("measure", test="soak_allreduce")
    summary = run.one("result", test="soak")["summary"]
    assert "allreduce" not in summary and summary["gemm"][0]["change_pct"] is not None


# ------------------------------------------------------------------------------------------------ facts
def test_facts_with_torch():
    run = run_script("facts")
    assert run.rc == 0, run.why()
    assert_common(run, {0})
    f = run.one("facts")
    assert f["hostname"] == HOST and f["kernel"] == platform.release()
    assert f["python"] == platform.python_version() and f["torch"] == torch_version()
    assert isinstance(f["gpu_count"], int) and f["gpu_count"] >= 0
    assert len(f["gpu_models"]) == len(f["gpu_uuids"])
    assert f["os"]  # PRETTY_NAME from /etc/os-release
    assert run.one("end")["rc"] == 0


def test_facts_without_torch_is_a_fact_not_an_error():
    run = run_script("facts", python=[PY, "-I", "-S"])
    assert run.rc == 0, run.why()
    f = run.one("facts")
    assert f["torch"] is None and "torch" in f["torch_error"] and f["torch_cuda"] is None
    assert f["hostname"] == HOST and f["kernel"] == platform.release()
    assert not run.of("error") and run.one("end")["rc"] == 0


# ------------------------------------------------------------------------------------------------ counters
def _script_module():
    """The script as a module (its top level imports only the stdlib; torch is imported by main())."""
    spec = importlib.util.spec_from_file_location("bringup_validate_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_xid_lines_are_counted_per_gpu():
    m = _script_module()
    log = "\n".join([
        "[  100.100000] NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
        "[  101.200000] NVRM: Xid (PCI:0000:2a:00): 48, pid=99, name=python3, An uncorrectable double bit error",
        "[  102.000000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress",
        "[  103.000000] NVRM: Xid (PCI:0000:17:00): 13, pid=1234, name=python3, Graphics Exception",
    ])
    assert len(m.xid_lines(log, "0000:17:00.0")) == 2
    assert m.xid_lines(log, "0000:2A:00.0") == [log.splitlines()[1]]  # sysfs and the log differ in case
    assert len(m.xid_lines(log, None)) == 3 and m.xid_lines(log, "0000:99:00.0") == []


def test_aer_totals_from_sysfs_files(tmp_path):
    m = _script_module()
    dev = tmp_path / "0000:17:00.0"
    dev.mkdir()
    (dev / "aer_dev_correctable").write_text("RxErr 0\nBadTLP 3\nBadDLLP 1\nRollover 0\nTimeout 0\n"
                                             "NonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 4\n")
    (dev / "aer_dev_nonfatal").write_text("Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 1\n"
                                          "TOTAL_ERR_NONFATAL 1\n")
    (dev / "aer_dev_fatal").write_text("Undefined 0\nDLP 0\nSDES 0\nTLP 0\nTOTAL_ERR_FATAL 0\n")
    assert m.read_aer("0000:17:00.0", root=str(tmp_path)) == ({"correctable": 4, "nonfatal": 1, "fatal": 0}, None)
    (dev / "aer_dev_fatal").write_text("garbage\n")
    got, why = m.read_aer("0000:17:00.0", root=str(tmp_path))
    assert got is None and "TOTAL_ERR_FATAL" in why
    got, why = m.read_aer("0000:18:00.0", root=str(tmp_path))
    assert got is None and "not readable" in why


def test_gpu_counters_without_nvml_say_why(capsys):
    """The CUDA counters path on a machine where NVML cannot find this GPU: available false with the reason,
    the kernel log still read (or the reason it could not be)."""
    m = _script_module()
    nvml = m.Nvml()
    m.emit_counters("before", "cuda", [{"index": 0, "pci_bus_id": "ffff:ff:1f.7", "uuid": None}], nvml)
    nvml.shutdown()
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(MARKER)]
    assert len(lines) == 1
    ev = json.loads(lines[0][len(MARKER):])
    assert ev["event"] == "counters" and ev["when"] == "before" and ev["device"] == 0
    assert ev["available"] is False and ev["reason"]
    assert ev["aer"] is None and "not readable" in ev["aer_reason"]
    assert (isinstance(ev["xid_count"], int) and ev["xid_count"] == 0) or (ev["xid_count"] is None and ev["xid_reason"])


def test_pcie_link_from_sysfs_files():
    """The GPU's link read the way the device event reports it (sysfs strings as the kernel prints them)."""
    m = _script_module()
    tree = Path(__file__).parent / "data" / "synthetic" / "synthetic_sysfs-pci-h200x8-nvswitch" / "sys" / "bus" / "pci" / "devices"
    link = m.pcie_link("0000:05:00.0", str(tree))
    speed = (tree / "0000:05:00.0" / "current_link_speed").read_text().split()[0]
    assert link["current_gen"] == {"16.0": 4, "32.0": 5, "8.0": 3}[speed]
    assert link["max_width"] == int((tree / "0000:05:00.0" / "max_link_width").read_text())
    assert m.pcie_link(None) is None and m.pcie_link("0000:ff:00.0", str(tree)) == {
        "current_gen": None, "current_width": None, "max_gen": None, "max_width": None}
    assert m.nvlink_state(None) is None


# ------------------------------------------------------------------------------------------------ NUMA pinning


def test_cpulist_and_the_gpus_numa_node(tmp_path):
    """The GPU's NUMA node from its sysfs numa_node and the node's CPUs from node<N>/cpulist (files as the
    kernel writes them; -1 = the platform reports no node)."""
    m = _script_module()
    assert m.parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11} and m.parse_cpulist("5") == {5}
    with pytest.raises(ValueError):
        m.parse_cpulist("a-b")
    pci = Path(__file__).parent / "data" / "synthetic" / "synthetic_sysfs-pci-h200x8-nvswitch" / "sys" / "bus" / "pci" / "devices"
    node = int((pci / "0000:05:00.0" / "numa_node").read_text())
    nodes = tmp_path / "node"
    (nodes / f"node{node}").mkdir(parents=True)
    (nodes / f"node{node}" / "cpulist").write_text("0-1,4\n")
    assert m.gpu_numa_cpus("0000:05:00.0", str(pci), str(nodes)) == (node, {0, 1, 4}, None)
    fake = tmp_path / "pci" / "0000:17:00.0"
    fake.mkdir(parents=True)
    (fake / "numa_node").write_text("-1\n")
    got = m.gpu_numa_cpus("0000:17:00.0", str(tmp_path / "pci"), str(nodes))
    assert got[:2] == (None, None) and "numa_node -1" in got[2]
    (fake / "numa_node").write_text("3\n")  # a node without a cpulist file
    got = m.gpu_numa_cpus("0000:17:00.0", str(tmp_path / "pci"), str(nodes))
    assert got[:2] == (3, None) and "node3 cpulist" in got[2]
    assert m.gpu_numa_cpus(None)[2] == "PCI address unknown"


def test_numa_pin_sets_and_restores_the_affinity(tmp_path, monkeypatch):
    """NumaPin really calls sched_setaffinity on this process (a one-CPU node made of a CPU we may use) and puts
    the old mask back after."""
    m = _script_module()
    before = os.sched_getaffinity(0)
    cpu = min(before)
    pci, nodes = tmp_path / "pci", tmp_path / "node"
    (pci / "0000:17:00.0").mkdir(parents=True)
    (pci / "0000:17:00.0" / "numa_node").write_text("0\n")
    (nodes / "node0").mkdir(parents=True)
    (nodes / "node0" / "cpulist").write_text(f"{cpu}\n")
    real = m.gpu_numa_cpus
    monkeypatch.setattr(m, "gpu_numa_cpus", lambda bdf: real(bdf, str(pci), str(nodes)))
    with m.NumaPin("0000:17:00.0") as pin:
        assert pin.pinned is True and pin.numa_node == 0 and pin.reason is None
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == before
    with m.NumaPin("0000:99:00.0") as pin:  # no sysfs entry: not pinned, says why, affinity untouched
        assert pin.pinned is False and pin.numa_node is None and "numa_node not readable" in pin.reason
        assert os.sched_getaffinity(0) == before


def test_xid_codes_of_lines():
    m = _script_module()
    lines = ["NVRM: Xid (PCI:0000:17:00): 79, pid=1234, GPU has fallen off the bus.",
             "NVRM: Xid (PCI:0000:17:00): 13, pid=1, Graphics Exception", "NVRM: Xid (PCI:0000:17:00): "]
    assert m.xid_codes(lines) == [79, 13, None]


def test_gpu_progress_counts_done_and_numbers_the_starting_subtest():
    """Each sub-test's progress event: done = sub-tests finished, index = its 1-based number."""
    run = run_script("gpu", "--device", "cpu", "--quick", "--cpu-mem-mib", "16")
    assert run.rc == 0, run.why()
    prog = run.of("progress", test="gpu")
    assert [p["done"] for p in prog] == list(range(6)) and [p["index"] for p in prog] == list(range(1, 7))
    assert {p["total"] for p in prog} == {6} and prog[0]["phase"] == "gemm on cpu"
