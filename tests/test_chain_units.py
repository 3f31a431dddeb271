"""Unit tests of the chain area's parsers and rules, on real outputs (tests/data/cases, public)
and on the synthetic files PROVENANCE.md lists (each says why it had to be built)."""

from __future__ import annotations

import re

import pytest

from wizard import probes
from wizard import registry
from wizard.rules import dcgm, driver_chain, nccl
from wizard.rules import host as hosttools
from wizard.explain import explain_text
from wizard.registry import KINDS
from wizard.model import Verdict
from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.hosttools import parse_free, parse_lscpu, parse_numactl, parse_swapon, size_bytes
from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests
from wizard.probes import ProbeOutput

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text

NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Sat Aug 19 01:15:15 UTC 2023\n"


def _v(findings, fid=None):
    return [f.verdict for f in findings if fid is None or f.id == fid]


# ------------------------------------------------------------------ registry


def test_kinds_and_probes_registered() -> None:
    kinds = KINDS
    for k in ("nvcc-version", "torch-cuda", "nccl-tests", "nccl-debug", "dcgmi-diag", "dcgmi-diag-json", "free",
              "swapon", "lscpu", "numactl-hardware"):
        assert k in kinds
    assert registry.PROBES["nvcc_version"].name == "nvcc_version"
    for name in ("nvcc_version", "torch_cuda", "lscpu", "free_b"):
        assert name in registry.PROBES


# ------------------------------------------------------------------ CUDA chain rules


def test_driver_table_lookups() -> None:
    assert driver_chain.min_driver("12.4")[0] == "550.54.14"
    assert driver_chain.min_driver("10.0")[0] == "410.48"
    assert driver_chain.family_floor("12.8") == "525"
    assert driver_chain.family_floor("11.8") == "450.80.02"
    assert driver_chain.family_floor("10.0") == ""
    assert driver_chain.driver_max_cuda("550.90.07") == "12.4"
    assert driver_chain.driver_max_cuda("384.81") == "9.0"


@pytest.mark.parametrize("mm,driver,verdict", [
    ("12.4", "550.90.07", Verdict.PASS),
    ("12.8", "535.104.05", Verdict.WARN),   # minor-version compatibility
    ("12.4", "520.61.05", Verdict.FAIL),    # below the 12.x family floor
    ("10.0", "396.26", Verdict.FAIL),       # before CUDA 11: no minor-version compatibility
    ("13.0", "580.65.06", Verdict.PASS),
    ("14.1", "610.10", Verdict.UNKNOWN),    # not in the table
])
def test_judge_chain(mm: str, driver: str, verdict: Verdict) -> None:
    res = driver_chain.judge_chain(mm, driver)
    assert res is not None and res[0] is verdict


def test_judge_chain_with_driver_cuda_only() -> None:
    assert driver_chain.judge_chain("12.1", driver_cuda="12.4")[0] is Verdict.PASS
    assert driver_chain.judge_chain("12.8", driver_cuda="12.4")[0] is Verdict.WARN
    assert driver_chain.judge_chain("12.1", driver_cuda="11.4")[0] is Verdict.FAIL
    assert driver_chain.judge_chain("12.1") is None


def test_nvcc_parse_real_outputs() -> None:
    n = parse_nvcc_version(text(CASES / "nvcc-version__cuda-12.4-h100-node.txt"))
    assert (n.release, n.build) == ("12.4", "12.4.131")
    n = parse_nvcc_version(text(PUBLIC / "nvcc-version__cuda-13.0-dev-vm-local.txt"))
    assert n.release == "13.0"


def _out(name: str, source: str, txt: str = "", rc: int | None = 0, stderr: str = "", error: str = "") -> ProbeOutput:
    return ProbeOutput(name=name, source=source, text=txt, rc=rc, stderr=stderr, error=error)


def test_cuda_toolkit_check_never_compares_nvcc_with_smi() -> None:
    nv = _out("nvcc_version", "$ nvcc --version", text(CASES / "nvcc-version__cuda-12.4-h100-node.txt"))
    outs = {"nvcc_version": nv, "nvidia_driver_version": _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                                              NVRM.format(v="560.35.03"), rc=None)}
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.PASS]  # nvcc 12.4 on a 12.6 driver is fine
    assert "need not match" in f[0].message
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                         NVRM.format(v="535.104.05"), rc=None)
    assert _v(driver_chain.cuda_toolkit(outs, {})) == [Verdict.WARN]
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                         NVRM.format(v="515.65.01"), rc=None)
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.FAIL] and f[0].remedy


