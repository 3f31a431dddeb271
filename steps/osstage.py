"""Stage 4: the operating system: release and kernel against the driver branch, kernel headers,
memory, swap (with a backed-up /etc/fstab edit and its rollback), filesystems and their mount
options, time sync, tools, nouveau."""

from __future__ import annotations

import os
from pathlib import Path

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.distro import modules_unsupported, package_manager, packaged_kernel
from wizard.fileedit import backup_name
from wizard.i18n import Msg
from wizard.model import Stage, Step
from wizard.parsers.host import parse_os_release, parse_proc_swaps
from wizard.parsers.platform import SWAP_OFF_MARK, restore_swap, comment_out_swap

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
    conf = ctx.outputs.get("modprobe_d")
    if conf is not None and conf.ok and conf.files.get(NOUVEAU_CONF, "") is not None:  # read, or not there
        ops[0]["current"] = conf.files.get(NOUVEAU_CONF)  # the host's file as probed: the confirmation's diff is its
    if pm is None:
        return Resolved(manual=f"Write {NOUVEAU_CONF} with 'blacklist nouveau' and 'options nouveau "
                               f"modeset=0', rebuild your initramfs with your distribution's tool, and reboot.")
    ops.append({"argv": pm.initramfs()})
    return Resolved(ops=ops)


# ------------------------------------------------------------------ kernel headers


def resolve_headers(ctx: ActionContext) -> Resolved:
    """Install the headers of the running kernel with the distribution's package manager:
    ``linux-headers-<release>`` (Debian/Ubuntu), ``kernel-devel-<release>`` + ``kernel-headers``
    (RHEL family), as NVIDIA's pre-installation actions ask; other families: manual."""
    r = _os(ctx)
    k = ctx.outputs.get("kernel")
    rel = k.text.strip() if k is not None and k.ok else ""
    pm = package_manager(r) if r is not None else None
    if not rel or not all(c.isalnum() or c in "._+-~" for c in rel):
        return Resolved(manual="bringup could not read the running kernel release: install the kernel headers for "
                               "`uname -r` with your distribution's package manager.")
    if modules_unsupported(ctx.outputs.get("modules")):
        # walk 23: the check fails this kernel (it cannot load modules); headers, packaged or the build's, cannot help
        return Resolved(manual=Msg("kernel {rel} cannot load modules (no /proc/modules: it was built without loadable "
                                   "module support), so no headers package helps: the NVIDIA kernel modules cannot "
                                   "run on it. Boot a kernel with module support (a distribution kernel, or one built "
                                   "with CONFIG_MODULES=y) first; then this action installs its headers.", rel=rel))
    if pm is None or pm.family not in ("debian", "rhel"):
        name = r.pretty_name if r is not None else "this distribution"
        return Resolved(manual=f"Install the kernel headers/development package for kernel {rel} on {name} by hand "
                               "(SUSE: the kernel-<flavour>-devel package of that version).")
    distro = r.id if r is not None else ""
    if not packaged_kernel(distro, rel):
        # walk 18: a self-built or vendor kernel (6.18.44-fc-v1147 on Debian 12) was offered
        # `apt-get install linux-headers-6.18.44-fc-v1147`, which no archive has
        return Resolved(manual=Msg("Kernel {rel} is not one of {distro}'s packaged kernels (their releases end in the "
                                   "flavour: -amd64, -generic, -aws, ...), so no linux-headers-{rel} package exists for "
                                   "it. Boot a distribution kernel (and install its headers), or install the headers "
                                   "that came with this kernel's build.", rel=rel,
                                   distro=r.pretty_name if r is not None else distro))
    pkgs = headers_packages(pm.family, distro, rel, r.version_id if r is not None else "")
    argvs, env = pm.install(*pkgs)
    return Resolved(ops=[{"argv": a} for a in argvs], env=env)


