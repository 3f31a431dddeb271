"""Stage 6: health. Are all the GPUs there, does the driver see them, is anything hot at idle."""

from __future__ import annotations

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.i18n import Msg, N_
from wizard.rules.baseline import judge_baseline
from wizard import dcgm_diag
from wizard.model import Stage, Step

DEFAULT_BASELINE_MINUTES = 10


def resolve_baseline(ctx: ActionContext) -> Resolved:
    minutes = ctx.plan.get("baseline_minutes", DEFAULT_BASELINE_MINUTES)
    try:
        seconds = max(1.0, float(minutes) * 60.0)
    except (TypeError, ValueError):
        seconds = DEFAULT_BASELINE_MINUTES * 60.0
    from wizard.rules.gpu_presence import no_nvidia_gpu

    note = (Msg("no NVIDIA GPU on the PCI bus (health.gpu_pci): this run samples only the host's load and "
                "temperatures for {minutes} min; no GPU baseline is recorded", minutes=f"{seconds / 60:g}")
            if no_nvidia_gpu(ctx.outputs) else "")  # walk 29 #8: said before a 10-minute run measures nothing
    return Resolved(ops=[{"argv": [ctx.python, "-m", "wizard.sample", "--seconds", f"{seconds:g}",
                                   "--interval", "5"]}], note=note)


