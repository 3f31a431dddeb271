"""Stage 4: the operating system: release and kernel, memory, swap, filesystems, tools, nouveau."""

from __future__ import annotations

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.checks import gpu as gc
from wizard.checks import host as hc
from steps._checks import only
from wizard.checks import hosttools as ht
from wizard.checks import tools as tc
from wizard.distro import package_manager
from wizard.model import Stage, Step
from wizard.parsers.host import parse_os_release

NOUVEAU_CONF = "/etc/modprobe.d/blacklist-nouveau.conf"
NOUVEAU_CONTENT = "# written by bringup: keep nouveau off the NVIDIA GPUs\nblacklist nouveau\noptions nouveau modeset=0\n"
"""The two lines of NVIDIA's CUDA installation guide, 'Disabling Nouveau'."""


def _os(ctx: ActionContext):
    o = ctx.outputs.get("os_release")
    return parse_os_release(o.text) if o is not None and o.ok else None


def resolve_tools(ctx: ActionContext) -> Resolved:
    r = _os(ctx)
    pm = package_manager(r) if r is not None else None
    if pm is None:
        name = r.pretty_name if r is not None else "this distribution"
        return Resolved(manual=f"bringup does not know the package manager of {name}: install the package "
                               f"that provides lspci (pciutils on most distributions) by hand.")
    argvs, env = pm.install("pciutils")
    return Resolved(ops=[{"argv": a} for a in argvs], env=env)


def resolve_nouveau(ctx: ActionContext) -> Resolved:
    r = _os(ctx)
    pm = package_manager(r) if r is not None else None
    ops: list[dict] = [{"write": NOUVEAU_CONF, "content": NOUVEAU_CONTENT, "backup_dir": ctx.backup_dir}]
    if pm is None:
        return Resolved(manual=f"Write {NOUVEAU_CONF} with 'blacklist nouveau' and 'options nouveau "
                               f"modeset=0', rebuild your initramfs with your distribution's tool, and reboot.")
    ops.append({"argv": pm.initramfs()})
    return Resolved(ops=ops)


STAGE = Stage(
    id="os",
    title="Operating system",
    short="OS",
    summary="The OS the driver will run on: release, memory, swap, disks, tools, nouveau.",
    steps=(
        Step(
            id="os.release",
            title="Identify the OS release and kernel",
            why=(
                "The driver branch must support this distribution and kernel. NVIDIA's driver "
                "installation guide lists Ubuntu 22.04/24.04, RHEL/Rocky/Oracle 8-10, SLES 15, Debian "
                "12/13 and others; NVIDIA validated Ubuntu 22.04 on kernels 6.2 and 6.5 and 24.04 on "
                "6.8, so a 6.x kernel is not a problem in itself. Source: docs.nvidia.com/datacenter/"
                "tesla/driver-installation-guide/; CUDA 12.4/12.6 installation guides."
            ),
            probes=("os_release", "kernel"),
            check=hc.os_release,
        ),
        Step(
            id="os.memory",
            title="Host memory matches the plan",
            why=(
                "A DIMM that is not detected lowers capacity and leaves a memory channel empty; "
                "Azure's node health checks (AzNHC check_hw_physmem) warn when memory is more than 5% below "
                "the expected size."
            ),
            instructions="Record the expected size as host_ram_gib in the plan answers (F2) to compare.",
            probes=("meminfo",),
            check=hc.memory,
        ),
        Step(
            id="os.memory_pressure",
            title="Host memory is not exhausted",
            why=(
                "Data loaders, pinned buffers and checkpoint loading need free host memory; when "
                "available memory is gone and swap is full, jobs stall or are killed by the OOM "
                "killer (kernel documentation of MemAvailable, docs.kernel.org/filesystems/proc.html)."
            ),
            instructions="Stop what holds the memory, or add memory before training.",
            probes=("free_b",),
            check=only(ht.memory_pressure, "os.memory_pressure"),
        ),
        Step(
            id="os.swap",
            title="Decide the swap policy",
            why=(
                "Swap is not a GPU-driver requirement; on a standalone training node a small swap is a "
                "policy choice. Kubernetes' kubelet refuses to start with swap on unless failSwapOn: "
                "false. Source: kubernetes.io/docs/concepts/cluster-administration/"
                "swap-memory-management."
            ),
            instructions="If the node joins Kubernetes, set scheduler = kubernetes in the plan answers (F2).",
            probes=("swaps",),
            check=hc.swap,
        ),
        Step(
            id="os.filesystem",
            title="Root and data filesystems have room",
            why=(
                "ext4 and XFS are both fine for datasets and checkpoints (NVIDIA DGX ships mdadm "
                "RAID-0 over NVMe at /raid); keep journal barriers on. A nearly full disk stops "
                "checkpoints; Verda's fleet health check warns above 90% used."
            ),
            instructions="Record the data path (data_path in the plan answers, F2) to check it too.",
            probes=("df", "data_path_df"),
            check=hc.filesystems,
        ),
        Step(
            id="os.tools",
            title="Install the PCI tools (lspci)",
            why=(
                "lspci decodes what sysfs only hints at: LnkCap/LnkSta, ACS control and AER status "
                "of every GPU and its upstream ports (lspci(8)). You need it to read a link or ACS "
                "problem yourself, and NVIDIA's NCCL troubleshooting steps use it (lspci -vvv | grep "
                "ACSCtl)."
            ),
            instructions="If the check fails, run the action: it installs pciutils with the "
                         "distribution's package manager.",
            probes=("lspci_version",),
            check=tc.lspci,
            action=ActionSpec(
                id="install_pciutils",
                title="Install pciutils",
                description="Installs the pciutils package non-interactively with the distribution's "
                            "package manager (refreshing package lists first on Debian/Ubuntu).",
                resolve=resolve_tools,
                probes=("os_release",),
                changes_system=True,
                needs_root=True,
            ),
        ),
        Step(
            id="os.nouveau",
            title="Keep the nouveau driver off the GPUs",
            why=(
                "The open-source nouveau driver binds NVIDIA GPUs first and blocks the NVIDIA driver. "
                "NVIDIA's installation guide: blacklist it, rebuild the initramfs, reboot. Source: "
                "docs.nvidia.com/cuda/cuda-installation-guide-linux/ ('Disabling Nouveau')."
            ),
            instructions="If the check fails, run the action, then reboot and re-check.",
            probes=("modules", "sys_module", "modprobe_d"),
            check=gc.nouveau,
            boot_sensitive=True,
            action=ActionSpec(
                id="blacklist_nouveau",
                title="Blacklist nouveau and rebuild the initramfs",
                description=f"Writes {NOUVEAU_CONF} (backing up any existing file) and rebuilds the "
                            "initramfs; takes effect after a reboot.",
                resolve=resolve_nouveau,
                probes=("os_release",),
                changes_system=True,
                needs_root=True,
                backs_up=(NOUVEAU_CONF,),
            ),
        ),
    ),
)