def headers_packages(family: str, distro: str, release: str, version_id: str = "") -> list[str]:
    """Headers for the running kernel AND for the kernels updates will bring, so DKMS can rebuild
    the NVIDIA module after every kernel update (Debian nvidia-kernel-dkms / DKMS docs: headers must
    be installed for each kernel):

    * Ubuntu: ``linux-headers-<release>`` + the flavour metapackage ``linux-headers-<flavour>``
      (``-generic``, ``-aws`` ...; Ubuntu Server docs, NVIDIA drivers installation);
    * Debian: ``linux-headers-<release>`` + the architecture metapackage (``linux-headers-amd64``,
      ``-arm64``) taken from the release suffix;
    * RHEL family 9+: ``kernel-devel-matched`` (headers matched to every installed kernel) +
      ``kernel-headers``; 8: ``kernel-devel-<release>`` + ``kernel-headers`` (NVIDIA driver
      installation guide, pre-installation actions).
    """
    if family == "debian":
        pkgs = [f"linux-headers-{release}"]
        suffix = release.rsplit("-", 1)[-1] if "-" in release else ""
        if distro == "ubuntu" and suffix.isalpha():
            pkgs.append(f"linux-headers-{suffix}")
        elif distro == "debian" and suffix in ("amd64", "arm64", "cloud-amd64", "cloud-arm64", "rt-amd64"):
            pkgs.append(f"linux-headers-{suffix}")
        return pkgs
    major = version_id.split(".", 1)[0]
    if major.isdigit() and int(major) >= 9:
        return ["kernel-devel-matched", "kernel-headers"]
    return [f"kernel-devel-{release}", "kernel-headers"]


# ------------------------------------------------------------------ swap off, and its rollback

FSTAB = "/etc/fstab"
SWAP_BACKUP_SUBDIR = "swap-off"
"""Backups taken by the swap-off action go to ``<build>/backups/swap-off/``, so the rollback finds
the copy from before that edit even after the rollback itself has backed up the edited file."""


def swap_off_resolved(fstab_text: str, fstab_path: str, backup_dir: str) -> Resolved | None:
    """The swap-off operations for ``fstab_text`` read from ``fstab_path``: back up and atomically
    rewrite the file with every swap entry commented out, then ``swapoff -a``. None when the file
    has no active swap entry. Its description shows the diff from ``fstab_text`` (what a dry run
    prints and what the operator confirms)."""
    new, changed = comment_out_swap(fstab_text)
    if not changed:
        return None
    return Resolved(ops=[{"write": fstab_path, "content": new, "current": fstab_text,
                          "summary": f"comment out {len(changed)} swap entr{'y' if len(changed) == 1 else 'ies'}",
                          "backup_dir": os.path.join(backup_dir, SWAP_BACKUP_SUBDIR)},
                         {"argv": ["swapoff", "-a"]}])


def resolve_swap_off(ctx: ActionContext) -> Resolved:
    """Swap off, computed from this host's /etc/fstab (probe ``fstab``) and /proc/swaps."""
    f, s = ctx.outputs.get("fstab"), ctx.outputs.get("swaps")
    if f is None or not f.ok:
        why = f.error if f is not None else "not collected"
        return Resolved(manual=f"bringup could not read {FSTAB} ({why}): comment out its swap lines by hand, then run "
                               "`swapoff -a`.")
    if "\ufffd" in f.text:
        return Resolved(manual=f"{FSTAB} is not valid UTF-8, so bringup will not rewrite it: comment out its swap lines "
                               "by hand (keep a copy), then run `swapoff -a`.")
    r = swap_off_resolved(f.text, FSTAB, ctx.backup_dir)
    if r is not None:
        return r
    active = parse_proc_swaps(s.text).devices if s is not None and s.ok else []
    if active:
        names = ", ".join(d.filename for d in active[:4])
        return Resolved(manual=f"swap is on ({names}) but {FSTAB} has no swap entry: it comes from a systemd swap unit "
                               "or zram (zram-generator). Disable that unit (`systemctl mask` the .swap unit, or "
                               "remove the zram-generator configuration), then run `swapoff -a`.")
    return Resolved(manual=Msg("nothing to do: {fstab} has no active swap entry and no swap is in use.", fstab=FSTAB),
                    done=True)


def newest_swap_backup(backup_dir: str, fstab_path: str = FSTAB) -> Path | None:
    """The newest backup of ``fstab_path`` the swap-off action took (``<backup_dir>/swap-off``)."""
    d = Path(backup_dir) / SWAP_BACKUP_SUBDIR
    prefix = backup_name(Path(fstab_path), d).name.split(".", 1)[0] + "."
    try:
        found = sorted(p for p in d.iterdir() if p.name.startswith(prefix) and p.name.endswith(".bak"))
    except OSError:
        return None
    return found[-1] if found else None


