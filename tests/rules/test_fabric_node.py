"""wizard/rules/fabric_node.py: the node's fabric read live (sysfs trees run through the real probes, real outputs)."""

from __future__ import annotations

from pathlib import Path

from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules import fabric_node as fn

from tests.fabric_data import FABRIC, fabric_outputs, sysfs_tree, tree_outputs
from tests.probe_data import PUBLIC, text

H100 = "sysfs__gpud-h100-8x-ndr-400-ib-plus-bond-roce-200.txt"
ROCE = "synthetic_sysfs__roce-2x200-one-port-down-gids-netdevs.txt"


def _out(name: str, body: str, **kw: object) -> ProbeOutput:
    return ProbeOutput(name=name, source=name, text=body, **kw)  # type: ignore[arg-type]


def _by(findings: list, fid: str) -> list:
    return [f for f in findings if f.id == fid]


def test_real_h100_node_passes_every_port_at_ndr_with_its_firmware(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, H100)
    plan = {"nics_per_node": 8, "nic_gbit_s": 400.0}
    state = fn.ports(outs, plan)
    assert [f.verdict for f in state] == [Verdict.PASS] and state[0].id == fn.FABRIC_ID
    assert "9 of 9 ports Active" in state[0].message and "fw 28.41.1000" in state[0].message
    rate = fn.rate(outs, plan)
    assert [f.verdict for f in rate] == [Verdict.PASS] and "8 x 400 Gb/s (NDR) InfiniBand" in rate[0].message
    assert rate[0].measured is not None and (rate[0].measured.value, rate[0].measured.threshold) == (400.0, 400.0)


def test_a_400_plan_on_the_ndr_node_at_800_fails_each_port_and_too_few_ports_fail(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, H100)
    slow = fn.rate(outs, {"nic_gbit_s": 800.0})
    assert len(slow) == 8 and {f.verdict for f in slow} == {Verdict.FAIL}
    assert all(f.id == fn.RATE_ID and "below the plan's 800" in f.message for f in slow)
    short = fn.ports(outs, {"nics_per_node": 10})
    assert [f.verdict for f in short] == [Verdict.FAIL] and "8 Active InfiniBand port(s), fewer than the plan's 10" in \
        short[0].message and short[0].measured is not None and short[0].measured.value == 8


def test_the_real_edr_listing_on_a_400_plan_fails(tmp_path: Path) -> None:
    """stackhpc/ansible-slurm-appliance#988: two EDR ports (100 Gb/s), grep of their sysfs files."""
    lines = "\n".join(ln for ln in text(PUBLIC / "ib-ports__sysfs-ib-ports-active-edr.txt").splitlines()
                      if ln.startswith("/sys/class/infiniband/") and ":" in ln)
    outs = fabric_outputs(sysfs_tree(tmp_path, lines))
    assert [f.verdict for f in fn.rate(outs, {"nic_gbit_s": 400.0})] == [Verdict.FAIL, Verdict.FAIL]
    assert [f.verdict for f in fn.ports(outs, {"nics_per_node": 2})] == [Verdict.PASS]


def test_a_down_port_short_of_the_plan_fails_and_says_disabled(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, ROCE)
    f = fn.ports(outs, {"nics_per_node": 2})
    assert [x.verdict for x in f] == [Verdict.FAIL] and "mlx5_1 port 1 is Down, physical state Disabled" in f[0].message
    assert [x.verdict for x in fn.ports(outs, {})] == [Verdict.WARN]


def test_no_rdma_device_and_no_plan_is_skip_never_pass_and_a_plan_makes_it_fail(tmp_path: Path) -> None:
    outs = fabric_outputs(tmp_path)  # an empty tree: no /sys/class/infiniband
    got = fn.ports(outs, {})
    assert [x.verdict for x in got] == [Verdict.SKIP] and "single node without an RDMA fabric" in got[0].message
    for rule in (fn.rate, fn.mtu, fn.gpudirect, fn.affinity):
        assert rule(outs, {}) == []  # said once, by node.fabric
    planned = fn.ports(outs, {"nics_per_node": 8})
    assert [x.verdict for x in planned] == [Verdict.FAIL] and "expects 8" in planned[0].message
    assert [x.verdict for x in fn.rate(outs, {"nics_per_node": 8})] == [Verdict.SKIP]
    gone = fn.ports({"ib_sysfs": _out("ib_sysfs", "", error="not in snapshot: /sys/class/infiniband/*")}, {})
    assert [x.verdict for x in gone] == [Verdict.UNKNOWN]