def test_cuda_toolkit_check_nvcc_missing_is_skip() -> None:
    outs = {"nvcc_version": _out("nvcc_version", "$ nvcc --version", rc=127, error="command not found: nvcc")}
    f = driver_chain.cuda_toolkit(outs, {})
    assert _v(f) == [Verdict.SKIP]
    assert driver_chain.cuda_toolkit({}, {})[0].verdict is Verdict.UNKNOWN


def test_torch_probe_without_torch_is_skip_not_crash() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", "", rc=1,
             stderr="Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\n"
                    "ModuleNotFoundError: No module named 'torch'\n")
    f = driver_chain.torch_cuda({"torch_cuda": o}, {})
    assert _v(f) == [Verdict.SKIP] and "no torch" in f[0].message


@pytest.mark.parametrize("driver,verdict", [("560.35.03", Verdict.PASS), ("535.104.05", Verdict.WARN),
                                            ("470.82.01", Verdict.WARN)])
def test_torch_probe_with_driver(driver: str, verdict: Verdict) -> None:
    o = _out("torch_cuda", "$ python3 -c ...", "2.5.1+cu124\n12.4\nTrue\n")
    outs = {"torch_cuda": o, "nvidia_driver_version": _out("nvidia_driver_version", "/proc/driver/nvidia/version",
                                                           NVRM.format(v=driver), rc=None)}
    f = driver_chain.torch_cuda(outs, {})
    assert _v(f, "driver.torch_cuda") == [verdict]
    if driver.startswith("470"):
        assert "forward-compatibility" in f[0].message


def test_torch_probe_is_available_false_with_old_driver_fails() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", "2.7.0+cu128\n12.8\nFalse\n",
             stderr="UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."
                    " Please update your GPU driver\n")
    f = driver_chain.torch_cuda({"torch_cuda": o}, {})
    assert _v(f) == [Verdict.FAIL]
    assert "11.4" in f[0].message and "570.26" in f[0].message
    assert "torch build" in f[0].remedy


def test_torch_probe_timeout_is_unknown() -> None:
    o = _out("torch_cuda", "$ python3 -c ...", rc=124, error="timed out after 180 s")
    assert _v(driver_chain.torch_cuda({"torch_cuda": o}, {})) == [Verdict.UNKNOWN]


def test_torch_repl_transcript_parse() -> None:
    t = parse_torch_cuda(text(CASES / "torch-cuda__torch12-cu100-vs-cuda90-is-available-false.txt"))
    assert (t.torch_version, t.cuda, t.available, t.toolkit) == ("1.2.0", "10.0.130", False, "9.0.176")


def test_ecc_error_is_hardware_not_version() -> None:
    e = explain_text(text(CASES / "torch-cuda__uncorrectable-ecc-error-encountered.txt"))
    assert [f.id for f in e.findings] == ["health.ecc"]
    assert "not a driver/CUDA version problem" in e.findings[0].message


def test_cpu_only_torch_fails() -> None:
    e = explain_text(">>> import torch\n>>> print(torch.__version__)\n2.3.0+cpu\n>>> print(torch.version.cuda)\nNone\n"
                     ">>> torch.cuda.is_available()\nFalse\n")
    assert e.kind == "torch-cuda" and e.verdict is Verdict.FAIL and "CPU-only" in e.findings[0].message


# ------------------------------------------------------------------ nccl-tests


def test_nccl_tests_parse_case() -> None:
    r = parse_nccl_tests(text(CASES / "nccl-tests__2node-16xh100-a3mega-allreduce.txt"))
    assert len(r.rows) == 31 and r.hosts == ["node01", "node02"] and r.avg_busbw_gb_s == 70.742
    assert infer_collective(r) == ("all_reduce", 16)
    assert r.rows[-1].oop.busbw_gb_s == 338.82 and r.rows[-1].oop.wrong == 0


def test_nccl_tests_never_judged_on_avg_line() -> None:
    f = nccl.judge_nccl_tests(text(CASES / "nccl-tests__1node-8xh100-allreduce-256m-2g.txt"), {})
    assert _v(f) == [Verdict.PASS]
    assert "448.212" in f[0].message and "not judged" in f[0].message
    assert "268.99 x 14/8" in f[0].message  # the arithmetic is shown


