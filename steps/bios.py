"""Stage 3: BIOS / firmware settings. Boot-sensitive: re-checked after a reboot."""

from wizard.checks import host as hc
from wizard.model import Stage, Step

STAGE = Stage(
    id="bios",
    title="BIOS settings",
    short="BIOS",
    summary="Firmware settings that decide whether GPUs enumerate and how fast they talk.",
    steps=(
        Step(
            id="bios.above_4g_decoding",
            title="Enable Above 4G decoding (64-bit MMIO)",
            why=(
                "Data-center GPUs map large BARs; without Above 4G decoding the firmware cannot place "
                "them, the server may fail POST with 'insufficient MMIO', or the driver fails with "
                "RmInitAdapter errors and nvidia-smi finds no devices. Leave Resizable BAR at the "
                "vendor default: no NVIDIA document says to disable it for NCCL. Sources: AMD GPU "
                "server BIOS table (rocm.docs.amd.com .../system-optimization/mi100.html, 'Above 4G "
                "Decoding: Enabled - GPU Large BAR support'); NVIDIA GPUDirect RDMA guide, 'PCI BAR "
                "sizes' (docs.nvidia.com/cuda/gpudirect-rdma/)."
            ),
            instructions=(
                "In the BIOS setup, usually under PCI/PCIe configuration or 'Advanced > PCI "
                "Subsystem': set Above 4G Decoding (or 64-bit MMIO / MMIO above 4G) to Enabled; keep "
                "Resizable BAR at its default. Save, reboot, and confirm. Once the driver is up, "
                "`nvidia-smi -q -d MEMORY` shows the BAR1 size."
            ),
            manual=True,
            boot_sensitive=True,
        ),
        Step(
            id="bios.iommu",
            title="IOMMU off or in passthrough for bare-metal training",
            why=(
                "nvidia-smi and CUDA do not need the IOMMU. On bare metal, IOMMU translation can route "
                "GPU peer-to-peer traffic through the root complex (slow, or hangs) and GPUDirect RDMA "
                "needs it off or 1:1 passthrough. Enable it only for VMs/passthrough. Sources: NCCL "
                "troubleshooting guide (PCI ACS section); NCCL developers in NVIDIA/nccl#631; NVIDIA "
                "GPUDirect RDMA guide 'IOMMUs'."
            ),
            instructions=(
                "Either disable VT-d (Intel) / AMD-Vi / IOMMU in the BIOS, or keep it and boot with "
                "iommu=pt on the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, then "
                "update-grub or grub2-mkconfig, and reboot). If the node will host VMs, record "
                "virtualization = true in the plan answers (F2)."
            ),
            probes=("cmdline", "iommu"),
            check=hc.iommu,
            boot_sensitive=True,
        ),
        Step(
            id="bios.cpu",
            title="Every CPU core online; SMT as you decided",
            why=(
                "A CPU core the kernel did not bring online (BIOS core limit, maxcpus=) silently cuts "
                "data-loading throughput; NVIDIA Health Validation fails a node whose online CPUs "
                "differ from the possible ones (NVIDIA Health Validation cpu_count). No NVIDIA rule fixes SMT; data "
                "loaders usually benefit from the extra threads, so keep the vendor default unless a "
                "benchmark says otherwise (AMD's MI100 BIOS table disables it, many HPC guides keep it; "
                "rocm.docs.amd.com .../system-optimization/mi100.html)."
            ),
            instructions="Nothing to do if the check passes; otherwise check the BIOS core settings.",
            probes=("cpuinfo", "cpu_topology"),
            check=hc.cpu,
            boot_sensitive=True,
        ),
        Step(
            id="bios.numa",
            title="NUMA nodes per socket set and uniform across the cluster",
            why=(
                "NPS (AMD EPYC) or SNC (Intel) decides how many NUMA nodes each socket shows; AMD "
                "validated NPS 1, 2 and 4 for GPU servers and no NVIDIA rule mandates one. Keep it the "
                "same on every node and pin data loaders to the GPU's NUMA node (`nvidia-smi topo -m` "
                "shows the affinity). Sources: Supermicro H14 BIOS manual (NPS, supermicro.com/support/"
                "manuals); AMD's GPU server BIOS table (rocm.docs.amd.com .../system-optimization/mi100.html)."
            ),
            instructions=(
                "Pick the NPS/SNC value for the cluster and set it in the BIOS (memory or CPU "
                "configuration menu). Record the expected count as numa_nodes in the plan answers (F2)."
            ),
            probes=("numa",),
            check=hc.numa,
            boot_sensitive=True,
        ),
        Step(
            id="bios.power_profile",
            title="Choose the performance power profile; decide on C-states",
            why=(
                "Vendors' performance profiles set CPU power management to maximum performance with "
                "turbo on; disabling C1E/C-states lowers latency at a power cost, while AMD's "
                "validated GPU table keeps Global C-state Control on Auto. It is a power/latency "
                "trade-off, not a correctness issue. Sources: Dell 'BIOS settings for optimized "
                "performance on PowerEdge' (infohub.delltechnologies.com); AMD MI100 BIOS table."
            ),
            instructions=(
                "Select the vendor's performance (or 'HPC'/'GPU') system profile; leave C-states at "
                "Auto unless you have measured a benefit from disabling them."
            ),
            manual=True,
            boot_sensitive=True,
        ),
        Step(
            id="bios.pcie",
            title="Leave PCIe link speed at Auto/maximum; SR-IOV only for VMs",
            why=(
                "A slot forced to a lower generation halves host-GPU bandwidth per step down. GPUs "
                "lower their link speed at idle to save power, so judge the link under load (`sudo "
                "lspci -vv` LnkSta, or `nvidia-smi -q` PCIe 'Current' while a test runs). SR-IOV is "
                "only needed for virtual functions (vGPU, NIC VFs). "
                "Sources: lspci(8); NVIDIA Holoscan platform prerequisites (SR-IOV)."
            ),
            instructions=(
                "In the PCIe configuration menu, set the link speed of GPU and NIC slots to Auto (or "
                "the highest generation); enable SR-IOV only if this node will run VMs or NIC VFs."
            ),
            manual=True,
            boot_sensitive=True,
        ),
        Step(
            id="bios.secure_boot",
            title="Decide Secure Boot before installing the driver",
            why=(
                "With Secure Boot on, the kernel loads only signed modules: use the distribution's "
                "signed precompiled driver packages (Ubuntu linux-modules-nvidia-<branch>-server-"
                "<kernel>) or enrol a MOK key for DKMS-built modules. Sources: NVIDIA GPU Operator "
                "'precompiled signed drivers' (docs.nvidia.com/datacenter/cloud-native/gpu-operator/"
                "install-precompiled-signed-drivers.html); Arch wiki DKMS (module signing)."
            ),
            instructions=(
                "Check the state with `mokutil --sb-state`. Keep it on and plan signed modules, or turn "
                "it off in the BIOS security menu if your policy allows."
            ),
            manual=True,
            boot_sensitive=True,
        ),
    ),
)
