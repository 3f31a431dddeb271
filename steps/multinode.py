"""Stage 9: validate several nodes together."""

from wizard.model import Stage, Step

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
                "(Meta GCM vbios_mismatch; AzNHC check_gpu_vbios)."
            ),
            instructions=(
                "Capture a bundle on each node (`bringup capture -o $(hostname).tar.gz`) and compare "
                "driver, kernel and GPU facts; confirm when they match."
            ),
            manual=True,
        ),
        Step(
            id="multinode.transport",
            title="NCCL uses InfiniBand/RoCE, not sockets, between nodes",
            why=(
                "NCCL falls back to TCP sockets (NET/Socket) when it cannot use the RDMA NICs, or binds "
                "to docker0 or lo; either cuts multi-node bandwidth by an order of magnitude "
                "(NCCL troubleshooting guide, docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
                "troubleshooting.html). Persist only system-configuration variables such as "
                "NCCL_SOCKET_IFNAME or NCCL_IB_HCA, in /etc/nccl.conf (NCCL env documentation)."
            ),
            instructions=(
                "Run a 2-node job with NCCL_DEBUG=INFO and find the `NET/IB : Using [...]` line on "
                "every rank; no rank may print NET/Socket when InfiniBand/RoCE NICs are present."
            ),
            manual=True,
        ),
        Step(
            id="multinode.allreduce",
            title="Multi-node all-reduce reaches the network's floor",
            why=(
                "Expect about 48-49 GB/s of busbw per 400 Gb/s NDR NIC (NCCL developer in "
                "NVIDIA/nccl-tests#267); test pairs of nodes first to isolate "
                "a bad node, then all nodes."
            ),
            instructions=(
                "`mpirun -np <ranks> -H <hosts> all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1`, or the "
                "equivalent srun; judge the largest message sizes."
            ),
            manual=True,
        ),
    ),
)
