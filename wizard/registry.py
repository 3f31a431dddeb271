"""The registry: every probe, parser, ``explain`` kind and finding id bringup knows, in one place.

Nothing registers itself on import. ``capture`` runs :data:`PROBES`; ``check`` collects the probes
its steps name from :data:`PROBES` and judges them through the rules (each parser run once per probe
per run, :mod:`wizard.facts`); ``explain`` picks a kind from :data:`KINDS`; the CLI and the TUI
resolve finding ids to steps with :func:`step_of` and suggest a near id with :func:`did_you_mean`.

Layers (enforced by import-linter, see pyproject.toml): hosts/probes -> parsers -> facts -> rules ->
registry -> engine -> steps -> cli/screens. The registry may import everything below it and
nothing above it.

How to add things (ARCHITECTURE.md has the long form):

* a probe: define it in :mod:`wizard.probes` and add it to :data:`PROBES`;
* a parser: a pure function in ``wizard/parsers/`` (``ProbeOutput`` or text -> facts, never
  raises); add it to :data:`PARSERS` under the probes it reads;
* a rule: a pure function ``(facts, plan) -> list[Finding]`` in ``wizard/rules/<topic>.py`` for one
  finding id; add one line to :data:`RULES` with the step it belongs to;
* an ``explain`` kind: a detector in the parser module, a judge in :mod:`wizard.rules.pasted`, one
  line in :data:`KINDS`.
"""

from __future__ import annotations

import difflib
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from wizard import probes
from wizard.kinds import Kind
from wizard.model import Finding, RuleFn, Verdict
from wizard.parsers import cuda as p_cuda
from wizard.parsers import bmc as p_bmc
from wizard.parsers import edac as p_edac
from wizard.parsers import fabric as p_fabric
from wizard.parsers import hosttools as p_hosttools
from wizard.parsers import kernellog as p_kernellog
from wizard.parsers import packages as p_packages
from wizard.parsers import smart as p_smart
from wizard.parsers import storage as p_storage
from wizard.parsers import pcie as p_pcie
from wizard.parsers import rocm as p_rocm
from wizard.parsers import platform as p_platform
from wizard.parsers import topology as p_topology
from wizard.parsers import gpu as p_gpu
from wizard.parsers import host as p_host
from wizard.parsers.smi import parse_nvml_smi, parse_smi_text, parse_smi_xml
from wizard.probes import Probe
from wizard.rules import (
    bios, compose, driver_chain, driver_install, edac, gpu_presence, host, kernel_log, nvlink, pcie, smi, thermal_power, tools,
    topology,
)
from wizard.rules import os as os_rules
from wizard.rules import bmc as bmc_rules
from wizard.rules import smart as smart_rules
from wizard.rules import storage as storage_rules
from wizard.rules import fabric_node
from wizard.rules import fleet as fleet_rules
from wizard.rules import dcgm as dcgm_rules
from wizard.rules import rocm as rocm_rules
from wizard.rules import fabric as fabric_rules
from wizard.i18n import Msg