def test_ibstat_stands_in_when_sysfs_shows_no_port() -> None:
    outs = {"ib_sysfs": _out("ib_sysfs", ""), "ibstat": _out(
        "ibstat", text(PUBLIC / "ibstat__gpud-h100-roce-9x-active-2-down-polling-disabled.txt"), rc=0)}
    # its two Down ports are ConnectX-7s like the six Active 400 Gb/s ones: rails missing (wizard/rules/fabric.py)
    assert {x.verdict for x in fn.ports(outs, {})} == {Verdict.FAIL}


def test_mtu_differs_between_the_fabric_netdevs_warns_and_one_mtu_passes(tmp_path: Path) -> None:
    listing = (FABRIC / ROCE).read_text().replace("1: DOWN", "4: ACTIVE").replace("3: Disabled", "5: LinkUp").replace(
        "40 Gb/sec (4X QDR)", "200 Gb/sec (4X HDR)")
    outs = fabric_outputs(sysfs_tree(tmp_path / "a", listing))
    f = fn.mtu(outs, {})
    assert [x.verdict for x in f] == [Verdict.WARN] and "1500: ens2f0np0 (mlx5_1); 4200: ens1f0np0 (mlx5_0)" in f[0].message
    same = fabric_outputs(sysfs_tree(tmp_path / "b", listing.replace("mtu:1500", "mtu:4200")))
    assert [x.verdict for x in fn.mtu(same, {})] == [Verdict.PASS]


def test_gpudirect_peermem_loaded_passes_on_the_gpu_operator_docs_lsmod(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, H100)
    outs["modules"] = _out("modules", text(FABRIC / "lsmod__gpu-operator-docs-nvidia-peermem-loaded.txt"))
    f = fn.gpudirect(outs, {})
    assert [x.verdict for x in f] == [Verdict.PASS] and "nvidia_peermem is loaded" in f[0].message


def test_gpudirect_without_peermem_passes_on_dmabuf_prerequisites_and_warns_without(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, H100)
    outs["modules"] = _out("modules", "mlx5_ib 561152 0 - Live 0x0\n")
    outs["kernel"] = _out("kernel", "6.8.0-45-generic\n")
    open_drv = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)\n"
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", open_drv)
    f = fn.gpudirect(outs, {})
    assert [x.verdict for x in f] == [Verdict.PASS] and "DMA-BUF" in f[0].message
    outs["nccl_env"] = _out("nccl_env", "# environment\nNCCL_DMABUF_ENABLE=0\n", rc=0)
    assert [x.verdict for x in fn.gpudirect(outs, {})] == [Verdict.WARN]
    del outs["nccl_env"]
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", open_drv.replace("Open Kernel Module for x86_64",
                                                                                   "x86_64 Kernel Module"))
    w = fn.gpudirect(outs, {})
    assert [x.verdict for x in w] == [Verdict.WARN] and "proprietary" in w[0].message and "host memory" in w[0].message
    outs["kernel"] = _out("kernel", "5.4.0-150-generic\n")
    outs["nvidia_driver_version"] = _out("nvidia_driver_version", open_drv)
    assert "older than 5.12" in fn.gpudirect(outs, {})[0].message


def test_affinity_narrowed_to_the_fabric_hcas_warns_for_gpus_across_the_socket(tmp_path: Path) -> None:
    """A real 8-GPU topo -m with four NICs (mlx5_0..3); with only mlx5_0 Active (the synthetic RoCE tree), GPUs 4-7
    reach the fabric only across the CPU interconnect."""
    outs = tree_outputs(tmp_path, ROCE)
    outs["nvidia_smi_topo_m"] = _out("nvidia_smi_topo_m", text(PUBLIC / "topo-m__8gpu-nv8-a800-class-4nic-mlx5.txt"),
                                     rc=0)
    f = fn.affinity(outs, {})
    assert [x.verdict for x in f] == [Verdict.WARN] and f[0].id == fn.AFFINITY_ID
    assert "4 GPU(s) reach a NIC only across the CPU interconnect" in f[0].message and "GPU4" in f[0].message


