"""Stage 8: validate all GPUs of the node together."""

from wizard import dcgm_diag
from wizard.actions import ActionSpec
from wizard.i18n import N_
from wizard.install.perftest import PROBES as PERFTEST_PROBES, resolve_rdma_loopback
from wizard.rules.fabric_node import judge_rdma_loopback
from wizard.rules.validate import judge_node, judge_soak, results_node, results_soak
from wizard.install import fio as fio_install
from wizard.model import Stage, Step
from wizard.rules.storage import judge_fio_log, results_fio
from wizard.validate import VALIDATE_PROBES, resolve_node, resolve_soak

NODE_VALIDATE = ActionSpec(
    id="validate_node",
    title="torchrun across all GPUs: rank sanity, all-reduce sweep, P2P matrix",
    description=(
        "Starts one rank per GPU with `<python> -m torch.distributed.run --standalone` (NCCL on GPUs, gloo on "
        "cpu; NCCL_DEBUG=INFO): every rank all-reduces ones and passes a monitored barrier, then an "
        "all-reduce sweep 8 B -> 4 GiB with correctness checks and busbw, and a send/recv matrix for every GPU "
        "pair. When nccl-tests' all_reduce_perf is installed it runs too (-c 1). Measures only."),
    resolve=resolve_node,
    probes=VALIDATE_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_node,
    results=results_node,
    command="node",
    loads_gpus=True,
)

SOAK = ActionSpec(
    id="soak",
    title="Soak: GEMM and all-reduce for the chosen minutes under NVML sampling",
    description=(
        "Alternates GEMM intervals on every GPU and (with more than one GPU) all-reduce intervals for "
        "soak_minutes (default 10; `bringup validate soak --minutes M`), sampling NVML and reading "
        "Xid/ECC/AER/remap counters before and after. Measures only."),
    resolve=resolve_soak,
    probes=VALIDATE_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_soak,
    results=results_soak,
    command="soak",
    loads_gpus=True,
)

RDMA_BANDWIDTH = ActionSpec(
    id="rdma_bandwidth",
    title="ib_write_bw loopback on the fastest Active HCA port",
    description=(
        "Runs perftest's ib_write_bw as server and client on one HCA port (8 MiB messages for 5 s, Gb/s), after "
        "printing the port's rate from sysfs, and judges the average against 0.8 x that rate. Measures only."),
    resolve=resolve_rdma_loopback,
    probes=PERFTEST_PROBES,
    changes_system=False,
    needs_root=False,
    judge=judge_rdma_loopback,
)

DCGM_L3 = ActionSpec(
    id="dcgm_l3",
    title="Run DCGM diagnostics level 3 (or 4) across the node (dcgmi diag -r 3 -j)",
    description=(
        "Runs `dcgmi diag -r 3 -j` (long hardware diagnostics, 'approximately 15 minutes'), or `-r 4` (extended, "
        "longer-running; DCGM >= 2.4) when the plan's dcgm_node_level is 4 or xlong (NVIDIA dcgmi diag "
        "reference), with a progress line while it runs, then judges each test per GPU. Starts nvidia-dcgm first "
        "when it is installed and stopped. Measures only."),
    resolve=dcgm_diag.resolve_node,
    probes=("driver_services",),
    changes_system=False,
    needs_root=False,
    root_when=N_("to start nvidia-dcgm when it is installed and stopped"),
    judge=dcgm_diag.judge_node,
    judges_exit=True,
    loads_gpus=True,
)