def _index(items: Iterable[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        if it.name in out:
            raise ValueError(f"duplicate name in the registry: {it.name}")
        out[it.name] = it
    return out


# ------------------------------------------------------------------ probes

PROBES: dict[str, Probe] = _index((
    probes.HOSTNAME,
    probes.MACHINE_ID,
    probes.BOOT_ID,
    probes.DMI,
    probes.OS_RELEASE,
    probes.KERNEL,
    probes.CPUINFO,
    probes.CPU_TOPOLOGY,
    probes.NUMA,
    probes.MEMINFO,
    probes.SWAPS,
    probes.CMDLINE,
    probes.IOMMU,
    probes.MOUNTS,
    probes.DF,
    probes.MODULES,
    probes.MODPROBE_D,
    probes.SYS_MODULE,
    probes.NVIDIA_DRIVER_VERSION,
    probes.LSPCI_VERSION,
    probes.NVIDIA_SMI_L,
    probes.PCI,
    probes.NVML,
    probes.DATA_PATH_DF,
    probes.LSBLK,
    probes.NVME_SYSFS,
    probes.MDSTAT,
    probes.FIO_VERSION,
    probes.NVCC_VERSION,
    probes.TORCH_CUDA,
    probes.EDAC_SYSFS,
    probes.LSCPU,
    probes.FREE_B,
    probes.KERNEL_LOG_JOURNAL,
    probes.KERNEL_LOG_DMESG,
    probes.DRIVER_DPKG,
    probes.DRIVER_RPM,
    probes.DRIVER_DKMS,
    probes.DRIVER_SERVICES,
    probes.DRIVER_FM_VERSION,
    probes.DRIVER_MODINFO,
    probes.DRIVER_UNAME_M,
    probes.NVIDIA_SMI_QX,
    probes.LSPCI_VVV,
    probes.TOPO_M,
    probes.TOPO_P2P,
    probes.NVLINK_S,
    probes.NVLINK_E,
    probes.CPUIDLE,
    probes.CPUFREQ,
    probes.MOKUTIL_SB_STATE,
    probes.EFI_SECUREBOOT,
    probes.EFI_FIRMWARE,
    probes.MODULE_SIGNING,
    probes.SMBIOS_MEMORY,
    probes.DMI_TABLES,
    probes.DMIDECODE_17,
    probes.SRIOV,
    probes.TIMEDATECTL,
    probes.CHRONYC_TRACKING,
    probes.FSTAB,
    probes.KERNEL_BUILD,
    probes.IPMITOOL_SEL,
    probes.IPMITOOL_SDR,
    probes.IPMITOOL_SENSOR,
    probes.SMBIOS_IPMI,
    probes.IB_SYSFS,
    probes.NET_SYSFS,
    probes.IBSTAT,
    probes.IBV_DEVINFO,
    probes.NCCL_ENV,
))
"""Every probe, by name (names are stable: capture bundles and tests use them)."""

IDENTITY_PROBES = tuple(PROBES[n] for n in probes.IDENTITY_PROBES)


def probes_named(names: Iterable[str]) -> list[Probe]:
    """The probes called ``names`` (each once, in order).

    Raises:
        KeyError: a name that is not in :data:`PROBES` (a catalogue bug).
    """
    return [PROBES[n] for n in dict.fromkeys(names)]


# ------------------------------------------------------------------ parsers


@dataclass(frozen=True)
class Parser:
    """A parser of one probe's output: ``fn`` reads ``on`` (see :meth:`wizard.facts.Facts.parse`)."""

    fn: Callable[[Any], Any]
    on: str = "text"


PARSERS: dict[str, tuple[Parser, ...]] = {
    "cmdline": (Parser(p_host.parse_cmdline),),
    "cpu_topology": (Parser(p_host.parse_cpu_topology, "files"),),
    "cpufreq": (Parser(p_platform.parse_cpufreq, "files"),),
    "cpuidle": (Parser(p_platform.parse_cpuidle, "files"),),
    "chronyc_tracking": (Parser(p_platform.parse_chronyc_tracking),),
    "data_path_df": (Parser(p_host.parse_df),),
    "df": (Parser(p_host.parse_df),),
    "dmidecode_17": (Parser(p_platform.parse_dmidecode_memory),),
    "driver_dkms": (Parser(p_packages.parse_dkms_status, "text+stderr"),),
    "driver_dpkg": (Parser(p_packages.parse_dpkg, "text+stderr"),),
    "driver_fm_version": (Parser(p_packages.parse_fm_version),),
    "driver_modinfo": (Parser(p_packages.parse_modinfo, "text+stderr"),),
    "driver_rpm": (Parser(p_packages.parse_rpm, "text+stderr"),),
    "driver_services": (Parser(p_packages.parse_systemctl_show),),
    "edac_sysfs": (Parser(p_edac.parse_edac_sysfs, "files"),),
    "free_b": (Parser(p_hosttools.parse_free_bytes),),
    "fstab": (Parser(p_platform.parse_fstab),),
    "ib_sysfs": (Parser(p_fabric.parse_ib_sysfs, "files"),),
    "ibstat": (Parser(p_fabric.parse_ib_ports),),
    "ibv_devinfo": (Parser(p_fabric.parse_ib_ports),),
    "iommu": (Parser(p_host.parse_iommu, "files"),),
    "ipmitool_sdr": (Parser(p_bmc.parse_sdr),),
    "ipmitool_sel": (Parser(p_bmc.parse_sel),),
    "ipmitool_sensor": (Parser(p_bmc.parse_sdr),),
    "smbios_ipmi": (Parser(p_bmc.parse_smbios_ipmi, "files"),),
    "kernel_log_dmesg": (Parser(p_kernellog.parse_kernel_log),),
    "kernel_log_journal": (Parser(p_kernellog.parse_kernel_log),),
    "lscpu": (Parser(p_hosttools.parse_lscpu),),
    "lsblk": (Parser(p_storage.parse_lsblk_json),),
    "lspci_vvv": (Parser(p_pcie.parse_lspci),),
    "mdstat": (Parser(p_storage.parse_mdstat),),
    "meminfo": (Parser(p_host.parse_meminfo),),
    "modules": (Parser(p_host.parse_modules),),
    "mokutil_sb_state": (Parser(p_platform.parse_mokutil_sb_state, "text+stderr"),),
    "mounts": (Parser(p_host.parse_mounts),),
    "nccl_env": (Parser(p_fabric.parse_nccl_env),),
    "net_sysfs": (Parser(p_fabric.parse_net_sysfs, "files"),),
    "numa": (Parser(p_host.parse_numa, "files"),),
    "nvcc_version": (Parser(p_cuda.parse_nvcc_version),),
    "nvidia_driver_version": (Parser(p_gpu.parse_driver_version),),
    "nvidia_smi_l": (Parser(p_gpu.parse_nvidia_smi_l, "text+stderr"),),
    "nvidia_smi_nvlink_e": (Parser(p_topology.parse_nvlink),),
    "nvidia_smi_nvlink_s": (Parser(p_topology.parse_nvlink, "text+stderr"),),
    "nvidia_smi_qx": (Parser(parse_smi_xml, "text+stderr"),),
    "nvidia_smi_topo_m": (Parser(p_topology.parse_topo_matrix),),
    "nvidia_smi_topo_p2p": (Parser(p_topology.parse_p2p_matrix),),
    "nvme_sysfs": (Parser(p_storage.parse_nvme_sysfs, "files"),),
    "nvml": (Parser(p_gpu.parse_nvml), Parser(parse_nvml_smi)),
    "os_release": (Parser(p_host.parse_os_release),),
    "pci": (Parser(p_gpu.parse_pci, "output"),),
    "sriov": (Parser(p_platform.parse_sriov, "files"),),
    "swaps": (Parser(p_host.parse_proc_swaps),),
    "timedatectl": (Parser(p_platform.parse_timedatectl),),
    "torch_cuda": (Parser(p_cuda.parse_torch_cuda, "text+stderr"),),
    # inputs only `explain` provides (a pasted text stands for them; no probe collects them)
    "dcgmi_nvlink": (Parser(p_topology.parse_dcgmi_nvlink),),
    "lspci_iommu_groups": (Parser(p_pcie.parse_iommu_groups),),
    "nvidia_smi_q": (Parser(parse_smi_text),),  # a pasted `nvidia-smi -q` (the live check reads the XML)
}
"""Which parsers read which probe (probe name -> parsers). A rule asks the run's facts for
``facts.parse(probe, parser.fn, on=parser.on)``; the tests check that every (probe, parser) a run
uses is listed here and that each runs at most once per run."""


# ------------------------------------------------------------------ explain kinds

KINDS: dict[str, Kind]
"""Every input kind ``bringup explain`` recognises, by name (stable: ``explain --json`` prints it).
On equal confidence the earlier kind wins. Built on first use (:func:`__getattr__`, :func:`_build_kinds`)."""


def _build_kinds() -> dict[str, Kind]:
    """:data:`KINDS`. Its detectors and judges of pasted outputs are imported here, on first use, so that a
    command that never reads a paste (``check``, above all ``check --profile health``, which Slurm runs every
    few minutes on every node) does not import them: about a third of this module's import time
    (``benchmarks/bench_health.py``)."""
    from wizard.parsers import cuda_env as p_cuda_env
    from wizard.parsers import cuda_samples as p_cuda_samples
    from wizard.parsers import dcgm as p_dcgm
    from wizard.parsers import fabric as p_fabric
    from wizard.parsers import host_kinds as p_host_kinds
    from wizard.parsers import nccl as p_nccl
    from wizard.parsers import smi_kinds as p_smi_kinds
    from wizard.parsers import gpuburn as p_gpuburn
    from wizard.parsers import gdrcopy as p_gdrcopy
    from wizard.parsers import container as p_container
    from wizard.parsers import fabricmanager as p_fabricmanager
    from wizard.parsers import launcher as p_launcher
    from wizard.rules import gpuburn as gpuburn_rules
    from wizard.rules import gdrcopy as gdrcopy_rules
    from wizard.rules import container as container_rules
    from wizard.rules import fabricmanager as fm_rules
    from wizard.parsers import scheduler as p_scheduler
    from wizard.rules import scheduler as scheduler_rules
    from wizard.parsers.smi import detect_smi_dmon, parse_smi_csv, parse_smi_dmon, parse_smi_table
    from wizard.rules import cuda_env, cuda_samples, nccl, pasted

    return _index((
    # wizard/parsers/cuda.py detects; wizard/rules/pasted.py judges
    Kind("nvcc-version", "nvcc --version (CUDA toolkit)", p_cuda.detect_nvcc, driver_chain.judge_nvcc_text, ("nvcc --version",)),
    Kind("torch-cuda", "torch CUDA report or CUDA error (python / traceback)", p_cuda.detect_torch, driver_chain.judge_torch_text,
        ("python3 -c \"import torch; print(torch.__version__); print(torch.version.cuda); "
        "print(torch.cuda.is_available())\"",)),
    # wizard/parsers/cuda_env.py detects; wizard/rules/cuda_env.py judges (CuPy, xFormers, Numba environment reports)
    Kind("cuda-env-report", "CUDA library environment report (cupy.show_config(), xformers.info, numba cuda.detect(), lmdeploy check_env / collect_env)",
         p_cuda_env.detect_cuda_env, cuda_env.judge_cuda_env_text,
         ("python -c \"import cupy; cupy.show_config()\"", "python -m xformers.info",
          "python -c \"from numba import cuda; cuda.detect()\"", "numba -s")),
    # wizard/parsers/dcgm.py detects; wizard/rules/pasted.py judges
    Kind("dcgmi-diag", "dcgmi diag -r N (text table)", p_dcgm.detect_text, pasted.dcgm_judge_text, ("dcgmi diag -r 2",)),
    Kind("dcgmi-diag-json", "dcgmi diag -r N -j (JSON)", p_dcgm.detect_json, pasted.dcgm_judge_json, ("dcgmi diag -r 2 -j",)),
    Kind("dcgmi-health", "dcgmi health -c (DCGM background health report, text or -j)", p_dcgm.detect_health,
         pasted.dcgm_health_judge, ("dcgmi health -c",)),
    Kind("dcgmi-stats", "dcgmi stats -j JOB (DCGM job statistics: ECC, PCIe replays, Xid during a job)",
         p_dcgm.detect_dcgmi_stats, dcgm_rules.judge_stats_text, ("dcgmi stats -j <job>",)),
    Kind("dcgmi-modules", "dcgmi modules -l (DCGM's host-engine modules and their state)",
         p_dcgm.detect_dcgmi_modules, dcgm_rules.judge_modules_text, ("dcgmi modules -l",)),
    Kind("dcgmi-discovery", "dcgmi discovery -l / -c (the GPUs, NvSwitches and MIG instances DCGM sees)", p_dcgm.detect_dcgmi_discovery,
         pasted.dcgm_discovery_judge, ("dcgmi discovery -l",)),
    Kind("dcgm-log", "dcgm-exporter or nv-hostengine log", p_dcgm.detect_dcgm_log, dcgm_rules.judge_dcgm_log,
         ("kubectl logs -n gpu-operator DCGM_EXPORTER_POD", "journalctl -u nvidia-dcgm")),
    Kind("dcgmi-dmon", "dcgmi dmon -e FIELDS (DCGM field samples: Xid, ECC, PCIe replays, ...)", p_dcgm.detect_dcgmi_dmon,
         pasted.dcgm_dmon_judge, ("dcgmi dmon -e 230,202,310,311 -c 5",)),
    Kind("dcgm-exporter-metrics", "dcgm-exporter's Prometheus metrics (DCGM_FI_* samples: Xid, ECC, PCIe replays, "
         "NVLink-C2C)", p_dcgm.detect_dcgm_exporter, pasted.dcgm_exporter_judge,
         ("curl -s localhost:9400/metrics",)),
    # wizard/parsers/container.py detects; wizard/rules/container.py judges (NVIDIA Container Toolkit)
    Kind("nvidia-container-cli", "nvidia-container-cli info, or the NVIDIA Container Toolkit / Docker GPU errors",
         p_container.detect_container_cli, container_rules.judge_container_text,
         ("nvidia-container-cli -k -d /dev/tty info", "docker run --rm --gpus all ubuntu nvidia-smi")),
    Kind("kubectl-describe-node", "kubectl describe node (what the kubelet advertises: GPUs allocatable, conditions)",
         p_container.detect_k8s_node, container_rules.judge_k8s_node_text, ("kubectl describe node NODE",)),
    Kind("k8s-device-plugin-log", "NVIDIA k8s-device-plugin log (kubectl logs of its pod)",
         p_container.detect_device_plugin_log, container_rules.judge_device_plugin_text,
         ("kubectl logs -n gpu-operator NVIDIA_DEVICE_PLUGIN_POD",)),
    Kind("training-log", "a training job's step log (torchtitan, Megatron-DeepSpeed, DeepSpeed, torchtune: loss and "
         "throughput)", p_launcher.detect_training_log, pasted.training_log_judge, ("torchrun train.py",)),
    Kind("nvidia-imex-ctl", "nvidia-imex-ctl -N (the IMEX domain of a multi-node NVLink system)",
         p_fabricmanager.detect_imex_status, fm_rules.judge_imex_text, ("nvidia-imex-ctl -N",)),
    Kind("kubectl-get-pods", "kubectl get pods / daemonsets (GPU Operator / device plugin)", p_container.detect_kubectl_pods,
         container_rules.judge_pods_text, ("kubectl get pods -n gpu-operator",)),
    # wizard/parsers/gpuburn.py detects; wizard/rules/gpuburn.py judges (wilicc/gpu-burn)
    Kind("gpu-burn", "gpu-burn (wilicc/gpu-burn stress test with result checking)", p_gpuburn.detect_gpu_burn,
         gpuburn_rules.judge_gpu_burn_text, ("gpu_burn -tc 600",)),
    # wizard/parsers/gdrcopy.py detects; wizard/rules/gdrcopy.py judges (NVIDIA/gdrcopy test programs)
    Kind("gdrcopy", "GDRCopy tests (gdrcopy_sanity, gdrcopy_copybw, gdrcopy_copylat: GPUDirect RDMA copies via gdrdrv)",
         p_gdrcopy.detect_gdrcopy, gdrcopy_rules.judge_gdrcopy_text, ("gdrcopy_sanity", "gdrcopy_copybw")),
    # wizard/parsers/cuda_samples.py detects; wizard/rules/cuda_samples.py judges (NVIDIA/cuda-samples)
    Kind("cuda-devicequery", "CUDA samples deviceQuery", p_cuda_samples.detect_device_query,
         cuda_samples.judge_device_query_text, ("./deviceQuery",)),
    Kind("cuda-bandwidthtest", "CUDA samples bandwidthTest (host<->device copies)", p_cuda_samples.detect_bandwidth_test,
         cuda_samples.judge_bandwidth_test_text, ("numactl --cpunodebind=N --membind=N ./bandwidthTest --device=N",)),
    Kind("autopilot-log", "IBM Autopilot health-check log (pciebw host-to-device bandwidth, remapped rows per GPU)",
         p_cuda_samples.detect_autopilot, cuda_samples.judge_autopilot_text,
         ("kubectl logs -n autopilot AUTOPILOT_POD",)),
    Kind("cuda-p2p-bandwidth-latency", "CUDA samples p2pBandwidthLatencyTest (GPU peer-to-peer matrices)",
         p_cuda_samples.detect_p2p_test, cuda_samples.judge_p2p_test_text, ("./p2pBandwidthLatencyTest",)),
    Kind("nvbandwidth", "NVIDIA nvbandwidth (host<->device and GPU<->GPU copy matrices)", p_cuda_samples.detect_nvbandwidth,
         cuda_samples.judge_nvbandwidth_text, ("./nvbandwidth",)),
    Kind("gpu-stream", "BabelStream / GPU-STREAM or gpu-benches' gpu-stream (device-memory bandwidth)",
         p_cuda_samples.detect_gpu_stream, cuda_samples.judge_gpu_stream_text, ("./cuda-stream", "./gpu-stream")),
    Kind("cuda-sample", "another CUDA sample (vectorAdd, matrixMul, UnifiedMemoryPerf, ...)", p_cuda_samples.detect_cuda_sample,
         cuda_samples.judge_cuda_sample_text, ("./vectorAdd",)),
    # wizard/parsers/fabric.py detects; wizard/rules/pasted.py judges
    Kind("osu", "OSU micro-benchmarks (osu_bw, osu_bibw, osu_get_bw, osu_latency; MPI-CUDA / ROCm device buffers)",
         p_fabric.detect_osu, pasted.fabric_judge_osu, ("mpirun -np 2 osu_bw -d cuda D D",)),
    Kind("perftest", "ib_write_bw / ib_read_bw / ib_send_bw (perftest RDMA bandwidth, or the errors perftest prints)",
         p_fabric.detect_perftest,
         pasted.fabric_judge_perftest, ("ib_write_bw -d mlx5_0 -s 8388608 <server>",)),
    Kind("perfquery", "perfquery [-x], ibdiagnet2.pm or the kernel's /sys/class/infiniband counters files (InfiniBand port error and traffic counters)", p_fabric.detect_perfquery,
         pasted.fabric_judge_perfquery, ("perfquery -x",)),
    Kind("ib-ports", "ibstat / ibv_devinfo / ibstatus / rdma link / ibdev2netdev / ibv_devices (InfiniBand/RoCE port "
         "state, rate, link layer; the RDMA devices)", p_fabric.detect_ib_ports, pasted.fabric_judge_ib_ports,
         ("ibstat", "ibv_devinfo", "ibstatus", "rdma link", "ibdev2netdev")),
    Kind("ibnetdiscover", "ibnetdiscover (the InfiniBand fabric's topology: each switch's and HCA's linked ports, "
         "their LIDs and rates)", p_fabric.detect_ibnetdiscover, pasted.fabric_judge_ibnetdiscover, ("ibnetdiscover",)),
    Kind("iblinkinfo", "iblinkinfo (every InfiniBand link of the fabric: width, speed, state)",
         p_fabric.detect_iblinkinfo, pasted.fabric_judge_iblinkinfo, ("iblinkinfo",)),
    Kind("mlxlink", "mlxlink -d DEV [-c] (NVIDIA MFT: a port's link state, mlxlink's own troubleshooting advice, BER "
         "and error counters; InfiniBand, Ethernet or NVLink ports)", p_fabric.detect_mlxlink, pasted.fabric_judge_mlxlink,
         ("mlxlink -d mlx5_0 -c",)),
    Kind("mlxconfig", "mlxconfig (NVIDIA MFT: an adapter's firmware settings, Default / Current / Next Boot)",
         p_fabric.detect_mlxconfig, fabric_rules.judge_mlxconfig_text, ("sudo mlxconfig -d mlx5_0 -e query",)),
    Kind("show-gids", "show_gids (MLNX_OFED: the RoCE GID table of each RDMA port: index, address, RoCE version)",
         p_fabric.detect_show_gids, pasted.fabric_judge_show_gids, ("show_gids",)),
    Kind("fi-info", "fi_info (libfabric's providers and endpoints: EFA, verbs; or fi_getinfo's error)",
         p_fabric.detect_fi_info, pasted.fabric_judge_fi_info, ("fi_info -p efa -t FI_EP_RDM",)),
    Kind("ibswinfo", "ibswinfo -d DEV (an unmanaged InfiniBand switch: power supplies, fans, temperature)",
         p_fabric.detect_ibswinfo, pasted.fabric_judge_ibswinfo, ("ibswinfo -d lid-N",)),
    # wizard/parsers/rocm.py detects; wizard/rules/rocm.py judges (AMD GPUs)
    Kind("rocm-smi", "rocm-smi (AMD GPUs: the Concise Info table, or --showtopo's GPU-pair matrices)",
         p_rocm.detect_rocm_smi, rocm_rules.judge_rocm_smi, ("rocm-smi", "rocm-smi --showtopo")),
    Kind("rocminfo", "rocminfo (the GPU agents the ROCm runtime enumerates)", p_rocm.detect_rocminfo,
         rocm_rules.judge_rocminfo_text, ("rocminfo",)),
    Kind("clinfo", "clinfo (OpenCL platforms and their devices)", p_rocm.detect_clinfo, rocm_rules.judge_clinfo_text,
         ("clinfo",)),
    Kind("ethtool", "ethtool IFACE (a network interface's link: speed, duplex, link detected)",
         p_fabric.detect_ethtool, pasted.fabric_judge_ethtool, ("ethtool eth0",)),
    Kind("ip-addr", "ip addr / ip link (network interfaces: IPoIB up, addresses)", p_fabric.detect_ip_addr,
         pasted.fabric_judge_ip_addr, ("ip addr",)),
    # wizard/parsers/edac.py detects; wizard/rules/pasted.py judges
    Kind("edac-util", "edac-util (host memory EDAC error counts)", p_edac.detect_edac_util, pasted.edac_judge_edac_util,
        ("edac-util -v", "edac-util --report=full")),
    Kind("ras-mc-ctl", "ras-mc-ctl (rasdaemon: memory, PCIe AER and MCE error records)", p_edac.detect_ras_mc_ctl,
        pasted.edac_judge_ras, ("ras-mc-ctl --summary", "ras-mc-ctl --errors", "ras-mc-ctl --error-count")),
    Kind("mcelog", "mcelog decoded machine checks, or mcelog --client (per-DIMM memory error counts)",
         p_edac.detect_mcelog, pasted.edac_judge_mcelog, ("mcelog --client",)),
    Kind("edac-sysfs", "EDAC counters in /sys/devices/system/edac/mc", p_edac.detect_edac_sysfs, pasted.edac_judge_sysfs,
        ("grep -r . /sys/devices/system/edac/mc",)),
    # wizard/parsers/host_kinds.py detects; wizard/rules/pasted.py judges
    Kind("proc-cmdline", "/proc/cmdline", p_host_kinds.detect_cmdline, pasted.as_probe("cmdline", "/proc/cmdline", bios.iommu), ("cat /proc/cmdline",)),
    # before proc-driver-nvidia-version: `head` of both files is this kind (its judge reads the version lines too)
    Kind("proc-driver-nvidia-gpu-information", "/proc/driver/nvidia/gpus/<bus id>/information (the driver's view of "
         "each GPU: model, bus, VBIOS, GSP firmware, excluded)", p_gpu.detect_gpu_information,
         pasted.gpu_information_judge, ("cat /proc/driver/nvidia/gpus/*/information",
                                        "grep . /proc/driver/nvidia/gpus/*/information")),
    Kind("proc-driver-nvidia-version", "/proc/driver/nvidia/version", p_host_kinds.detect_driver_version,
        pasted.host_kinds_judge_driver_version, ("cat /proc/driver/nvidia/version",)),
    Kind("kernel-modules", "lsmod or /proc/modules", p_host_kinds.detect_modules, pasted.host_kinds_judge_modules,
        ("lsmod", "cat /proc/modules")),
    Kind("os-release", "/etc/os-release", p_host_kinds.detect_os_release, pasted.as_probe("os_release", "/etc/os-release", os_rules.os_release),
        ("cat /etc/os-release",)),
    # wizard/parsers/hosttools.py detects; wizard/rules/pasted.py judges
    Kind("free", "free (-h, -b or KiB)", p_hosttools.detect_free, host.judge_free_text, ("free -h", "free -b")),
    Kind("meminfo", "/proc/meminfo (memory and swap in kB, pages the kernel took out of use)", p_host.detect_meminfo,
        host.judge_meminfo_text, ("cat /proc/meminfo",)),
    Kind("top-memory", "top's memory summary (Mem and Swap lines)", p_hosttools.detect_top_memory,
        host.judge_top_text, ("top -b -n 1 | head -5",)),
    Kind("swapon", "swapon --show [--output-all]", p_hosttools.detect_swapon, host.judge_swapon_text,
        ("swapon --show --output-all",)),
    Kind("zramctl", "zramctl (compressed swap in RAM)", p_hosttools.detect_zramctl, host.judge_zramctl_text,
        ("zramctl --output-all",)),
    Kind("proc-swaps", "/proc/swaps (or swapon -s)", p_host.detect_proc_swaps, os_rules.judge_proc_swaps,
        ("cat /proc/swaps",)),
    Kind("df", "df (-h, -T, -P: filesystem use, /dev/shm)", p_host.detect_df, os_rules.judge_df_text,
         ("df -hT",)),
    Kind("lscpu", "lscpu", p_hosttools.detect_lscpu, host.judge_lscpu_text, ("lscpu",)),
    Kind("lshw-display", "lshw -class display (GPUs and the driver bound to each, UNCLAIMED when none)",
         p_hosttools.detect_lshw_display, host.judge_lshw_display_text, ("sudo lshw -class display",)),
    Kind("sensors", "sensors (lm-sensors: temperatures, fans, voltages with their chips' limits)",
         p_hosttools.detect_sensors, host.judge_sensors_text, ("sensors",)),
    Kind("ulimit", "ulimit -a, ulimit -l or /proc/PID/limits (resource limits: locked memory, open files)",
         p_hosttools.detect_ulimit, host.judge_ulimit_text, ("ulimit -a",)),
    Kind("cpupower", "cpupower frequency-info or cpufreq-info (CPU frequency driver, governor, current frequency)",
         p_platform.detect_cpupower, bios.judge_cpupower_text, ("cpupower frequency-info",)),
    Kind("numactl-hardware", "numactl --hardware", p_hosttools.detect_numactl, host.judge_numactl_text,
        ("numactl --hardware",)),
    # wizard/parsers/kernellog.py detects; wizard/rules/pasted.py judges
    Kind("kernel-log", "kernel log (dmesg, journalctl -k, syslog/kern.log)", p_kernellog.detect_kernel_log, kernel_log.judge_kernel_log_text,
        ("journalctl -k -b --no-pager -o short-monotonic", "dmesg", "dmesg -T",
        "grep kernel: /var/log/syslog")),
    # wizard/parsers/nccl.py detects; wizard/rules/pasted.py judges
    Kind("nccl-tests", "nccl-tests result (all_reduce_perf, all_gather_perf, ...)", p_nccl.detect_nccl_tests,
        nccl.judge_nccl_tests, ("all_reduce_perf -b 8 -e 16G -f 2 -g <gpus> -c 1",)),
    Kind("nccl-debug", "NCCL_DEBUG=INFO/WARN log (PyTorch ProcessGroupNCCL lines too)", p_nccl.detect_nccl_log,
        nccl.judge_nccl_log, ("NCCL_DEBUG=INFO <your launcher> ...",)),
    Kind("ncclras", "ncclras: NCCL's RAS client (communicators of a running job, missing or lagging ranks)",
         p_nccl.detect_ncclras, nccl.judge_ncclras_text, ("ncclras", "ncclras -f json")),
    # wizard/parsers/packages.py detects; wizard/rules/pasted.py judges
    Kind("dkms-status", "dkms status", p_packages.detect_dkms, driver_install.judge_dkms_text, ("dkms status",)),
    Kind("nvidia-packages-dpkg", "dpkg -l of NVIDIA packages", p_packages.detect_dpkg, driver_install.judge_dpkg_text,
        ("dpkg -l | grep -i nvidia",)),
    Kind("nvidia-packages-rpm", "rpm -qa of NVIDIA packages", p_packages.detect_rpm, driver_install.judge_rpm_text,
        ("rpm -qa | grep -i nvidia",)),
    Kind("nvidia-service-status", "systemctl status of a service (nvidia-fabricmanager, nvidia-persistenced, nvidia-dcgm, "
         "nv_peer_mem, openibd, any unit)",
        p_packages.detect_service, driver_install.judge_service_text,
        ("systemctl status nvidia-fabricmanager", "systemctl status nvidia-persistenced")),
    Kind("nvidia-smi-versions", "nvidia-smi's header values, one per line (NVIDIA-SMI / Driver Version / CUDA Version)",
         p_host_kinds.detect_smi_versions, pasted.host_kinds_judge_smi_versions, ("nvidia-smi | head -3",)),
    Kind("fabricmanager-log", "Fabric Manager log (/var/log/fabricmanager.log), what its start script prints, or the IMEX daemon's log (same record format)", p_fabricmanager.detect_fm_log,
         fm_rules.judge_fm_log_text, ("tail -n 200 /var/log/fabricmanager.log",)),
    Kind("fabricmanager-version", "nv-fabricmanager --version", p_packages.detect_fm_version,
        driver_install.judge_fm_version_text, ("nv-fabricmanager --version",)),
    Kind("modinfo-nvidia", "modinfo nvidia", p_packages.detect_modinfo, driver_install.judge_modinfo_text,
        ("modinfo nvidia",)),
    # wizard/parsers/pcie.py detects; wizard/rules/pasted.py judges
    Kind("lspci-vv", "lspci -vv / -vvv (PCI devices: PCIe links, ACS, AER, BARs)", p_pcie.detect_lspci,
        pasted.as_probe("lspci_vvv", "lspci -vv (pasted)", pcie.lspci_all), ("sudo lspci -vvv", "sudo lspci -vv -d 10de:", "lspci -nn")),
    Kind("lspci-iommu-groups", "IOMMU group listing (lspci -nns per /sys/kernel/iommu_groups)",
        p_pcie.detect_iommu_groups, pasted.as_probe("lspci_iommu_groups", "IOMMU group listing (pasted)", gpu_presence.iommu_groups),
        ("for d in /sys/kernel/iommu_groups/*/devices/*; do n=${d#*/iommu_groups/*}; n=${n%%/*}; "
        "printf 'IOMMU Group %s ' \"$n\"; lspci -nns \"${d##*/}\"; done",)),
    # wizard/parsers/platform.py detects; wizard/rules/pasted.py judges
    Kind("mokutil-sb-state", "mokutil --sb-state (Secure Boot state)", p_platform.detect_mokutil, pasted.as_probe("mokutil_sb_state", "$ mokutil --sb-state (pasted)", bios.secure_boot, rc=0),
        ("mokutil --sb-state",)),
    Kind("dmidecode-memory", "dmidecode -t 17 (memory devices: populated and empty DIMM slots)",
        p_platform.detect_dmidecode_memory, pasted.as_probe("dmidecode_17", "$ dmidecode -t 17 (pasted)", bios.memory_channels, rc=0), ("sudo dmidecode -t 17",)),
    Kind("timedatectl", "timedatectl / timedatectl show (clock synchronisation)", p_platform.detect_timedatectl,
        pasted.as_probe("timedatectl", "$ timedatectl (pasted)", os_rules.time_sync, rc=0), ("timedatectl", "timedatectl show -p NTPSynchronized -p NTP")),
    Kind("chronyc-tracking", "chronyc tracking (clock synchronisation)", p_platform.detect_chronyc, pasted.as_probe("chronyc_tracking", "$ chronyc tracking (pasted)", os_rules.time_sync, rc=0),
        ("chronyc tracking",)),
    Kind("cpu-power-sysfs", "CPU idle states and frequency policy (grep . of cpuidle/cpufreq sysfs files)",
        p_platform.detect_cpu_power_tree, pasted.platform_judge_cpu_power,
        ("grep . /sys/devices/system/cpu/cpuidle/* /sys/devices/system/cpu/cpu*/cpuidle/state*/{name,disable,latency}",
        "grep . /sys/devices/system/cpu/cpufreq/policy*/{scaling_driver,scaling_governor}")),
    Kind("fstab", "/etc/fstab or /proc/mounts (swap entries, journal barrier options)", p_platform.detect_fstab, os_rules.fstab_table,
        ("cat /etc/fstab", "cat /proc/mounts")),
    # wizard/parsers/storage.py detects; wizard/rules/storage.py judges (the data path's storage)
    Kind("fio-json", "fio (normal or --output-format=json) storage benchmark", p_storage.detect_fio,
         storage_rules.judge_fio_text,
         ("fio --output-format=json --direct=1 --ioengine=libaio --filename=/raid/fio.tmp --size=4G --runtime=30 "
          "--time_based --name=randread --rw=randread --bs=128k --iodepth=32",)),
    Kind("gdscheck", "gdscheck -p (NVIDIA GPUDirect Storage: which storage drivers and file systems it can use here)",
         p_storage.detect_gdscheck, storage_rules.judge_gdscheck_text, ("/usr/local/cuda/gds/tools/gdscheck -p",)),
    Kind("mdstat", "/proc/mdstat or mdadm --detail (software RAID arrays)", p_storage.detect_mdstat,
         pasted.as_probe("mdstat", "/proc/mdstat or mdadm --detail (pasted)", storage_rules.raid),
         ("cat /proc/mdstat", "mdadm --detail /dev/mdN")),
    # wizard/parsers/smart.py reads; wizard/rules/smart.py judges (a drive's own SMART health)
    Kind("nvme-list", "nvme list (text or -o json: the NVMe namespaces present)", p_storage.detect_nvme_list,
         storage_rules.judge_nvme_list, ("sudo nvme list",)),
    Kind("smartctl", "smartctl -a / -x / -H / -j, or nvme smart-log (text or -o json) (a drive's SMART health: ATA, NVMe, SAS)", p_smart.detect_smartctl,
         smart_rules.judge_smartctl, ("sudo smartctl -a /dev/nvme0", "sudo smartctl -x /dev/sda")),
    # wizard/parsers/bmc.py detects; wizard/rules/bmc.py judges (the BMC through ipmitool)
    Kind("ipmitool-sel", "ipmitool sel elist / sel list, ipmiutil sel, FreeIPMI ipmi-sel, or a BMC web interface's event lines (the BMC's System Event Log)", p_bmc.detect_sel,
         bmc_rules.judge_sel_text, ("sudo ipmitool sel elist",)),
    Kind("ipmitool-sel-info", "ipmitool sel info / ipmi-sel -i (how full the BMC's System Event Log is)",
         p_bmc.detect_sel_info, bmc_rules.judge_sel_info_text, ("sudo ipmitool sel info",)),
    Kind("ipmitool-sdr", "ipmitool sdr elist / sdr list / sensor (the BMC's sensors: power supplies, fans, temperatures)",
         p_bmc.detect_sdr, bmc_rules.judge_sdr_text, ("sudo ipmitool sdr elist", "sudo ipmitool sensor")),
    Kind("redfish", "Redfish JSON from a BMC (Systems, Chassis, Memory, Processors, LogServices entries: each "
         "resource's Status Health, each log entry's Severity)", p_bmc.detect_redfish, bmc_rules.judge_redfish_text,
         ("curl -sk -u USER https://BMC/redfish/v1/Systems/1",)),
    Kind("ipmitool-chassis-status", "ipmitool chassis status (the BMC's power state and chassis faults)",
         p_bmc.detect_chassis_status, bmc_rules.judge_chassis_status_text, ("sudo ipmitool chassis status",)),
    Kind("ipmitool-error", "ipmitool failing to reach a BMC (Could not open device at /dev/ipmi0, Unable to establish "
         "IPMI v2 / RMCP+ session)", p_bmc.detect_ipmi_error, bmc_rules.judge_ipmi_error_text,
         ("sudo ipmitool sel elist",)),
    # wizard/parsers/scheduler.py detects; wizard/rules/scheduler.py judges (Slurm's view of its nodes)
    Kind("slurm-scontrol-node", "scontrol show node (Slurm's record of a node: state, reason, GRES)",
         p_scheduler.detect_scontrol_node, scheduler_rules.judge_scontrol_text, ("scontrol show node NODE",)),
    Kind("slurm-sinfo", "sinfo (Slurm partitions and node states; also -N, -l, -R)", p_scheduler.detect_sinfo,
         scheduler_rules.judge_sinfo_text, ("sinfo", "sinfo -R")),
    Kind("slurmctld-log", "slurmctld's log (nodes set DOWN, DRAIN or INVAL, and why; journalctl -u slurmctld)",
         p_scheduler.detect_slurmctld_log, scheduler_rules.judge_slurmctld_text,
         ("journalctl -u slurmctld --since -1d", "sudo tail -n 500 /var/log/slurmctld.log")),
    Kind("slurmd-log", "slurmd's log (GPU autodetection with NVML, GPU GRES records and errors; journalctl -u slurmd)",
         p_scheduler.detect_slurmd_log, scheduler_rules.judge_slurmd_log_text,
         ("journalctl -u slurmd -b", "sudo tail -n 500 /var/log/slurmd.log")),
    Kind("nhc", "LBNL Node Health Check (nhc) output: checks run, failed checks, completion",
         p_scheduler.detect_nhc, scheduler_rules.judge_nhc_text, ("sudo nhc -v",)),
    Kind("slurm-squeue", "squeue (jobs and why pending ones wait: a launch failure or a node down)",
         p_scheduler.detect_squeue, scheduler_rules.judge_squeue_text, ("squeue -l",)),
    Kind("slurm-sacct", "sacct (Slurm job accounting: states such as NODE_FAIL or OUT_OF_MEMORY, exit codes, GPUs "
         "allocated)", p_scheduler.detect_sacct, scheduler_rules.judge_sacct_text,
         ("sacct -X -S now-1days -o JobID,State,ExitCode,NodeList,AllocTRES",)),
    Kind("slurm-scontrol-job", "scontrol show job (a job's state, reason, exit code, nodes and GPUs)",
         p_scheduler.detect_scontrol_job, scheduler_rules.judge_scontrol_job_text, ("scontrol show job JOBID",)),
    # wizard/parsers/smi_kinds.py detects; wizard/rules/pasted.py judges
    Kind("nvidia-smi-q-x", "nvidia-smi -q -x (XML)", p_smi_kinds.detect_xml, pasted.smi_kinds_judge(parse_smi_xml),
        ("nvidia-smi -q -x",)),
    Kind("nvidia-smi-q", "nvidia-smi -q (text, also -q -d SECTION)", p_smi_kinds.detect_q, pasted.smi_kinds_judge(parse_smi_text),
        ("nvidia-smi -q", "nvidia-smi -q -d PERFORMANCE,ECC,TEMPERATURE,POWER,PCI")),
    Kind("nvidia-smi", "nvidia-smi (default table, or the error it prints)", p_smi_kinds.detect_table,
        pasted.smi_kinds_judge(parse_smi_table), ("nvidia-smi",)),
    Kind("nvidia-smi-L", "nvidia-smi -L (GPU list with UUIDs, MIG devices)", p_gpu.detect_smi_list, pasted.smi_list_judge,
        ("nvidia-smi -L",)),
    Kind("nvidia-smi-dmon", "nvidia-smi dmon (per-GPU samples: power, temperatures, utilisation, clocks, ECC)",
         detect_smi_dmon, pasted.smi_kinds_judge(parse_smi_dmon), ("nvidia-smi dmon -s pucve -c 10",)),
    Kind("nvidia-smi-query-gpu-csv", "nvidia-smi --query-gpu=... --format=csv", p_smi_kinds.detect_csv,
        pasted.smi_kinds_judge(parse_smi_csv),
        ("nvidia-smi --query-gpu=index,name,pci.bus_id,serial,persistence_mode,ecc.mode.current,"
        "temperature.gpu,clocks_event_reasons.active,power.limit,power.default_limit,"
        "pcie.link.gen.gpucurrent,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max "
        "--format=csv",)),
    Kind("nvidia-smi-query-gpu-csv-noheader", "nvidia-smi --query-gpu=... --format=csv,noheader (rows without column names)",
        p_smi_kinds.detect_csv_noheader, pasted.smi_csv_noheader_judge,
        ("nvidia-smi --query-gpu=index,name,pci.bus_id,pstate,temperature.gpu,ecc.mode.current --format=csv",)),
    # wizard/parsers/topology.py detects; wizard/rules/pasted.py judges
    Kind("nvidia-smi-topo-m", "nvidia-smi topo -m (GPU/NIC topology matrix)", p_topology.detect_topo_matrix,
        pasted.as_probe("nvidia_smi_topo_m", "nvidia-smi topo -m (pasted)", topology.topology), ("nvidia-smi topo -m",)),
    Kind("nvidia-smi-topo-p2p", "nvidia-smi topo -p2p (GPU peer-to-peer status)", p_topology.detect_p2p_matrix,
        pasted.as_probe("nvidia_smi_topo_p2p", "nvidia-smi topo -p2p (pasted)", topology.p2p), ("nvidia-smi topo -p2p r",)),
    Kind("nvidia-smi-mig", "nvidia-smi mig -lgip / -lgi / -lcip / -lci (MIG profiles and instances)",
         p_smi_kinds.detect_mig_listing, smi.judge_mig_listing, ("nvidia-smi mig -lgip",)),
    Kind("nvidia-smi-nvlink-status", "nvidia-smi nvlink -s (NVLink link speeds)", p_topology.detect_nvlink_status,
        pasted.as_probe("nvidia_smi_nvlink_s", "nvidia-smi nvlink -s (pasted)", nvlink.nvlink), ("nvidia-smi nvlink -s",)),
    Kind("nvidia-smi-nvlink-errors", "nvidia-smi nvlink -e or dcgmi nvlink -e (NVLink error counters)", p_topology.detect_nvlink_errors,
        pasted.as_probe("nvidia_smi_nvlink_e", "nvidia-smi nvlink -e (pasted)", nvlink.nvlink_errors), ("nvidia-smi nvlink -e",)),
    Kind("nvidia-smi-nvlink-throughput", "nvidia-smi nvlink -gt d (NVLink data throughput counters)",
         p_topology.detect_nvlink_throughput,
         pasted.as_probe("nvidia_smi_nvlink_gt", "nvidia-smi nvlink -gt d (pasted)", nvlink.nvlink_traffic),
         ("nvidia-smi nvlink -gt d",)),
    Kind("dcgmi-nvlink-status", "dcgmi nvlink --link-status (NVLink link states)", p_topology.detect_dcgmi_nvlink,
        pasted.as_probe("dcgmi_nvlink", "dcgmi nvlink --link-status (pasted)", nvlink.dcgmi_nvlink),
        ("dcgmi nvlink --link-status",)),
    # wizard/parsers/launcher.py detects; wizard/rules/pasted.py judges (wizard/rules/launcher.py)
    Kind("launcher", "torchrun / torch.distributed.elastic or DeepSpeed launcher output (ChildFailedError, exit lines)",
         p_launcher.detect_launcher, pasted.launcher_judge, ("torchrun --nproc_per_node=N train.py", "deepspeed train.py")),
    ))


def __getattr__(name: str) -> Any:
    """PEP 562: :data:`KINDS` is built the first time anything reads it (``registry.KINDS`` or
    ``from wizard.registry import KINDS``), then kept as an ordinary module attribute."""
    if name == "KINDS":
        kinds = _build_kinds()
        globals()["KINDS"] = kinds
        return kinds
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------ rules


@dataclass(frozen=True)
class Rule:
    """One rule: a pure function ``(facts, plan) -> list[Finding]`` for one concern.

    Attributes:
        id: the finding id it reports (stable: scripts key on it); for a step's own rule, the step id.
        step: the catalogue step its findings join (``check``, ``status``, the TUI and the report show
            them there); the engine runs the rule whenever it checks that step.
        judge: the rule function; it reads facts through :class:`wizard.facts.Facts`.
        probes: the probes it reads (the engine collects them).
        reports: the other finding ids it may report besides ``id`` (a step whose rule judges several
            concerns together, e.g. ECC mode and ECC counts); they belong to ``step``.
        kinds: ``explain`` kinds whose pasted text it also judges: kind name -> the probe name the
            text stands for (the rule then sees it as that probe's output).
    """

    id: str
    step: str
    judge: RuleFn
    probes: tuple[str, ...]
    reports: tuple[str, ...] = ()
    kinds: Mapping[str, str] = field(default_factory=dict)


RULES: tuple[Rule, ...] = (
    Rule("grounding.serials", "grounding.serials", compose.identity_and_serials,
         ("dmi", "nvidia_smi_qx", "nvml", "pci"), reports=("grounding.gpu_serials",)),
    Rule("bios.above_4g_decoding", "bios.above_4g_decoding", bios.above_4g,
         ("lspci_vvv", "nvidia_smi_qx", "kernel_log_journal", "kernel_log_dmesg", "pci")),
    Rule("bios.iommu", "bios.iommu", bios.iommu,
         ("cmdline", "iommu")),
    Rule("bios.pcie_acs", "bios.pcie_acs", bios.pcie_acs,
         ("lspci_vvv",)),
    Rule("bios.cpu", "bios.cpu", bios.cpu,
         ("cpuinfo", "cpu_topology")),
    Rule("bios.numa", "bios.numa", bios.numa,
         ("numa",)),
    Rule("bios.memory_channels", "bios.memory_channels", bios.memory_channels,
         ("smbios_memory", "dmidecode_17", "dmi_tables", "cpu_topology")),
    Rule("bios.power_profile", "bios.power_profile", bios.power_profile,
         ("cpuidle", "cpufreq")),
    Rule("bios.pcie", "bios.pcie", bios.pcie_root_ports,
         ("lspci_vvv", "pci")),
    Rule("bios.sriov", "bios.sriov", bios.sriov,
         ("sriov",)),
    Rule("bios.secure_boot", "bios.secure_boot", bios.secure_boot,
         ("mokutil_sb_state", "efi_secureboot", "efi_firmware", "module_signing")),
    Rule("os.release", "os.release", os_rules.os_release,
         ("os_release", "kernel")),
    Rule("os.memory", "os.memory", host.memory,
         ("meminfo",)),
    Rule("os.memory_pressure", "os.memory_pressure", compose.only(host.memory_pressure, "os.memory_pressure"),
         ("free_b",)),
    Rule("os.driver_support", "os.driver_support", os_rules.os_support,
         ("os_release", "kernel")),
    Rule("os.kernel_headers", "os.kernel_headers", os_rules.kernel_headers,
         ("kernel", "kernel_build", "modules")),
    Rule("os.swap", "os.swap", os_rules.swap,
         ("swaps",)),
    Rule("os.swap_rollback", "os.swap_rollback", os_rules.swap_rollback_info,
         ("fstab",)),
    Rule("os.filesystem", "os.filesystem", os_rules.filesystems,
         ("df", "data_path_df"), reports=("os.shm",)),
    Rule("os.mount_options", "os.mount_options", os_rules.mount_options,
         ("mounts", "fstab")),
    Rule("os.time_sync", "os.time_sync", os_rules.time_sync,
         ("timedatectl", "chronyc_tracking")),
    Rule("os.tools", "os.tools", tools.lspci,
         ("lspci_version",)),
    Rule("os.nouveau", "os.nouveau", gpu_presence.nouveau,
         ("modules", "sys_module", "modprobe_d")),
    Rule("driver.branch", "driver.branch", compose.needs_gpu(driver_install.branch_choice),
         ("pci",)),
    Rule("driver.install", "driver.install", compose.needs_gpu(driver_install.installed_driver),
         ("nvidia_driver_version", "nvml", "driver_modinfo", "driver_dpkg", "driver_rpm", "pci"), reports=("driver.installed", "driver.branch_lifecycle",)),
    Rule("driver.kernel_module", "driver.kernel_module", compose.needs_gpu(driver_install.kernel_module),
         ("kernel", "driver_dkms", "driver_modinfo", "driver_dpkg", "driver_rpm", "mokutil_sb_state", "pci")),
    Rule("driver.loaded", "driver.loaded", gpu_presence.driver,
         ("modules", "sys_module", "nvidia_driver_version", "pci")),
    Rule("driver.nvidia_smi", "driver.nvidia_smi", gpu_presence.nvidia_smi,
         ("nvidia_smi_l", "pci")),
    Rule("driver.persistence", "driver.persistence", compose.needs_gpu(compose.persistence),
         ("driver_services", "nvidia_smi_qx", "nvml", "pci"), reports=("driver.persistenced", "health.persistence",)),
    Rule("driver.fabric_manager", "driver.fabric_manager", compose.fabric_manager_all,
         ("nvidia_smi_qx", "nvml", "pci", "driver_services", "driver_fm_version", "driver_dpkg", "driver_rpm", "nvidia_driver_version"), reports=("health.fabric", "driver.nscq",)),
    Rule("driver.cuda_toolkit", "driver.cuda_toolkit", compose.needs_gpu(driver_chain.cuda_toolkit),
         ("nvcc_version", "nvidia_driver_version", "nvml", "pci")),
    Rule("driver.torch_cuda", "driver.torch_cuda", compose.needs_gpu(driver_chain.torch_cuda),
         ("torch_cuda", "nvidia_driver_version", "nvml", "pci")),
    Rule("driver.dcgm", "driver.dcgm", compose.needs_gpu(driver_install.dcgm),
         ("driver_dpkg", "driver_rpm", "driver_services", "pci")),
    Rule("driver.container_toolkit", "driver.container_toolkit", compose.needs_gpu(driver_install.container_toolkit),
         ("driver_dpkg", "driver_rpm", "pci")),
    Rule("driver.chain", "driver.chain", compose.needs_gpu(driver_install.chain_summary),
         ("nvidia_driver_version", "nvml", "driver_modinfo", "driver_dpkg", "driver_rpm", "nvcc_version", "torch_cuda", "pci")),
    Rule("health.gpu_pci", "health.gpu_pci", gpu_presence.gpu_pci,
         ("pci",)),
    Rule("health.nvml", "health.nvml", gpu_presence.nvml,
         ("nvml", "pci")),
    Rule("health.gpu_count", "health.gpu_count", smi.topic_check("health.gpu_count", "health.gpu_responsive"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.gpu_responsive", "health.nvidia_smi")),
    Rule("health.kernel_log", "health.kernel_log", kernel_log.kernel_log,
         ("kernel_log_journal", "kernel_log_dmesg", "nvml"), reports=("health.xid", "health.aer", "health.storage_io", "health.host_limits", "health.driver_conflict", "health.gpu_bus", "health.gpu_init", "health.gsp", "health.pcie_limited", "health.kernel_log_ignored", "health.hw_error", "health.nic_link", "health.sxid", "health.iommu_fault")),
    Rule("health.ecc", "health.ecc", smi.topic_check("health.ecc_mode", "health.ecc"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.ecc_mode",)),
    Rule("health.row_remap", "health.row_remap", smi.topic_check("health.row_remap", "health.retired_pages", "health.gpu_reset"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.retired_pages", "health.gpu_reset",)),
    Rule("health.thermal", "health.thermal", smi.topic_check("health.temperature", "health.clock_events"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.temperature", "health.clock_events",)),
    Rule("health.gpu_fan_idle", "health.thermal", thermal_power.fan_at_idle, ("nvidia_smi_qx", "nvml", "pci"),
         kinds={"nvidia-smi-q-x": "nvidia_smi_qx", "nvidia-smi-q": "nvidia_smi_q"}),
    Rule("health.power", "health.power", smi.topic_check("health.power_limit", "health.pstate"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.power_limit", "health.pstate",)),
    Rule("health.vbios", "health.vbios", smi.topic_check("health.vbios"),
         ("nvidia_smi_qx", "nvml", "pci")),
    Rule("health.pcie_width", "health.pcie_width", compose.needs_gpu(pcie.pcie_width),
         ("lspci_vvv", "pci")),
    Rule("health.pcie_speed", "health.pcie_speed", compose.needs_gpu(pcie.pcie_speed),
         ("lspci_vvv", "pci")),
    Rule("health.pcie_errors", "health.pcie_errors", compose.needs_gpu(compose.pcie_errors),
         ("lspci_vvv", "nvidia_smi_qx", "nvml", "pci"), reports=("health.pcie_replay", "health.pcie_aer", "health.pcie_aer_counters")),
    Rule("health.pcie_acs", "health.pcie_acs", compose.needs_gpu(pcie.pcie_acs),
         ("lspci_vvv", "pci")),
    Rule("health.bar1", "health.bar1", compose.needs_gpu(pcie.gpu_bar1),
         ("lspci_vvv", "pci")),
    Rule("health.topology", "health.topology", compose.needs_gpu(topology.topology),
         ("nvidia_smi_topo_m", "pci"), reports=("health.gpu_nic_affinity",)),
    Rule("health.p2p", "health.p2p", compose.needs_gpu(topology.p2p),
         ("nvidia_smi_topo_p2p", "pci")),
    Rule("health.nvlink", "health.nvlink", compose.needs_gpu(nvlink.nvlink),
         ("nvidia_smi_nvlink_s", "pci")),
    Rule("health.nvlink_errors", "health.nvlink_errors", compose.needs_gpu(nvlink.nvlink_errors),
         ("nvidia_smi_nvlink_e", "pci")),
    Rule("health.host_memory", "health.host_memory", edac.edac,
         ("edac_sysfs",), reports=("health.mce",)),
    Rule("health.processes", "health.processes", smi.topic_check("health.gpu_processes", "health.mig"),
         ("nvidia_smi_qx", "nvml", "pci"), reports=("health.gpu_processes", "health.mig",)),
    # the BMC through ipmitool: its event log since the build started, power supplies, fans and temperatures
    Rule("health.bmc_sel", "health.bmc", bmc_rules.sel, ("ipmitool_sel", "smbios_ipmi", "dmi"), reports=("health.bmc",)),
    Rule("health.bmc_psu", "health.bmc", bmc_rules.psu, ("ipmitool_sdr", "ipmitool_sel", "smbios_ipmi", "dmi"),
         reports=("health.bmc",)),
    Rule("health.bmc_sensors", "health.bmc", bmc_rules.sensors, ("ipmitool_sdr", "ipmitool_sensor", "ipmitool_sel",
                                                                 "smbios_ipmi", "dmi"), reports=("health.bmc",)),
    # DCGM levels: only their runs judge them (the step's action); the check says whether DCGM is there to run them
    Rule("health.dcgm_l1", "health.dcgm_l1", compose.needs_gpu(dcgm_rules.installed_l1), ("driver_dpkg", "driver_rpm", "pci")),
    Rule("gpu.dcgm_l2", "gpu.dcgm_l2", compose.needs_gpu(dcgm_rules.installed_l2), ("driver_dpkg", "driver_rpm", "pci")),
    Rule("node.dcgm_l3", "node.dcgm_l3", compose.needs_gpu(dcgm_rules.installed_l3), ("driver_dpkg", "driver_rpm", "pci")),
    Rule("node.fabric", "node.fabric", fabric_node.ports,
         ("ib_sysfs", "ibstat", "ibv_devinfo")),
    Rule("node.fabric_rate", "node.fabric", fabric_node.rate,
         ("ib_sysfs", "ibstat", "ibv_devinfo")),
    Rule("node.fabric_mtu", "node.fabric", fabric_node.mtu,
         ("ib_sysfs", "ibstat", "ibv_devinfo", "net_sysfs")),
    Rule("node.gpudirect_rdma", "node.fabric", fabric_node.gpudirect,
         ("ib_sysfs", "ibstat", "ibv_devinfo", "modules", "nvidia_driver_version", "kernel", "nccl_env", "pci")),
    Rule("node.fabric_affinity", "node.fabric", fabric_node.affinity,
         ("ib_sysfs", "ibstat", "ibv_devinfo", "nvidia_smi_topo_m", "pci")),
    Rule("node.nccl_env", "node.nccl_env", fabric_node.nccl_env,
         ("nccl_env", "net_sysfs", "ib_sysfs", "ibstat", "ibv_devinfo")),
    Rule("node.rdma_bandwidth", "node.rdma_bandwidth", fabric_node.bandwidth_pending,
         ("ib_sysfs", "ibstat", "ibv_devinfo")),
    Rule("node.storage", "node.storage", storage_rules.storage,
         ("mounts", "data_path_df", "lsblk"), reports=("node.storage_mount",)),
    Rule("node.storage_raid", "node.storage", storage_rules.raid,
         ("mdstat", "lsblk", "mounts", "data_path_df")),
    Rule("node.storage_nvme_link", "node.storage", storage_rules.nvme_link,
         ("nvme_sysfs", "lsblk", "mounts", "data_path_df")),
    Rule("node.storage_tools", "node.storage_tools", storage_rules.fio_tool,
         ("fio_version",)),
)
"""Every rule the engine runs, in catalogue order, with the step it belongs to. Adding a check is one
line here (plus the rule function and its test)."""


def rules_of_step(step_id: str) -> tuple[Rule, ...]:
    """The registry rules whose findings join ``step_id``."""
    return tuple(r for r in RULES if r.step == step_id)


def apply_rules(rules: Iterable[Rule], facts: Mapping[str, Any], plan: Mapping[str, Any], step: str = "") -> list[Finding]:
    """The findings of ``rules`` over one run's ``facts`` (:class:`wizard.facts.Facts`: each parser once), each tagged
    with ``step`` (default: its rule's step). A rule that raises (a bug) yields an ``unknown`` finding naming the
    exception instead of hiding the other findings. The one loop ``check`` (per step) and the health profile use."""
    findings: list[Finding] = []
    for rule in rules:
        try:
            got = rule.judge(facts, plan)
        except Exception as exc:  # noqa: BLE001 - a bug in one rule must not hide the others
            got = [Finding(rule.id, Verdict.UNKNOWN, Msg("the check crashed: {exc!r}", exc=exc), "host", (),
                           "This is a bringup bug: please report it with a capture bundle.", "")]
        findings.extend(dataclasses.replace(f, step=step or rule.step) for f in got)
    return findings


def rules_of_kind(kind: str) -> tuple[Rule, ...]:
    """The registry rules that also judge a pasted text of explain kind ``kind``."""
    return tuple(r for r in RULES if kind in r.kinds)


PROFILES: dict[str, tuple[str, ...]] = {
    # `bringup check --profile health` (wizard/health.py): LBNL NHC's role, run by Slurm every few minutes, in a
    # prolog or an epilog. Only rules that are cheap (files, sysfs, one nvidia-smi query, the kernel log, df,
    # systemctl) and whose failure means "this node must not take jobs"; no torch, no nvcc, no long probe.
    "health": (
        "health.kernel_log",  # Xid, GPU fallen off the bus, AER fatal, SXid (first: its failure names the cause)
        "driver.loaded",  # the nvidia module loaded, /proc/driver/nvidia/version present
        "driver.nvidia_smi",  # nvidia-smi answers
        "health.gpu_pci",  # GPUs on the PCI bus, bound to nvidia
        "health.nvml",  # NVML initialises and counts them
        "health.gpu_count",  # every planned (or previously recorded) GPU listed and answering
        "health.ecc",  # uncorrectable ECC errors
        "health.row_remap",  # row-remap failure / pending, retired pages, reset required
        "health.pcie_width",  # PCIe link degraded (width)
        "health.pcie_speed",  # PCIe link degraded (speed)
        "health.nvlink",  # NVLink links down
        "driver.fabric_manager",  # Fabric Manager not running where NVSwitch needs it
        "health.host_memory",  # host memory uncorrectable errors (EDAC)
        "os.filesystem",  # a full filesystem
    ),
}
"""Named subsets of :data:`RULES` by rule id (``bringup check --profile NAME``), in the order they run and report
(``--slurm`` drains with the first failing finding as the reason)."""


def rules_of_profile(name: str) -> tuple[Rule, ...]:
    """The registry rules of profile ``name`` (:data:`PROFILES`), in the profile's order.

    Raises:
        KeyError: no such profile, or a profile naming a rule id that is not in :data:`RULES` (a registry bug).
    """
    by_id = {r.id: r for r in RULES}
    return tuple(by_id[i] for i in PROFILES[name])


# ------------------------------------------------------------------ finding ids

EXPLAIN_ONLY_IDS: dict[str, str] = {
    "bios.numa_memory": "bios.numa",  # numactl --hardware
    "driver.version": "driver.loaded",  # /proc/driver/nvidia/version
    "health.lspci_gpu_count": "health.gpu_pci",  # lspci -vv, IOMMU group listings
    "health.gpu_driver_binding": "health.gpu_pci",
    "node.nccl_errors": "node.nccl_sanity",  # NCCL_DEBUG logs
    "node.nvls": "node.nccl_sanity",
    "node.nccl_tests": "node.allreduce",  # nccl-tests output
    "multinode.hang": "multinode.transport",  # NCCL_DEBUG logs of a multi-node run
    "multinode.ib_errors": "multinode.transport",
    "multinode.imex": "multinode.transport",
    "node.training_log": "node.validate",  # a training job's step lines (loss, throughput)  # nvidia-imex-ctl -N (a multi-node NVLink domain's IMEX daemons)
    "health.smi_csv_columns": "health.gpu_count",  # nvidia-smi --query-gpu csv,noheader rows
    "health.vgpu_license": "health.gpu_count",  # a vGPU guest's nvidia-smi -q license status
    "gpu.stress_speed": "gpu.stress",  # gpu-burn output
    "gpu.stress_temp": "gpu.stress",
    "node.gdrcopy": "node.fabric",  # gdrcopy_sanity / gdrcopy_copybw / gdrcopy_copylat (GPUDirect RDMA via gdrdrv)
    "driver.service": "driver.install",  # systemctl status of a unit other than FM / persistenced / DCGM (nv_peer_mem...)
    "health.dcgm_dmon": "health.dcgm_l1",  # dcgmi dmon samples with no error field, or none
    "multinode.ib_port_state": "multinode.transport",  # ibstat / ibv_devinfo / ibstatus
    "multinode.ib_port_rate": "multinode.transport",
    "node.rank_exit": "node.validate",  # torchrun / DeepSpeed launcher: ranks that died (signal or exit code)
    "node.launch": "node.validate",  # torchrun / DeepSpeed launcher: what a clean or plan-only launch proves
    "gpu.cuda_sample": "gpu.validate",  # a CUDA sample's output (vectorAdd, matrixMul, ...)
    "driver.k8s_pods": "driver.container_toolkit",  # kubectl get pods (GPU Operator, device plugin)
    "driver.fabric_manager_log": "driver.fabric_manager",  # /var/log/fabricmanager.log
    "multinode.ib_counters": "multinode.transport",  # perfquery port counters
    "multinode.ib_bandwidth": "multinode.transport",  # ib_write_bw / ib_read_bw
    "multinode.netdev": "multinode.transport",  # ip addr / ip link: IPoIB interfaces
    "driver.cuda_env": "driver.chain",  # a CUDA library's environment report (cupy.show_config(), xformers.info, numba)
    "node.storage_sync": "node.storage_read",  # fio's fsync/fdatasync latency (the etcd test), normal or JSON output
    "node.storage_write": "node.storage_read",  # fio's plain write latency (direct or not), normal or JSON output
    "multinode.slurm_nodes": "multinode.consistency",  # scontrol show node / sinfo: nodes Slurm will not schedule on
    "node.storage_smart": "node.storage",  # smartctl -a / -x / -j: a drive's own SMART health
    "node.storage_gds": "node.storage",  # gdscheck -p: which storage GPUDirect Storage can use
    "driver.k8s_node": "driver.container_toolkit",  # kubectl describe node: GPUs advertised and allocatable, conditions
    "multinode.ib_switch": "multinode.transport",
    "multinode.hca_config": "multinode.transport",  # mlxconfig: an adapter's firmware settings waiting for a reboot  # ibswinfo: an unmanaged InfiniBand switch's PSUs, fans, temperature
    "multinode.roce_gid": "multinode.transport",
    "health.host_sensors": "health.bmc",  # lm-sensors: the host's own temperatures, fans and voltages
    "node.host_limits": "node.fabric",  # ulimit -a: the locked-memory limit RDMA registration needs  # show_gids: a RoCE port's routable (IP-carrying) RoCE v2 GID
}
"""Finding ids that only ``explain`` reports (a pasted output judged by a rule no probe feeds), and the
step each belongs to."""

FINDING_STEP: dict[str, str] = {
    **{fid: r.step for r in RULES for fid in (r.id, *r.reports) if fid != r.step},
    **EXPLAIN_ONLY_IDS,
    **fleet_rules.FLEET_IDS,  # `check --nodes`: judged across nodes, so not a per-host Rule (wizard/rules/fleet.py)
    "health.probe_timeout": "health.gpu_count",  # `check --profile`: a probe past the run's time limit (wizard/health.py)
}
"""Finding ids that are not step ids, and the step whose findings they are. A finding id that is a
step id belongs to that step."""


def step_of(finding_id: str, step_ids: Iterable[str] = ()) -> str | None:
    """The step a finding id belongs to: itself when it is a step id (``step_ids``), else
    :data:`FINDING_STEP` or the step of the registry rule that reports it; ``None`` when unknown."""
    ids = set(step_ids)
    if finding_id in ids:
        return finding_id
    return FINDING_STEP.get(finding_id)


def known_ids(step_ids: Iterable[str] = ()) -> list[str]:
    """Every id the CLI accepts where it takes a step or finding id: step ids, :data:`FINDING_STEP`'s
    finding ids and the registry rules' ids."""
    return sorted(set(step_ids) | set(FINDING_STEP) | {r.id for r in RULES})


def did_you_mean(word: str, candidates: Sequence[str], n: int = 3) -> list[str]:
    """Up to ``n`` ``candidates`` close to ``word`` (difflib ratio >= 0.6; a candidate that
    contains ``word`` or ends with its last dotted part counts too), best first."""
    close = difflib.get_close_matches(word, candidates, n=n, cutoff=0.6)
    tail = word.rsplit(".", 1)[-1]
    extra = [c for c in candidates if c not in close and (word in c or (tail and c.endswith("." + tail)))]
    return (close + extra)[:n]