def _nccl(tmp_path: Path, body: str) -> dict[str, ProbeOutput]:
    outs = tree_outputs(tmp_path, H100)
    outs["nccl_env"] = _out("nccl_env", body, rc=0)
    return outs


def test_nccl_env_missing_interface_or_hca_fails_and_mind_the_prefix_syntax(tmp_path: Path) -> None:
    (tmp_path / "sys/class/net/eth0").mkdir(parents=True)
    (tmp_path / "sys/class/net/eth0/mtu").write_text("1500\n")
    body = "# environment\nNCCL_SOCKET_IFNAME=ib\nNCCL_IB_HCA==mlx5_10\n"
    f = fn.nccl_env(_nccl(tmp_path, body), {})
    assert [x.verdict for x in f] == [Verdict.FAIL, Verdict.FAIL]
    assert "names no network interface of this node (it has: eth0)" in f[0].message
    assert "names no RDMA device" in f[1].message
    ok = "# environment\nNCCL_SOCKET_IFNAME=^docker,lo\nNCCL_IB_HCA=mlx5_0:1,mlx5_1:1\n# file /etc/nccl.conf\nNCCL_DEBUG=WARN\n"
    assert [x.verdict for x in fn.nccl_env(_nccl(tmp_path, ok), {})] == [Verdict.PASS]
    typo = "# environment\nNCCL_IB_HCA=mlx5_0,mlx5_11:1\n"  # prefix mlx5_1 matches nothing as mlx5_11
    t = fn.nccl_env(_nccl(tmp_path, typo), {})
    assert [x.verdict for x in t] == [Verdict.WARN] and "mlx5_11:1 matches no RDMA device" in t[0].message
    port = fn.nccl_env(_nccl(tmp_path, "# environment\nNCCL_IB_HCA==mlx5_0:2\n"), {})
    assert [x.verdict for x in port] == [Verdict.WARN] and "names a port the HCA does not have" in port[0].message


def test_nccl_debug_left_on_warns_and_the_environment_beats_the_file(tmp_path: Path) -> None:
    body = "# environment\nNCCL_DEBUG=INFO\n# file /etc/nccl.conf\nNCCL_DEBUG=WARN\nNCCL_IB_DISABLE=1\n"
    f = fn.nccl_env(_nccl(tmp_path, body), {})
    assert [x.verdict for x in f] == [Verdict.WARN]
    assert "NCCL_DEBUG=INFO (environment)" in f[0].message and "NCCL_IB_DISABLE=1 (/etc/nccl.conf)" in f[0].message
    assert [x.verdict for x in fn.nccl_env(_nccl(tmp_path, "# environment\n"), {})] == [Verdict.PASS]
    assert [x.verdict for x in fn.nccl_env({}, {})] == [Verdict.UNKNOWN]


def test_the_loopback_judge_on_a_real_ib_write_bw_output() -> None:
    """microsoft/superbenchmark's real ib_write_bw loopback (8 MiB, 24056.72 MB/s = 201.8 Gb/s on an HDR
    port: perftest's MB is 2^20 bytes)."""
    log = text(PUBLIC / "perftest__ib-write-bw-loopback-8m.txt")
    f = fn.judge_rdma_loopback(log, {})
    assert [x.verdict for x in f] == [Verdict.PASS] and f[0].id == fn.BANDWIDTH_ID
    assert "HDR" in f[0].message and "loopback on one HCA port" in f[0].message
    assert [x.verdict for x in fn.judge_rdma_loopback(log, {"nic_gbit_s": 400.0})] == [Verdict.FAIL]
    # the rate the action's first command prints (grep -H . of the port's sysfs rate; synthetic line) is the reference
    rated = fn.judge_rdma_loopback("/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)\n" + log,
                                   {"nic_gbit_s": 200.0})
    assert [x.verdict for x in rated] == [Verdict.FAIL] and "line rate of mlx5_0 port 1" in rated[0].message
    assert [x.verdict for x in fn.judge_rdma_loopback("Waiting for client to connect...\n", {})] == [Verdict.UNKNOWN]


