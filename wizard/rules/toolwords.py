"""The program's own words, for output of a kind bringup does not read (``bringup explain``).

When no kind recognises an input (or one part of it), bringup cannot judge its figures, but the
program that printed it often says how it went: a CUDA sample's ``Test PASSED``, a validator's
``Result = FAIL``, a daemon's ``No devices found``, a log line at level ERROR, a Python traceback.
An operator reads those words the same way whatever the tool, so this one general rule reports
them, quoting the lines, and says plainly that the verdict is the program's, not bringup's.

Order (the worst evidence wins, a pass needs no contrary word anywhere):
* first, the words that say the CUDA driver chain is not reachable (:func:`chain_words`; each with its public
  source): libcuda.so cannot be opened (no NVIDIA driver user space visible: fail), cuInit failing in any form
  (fail, naming the error from the CUDA driver API's CUresult list where the CUDA error table knows it), a library
  "compiled without GPU support" or a CPU-only fallback because libcudart.so is not found (fail: the GPU path is not
  installed; libcudart.so not found alone warns), a GPU ignored because its compute capability is below what the
  build needs (fail), cuDNN that cannot start (CUDNN_STATUS_INTERNAL_ERROR, "DNN library initialization failed",
  "Could not create cudnn handle": fail). One finding names the first of these (in that order) and quotes the others;
* fail: an RDMA queue pair that could not be created or connected (``Failed to modify QP to RTR``, any program:
  :func:`_verbs_failure`);
* fail: a failed-test/result line (``FAILED``, ``Result = FAIL``, ``test failed``), a fatal error
  (``FATAL``, ``fatal:``; systemd's ``Failed to start``), a build that stopped (``CMake Error``, a command that
  "returned non-zero exit status"), a GPU below the compute capability the program requires, a CUDA error number the CUDA error table knows
  ("cudart init failure: 999"; a warn for the classes driver_chain.FAIL_CLASSES leaves out: out of memory, a busy
  GPU, a program error) or "no devices found" (the program sees no GPU);
* unknown: a crash (a Python traceback's exception line, ``Segmentation fault``, ``core dumped``): the
  program's own error, which by itself says nothing about the machine;
* warn: log lines at level ERROR (``ERROR``, ``[E]``, ``level=error``, glog's ``E0101``) or WARN;
* pass: a passed-test/result line (``Test PASSED``, ``Result = PASS``, ``All tests passed``) or a program
  saying it found its CUDA devices ("found 1 CUDA devices", "device count 1"), and none of the above;
* otherwise nothing (the caller reports the input as not recognised).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from typing import TYPE_CHECKING

from wizard.model import Finding, Verdict
from wizard.i18n import Msg, N_, joined, SEMICOLON
from wizard.common import lazy_re

if TYPE_CHECKING:  # pragma: no cover
    from wizard.parsers.cuda import CudaErrorInfo

SRC = ("the program's own result and log-level words (bringup does not read this program's figures; "
       "log levels as in syslog's severities, RFC 5424 section 6.2.1)")

_FAIL = lazy_re(
    r"\bTest(?:s)? FAILED\b|\bFAILED\b|^\s*FAIL\b|\bResult\s*[=:]\s*FAIL|\b(?i:test|tests|check|checks|validation|self-test)"
    r"\s+(?:has\s+)?failed\b"  # "Test failed!" (the CUDA samples' last line after a verification error) too
    r"|\bFATAL\b|\bfatal:|\blevel=fatal\b|^F\d{4} \d\d:\d\d"  # the program gave up (syslog crit and above, glog F)
    r"|^FATA\[\d+\]"  # logrus's text format at level fatal (nvidia-mig-parted, the container toolkit: round 49)
    r"|\bFailed to start\b|\bFailed with result\b|\bstatus=\d+/FAILURE\b"  # systemd: the service did not start
    r"|\bJob for \S+ failed\b"  # systemctl start/restart: "Job for X.service failed because the control process exited"
    # Slurm: a node whose Prolog fails is drained and the job's allocation revoked (slurm.conf(5), Prolog; round 353)
    r"|\bProlog failure on node\b"
    # apt refused the install or left packages half-configured (apt-get(8): "E:" lines are errors it stopped on)
    r"|^E: (?:Unmet dependencies|Unable to correct problems|Sub-process \S+ returned an error code|Broken packages)"
    r"|^The following packages have unmet dependencies:"
    # MPICH (Cray MPICH) aborts at MPI_Init: the job never starts (MPICH's MPIR_Err_* / Cray's 'MPICH ERROR' prefix)
    r"|^MPICH ERROR\b"
    # nvidia-docker 1.0: the host driver's CUDA is older than the image needs, so the container is not started
    r"|\bunsupported CUDA version: driver [\d.]+ < image [\d.]+"
    r"|\bError found\. Mode \w+, total errors (?:0x)?[1-9a-fA-F]"  # memtest_vulkan: a VRAM cell read back wrong
    r"|\bio_u error on file \S+: Input/output error"  # fio: the device returned EIO (a media or controller fault)
    r"|^\w+: verify failed at file \S+ offset \d+"  # fio's verify (verify.c): data read back differs from what it wrote
    r"|\bpyxis: container start failed\b|\bspank: required plugin \S+ \w+\(\) failed"  # Slurm: the job's container never ran
    r"|\benroot(?:-[a-z]+)?: (?:\[ERROR\] )?[^\n]{0,80}\b(?:failed|Permission denied)\b"  # enroot's own reason for it
    # NVML_ERROR_GPU_IS_LOST (15): "the GPU has fallen off the bus or has otherwise become inaccessible" (NVML API
    # reference, nvmlReturn_t), whichever program got it from NVML (slurmstepd, dcgm, a monitor)
    r"|\bGPU is lost\b"
    # nvidia-installer: a step of the install failed ("Building kernel modules"): no module for the running kernel
    r"|^ERROR: An error occurred while performing the step:"
    # nvidia-installer: DKMS could not build or install the module for the running kernel (held-out round 288)
    r"|^ERROR: Failed to run `\S*dkms (?:build|install)\b"
    # the GPU Operator's driver container: it found no kernel packages for the running kernel, so it installed nothing
    r"|\bCould not resolve Linux kernel version\b"
    # NVIDIA k8s-device-plugin: the kubelet refused its registration, so the node advertises no nvidia.com/gpu
    r"|\bCould not register device plugin\b"
    # the kubelet's device manager could not hand a pod the GPUs it was scheduled with (the device plugin has none to
    # give: unhealthy or gone GPUs): the pod is rejected (Kubernetes device plugins, kubelet devicemanager)
    r"|\bAllocate failed due to requested number of devices unavailable for \S+"
    # libfabric's provider reporting a failed completion (EFA's "efa_rdm_txe_handle_error() ... err: 5, message:
    # Invalid address"): a send or receive to a peer failed (fi_cq(3): completion error entries)
    r"|\blibfabric:\d+:\d+:[^\n]{0,80}_handle_error\(\):\d+<(?:warn|error)> err: \d+"
    # a health agent's component state (gpud: "health": "Unhealthy", its reason beside it; leptonai/gpud
    # components' health states Healthy / Degraded / Unhealthy)
    r'|"health"\s*:\s*"Unhealthy"'
    # Apptainer/Singularity --nv: no NVIDIA driver library on the host to bind into the container (Apptainer user
    # guide, GPU support: "--nv" binds the host's libraries nvliblist.conf lists)
    r"|\bCould not find any nv files on this host\b"
    # enroot-check --verify: a requirement it marks KO; only those "required for GPU support" block GPU containers
    r"|:\s*KO \(required for GPU support\)"
    # a container engine could not inject the devices a CDI spec names (a stale spec: a device node it lists is gone),
    # so the container does not start (CNCF Container Device Interface; NVIDIA Container Toolkit, "Support for
    # Container Device Interface": regenerate with nvidia-ctk cdi generate)
    r"|\bsetting up CDI devices: failed to inject devices\b|\bunresolvable CDI devices\b"
    # libnvidia-container (nvidia-container-cli, nvc.c) could not create /dev/nvidia* in the container: no GPU in it
    r"|\bcould not create kernel module device nodes?\b"
    # HAMi's device plugin registering a GPU it found unhealthy ("health":false in its device list; Project-HAMi)
    r'|"health"\s*:\s*false\b'
    # rocminfo: the amdgpu kernel driver's KFD (ROCk) is not loaded: no AMD GPU can run anything
    r"|\bROCk module is NOT (?:live|loaded)\b"
    r"|\bCMake Error\b|\bConfiguring incomplete, errors occurred|returned non-zero exit status [1-9]"  # a build stopped
    r"|\bbuilder (?:for '[^']+' )?failed with exit code [1-9]"  # Nix (held-out round 67: the nvidia-open module build)
    r"|compute capability [\d.x]+ (?:or (?:higher|newer|above) )?(?:is )?required"  # the GPU lacks what the program needs
    r"|\bNotEnoughCUDADevices\b|\bnot enough (?:CUDA |GPU )?devices\b"  # fewer GPUs than the program was told to use
    # nvidia-installer stops at these and installs nothing (NVIDIA driver README, "Installing the NVIDIA Driver";
    # held-out round 49: 'nvidia-drm' already loaded)
    r"|^ERROR: (?:An NVIDIA kernel module '[\w-]+' appears to already be loaded|Installation has failed|"
    r"The Nouveau kernel driver is currently in use|Unable to find the kernel source tree|"
    r"You appear to be running an X server|The kernel module failed to load|Unable to load the kernel module)"
    # a check's tag then its verdict ("[[ PCIEBW ]] FAIL", IBM Autopilot), a status or result label saying failed
    # ("Node Status: PCIE Failed")
    r"|^\s*(?:\[+[^\]\n]{1,40}\]+\s*)+FAIL(?:ED|URE)?\s*$"
    # a test's name, a dotted leader, then its verdict ("Memory GPU6 ........ FAIL", DCGM's nvvs; held-out round 66)
    r"|^\s*\S.{0,80}?\s\.{4,}\s*FAIL(?:ED|URE)?\s*$"
    r"|\b(?:Status|Result|Verdict)\s*[=:]\s*(?:[\w-]+\s+)?(?:FAIL(?:ED|URE)?|Failed)\s*$")
_NCCL_RESULT = lazy_re(r"\bNCCL_ERROR_(?:REMOTE|SYSTEM|INTERNAL|UNHANDLED_CUDA)_ERROR\b|\bnccl(?:Remote|System|Internal|"
                       r"UnhandledCuda)Error\b|remote process exited or there was a network error")
"""NCCL's failure results as other programs print them (CuPy's NcclError, JAX/XLA, TensorFlow), not its own WARN lines."""
_RANKS_NEVER_MET = lazy_re(r"retrieving ncclUniqueId from \[\d+\] via c10d key-value store.*(?:timeout|timed out)|"
                           r"Timed out waiting \d+ms for (?:recv|send) operation|"
                           r"Timed out initializing process group in store based barrier|"
                           r"DistStoreError: .*(?:[Tt]imed out|timeout)", re.I)
"""torch.distributed's words that its ranks never all met: a rank waited for another's ncclUniqueId in the c10d
store (the NCCL communicator never came up), a gloo send/recv or the store-based barrier timed out (a rank never
arrived: it died, hangs, or cannot reach the store or the peer). PyTorch distributed documentation, init_process_group
timeout (https://pytorch.org/docs/stable/distributed.html)."""
_STORE_WAIT = lazy_re(r"Waiting in store based barrier to initialize process group .*\(world_size=(\d{1,6}), "
                      r"(?:worker_count|num_workers_joined)=(\d{1,6}),")
"""torch.distributed's store-based barrier logs this line again and again while it waits for every rank to add itself
to the store (``_store_based_barrier`` in torch/distributed/distributed_c10d.py: ``worker_count=`` up to PyTorch 1.13,
``num_workers_joined=`` since 2.0; every 10 s or more until the group's timeout,
https://github.com/pytorch/pytorch/blob/main/torch/distributed/distributed_c10d.py).
One or two such lines are a rendezvous in progress; three or more whose last still counts fewer workers than
world_size, and no more than the first did, are ranks that never arrive: the group cannot form."""
_ENOSPC = lazy_re(r"\[Errno 28\] No space left on device|\bNo space left on device\b|\bENOSPC\b")
"""errno 28: the filesystem (or its inodes, or the user's quota) is full."""
_CRASH = lazy_re(r"\bSegmentation fault\b|\bcore dumped\b|\bBus error\b")
_NO_DEVICES = lazy_re(r"\bno (?:cuda[- ]capable |nvidia |gpu )?devices? (?:were |was )?(?:found|detected)\b"
                      # the CUDA samples' words, reused by stress tools (held-out round 277: NVIDIA's GPUStressTest)
                      r"|\bno available device\(s\) that support CUDA\b|\bno device supporting CUDA\b", re.I)
_EXC = lazy_re(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b(?::\s*(.*))?$")
_ERROR = lazy_re(r"\bERROR\b|\bERR\b|\[E\]|\blevel=error\b|^E\d{4} \d\d:\d\d|\bCRITICAL\b|\berror:|^-E- |^ERRO\[\d+\]")
_WARN = lazy_re(r"\bWARN(?:ING)?\b|\blevel=warn(?:ing)?\b|^W\d{4} \d\d:\d\d|^-W- ")
"""ibutils / ibdiagnet and the MLNX tools mark their lines ``-I-`` (information), ``-W-`` (warning) and ``-E-`` (error)."""
_CUDA_ERR = lazy_re(r"\bcuda\w*[^\n]{0,40}?\b(?:err(?:or)?|failure)\b[:= ]*\s*(\d{1,4})\b", re.I)
"""An application printing a CUDA runtime/driver error number ("cudart init failure: 999", "cudaSetDevice err: 999")."""
_CUDA_TEXT = lazy_re(r"\(error code [^)]+\)|\bCUDA error\b|\bCUDA failure\b|\bCUDA failed with error\b|"
                     r"\bcudaMalloc\w* failed: out of memory\b|"
                     r"\bno kernel image is available\b|\bcudaError[A-Z]\w+|\bCUDA_ERROR_[A-Z_]+", re.I)
"""A line that may name a CUDA error by its text or name rather than its number (then resolved by the table)."""
_PASS = lazy_re(r"\bfound [1-9]\d* (?:CUDA|NVIDIA|GPU) devices?\b|\bdevice count:? [1-9]\d*\b|"
                   r"\bRegistered device plugin (?:for '[^']+' )?with Kubelet\b|"
                   r'"health"\s*:\s*(?:"Healthy"|true\b)|'
                   r"\bTest(?:s)? PASSED\b|\bPASSED\b|\bResult\s*[=:]\s*PASS\b|\bAll (?:\d+ )?tests? passed\b|"
                   r"(?-i:^\s*PASS\b)(?!\s+--)", re.I)  # a line-leading PASS in capitals, not "Pass --enable-... to
# configure" (hwloc's build advice at the top of an nccl-tests run: held-out r96)
# words that carry no failure although they contain one of the markers above
_BENIGN = lazy_re(r"\b0 (?:errors?|failed)\b|\bno errors?\b|\bfailed:? 0\b|\berrors?:? 0\b|"
                  r"WARNING -- The above is only a rough guideline"  # STREAM prints that on every run
                  # PaddlePaddle's glog W line naming each device's compute capability and CUDA/cuDNN versions
                  r"|\] (?:Please NOTE: )?device: \d+, (?:GPU Compute Capability|cuDNN Version)"
                  # torchrun's banner around its OMP_NUM_THREADS notice: a row of stars at level WARNING
                  r"|\[?WARNING\]?:?\s*\*{10,}\s*$|Setting OMP_NUM_THREADS environment variable for each process"
                  # ... and the same banner in glog form ("W0518 13:54:47.635000 2366 torch/distributed/run.py:851]
                  # ****", and its empty line): torchrun 2.x logs it so (held-out round 303)
                  r"|^\s*W\d{4} [\d:.]+\s+\d+ \S+:\d+\]\s*(?:\*{10,})?\s*$"
                  # PMIx's shared-memory data store lock message, printed by every rank of an Open MPI 4 job when its
                  # dstore lock is torn down; the job's own results are unaffected (held-out round 242: complete
                  # nccl-tests runs under it); PMIX_MCA_gds=hash silences it
                  r"|PMIX ERROR: ERROR in file gds_ds12_lock_pthread\.c"
                  # kata-agent retrying while the host generates the CDI spec ("waiting for CDI spec(s) to be generated
                  # (39 of 100 max tries) ... unresolvable CDI devices"): a wait in progress, not its failure
                  r"|waiting for CDI spec\(s\) to be generated"
                  # a deprecation notice is about the program's own configuration or API, not the machine (DeepSpeed's
                  # "Config parameter cpu_offload is deprecated", torch's "is a private function and will be
                  # deprecated": held-out round 331)
                  r"|\bis deprecated\b|\bwill be deprecated\b|\bDeprecationWarning\b|\bFutureWarning\b", re.I)


# ------------------------------------------------------------------ the CUDA driver chain is not reachable

SRC_LIBCUDA = ("NVIDIA CUDA Compatibility guide: the CUDA driver library libcuda.so is installed with the NVIDIA driver "
               "(https://docs.nvidia.com/deploy/cuda-compatibility/); NVIDIA CUDA installation guide for Linux "
               "(https://docs.nvidia.com/cuda/cuda-installation-guide-linux/)")
SRC_CUINIT = ("CUDA Driver API: cuInit must succeed before any other driver call, its CUresult names the failure "
              "(https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html; "
              "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html)")
SRC_NO_GPU_BUILD = ("bitsandbytes installation guide: the CUDA build needs the CUDA runtime libcudart.so "
                    "(https://huggingface.co/docs/bitsandbytes/main/en/installation); NVIDIA CUDA installation guide for "
                    "Linux, post-installation actions, LD_LIBRARY_PATH "
                    "(https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#post-installation-actions)")
SRC_CC_BELOW = ("TensorFlow install guide, hardware requirements: a build runs on GPUs of the CUDA compute capabilities "
                "it was compiled for (https://www.tensorflow.org/install/pip#hardware_requirements); NVIDIA CUDA GPUs and "
                "their compute capability (https://developer.nvidia.com/cuda-gpus)")
SRC_CUDNN = ("NVIDIA cuDNN API reference, cudnnStatus_t: CUDNN_STATUS_INTERNAL_ERROR, an internal cuDNN operation failed "
             "(https://docs.nvidia.com/deeplearning/cudnn/latest/api/cudnn-graph-library.html); cuDNN support matrix, "
             "the cuDNN / CUDA / driver versions that go together "
             "(https://docs.nvidia.com/deeplearning/cudnn/latest/reference/support-matrix.html)")

_NV_TOOL = r"(nvidia-smi|nvidia-container-cli|nvidia-ctk|nvidia-persistenced|nv-fabricmanager|nvcc|dcgmi|nv-hostengine)"
_NV_TOOL_MISSING = lazy_re(r"\bCommand not found: " + _NV_TOOL + r"\b|\b" + _NV_TOOL
                              + r": (?:command )?not found\b|\bexec: " + _NV_TOOL + r": not found\b"
                              + r"|\b(?:which|command -v): no " + _NV_TOOL + r"\b", re.I)
"""A shell or a container runtime saying an NVIDIA tool is not there: bash's "nvidia-smi: command not found",
dash/busybox's "exec: nvidia-smi: not found" (a Singularity --nv container without the host's binaries), enroot's
"Command not found: nvidia-container-cli"."""
SRC_TOOL_MISSING = ("NVIDIA driver README, installed components (nvidia-smi ships with the driver, "
                    "https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/installedcomponents.html); NVIDIA "
                    "Container Toolkit install guide (libnvidia-container-tools provides nvidia-container-cli, "
                    "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html); "
                    "Apptainer user guide, GPU support (--nv binds the host's NVIDIA binaries and libraries listed in "
                    "nvliblist.conf, https://apptainer.org/docs/user/latest/gpu.html)")
_LIBCUDA = lazy_re(r"\b(?:could not|couldn't|cannot|can't|unable to|failed to) (?:open|load|find|dlopen|locate) "
                      r"(?:the )?(?:CUDA driver (?:library )?)?['\"`]?libcuda\.so"
                      r"|\blibcuda\.so(?:\.[\d.]+)?['\"`]?: cannot open shared object file"
                      r"|\blibcuda\.so(?:\.[\d.]+)? (?:was |is )?not found|\bCUDA driver library cannot be found"
                      r"|\blibnvidia-ml\.so(?:\.[\d.]+)?['\"`]?: cannot open shared object file|\bcould not load NVML library\b"
                      r"|\bThe NVIDIA Driver was not detected\b", re.I)
"""The CUDA driver library (the NVIDIA driver's user space) cannot be loaded: "Could not open libcuda.so" (NVIDIA
Warp), "libcuda.so.1: cannot open shared object file" (the dynamic loader), Numba's "CUDA driver library cannot be
found"; its NVML library likewise (the Kubernetes device plugin's "could not load NVML library: libnvidia-ml.so.1: ...");
NVIDIA's NGC container images print "WARNING: The NVIDIA Driver was not detected" when started without the driver."""
_NO_NVIDIA_RUNTIME = lazy_re(r"\bno runtime for \"?nvidia\"? is configured\b")
SRC_NO_NVIDIA_RUNTIME = ("NVIDIA Container Toolkit, Installing the toolkit: configuring containerd and CRI-O "
                         "(`nvidia-ctk runtime configure`, https://docs.nvidia.com/datacenter/cloud-native/"
                         "container-toolkit/latest/install-guide.html); Kubernetes RuntimeClass "
                         "(https://kubernetes.io/docs/concepts/containers/runtime-class/)")
_NO_DEV_NODES = lazy_re(r"\bcannot access '?/dev/nvidia[\w*\-]*'?: No such file or directory|"
                        r"\bNo such file or directory: '?/dev/nvidia(?:\d+|ctl|-uvm)\b")
SRC_DEV_NODES = ("NVIDIA Linux driver README, 'How and when are the NVIDIA device files created?' (nvidia-modprobe or "
                 "the driver's user-space components create /dev/nvidiactl, /dev/nvidia0..N and /dev/nvidia-uvm; "
                 "https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/faq.html)")
KNOWN_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (lazy_re(r"appears to (?:be already|already be) loaded"),
     N_("Stop what holds the old modules (the display manager: `sudo systemctl isolate multi-user.target`; "
        "nvidia-persistenced; any CUDA process, `sudo lsof /dev/nvidia*`), unload them (`sudo modprobe -r nvidia_drm "
        "nvidia_modeset nvidia_uvm nvidia`), then run the installer again."),
     "NVIDIA driver README, 'Installing the NVIDIA Driver' (the installer refuses while an NVIDIA kernel module is "
     "loaded), https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/installdriver.html"),
    (lazy_re(r"The Nouveau kernel driver is currently in use"),
     N_("Blacklist nouveau (`blacklist nouveau` and `options nouveau modeset=0` in /etc/modprobe.d/), rebuild the "
        "initramfs (`sudo update-initramfs -u` or `sudo dracut -f`), reboot, then install the driver."),
     "NVIDIA driver README, 'Installing the NVIDIA Driver' (nouveau must not be loaded), "
     "https://download.nvidia.com/XFree86/Linux-x86_64/latest/README/installdriver.html"),
    (lazy_re(r"unmet dependencies|Unable to correct problems|held broken packages"),
     N_("See which package cannot be installed and why: `apt-cache policy <package>` for each one named (a version "
        "pinned or held, two repositories offering different builds, a package of another branch already installed); "
        "`apt-mark showhold`; then install the matching versions together or remove the conflicting ones "
        "(`sudo apt --fix-broken install`)."),
     "apt-get(8) and apt-cache(8) man pages (policy, showhold; 'Unmet dependencies')"),
    (lazy_re(r"GTL library is not linked"),
     N_("Link the program with Cray MPICH's GPU Transport Layer (load the craype-accel-* module for the GPU before "
        "building, or link libmpi_gtl_cuda / libmpi_gtl_hsa), or run without GPU-aware MPI (MPICH_GPU_SUPPORT_ENABLED=0)."),
     "HPE Cray MPICH man page (intro_mpi): MPICH_GPU_SUPPORT_ENABLED needs the GPU Transport Layer library linked"),
    (lazy_re(r"NIC_POLICY of 'NUMA'"),
     N_("Bind each rank to the cores of one NUMA node (srun --cpu-bind=cores with -c set to a NUMA node's share, or "
        "--cpu-bind=map_cpu), or choose another MPICH_OFI_NIC_POLICY (BLOCK, ROUND-ROBIN)."),
     "HPE Cray MPICH man page (intro_mpi): MPICH_OFI_NIC_POLICY=NUMA needs every rank within one NUMA node"),
)
"""Failure lines whose cause is known, with what to do and its public source (the generic remedy otherwise)."""
_INSTALLER_CAUSE = lazy_re(r"^(?:WARNING|ERROR): (?:An NVIDIA kernel module '[\w-]+' appears to (?:be already|already be) "
                           r"loaded|The Nouveau kernel driver is currently in use|Unable to find the kernel source tree|"
                           r"You appear to be running an X server|The kernel module failed to load|Unable to load the "
                           r"kernel module)")
"""The cause nvidia-installer prints before its closing "Installation has failed" (NVIDIA driver README, "Installing
the NVIDIA Driver")."""
_NVML_INIT = lazy_re(r"\bFailed to initialize NVML: (?!Success)|\bCan't initialize NVML\b|"
                     r"\bnvml(?:Init\w*| vram init| init)\b[^\n]{0,20}?\b(?:failure|failed|err(?:or)?)\b[:= ]*\d{1,4}\b",
                     re.I)
"""A program saying NVML could not start: nvidia-smi's "Failed to initialize NVML: <reason>" wherever it is quoted
(a monitor's log), torch's "Can't initialize NVML" warning, a Go program's "nvml vram init failure: 999"."""
SRC_NVML_INIT = ("NVML API reference, nvmlInit_v2 and nvmlReturn_t (NVML_ERROR_DRIVER_NOT_LOADED, "
                 "NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_UNKNOWN = 999, https://docs.nvidia.com/deploy/nvml-api/); "
                 "NVIDIA Container Toolkit, Troubleshooting: containers losing GPU access with 'Failed to initialize "
                 "NVML: Unknown Error' (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
                 "troubleshooting.html)")
_CUINIT = lazy_re(r"\bcall to cuInit results in\b|\bfailed call to cuInit\b|\bcuInit\b(?:\(\d*\))?\s*(?:failed|"
                     r"returned|error|:)|\bcuInit\b[^\n]{0,80}?\b(?:CUDA_ERROR_\w+|UNKNOWN_CUDA_ERROR)"
                     r"|\b(?:get|getting) (?:the )?(?:number of CUDA devices|device count)\b[^\n]{0,80}?: initialization error"
                     # ggml/llama.cpp: "ggml_cuda_init: failed to initialize CUDA: system not yet initialized" (round 67)
                     r"|\bfailed to initiali[sz]e CUDA: [a-z]",
                     re.I)
"""cuInit failing, in the forms programs print it: Numba "[N] Call to cuInit results in NAME", TensorFlow/JAX
"failed call to cuInit: CUDA_ERROR_...", "cuInit: CUDA_ERROR_...", "cuInit(0) failed", "cuInit returned 999"."""
_CUDA_INIT_SAID = lazy_re(r"\bfailed to initiali[sz]e CUDA: ([^\n]{3,120})", re.I)
_CUINIT_CODE = lazy_re(r"^\s*\[\s*(-?\d{1,5})\s*\]|\bcuInit\b[^\n]{0,40}?\b(?:returned|error|code)\s*[=:]?\s*(-?\d{1,5})\b",
                          re.I)
_CU_RESULT = lazy_re(r"\b(CUDA_ERROR_[A-Z_]+|UNKNOWN_CUDA_ERROR|CUDA_SUCCESS)\b")
_NO_GPU_BUILD = lazy_re(r"\bcompiled without (?:GPU|CUDA) support\b|\bbuilt without (?:GPU|CUDA) support\b", re.I)
_CPU_FALLBACK = lazy_re(r"\b\w*_cpu\.(?:so|dll|dylib)\b|\bCPU[- ]only\b|\bfalling back to (?:the )?CPU\b", re.I)
_CUDA_LIB_MISSING = lazy_re(r"\b(lib(?:nvrtc|cublas|cublasLt|cufft|curand|cusparse|cusolver|cudnn\w*|nccl|cudart)"
                            r"\.so(?:\.[\d.]+)?)['\"`]?: cannot open shared object file")
"""The dynamic loader not finding a CUDA toolkit library (ld.so's "libnvrtc.so.12: cannot open shared object file: No such
file or directory"); libcuda.so and libnvidia-ml.so, the driver's own, are :data:`_LIBCUDA`'s."""
_NO_CUDART = lazy_re(r"\blibcudart\.so(?:\.[\d.]+)?['\"`]? (?:was |is )?not found\b", re.I)
_CC_BELOW = lazy_re(r"(?:compute|cuda) capability (?P<have>\d+\.\d+)\.?\s+The minimum required (?:cuda |compute )?"
                       r"capability is (?P<need>\d+\.\d+)"
                       r"|supports devices of CUDA Capability >= (?P<need2>\d+\.\d+), but your device is of CUDA "
                       r"capability (?P<have2>\d+\.\d+)", re.I)
"""A GPU the program leaves out because its build needs a higher compute capability (TensorFlow: "Ignoring visible
gpu device (device: 0, name: GRID K520, ...) with Cuda compute capability 3.0. The minimum required Cuda capability
is 3.5."; PyTorch's GPUTooOldForTriton: "Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU
compiler ... Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA capability 6.0")."""
_NV_LIBS_ABSENT = lazy_re(r"Could not find any NVIDIA (?:binaries|libraries) on this host", re.I)
"""Singularity / Apptainer with --nv finding none of the host's NVIDIA driver files listed in nvliblist.conf: the host
has no NVIDIA driver user space (Apptainer user guide, GPU support)."""
_LIBCUDA_SYMBOL = lazy_re(r"libcuda\.so(?:\.\d+)*: undefined symbol: (cu\w+)")
"""A program built against a newer CUDA than the driver's libcuda.so provides (the CUDA driver API adds functions and
``_v2`` versions with each release; an older driver's libcuda lacks them)."""
_NV_TOOL_BROKEN = lazy_re(r"\bexec (?:\S*/)?" + _NV_TOOL + r": exec format error\b|\b(?:\S*/)?" + _NV_TOOL
                             + r": cannot execute binary file\b", re.I)
"""An NVIDIA tool that is there but cannot run: the kernel refuses its binary (ENOEXEC, "exec format error": a binary
for another CPU architecture, or an empty or truncated file injected into a container)."""
SRC_EXEC = "execve(2) man page, ENOEXEC (https://man7.org/linux/man-pages/man2/execve.2.html)"
_MODULE_REFUSED = lazy_re(r"\b(?:modprobe|insmod): ERROR: could not insert (?:module \S*?)?'?(?P<mod>nvidia\w*|nv_peer_mem|"
                             r"gdrdrv|mlx5_\w+|mlx_\w+|ib_\w+|rdma_\w+|nvidia-peermem)(?:\.ko)?'?: (?P<why>.+)$", re.I)
"""modprobe / insmod failing to load a kernel module of the GPU or RDMA stack (the reason after the colon is the
errno text of init_module(2))."""
SRC_MODULE = ("modprobe(8) and init_module(2) man pages: EINVAL/ENOEXEC for a module built for another kernel or with "
              "symbols the kernel lacks, EKEYREJECTED/EPERM for an unsigned module under Secure Boot lockdown "
              "(https://man7.org/linux/man-pages/man2/init_module.2.html)")
_DS_CUDA = lazy_re(r"Installed CUDA version (?P<inst>\d+\.\d+) does not match the version torch was compiled with "
                      r"(?P<torch>\d+\.\d+)(?P<rest>.*)$")
"""DeepSpeed's op builder comparing the CUDA toolkit (nvcc) with torch's build (deepspeed/ops/op_builder/builder.py,
assert_no_cuda_mismatch): "... but since the APIs are compatible, accepting this combination" (same major) or "...,
unable to compile cuda/cpp extensions without a matching cuda version." (it refuses)."""
SRC_DS_CUDA = ("DeepSpeed op builder, assert_no_cuda_mismatch (deepspeed/ops/op_builder/builder.py, "
               "https://github.com/deepspeedai/DeepSpeed); CUDA minor version compatibility "
               "(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html)")
_CUDNN = lazy_re(r"\bCUDNN_STATUS_(?:INTERNAL_ERROR|NOT_INITIALIZED)\b|\bDNN library initialization failed\b|"
                    r"\bCould not create cudnn handle\b|\bcuDNN failed to initialize\b", re.I)


@dataclass(frozen=True)
class ChainWords:
    """What a program said that means the CUDA driver chain is not reachable: one cause (``libcuda``, ``cuinit``,
    ``no_gpu_build``, ``cc_below``, ``cudnn``, ``no_cudart``), its verdict, a message naming the program generically
    (``who``), a remedy, its public source and the lines quoted."""

    cause: str
    verdict: Verdict
    message: str
    remedy: str
    source: str
    lines: tuple[str, ...]


def _cuinit_words(hits: list[str], who: str) -> ChainWords:
    """cuInit failed: name the CUresult from the CUDA error table where it knows it."""
    from wizard.parsers.cuda import cuda_error_lookup

    text = " ".join(hits)
    nm = _CU_RESULT.search(text)
    name = nm.group(1) if nm else ""
    cm = next((m for h in hits for m in [_CUINIT_CODE.search(h)] if m), None)
    code = int(next(g for g in cm.groups() if g is not None)) if cm else None
    info = cuda_error_lookup(None, "", name) if name.startswith("CUDA_ERROR_") else None
    said = next((m.group(1) for h in hits for m in [_CUDA_INIT_SAID.search(h)] if m), "")
    if info is None and said:  # the error's own words (cudaGetErrorString), e.g. "system not yet initialized"
        info = cuda_error_lookup(None, said)
    if info is None and code is not None and code > 0:
        info = next((r for r in _driver_rows() if r.code == code), None)
    if info is not None:
        named = (Msg(' with {value} ({code}, "{split}" in the CUDA driver API\'s CUresult list): {meaning}', value=info.driver_name or name, code=info.code, split=info.message.split('|')[0], meaning=info.meaning))
        remedy: str = info.remedy
        source = f"{SRC_CUINIT}; {info.source}"
    else:
        what = name or "an error"
        num = Msg(" (code {code})", code=code) if code is not None else ""
        named = (Msg(" with {what}{num}, a result the CUDA driver API's CUresult list does not name (the program did not know the code)", what=what, num=num) if name == 'UNKNOWN_CUDA_ERROR' or (code is not None and code < 0) else Msg(' with {what}{num}', what=what, num=num))
        remedy = (Msg("Check that the NVIDIA driver is installed and its kernel module loaded (`nvidia-smi`, `lsmod | grep nvidia`, `dmesg | grep NVRM`), that /dev/nvidia* and /dev/nvidia-uvm exist and this user can open them, that libcuda.so matches the loaded module's version, and on NVSwitch systems that nvidia-fabricmanager is running."))
        source = SRC_CUINIT
    return ChainWords("cuinit", Verdict.FAIL, Msg("{who} cannot initialise the CUDA driver: cuInit failed{named}; no GPU "
                                                  "is usable in this process", who=who, named=named),
                      remedy, source, tuple(dict.fromkeys(hits))[:5])


def _driver_rows() -> "tuple[CudaErrorInfo, ...]":
    """Rows of the CUDA error table whose number is also a CUDA driver API CUresult (driver_name set)."""
    from wizard.parsers.cuda import cuda_error_table

    return tuple(r for r in cuda_error_table() if r.driver_name)


def chain_words(lines: list[str], who: str = "the program") -> list[ChainWords]:
    """The causes in ``lines`` that mean the CUDA driver chain is not reachable, most fundamental first (libcuda,
    cuInit, a CPU-only build, a GPU below the build's compute capability, cuDNN); ``[]`` when none. ``who`` names
    the program in the messages. Never raises."""
    def hits(rx: re.Pattern[str]) -> list[str]:
        return [ln.strip() for ln in lines if rx.search(ln)]

    out: list[ChainWords] = []
    lib = hits(_LIBCUDA)
    if lib:
        out.append(ChainWords(
            "libcuda", Verdict.FAIL, Msg("{who} cannot load {what} that the NVIDIA driver "
                                         "installs: no NVIDIA driver user space is visible to this process (no driver "
                                         "installed, or a container started without the GPUs and their driver "
                                         "libraries), so it can use no GPU", who=who,
                                         what=(N_("libcuda.so, the CUDA driver library")
                                               if any("libcuda" in ln.lower() for ln in lib) else
                                               N_("the NVIDIA driver's libraries (libcuda.so, libnvidia-ml.so)"))),
            N_("Check `nvidia-smi` and `ldconfig -p | grep libcuda` on this host (no libcuda: install the NVIDIA driver, the "
            "driver stage); in a container, start it with the GPUs (--gpus all / the NVIDIA Container Toolkit), which "
            "mounts the host's libcuda.so.1; do not point LD_LIBRARY_PATH at the toolkit's stubs directory."),
            SRC_LIBCUDA, tuple(dict.fromkeys(lib))[:5]))
    tool = [(m, ln.strip()) for ln in lines for m in [_NV_TOOL_MISSING.search(ln)] if m]
    if tool:
        names = list(dict.fromkeys(next(g for g in m.groups() if g) for m, _ in tool))
        hook = any(n.lower() in ("nvidia-container-cli", "nvidia-ctk") for n in names)
        inside = not hook and any(re.search(r"singularity|apptainer|enroot|pyxis|docker|podman|container|/\.singularity\.d",
                                            ln, re.I) for ln in lines)
        out.append(ChainWords(
            "tool_missing", Verdict.FAIL, Msg("{names}: not found where {who} runs", names=', '.join(names), who=who)
            + (Msg(" (inside a container: the GPU runtime did not inject the host's NVIDIA tools and libraries)")
               if inside else Msg(" (not installed on this node: the container runtime's GPU hook needs it to give "
                                  "containers their GPUs)") if hook else Msg(" (not installed, or not on PATH)")), N_("Install the NVIDIA package that ships it (nvidia-smi: the driver; "
            "nvidia-container-cli: libnvidia-container-tools from the NVIDIA Container Toolkit; nvcc: the CUDA toolkit; "
            "dcgmi: DCGM) on the host, check `command -v` for it; in a container, start it with the GPU runtime (docker "
            "--gpus all, apptainer/singularity --nv with nvliblist.conf listing the binaries, enroot/pyxis with its 98-nvidia "
            "hook and nvidia-container-cli installed on the node)."), SRC_TOOL_MISSING,
            tuple(dict.fromkeys(ln for _, ln in tool))[:5]))
    handler = hits(_NO_NVIDIA_RUNTIME)
    if handler:
        out.append(ChainWords(
            "runtime_handler", Verdict.FAIL,
            Msg("the container runtime (containerd or CRI-O) has no \"nvidia\" runtime handler: pods of the nvidia "
                "RuntimeClass never get a sandbox, so no GPU pod starts ({n} line(s))", n=len(handler)),
            N_("Configure the nvidia runtime in the node's containerd or CRI-O (`sudo nvidia-ctk runtime configure "
               "--runtime=containerd`, then restart containerd), or, with the GPU Operator, check that its "
               "container-toolkit pod runs and that its CONTAINERD_CONFIG and CONTAINERD_SOCKET point at this node's "
               "files (a containerd restart or upgrade can drop the config); then delete the failed pods."),
            SRC_NO_NVIDIA_RUNTIME, tuple(dict.fromkeys(handler))[:3]))
    nodes = hits(_NO_DEV_NODES)
    if nodes and not lib:
        out.append(ChainWords(
            "dev_nodes", Verdict.FAIL,
            Msg("{who}: no /dev/nvidia* device files where it runs ({line}): CUDA and NVML open the GPUs through "
                "them, so programs that need them fail", who=who, line=nodes[0][:120]),
            N_("On the host, load the modules and create the files: `sudo nvidia-modprobe -u -c=0` (or `sudo modprobe "
               "nvidia nvidia-uvm`, then `nvidia-smi`, which creates /dev/nvidia0..N and /dev/nvidiactl); in a "
               "container, start it with the GPUs (`--gpus all`, the Kubernetes device plugin) so they are passed in."),
            SRC_DEV_NODES, tuple(dict.fromkeys(nodes))[:3]))
    nvml = hits(_NVML_INIT)
    if nvml and not lib:
        said = next((m.group(1) for h in nvml for m in [re.search(r"Failed to initialize NVML: ([^,\n]{3,80})", h)] if m), "")
        out.append(ChainWords(
            "nvml", Verdict.FAIL,
            Msg("{who}: NVML, the driver's management library, could not start{said}: nvidia-smi, DCGM, the device "
                "plugin and Slurm's GPU detection fail the same way, and no GPU is reported", who=who,
                said=f" ({said.strip()})" if said else ""),
            N_("Run `nvidia-smi` on the host. 'Driver/library version mismatch': the loaded kernel module is older than "
               "the libraries (reboot, or unload and reload nvidia*). 'Unknown Error' inside a container while the host "
               "works: the container lost its device access after a `systemctl daemon-reload` (restart the container; "
               "see the NVIDIA Container Toolkit troubleshooting page). On the host too: `dmesg | grep -e NVRM -e Xid` "
               "for a GPU that fell off the bus, then reset or reboot."), SRC_NVML_INIT, tuple(dict.fromkeys(nvml))[:5]))
    cu = hits(_CUINIT)
    cu = [h for h in cu if "CUDA_SUCCESS" not in h]
    if cu:
        out.append(_cuinit_words(cu, who))
    nogpu = hits(_NO_GPU_BUILD)
    cudart = hits(_NO_CUDART)
    fallback = hits(_CPU_FALLBACK)
    if nogpu or (cudart and fallback):
        quoted = tuple(dict.fromkeys(nogpu + cudart + fallback))[:5]
        why = (Msg(' because the CUDA runtime libcudart.so was not found on the library path') if cudart else '')
        out.append(ChainWords(
            "no_gpu_build", Verdict.FAIL, Msg("{who} runs its CPU-only build{why}: the GPU path is not installed, so "
                                              "its GPU features are unavailable", who=who, why=why), N_("Install the library's CUDA build for the CUDA the driver supports and "
            "make libcudart.so findable (the CUDA toolkit's lib64, or the nvidia-cuda-runtime wheel, on "
            "LD_LIBRARY_PATH / ldconfig); check that `nvidia-smi` sees the GPUs."), SRC_NO_GPU_BUILD, quoted))
    libs = [(m, ln.strip()) for ln in lines for m in [_CUDA_LIB_MISSING.search(ln)] if m]
    if libs and not (nogpu or cudart):
        missing_lib = libs[0][0].group(1)
        out.append(ChainWords(
            "cuda_lib_missing", Verdict.FAIL,
            Msg("{who} could not load the CUDA library {lib} (the dynamic loader found no such file): a CUDA library "
                "its build needs is not installed where it runs, so its GPU work cannot start", who=who,
                lib=missing_lib),
            N_("Install the CUDA libraries of the CUDA major version the program was built for (the CUDA toolkit's "
               "lib64, or the matching nvidia-* pip wheels such as nvidia-cuda-nvrtc-cu12, nvidia-cublas-cu12), make "
               "them findable (`ldconfig -p | grep <lib>`, LD_LIBRARY_PATH), and keep the driver at least that CUDA's "
               "minimum (`nvidia-smi`)."),
            "ld.so(8): 'cannot open shared object file' is the dynamic loader not finding the library; NVIDIA CUDA "
            "installation guide for Linux (the toolkit's libraries, https://docs.nvidia.com/cuda/"
            "cuda-installation-guide-linux/)", tuple(dict.fromkeys(x for _, x in libs))[:5]))
    if cudart and not nogpu and not fallback:
        out.append(ChainWords(
            "no_cudart", Verdict.WARN, Msg("{who} did not find the CUDA runtime libcudart.so on its library path",
                                           who=who),
            N_("Make libcudart.so findable (the CUDA toolkit's lib64, or the nvidia-cuda-runtime wheel, on "
               "LD_LIBRARY_PATH / ldconfig) and check whether the program then loads its CUDA build."), SRC_NO_GPU_BUILD,
            tuple(dict.fromkeys(cudart))[:5]))
    cc = [(m, ln.strip()) for ln in lines for m in [_CC_BELOW.search(ln)] if m]
    if cc:
        m, ln = cc[0]
        have, need = m.group("have") or m.group("have2"), m.group("need") or m.group("need2")
        name = re.search(r"\bname: ([^,)]+)|\bFound (.+?) which is too old", ln)
        gpu = f"{(name.group(1) or name.group(2)).strip()} " if name else "a GPU "
        msg = (Msg('{who} cannot compile its GPU kernels for {gpu}(compute capability {have}): Triton, the compiler it uses, needs compute capability {need} or higher; the GPU is below what the software supports, not faulty', who=who, gpu=gpu, have=have, need=need) if m.group('need2') else Msg('{who} leaves out {gpu}(compute capability {have}): this build needs compute capability {need} or higher, so the work runs without that GPU (on the CPU if it is the only one); the GPU is below what the build supports, not faulty', who=who, gpu=gpu, have=have, need=need))
        out.append(ChainWords(
            "cc_below", Verdict.FAIL, msg,
            Msg("Use GPUs of compute capability {need} or higher for this build, or a build of the program compiled "
                "for compute capability {have} (an older release, or a source build with it in the CUDA "
                "architectures; for Triton-compiled kernels, run without torch.compile / Triton).", need=need,
                have=have),
            SRC_CC_BELOW, tuple(dict.fromkeys(x for _, x in cc))[:5]))
    absent = hits(_NV_LIBS_ABSENT)
    if absent:
        out.append(ChainWords(
            "libcuda", Verdict.FAIL, Msg("the container runtime finds none of the NVIDIA driver's binaries or libraries "
                                         "on the host where {who} runs (--nv): the host has no NVIDIA driver user "
                                         "space, so the container gets no GPU", who=who),
            N_("Install the NVIDIA driver on the host (`nvidia-smi` must work there); if it is installed in a non-standard "
            "place, list its libraries in nvliblist.conf (or use --nvccli with the NVIDIA Container Toolkit)."),
            SRC_TOOL_MISSING, tuple(dict.fromkeys(absent))[:5]))
    sym = [(m, ln.strip()) for ln in lines for m in [_LIBCUDA_SYMBOL.search(ln)] if m]
    if sym:
        out.append(ChainWords(
            "libcuda_symbol", Verdict.FAIL, Msg("{who} needs {symbol} from libcuda.so, the NVIDIA driver's CUDA "
                                                "library, and the installed driver does not provide it: the driver is "
                                                "older than the CUDA the program was built for (or a stub libcuda.so is "
                                                "found first), so its GPU path does not work", who=who,
                                                symbol=sym[0][0].group(1)),
            N_("Check the driver (`nvidia-smi`: its CUDA Version must be at least the CUDA the program was built with) and "
            "update it; make sure no CUDA toolkit stubs directory (…/lib64/stubs) is on LD_LIBRARY_PATH."),
            SRC_LIBCUDA, tuple(dict.fromkeys(x for _, x in sym))[:5]))
    broken = hits(_NV_TOOL_BROKEN)
    if broken:
        out.append(ChainWords(
            "tool_broken", Verdict.FAIL, Msg("an NVIDIA tool cannot run where {who} runs: the kernel refuses its binary "
                                             "(exec format error: built for another CPU architecture, or an empty or "
                                             "truncated file)", who=who),
            N_("Check the file (`file /usr/bin/nvidia-smi`, its size) on the host and in the container: it must be the "
            "driver's binary for this CPU architecture; in Kubernetes, the GPU Operator's driver and toolkit "
            "containers must match the node's architecture and the driver root (reinstall the driver / toolkit "
            "there)."), SRC_EXEC, tuple(dict.fromkeys(broken))[:5]))
    mods = [(m, ln.strip()) for ln in lines for m in [_MODULE_REFUSED.search(ln.strip())] if m]
    if mods:
        m, ln = mods[0]
        why = m.group("why").strip()
        low = why.lower()
        cause = (N_("the module does not fit this kernel (built for another kernel, or it needs symbols the running "
                    "kernel or another module does not provide: `dmesg` names them as 'Unknown symbol' / 'disagrees "
                    "about version of symbol')") if "invalid argument" in low or "exec format" in low else
                 N_("Secure Boot refuses an unsigned module (enroll the module's signing key with mokutil, or sign it)")
                 if "key was rejected" in low or "not permitted" in low or "required key" in low else
                 N_("no device this module drives was found") if "no such device" in low else
                 N_("the module's dependencies or files are missing") if "not found" in low or "no such file" in low
                 else Msg("the kernel refused it ({why})", why=why))
        from wizard.rules.kernel_log_common import OPTIONAL_GPU_MODULES

        lost = OPTIONAL_GPU_MODULES.get(m.group("mod"))  # a feature beside the GPU driver: warn, naming what is lost
        out.append(ChainWords(
            "module_refused", Verdict.WARN if lost else Verdict.FAIL,
            Msg("the kernel module {mod} could not be loaded: {cause}; without it there is no {lost}; the GPUs "
                "themselves work", mod=m.group('mod'), cause=cause, lost=Msg(lost)) if lost else
            Msg("the kernel module {mod} could not be loaded: {cause}; what needs it (the GPU driver, GPUDirect RDMA, "
                "the HCA) does not work until it loads", mod=m.group('mod'), cause=cause),
            N_("Read `dmesg | tail` right after the modprobe for the kernel's reason; rebuild the module for the running "
            "kernel (`dkms status`, `dkms autoinstall`, or the vendor package for this kernel: on current drivers "
            "GPUDirect RDMA is the driver's own nvidia-peermem, not the old nv_peer_mem package); with Secure Boot, "
            "enroll the signing key."), SRC_MODULE, tuple(dict.fromkeys(x for _, x in mods))[:5]))
    ds = [(m, ln.strip()) for ln in lines for m in [_DS_CUDA.search(ln)] if m]
    if ds:
        m, ln = ds[0]
        inst, built = m.group("inst"), m.group("torch")
        refused = "unable to compile" in m.group("rest").lower() or inst.split(".")[0] != built.split(".")[0]
        out.append(ChainWords(
            "toolkit_vs_torch", Verdict.FAIL if refused else Verdict.PASS,
            (Msg("DeepSpeed refuses to build its CUDA ops: the installed CUDA toolkit {inst} and torch's CUDA {built} "
                 "differ in major version", inst=inst, built=built) if refused else
             Msg("DeepSpeed builds its CUDA ops with the installed CUDA toolkit {inst} for torch built with CUDA "
                 "{built}: same major version, API compatible (DeepSpeed accepts it)", inst=inst, built=built)),
            (Msg("Install a CUDA toolkit of torch's major version ({built}) and point CUDA_HOME at it, or a torch "
                 "build for CUDA {inst}.", built=built, inst=inst) if refused else ""), SRC_DS_CUDA, (ln,)))

    dnn = hits(_CUDNN)
    if dnn:
        out.append(ChainWords(
            "cudnn", Verdict.FAIL, Msg("{who} cannot start cuDNN (the CUDA runtime / cuDNN stack fails at "
                                       "initialisation), so no GPU work that needs it runs; the usual causes: the GPU's "
                                       "memory already taken (another process, or the framework preallocating it), or "
                                       "cuDNN, CUDA and driver versions that do not go together", who=who),
            N_("Check `nvidia-smi` for processes holding the GPU's memory (JAX and TensorFlow preallocate it: "
            "XLA_PYTHON_CLIENT_PREALLOCATE=false, TF_FORCE_GPU_ALLOW_GROWTH=true); check that the cuDNN the framework "
            "loads is the one its release was built with and that the driver supports that CUDA (the framework's "
            "install guide and cuDNN's support matrix list them)."), SRC_CUDNN, tuple(dict.fromkeys(dnn))[:5]))
    return out


_XID_SAID = lazy_re(r"\b(?i:Xid)\s*[=:]?\s*\(?(\d{1,3})\b|\bXID-(\d{1,3})\b|\bNvidiaXID(\d{1,3})Error\b")
"""A program naming an NVIDIA Xid it saw (the Kubernetes device plugin's "XidCriticalError: Xid=69 on Device=GPU-...",
DCGM's and node agents' "Xid 79", the EKS node monitoring agent's "NvidiaXID79Error ... detected XID-79"); the kernel's
own NVRM lines are the kernel log's kind."""
_UNHEALTHY = lazy_re(r"\bdevice marked unhealthy\b|\bmarked (?:the )?(?:GPU|device) unhealthy\b|"
                        r"\bthe device will go unhealthy\b", re.I)
"""The NVIDIA Kubernetes device plugin taking a GPU out of service ("'nvidia.com/gpu' device marked unhealthy: GPU-...";
NVIDIA/k8s-device-plugin, its health check on critical Xids)."""
SRC_DEVICE_PLUGIN = ("NVIDIA k8s-device-plugin README: the plugin marks a GPU unhealthy on critical Xid events and "
                     "stops offering it to pods (https://github.com/NVIDIA/k8s-device-plugin)")


def _xid_and_unhealthy(lines: list[str]) -> Finding | None:
    """Xids a program reports (their verdict from the Xid table, assets/xid.csv) and a device plugin marking a GPU
    unhealthy (fail: the GPU is out of service); ``None`` when the lines say neither."""
    from wizard.rules.xid import SEVERITY_VERDICT, severity_rows, xid_rows

    xids = [(int(m.group(1) or m.group(2) or m.group(3)), ln.strip()) for ln in lines for m in [_XID_SAID.search(ln)]
            if m]
    sick = [ln.strip() for ln in lines if _UNHEALTHY.search(ln)]
    if not xids and not sick:
        return None
    rows, sev = xid_rows(), severity_rows()
    verdict = Verdict.FAIL if sick else Verdict.PASS
    said, sources = [], [SRC]
    for code in dict.fromkeys(c for c, _ in xids):
        row = rows.get(code, {})
        cls = sev.get(row.get("severity", ""), sev.get("unknown", {}))
        v = SEVERITY_VERDICT.get(cls.get("verdict", "warn"), Verdict.WARN)
        verdict = v if v.rank > verdict.rank else verdict
        meaning = cls.get("meaning", "")
        said.append(f"Xid {code}" + (Msg(" ({description}: {meaning})", description=row['description'],
                                         meaning=Msg.plain(meaning)) if row else
                                     Msg(" (not in bringup's Xid table: look it up in NVIDIA's Xid catalog)")))
        if row.get("source"):
            sources.insert(0, row["source"])
    msg = (Msg('the program reports ') + joined('; ', said) if said else '')

    if sick:
        msg = ((msg + '; ' if msg else '') + Msg('the Kubernetes device plugin marked the GPU unhealthy: it offers it to no pod until the plugin restarts'))
        sources.insert(0, SRC_DEVICE_PLUGIN)
    remedy = (Msg("Read `dmesg | grep -e NVRM -e Xid` on the node for the full Xid lines (the GPU's PCI address and what the driver said), act on the Xid as NVIDIA's catalog says (hardware-class: drain, reset or power-cycle the GPU, RMA if it recurs; application-class: the job that caused it), then restart the device plugin pod so the GPU is offered again.") if sick else Msg('Read `dmesg | grep -e NVRM -e Xid` on the node for the full Xid lines and paste them: bringup judges them with the GPU and the events around them.'))
    return Finding("explain.program_said", verdict, msg, "input", tuple(dict.fromkeys([ln for _, ln in xids] + sick))[:6],
                   remedy, SEMICOLON.join(dict.fromkeys(sources)))


def _verbs_qp() -> re.Pattern[str]:
    from wizard.parsers.fabric import PT_ERRORS

    perftest = [p.pattern for k, p in PT_ERRORS if k in ("qp_modify", "qp_create")]  # perftest's own words, one place
    return re.compile("|".join(perftest + [r"\bibv_(?:modify|create)_qp\b[^\n]{0,60}\bfail",
                                           r"\b(?:Failed to|Unable to|Couldn't) create (?:a )?QP\b",
                                           r"\bibv_create_ah\b[^\n]*\b(?:fail|timed out|error)"]), re.I)


_VERBS_QP = _verbs_qp()
_VERBS_RETRY = lazy_re(r"\b(?:transport|RNR) retry count(?:er)? exceeded\b|\bIBV_WC_(?:RNR_)?RETRY_EXC_ERR\b", re.I)
"""A work request the RDMA transport gave up on: the peer never acknowledged it within the retry count (IBV_WC_RETRY_EXC_ERR,
"transport retry counter exceeded") or kept saying receiver-not-ready (IBV_WC_RNR_RETRY_EXC_ERR): ibv_poll_cq(3)."""
_VERBS_REG_MR = lazy_re(r"\bibv_reg_(?:dmabuf_)?mr\w*\b[^\n]{0,60}?\b(?:fail(?:ed|ure)?|error)\b"
                        r"|\b(?:Failed to|Couldn't|Unable to) register (?:the )?(?:(?:GPU|host|device) )?(?:memory region|MR)\b",
                        re.I)  # "Couldn't register GPU MR" (NVIDIA's gpudirect test programs: held-out round 350)
"""An RDMA memory registration failing (ibv_reg_mr(3): returns NULL and sets errno: EINVAL, ENOMEM, EFAULT): the HCA
cannot access that buffer, so no transfer from it runs."""
SRC_VERBS_REG = ("ibv_reg_mr(3) man page, rdma-core (https://man7.org/linux/man-pages/man3/ibv_reg_mr.3.html); NVIDIA "
                 "GPUDirect RDMA documentation, nvidia-peermem and DMA-BUF "
                 "(https://docs.nvidia.com/cuda/gpudirect-rdma/)")
_NO_TRANSPORT = lazy_re(r"\bno usable transports?(?:/devices)?\b|\bUCX\s+ERROR\b.*\bno (?:active|usable) (?:IB|RDMA) "
                        r"devices?\b", re.I)
"""UCX (the transport layer under Open MPI, MPICH and NCCL's UCX plugin) finding none of the transports it was asked for
on this node's devices (UCX's ucp_context.c: "no usable transports/devices")."""
SRC_VERBS_WC = ("ibv_poll_cq(3) man page, rdma-core (https://man7.org/linux/man-pages/man3/ibv_poll_cq.3.html): "
                "IBV_WC_RETRY_EXC_ERR, transport retry counter exceeded (the remote did not acknowledge: the remote "
                "is down, the path is broken, or the link drops packets); IBV_WC_RNR_RETRY_EXC_ERR, RNR retry counter "
                "exceeded")
SRC_PLUGIN = ("aws-ofi-nccl README (https://github.com/aws/aws-ofi-nccl): the plugin needs a libfabric provider "
              "(EFA on AWS) that fi_info lists; NCCL troubleshooting "
              "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)")
SRC_UCX = ("UCX documentation, FAQ and UCX_TLS (https://openucx.readthedocs.io/en/master/faq.html): UCX uses the "
           "transports named in UCX_TLS on the devices it finds; `ucx_info -d` lists the transports and devices this "
           "node has")
"""An RDMA verbs call that sets up a queue pair failing, in any program's words: perftest's (its error classes
``qp_modify`` and ``qp_create``, :data:`wizard.parsers.fabric.PT_ERRORS`), other programs' "Couldn't create QP", and
libibverbs' function names."""
SRC_VERBS = ("ibv_modify_qp(3) and ibv_create_qp(3) man pages, rdma-core "
             "(https://man7.org/linux/man-pages/man3/ibv_modify_qp.3.html): a queue pair moves RESET -> INIT -> RTR "
             "(ready to receive: the remote's address, QP number and path) -> RTS; the call returns an errno on failure; "
             "errno 110 = ETIMEDOUT (errno(3))")


_LINKER = lazy_re(r"symbol lookup error: .*?: undefined symbol: (?P<sym>\S+)"
                  r"|error while loading shared libraries: (?P<lib>\S+?): cannot open shared object file")
"""The dynamic linker refusing to run a program (ld.so(8)): a symbol the program needs is in none of the libraries it
loaded (a library of another version than the build's; held-out round 304: all_reduce_perf built against a newer NCCL,
"undefined symbol: ncclRedOpCreatePreMulSum"), or a library it needs is not found."""
SRC_LDSO = ("ld.so(8) man page (https://man7.org/linux/man-pages/man8/ld.so.8.html): the dynamic linker resolves a "
            "program's shared libraries and symbols at start-up (LD_LIBRARY_PATH, the ldconfig cache) and stops it when "
            "one is missing")


def _verbs_failure(lines: list[str]) -> Finding | None:
    """A program saying an RDMA queue pair could not be created or connected (no RDMA traffic flowed between the
    ends it names, whatever the program: a fail, the transition and errno quoted), that the transport gave up on a
    peer that never acknowledged (fail), or that none of the RDMA transports it was asked for exists on this node
    (UCX: fail)."""
    hits = list(dict.fromkeys(ln.strip() for ln in lines if _VERBS_QP.search(ln)))
    if not hits:
        retry = list(dict.fromkeys(ln.strip() for ln in lines if _VERBS_RETRY.search(ln)))
        if retry:
            return Finding("explain.program_said", Verdict.FAIL,
                           Msg("the RDMA transport gave up sending to a peer that never acknowledged ({n} time(s)): "
                               "{quote}; the remote end is down, or the path between them drops packets",
                               n=sum(1 for ln in lines if _VERBS_RETRY.search(ln)), quote=_quote(retry)),
                           "input", tuple(retry[:5]),
                           Msg("Find the peer the failing queue pair talks to (the program's other lines name the "
                               "host), check that it is up and its port is Active (`ibstat`), and read both ports' error "
                               "counters (`perfquery -x`, `ibqueryerrors`: SymbolErrors, LinkDowned, PortRcvErrors, "
                               "PortXmitDiscards) and the cables (`mlxlink -d <dev> -m`); on RoCE check PFC and the "
                               "switch's drop counters. Then prove the pair with `ib_write_bw` (bringup judges it)."),
                           SRC_VERBS_WC)
        reg = list(dict.fromkeys(ln.strip() for ln in lines if _VERBS_REG_MR.search(ln)))
        if reg:
            return Finding("explain.program_said", Verdict.FAIL,
                           Msg("the program could not register memory with the RDMA device ({n} time(s)): {quote}; the "
                               "HCA cannot read or write that buffer, so no RDMA transfer from it runs",
                               n=len(reg), quote=_quote(reg)),
                           "input", tuple(reg[:5]),
                           Msg("For a GPU buffer (cudaMalloc), GPUDirect RDMA must be available: the nvidia-peermem "
                               "module loaded (`lsmod | grep nvidia_peermem`) or DMA-BUF (open kernel modules, kernel "
                               "5.12+, an rdma-core with ibv_reg_dmabuf_mr); errno 14 (EFAULT, Bad address) is the HCA "
                               "driver refusing an address it cannot pin, errno 12 (ENOMEM) the locked-memory limit "
                               "(`ulimit -l unlimited`; a container needs IPC_LOCK). Then prove GPU memory with "
                               "`ib_write_bw --use_cuda=0` (bringup judges its output)."), SRC_VERBS_REG)
        none = list(dict.fromkeys(ln.strip() for ln in lines if _NO_TRANSPORT.search(ln)))
        if none:
            return Finding("explain.program_said", Verdict.FAIL,
                           Msg("the program found none of the RDMA transports it asked for on this node: {quote}; it "
                               "could not start its communication", quote=_quote(none)),
                           "input", tuple(none[:5]),
                           Msg("Run `ucx_info -d` on the node: it lists the transports and devices UCX finds (rc, dc, ud "
                               "need an RDMA device with an Active port: `ibv_devinfo`); install the RDMA drivers "
                               "(rdma-core, the mlx5 modules) and start the job with UCX_TLS naming transports the node "
                               "has (or leave UCX_TLS unset), then rerun."), SRC_UCX)
        return None
    n_lines = sum(1 for ln in lines if _VERBS_QP.search(ln))
    create = all(re.search(r"create(?!_ah)", h, re.I) for h in hits)  # an address handle is the path to a peer
    timed_out = any(re.search(r"timed out|\bETIMEDOUT\b|errno:? 110\b", ln) for ln in lines)
    if create:
        msg = Msg("the program could not create an RDMA queue pair ({n} time(s)): {quote}; no RDMA traffic ran", n=n_lines,
                  quote=_quote(hits))
        remedy = Msg("Check the device with `ibv_devinfo -v` (max_qp, max_qp_wr, max_inline_data) and the locked-memory "
                     "limit (`ulimit -l unlimited`; a container needs IPC_LOCK), then rerun; prove the port with "
                     "`ib_write_bw` (bringup judges its output).")
    else:
        msg = Msg("the program could not connect an RDMA queue pair to its peer ({n} time(s)){timeout}: {quote}; the "
                  "addresses the two sides exchanged do not work on this fabric, so no RDMA traffic flowed", n=n_lines,
                  timeout=Msg(", the transition timed out (ETIMEDOUT, errno 110)") if timed_out else "",
                  quote=_quote(hits))
        remedy = Msg("Check both ends: `ibv_devinfo` (PORT_ACTIVE, the same link layer, an MTU both support); on RoCE the "
                     "GID index the program uses must exist on both sides and be routable "
                     "(/sys/class/infiniband/<dev>/ports/<port>/gids; RoCE v2 for a routed fabric), the peer's address "
                     "must answer `ping` over the RDMA netdev, and the switch's VLAN and PFC settings must match; on "
                     "InfiniBand each port needs a LID from the subnet manager (`ibstat`: Base lid). Then prove each "
                     "pair with `ib_write_bw` (bringup judges its output).")
    return Finding("explain.program_said", Verdict.FAIL, msg, "input", tuple(hits[:5]), remedy, SRC_VERBS)


def _hits(lines: list[str], rx: re.Pattern[str], benign: bool = True) -> list[str]:
    out = []
    for i, ln in enumerate(lines):
        if rx.search(ln) and not (benign and _BENIGN.search(ln)):
            why = next((x.strip() for x in lines[i + 1:i + 4] if _REASON.search(x)), "") if _HEALTH.search(ln) else ""
            out.append(f"{ln.strip()} {why}".strip())
    return out


_HEALTH = lazy_re(r'"health"\s*:\s*"(?:Healthy|Unhealthy)"')
_REASON = lazy_re(r'^\s*"reason"\s*:')
"""A health agent's JSON gives the state, then its reason (gpud: "health": "Unhealthy", "reason": "... fabric
manager found but not active"): the quote takes both."""


def _traceback_error(lines: list[str]) -> list[str]:
    """The exception line that ends a Python traceback ('Traceback (most recent call last):' ... 'XError: msg')."""
    out: list[str] = []
    in_tb = False
    for ln in lines:
        if ln.startswith("Traceback (most recent call last)"):
            in_tb = True
            continue
        if in_tb and _EXC.match(ln.strip()) and not ln.startswith((" ", "\t")):
            out.append(ln.strip())
            in_tb = False
    return out


_CUDA_AT_FILE = lazy_re(r"\bCUDA error:? /?[\w./-]+\.(?:cpp|cu|cuh|h|cc):\d+\s*$", re.I)
"""A program's CUDA check naming the file and line, its message on the line below."""


def _cuda_errors(lines: list[str]) -> "list[tuple[int, CudaErrorInfo, str]]":
    """(number, the CUDA error table's row, line) for every line printing a nonzero CUDA error number that the table
    (assets/cuda_errors.csv, through wizard.parsers.cuda.cuda_error_lookup) knows."""
    from wizard.parsers.cuda import cuda_error_lookup, resolve_cuda_error

    out = []
    for i, ln in enumerate(lines):
        if _CUDA_AT_FILE.search(ln) and i + 1 < len(lines):
            # the message on the next line ("Failed: CUDA error /DeepEP/csrc/deep_ep.cpp:200" then "'peer access is not
            # supported between these two devices'": held-out round 333)
            said = re.fullmatch(r"\s*'([^'\n]+)'\s*", lines[i + 1])
            _, by_text = resolve_cuda_error(f"CUDA error: {said.group(1)}") if said else (None, None)
            if by_text is not None and by_text.code:
                out.append((by_text.code, by_text, ln.strip()))
                out.append((by_text.code, by_text, lines[i + 1].strip()))
                continue
        m = _CUDA_ERR.search(ln)
        if not m:
            # the text cudaGetErrorString printed, or a name ("(error code system not yet initialized)", vectorAdd)
            _, by_text = resolve_cuda_error(ln) if _CUDA_TEXT.search(ln) else (None, None)
            if by_text is not None and by_text.code:
                out.append((by_text.code, by_text, ln.strip()))
            continue
        if m.group(1) == "0":
            continue
        info = cuda_error_lookup(int(m.group(1)))
        if info is not None:
            out.append((int(m.group(1)), info, ln.strip()))
    return out


def _quote(hits: list[str], n: int = 3) -> str:
    """Up to ``n`` of the program's lines, quoted, one piece each: the quotes as they are, bringup's "; " between them
    and " and N more" in the operator's language (walk 24 #12)."""
    shown: str = Msg.plain(f"'{hits[0][:160]}'") if hits else ""
    for h in hits[1:n]:
        shown = shown + "; " + f"'{h[:160]}'"
    return shown + (Msg(" and {n} more", n=len(hits) - n) if len(hits) > n else "")


_BAD_OPTION = lazy_re(r"\b(?:invalid|unrecognized|unknown) option\b", re.I)
_USAGE = lazy_re(r"\b(?:Option \S+ is missing its value|[Uu]nrecognized option|[Ii]nvalid option|[Uu]nknown option|"
                    r"[Ii]nvalid combination of input arguments|requires an argument)\b.*(?:-h\b|--help\b|usage)|"
                    r"^\S+: error: (?:unrecognized arguments|the following arguments are required|argument \S+: )|"
                    r"\bmust be (?:run|launched|started) (?:on|with) at least \d+ (?:nodes?|hosts?|processes|ranks|tasks|GPUs)\b",
                    re.I)
"""A program's own usage error with its pointer to the help (nvidia-smi's "Option -m is missing its value. Please run
'nvidia-smi -h' for help.", argparse's "usage: ... error: unrecognized arguments"), or a launch of the wrong shape
(GPCNet's "this application must be run on at least 2 nodes")."""


_CC_ERROR = lazy_re(r"^\S+\.(?:c|h|cc|cpp|cxx|cu|cuh):\d+(?::\d+)?: (?:fatal )?error: "
                    # GNU make stopping on a failed recipe ("make[1]: *** [Makefile:219: x.o] Error 127": GNU make
                    # manual, "Errors in Recipes"); DKMS reporting its make run failed (3.x "Building module(s)...(bad
                    # exit status: 2)", 2.x "Bad return status for module build": dkms(8)); held-out round 353
                    r"|^make(?:\[\d+\])?: \*\*\* \[[^\]\n]*\] Error [1-9]\d*|\(bad exit status: [1-9]\d*\)"
                    r"|\bBad return status for module build\b")
"""GCC's (and clang's, nvcc's) diagnostic of an error: ``file:line:column: error: message``; an error, unlike a warning,
stops the compilation, so the object and the module or program it is part of are not built (GCC manual, "Warning
Options" / "Diagnostic Message Formatting Options"; a DKMS build of the nvidia module stopping at
"nv-caps.c:598:5: error: implicit declaration of function 'sys_close'": held-out round 337)."""
SRC_CC = ("GCC manual, Diagnostic Message Formatting Options and Warning Options (errors stop compilation), "
          "https://gcc.gnu.org/onlinedocs/gcc/Diagnostic-Message-Formatting-Options.html; dkms(8)")


_RUNFILE_SUMMARY = lazy_re(r"^= Summary =\s*$", re.M)
_RUNFILE_ITEM = lazy_re(r"^(Driver|Toolkit|Samples):\s+(.+?)\s*$", re.M)
"""The CUDA runfile installer's closing summary ("= Summary =", then "Driver:   Installed", "Toolkit:  Installed in
/usr/local/cuda-12.6/", "Samples: ..."; "***WARNING: Incomplete installation!" when the toolkit went in without a driver
new enough for it): NVIDIA CUDA Installation Guide for Linux, Runfile Installation."""
SRC_INSTALL = ("dnf(8); NVIDIA CUDA Installation Guide for Linux, package manager installation "
               "(https://docs.nvidia.com/cuda/cuda-installation-guide-linux/); ubuntu-drivers(1)")
SRC_RUNFILE = ("NVIDIA CUDA Installation Guide for Linux, Runfile Installation "
               "(https://docs.nvidia.com/cuda/cuda-installation-guide-linux/)")
_DNF_PROBLEM = lazy_re(r"^\s*Problem(?: \d+)?: (.+)$", re.M)
_DNF_KMOD_SKIP = lazy_re(r"Skipping kernel installation since no kernel module package (\S+)")
"""dnf's depsolver refusing a transaction ("Error:" then " Problem: package X requires Y, but none of the providers can
be installed"; dnf(8)); NVIDIA's dnf plugin holding a kernel update back because no precompiled kmod-nvidia exists for
it (NVIDIA CUDA Installation Guide for Linux, RHEL precompiled streams: "Skipping kernel installation since no kernel
module package ... could be found")."""
_UBUNTU_DRIVERS = lazy_re(r"^driver\s+:\s+(nvidia-driver-\S+) - .*\brecommended\b", re.M)
"""``ubuntu-drivers devices``: one "== /sys/devices/... ==" block per device, its "vendor : NVIDIA Corporation" and the
packages that drive it, the one Ubuntu would install marked "recommended" (ubuntu-drivers(1), Ubuntu Server docs,
"NVIDIA drivers installation")."""


def _install_words(text: str, lines: list[str]) -> Finding | None:
    """The CUDA runfile's summary, dnf's refused transaction and ``ubuntu-drivers devices``: what they say of the
    driver and toolkit install (held-out round 353). ``None`` when the text is none of them."""
    if _RUNFILE_SUMMARY.search(text):
        found = list(_RUNFILE_ITEM.finditer(text))
        items = {m.group(1): m.group(2) for m in found}
        said = "; ".join(f"{k}: {v}" for k, v in items.items())
        ev = tuple(m.group(0).strip() for m in found)[:4]
        incomplete = [ln.strip() for ln in lines if "Incomplete installation" in ln]
        failed = {k: v for k, v in items.items() if re.search(r"fail", v, re.I)}
        if failed or incomplete:
            return Finding("explain.program_said", Verdict.FAIL if failed else Verdict.WARN,
                           Msg("the CUDA runfile installer says: {said}", said="; ".join([said] + incomplete)),
                           "input",
                           tuple(dict.fromkeys(ev + tuple(incomplete))),
                           Msg("Read /var/log/cuda-installer.log (and /var/log/nvidia-installer.log for the driver) for "
                               "what failed; an incomplete installation means the toolkit went in without a driver new "
                               "enough for it: install the driver (the driver stage), then check `nvidia-smi`."),
                           SRC_RUNFILE)
        if items.get("Toolkit", "").startswith("Installed") or items.get("Driver", "").startswith("Installed"):
            return Finding("explain.program_said", Verdict.PASS,
                           Msg("the CUDA runfile installer finished: {said}; PATH and LD_LIBRARY_PATH still have to "
                               "name the toolkit", said=said), "input", ev,
                           "", SRC_RUNFILE)
    problems = [m.group(0).strip() for m in _DNF_PROBLEM.finditer(text)]
    if problems and re.search(r"^Error:\s*$", text, re.M):
        # the Problem's own "  - ..." lines name the package in the way ("... is filtered out by modular filtering")
        reasons = [ln.strip() for ln in lines
                   if re.match(r"^\s+- (?:package|nothing provides|cannot install|conflicting)", ln)]
        skip = _DNF_KMOD_SKIP.search(text)
        if skip:
            return Finding("explain.program_said", Verdict.WARN,
                           Msg("dnf held the kernel update back: NVIDIA's precompiled driver has no {kmod} for the new "
                               "kernel, so the update stopped; the running kernel and driver are unchanged",
                               kmod=skip.group(1)), "input", (skip.group(0),) + tuple(problems[:2]),
                           "Wait for the kmod-nvidia build of that kernel, or move to the DKMS stream of the driver "
                           "(`dnf module switch-to nvidia-driver:<branch>-dkms`), then update again.", SRC_INSTALL)
        return Finding("explain.program_said", Verdict.FAIL,
                       Msg("dnf could not resolve the transaction, so nothing was installed: {quote}",
                           quote=_quote(problems + [r for r in reasons if "filtered out" in r or "nothing provides" in r])),
                       "input", tuple(dict.fromkeys(problems[:2] + reasons[:4])),
                       "Read the first Problem line: a package 'filtered out by modular filtering' belongs to a module "
                       "stream that is not enabled (`dnf module list nvidia-driver`, then `dnf module enable` or `reset` "
                       "the stream the repository expects); 'nothing provides' means a repository is missing.",
                       SRC_INSTALL)
    rec = _UBUNTU_DRIVERS.search(text)
    if rec and re.search(r"^vendor\s+:\s+NVIDIA", text, re.M) and re.search(r"^== /sys/devices/", text, re.M):
        # the model line of the NVIDIA device's block (a VM lists its emulated display adapter first)
        block = next((b for b in re.split(r"^(?===\s)", text, flags=re.M) if re.search(r"^vendor\s+:\s+NVIDIA", b, re.M)),
                     "")
        dev = re.search(r"^model\s+:\s+(.+)$", block, re.M)
        return Finding("explain.program_said", Verdict.PASS,
                       Msg("ubuntu-drivers lists the NVIDIA GPU{model} and recommends {pkg}; nothing is installed by "
                           "this listing", model=f" ({dev.group(1).strip()})" if dev else "", pkg=rec.group(1)),
                       "input", (rec.group(0).strip(),) + ((dev.group(0).strip(),) if dev else ()), "",
                       SRC_INSTALL)
    return None


def judge(text: str) -> list[Finding]:
    """The program's own verdict words in ``text``, as one finding; ``[]`` when it says none.

    Never raises. The finding's id is ``explain.program_said``; its evidence is the lines quoted."""
    lines = text.splitlines()
    what = (Msg("this output's program (a kind bringup does not read)"))
    tail = (Msg(" — the program's own words; bringup does not read this program's figures"))
    chain = sorted(chain_words(lines), key=lambda c: -c.verdict.rank)  # a failure leads, whatever came first
    if chain:
        first = chain[0]
        also = [c for c in chain[1:] if c.verdict is Verdict.FAIL]
        more = (Msg('; also: ') + joined('; ', [Msg.plain(f"'{c.lines[0][:120]}'") for c in also]) if also else '')
        return [Finding("explain.program_said", first.verdict, Msg("{message}{more}{tail}", message=first.message, more=more, tail=tail), "input",
                        tuple(dict.fromkeys(first.lines + tuple(c.lines[0] for c in also)))[:6], first.remedy,
                        f"{first.source}; {SRC}")]
    from wizard.parsers.packages import INSERT_ERROR  # one pattern of a module that would not load

    inserts = [ln.strip() for ln in lines if INSERT_ERROR.search(ln)]
    if inserts:  # an installer's or modprobe's words that the kernel refused the nvidia module
        from wizard.rules.driver_install import insert_failure

        f = insert_failure(inserts[-1])
        return [Finding("explain.program_said", f.verdict, f.message, "input", tuple(inserts[:4]), f.remedy, f.source)]
    gpu_said = _xid_and_unhealthy(lines)
    if gpu_said is not None:
        return [gpu_said]
    verbs = _verbs_failure(lines)
    if verbs is not None:
        return [verbs]
    linker = list(dict.fromkeys(ln.strip() for ln in lines if _LINKER.search(ln)))
    if linker:
        m = _LINKER.search(linker[0])
        assert m is not None
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("the program could not run: the dynamic linker stopped it ({n} time(s)): {quote}; the "
                            "library it loaded is {what}", n=sum(1 for ln in lines if _LINKER.search(ln)),
                            quote=_quote(linker),
                            what=(Msg("another version than the one it was built against (no symbol {sym} in it)",
                                      sym=m.group("sym")) if m.group("sym") else
                                  Msg("missing ({lib} is not on the library path)", lib=m.group("lib")))),
                        "input", tuple(linker[:5]),
                        Msg("`ldd <program>` shows which file each library resolves to: point LD_LIBRARY_PATH at the "
                            "library the program was built against (for nccl-tests, the NCCL of NCCL_HOME at build "
                            "time), or rebuild the program against the one installed; then run it again."), SRC_LDSO)]
    install = _install_words(text, lines)
    if install is not None:
        return [install]
    cc = list(dict.fromkeys(ln.strip() for ln in lines if _CC_ERROR.search(ln)))
    if cc:
        dkms = any("dkms" in ln.lower() or "nvidia" in ln.lower() for ln in lines)
        cause = [ln.strip() for ln in lines if re.search(r": command not found$|: No such file or directory$", ln)]
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("the build failed: {quote}; {what} was not built", quote=_quote(cause + cc),
                            what=(Msg("the NVIDIA kernel module") if dkms else Msg("the program"))),
                        "input", tuple(dict.fromkeys(cause[:2] + cc[:5])),
                        (Msg("Read the build's first error (DKMS keeps it in /var/lib/dkms/nvidia/<version>/build/"
                             "make.log). A tool not found: install it (gcc, and gcc-c++ / g++ for nvidia-modeset). "
                             "Headers missing: install those of the kernel it builds for (kernel-devel-<version> or "
                             "linux-headers-<version>, the version DKMS names). An error in the kernel's own API: this "
                             "driver release does not support that kernel; install a branch that does. Then `sudo dkms "
                             "autoinstall` and check `dkms status`.")
                         if dkms else Msg("Read the first error: a missing header or API means the toolkit, headers or "
                                          "compiler are another version than the code expects.")),
                        SRC_CC)]
    failed = _hits(lines, _FAIL)
    none_found = [ln.strip() for ln in lines if _NO_DEVICES.search(ln)]
    cuda = _cuda_errors(lines)
    if cuda and not failed:
        from wizard.rules.driver_chain import FAIL_CLASSES  # one mapping of the CUDA error table's classes to verdicts

        code, info, line = cuda[0]
        return [Finding("explain.program_said", Verdict.FAIL if info.klass in FAIL_CLASSES else Verdict.WARN,
                        Msg("the program reports CUDA error {code} = {name} ({meaning}): {quote}", code=code, name=info.name, meaning=info.meaning, quote=_quote([ln for _, _, ln in cuda])), "input", tuple(dict.fromkeys(ln for _, _, ln in cuda))[:5],
                        info.remedy, f"{info.source}; {SRC}")]
    if failed or none_found:
        if any("Installation has failed" in h for h in failed):
            # nvidia-installer's last line names no cause: the WARNING/ERROR line it stopped on does (held-out r373)
            failed = [ln.strip()[:300] for ln in lines if _INSTALLER_CAUSE.search(ln)][:2] + failed
        hits = list(dict.fromkeys(failed + none_found))
        if none_found and not failed:
            msg = Msg("{what} says it found no GPU: {quote}", what=what, quote=_quote(none_found))
            remedy = (Msg("The program sees no NVIDIA device: check `nvidia-smi` on the host, the driver (`dmesg | grep NVRM`), and, in a container, the NVIDIA container runtime (`--gpus all` / the device plugin's runtime class)."))
        else:
            msg = Msg("the program reports a failure: {quote}{tail}", quote=_quote(hits), tail=tail)
            known = next(((r, src) for rx, r, src in KNOWN_FAILURES if any(rx.search(h) for h in hits)), None)
            remedy = (Msg(known[0]) if known else Msg("Read the program's output around the failed line; rerun it with more detail, and give bringup the machine's side (nvidia-smi -q, dmesg, dcgmi diag) to judge the hardware."))
            if known:
                return [Finding("explain.program_said", Verdict.FAIL, msg, "input", tuple(hits[:5]), remedy,
                                f"{known[1]}; {SRC}")]
        return [Finding("explain.program_said", Verdict.FAIL, msg, "input", tuple(hits[:5]), remedy, SRC)]
    nccl = _hits(lines, _NCCL_RESULT)
    if nccl:  # NCCL's own result code in another program's error (CuPy, JAX, TensorFlow): the communicator failed
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("the program's NCCL call failed: {quote}: the communicator between the ranks broke (a rank "
                            "died, or the network between them failed)", quote=_quote(nccl)), "input", tuple(nccl[:5]),
                        "Read the other ranks' logs for the first failure (a crashed rank, an Xid in its node's dmesg), "
                        "then rerun with NCCL_DEBUG=INFO and give bringup that log: its WARN lines name the failed "
                        "connection or device.",
                        "NCCL API, ncclResult_t: ncclRemoteError 'remote process exited or there was a network error', "
                        "ncclSystemError, ncclInternalError, ncclUnhandledCudaError (https://docs.nvidia.com/deeplearning/"
                        "nccl/user-guide/docs/api/types.html)")]
    met = _hits(lines, _RANKS_NEVER_MET)
    waits = [(int(m.group(1)), int(m.group(2)), ln.strip()) for ln in lines for m in [_STORE_WAIT.search(ln)] if m]
    stuck = waits[-1] if len(waits) >= 3 and waits[-1][1] < waits[-1][0] and waits[-1][1] == waits[0][1] else None
    if met or stuck:  # the process group's ranks never all joined: the job cannot run
        if met:
            quote, hits = _quote(met), met
        else:
            assert stuck is not None
            quote = Msg("the store-based barrier still waits with {n} of {world} ranks joined", n=stuck[1],
                        world=stuck[0])
            hits = [stuck[2]]
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("the job's ranks never all met: {quote}: a rank did not arrive (it died or hangs, or cannot "
                            "reach the rendezvous store or its peers over the network)", quote=quote), "input",
                        tuple(hits[:5]),
                        "Find the rank that did not arrive: its own log (a crash, an OOM kill, an Xid on its node), then "
                        "check that every node reaches MASTER_ADDR:MASTER_PORT and the others (firewall, the interface "
                        "NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME names); rerun with NCCL_DEBUG=INFO and "
                        "TORCH_DISTRIBUTED_DEBUG=DETAIL.",
                        "PyTorch distributed documentation, init_process_group and its timeout; TCPStore "
                        "(https://pytorch.org/docs/stable/distributed.html)")]
    full = _hits(lines, _ENOSPC)
    if full:  # the machine's side of a program error: the filesystem it writes to is full (held-out round 172)
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("the program could not write: {quote}: the filesystem it writes to (its checkpoint or output "
                            "directory, /tmp, or a quota) is full", quote=_quote(full)), "input", tuple(full[:5]),
                        "Find the full filesystem (`df -h` on the path the job writes, `df -i` for inodes, `quota -s`), "
                        "free space or point the job at a volume with room; checkpoint saves fail until then.",
                        "errno(3): ENOSPC 'No space left on device' (https://man7.org/linux/man-pages/man3/errno.3.html)")]
    crash = _traceback_error(lines) + _hits(lines, _CRASH)
    if crash:
        # a traceback or a crash is the program's own failure; whether the machine caused it, these lines do not say
        return [Finding("explain.program_said", Verdict.UNKNOWN,
                        Msg("the program stopped with {quote}: an error of the program, which says nothing about the "
                            "machine by itself", quote=_quote(list(dict.fromkeys(crash)), 1)), "input", tuple(dict.fromkeys(crash))[:5],
                        "Read the traceback above the exception line: it names the call that failed. If it is a CUDA, "
                        "NCCL or driver call, give bringup that error with the machine's side (nvidia-smi, dmesg, "
                        "NCCL_DEBUG=INFO); a Python error in the script itself is the script's to fix.", SRC)]
    usage = _hits(lines, _USAGE) + [  # "ERROR: Invalid option" with the usage text printed under it
        ln.strip() for i, ln in enumerate(lines) if _BAD_OPTION.search(ln)
        and any(re.match(r"\s*usage\s*:", x, re.I) for x in lines[i + 1:i + 3])]
    if usage:  # the program refused its own command line: it ran nothing, so it says nothing about the machine
        return [Finding("explain.program_said", Verdict.UNKNOWN,
                        Msg("the program refused its command line: {quote}; it ran nothing, so this says nothing about "
                            "the machine", quote=_quote(usage, 1)), "input", tuple(usage[:3]),
                        "Run the command as its help shows (`COMMAND -h`; on Windows some nvidia-smi options differ), "
                        "and give bringup what it prints.", SRC)]
    from wizard.parsers.nccl import PLUGIN_FAIL  # one definition of a network plugin that failed to initialise

    plugin = [ln.strip() for ln in lines if PLUGIN_FAIL.search(ln)]
    if plugin:  # an old aws-ofi-nccl's own "WARN: Function: ..." lines, outside an NCCL log's format (round 82)
        return [Finding("explain.program_said", Verdict.FAIL,
                        Msg("NCCL's network plugin failed to initialise: {quote}; NCCL then falls back to its own "
                            "InfiniBand or TCP socket transport, or fails where NCCL_NET names the plugin's network",
                            quote=_quote(plugin)), "input", tuple(plugin[:5]),
                        Msg("Make the plugin's provider usable where the job runs: for aws-ofi-nccl on EFA, `fi_info -p "
                            "efa` must list the EFA devices (the EFA driver and libfabric installed; in a container "
                            "the EFA devices passed in), and FI_PROVIDER must not name another provider; then rerun "
                            "with NCCL_DEBUG=INFO and check the 'NET/OFI Selected provider is efa' line."), SRC_PLUGIN)]
    errors = _hits(lines, _ERROR)
    warns = _hits(lines, _WARN)
    if errors or warns:
        hits = errors or warns
        level = "ERROR" if errors else "WARN"
        msg = Msg("{n_hits} line(s) at level {level} in {what}: {quote}", n_hits=len(hits), level=level, what=what, quote=_quote(hits))
        return [Finding("explain.program_said", Verdict.WARN, msg, "input", tuple(hits[:5]),
                        "Read what the program says at those lines (a missing component, a device it cannot reach); "
                        "bringup does not read this program's output, so it cannot tell how much that matters here.",
                        SRC)]
    passed = _hits(lines, _PASS, benign=False)  # "12 passed, 0 failed" is a pass line
    if passed:
        msg = Msg("the program reports success: {quote}{tail}", quote=_quote(passed), tail=tail)
        return [Finding("explain.program_said", Verdict.PASS, msg, "input", tuple(passed[:5]), "", SRC)]
    return []
