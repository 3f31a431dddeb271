"""Stage 5: driver & CUDA. Which branch, how to install it, and proof that it is loaded."""

from typing import Any, Mapping

from steps._checks import needs_gpu
from wizard.checks import chain
from wizard.checks import gpu as gc
from wizard.checks import smi
from wizard.model import Finding, Stage, Step, Verdict


def fabric_manager(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """health.fabric from nvidia-smi -q -x; ``skip`` where no GPU reports an NVLink fabric
    (PCIe-only or bridge-only systems need no Fabric Manager)."""
    findings = smi.topic_check("health.fabric")(out, plan)
    if len(findings) == 1 and findings[0].verdict is Verdict.UNKNOWN and "nothing to judge" in findings[0].message:
        return [Finding("health.fabric", Verdict.SKIP,
                        "no GPU reports an NVLink fabric (no NVSwitch): Fabric Manager is not needed", "host",
                        findings[0].evidence, "", smi.SRC_A3)]
    return findings

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
                "NVIDIA's support matrix (as read for this release of bringup) lists R580 as a "
                "long-term support branch with end of life in August 2028; R535 LTSB reached end of "
                "life in June 2026 and the R570 production branch in February 2026, and newer branches "
                "(R590, R595, R610) exist: check the live matrix before you install. Blackwell and Grace "
                "Hopper require the open kernel modules; Turing to Hopper: open recommended; "
                "Volta/Pascal (e.g. V100): proprietary only. Sources: docs.nvidia.com/datacenter/"
                "tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html; NVIDIA blog 'NVIDIA "
                "transitions fully towards open-source GPU kernel modules'."
            ),
            instructions=(
                "Open the support matrix (URL above), pick a branch that is supported today and "
                "that your software stack accepts (R580 LTSB is the long-lived choice as of this "
                "release), and the flavour (open for Turing and newer, proprietary for "
                "Volta/Pascal). Confirm with the branch in the note."
            ),
            manual=True,
        ),
        Step(
            id="driver.install",
            title="Install the driver from packages, with DKMS or signed modules",
            why=(
                "Package installs rebuild the kernel module through DKMS when a new kernel's headers "
                "arrive; runfile installs sit outside the package database and must be rebuilt by "
                "hand after every kernel change. With Secure Boot, use signed precompiled modules. "
                "Sources: NVIDIA driver installation guide; Debian nvidia-open-kernel-dkms; NVIDIA GPU "
                "Operator precompiled drivers doc."
            ),
            instructions=(
                "Use the packages for your distribution (examples for branch 580, open modules):\n"
                "Ubuntu: `sudo apt-get install -y nvidia-driver-580-server-open` (Ubuntu's server "
                "driver packages), or with Secure Boot on the Canonical-signed "
                "`linux-modules-nvidia-580-server-open-$(uname -r)`.\n"
                "Debian 12/13: add NVIDIA's CUDA repository for Debian (driver installation guide) "
                "and install its `nvidia-open` (or `cuda-drivers`) package; Debian's own non-free "
                "packages (nvidia-open-kernel-dkms) follow Debian's branch, not NVIDIA's.\n"
                "RHEL/Rocky 8/9: add NVIDIA's CUDA repository, then the branch-locked stream `sudo "
                "dnf module install nvidia-driver:580-open` (stream names: NVIDIA/"
                "yum-packaging-dkms-nvidia).\n"
                "Keep `linux-headers-$(uname -r)` installed. Reboot, then run this stage's checks."
            ),
            manual=True,
            requires=("os.nouveau",),
        ),
        Step(
            id="driver.loaded",
            title="The nvidia kernel module is loaded",
            why=(
                "Nothing else works until the kernel module is loaded; /proc/driver/nvidia/version "
                "names its version and whether it is the open or proprietary module "
                "(DCGM diagnostics level 1 checks the same)."
            ),
            probes=("modules", "sys_module", "nvidia_driver_version", "pci"),
            check=gc.driver,
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
            probes=("nvidia_smi_l", "pci"),
            check=gc.nvidia_smi,
            boot_sensitive=True,
        ),
        Step(
            id="driver.persistence",
            title="Run nvidia-persistenced",
            why=(
                "Without persistence the driver tears GPU state down whenever no client is attached, "
                "so every job start pays the initialisation, and DCGM level 1 and AzNHC "
                "check_gpu_persistence warn. NVIDIA's daemon nvidia-persistenced is the supported way "
                "to keep it (NVIDIA 'Driver Persistence' documentation, docs.nvidia.com/deploy/"
                "driver-persistence/)."
            ),
            instructions="`sudo systemctl enable --now nvidia-persistenced`, then check.",
            probes=("nvidia_smi_qx", "nvml", "pci"),
            check=smi.topic_check("health.persistence"),
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
                "On NVSwitch systems install the nvidia-fabricmanager package matching the driver "
                "version exactly, `sudo systemctl enable --now nvidia-fabricmanager`, then check: every "
                "GPU's fabric registration must read Completed / Success. PCIe-only servers skip."
            ),
            probes=("nvidia_smi_qx", "nvml", "pci"),
            check=fabric_manager,
            boot_sensitive=True,
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
            instructions="Nothing to do when no toolkit is installed: PyTorch wheels bring their own CUDA runtime.",
            probes=("nvcc_version", "nvidia_driver_version", "nvml", "pci"),
            check=needs_gpu(chain.cuda_toolkit),
        ),
        Step(
            id="driver.torch_cuda",
            title="PyTorch sees the GPUs and the driver supports its CUDA",
            why=(
                "PyTorch wheels ship their own CUDA runtime and need only a driver new enough for it "
                "(PyTorch maintainers, discuss.pytorch.org 'interplay between the NVIDIA driver and "
                "CUDA'; NVIDIA toolkit/driver table)."
            ),
            instructions="Uses the python3 on PATH; if your training environment is a venv or conda, "
                         "run `bringup check` from it.",
            probes=("torch_cuda", "nvidia_driver_version", "nvml", "pci"),
            check=needs_gpu(chain.torch_cuda),
        ),
    ),
)
