"""OS stage rules: the OS facts training and the driver install depend on.

Every function is a rule ``(outputs, plan) -> list[Finding]`` (or an ``explain`` judge of one pasted
text), pure, naming the public source of its rule.

* Release: reported. Distribution vs driver branch: listed -> pass; the family listed but not this
  version -> warn; not in the table -> unknown "check the release notes", never a fail.
* Kernel headers for the running kernel: missing -> warn (DKMS cannot build).
* Swap: one rule (:func:`swap_finding`) for every view of it (/proc/swaps, ``free``, ``swapon``,
  /etc/fstab): swap off is required only for Kubernetes (kubelet's failSwapOn); on a standalone
  training node swap on is a policy choice (pass); swap in heavy use (:func:`swap_heavy`: half of
  it or 8 GiB swapped out) warns whatever the policy; full swap warns.
* Filesystems: / and the data path above 90 % used warn; a missing data path fails.
* Mount options of / and the data path: ``barrier=0``/``nobarrier`` -> warn (never suggested).
* Time sync: not synchronised -> warn (logs across nodes must line up).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from wizard.common import human_bytes
from wizard.distro import modules_unsupported
from wizard.facts import facts_of
from wizard.model import Finding, Verdict, measure
from wizard.parsers.host import mount_for, parse_df, parse_mounts, parse_os_release, parse_proc_swaps
from wizard.parsers.platform import (
    BARRIER_OFF_OPTIONS, barrier_off, branch_number, parse_chronyc_tracking, parse_fstab, parse_timedatectl,
    support_rows, version_matches,
)
from wizard.rules.common import Outputs, garbled, missing, missing_rerun
from wizard.i18n import Msg, SEMICOLON

# ------------------------------------------------------------------ sources and constants

SRC_OS = ("NVIDIA driver installation guide, Linux System Requirements (https://docs.nvidia.com/datacenter/tesla/"
          "driver-installation-guide/introduction.html and https://docs.nvidia.com/datacenter/tesla/"
          "driver-installation-guide/610/introduction.html); NVIDIA CUDA installation guide for Linux (validated kernels), "
          "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/")
SRC_HEADERS = ("NVIDIA driver installation guide, Pre-installation Actions: the kernel headers and development packages "
               "for the running kernel must be installed at install time and whenever the driver is rebuilt "
               "(https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/pre-installation-actions.html); Debian "
               "nvidia-open-kernel-dkms package description (DKMS rebuilds need headers; keep linux-headers-$(uname -r) "
               "installed), https://packages.debian.org/sid/amd64/nvidia-open-kernel-dkms")
SRC_BARRIER = ("barrier=0 / nobarrier disables journal write barriers; safe only with a non-volatile (battery/capacitor-"
               "backed) write cache, otherwise a crash or power loss can corrupt the filesystem: Linux kernel ext4 "
               "documentation, 'barrier' (https://docs.kernel.org/admin-guide/ext4.html); Oracle Linux administrator's "
               "guide, 'About Write Barriers' for XFS (https://docs.oracle.com/en/operating-systems/oracle-linux/6/admin/"
               "about-xfsbarriers.html)")
SRC_TIME = ("timedatectl(1) (NTPSynchronized: the kernel considers the clock synchronised), chronyc(1) 'tracking' (Leap "
            "status 'Not synchronised'); multi-node training correlates NCCL, Xid and scheduler logs across nodes by "
            "time, so every node must follow one time source")
SRC_DISK = ("bringup's judgement: WARN above 90% used, as fleet health checks commonly do (no vendor publishes a figure; "
            "a full disk stops checkpoints and logs; the operator may override); df(1)")
DISK_WARN_PCT = 90.0
"""Filesystem use above this percentage warns (bringup's judgement, as fleet health checks commonly do)."""
SRC_SWAP = ("Kubernetes documentation, Swap memory management (kubelet fails to start with swap on unless "
            "failSwapOn: false), https://kubernetes.io/docs/concepts/cluster-administration/swap-memory-management/; "
            "swapon(8) man page")
SWAP_FULL_PCT = 99.0
"""Swap at or above this percentage used counts as full (derived)."""
SWAP_HEAVY_PCT = 50.0
"""Swap at or above this percentage used is heavy use: WARN on a training node whatever the swap
policy (derived: see :data:`SRC_SWAP_USE`)."""
SWAP_HEAVY_BYTES = 8 * 1024 ** 3
"""So much swap in use (8 GiB), whatever the swap size, is heavy use too (derived, as above)."""
SRC_SWAP_USE = ("Linux kernel documentation, /proc/meminfo SwapTotal/SwapFree and vm.swappiness "
                "(https://docs.kernel.org/filesystems/proc.html, https://docs.kernel.org/admin-guide/sysctl/vm.html) and "
                "zram (https://docs.kernel.org/admin-guide/blockdev/zram.html: compressed swap in RAM, so a full zram device "
                "also holds RAM); swapon(8); bringup's judgement: pages swapped out of a training node come back at disk or "
                "decompression speed in data loaders and CPU-offloaded optimizer state, so heavy swap use means the host is "
                "short of RAM for the job (thresholds derived)")

DEFAULT_DRIVER_BRANCH = "580"
"""Branch judged against when the plan names none: R580, the long-term support branch (end of life
June 2028 in NVIDIA's support matrix, editions v615/v620, as read into assets/driver_branches.csv; an earlier
edition said August 2028, the newer NVIDIA date is kept)."""


# ------------------------------------------------------------------ OS: release


def os_release(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o, k = out.get("os_release"), out.get("kernel")
    if o is None or not o.ok:
        return [missing("os.release", o, "the OS release")]
    r = facts_of(out).parse_text("os_release", parse_os_release)
    assert r is not None
    if not r.id and not r.pretty_name:
        return [garbled("os.release", o, "/etc/os-release", o.lines())]
    kernel = k.text.strip() if k is not None and k.ok else "unknown"
    # the raw lines, as the file has them
    ev = [f"{o.source}:{ln}" for ln in o.lines() if ln.split("=", 1)[0] in ("PRETTY_NAME", "ID", "ID_LIKE", "VERSION_ID")]
    if k is not None:
        ev.append(f"{k.source}:{kernel}")
    return [Finding("os.release", Verdict.PASS, Msg("{pretty_name}, kernel {kernel}", pretty_name=r.pretty_name, kernel=kernel), "host", tuple(ev),
                    "", "os-release(5); /proc/sys/kernel/osrelease")]


# ------------------------------------------------------------------ OS: distribution vs driver branch


def os_support(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.driver_support: is this distribution listed for the chosen driver branch
    (``plan["driver_branch"]``, default :data:`DEFAULT_DRIVER_BRANCH`) in ``assets/os_support.csv``?
    Probes ``os_release`` and ``kernel``. Listed -> pass (with the kernels NVIDIA validated, when
    known); the distribution listed but not this version -> warn; not in the table -> unknown
    ("check the release notes"): never a fail."""
    fid = "os.driver_support"
    o, k = out.get("os_release"), out.get("kernel")
    if o is None or not o.ok:
        return [missing_rerun(fid, o, "the OS release", source=SRC_OS)]
    r = facts_of(out).parse_text("os_release", parse_os_release)
    assert r is not None
    if not r.id:
        return [garbled(fid, o, "/etc/os-release", o.lines()[:10], source=SRC_OS)]
    kernel = k.text.strip() if k is not None and k.ok else ""
    chosen = branch_number(plan.get("driver_branch") if isinstance(plan, Mapping) else None)
    branch = chosen or DEFAULT_DRIVER_BRANCH
    bnote = (f"R{branch}" if chosen else
             Msg("R{branch} (no branch in the plan yet: the long-term support default)", branch=branch))
    ev = [f"{o.source}:{ln}" for ln in o.lines() if ln.split("=", 1)[0] in ("PRETTY_NAME", "ID", "ID_LIKE", "VERSION_ID")]
    if kernel and k is not None:
        ev.append(f"{k.source}:{kernel}")
    rows = support_rows()
    listed = [x for x in rows if x.kind == "listed" and x.branch == branch]
    name = r.pretty_name or f"{r.id} {r.version_id}"
    notes_url = "docs.nvidia.com/datacenter/tesla/"
    if not listed:
        return [Finding(fid, Verdict.UNKNOWN, Msg("{name}, kernel {a1}: bringup has no support table for {bnote}: check that branch's "
                                                  "release notes", name=name, a1=kernel or '?', bnote=bnote), "host", tuple(ev),
                        Msg("Read the supported distributions of R{branch} in its release notes and driver "
                            "installation guide at {notes_url}.", branch=branch, notes_url=notes_url), SRC_OS)]
    match = [x for x in listed if x.distro_id == r.id and version_matches(x.version, r.version_id, x.min_version)]
    if match:
        m = match[0]
        vk = [x for x in rows if x.kind == "validated_kernel" and x.distro_id == r.id
              and version_matches(x.version, r.version_id)]
        kn: str = ""
        if vk:
            kn = Msg("; NVIDIA validated this release on kernel {kernels}",
                     kernels=", ".join(f"{x.kernel} ({x.name})" for x in vk[:4]))
        caveat: str = (Msg(" [{note}]", note=m.verification)
                       if m.verification and m.verification != "read from the table" else "")
        return [Finding(fid, Verdict.PASS, Msg("{name} is listed for {bnote} as {name2}; kernel {a1}{kn}. Keep driver and kernel paired: "
                                               "DKMS (which needs the kernel's headers: os.kernel_headers) or signed precompiled modules for each kernel{caveat}", name=name, bnote=bnote, name2=m.name, a1=kernel or '?', kn=kn, caveat=caveat), "host", tuple(ev), "", m.source)]
    family = sorted({x.name for x in listed if x.distro_id == r.id})
    if family:
        return [Finding(fid, Verdict.WARN, Msg("{name} is not in NVIDIA's list for {bnote}, which names {family}: check the branch's "
                                               "release notes before installing", name=name, bnote=bnote, family=', '.join(family)), "host", tuple(ev),
                        Msg("Use a listed release of this distribution, or confirm support in the R{branch} release "
                            "notes at {notes_url}.", branch=branch, notes_url=notes_url), listed[0].source)]
    return [Finding(fid, Verdict.UNKNOWN, Msg("{name} (ID={id}) is not in bringup's table for {bnote}: check the branch's release notes", name=name, id=r.id, bnote=bnote), "host", tuple(ev),
                    Msg("Confirm that R{branch} supports this distribution and kernel in its release notes and "
                        "driver installation guide at {notes_url}.", branch=branch, notes_url=notes_url), SRC_OS)]


# ------------------------------------------------------------------ OS: kernel headers


def kernel_headers(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.kernel_headers: the build tree of the running kernel (``kernel`` release,
    ``kernel_build`` glob of /lib/modules/*/build and its Makefile), which DKMS needs to build the
    NVIDIA module. Missing -> warn."""
    fid = "os.kernel_headers"
    k, g = out.get("kernel"), out.get("kernel_build")
    if k is None or not k.ok or not k.text.strip():
        return [missing_rerun(fid, k, "the running kernel release", source=SRC_HEADERS)]
    rel = k.text.strip()
    if g is None or not g.ok:
        return [missing_rerun(fid, g, f"whether headers for kernel {rel} are installed", source=SRC_HEADERS)]
    mo = out.get("modules")
    if mo is not None and modules_unsupported(mo):
        # walk 18: a kernel built without loadable-module support has no /proc/modules (proc(5)): no headers package
        # helps, the NVIDIA kernel modules cannot be loaded into it at all
        return [Finding(fid, Verdict.FAIL, Msg("kernel {rel} cannot load modules (no /proc/modules: it was built without "
                                               "loadable module support), so the NVIDIA kernel modules cannot run on it",
                                               rel=rel), "host", (f"{k.source}:{rel}", f"{mo.source}: {mo.error}"),
                        "Boot a distribution kernel (or one built with CONFIG_MODULES=y), then install its headers.",
                        SRC_HEADERS + "; proc(5), /proc/modules (https://man7.org/linux/man-pages/man5/proc_modules.5.html)")]
    build = f"/lib/modules/{rel}/build"
    others = sorted({p.split("/")[3] for p in g.files if p.startswith("/lib/modules/") and p.count("/") >= 4
                     and p.split("/")[3] != rel})
    ev = [f"{k.source}:{rel}"] + [f"ls -d {p}" for p in sorted(g.files)][:6]
    if f"{build}/Makefile" in g.files:
        return [Finding(fid, Verdict.PASS, Msg("headers for the running kernel {rel} are installed ({build})", rel=rel, build=build), "host",
                        tuple(ev), "", SRC_HEADERS)]
    remedy = (Msg("Install the headers for the running kernel: Debian/Ubuntu `apt-get install "
                  "linux-headers-{rel}`, RHEL family `dnf install kernel-devel-{rel} kernel-headers` (the OS "
                  "stage's action does this); if no package exists for this kernel, boot a distribution "
                  "kernel that has one.", rel=rel))
    if build in g.files:
        return [Finding(fid, Verdict.WARN, Msg("{build} exists but holds no kernel build tree (no Makefile): the headers package for "
                                               "{rel} is missing or removed, so DKMS cannot build the NVIDIA module", build=build, rel=rel), "host",
                        tuple(ev), remedy, SRC_HEADERS)]
    return [Finding(fid, Verdict.WARN, (Msg('no headers for the running kernel {rel} (no {build})', rel=rel, build=build) + (Msg('; other kernels have them: {others}', others=', '.join(others[:4])) if others else '') + Msg(': DKMS cannot build the NVIDIA module for this kernel')), "host",
                    tuple(ev) + ((f"ls -d {build}: no such file or directory",) if not g.files else ()), remedy,
                    SRC_HEADERS)]


# ------------------------------------------------------------------ OS: swap


def swap_heavy(used_bytes: int | float | None, total_bytes: int | float | None) -> bool:
    """Heavy swap use: at least :data:`SWAP_HEAVY_PCT` of the swap, or :data:`SWAP_HEAVY_BYTES`."""
    if not used_bytes or used_bytes <= 0:
        return False
    if used_bytes >= SWAP_HEAVY_BYTES:
        return True
    return bool(total_bytes) and 100.0 * used_bytes / float(total_bytes or 1) >= SWAP_HEAVY_PCT


def swap_finding(what: str, evidence: Sequence[str], plan: Mapping[str, Any], *, on: bool = True,
                 full: bool = False, used_bytes: int | float | None = None,
                 total_bytes: int | float | None = None) -> Finding:
    """The one swap rule (``os.swap``), whichever output showed the swap (/proc/swaps, ``free``,
    ``swapon --show``, /etc/fstab): ``what`` says what was seen ("swap is on (2.0 GiB)").

    Swap off: pass. Swap on: warn when the plan says Kubernetes (kubelet refuses to start with swap
    on unless failSwapOn: false), warn when it is full (``full``: the host ran out of RAM), else pass:
    a policy choice on a standalone training node."""
    ev = tuple(evidence)
    if not on:
        return Finding("os.swap", Verdict.PASS, what, "host", ev, "", SRC_SWAP)
    if swap_heavy(used_bytes, total_bytes):
        pct = Msg(" ({pct}% of it)", pct=f"{100.0 * float(used_bytes or 0) / float(total_bytes):.0f}") if total_bytes else ""
        return Finding("os.swap", Verdict.WARN,
                       (Msg('{what}: swap in heavy use, {human_bytes} swapped out{pct}: the host is short of RAM (at least ', what=what, human_bytes=human_bytes(int(used_bytes or 0)), pct=pct) + (Msg('{swap_heavy_pct:g}% or ', swap_heavy_pct=SWAP_HEAVY_PCT) if total_bytes else '') + Msg('{human_bytes} in use is heavy; derived)', human_bytes=human_bytes(SWAP_HEAVY_BYTES)) + (Msg('; this node is also planned for Kubernetes, whose kubelet refuses to start with swap on') if is_kubernetes(plan) else '')), "host", ev,
                       "Find what holds the memory (`free -h`, `ps aux --sort=-rss | head`, containers, tmpfs/shm in "
                       "`df -h`) and stop it, or lower data-loader workers, pinned buffers and CPU offload; if the job "
                       "itself needs it, the host needs more RAM. `swapoff -a` (when RAM can take the pages back) empties "
                       "swap; zram (`zramctl`) uses RAM itself.", f"{SRC_SWAP_USE}; {SRC_SWAP}")
    if is_kubernetes(plan):
        return Finding("os.swap", Verdict.WARN, Msg("{what}; this node is planned for Kubernetes, whose kubelet refuses to start with swap on", what=what), "host", ev,
                       "Turn swap off (the OS stage's swap action comments the swap entries of /etc/fstab out with a "
                       "backup and runs swapoff -a), or set failSwapOn: false in the kubelet configuration.", SRC_SWAP)
    if full:
        return Finding("os.swap", Verdict.WARN, Msg("{what}: swap is full, the host ran out of RAM", what=what), "host", ev,
                       "See what holds the memory (`free -h`, `ps aux --sort=-rss | head`).", SRC_SWAP)
    return Finding("os.swap", Verdict.PASS, Msg("{what}: a policy choice on a standalone training node", what=what), "host", ev, "",
                   SRC_SWAP)


def is_kubernetes(plan: Mapping[str, Any]) -> bool:
    """Whether the plan says this node runs under Kubernetes (``plan["scheduler"]``)."""
    return isinstance(plan, Mapping) and plan.get("scheduler") == "kubernetes"


def swap(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.swap from ``swaps`` (/proc/swaps), judged by :func:`swap_finding`."""
    o = out.get("swaps")
    if o is None or not o.ok:
        return [missing("os.swap", o, "the swap state")]
    s = facts_of(out).parse_text("swaps", parse_proc_swaps)
    assert s is not None
    if s.problems or not s.header_seen:
        return [garbled("os.swap", o, "/proc/swaps", s.problems or o.lines()[:5])]
    return [_swaps_finding(s, o.source, plan)]


def _swaps_finding(s: Any, source: str, plan: Mapping[str, Any]) -> Finding:
    if not s.devices:
        return swap_finding(Msg("swap is off"), (source + ": no swap devices",), plan, on=False)
    used = sum(d.used_kib for d in s.devices)
    full = bool(s.total_kib) and 100.0 * used / s.total_kib >= SWAP_FULL_PCT
    names = ", ".join(f"{d.filename} {d.type}" for d in s.devices[:4])
    return swap_finding(Msg("swap is on ({total}: {names}; {used} used)", total=human_bytes(s.total_kib * 1024), names=names,
                            used=human_bytes(used * 1024)),
                        [source] + [d.line for d in s.devices], plan, full=full, used_bytes=used * 1024,
                        total_bytes=s.total_kib * 1024)


def judge_proc_swaps(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for a pasted /proc/swaps (or ``swapon -s``, which prints the same table): ``os.swap``."""
    s = parse_proc_swaps(text)
    if not s.header_seen or (s.problems and not s.devices):
        return [Finding("os.swap", Verdict.UNKNOWN, "could not read /proc/swaps", "host",
                        tuple(s.problems[:5] or text.splitlines()[:5]),
                        "Give bringup the whole output of `cat /proc/swaps`.", SRC_SWAP)]
    return [_swaps_finding(s, "/proc/swaps", exp)]


# ------------------------------------------------------------------ OS: filesystems


def _usage(fid: str, label: str, subject: str, r: Any) -> Finding:
    """One filesystem's use: pass, warn above :data:`DISK_WARN_PCT`, fail when it is full (100 % or nothing
    available: writes, checkpoints and logs fail). Sizes shown in GB (10^9 bytes)."""
    if r.fstype:
        desc = Msg('{label}: {fstype}, {value:.0f} GB, {used_pct:.0f}% used', label=label, fstype=r.fstype,
                   value=r.size_bytes / 1000000000.0, used_pct=r.used_pct)
    else:
        desc = Msg('{label}: {value:.0f} GB, {used_pct:.0f}% used', label=label, value=r.size_bytes / 1000000000.0,
                   used_pct=r.used_pct)
    um = measure(r.used_pct, DISK_WARN_PCT, "%", "at_most", f"{label} space used")
    if r.size_bytes > 0 and (r.used_pct >= 100 or r.avail_bytes == 0):
        return Finding(fid, Verdict.FAIL, desc + Msg(': full'), subject, (r.line,),
                       Msg("Free space on {label} now (old checkpoints, logs, caches: `du -xsh {glob} | sort -h`): a "
                           "full filesystem fails every write, checkpoints and logs included.", label=r.mountpoint,
                           glob=r.mountpoint.rstrip("/") + "/*"),
                       SRC_DISK, measured=um)
    if r.used_pct > DISK_WARN_PCT:
        return Finding(fid, Verdict.WARN, (desc + Msg(' (above {disk_warn_pct:.0f}%)', disk_warn_pct=DISK_WARN_PCT)), subject, (r.line,),
                       "Free space before training: checkpoints and logs fill disks fast, and a full root "
                       "filesystem stops the node.", SRC_DISK, measured=um)
    return Finding(fid, Verdict.PASS, desc, subject, (r.line,), "", SRC_DISK, measured=um)


SHM_MIN_BYTES = 1 << 30
"""A /dev/shm smaller than 1 GiB warns: Docker's default is 64 MB, and the NCCL troubleshooting guide's example
raises it to 1 GiB (``--shm-size=1g``); DataLoader workers and NCCL's shared-memory transport live in it."""


def shm_finding(r: Any) -> Finding:
    """``os.shm``: the /dev/shm row of df. Smaller than :data:`SHM_MIN_BYTES`, more than :data:`DISK_WARN_PCT`
    used, or less than :data:`SHM_MIN_BYTES` left -> warn (DataLoader workers die with "bus error"/SIGBUS, NCCL fails to extend its /dev/shm segment);
    otherwise pass. Sizes in MiB/GiB (powers of 1024, as df -h prints them). Source: :data:`SRC_SHM`."""
    from wizard.rules.launcher import SHM_FIX, SRC_SHM

    size = Msg('{value:.0f} MiB', value=r.size_bytes / 2**20) if r.size_bytes < 2**30 else Msg(
        '{value:.1f} GiB', value=r.size_bytes / 2**30)
    if r.size_bytes < SHM_MIN_BYTES:
        return Finding("os.shm", Verdict.WARN,
                       Msg("/dev/shm is {size}: too small for DataLoader workers and NCCL's shared-memory transport "
                           "(they fail with a bus error or 'failed to extend /dev/shm')", size=size),
                       "/dev/shm", (r.line,), SHM_FIX, SRC_SHM)
    if r.used_pct > DISK_WARN_PCT or r.avail_bytes < SHM_MIN_BYTES:
        left = Msg('{value:.0f} MiB', value=r.avail_bytes / 2**20) if r.avail_bytes < 2**30 else Msg(
            '{value:.1f} GiB', value=r.avail_bytes / 2**30)
        return Finding("os.shm", Verdict.WARN,
                       Msg("/dev/shm is {used_pct:.0f}% used ({size}, {left} left): what is left may not hold another "
                           "job's shared memory (DataLoader workers, NCCL)", used_pct=r.used_pct, size=size, left=left),
                       "/dev/shm", (r.line,),
                       Msg("Find what fills it (`ls -la /dev/shm`: stale segments of killed jobs, often nccl-* or "
                           "torch_*) and remove what no process holds; or give the container a larger --shm-size."),
                       SRC_SHM)
    return Finding("os.shm", Verdict.PASS, Msg("/dev/shm is {size}, {used_pct:.0f}% used", size=size,
                                               used_pct=r.used_pct), "/dev/shm", (r.line,), "", SRC_SHM)


_DF_SKIP_TYPES = frozenset({"squashfs", "iso9660", "devtmpfs", "efivarfs", "proc", "sysfs", "cgroup", "cgroup2"})


def judge_df_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for pasted ``df`` (``-h``, ``-T``, ``-P``, 1K-blocks): ``os.filesystem`` for ``/``, the plan's
    data path and any other disk-backed filesystem that is nearly full (read-only images, snaps and memory-backed
    ones left out: they are full by design or hold no data), ``os.shm`` for /dev/shm. Never raises."""
    rows, problems = parse_df(text)
    if not rows:
        return [Finding("os.filesystem", Verdict.UNKNOWN, "could not read any df row", "host",
                        tuple(problems[:5] or text.splitlines()[:5]), "Give bringup the whole output of `df -hT`.",
                        SRC_DISK)]
    if rows[0].inodes:
        return _inode_use(rows)
    findings: list[Finding] = []
    data_path = exp.get("data_path") if isinstance(exp.get("data_path"), str) else None
    data_mp = mount_for(data_path, [r.mountpoint for r in rows]) if data_path else None
    seen: set[tuple[int, int, int]] = set()
    for r in rows:
        if r.mountpoint == "/dev/shm":  # judged on its own even when another tmpfs has the same figures (/dev)
            findings.append(shm_finding(r))
            continue
        same = (r.size_bytes, r.used_bytes, r.avail_bytes)
        if same in seen and r.mountpoint not in ("/", data_mp):
            continue  # the same filesystem again (a bind mount such as a container's /etc/hosts): said once
        seen.add(same)
        memory = r.fstype in ("tmpfs", "ramfs") or (not r.fstype and r.source in ("tmpfs", "shm", "none", "udev"))
        image = (r.fstype in _DF_SKIP_TYPES or r.source.startswith("/dev/loop") or r.mountpoint.startswith("/snap/")
                 or r.source in ("devtmpfs", "efivarfs"))
        if r.mountpoint == "/" or (data_mp and r.mountpoint == data_mp and data_mp != "/"):
            label = r.mountpoint if not data_path or r.mountpoint != data_mp or data_path == data_mp else (
                f"{data_path} (on {r.mountpoint})")
            findings.append(_usage("os.filesystem", label, r.mountpoint, r))
        elif not memory and not image and r.size_bytes > 0:
            f = _usage("os.filesystem", r.mountpoint, r.mountpoint, r)
            if f.verdict is not Verdict.PASS:
                findings.append(f)
    if not findings:
        n = len(rows)
        findings.append(Finding("os.filesystem", Verdict.PASS,
                                Msg("{n} filesystems, none above {disk_warn_pct:.0f}% used (no / row in this output)",
                                    n=n, disk_warn_pct=DISK_WARN_PCT), "host", tuple(r.line for r in rows[:5]), "",
                                SRC_DISK))
    return findings


def _inode_use(rows: list[Any]) -> list[Finding]:
    """``df -i``: a disk-backed filesystem with every inode used fails (no file can be created there, whatever the
    free space: creat(2) fails with ENOSPC), above :data:`DISK_WARN_PCT` warns; else pass."""
    out = []
    for r in rows:
        if r.fstype in _DF_SKIP_TYPES or r.source in ("tmpfs", "devtmpfs", "shm", "none", "udev", "efivarfs") or (
                r.fstype in ("tmpfs", "ramfs")) or r.source.startswith("/dev/loop") or r.mountpoint.startswith("/snap/"):
            continue
        if r.capacity_pct >= 100 or (r.size_bytes and r.avail_bytes == 0):
            v = Verdict.FAIL
        elif r.capacity_pct > DISK_WARN_PCT:
            v = Verdict.WARN
        else:
            continue
        out.append(Finding("os.filesystem", v,
                           Msg("{mp}: {pct}% of its inodes used ({free} free): no file can be created there once they "
                               "run out, whatever the free space", mp=r.mountpoint, pct=r.capacity_pct,
                               free=r.avail_bytes), r.mountpoint, (r.line,),
                           "Find the directories holding millions of small files (`du --inodes -x / | sort -n | tail`: "
                           "caches, logs, dataset shards) and remove or pack them; the inode count of ext4 is fixed "
                           "at mkfs time.", SRC_DISK))
    return out or [Finding("os.filesystem", Verdict.PASS,
                           Msg("{n} filesystems, none above {pct:.0f}% of its inodes used", n=len(rows),
                               pct=DISK_WARN_PCT), "host", tuple(r.line for r in rows[:5]), "", SRC_DISK)]


def filesystems(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``/`` from the node-wide df, and the plan's data path from its own df (which also tells
    whether the path exists and which filesystem really holds it)."""
    o = out.get("df")
    findings: list[Finding] = []
    if o is None or not o.ok:
        findings.append(missing("os.filesystem", o, "filesystem usage"))
    else:
        parsed = facts_of(out).parse_text("df", parse_df)
        assert parsed is not None
        rows, problems = parsed
        root = next((r for r in rows if r.mountpoint == "/"), None)
        if root is None:
            findings.append(garbled("os.filesystem", o, "df output (no / row)", problems or o.lines()[:5]))
        else:
            findings.append(_usage("os.filesystem", "/", "/", root))
        shm = next((r for r in rows if r.mountpoint == "/dev/shm"), None)
        if shm is not None and shm_finding(shm).verdict is not Verdict.PASS:  # said only when it is a problem
            findings.append(shm_finding(shm))
    data_path = plan.get("data_path")
    if not isinstance(data_path, str) or not data_path or data_path == "/":
        if not data_path and findings and all(f.verdict is not Verdict.UNKNOWN for f in findings):
            # / was read; the step's title names the data filesystem too: say that one was not checked
            findings.append(Finding("os.filesystem", Verdict.SKIP, "no data path in the plan (data_path): only / was "
                                    "checked", "host", (), "", SRC_DISK))
        return findings
    d = out.get("data_path_df")
    if d is None:
        findings.append(missing("os.filesystem", d, f"where {data_path} lives", data_path))
        return findings
    if "No such file or directory" in d.stderr:
        findings.append(Finding(
            "os.filesystem", Verdict.FAIL, Msg("the data path {data_path} does not exist", data_path=data_path), data_path,
            tuple(d.evidence_error()),
            Msg("Create or mount the data volume at {data_path} (check /etc/fstab and `lsblk`), or record "
                "the real path with `bringup plan data_path=...`.", data_path=data_path), SRC_DISK))
        return findings
    if not d.ok:
        findings.append(missing("os.filesystem", d, f"where {data_path} lives", data_path))
        return findings
    parsed = facts_of(out).parse_text("data_path_df", parse_df)
    assert parsed is not None
    rows, problems = parsed
    if len(rows) != 1:
        findings.append(garbled("os.filesystem", d, f"df of {data_path}", problems or d.lines()[:5], data_path))
        return findings
    r = rows[0]
    if r.mountpoint == "/":
        findings.append(Finding(
            "os.filesystem", Verdict.WARN,
            Msg("the data path {data_path} is on the root filesystem, not a volume of its own", data_path=data_path), data_path, (r.line,),
            Msg("If a data volume should be mounted at {data_path}, mount it (check /etc/fstab and "
                "`lsblk`); datasets and checkpoints on / can fill the root filesystem and stop the node.", data_path=data_path), SRC_DISK))
        return findings
    label = data_path if data_path == r.mountpoint else f"{data_path} (on {r.mountpoint})"
    findings.append(_usage("os.filesystem", label, data_path, r))
    return findings


# ------------------------------------------------------------------ OS: mount options


def _barrier_finding(where: str, subject: str, opts: list[str], line: str, configured: bool) -> Finding:
    bad = ", ".join(barrier_off(opts))
    when = "is configured in /etc/fstab for" if configured else "is mounted with"
    return Finding("os.mount_options", Verdict.WARN,
                   Msg("{where} {when} {bad}: journal write barriers are off, so a crash or power loss can "
                       "corrupt the filesystem unless the storage has a non-volatile (battery/capacitor-backed) "
                       "write cache", where=where, when=when, bad=bad), subject,
                   (line,), Msg("Remove {bad} from the mount options in /etc/fstab and remount (or reboot) so barriers are "
                                "back on (the default); keep it off only on storage with a non-volatile write cache.", bad=bad),
                   SRC_BARRIER)


def mount_options(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.mount_options: mount options of ``/`` and of the plan's data path, as mounted
    (``mounts``: /proc/self/mounts) and as configured (``fstab``): ``barrier=0``/``nobarrier`` ->
    warn."""
    fid = "os.mount_options"
    mo, fo = out.get("mounts"), out.get("fstab")
    if mo is None or not mo.ok:
        return [missing_rerun(fid, mo, "the mount options", source=SRC_BARRIER)]
    parsed_m = facts_of(out).parse_text("mounts", parse_mounts)
    assert parsed_m is not None
    mounts, problems = parsed_m
    if not mounts:
        return [garbled(fid, mo, "/proc/self/mounts", problems or mo.lines()[:5], source=SRC_BARRIER)]
    by_mp: dict[str, Any] = {}
    for mt in mounts:  # the last mount on a mount point is the visible one
        by_mp[mt.mountpoint] = mt
    targets = ["/"]
    data_path = plan.get("data_path") if isinstance(plan, Mapping) else None
    if isinstance(data_path, str) and data_path.startswith("/") and data_path != "/":
        mp = mount_for(data_path, list(by_mp))
        if mp and mp not in targets:
            targets.append(mp)
    findings: list[Finding] = []
    ok: list[str] = []
    ok_ev: list[str] = []
    for mp in targets:
        m = by_mp.get(mp)
        if m is None:
            continue
        label = mp if mp != "/" else "/"
        if data_path and mp != "/" and data_path != mp:
            label = f"{mp} (holds {data_path})"
        if barrier_off(m.options):
            findings.append(_barrier_finding(label, mp, m.options, m.line, configured=False))
        else:
            ok.append(f"{label}: {m.fstype} ({','.join(m.options[:6])})")
            ok_ev.append(m.line)
    if fo is not None and fo.ok:
        parsed_f = facts_of(out).parse_text("fstab", parse_fstab)
        assert parsed_f is not None
        entries, _ = parsed_f
        fs_targets = set(targets)
        if isinstance(data_path, str) and data_path.startswith("/"):
            mp = mount_for(data_path, [e.file for e in entries if e.file.startswith("/")])
            if mp:
                fs_targets.add(mp)  # the volume the data path will be on at the next mount
        for e in entries:
            if e.file in fs_targets and barrier_off(e.options) and not any(
                    f.subject == e.file and "mounted with" in f.message for f in findings):
                findings.append(_barrier_finding(e.file, e.file, e.options, e.line.strip(), configured=True))
    on_root = (isinstance(data_path, str) and data_path.startswith("/") and data_path != "/"
               and mount_for(data_path, list(by_mp)) == "/")
    if on_root:  # walk 18: "for / and the data path" passed on / alone; say where the data path is (or would be)
        ok.append(Msg("{data_path}: no mount of its own, so it is on / (os.filesystem says whether it exists)",
                      data_path=data_path))
    if ok and not findings:
        findings.append(Finding(fid, Verdict.PASS, (Msg('journal write barriers on (no barrier=0/nobarrier): ') + SEMICOLON.join(ok)),
                                "host", tuple(ok_ev), "", SRC_BARRIER))
    elif ok:
        findings.append(Finding(fid, Verdict.PASS, (Msg('barriers on: ') + SEMICOLON.join(ok)), "host", tuple(ok_ev), "",
                                SRC_BARRIER))
    return findings or [garbled(fid, mo, "/proc/self/mounts (no / entry)", mo.lines()[:5], source=SRC_BARRIER)]


def fstab_table(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Judge a pasted /etc/fstab or /proc/mounts: barrier-disabling options on any entry (warn,
    ``os.mount_options``) and swap entries (``os.swap``: a policy choice, warn only when the plan
    says Kubernetes)."""
    entries, problems = parse_fstab(text)
    if not entries:
        return [Finding("os.mount_options", Verdict.UNKNOWN, "no filesystem entry in this text", "host",
                        tuple(problems[:5]) or tuple(text.splitlines()[:3]), "Paste the whole /etc/fstab or /proc/mounts.",
                        SRC_BARRIER)]
    findings = [_barrier_finding(e.file, e.file, e.options, e.line.strip(), configured=True)
                for e in entries if barrier_off(e.options)]
    if not findings:
        findings.append(Finding("os.mount_options", Verdict.PASS,
                                Msg("{n_entries} entries, none turns journal barriers off ({BARRIER_OFF_OPTIONS})", n_entries=len(entries), BARRIER_OFF_OPTIONS='/'.join(BARRIER_OFF_OPTIONS)),
                                "host", tuple(e.line.strip() for e in entries if e.file == "/")[:2], "", SRC_BARRIER))
    swaps = [e for e in entries if e.is_swap]
    if swaps:
        findings.append(swap_finding(f"{len(swaps)} swap entr{'y' if len(swaps) == 1 else 'ies'} ("
                                     + ", ".join(e.spec for e in swaps[:4]) + ")",
                                     [e.line.strip() for e in swaps[:4]], exp))
    return findings


# ------------------------------------------------------------------ OS: time sync


def time_sync(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.time_sync: is the system clock synchronised? ``timedatectl`` (``show -p NTPSynchronized -p
    NTP``, or pasted status output), else ``chronyc_tracking``. Not synchronised -> warn."""
    fid = "os.time_sync"
    results = []
    tried: list[str] = []
    for name, parser in (("timedatectl", parse_timedatectl), ("chronyc_tracking", parse_chronyc_tracking)):
        o = out.get(name)
        if o is None:
            continue
        if not o.ok or o.rc not in (0, None):
            tried += o.evidence_error()
            continue
        t = facts_of(out).parse_text(name, parser)
        assert t is not None
        if t.synchronized is None:
            tried += [o.source] + (t.lines or o.lines()[:4])
            continue
        results.append((o, t))
    if not results:
        no_systemd = any("not been booted with systemd" in x or "Failed to connect to bus" in x for x in tried)
        if no_systemd:  # a container or a minimal VM: the clock is the host's (or another init's) to keep
            chrony_missing = any("chronyc" in x and "not found" in x for x in tried)
            return [Finding(fid, Verdict.UNKNOWN,
                            Msg("could not tell whether the clock is synchronised: this system was not booted with "
                                "systemd (a container or a minimal VM), so timedatectl cannot answer{chrony}",
                                chrony=Msg(", and chronyc is not installed") if chrony_missing else ""),
                            "host", tuple(tried[:10]),
                            "In a container the clock is the host's: check `timedatectl` or `chronyc tracking` on the "
                            "host. Elsewhere ask the NTP client this system runs (`ntpq -p`, `ntpstat`), or install "
                            "chrony.", SRC_TIME)]
        return [Finding(fid, Verdict.UNKNOWN, "could not tell whether the clock is synchronised (timedatectl and "
                        "chronyc gave no answer)", "host", tuple(tried[:10]) or ("(no probe output)",),
                        "Check time synchronisation by hand: `timedatectl` (systemd) or `chronyc tracking` (chrony); "
                        "a node without either needs an NTP client (`ntpq -p` for ntpd).", SRC_TIME)]
    o, t = results[0]
    ev = [o.source] + t.lines
    detail = ""
    if t.tool == "chronyc":
        if t.offset_s is not None:
            detail = (Msg(', system clock {offset_s:.6g} s fast of NTP time', offset_s=abs(t.offset_s)) if t.offset_s >= 0
                      else Msg(', system clock {offset_s:.6g} s slow of NTP time', offset_s=abs(t.offset_s)))
        if t.reference:
            detail += (Msg(', reference {reference}', reference=t.reference))
    else:
        if t.service:
            detail = (Msg(', NTP service {service}', service=t.service))
    if t.synchronized:
        return [Finding(fid, Verdict.PASS, Msg("the system clock is synchronised ({tool}{detail})", tool=t.tool, detail=detail), "host", tuple(ev), "",
                        SRC_TIME)]
    return [Finding(fid, Verdict.WARN, Msg("the system clock is not synchronised ({tool}{detail}): logs and timestamps across nodes "
                                           "will not line up", tool=t.tool, detail=detail), "host", tuple(ev),
                    "Enable an NTP client that follows your site's time servers: `timedatectl set-ntp true` "
                    "(systemd-timesyncd) or chrony (`systemctl enable --now chronyd`, `chronyc tracking` to verify); "
                    "check that UDP port 123 to the NTP servers is open.", SRC_TIME)]


# ------------------------------------------------------------------ OS: swap rollback (optional step)


def swap_rollback_info(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """os.swap_rollback: an optional step that only carries the rollback action; its check says so
    (``skip``), with the current swap entries of ``fstab`` as evidence."""
    o = out.get("fstab")
    ev: tuple[str, ...] = ()
    if o is not None and o.ok:
        ev = tuple(ln for ln in o.lines() if re.search(r"\sswap\s", ln))[:6]
    return [Finding("os.swap_rollback", Verdict.SKIP, "an optional step: run its action only to undo the swap step's "
                    "/etc/fstab edit (it restores the backup taken before that edit and turns swap back on)", "host",
                    ev, "", SRC_SWAP)]