def swap_rollback_resolved(fstab_text: str | None, backup_dir: str, fstab_path: str = FSTAB) -> Resolved:
    """Undo the swap step on the CURRENT ``fstab_path``: un-comment only the lines bringup marked
    (:data:`SWAP_OFF_MARK`), keep every other line, including edits made since (the file is backed
    up first), then ``swapon -a``. The diff is shown before anything runs."""
    if fstab_text is None:
        return Resolved(manual=f"bringup could not read {fstab_path}: remove the '{SWAP_OFF_MARK.strip()}' prefix "
                               f"from its swap lines by hand, then run `swapon -a`.")
    new, restored = restore_swap(fstab_text)
    if not restored:
        b = newest_swap_backup(backup_dir, fstab_path)
        hint: str = Msg(" (the copy from before the swap step is {b})", b=str(b)) if b is not None else ""
        return Resolved(manual=Msg("nothing to roll back: {fstab} has no line bringup commented out{hint}.",
                                   fstab=fstab_path, hint=hint), done=True)
    summary = (f"un-comment {len(restored)} swap entr{'y' if len(restored) == 1 else 'ies'} bringup commented out "
               f"(other lines unchanged)")
    return Resolved(ops=[{"write": fstab_path, "content": new, "current": fstab_text, "summary": summary,
                          "backup_dir": backup_dir},
                         {"argv": ["swapon", "-a"]}])


