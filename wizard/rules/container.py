"""Judging NVIDIA Container Toolkit output (``bringup explain``): what the container library sees
(``nvidia-container-cli info``) and why a container did not get its GPUs (the cli's and Docker's errors).

Rules (NVIDIA Container Toolkit documentation):
* an ``initialization error`` (``nvml error: driver not loaded``, ``load library failed: libnvidia-ml.so.1``,
  ``driver rpc error``) means the host's driver is not usable by the toolkit: fail, the host's driver is the fix;
* a ``requirement error: unsatisfied condition: cuda>=X`` means the image's NVIDIA_REQUIRE_CUDA asks for a newer
  CUDA than the host driver supports: fail (upgrade the driver, or use an image for an older CUDA);
* Docker's ``could not select device driver "" with capabilities: [[gpu]]`` (or an unknown ``nvidia`` runtime):
  the NVIDIA runtime is not configured in Docker: fail;
* ``info`` listing the driver and GPUs: pass for what it shows (the GPUs are reachable from containers), the GPU
  count judged as ``nvidia-smi -L`` is, and GPUs of an architecture only end-of-life branches drive warned.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.install.catalog import architecture_of_cc, today_of
from wizard.model import Finding, Verdict
from wizard.parsers.container import ContainerCli, parse_container_cli
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.i18n import Msg, N_

DOCS = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest"
SRC_TROUBLE = f"NVIDIA Container Toolkit, Troubleshooting ({DOCS}/troubleshooting.html)"
SRC_CONFIG = (f"NVIDIA Container Toolkit install guide, 'Configuring Docker' (nvidia-ctk runtime configure "
              f"--runtime=docker; {DOCS}/install-guide.html)")
SRC_REQUIRE = (f"NVIDIA Container Toolkit, specialized configurations: NVIDIA_REQUIRE_CUDA constraints "
               f"({DOCS}/docker-specialized.html)")
SRC_INFO = f"libnvidia-container, nvidia-container-cli info (https://github.com/NVIDIA/libnvidia-container); {SRC_TROUBLE}"

_CAUSES: tuple[tuple[str, str, str], ...] = (
    (r"driver not loaded",
     N_("the NVIDIA kernel driver is not loaded on the host"),
     N_("Check on the host, not in the container: `nvidia-smi` and `lsmod | grep nvidia`. Load or install the driver "
     "(the driver & CUDA stage), then retry the container.")),
    (r"load library failed: libnvidia-ml\.so",
     N_("the container toolkit cannot load the host driver's NVML library (libnvidia-ml.so.1): the driver's user-space "
     "libraries are not installed on the host, or not where ldconfig finds them"),
     N_("Check on the host: `nvidia-smi` and `ldconfig -p | grep libnvidia-ml`. Install the driver's user-space "
     "libraries matching the kernel module; a Docker installed as a snap cannot see the host's libraries (use "
     "Docker from its apt repository).")),
    (r"driver rpc error|timed out",
     Msg("the host's driver did not answer the container library in time (driver RPC timed out)"),
     N_("Check `dmesg | grep -e NVRM -e Xid` on the host; enable persistence mode (nvidia-persistenced) so the driver "
     "stays initialised, and reset or reboot if a GPU has fallen off the bus.")),
    (r"insufficient permissions|permission denied",
     N_("the container library has no permission to use the GPUs"),
     N_("Run with the NVIDIA runtime as root (or check the rootless set-up of the toolkit) and check /dev/nvidia* "
     "permissions on the host.")),
    (r"unknown device",
     N_("the container asked for a GPU the host does not have (a wrong index or UUID in --gpus / "
     "NVIDIA_VISIBLE_DEVICES)"),
     N_("List the host's GPUs with `nvidia-smi -L` and pass existing indices or UUIDs.")),
)


def judge_container_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``nvidia-container-cli`` info or errors, Docker's no-NVIDIA-runtime error -> ``driver.container_toolkit`` findings
    (and ``driver.version``, ``health.gpu_count``, ``driver.branch`` for an info listing). Never raises."""
    r = parse_container_cli(text)
    out = _errors(r)
    if r.driver:
        out.append(Finding("driver.version", Verdict.PASS,
                           (Msg('the container library sees NVIDIA driver {driver}', driver=r.driver) + (Msg(' (CUDA {cuda})', cuda=r.cuda) if r.cuda else '')),
                           "host", (r.driver_line,), "", SRC_INFO))
    if r.devices:
        out.extend(_devices(r, exp))
    return out