def test_the_bandwidth_step_s_check_never_settles_it_and_says_what_to_do(tmp_path: Path) -> None:
    none = fn.bandwidth_pending(fabric_outputs(tmp_path / "empty"), {})
    assert [x.verdict for x in none] == [Verdict.SKIP] and "nothing to measure" in none[0].message
    some = fn.bandwidth_pending(tree_outputs(tmp_path / "h", H100), {})
    assert [x.verdict for x in some] == [Verdict.UNKNOWN] and "mlx5_0 port 1" in some[0].message
    planned = fn.bandwidth_pending(fabric_outputs(tmp_path / "empty2"), {"nics_per_node": 4})
    assert [x.verdict for x in planned] == [Verdict.UNKNOWN] and "skip this step" not in planned[0].message


def test_nccl_ib_disable_on_a_node_planned_for_ib_fails(tmp_path: Path) -> None:
    body = "# environment\nNCCL_IB_DISABLE=1\n"
    f = fn.nccl_env(_nccl(tmp_path, body), {"nics_per_node": 8})
    assert [x.verdict for x in f] == [Verdict.FAIL] and "IP sockets" in f[0].message and "8 InfiniBand" in f[0].message
    # without a plan it stays a debugging setting left on
    assert [x.verdict for x in fn.nccl_env(_nccl(tmp_path, body), {})] == [Verdict.WARN]


def test_nccl_socket_ifname_on_a_down_interface_warns(tmp_path: Path) -> None:
    outs = tree_outputs(tmp_path, ROCE)
    outs["nccl_env"] = _out("nccl_env", "# environment\nNCCL_SOCKET_IFNAME==ens2f0np0\n", rc=0)
    f = fn.nccl_env(outs, {})
    assert [x.verdict for x in f] == [Verdict.WARN] and "operstate down" in f[0].message
    outs["nccl_env"] = _out("nccl_env", "# environment\nNCCL_SOCKET_IFNAME==ens1f0np0\n", rc=0)
    assert [x.verdict for x in fn.nccl_env(outs, {})] == [Verdict.PASS]


def test_nccl_value_outside_the_documented_ones_warns(tmp_path: Path) -> None:
    f = fn.nccl_env(_nccl(tmp_path, "# environment\nNCCL_NET_GDR_LEVEL=banana\n"), {})
    assert [x.verdict for x in f] == [Verdict.WARN] and "LOC, PIX, PXB, PHB or SYS" in f[0].message
    assert [x.verdict for x in fn.nccl_env(_nccl(tmp_path, "# environment\nNCCL_NET_GDR_LEVEL=PHB\n"), {})] == [
        Verdict.PASS]


def test_nccl_ib_hca_on_a_node_without_rdma_and_no_planned_nic_is_a_leftover_warning(tmp_path: Path) -> None:
    (tmp_path / "sys/class/infiniband").mkdir(parents=True)
    (tmp_path / "sys/class/net/eth0").mkdir(parents=True)
    (tmp_path / "sys/class/net/eth0/operstate").write_text("up\n")
    outs = fabric_outputs(tmp_path)
    outs["nccl_env"] = _out("nccl_env", "# environment\nNCCL_IB_HCA=mlx5_0:1,mlx5_1\n", rc=0)
    f = fn.nccl_env(outs, {})
    assert [x.verdict for x in f] == [Verdict.WARN] and "leftover" in f[0].message and "socket" in f[0].message
    assert [x.verdict for x in fn.nccl_env(outs, {"nics_per_node": 2})] == [Verdict.FAIL]


def test_a_module_list_with_mlx4_and_no_peermem_has_no_gpudirect_rdma():
    """The real lsmod of a node with nvidia and the mlx4 RDMA stack but no nvidia_peermem (held-out round 13): mlx4 has
    no DMA-BUF path, so there is no GPUDirect RDMA: warn; with mlx5 it is only a note (DMA-BUF may serve)."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text
    from wizard.parsers.host import parse_modules
    from wizard.rules.fabric_node import judge_module_list

    body = text(PUBLIC / "lsmod__nvidia-loaded-mlx4-no-peermem-no-uvm.txt")
    (f,) = [f for f in explain_text(body).findings if f.id == "node.gpudirect_rdma"]
    assert f.verdict is Verdict.WARN and "nvidia_peermem" in f.message and "mlx4" in f.message
    mods = parse_modules(body.replace("mlx4_ib", "mlx5_ib"))[0]
    assert [x.verdict for x in judge_module_list(mods, "lsmod")] == [Verdict.SKIP]