def test_nccl_tests_wrong_results_fail() -> None:
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-wrong-3-at-2g.txt"), {})
    assert Verdict.FAIL in _v(f) and "#wrong" in f[0].message


def test_nccl_tests_below_floor_fails_and_unchecked_warns() -> None:
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-below-floor.txt"), {})
    assert _v(f) == [Verdict.FAIL] and "460" in f[0].message and f[0].remedy
    f = nccl.judge_nccl_tests(text(SYNTHETIC / "synthetic_nccl-tests__8xh100-c0-wrong-na.txt"), {})
    assert _v(f) == [Verdict.WARN, Verdict.PASS] and "-c 1" in f[0].remedy


def test_nccl_tests_multinode_floor_from_plan() -> None:
    t = text(CASES / "nccl-tests__2node-16xh100-a3mega-allreduce.txt")
    assert _v(nccl.judge_nccl_tests(t, {"nics_per_node": 8, "nic_gbit_s": 400})) == [Verdict.PASS]  # floor 320
    assert _v(nccl.judge_nccl_tests(t, {"allreduce_floor_gb_s": 370})) == [Verdict.FAIL]


def test_nccl_tests_a100_row_matches_real_device_name() -> None:
    body = text(CASES / "nccl-tests__1node-8xh100-allreduce-256m-2g.txt").replace("NVIDIA H100 80GB HBM3",
                                                                                  "NVIDIA A100-SXM4-80GB")
    f = nccl.judge_nccl_tests(body, {})
    assert "A100" in f[0].message and "228" in f[0].message and f[0].verdict is Verdict.PASS


