"""Stage 3: BIOS / firmware settings. One step per setting, each with why (sourced), neutral menu
hints, and a check from the OS wherever the setting's effect is visible. Every BIOS step is
boot-sensitive: after a reboot (new boot id) bringup re-checks them and shows what changed."""

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
                "Resizable BAR at its default. Save, reboot, and check again: the check reads each "
                "GPU's BARs (lspci 'Region 1', nvidia-smi BAR1) and this boot's kernel log."
            ),
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
            boot_sensitive=True,
        ),
        Step(
            id="bios.pcie_acs",
            title="PCIe ACS off on the GPUs' switch ports (bare metal)",
            why=(
                "With Access Control Services on, PCIe switch ports send GPU peer-to-peer traffic up "
                "to the CPU root complex instead of across the switch: slow P2P or NCCL hangs. On bare "
                "metal disable ACS on the switch ports (a BIOS option, or setpci after every boot); "
                "`lspci -vvv` shows 'ACSCtl: SrcValid+' where it is on. VM hosts keep ACS (NVIDIA "
                "configures it for ATS there instead). Sources: NCCL troubleshooting guide 'PCI Access "
                "Control Services (ACS)' (docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
                "troubleshooting.html); NVIDIA/nccl#631, #2079."
            ),
            instructions=(
                "Look in the BIOS PCIe / chipset menu for ACS (sometimes 'PCIe ACS Control' or under "
                "IOMMU settings) and disable it for a bare-metal training node; without a BIOS option, "
                "the NCCL guide's `setpci -s <BDF> ECAP_ACS+0x6.w=0000` on each switch port after every "
                "boot does it. Needs `sudo lspci -vvv` to check (pciutils: the OS stage's os.tools installs it, or "
                "install it by hand now)."
            ),
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
            boot_sensitive=True,
        ),
        Step(
            id="bios.numa",
            title="NUMA nodes per socket as the BIOS sets them",
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
            plan_keys=("numa_nodes",),
            instructions_when_set=("Pick the NPS/SNC value for the cluster and set it in the BIOS (memory or CPU "
                                   "configuration menu); the NUMA nodes found are counted against the plan's numa_nodes."),
            boot_sensitive=True,
        ),
        Step(
            id="bios.memory_channels",
            title="A DIMM in every memory channel",
            why=(
                "Memory bandwidth scales with the number of populated channels: populate every channel "
                "(one DIMM per channel, identical DIMMs) before adding a second DIMM per channel. EPYC "
                "9004/9005 have 12 DDR5 channels per socket. The OS sees the slots in the firmware's "
                "SMBIOS tables (type 17: size, locator, speed). Sources: Dell 'BIOS settings for "
                "optimized performance on PowerEdge' (infohub.delltechnologies.com); SUSE EPYC 9004 "
                "guide (documentation.suse.com/sbp/server-linux/html/SBP-AMD-EPYC-4-SLES15SP4/); DMTF "
                "DSP0134 7.18."
            ),
            instructions=(
                "Follow the board manual's DIMM population table. The BIOS memory page (or the BMC) "
                "lists the slots too; `sudo dmidecode -t 17` shows each slot's size and locator."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="bios.power_profile",
            title="Choose the performance power profile; decide on C-states (Linux's CPU frequency policy is checked)",
            why=(
                "Vendors' performance profiles set CPU power management to maximum performance with "
                "turbo on; disabling C1E/C-states lowers latency at a power cost, while AMD's "
                "validated GPU table keeps Global C-state Control on Auto. It is a power/latency "
                "trade-off, not a correctness issue. Sources: Dell 'BIOS settings for optimized "
                "performance on PowerEdge' (infohub.delltechnologies.com); AMD MI100 BIOS table."
            ),
            instructions=(
                "Select the vendor's performance (or 'HPC'/'GPU') system profile, usually under System "
                "Profile or Power/Performance settings; leave C-states at Auto unless you have measured a "
                "benefit from disabling them. The check shows the idle states and frequency governor "
                "the kernel sees and warns when the frequency policy holds the CPUs back (a powersave governor "
                "that pins the lowest frequency, an energy_performance_preference of power); the BIOS profile "
                "itself is not readable from Linux."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="bios.pcie",
            title="Leave PCIe link speed at Auto/maximum",
            why=(
                "A slot forced to a lower generation halves host-GPU bandwidth per step down; the "
                "root port's LnkCtl2 'Target Link Speed' shows such a cap. GPUs lower their link speed "
                "at idle to save power, so the trained speed (LnkSta) is judged only under load. "
                "Sources: lspci(8) (man7.org/linux/man-pages/man8/lspci.8.html); practitioner reports of idle "
                "down-training (baaz.dev/blog/understanding-power-management-in-gpu-via-pcie)."
            ),
            instructions=(
                "In the PCIe configuration menu, set the link speed of GPU and NIC slots to Auto (or "
                "the highest generation the slot supports). Needs `sudo lspci -vvv` to check (pciutils: the OS "
                "stage's os.tools installs it, or install it by hand now)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="bios.sriov",
            title="SR-IOV only if this node needs virtual functions",
            why=(
                "SR-IOV splits a device into virtual functions (vGPU, NIC VFs for VMs or containers). "
                "Bare-metal training does not need it, and it is harmless if on. Source: NVIDIA "
                "Holoscan platform prerequisites (docs.nvidia.com/holoscan-for-media/.../prerequisites.html)."
            ),
            instructions=(
                "Enable SR-IOV (PCIe or chipset menu, sometimes per slot) only if this node will run VMs "
                "or NIC virtual functions; otherwise the vendor default is fine."
            ),
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
                "The check reads `mokutil --sb-state` (or the SecureBoot EFI variable). Keep it on and "
                "plan signed modules, or turn it off in the BIOS security / boot menu if your policy allows."
            ),
            boot_sensitive=True,
        ),
    ),
)