def _errors(r: ContainerCli) -> list[Finding]:
    out: list[Finding] = []
    for cls, msg, line in r.errors:
        if cls == "runtime":
            out.append(Finding("driver.container_toolkit", Verdict.FAIL,
                               "Docker has no NVIDIA runtime configured: it cannot give GPUs to a container", "host",
                               (line,),
                               "Install the NVIDIA Container Toolkit on the host, then `sudo nvidia-ctk runtime "
                               "configure --runtime=docker` and `sudo systemctl restart docker`; check with `docker run "
                               "--rm --gpus all ubuntu nvidia-smi`.", SRC_CONFIG))
            continue
        if cls == "requirement":
            need = re.search(r"cuda\s*>=\s*([\d.]+)", msg)
            out.append(Finding("driver.container_toolkit", Verdict.FAIL,
                               (Msg("the image requires a newer CUDA than the host's driver supports") + (Msg(' (NVIDIA_REQUIRE_CUDA: cuda>={group})', group=need.group(1)) if need else '')), "host", (line,),
                               "Upgrade the host's driver to a branch that supports that CUDA (nvidia-smi's 'CUDA "
                               "Version' must be at least it), or use an image built for an older CUDA. Setting "
                               "NVIDIA_DISABLE_REQUIRE only hides the check: the CUDA code then fails at run time.",
                               SRC_REQUIRE))
            continue
        meaning = next(((what, fix) for rx, what, fix in _CAUSES if re.search(rx, msg, re.I)), None)
        what, fix = meaning or (Msg("the container toolkit failed ({cls}): {msg}", cls=cls or 'error', msg=msg[:160]),

                                N_("Read the error; run `nvidia-container-cli -k -d /dev/tty info` on the host for detail "
                                "and compare with the toolkit's troubleshooting guide."))
        out.append(Finding("driver.container_toolkit", Verdict.FAIL,
                           Msg("the container could not get its GPUs: {what}", what=what), "host", (line,), fix, SRC_TROUBLE))
    seen: set[str] = set()
    unique = []
    for f in out:  # one finding per distinct cause (the same error is often printed twice: docker and the hook)
        if f.message not in seen:
            seen.add(f.message)
            unique.append(f)
    return unique


def _devices(r: ContainerCli, exp: Mapping[str, Any]) -> list[Finding]:
    listing = "\n".join(f"GPU {d.index or i}: {d.model or 'GPU'} (UUID: {d.uuid or 'GPU-unknown'})"
                        for i, d in enumerate(r.devices))
    o = ProbeOutput("nvidia_smi_l", "nvidia-container-cli info (pasted)", text=listing + "\n", rc=0)
    out = [f for f in gc.smi_list({"nvidia_smi_l": o}, exp) if f.id != "health.mig"]
    out = [Finding(f.id, f.verdict, f.message.replace("nvidia-smi -L lists", "nvidia-container-cli info lists"),
                   f.subject, tuple(ln for d in r.devices for ln in d.lines)[:24], f.remedy, f.source,
                   measured=f.measured) for f in out]
    by_arch: dict[str, list[Any]] = {}
    for d in r.devices:
        arch = architecture_of_cc(d.architecture)
        if arch:
            by_arch.setdefault(arch, []).append(d)
    for arch, ds in by_arch.items():
        f = gc.ended_architecture(arch, sorted({d.model or "GPU" for d in ds}),
                                  f"compute capability {ds[0].architecture}", f"{len(ds)} GPU(s)",
                                  tuple(ln for d in ds[:4] for ln in d.lines if ln.startswith(("Model", "Architecture"))),
                                  len(ds), today_of(exp))
        if f is not None:
            out.append(f)
    return out


# ------------------------------------------------------------------ kubectl get pods (GPU Operator, device plugin)

SRC_PODS = ("Kubernetes documentation, 'Pod Lifecycle' (pod phases, container states, CrashLoopBackOff) "
            "(https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/); NVIDIA GPU Operator, troubleshooting "
            "(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/troubleshooting.html)")
_BAD = re.compile(r"CrashLoopBackOff|Error|BackOff|ErrImage|Failed|Unknown|OOMKilled|Evicted|Invalid", re.I)
_WAITING = re.compile(r"^(?:Pending|ContainerCreating|PodInitializing|Init:\d+/\d+|Terminating)$")
STUCK_S = 600
"""A pod still waiting (Pending, ContainerCreating, Init:N/M) this long (seconds, 10 minutes) is stuck, not starting:
fail (bringup's judgement: the GPU Operator's driver container builds and loads the module in a few minutes; its
other pods wait on it, so a pod waiting longer points at the driver pod)."""