def test_nccl_tests_old_and_other_collectives() -> None:
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt"))
    assert not r.wrong_is_count and r.oob_ok is True and r.rows[0].oop.error == 2e-06
    f = nccl.judge_nccl_tests(text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt"), {})
    assert _v(f) == [Verdict.UNKNOWN] and "below 1 GiB" in f[0].message
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__2gpu-h800-broadcast-header-partial.txt"))
    assert infer_collective(r) == ("broadcast", 2)
    r = parse_nccl_tests(text(PUBLIC / "nccl-tests__2gpu-allgather-bf16-partial.txt"))
    assert infer_collective(r)[1] == 2
    bad = text(PUBLIC / "nccl-tests__8node-v100-allreduce-100g-ib-old-error-column.txt").replace("0 OK", "1 FAILED")
    assert Verdict.FAIL in _v(nccl.judge_nccl_tests(bad, {}))


# ------------------------------------------------------------------ NCCL logs


@pytest.mark.parametrize("name,fid,verdict", [
    ("nccl-debug__docker-bond-ibv-open-failed-socket-fallback.txt", "multinode.transport", Verdict.FAIL),
    ("nccl-debug__nccl-2.3-virbr0-interfaces-socket.txt", "multinode.transport", Verdict.FAIL),
    ("nccl-debug__container-net-ib-plugin-2.28-partial.txt", "multinode.transport", Verdict.PASS),
    ("nccl-debug__libibverbs-missing-socket-creation-failed.txt", "multinode.transport", Verdict.WARN),
    ("nccl-debug__h800-nvls-invalid-argument-chain.txt", "node.nvls", Verdict.FAIL),
])
def test_nccl_logs_public(name: str, fid: str, verdict: Verdict) -> None:
    e = explain_text(text(PUBLIC / name))
    assert e.kind == "nccl-debug"
    assert verdict in _v(e.findings, fid), [(f.id, f.verdict, f.message) for f in e.findings]


def test_nccl_log_docker0_and_new_completion_format() -> None:
    f = nccl.judge_nccl_log(text(SYNTHETIC / "synthetic_nccl-debug__socket-on-docker0.txt"), {})
    assert _v(f, "multinode.transport") == [Verdict.FAIL] and "docker0" in f[0].message
    # the newer NCCL wording, built by hand (no real sample at hand): status name with the number
    line = ("n1:10:20 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> with "
            "status=IBV_WC_RETRY_EXC_ERR(12) opcode=0 len=0 vendor err 129 (Recv)")
    lg = parse_nccl_log(line)
    assert lg.completion_errors[0][0] == 12
    f = nccl.judge_nccl_log(line, {})
    assert _v(f, "multinode.ib_errors") == [Verdict.FAIL] and "RETRY_EXC" in f[0].message


def test_nccl_log_bond_warns() -> None:
    line = "n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_bond_0:1/RoCE [RO]; OOB bond0:10.0.0.1<0>"
    assert _v(nccl.judge_nccl_log(line, {}), "multinode.transport") == [Verdict.WARN]


# ------------------------------------------------------------------ DCGM


def test_dcgm_text_cases_parse() -> None:
    d = parse_dcgm_text(text(CASES / "dcgmi-diag__t4-gpu0-cuda-busy-unavailable-fail-section.txt"))
    mem = d.results[0]
    assert mem.test == "GPU Memory" and mem.per_gpu == {1: "pass", 0: "fail"}
    assert "busy or unavailable" in mem.messages[0][0]
    d = parse_dcgm_text(text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt"))
    assert d.metadata["DCGM Version"] == "3.3.9" and d.device_ids == ["1db4"] and dcgm.finding_id(d) == "node.dcgm_l3"


def test_dcgm_json_dcgm3_and_dcgm4() -> None:
    d = parse_dcgm_json(text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm3-gpu1-memory-fail.json"))
    assert [r.test for r in d.results] == ["Denylist", "GPU Memory", "EUD Test"]
    f = dcgm.judge(d, "", {})
    fails = [x for x in f if x.verdict is Verdict.FAIL]
    assert [x.subject for x in fails] == ["GPU 1"]
    assert all(x.verdict is Verdict.SKIP for x in f if "EUD" in x.message)
    d = parse_dcgm_json(text(SYNTHETIC / "synthetic_dcgmi-diag-json__dcgm4-entity-pcie-skip.json"))
    assert d.metadata["DCGM Version"] == "4.2.3"
    f = dcgm.judge(d, "", {})
    assert [x.verdict for x in f if x.subject == "GPU 0"] == [Verdict.WARN]  # skip is not pass
    assert [x.verdict for x in f if x.subject == "GPU 1"] == [Verdict.PASS]


def test_dcgm_nonfatal_failure_warns_and_pcie_only_nvlink_is_false_alarm() -> None:
    head = text(CASES / "dcgmi-diag__r3-v100-pcie-16gb-dcgm339-all-pass-eud-skip.txt")
    body = head.replace("| Targeted Power            | Pass - All ", "| Targeted Power            | Fail - All ")
    f = dcgm.judge(parse_dcgm_text(body), body, {})
    assert [x.verdict for x in f if "Targeted Power" in x.message] == [Verdict.WARN]
    # a hand-made NVLink row on the real V100 PCIe (1db4) run: no real PCIe-SKU sample with it at hand
    body = head.replace("| PCIe                      | Pass - All ",
                        "| NVLink                    | Fail - All                                     |\n"
                        "| Warning                   | GPU 0 NvLink 0 is down                         |\n"
                        "| PCIe                      | Pass - All ")
    f = dcgm.judge(parse_dcgm_text(body), body, {})
    nv = [x for x in f if "NVLink" in x.message]
    assert nv and nv[0].verdict is Verdict.SKIP and "false alarm" in nv[0].message


def test_dcgm_metadata_only_is_unknown() -> None:
    body = "\n".join(text(CASES / "dcgmi-diag__l40s-4gpu-dcgm423-header-partial.txt").splitlines()[:10])
    e = explain_text(body)
    assert e.kind == "dcgmi-diag" and e.verdict is Verdict.UNKNOWN


# ------------------------------------------------------------------ host tools


def test_size_units() -> None:
    assert size_bytes("251G") == 251 * 1024 ** 3
    assert size_bytes("1.9Gi") == int(1.9 * 1024 ** 3)
    assert size_bytes("0B") == 0
    assert size_bytes("1024", 1024) == 1024 ** 2
    assert size_bytes("x") is None


def test_free_layouts() -> None:
    f = parse_free(text(CASES / "free-h__gpu-cluster-node-ram-exhausted-swap-full.txt"))
    assert f.total == 251 * 1024 ** 3 and f.swap["free"] == 0
    f = parse_free(text(SYNTHETIC / "synthetic_free__old-layout-buffers-cached.txt"))
    assert f.old_layout and f.available == 516068 * 1024
    f = parse_free(text(PUBLIC / "free-b__dev-vm-local.txt"), 1)
    assert 20 * 1024 ** 3 < f.total < 30 * 1024 ** 3
    out = {"free_b": ProbeOutput("free_b", "$ free -b", text(PUBLIC / "free-b__dev-vm-local.txt"), rc=0)}
    assert _v(hosttools.memory_pressure(out, {})) == [Verdict.PASS]
    assert Verdict.WARN in _v(hosttools.memory_pressure(out, {"host_ram_gib": 64}), "os.memory")
    assert hosttools.memory_pressure({}, {})[0].verdict is Verdict.UNKNOWN


def test_swapon_kubernetes_warns() -> None:
    t = text(CASES / "swapon-show-output-all__zvol-partition.txt")
    devs, header, problems = parse_swapon(t)
    assert devs[0].name == "/dev/zd0" and devs[0].size == 4 * 1024 ** 3 and not problems
    assert _v(hosttools.judge_swapon_text(t, {"scheduler": "kubernetes"})) == [Verdict.WARN]


def test_lscpu_formats_and_rules() -> None:
    f = parse_lscpu(text(PUBLIC / "lscpu__2x-xeon-gold-6326-nested-partial.txt"))
    assert (f.sockets, f.cores_per_socket, f.threads_per_core, f.cpus) == (2, 16, 2, 64)
    p9 = parse_lscpu(text(CASES / "lscpu__power9-2socket-v100-node.txt"))
    assert p9.numa_nodes == 6 and p9.numa_cpus[252] == ""
    assert _v(hosttools.judge_lscpu(p9, {"numa_nodes": 2}), "bios.numa") == [Verdict.PASS]
    assert _v(hosttools.judge_lscpu(p9, {"numa_nodes": 4}), "bios.numa") == [Verdict.FAIL]
    assert _v(hosttools.judge_lscpu_text(text(SYNTHETIC / "synthetic_lscpu__offline-cpus.txt"), {}), "bios.cpu") == [
        Verdict.FAIL]
    out = {"lscpu": ProbeOutput("lscpu", "$ lscpu", text(PUBLIC / "lscpu__dev-vm-2vcpu-flat-local.txt"), rc=0)}
    assert _v(hosttools.cpu_layout(out, {})) == [Verdict.PASS, Verdict.PASS]


def test_numactl_rules() -> None:
    n = parse_numactl(text(CASES / "numactl-hardware__2x-epyc-9375f-1_5tb.txt"))
    assert n.available == 2 and n.nodes[1].size_mib == 774028 and len(n.nodes[0].cpus) == 32
    assert _v(hosttools.judge_numactl(n, {"numa_nodes": 4}), "bios.numa") == [Verdict.FAIL]
    f = hosttools.judge_numactl_text(text(SYNTHETIC / "synthetic_numactl-hardware__node1-half-memory.txt"), {})
    assert _v(f, "bios.numa_memory") == [Verdict.WARN]


# ------------------------------------------------------------------ sources are public documents

_INTERNAL = re.compile(r"knowledge\.md|knowledge base|checks-catalogue|DESIGN\.md|wizard/|assets/|cases/|§", re.I)
_PUBLIC_DOC = re.compile(r"https?://|\(\d\)|man page|Spec|SDM|\b[\w.-]+/[\w.-]+#\d+")
_RULE_MODULES = ("kernel_log", "kernel_log_common", "xid", "edac", "dcgm", "nccl", "driver_chain", "multinode", "tools")
_ASSETS = ("xid.csv", "xid_severity.csv", "xid_buckets.csv", "xid154_actions.csv", "xid_text_severity.csv",
           "kernel_log_benign.csv", "pcie_only_gpus.csv", "cuda_driver_min.csv", "nccl_floors.csv")


@pytest.mark.parametrize("name", _RULE_MODULES)
def test_rule_sources_name_public_documents(name: str) -> None:
    """Every SRC_* of the kernel-log, Xid, EDAC, DCGM, NCCL, driver-chain and multi-node rules names a document an
    operator can open (a URL, a man page, a spec, an issue), never an internal file."""
    import importlib

    mod = importlib.import_module(f"wizard.rules.{name}")
    srcs = {k: v for k, v in vars(mod).items() if k.startswith("SRC") and isinstance(v, str)}
    assert srcs, name
    for k, v in srcs.items():
        assert not _INTERNAL.search(v), (name, k, v)
        assert _PUBLIC_DOC.search(v), (name, k, v)


@pytest.mark.parametrize("asset", _ASSETS)
def test_asset_sources_name_public_documents(asset: str) -> None:
    from wizard.data import table

    rows = list(table(asset))
    assert rows, asset
    for r in rows:
        assert not _INTERNAL.search(r["source"]) and _PUBLIC_DOC.search(r["source"]), (asset, r)
