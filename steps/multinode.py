"""Stage 9: validate several nodes together.

Every step here but the last is backed by the multi-node launcher (``python -m wizard.multinode``, see
:mod:`wizard.multinode`), run detached like every action, over the nodes of the plan's ``hostfile``:

* ``multinode.consistency``: copy the validation script to every node and collect its facts (seconds);
  judged by :func:`wizard.rules.multinode.judge_consistency`;
* ``multinode.transport``: the all-nodes torchrun job with ``NCCL_DEBUG=INFO``, judged for NCCL's transport;
* ``multinode.allreduce``: the same job (plus every pair of nodes with ``multinode_pairwise``), judged for
  everything: reachability, consistency, transport, the all-reduce and the pairs;
* ``multinode.rdma_pairs``: not the launcher but :mod:`wizard.rdma_pairs` (perftest's ib_write_bw between
  neighbouring nodes over ssh), judged by :func:`wizard.rules.fabric.judge_rdma_pairs`.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.rules.fabric import judge_rdma_pairs, rdma_pairs_results
from wizard.rules.multinode import judge_consistency, judge_multinode, judge_transport, results_json
from wizard.model import Stage, Step
from wizard.i18n import Msg

HOSTFILE_HELP = Msg("one line per node: 'name ssh_target gpus [python=/path/to/python] [addr=IP]' (or MPI's "
                    "'host slots=N'); # starts a comment")


def _device(ctx: ActionContext) -> str:
    """cuda or cpu: the plan's ``validate_device``; ``auto`` follows this machine (the nodes of a cluster are
    alike, and bringup runs on one of them), see :func:`wizard.validate.validate_device`."""
    d = ctx.plan.get("validate_device")
    if d in ("cuda", "cpu"):
        return str(d)
    try:
        from wizard.validate import validate_device
    except ImportError:  # pragma: no cover - the single-node validation ships with bringup
        return "cuda"
    return validate_device(ctx)


def launcher_argv(plan: Mapping[str, Any], python: str, device: str, *, facts_only: bool = False,
                  pairwise: bool = False) -> list[str]:
    """The launcher's argv for this plan (hostfile, nodes' Python, ssh config, quick sizes)."""
    argv = [python, "-m", "wizard.multinode"]
    if plan.get("hostfile"):  # without one, inside a Slurm allocation, the launcher takes the allocation's nodes
        argv += ["--hostfile", str(plan.get("hostfile"))]
    argv += ["--device", device]
    if plan.get("torch_python"):
        argv += ["--python", str(plan["torch_python"])]
    if plan.get("ssh_config"):
        argv += ["--ssh-config", str(plan["ssh_config"])]
    if facts_only:
        argv.append("--facts-only")
    if pairwise:
        argv.append("--pairwise")
    if plan.get("validate_quick") is True:
        argv += ["--", "--quick"]
    return argv


def _resolve(ctx: ActionContext, facts_only: bool = False, pairwise: bool | None = None) -> Resolved:
    from wizard.multinode import HostfileError, read_hostfile, slurm_nodes, slurm_present

    hostfile = ctx.plan.get("hostfile")
    if not hostfile and slurm_present():  # inside a Slurm allocation (salloc/sbatch): its nodes, through srun
        try:
            nodes = slurm_nodes()
        except HostfileError as exc:
            return Resolved(manual=Msg("the Slurm allocation's nodes cannot be listed: {why}", why=exc.message))
        where = Msg("this Slurm allocation (job {job}) has {n} node", job=os.environ.get("SLURM_JOB_ID"),
                    n=len(nodes))
    elif not hostfile:
        # the hostfile's format is the plan key's help, shown under this text (TUI dialog and CLI): not twice
        return Resolved(manual=Msg("bringup needs the list of nodes: write a hostfile and set the plan answer "
                                   "hostfile (F2 in the TUI, or `bringup plan hostfile=/path/to/hostfile`), or run "
                                   "`bringup validate nodes --hostfile FILE` (or run it inside a Slurm allocation: "
                                   "`salloc -N2 bringup validate nodes`)."), plan_key="hostfile")
    else:
        try:
            nodes = read_hostfile(str(hostfile))
        except HostfileError as exc:
            return Resolved(manual=Msg("the hostfile cannot be used: {why} (format: {fmt})", why=exc.message,
                                       fmt=HOSTFILE_HELP), plan_key="hostfile")
        where = Msg("the hostfile {path} lists {n} node", path=hostfile, n=len(nodes))
    if len(nodes) < 2 and not facts_only:
        return Resolved(manual=where + Msg("; a multi-node validation needs at least 2 (the node stage validates one "
                                           "node)"), plan_key="" if not hostfile else "hostfile")
    if pairwise is None:
        pairwise = ctx.plan.get("multinode_pairwise") is True
    argv = launcher_argv(ctx.plan, ctx.python, _device(ctx), facts_only=facts_only, pairwise=pairwise)
    return Resolved(ops=[{"argv": argv, "detail": _remote_plan(nodes, argv)}], env={"PYTHONUNBUFFERED": "1"})


def _remote_plan(nodes: list[Any], argv: list[str]) -> list[str]:
    """What the launcher ``argv`` runs on each node (:func:`wizard.multinode.remote_plan`), read from the same
    options the launcher will parse."""
    from wizard.multinode import build_parser, options_from_args, remote_plan

    try:
        opts = options_from_args(build_parser().parse_args(argv[3:]))
    except (ValueError, SystemExit) as exc:  # not expected: the argv is bringup's own
        return [f"(the commands it runs on each node cannot be listed: {exc})"]
    return remote_plan(nodes, opts)


def resolve_facts(ctx: ActionContext) -> Resolved:
    return _resolve(ctx, facts_only=True)


def resolve_transport(ctx: ActionContext) -> Resolved:
    return _resolve(ctx, pairwise=False)


def resolve_allreduce(ctx: ActionContext) -> Resolved:
    return _resolve(ctx)


def rdma_pairs_argv(plan: Mapping[str, Any], python: str, hostfile: str) -> list[str]:
    """``python -m wizard.rdma_pairs`` for this plan (hostfile, ssh config, the plan's ``rdma_device``)."""
    from wizard.install.perftest import DURATION_S, MESSAGE_BYTES

    argv = [python, "-m", "wizard.rdma_pairs", "--hostfile", hostfile]
    if plan.get("ssh_config"):
        argv += ["--ssh-config", str(plan["ssh_config"])]
    argv += ["--seconds", str(DURATION_S), "--size", str(MESSAGE_BYTES)]
    if plan.get("rdma_device"):
        argv += ["--device", str(plan["rdma_device"])]
    return argv


def resolve_rdma_pairs(ctx: ActionContext) -> Resolved:
    """The pair test's one op (:func:`rdma_pairs_argv`) with every ssh command it makes as its ``detail``
    (:func:`wizard.rdma_pairs.remote_plan`); ``manual`` without a hostfile, with fewer than 2 nodes, or without
    ``ib_write_bw`` on this node (a cluster's nodes are alike: perftest is missing on them too)."""
    import shutil

    from wizard.install.perftest import PERFTEST_BINARY, PERFTEST_PACKAGE, install_hint
    from wizard.multinode import HostfileError, read_hostfile
    from wizard.rdma_pairs import build_parser, options_from_args, remote_plan

    hostfile = ctx.plan.get("hostfile")
    if not hostfile:
        return Resolved(manual=Msg("bringup needs the list of nodes to test in pairs: write a hostfile and set "
                                   "the plan answer hostfile (F2 in the TUI, or `bringup plan hostfile=/path/to/hostfile`), "
                                   "then run this action again."), plan_key="hostfile")
    try:
        nodes = read_hostfile(str(hostfile))
    except HostfileError as exc:
        return Resolved(manual=Msg("the hostfile cannot be used: {why} (format: {fmt})", why=exc.message,
                                   fmt=HOSTFILE_HELP), plan_key="hostfile")
    if len(nodes) < 2:
        return Resolved(manual=Msg("the hostfile {path} lists {n} node; an RDMA test between nodes needs at least 2 "
                                   "(node.rdma_bandwidth tests one node's HCA in loopback)", path=hostfile,
                                   n=len(nodes)), plan_key="hostfile")
    if shutil.which(PERFTEST_BINARY) is None:
        return Resolved(manual=Msg("{binary} (perftest) is not installed on this node, and a cluster's nodes are "
                                   "alike: {hint} on every node of the hostfile (package `{package}`), then run this "
                                   "action again.", binary=PERFTEST_BINARY, hint=install_hint(ctx),
                                   package=PERFTEST_PACKAGE))
    argv = rdma_pairs_argv(ctx.plan, ctx.python, str(hostfile))
    try:
        detail = remote_plan(nodes, options_from_args(build_parser().parse_args(argv[3:])))
    except (ValueError, SystemExit) as exc:
        return Resolved(manual=f"the pair test's options cannot be used: {exc}")
    return Resolved(ops=[{"argv": argv, "detail": detail}], env={"PYTHONUNBUFFERED": "1"})


_PROBES = ("pci", "nvml")
"""What ``validate_device`` reads when the plan says ``auto`` (a GPU on this machine's bus)."""

FACTS = ActionSpec(
    id="multinode_facts",
    title="Collect versions and GPU identity from every node",
    description=(
        "Copies bringup's validation script to a per-run directory under /tmp on every node of the hostfile "
        "(ssh, with your ~/.ssh/config, agent and known_hosts) and runs its facts sub-command there: driver, "
        "CUDA, NCCL, torch, kernel, GPU count, model and VBIOS. Measures only; removes its directory after."),
    resolve=resolve_facts,
    probes=_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_consistency,
    results=results_json,
)

TRANSPORT = ActionSpec(
    id="multinode_transport",
    title="torchrun across every node with NCCL_DEBUG=INFO",
    description=(
        "Starts torchrun (c10d rendezvous on the first node) on every node over ssh, one rank per GPU, with "
        "NCCL_DEBUG=INFO, and runs rank sanity, an all-reduce sweep and P2P; judges which transport NCCL "
        "chose on each node. A node that cannot be reached is named and the others go on. Measures only."),
    resolve=resolve_transport,
    probes=_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_transport,
    results=results_json,
    loads_gpus=True,
)

ALLREDUCE = ActionSpec(
    id="multinode_allreduce",
    title="All-reduce across every node (and every pair of nodes with multinode_pairwise)",
    description=(
        "Starts torchrun on every node over ssh (c10d rendezvous; NCCL on GPUs, gloo on the CPU; srun inside a "
        "Slurm allocation), runs rank sanity, an all-reduce sweep with correctness checks and P2P, then "
        "every pair of nodes when multinode_pairwise is true (to name a bad node), and nccl-tests' "
        "all_reduce_perf under mpirun when both are installed. Measures only."),
    resolve=resolve_allreduce,
    probes=_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_multinode,
    results=results_json,
    command="nodes",
    loads_gpus=True,
)

RDMA_PAIRS = ActionSpec(
    id="multinode_rdma_pairs",
    title="RDMA write bandwidth between node pairs (ib_write_bw)",
    description=(
        "Over ssh, reads every node's RDMA ports from sysfs, then tests the hostfile's nodes as a ring of neighbouring "
        "pairs, one pair at a time: perftest's ib_write_bw server on one node, its client on the previous one, "
        "8 MiB messages for 5 seconds, each node's fastest Active port (or the plan's rdma_device). Each pair's "
        "bandwidth is judged against the slower port's line rate. Measures only."),
    resolve=resolve_rdma_pairs,
    probes=("os_release",),
    changes_system=False,
    needs_root=False,
    judge=judge_rdma_pairs,
    results=rdma_pairs_results,
)

STAGE = Stage(
    id="multinode",
    title="Validate several nodes",
    short="Several nodes",
    summary="Nodes alike, NCCL on the right network, all-reduce across nodes.",
    steps=(
        Step(
            id="multinode.consistency",
            title="Every node runs the same driver, CUDA, NCCL, torch, kernel and firmware",
            why=(
                "One node with a different driver, NCCL or VBIOS slows or hangs every collective it "
                "joins; fleet tools compare these across nodes and name the odd one out "
                "(Meta GCM vbios_mismatch; Azure HPC health checks check_gpu_vbios); NCCL or net-plugin versions that differ between "
                "nodes break or slow multi-node jobs (NVIDIA/nccl-tests#200, NVIDIA/nccl#1634)."
            ),
            instructions=(
                "Set the hostfile (a asks for it in the TUI, or `bringup plan hostfile=/path`; " + HOSTFILE_HELP + ") and press a: bringup "
                "collects the facts from every node over ssh and names the node that differs."
            ),
            action=FACTS,
        ),
        Step(
            id="multinode.transport",
            title="NCCL uses InfiniBand/RoCE, not sockets, between nodes",
            why=(
                "NCCL falls back to TCP sockets (NET/Socket) when it cannot use the RDMA NICs, or binds "
                "to docker0 or lo; either cuts multi-node bandwidth by an order of magnitude "
                "(NCCL troubleshooting guide, docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
                "troubleshooting.html; Stas Bekman's ml-engineering network/debug guide, github.com/stas00/"
                "ml-engineering). Persist only system-configuration variables such as "
                "NCCL_SOCKET_IFNAME or NCCL_IB_HCA, in /etc/nccl.conf (NCCL env documentation)."
            ),
            instructions=(
                "Press a: bringup runs a job across the hostfile's nodes with NCCL_DEBUG=INFO and reads the "
                "`NET/IB : Using [...]` line of every node; no node may print NET/Socket when InfiniBand/RoCE "
                "NICs are present. (multinode.allreduce's run judges this too.)"
            ),
            action=TRANSPORT,
        ),
        Step(
            id="multinode.allreduce",
            title="Multi-node all-reduce reaches the network's floor",
            why=(
                "Expect about 48-49 GB/s of busbw per 400 Gb/s NDR NIC (NCCL developer in "
                "NVIDIA/nccl-tests#267); bringup's floor is 0.8 x the node's aggregate NIC bandwidth (derived from "
                "Stas Bekman's 'about 80% of advertised', github.com/stas00/ml-engineering; plan nics_per_node and "
                "nic_gbit_s). Test pairs of nodes to isolate a bad node (Meta GCM check-nccl pairwise mode), then "
                "all nodes."
            ),
            instructions=(
                "Press a (or `bringup validate nodes --hostfile FILE`): torchrun on every node over ssh, "
                "all-reduce sweep with #wrong checks; multinode_pairwise=true adds every pair of nodes. By hand: "
                "`mpirun -np <ranks> -H <hosts> all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1`, or the "
                "equivalent srun; judge the largest message sizes. With validate_device cpu (gloo) these steps "
                "test the launcher and the software path only: they are then cpu-only, not done."
            ),
            action=ALLREDUCE,
        ),
        Step(
            id="multinode.rdma_pairs",
            title="RDMA write bandwidth between node pairs (ib_write_bw)",
            why=(
                "An RDMA write between two nodes crosses both HCAs, their cables and the switches between them, which "
                "a one-node loopback does not; perftest's ib_write_bw runs a server on one node and a client on the "
                "other (perftest README, github.com/linux-rdma/perftest), and with 8 MiB messages and --report_gbits "
                "its average is comparable with the port's line rate (Azure HPC health checks, "
                "github.com/Azure/azurehpc-health-checks, check_ib_bw_gdr / check_ib_bw_non_gdr: ib_write_bw -s "
                "8388608 -F --report_gbits). NVIDIA's InfiniBand Cluster Bring-up Procedure validates the fabric's "
                "end-to-end bandwidth between nodes once it is configured (Performance Testing, "
                "docs.nvidia.com/networking/display/infinibandclusterbringupprocedure)."
            ),
            instructions=(
                "Set the hostfile (a asks for it in the TUI, or `bringup plan hostfile=/path`; " + HOSTFILE_HELP + "), install perftest on every "
                "node and press a: each node writes to the next of the hostfile (the last to the first), one pair at "
                "a time, on each node's fastest Active port (`bringup plan rdma_device=mlx5_0:1` to choose one). By "
                "hand: `ib_write_bw -d mlx5_0 -i 1 -s 8388608 -D 5 --report_gbits -F` on node B, then the same with "
                "B's address on node A; 0.8 x the slower port's rate or more passes."
            ),
            action=RDMA_PAIRS,
        ),
    ),
)
