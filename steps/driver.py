"""Stage 5: driver & CUDA. Which branch, how to install it, and proof that it is loaded."""


from wizard.actions import ActionSpec
from wizard.install import driver as di
from wizard.model import Stage, Step


INSTALL_PROBES = ("os_release", "kernel", "pci", "mokutil_sb_state", "driver_uname_m", "driver_dpkg", "driver_rpm",
                  "nvidia_driver_version", "nvml", "driver_modinfo", "modules")
"""What the install actions read: distribution, running kernel, GPUs (flavour), Secure Boot, machine
type (repository architecture), installed packages and the installed driver (follow-up versions; a driver
from another source, branch or flavour, or a driver without packages (runfile), makes them refuse)."""

STAGE = Stage(
    id="driver",
    title="Driver & CUDA",
    short="Driver & CUDA",
    summary="Pick a supported driver branch, install it from packages, prove it is loaded.",
    steps=(
        Step(
            id="driver.branch",
            title="Choose a supported driver branch and module flavour",
            why=(
                "NVIDIA's support matrix (as of the date bringup last read it) lists R580 as a Long Term "
                "Support Branch (end of life June 2028 in the matrix's v615/v620 editions), R595 as a Production "
                "Branch (March 2027) and R620 as a new LTSB (September 2029, open modules only); R535 (June 2026) "
                "and R570 (February 2026) have reached end of life. Check the live matrix before you install: "
                "docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html. "
                "Blackwell and Grace Hopper require the open kernel modules; Turing to Hopper: open recommended "
                "(NVIDIA's default since R560); Maxwell/Pascal/Volta (e.g. V100): proprietary only, R580 is the "
                "last branch for them. Sources: NVIDIA driver installation guide, Kernel Modules; NVIDIA blog "
                "'NVIDIA transitions fully towards open-source GPU kernel modules' (developer.nvidia.com/blog/nvidia-"
                "transitions-fully-towards-open-source-gpu-kernel-modules/); NVIDIA blog 'Navigating GPU architecture "
                "support' (CUDA 13 drops compute capability < 7.5)."
            ),
            instructions=(
                "The check reads each GPU's PCI device id, finds its architecture and recommends a branch and "
                "flavour. The install action (next step) uses that recommendation."
            ),
        ),
        Step(
            id="driver.install",
            title="Install the driver from the distribution's packages",
            why=(
                "Package installs keep the kernel module in step with the kernel (DKMS rebuilds it when new headers "
                "arrive, or Canonical ships signed precompiled modules per kernel); a .run install sits outside the "
                "package database and must be rebuilt by hand after every kernel change. Commands per distribution, "
                "each from the vendor's guide: Ubuntu 22.04/24.04 `ubuntu-drivers install "
                "--gpgpu nvidia:<branch>-server[-open]` + nvidia-utils-<branch>-server (Ubuntu Server docs) + "
                "linux-modules-nvidia-<branch>-server[-open]-$(uname -r), Canonical's signed precompiled modules for the "
                "running kernel (ubuntu-drivers picks the flavour metapackage, which may track a newer kernel; Ubuntu "
                "Server docs 'Select NVIDIA driver packages manually'; DKMS only for non-Ubuntu kernels, by hand); "
                "Debian 12: contrib enabled, NVIDIA's "
                "cuda-keyring, nvidia-driver-pinning-<branch>, then the compute-only set nvidia-driver-cuda + "
                "nvidia-kernel-open-dkms (or nvidia-kernel-dkms); Ubuntu with NVIDIA's repository configured: pinning + "
                "nvidia-open or cuda-drivers; RHEL/Rocky/Alma 8/9: NVIDIA's CUDA repository, `dnf module enable "
                "nvidia-driver:<branch>-open`, compute-only nvidia-driver-cuda + kmod-nvidia-open-dkms; 10: `dnf "
                "versionlock add *nvidia*<branch>*`, the same packages; SLES 15 SP6+: NVIDIA's repository (its .repo "
                "section written idempotently), "
                "nvidia-open-<branch>. apt runs with --no-remove, and a driver from another source, branch or flavour "
                "(or a driver without packages: a .run install) stops the action with removal instructions instead of "
                "being replaced. Only "
                "releases NVIDIA lists for the branch in its installation guide get commands. Sources: NVIDIA Driver "
                "Installation Guide (docs.nvidia.com/datacenter/tesla/driver-installation-guide/, Kernel Modules, "
                "Version locking and Compute-only pages); NVIDIA CUDA installation guide (Debian contrib; conflicting "
                "installs); Ubuntu Server documentation, Install NVIDIA drivers."
            ),
            instructions=(
                "Preview the exact commands with `bringup --dry-run run driver.install`, then run the action. "
                "Other distributions, releases not listed for the branch, and hosts with another driver installed get "
                "manual instructions. On Debian the action uses NVIDIA's repository: Debian's own non-free packages "
                "(nvidia-open-kernel-dkms) follow Debian's branch, not NVIDIA's. The driver is the compute-only "
                "(headless) set where NVIDIA documents one (Debian, RHEL family); for a desktop install use nvidia-open "
                "by hand. Reboot afterwards, then run this stage's checks."
            ),
            action=ActionSpec(
                id="install_nvidia_driver",
                title="Install the NVIDIA driver (recommended branch and flavour)",
                description=(
                    "Installs the driver branch and kernel-module flavour the driver.branch check recommends for the "
                    "GPUs found (NVIDIA's default open flavour when no GPU is visible), from the distribution's "
                    "packages, non-interactively: kernel headers, NVIDIA's repository or Ubuntu's ubuntu-drivers, a "
                    "branch lock, then the driver (compute-only where NVIDIA documents it). Refuses, with removal "
                    "instructions, when a driver from another source, branch or flavour or a .run install is present; "
                    "apt never removes packages (--no-remove). Sources per command: NVIDIA "
                    "Driver Installation Guide; NVIDIA CUDA installation guide; Ubuntu Server docs. Reboot afterwards."
                ),
                resolve=di.resolve_driver_install,
                probes=INSTALL_PROBES,
            ),
            requires=("os.nouveau",),
        ),
        Step(
            id="driver.kernel_module",
            title="The kernel module is built for the running kernel",
            why=(
                "The driver works only with a module built for the running kernel: DKMS builds it for every kernel "
                "whose headers are installed ('dkms status' ... installed), Canonical's linux-modules-nvidia "
                "packages ship it prebuilt and signed. With Secure Boot on, an unsigned module does not load. "
                "Sources: Debian nvidia-open-kernel-dkms package description; dkms(8)."
            ),
            instructions="After a kernel upgrade, re-run this check before returning the node to service.",
            boot_sensitive=True,
        ),
        Step(
            id="driver.loaded",
            title="The nvidia kernel module is loaded",
            why=(
                "Nothing else works until the kernel module is loaded; /proc/driver/nvidia/version "
                "names its version and whether it is the open or proprietary module "
                "(DCGM diagnostics level 1 checks the same)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="driver.nvidia_smi",
            title="nvidia-smi talks to the driver and lists the GPUs",
            why=(
                "nvidia-smi failing to communicate with the driver means the module is not loaded or "
                "its user-space libraries do not match it (often after an upgrade without a reboot); "
                "'No devices were found' with GPUs on the bus means the driver could not initialise "
                "them (DCGM level 1; NVIDIA driver release notes, RmInitAdapter failures)."
            ),
            boot_sensitive=True,
        ),
        Step(
            id="driver.persistence",
            title="Run nvidia-persistenced",
            why=(
                "Without persistence the driver tears GPU state down whenever no client is attached, "
                "so every job start pays the initialisation, and DCGM level 1 and Azure HPC health checks "
                "check_gpu_persistence warn. NVIDIA's daemon nvidia-persistenced is the supported way "
                "to keep it (NVIDIA 'Driver Persistence' documentation, docs.nvidia.com/deploy/"
                "driver-persistence/)."
            ),
            instructions="Run the action (`systemctl enable --now nvidia-persistenced`), then check.",
            action=ActionSpec(
                id="enable_persistenced",
                title="Enable and start nvidia-persistenced",
                description="Runs `systemctl enable --now nvidia-persistenced` (NVIDIA Driver Persistence "
                            "documentation, docs.nvidia.com/deploy/driver-persistence/).",
                resolve=di.resolve_persistenced,
                probes=INSTALL_PROBES,
            ),
        ),
        Step(
            id="driver.fabric_manager",
            title="On NVSwitch systems: Fabric Manager at exactly the driver's version",
            why=(
                "HGX/DGX A100, H100, H200 and B200 boards connect GPUs through NVSwitch; without the "
                "nvidia-fabricmanager service, at the driver's exact version, GPUs never finish fabric "
                "initialisation and CUDA fails. Source: NVIDIA Fabric Manager user guide "
                "(docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)."
            ),
            instructions=(
                "On NVSwitch systems run the action: it installs Fabric Manager and NSCQ named as the driver's own "
                "source names them (Ubuntu's archive: nvidia-fabricmanager-<branch> libnvidia-nscq-<branch>; NVIDIA's "
                "apt repository: the same up to R580, unversioned from R590 behind nvidia-driver-pinning-<branch>; "
                "NVIDIA's RPM repository: nvidia-fabric-manager-<version> libnvidia-nscq-<version>, the driver's exact "
                "version; apt installs the branch's newest, which the check then compares) and enables the service. "
                "NVLink 5 boards (HGX B200/B300) also get nvlsm where its name is sourced, and need the ib_umad module "
                "(Fabric Manager user guide). SUSE and unverified cases get manual instructions. Every GPU's fabric "
                "registration must then read Completed / Success. PCIe-only servers skip."
            ),
            boot_sensitive=True,
            action=ActionSpec(
                id="install_fabric_manager",
                title="Install Fabric Manager and NSCQ at the driver's version",
                description="Installs Fabric Manager and NSCQ for the installed driver from the driver's own source "
                            "(names per route from: Ubuntu Server docs; NVIDIA packaging READMEs; "
                            "NVIDIA driver installation guide 'Ubuntu 590 and later packages'; NVIDIA cloud-native docs "
                            "for RHEL; NVIDIA advises the branch package, not the cuda-drivers-fabricmanager metapackage "
                            "that also pulls the proprietary driver, NVIDIA/gpu-operator#163), plus nvlsm on NVLink 5 "
                            "boards, then `systemctl enable --now nvidia-fabricmanager`. Only for NVSwitch (HGX/DGX) "
                            "systems; manual instructions where the names are not verified.",
                resolve=di.resolve_fabric_manager,
                probes=INSTALL_PROBES,
            ),
        ),
        Step(
            id="driver.cuda_toolkit",
            title="The driver is new enough for the CUDA toolkit (if one is installed)",
            why=(
                "nvcc only builds CUDA code (custom extensions, flash-attn from source) and need not "
                "match nvidia-smi's CUDA version, but what it builds needs at least the toolkit's "
                "minimum driver (NVIDIA CUDA toolkit release notes, toolkit/driver table; CUDA "
                "minor-version compatibility guide, docs.nvidia.com/deploy/cuda-compatibility/)."
            ),
            instructions="Nothing to do when no toolkit is installed: PyTorch wheels bring their own CUDA runtime. "
                         "To build CUDA extensions, the optional action installs the toolkit the driver runs natively.",
            action=ActionSpec(
                id="install_cuda_toolkit",
                title="Install the CUDA toolkit (optional, to build CUDA code)",
                description="Installs cuda-toolkit-<major>-<minor> for the newest CUDA the installed driver runs "
                            "(NVML, else NVIDIA's toolkit/driver table), at most 12.9 for Maxwell/Pascal/Volta GPUs "
                            "(CUDA 13 dropped compute capability < 7.5: NVIDIA blog 'Navigating GPU architecture support'), from NVIDIA's CUDA repository "
                            "(CUDA installation guide). On Ubuntu's archive driver it gives manual instructions instead "
                            "of adding NVIDIA's repository next to it. Not needed to train with PyTorch wheels.",
                resolve=di.resolve_cuda_toolkit,
                probes=INSTALL_PROBES,
            ),
        ),
        Step(
            id="driver.torch_cuda",
            title="PyTorch sees the GPUs and the driver supports its CUDA",
            why=(
                "PyTorch wheels ship their own CUDA runtime and need only a driver new enough for it "
                "(PyTorch maintainers, discuss.pytorch.org 'interplay between the NVIDIA driver and "
                "CUDA'; NVIDIA toolkit/driver table)."
            ),
            instructions="Uses the plan's torch_python (F2), else the python3 on PATH: set it to your training "
                         "environment's Python (a venv or conda env) to check that one.",
        ),
        Step(
            id="driver.dcgm",
            title="Optional: DCGM for health monitoring and diagnostics",
            why=(
                "DCGM (nvidia-dcgm, dcgmi) watches GPU health, runs diagnostics (dcgmi diag) and monitors NVSwitches "
                "with NSCQ. Source: DCGM installation guide (docs.nvidia.com/datacenter/dcgm/latest/installation.html)."
            ),
            instructions="Skipped when not installed; the action installs datacenter-gpu-manager-4-cuda<major> "
                         "(cuda12 for Maxwell/Pascal/Volta); on Ubuntu's archive driver it explains instead of mixing "
                         "NVIDIA's repository in.",
            action=ActionSpec(
                id="install_dcgm",
                title="Install DCGM (optional)",
                description="Installs datacenter-gpu-manager-4-cuda<major> (the driver's CUDA major; 12 for "
                            "Maxwell/Pascal/Volta: CUDA 13 dropped compute capability < 7.5, NVIDIA blog 'Navigating GPU architecture support') with its recommended packages from NVIDIA's CUDA "
                            "repository and runs `systemctl --now enable nvidia-dcgm` (DCGM installation guide). Manual "
                            "instructions on Ubuntu's archive driver (no repository mixing).",
                resolve=di.resolve_dcgm,
                probes=INSTALL_PROBES,
            ),
        ),
        Step(
            id="driver.container_toolkit",
            title="Optional: NVIDIA Container Toolkit for GPU containers",
            why=(
                "Docker, containerd and Podman reach the GPUs through the NVIDIA Container Toolkit; bare-metal "
                "training without containers does not need it. Source: NVIDIA Container Toolkit installation guide."
            ),
            instructions="After installing, configure your runtime: `sudo nvidia-ctk runtime configure --runtime=docker`.",
            action=ActionSpec(
                id="install_container_toolkit",
                title="Install the NVIDIA Container Toolkit (optional)",
                description="Adds NVIDIA's container toolkit repository (apt: its signing key as a keyring and the "
                            "apt source the guide writes; dnf/zypper: its .repo file) and installs "
                            "nvidia-container-toolkit (NVIDIA Container Toolkit installation guide).",
                resolve=di.resolve_container_toolkit,
                probes=("os_release",),
            ),
        ),
        Step(
            id="driver.chain",
            title="The whole chain: driver -> CUDA -> toolkit -> torch",
            why=(
                "One line over the chain: the driver runs CUDA up to its version; a toolkit (if any) and torch's "
                "CUDA each need a driver new enough for them, and nvcc need not match nvidia-smi's CUDA version "
                "(NVIDIA CUDA toolkit release notes, docs.nvidia.com/cuda/cuda-toolkit-release-notes/; "
                "PyTorch maintainers, discuss.pytorch.org)."
            ),
        ),
    ),
)