def resolve_swap_rollback(ctx: ActionContext) -> Resolved:
    f = ctx.outputs.get("fstab")
    text = f.text if f is not None and f.ok and "\ufffd" not in f.text else None
    return swap_rollback_resolved(text, ctx.backup_dir, FSTAB)


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
        ),
        Step(
            id="os.memory",
            title="Host memory: the plan's figure, else the 16 GiB floor",
            why=(
                "A DIMM that is not detected lowers capacity and leaves a memory channel empty; "
                "Azure's HPC health checks (check_hw_physmem) warn when memory is more than 5% below "
                "the expected size."
            ),
            instructions=("Held to the sizing's need (host_ram_min_gib, written by F3 on the sizing screen), else the plan's "
                          "host_ram_gib (F2), else a 16 GiB floor: record the expected size to compare."),
            plan_keys=("host_ram_min_gib", "host_ram_gib"),
            instructions_when_set=("Held to the sizing's need (host_ram_min_gib), else the plan's host_ram_gib: a "
                                   "shortfall's fix is in its finding above."),
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
        ),
        Step(
            id="os.driver_support",
            title="Distribution listed for the driver branch",
            why=(
                "NVIDIA lists, per driver branch, the distributions its packages support (Ubuntu "
                "22.04/24.04, RHEL/Rocky/Oracle/AlmaLinux 8-10, SLES 15 SP6+, Debian 12/13 and others). "
                "A 6.x kernel is not a problem in itself: breakage comes from driver/kernel "
                "combinations, so keep them paired through DKMS or signed precompiled modules. A "
                "combination bringup has no data for is 'check the release notes', never a failure. "
                "Sources: docs.nvidia.com/datacenter/tesla/driver-installation-guide/ (Linux System "
                "Requirements, per branch); CUDA 12.4/12.6 installation guides (validated kernels)."
            ),
            instructions=(
                "The branch is the plan's driver_branch (R580, the long-term support branch, until the "
                "driver stage picks one). If the check warns, use a listed release or confirm support "
                "in that branch's release notes."
            ),
        ),
        Step(
            id="os.kernel_headers",
            title="Kernel headers for the running kernel (DKMS)",
            why=(
                "The NVIDIA driver needs the headers and development files of the running kernel when it "
                "is installed and whenever it is rebuilt; DKMS rebuilds the module automatically on a "
                "kernel update only when the new kernel's headers are installed. Sources: NVIDIA driver "
                "installation guide, Pre-installation Actions (docs.nvidia.com/datacenter/tesla/"
                "driver-installation-guide/pre-installation-actions.html); Debian nvidia-open-kernel-dkms."
            ),
            instructions=("If the check warns, run the action: it installs the headers package for `uname -r`. If "
                          "it fails because the kernel cannot load modules, no headers help: boot a kernel with "
                          "module support first."),
            boot_sensitive=True,
            action=ActionSpec(
                id="install_kernel_headers",
                title="Install the running kernel's headers",
                description="Installs linux-headers-$(uname -r) (Debian/Ubuntu) or kernel-devel-$(uname -r) and "
                            "kernel-headers (RHEL family) non-interactively with the distribution's package manager.",
                resolve=resolve_headers,
                probes=("os_release", "kernel", "modules"),
                changes_system=True,
                needs_root=True,
            ),
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
            instructions=(
                "If the node joins Kubernetes, set scheduler = kubernetes in the plan answers (F2). To "
                "turn swap off, run the action: it backs up /etc/fstab, comments out its swap entries "
                "(atomic rewrite) and runs swapoff -a. The next step's action undoes it."
            ),
            action=ActionSpec(
                id="swap_off",
                title="Turn swap off (comment out swap in /etc/fstab, swapoff -a)",
                description="Backs up /etc/fstab, rewrites it atomically with every swap entry commented out, then "
                            "runs swapoff -a (swap pages move back to RAM: needs enough free memory). Undo with the "
                            "os.swap_rollback step.",
                resolve=resolve_swap_off,
                probes=("fstab", "swaps"),
                changes_system=True,
                needs_root=True,
                backs_up=(FSTAB,),
            ),
        ),
        Step(
            id="os.swap_rollback",
            title="Undo the swap edit (optional)",
            why=(
                "Every file bringup edits is backed up first (package installs are not undone): this restores /etc/fstab byte for byte from "
                "the backup the swap step took before its edit, and turns swap back on (swapon -a, "
                "which activates the swap entries of /etc/fstab: swapon(8), man7.org/linux/man-pages/"
                "man8/swapon.8.html). Swap is a policy choice on a standalone node (kubernetes.io/docs/"
                "concepts/cluster-administration/swap-memory-management)."
            ),
            instructions="Run the action only if you want swap back; otherwise leave this step as it is.",
            action=ActionSpec(
                id="swap_rollback",
                title="Restore /etc/fstab from the swap step's backup and swapon -a",
                description="Restores /etc/fstab from the newest backup taken by the swap step (the current file is "
                            "backed up too), atomically, then runs swapon -a.",
                resolve=resolve_swap_rollback,
                probes=("fstab",),
                changes_system=True,
                needs_root=True,
                backs_up=(FSTAB,),
            ),
        ),
        Step(
            id="os.filesystem",
            title="Root and data filesystems have room",
            why=(
                "ext4 and XFS are both fine for datasets and checkpoints (NVIDIA DGX OS user guide: DGX ships "
                "mdadm RAID-0 over NVMe at /raid); keep journal barriers on. A nearly full disk stops "
                "checkpoints; bringup warns above 90% used (its own judgement, as fleet health checks commonly do)."
            ),
            instructions="Record the data path (data_path in the plan answers, F2) to check it too.",
            plan_keys=("data_path",),
            instructions_when_set="The plan's data_path is checked too; a problem with it is in its finding above.",
        ),
        Step(
            id="os.mount_options",
            title="Journal barriers on for / and the data path",
            why=(
                "ext4 and XFS keep journal write barriers on by default. A mount option that turns them "
                "off is safe only when the storage has a non-volatile (battery or capacitor backed) "
                "write cache; otherwise a crash or power loss can corrupt the filesystem holding your "
                "checkpoints, so bringup never suggests one. Sources: kernel ext4 documentation "
                "(docs.kernel.org/admin-guide/ext4.html, 'barrier'); Oracle Linux XFS barriers doc."
            ),
            instructions="Record the data path (data_path in the plan answers, F2) to check it too.",
            plan_keys=("data_path",),
            instructions_when_set="The plan's data_path is checked too; a problem with it is in its finding above.",
        ),
        Step(
            id="os.time_sync",
            title="System clock synchronised (NTP)",
            why=(
                "Multi-node training is debugged by lining up NCCL, Xid and scheduler logs of several "
                "nodes; that needs every clock on one time source. timedatectl reports whether the kernel "
                "considers the clock synchronised; chrony's tracking shows the leap status and offset. "
                "Sources: timedatectl(1) (freedesktop.org/software/systemd/man/timedatectl.html); "
                "chronyc(1) 'tracking' (chrony-project.org/doc/4.5/chronyc.html)."
            ),
            instructions=(
                "If it warns: `timedatectl set-ntp true` (systemd-timesyncd) or install chrony, pointed "
                "at your site's NTP servers."
            ),
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
            boot_sensitive=True,
            action=ActionSpec(
                id="blacklist_nouveau",
                title="Blacklist nouveau and rebuild the initramfs",
                description=f"Writes {NOUVEAU_CONF} (backing up any existing file) and rebuilds the "
                            "initramfs; takes effect after a reboot.",
                resolve=resolve_nouveau,
                probes=("os_release", "modprobe_d"),
                changes_system=True,
                needs_root=True,
                backs_up=(NOUVEAU_CONF,),
            ),
        ),
    ),
)