STAGE = Stage(
    id="node",
    title="Validate the node",
    short="Whole node",
    summary="All GPUs together: NCCL ranks, all-reduce bandwidth, peer-to-peer.",
    steps=(
        Step(
            id="node.validate",
            title="torchrun across all GPUs: rank sanity, all-reduce sweep, P2P matrix",
            why=(
                "Training is a collective: one slow or wrong GPU or link slows or corrupts every step. Every rank "
                "must report (Stas Bekman's torch-distributed-gpu-test.py idea), the all-reduce must be correct at "
                "every size with busbw at the largest size at the system's floor (nccl-tests PERFORMANCE.md: "
                "busbw = algbw x 2(n-1)/n; floors from Azure HPC health checks and NVIDIA/nccl-tests#212), and every GPU pair "
                "must copy at about the same speed (nvbandwidth, SuperBench's variance rule)."
            ),
            instructions=(
                "Press a (or `bringup validate node`). One rank per GPU (validate_nproc in the plan, or --nproc, "
                "overrides). Install nccl-tests (all_reduce_perf on PATH) to have its figures in the same run. A run "
                "on the CPU (gloo) tests the software path only and leaves the step cpu-only, not done."
            ),
            action=NODE_VALIDATE,
        ),
        Step(
            id="node.nccl_sanity",
            title="Every rank of an NCCL job starts and all-reduces",
            why=(
                "A torchrun job with one rank per GPU proves the driver, NCCL and the GPUs' "
                "interconnect work together before any bandwidth test (Stas Bekman's ml-engineering "
                "torch-distributed-gpu-test.py, github.com/stas00/ml-engineering)."
            ),
            instructions=(
                "node.validate measures this (rank sanity under torchrun with NCCL_DEBUG=INFO, each phase "
                "behind a monitored barrier that names a missing rank); confirm here once it passes. By hand: "
                "`NCCL_DEBUG=INFO torchrun --nproc_per_node=<GPUs> torch-distributed-gpu-test.py` "
                "(Stas Bekman's ml-engineering script); every rank must print OK within 5 minutes."
            ),
            manual=True,
            automated_by="node.validate",
        ),
        Step(
            id="node.allreduce",
            title="All-reduce bus bandwidth reaches the node's floor",
            why=(
                "nccl-tests all_reduce_perf is the standard measure: #wrong must be 0 at every size "
                "and large-message busbw must reach the SKU's floor. 8x H100/H200 on NVSwitch with NVLS "
                "peaks near 480 GB/s (about 370 GB/s with NCCL_ALGO=Ring), per an NCCL developer in "
                "NVIDIA/nccl-tests#212; Azure's fleet check uses 228 GB/s for 8x A100, while some "
                "vendors' A100 systems measure about 200 GB/s (NVIDIA/nccl-tests#149, #175), so take "
                "your vendor's figure where it has one. Judge the largest sizes (1-16 GB), not the "
                "'Avg bus bandwidth' line."
            ),
            instructions=(
                "node.validate runs a torch all-reduce sweep to 4 GiB and, when installed, `all_reduce_perf -b 8 "
                "-e 4G -f 2 -g <GPUs> -c 1`, and judges both; confirm here once it passes. The per-rank form: "
                "`all_reduce_perf -b 8 -e 16G -f 2 -g 1 -c 1` with one rank per GPU (mpirun or srun)."
            ),
            manual=True,
            automated_by="node.validate",
        ),
        Step(
            id="node.dcgm_l3",
            title="Run DCGM diagnostics level 3",
            why=(
                "Level 3 ('approximately 15 minutes') adds longer stress and interconnect tests across the node; "
                "level 4 (xlong, DCGM >= 2.4: memtest and longer-running tests) is the administrator's long run "
                "before sign-off (NVIDIA dcgmi diag reference; DCGM 2.4 Memtest Diagnostic page)."
            ),
            instructions=(
                "Press a (or `bringup run node.dcgm_l3`): it runs `dcgmi diag -r 3 -j` (about 15 minutes, progress "
                "shown), or level 4 when dcgm_node_level is 4 / xlong in the plan (F2; longer-running: the reference "
                "gives no figure), starting nvidia-dcgm first when it is stopped (then it needs root); all tests must pass. "
                "Without DCGM, install it with step driver.dcgm; node.validate and node.soak cover part of it "
                "meanwhile (no memtest, targeted power, targeted stress, memory bandwidth or DCGM PCIe test)."
            ),
            action=DCGM_L3,
        ),
        Step(
            id="node.soak",
            title="Soak the node for the chosen minutes: GEMM + all-reduce under NVML sampling",
            why=(
                "Faults that take heat or time to show (thermal slowdown, power brake, a GPU that falls off the "
                "bus, ECC errors) appear only under sustained load. Pass: no new Xid, ECC, AER or remap, no "
                "sustained HW thermal slowdown or power brake (NVML clock-event reasons; Azure HPC health checks), and the end "
                "within 5% of the start (SuperBench's variance rule)."
            ),
            instructions=(
                "Set soak_minutes in the plan (F2; default 10), then press a (or `bringup validate soak "
                "--minutes M`). It keeps running if the terminal or SSH session closes. For acceptance, soak "
                "for hours (DCGM diag -r 4, gpu-burn). A soak on the CPU judges no performance or GPU counters: "
                "the step is then cpu-only, not done."
            ),
            action=SOAK,
        ),
        Step(
            id="node.fabric",
            title="Every planned InfiniBand/RoCE NIC is up at its planned rate, GPUDirect RDMA ready",
            why=(
                "A multi-node job runs at the speed of its slowest NIC: every fabric port must be Active with its "
                "physical link up at the planned rate (Linux Documentation/ABI/stable/sysfs-class-infiniband; Azure "
                "HPC health checks check_ibstat), one MTU across the fabric, the HCA able to reach GPU memory "
                "(nvidia-peermem or DMA-BUF: NVIDIA GPU Operator 'GPUDirect RDMA'), each GPU near a NIC (nvidia-smi "
                "topo -m)."
            ),
            instructions=(
                "Set nics_per_node and nic_gbit_s in the plan (F2), then check (c). Read from sysfs, /proc/modules "
                "and nvidia-smi topo -m; `ibstat` shows the same ports. A node without RDMA devices and without a "
                "planned NIC is skipped."
            ),
        ),
        Step(
            id="node.nccl_env",
            title="NCCL's settings name interfaces and HCAs that exist; no debugging switch left on",
            why=(
                "NCCL reads its settings from the environment, then ~/.nccl.conf and /etc/nccl.conf; an "
                "NCCL_SOCKET_IFNAME or NCCL_IB_HCA that matches nothing here makes NCCL fall back or fail, and "
                "NCCL_P2P_DISABLE / NCCL_SHM_DISABLE / NCCL_IB_DISABLE or NCCL_DEBUG=INFO left from a debugging "
                "session cost bandwidth in production (NCCL documentation, 'Environment Variables' and "
                "'Troubleshooting', docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."
            ),
            instructions=(
                "Check (c). Read from the NCCL_* environment bringup runs in (run bringup from the job's environment "
                "to judge that), /etc/nccl.conf, $NCCL_CONF_FILE and ~/.nccl.conf of the invoking user."
            ),
        ),
        Step(
            id="node.rdma_bandwidth",
            title="RDMA write bandwidth of one HCA port (ib_write_bw loopback)",
            why=(
                "perftest's ib_write_bw with server and client on one port measures what the HCA, its driver and its "
                "PCIe link deliver; 0.8 x the port's line rate or more passes (perftest, github.com/linux-rdma/"
                "perftest; Azure HPC health checks check_ib_bw_*). It does not test the cable, the switch or another "
                "node: the multi-node stage does."
            ),
            instructions=(
                "Install perftest (package perftest), then press a (or `bringup run node.rdma_bandwidth`): it runs "
                "`ib_write_bw -d DEV -i PORT -s 8388608 -D 5 --report_gbits -F` as server and client to 127.0.0.1 on "
                "the fastest Active port. Between two nodes by hand: `ib_write_bw -d DEV ...` on one, the same with "
                "the first node's address on the other; `bringup explain` judges the output."
            ),
            action=RDMA_BANDWIDTH,
        ),
        Step(
            id="node.storage",
            title="The data path sits on a healthy, local, fast device",
            why=(
                "The data loader reads the training set from the data path for the whole run: a degraded md array "
                "rebuilds at the cost of its reads and has lost redundancy (Linux kernel 'RAID arrays', "
                "docs.kernel.org/admin-guide/md.html), an NVMe drive whose PCIe link trained below its capability "
                "is capped by the link (lspci LnkSta vs LnkCap), a rotational disk pays a seek for each random read "
                "(lsblk ROTA), and a network filesystem shares its servers with every node (nfs(5))."
            ),
            instructions=(
                "Set data_path in the plan (F2), then check (c). Read from /proc/self/mounts, df, `lsblk -J`, "
                "/proc/mdstat and /sys/class/nvme. The space and journal-barrier checks are the OS stage's "
                "(os.filesystem, os.mount_options)."
            ),
        ),
        Step(
            id="node.storage_tools",
            title="Install fio, the storage benchmark",
            why=(
                "fio is the standard tool to measure what a filesystem reads with O_DIRECT (fio HOWTO, "
                "fio.readthedocs.io); node.storage_read runs it."
            ),
            instructions="If the check fails, run the action: it installs the fio package with the distribution's "
                         "package manager.",
            action=ActionSpec(
                id="install_fio",
                title="Install fio",
                description="Installs the fio package non-interactively with the distribution's package manager "
                            "(refreshing package lists first on Debian/Ubuntu).",
                resolve=fio_install.resolve_install,
                probes=("os_release",),
                changes_system=True,
                needs_root=True,
            ),
        ),
        Step(
            id="node.storage_read",
            title="The data path reads as fast as the workload needs",
            why=(
                "A GPU waiting for its next batch is idle: the data path must read at least what the job consumes. "
                "fio with O_DIRECT measures the device, not the page cache (fio HOWTO, direct=1, "
                "https://fio.readthedocs.io/en/latest/fio_doc.html); a shuffling data "
                "loader reads at random offsets, so the random reads at its block size are judged against the plan's "
                "data_read_gb_s, or train_tokens_s x token_bytes (2 or 4 bytes per token as Megatron-LM's indexed "
                "dataset stores them)."
            ),
            instructions=(
                "Set data_path (and data_read_gb_s, or train_tokens_s and token_bytes) in the plan (F2), then press a "
                "(or `bringup run node.storage_read`): fio writes one test file (storage_test_mib, default 4096 MiB) "
                "as DATA_PATH/.bringup-fio-read-test, reads it sequentially (1 MiB) then at random (data_block_kib, "
                "default 128 KiB) for storage_test_s seconds each (default 30, iodepth 32, libaio), showing its progress, and "
                "removes it however the run ends (a file it could not remove is named in the log and the finding). "
                "`bringup explain` judges a pasted `fio --output-format=json`."
            ),
            action=ActionSpec(
                id="fio_read",
                title="fio: sequential and random reads of a test file under the data path",
                description="Writes, reads (fio, O_DIRECT) and removes one test file under the data path.",
                resolve=fio_install.resolve_read,
                probes=fio_install.PROBES,
                changes_system=True,  # it writes (then removes) a test file on the data path's filesystem
                needs_root=False,
                judge=judge_fio_log,
                judges_exit=True,  # fio's exit status is read from the progress wrapper's last line
                results=results_fio,
            ),
        ),
    ),
)