def age_s(line: str) -> float | None:
    """A pod row's AGE (its last cell: ``11m``, ``8m32s``, ``3h5m``, ``2d``) in seconds; ``None`` when unreadable."""
    cell = line.split()[-1] if line.split() else ""
    parts = re.findall(r"(\d+)([dhms])", cell)
    if not parts or "".join(a + b for a, b in parts) != cell:
        return None
    return float(sum(int(a) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[b] for a, b in parts))


def judge_pods_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``kubectl get pods`` (each pod as last listed, when the paste lists them several times): a pod in an error state (CrashLoopBackOff, Error, Init:Error, ImagePullBackOff...)
    fails, a pod still waiting (Pending, ContainerCreating, Init:N/M) or Running but not ready warns, every pod
    Running and ready or Completed passes (``driver.k8s_pods``; the pods' state, not the GPUs' health)."""
    from wizard.parsers.container import parse_kubectl_pods

    listed = parse_kubectl_pods(text)
    if not listed:
        return []
    last: dict[tuple[str, str], Any] = {}
    for p in listed:  # a paste of several `kubectl get pods` over time: each pod as last listed
        last.pop((p.namespace, p.name), None)
        last[(p.namespace, p.name)] = p
    pods = list(last.values())
    bad = [p for p in pods if _BAD.search(p.status)]
    waiting = [p for p in pods if _WAITING.match(p.status)]
    unready = [p for p in pods if p.status == "Running" and p.ready.split("/")[0] != p.ready.split("/")[-1]]
    if bad:
        return [Finding("driver.k8s_pods", Verdict.FAIL,
                        (Msg('{n_bad} of {n_pods} pod(s) failing: ', n_bad=len(bad), n_pods=len(pods)) + ', '.join(f'{p.name} {p.status}' for p in bad[:4])),
                        "node", tuple(p.line for p in bad[:8]),
                        "Read the failing pod's log and events: `kubectl logs <pod> --all-containers --previous` and "
                        "`kubectl describe pod <pod>`; for the GPU Operator the driver and toolkit pods come first "
                        "(a driver pod that cannot build or load the kernel module keeps every other pod waiting).",
                        SRC_PODS)]
    stuck = [p for p in waiting if (age_s(p.line) or 0) >= STUCK_S]
    if stuck:
        return [Finding("driver.k8s_pods", Verdict.FAIL,
                        Msg("{n_stuck} of {n_pods} pod(s) stuck waiting for {minutes:.0f} minutes or more: {items}",
                            n_stuck=len(stuck), n_pods=len(pods), minutes=STUCK_S / 60,
                            items=', '.join(f'{p.name} {p.status} ({p.line.split()[-1]})' for p in stuck[:4])),
                        "node", tuple(p.line for p in stuck[:8]),
                        "Find what they wait on: the GPU Operator's driver pod first (`kubectl logs -n gpu-operator "
                        "<nvidia-driver-daemonset pod> --all-containers`: a kernel module that cannot build or load keeps "
                        "every other pod in Init), then `kubectl describe pod <pod>` (events: image pulls, scheduling).",
                        SRC_PODS)]
    if waiting or unready:
        some = waiting + unready
        return [Finding("driver.k8s_pods", Verdict.WARN,
                        (Msg('{n_some} of {n_pods} pod(s) not ready yet: ', n_some=len(some), n_pods=len(pods)) + ', '.join(f'{p.name} {p.status} {p.ready}' for p in some[:4])), "node",
                        tuple(p.line for p in some[:8]),
                        "Wait for them, then list again; a pod that stays there: `kubectl describe pod <pod>` (events: "
                        "scheduling, image pulls, init containers waiting on the driver).", SRC_PODS)]
    restarts = [p for p in pods if p.restarts]
    return [Finding("driver.k8s_pods", Verdict.PASS,
                    (Msg('all {n_pods} pod(s) Running and ready or Completed', n_pods=len(pods)) + (Msg(' ({n_restarts} restarted at some point: {items})', n_restarts=len(restarts), items=', '.join(f'{p.name} {p.restarts}' for p in restarts[:3])) if restarts else '') + Msg("; this shows the pods, not the GPUs' health")), "node",
                    tuple(p.line for p in pods[:8]), "", SRC_PODS)]