STAGE = Stage(
    id="health",
    title="Health checks",
    short="Health",
    summary="Every GPU present and healthy: memory, temperature, links, NVLink, kernel log; the idle "
            "baseline; DCGM's quick diagnostic.",
    steps=(
        Step(
            id="health.gpu_pci",
            title="Every GPU is on the PCI bus",
            why=(
                "The PCI bus is the ground truth: a GPU that enumerates but that the driver cannot "
                "bring up still shows here, so counting here and in NVML tells 'missing hardware' "
                "from 'driver could not initialise it' (NVIDIA Health Validation "
                "gpu_count, GCM gpu_num)."
            ),
            instructions=("Without gpu_count in the plan answers (F2) nothing tells a missing GPU: record the expected "
                          "count there."),
            plan_keys=("gpu_count",),
            instructions_when_set="The GPUs found are counted against the plan's gpu_count; a missing GPU's fix is in "
                                  "its finding above.",
            boot_sensitive=True,
        ),
        Step(
            id="health.nvml",
            title="NVML initialises and sees every GPU",
            why=(
                "NVML is the library behind nvidia-smi and DCGM; fewer GPUs in NVML than on the bus "
                "means the driver failed to initialise one (NVIDIA Health Validation gpu_count; Meta GCM "
                "gpu_num)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.gpu_count",
            title="nvidia-smi lists every planned GPU and each one answers",
            why=(
                "A GPU that the driver lists but that answers ERR! or 'Unable to determine the device "
                "handle' cannot train; comparing with the plan's count finds one the driver lost "
                "(NVIDIA Health Validation gpu_count; Meta GCM gpu_num; NVIDIA Xid catalog)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.kernel_log",
            title="No GPU, PCIe or memory errors in this boot's kernel log",
            why=(
                "Xid, AER and EDAC lines are the driver's and the kernel's own reports of failing GPUs, "
                "links and DIMMs; only this boot's events count, and a past event can be acknowledged "
                "with a reason (x). Sources: NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors/); "
                "kernel PCIe AER and RAS documentation; Meta GCM xid and pcie-aer checks."
            ),
            instructions="Fix what a finding names, then check again. Acknowledge (x) only events you have dealt with.",
            boot_sensitive=True,
        ),
        Step(
            id="health.ecc",
            title="ECC is on and the GPU memory error counters are within limits",
            why=(
                "Without ECC a memory error silently corrupts training; uncorrectable SRAM errors, or "
                "counts above Azure's fleet limits (SRAM correctable > 10,000, DRAM > 20,000,000), mean "
                "the GPU should leave service (Azure HPC health checks check_gpu_ecc; NVML ECC documentation)."
            ),
        ),
        Step(
            id="health.row_remap",
            title="No pending or failed GPU memory row remapping",
            why=(
                "Ampere (A100) and newer data-centre GPUs repair bad HBM rows by remapping them; a pending remap takes "
                "effect only after a GPU reset, and a remapping failure means RMA (NVML "
                "nvmlDeviceGetRemappedRows; Meta GCM row_remap checks; NVIDIA Xid 63/64)."
            ),
        ),
        Step(
            id="health.thermal",
            title="GPUs are cool and nothing slows their clocks",
            why=(
                "Each GPU reports its own slowdown temperature; running close to it, or HW slowdown, "
                "thermal slowdown or a power brake in the clock-event reasons, costs throughput before "
                "anything fails (NVML clock-event reasons; Azure HPC health checks azure_gpu_clock_throttling; Meta GCM "
                "gpu_temperature)."
            ),
        ),
        Step(
            id="health.power",
            title="Power limit at its default",
            why=(
                "A power limit below the default (someone capped it) makes a GPU slower than its "
                "peers (NVIDIA Health Validation GPUPowerLimit; IBM Autopilot gpupower)."
            ),
        ),
        Step(
            id="health.vbios",
            title="Every GPU runs the same VBIOS",
            why=(
                "Mixed firmware across GPUs of one model hides faults and makes results differ "
                "between GPUs (Meta GCM vbios_mismatch; Azure HPC health checks check_gpu_vbios)."
            ),
        ),
        Step(
            id="health.pcie_width",
            title="Every GPU links at full PCIe width",
            why=(
                "A GPU at x8 moves half the data per second of x16 at any load, so a lower width than "
                "the link supports fails (Meta GCM check-pci; lspci(8) LnkCap/LnkSta)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.pcie_speed",
            title="GPU PCIe links reach their generation under load",
            why=(
                "GPUs lower their link speed at idle to save power, so an idle reading below the "
                "link's capability only asks to re-check under load (lspci(8); NVIDIA nvidia-smi "
                "documentation on PCIe link generation)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.pcie_errors",
            title="No PCIe errors or replays on GPU links",
            why=(
                "Uncorrectable AER errors on a GPU link come before GPUs fall off the bus; a growing "
                "replay counter shows a marginal link (Meta GCM pcie-aer; DCGM PCIe replay rate)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.pcie_acs",
            title="PCIe switches pass GPU peer traffic directly (ACS off on bare metal)",
            why=(
                "With ACS enabled on PCIe switch ports, GPU peer-to-peer traffic is forced up through "
                "the CPU root complex: slow, or it hangs (NCCL troubleshooting guide, ACS section, "
                "docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.bar1",
            title="GPU BARs are mapped",
            why=(
                "Large BARs need Above 4G decoding; GPUDirect RDMA reaches GPU memory through BAR1 "
                "(NVIDIA GPUDirect RDMA guide, 'PCI BAR sizes', docs.nvidia.com/cuda/gpudirect-rdma/)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="health.topology",
            title="GPU and NIC topology matches the design",
            why=(
                "Which GPUs share NVLink or a PCIe switch, and which NIC is near each GPU, decides "
                "collective bandwidth and GPUDirect RDMA (nvidia-smi topo -m; NVIDIA GPUDirect RDMA "
                "guide; Azure HPC health checks check_hw_topology)."
            ),
        ),
        Step(
            id="health.p2p",
            title="GPUs reach each other peer-to-peer",
            why=(
                "NCCL uses direct GPU-to-GPU copies where the topology allows them; a peer-to-peer "
                "status other than OK where P2P is expected makes it fall back to slower paths "
                "(nvidia-smi topo -p2p; NCCL troubleshooting guide)."
            ),
        ),
        Step(
            id="health.nvlink",
            title="Every NVLink the GPU model has is up",
            why=(
                "An inactive NVLink cuts all-reduce bandwidth for every job on the node; the expected "
                "count depends on the SKU (H100 SXM 18 links; H100 NVL 12 of 18 by design) "
                "(NVIDIA Health Validation nvlink_active; nvidia-smi nvlink -s)."
            ),
        ),
        Step(
            id="health.nvlink_errors",
            title="NVLink error counters do not grow",
            why=(
                "Replay, recovery and CRC errors that grow during a stage show a marginal NVLink; "
                "lifetime totals alone are not a fault (Meta GCM NVLink counters; DCGM NVLink fields)."
            ),
            instructions=(
                "The check reads one sample: lifetime totals, all zero passes and any non-zero count warns; it "
                "cannot see growth. To judge growth, save `nvidia-smi nvlink -e` before and after a load (gpu.validate, "
                "node.soak), put both in one file and run `bringup explain FILE`: a growing recovery count fails, "
                "growing replay or CRC counts warn."
            ),
        ),
        Step(
            id="health.host_memory",
            title="Host memory reports no uncorrectable errors",
            why=(
                "An uncorrectable DIMM error crashes jobs or corrupts data, and corrected errors come "
                "before failures (kernel EDAC sysfs, Documentation/admin-guide/ras.rst; rasdaemon; "
                "Meta GCM mce)."
            ),
        ),
        Step(
            id="health.processes",
            title="No other processes hold the GPUs before tests",
            why=(
                "A stray job on a GPU skews every measurement that follows and can make tests fail "
                "(Meta GCM running_procs; IBM Autopilot; DCGM diagnostics)."
            ),
        ),
        Step(
            id="health.idle_baseline",
            title="Record an idle temperature and power baseline",
            why=(
                "A GPU already close to its slowdown temperature at idle has an airflow problem that "
                "load will only make worse. bringup warns when an idle GPU is within 15 °C of its own "
                "slowdown threshold (a judgement default; NVSentinel and Meta GCM watch the same "
                "margin) or when NVML reports HW slowdown, thermal slowdown or a power brake at idle "
                "(NVML clock-event reasons; Azure HPC health checks warn on them). Without a GPU it measures nothing "
                "and says so."
            ),
            instructions=(
                "Leave the machine idle while it samples (default 10 minutes; change it with "
                "baseline_minutes in the plan answers, F2). The action keeps running if you close "
                "bringup or lose the SSH session."
            ),
            action=ActionSpec(
                id="idle_baseline",
                title="Sample temperatures, power and clocks at idle",
                description="Samples load, the hottest thermal zone and, through NVML, each GPU's "
                            "temperature, power, SM clock and clock-event reasons every 5 s.",
                resolve=resolve_baseline,
                changes_system=False,
                needs_root=False,
                judge=judge_baseline,
                loads_gpus=True,
                probes=("pci",),
            ),
        ),
        Step(
            id="health.bmc",
            title="The BMC's event log and sensors show no hardware fault",
            why=(
                "The BMC watches what the OS cannot: power supplies, fans, inlet air, and the memory and PCIe errors "
                "the firmware logs. Its System Event Log records each as a sensor event (IPMI v2.0 specification, "
                "section 31 and table 42-3 sensor types: Power Supply, Fan, Temperature, Memory, Critical "
                "Interrupt); a PSU failure, lost redundancy, an uncorrectable memory or PCI error, or a critical "
                "threshold since the build started means the node is not ready (ipmitool(1) 'sel elist', 'sdr "
                "elist'; Meta GCM health checks check_ipmitool and check_sensors, "
                "github.com/facebookresearch/gcm)."
            ),
            instructions=(
                "The check reads `ipmitool sel elist`, `ipmitool sdr elist` and `ipmitool sensor` (15 s each at "
                "most). Records from before the build started, and faults the BMC later deasserted, are shown as "
                "history. When ipmitool cannot reach the BMC (no ipmitool, no /dev/ipmi0, not root) the step stays pending "
                "with the fix for that case (install ipmitool; `modprobe ipmi_devintf ipmi_si`; run as root) while "
                "the firmware's SMBIOS declares a BMC (type 38); it is skipped only when SMBIOS declares none or the "
                "node is a virtual machine."
            ),
        ),
        Step(
            id="health.dcgm_l1",
            title="Run DCGM's quick diagnostic (level 1)",
            why=(
                "DCGM level 1 checks deployment (driver, persistence, permissions, blacklisted "
                "drivers), 'normally lasting seconds'; a skip is not a pass (NVIDIA dcgmi diag reference, "
                "docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html; DCGM "
                "diagnostics documentation)."
            ),
            instructions=(
                "Press a (or `bringup run health.dcgm_l1`): it runs `dcgmi diag -r 1 -j` (seconds), starting DCGM's "
                "host engine first when nvidia-dcgm is stopped (then it needs root), and judges every test on every "
                "GPU. Without DCGM, install it with step driver.dcgm; meanwhile the Health stage's own checks cover part "
                "of it (not DCGM's deployment checks: denylisted drivers, NVML and CUDA library loading, permissions)."
            ),
            action=ActionSpec(
                id="dcgm_l1",
                title="Run DCGM diagnostics level 1 (dcgmi diag -r 1 -j)",
                description="Runs `dcgmi diag -r 1 -j` (deployment checks, normally seconds: NVIDIA dcgmi diag "
                            "reference) with a progress line while it runs, then judges each test per GPU. Starts "
                            "nvidia-dcgm first when it is installed and stopped. Measures only.",
                resolve=dcgm_diag.resolve_l1,
                probes=("driver_services",),
                changes_system=False,
                needs_root=False, root_when=N_("to start nvidia-dcgm when it is installed and stopped"),
                judge=dcgm_diag.judge_l1,
                judges_exit=True,
                loads_gpus=True,
            ),
        ),
    ),
)
