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
from wizard.rules.kernel_log_common import plural
from wizard.model import Finding, Verdict
from wizard.parsers.container import ContainerCli, parse_container_cli
from wizard.probes import ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.common import sat_int
from wizard.i18n import Msg, N_, joined
from wizard.common import lazy_re

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
    (r"failed to detect NVIDIA devices",
     N_("the container library found no NVIDIA device on the host (no /dev/nvidia* device node): the driver is not "
        "loaded, or its device nodes were never created"),
     N_("Check on the host: `nvidia-smi`, `lsmod | grep nvidia` and `ls -l /dev/nvidia*`. Load or install the driver "
        "(the driver & CUDA stage); on a host that loads the module without nvidia-modprobe, create the device nodes "
        "(`nvidia-smi` once as root does), then retry.")),
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
        if cls == "not_injected":
            out.append(Finding("driver.container_toolkit", Verdict.FAIL,
                               N_("the container got no GPUs: nvidia-smi is not in it, so the NVIDIA runtime did not "
                                  "mount the driver's tools and libraries (started without --gpus, or Docker has no "
                                  "NVIDIA runtime)"), "host", (line,),
                               N_("Start it with the GPUs: `docker run --rm --gpus all IMAGE nvidia-smi` (or "
                                  "`--runtime=nvidia`); if that fails too, install the NVIDIA Container Toolkit and run "
                                  "`sudo nvidia-ctk runtime configure --runtime=docker` and `sudo systemctl restart "
                                  "docker`."), SRC_CONFIG))
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
_BAD = lazy_re(r"CrashLoopBackOff|Error|BackOff|ErrImage|Failed|Unknown|OOMKilled|Evicted|Invalid", re.I)
_WAITING = lazy_re(r"^(?:Pending|ContainerCreating|PodInitializing|Init:\d+/\d+|Terminating)$")
STUCK_S = 600
"""A pod still waiting (Pending, ContainerCreating, Init:N/M) this long (seconds, 10 minutes) is stuck, not starting:
fail (bringup's judgement: the GPU Operator's driver container builds and loads the module in a few minutes; its
other pods wait on it, so a pod waiting longer points at the driver pod)."""
RESTARTS_STUCK = 5
"""A pod still waiting (Init:N/M) or not ready after this many restarts is crash-looping, not starting: Kubernetes
restarts a failing container with an exponential back-off up to 5 minutes (Kubernetes docs, Pod Lifecycle, 'Container
restart policy', https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#restart-policy); bringup's
judgement is that five failed starts is no longer "not ready yet"."""


def age_s(line: str) -> float | None:
    """A pod row's AGE (its last cell: ``11m``, ``8m32s``, ``3h5m``, ``2d``) in seconds; ``None`` when unreadable."""
    return _duration_s(line.split()[-1] if line.split() else "")


def _duration_s(cell: str) -> float | None:
    """kubectl's duration (``7m47s``, ``3h5m``, ``2d``) in seconds; ``None`` when ``cell`` is not one."""
    parts = re.findall(r"(\d+)([dhms])", cell)
    if not parts or "".join(a + b for a, b in parts) != cell:
        return None
    return float(sum(int(a) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[b] for a, b in parts))


RESTART_RECENT_S = 3600
"""A restart this recent (seconds: an hour), after :data:`RESTARTS_STUCK` or more, is a pod still dying, not one that
restarted while the node came up days ago (bringup's judgement)."""


def _last_restart_s(line: str) -> float | None:
    """A pod row's "N (7m47s ago)" restart age in seconds (kubectl 1.26+ prints it beside RESTARTS); None without it."""
    m = re.search(r"\b\d+ \((\d+[dhms](?:\d+[dhms]){0,3}) ago\)", line)
    return _duration_s(m.group(1)) if m else None


def judge_pods_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``kubectl get pods`` (each pod as last listed, when the paste lists them several times): a pod in an error state (CrashLoopBackOff, Error, Init:Error, ImagePullBackOff...)
    fails, a pod still waiting (Pending, ContainerCreating, Init:N/M) or Running but not ready warns, a ready pod
    restarted :data:`RESTARTS_STUCK` times or more and again within :data:`RESTART_RECENT_S` warns, every pod Running and ready or
    Completed passes (``driver.k8s_pods``; the pods' state, not the GPUs' health)."""
    from wizard.parsers.container import parse_kubectl_daemonsets, parse_kubectl_pods

    listed = parse_kubectl_pods(text)
    if not listed:
        return _daemonsets(parse_kubectl_daemonsets(text))
    last: dict[tuple[str, str], Any] = {}
    for p in listed:  # a paste of several `kubectl get pods` over time: each pod as last listed
        last.pop((p.namespace, p.name), None)
        last[(p.namespace, p.name)] = p
    pods = list(last.values())
    bad = [p for p in pods if _BAD.search(p.status)]
    waiting = [p for p in pods if _WAITING.match(p.status)]
    unready = [p for p in pods if p.status == "Running" and p.ready.split("/")[0] != p.ready.split("/")[-1]]
    if bad and all(_MONITORING.search(p.name) for p in bad) and not (waiting or unready):
        # only the monitoring pods fail (held-out round 372: nvidia-dcgm in CrashLoopBackOff, 1426 restarts, beside a
        # running exporter, device plugin and validator): GPUs are offered, their metrics are not collected
        return [Finding("driver.k8s_pods", Verdict.WARN,
                        Msg("GPU monitoring is down: {items}; every other pod runs, so GPUs are offered, but their "
                            "metrics and health watches are not collected",
                            items=", ".join(f"{p.name} {p.status} ({p.restarts or 0} restarts)" for p in bad[:4])),
                        "node", tuple(p.line for p in bad[:8]),
                        "Read the monitoring pod's log: `kubectl logs <pod> --previous` and `kubectl describe pod <pod>` "
                        "(a second DCGM host engine on the node, or a profiling module another tool holds, are common).",
                        SRC_PODS)]
    if bad:
        return [Finding("driver.k8s_pods", Verdict.FAIL,
                        (Msg('{n_bad} of {n_pods} pod(s) failing: ', n_bad=len(bad), n_pods=len(pods)) + ', '.join(f'{p.name} {p.status}' for p in bad[:4])),
                        "node", tuple(p.line for p in bad[:8]),
                        "Read the failing pod's log and events: `kubectl logs <pod> --all-containers --previous` and "
                        "`kubectl describe pod <pod>`; for the GPU Operator the driver and toolkit pods come first "
                        "(a driver pod that cannot build or load the kernel module keeps every other pod waiting).",
                        SRC_PODS)]
    stuck = [p for p in waiting if (age_s(p.line) or 0) >= STUCK_S]
    looping = [p for p in waiting + unready if p not in stuck and (p.restarts or 0) >= RESTARTS_STUCK]
    if looping:
        return [Finding("driver.k8s_pods", Verdict.FAIL,
                        Msg("{n} of {n_pods} pod(s) not ready after {least} restarts or more: {items}: they fail and "
                            "restart in a loop", n=len(looping), n_pods=len(pods), least=RESTARTS_STUCK,
                            items=', '.join(f'{p.name} {p.status} {p.ready} ({p.restarts} restarts)' for p in looping[:4])),
                        "node", tuple(p.line for p in looping[:8]),
                        "Read why the last run ended: `kubectl logs <pod> --all-containers --previous` and `kubectl "
                        "describe pod <pod>`; for the GPU Operator's validator, the init container it is stuck in names "
                        "the part (driver, toolkit, cuda, plugin) that does not work on that node.", SRC_PODS)]
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
    flapping = [p for p in pods if (p.restarts or 0) >= RESTARTS_STUCK
                and (ago := _last_restart_s(p.line)) is not None and ago < RESTART_RECENT_S]
    if flapping:
        # Running and ready now, but restarted again within the hour after many restarts (held-out round 292: a
        # dcgm-exporter at 11 restarts, the last 7m47s ago): it keeps dying, so what it serves comes and goes
        return [Finding("driver.k8s_pods", Verdict.WARN,
                        Msg("{n} of {n_pods} pod(s) running but restarting: {items}: a container that keeps dying "
                            "(its service comes and goes)", n=len(flapping), n_pods=len(pods),
                            items=", ".join(f"{p.name} {p.restarts} restarts, the last {p.line.split('(')[1].split(')')[0]}"
                                            for p in flapping[:4])), "node", tuple(p.line for p in flapping[:8]),
                        "Read why the last run ended: `kubectl logs <pod> --previous` and `kubectl describe pod <pod>` "
                        "(Last State: its exit code, OOMKilled).", SRC_PODS)]
    return [Finding("driver.k8s_pods", Verdict.PASS,
                    (Msg('all {n_pods} pod(s) Running and ready or Completed', n_pods=len(pods)) + (Msg(' ({n_restarts} restarted at some point: {items})', n_restarts=len(restarts), items=', '.join(f'{p.name} {p.restarts}' for p in restarts[:3])) if restarts else '') + Msg("; this shows the pods, not the GPUs' health")), "node",
                    tuple(p.line for p in pods[:8]), "", SRC_PODS)]


_MONITORING = lazy_re(r"dcgm-exporter|nvidia-dcgm\b")
"""The GPU Operator's monitoring daemonsets (DCGM and its Prometheus exporter): not on the path that offers GPUs to pods
(NVIDIA GPU Operator documentation, its components)."""


def _daemonsets(sets: list[Any]) -> list[Finding]:
    """``kubectl get daemonsets`` -> ``driver.k8s_pods``: a daemonset whose pods are not all ready (READY below
    DESIRED) for :data:`STUCK_S` or longer fails (the GPU Operator's driver, toolkit and device-plugin daemonsets: the
    node offers no GPU until they are), younger warns; ready but UP-TO-DATE below DESIRED warns (a rollout, e.g. a
    driver upgrade, not finished); every daemonset ready and up to date passes (DESIRED 0: no node selected)."""
    if not sets:
        return []
    operator = [d for d in sets if re.search(r"gpu-feature-discovery|nvidia-(?:dcgm|operator-validator|driver|"
                                              r"container-toolkit|mig-manager)", d.name)]
    if len(operator) >= 3 and not any("device-plugin" in d.name for d in sets):
        # the GPU Operator's other daemonsets, not its device plugin: nothing registers nvidia.com/gpu with the kubelet
        return [Finding("driver.k8s_pods", Verdict.FAIL,
                        Msg("the GPU Operator's daemonsets are listed ({names}) but not its device plugin "
                            "(nvidia-device-plugin-daemonset): nothing advertises nvidia.com/gpu, so no GPU pod is "
                            "scheduled", names=", ".join(d.name for d in operator[:5])), "node",
                        tuple(d.line for d in sets[:8]),
                        "Check the ClusterPolicy (`kubectl get clusterpolicy -o yaml`: devicePlugin.enabled) and the "
                        "operator's log for why it did not create the device plugin's daemonset; a node label that "
                        "disables it (nvidia.com/gpu.deploy.device-plugin=false) keeps it off that node.", SRC_PODS)]
    short = [d for d in sets if d.ready < d.desired]
    if short and all(_MONITORING.search(d.name) for d in short):
        # only the exporters are down: the GPUs are offered and usable, their metrics are not collected (held-out
        # round 342: nvidia-dcgm-exporter 0/3 ready beside a ready toolkit and device plugin)
        items = ", ".join(f"{d.name} {d.ready}/{d.desired} ready ({d.line.split()[-1]})" for d in short[:5])
        return [Finding("driver.k8s_pods", Verdict.WARN,
                        Msg("GPU monitoring is down: {items}; the GPU path (driver, toolkit, device plugin) is ready, so "
                            "GPUs are offered, but their metrics and health watches are not collected", items=items),
                        "node", tuple(d.line for d in short[:8]),
                        "Read the exporter pod's log and events (`kubectl logs -n <namespace> <pod>`, `kubectl describe "
                        "pod <pod>`): a DCGM host engine it cannot reach or a port already in use are common causes.",
                        SRC_PODS)]
    if short:
        stuck = [d for d in short if (age_s(d.line) or 0) >= STUCK_S]
        items = ", ".join(f"{d.name} {d.ready}/{d.desired} ready ({d.line.split()[-1]})" for d in short[:5])
        return [Finding("driver.k8s_pods", Verdict.FAIL if stuck else Verdict.WARN,
                        Msg("{n} of {n_sets} daemonset(s) with pods not ready{how}: {items}", n=len(short),
                            n_sets=len(sets), items=items,
                            how=Msg(" for {minutes:.0f} minutes or more", minutes=STUCK_S / 60) if stuck else ""),
                        "node", tuple(d.line for d in short[:8]),
                        "List their pods (`kubectl get pods -n <namespace> -o wide`) and read the first not ready: the "
                        "GPU Operator's driver pod comes first (a kernel module that cannot build or load keeps the "
                        "toolkit, device plugin and exporter pods waiting), then `kubectl describe pod <pod>`.",
                        SRC_PODS)]
    behind = [d for d in sets if d.up_to_date < d.desired]
    if behind:  # ready, but not every pod runs the current template: a rollout (a driver upgrade) not finished
        return [Finding("driver.k8s_pods", Verdict.WARN,
                        Msg("{n} daemonset(s) not rolled out on every node: {items}: some pods still run the previous "
                            "template (an upgrade stuck or in progress)", n=len(behind),
                            items=", ".join(f"{d.name} {d.up_to_date}/{d.desired} up to date" for d in behind[:5])),
                        "node", tuple(d.line for d in behind[:8]),
                        "Find the node whose pod is not up to date (`kubectl get pods -n <namespace> -o wide`); for the "
                        "GPU Operator's driver upgrade read the node's nvidia.com/gpu-driver-upgrade-state label "
                        "(upgrade-failed) and that driver pod's log, then let the upgrade finish or delete the pod.",
                        SRC_PODS)]
    return [Finding("driver.k8s_pods", Verdict.PASS,
                    Msg("all {n_sets} daemonset(s) have their desired pods ready; this shows the pods, not the GPUs' "
                        "health", n_sets=len(sets)), "node", tuple(d.line for d in sets[:8]), "", SRC_PODS)]


# ------------------------------------------------------------------ kubectl describe node (what the kubelet advertises)

SRC_K8S_NODE = ("Kubernetes documentation, 'Device Plugins' (a device plugin advertises nvidia.com/gpu; a device it "
                "reports unhealthy is taken out of the node's allocatable count) "
                "(https://kubernetes.io/docs/concepts/extend-kubernetes/compute-storage-net/device-plugins/) and 'Nodes', "
                "node conditions Ready / MemoryPressure / DiskPressure / PIDPressure "
                "(https://kubernetes.io/docs/concepts/architecture/nodes/#condition); NVIDIA k8s-device-plugin "
                "(https://github.com/NVIDIA/k8s-device-plugin: GPUs with a critical Xid are marked unhealthy)")
K8S_PRESSURE = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
"""Node conditions that are a problem when True (Kubernetes 'Nodes', Condition)."""


def judge_k8s_node_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``kubectl describe node``: ``driver.k8s_node``: Ready False/Unknown fails; a pressure condition True, or the node
    cordoned (Unschedulable), warns; fewer GPUs allocatable than its capacity warns (the device plugin reports some
    unhealthy); a node that advertises no GPU resource warns (no device plugin registered). ``health.gpu_count``: the
    advertised GPUs against the plan's gpu_count (:func:`count_verdict`); with no plan, the GPU model's label
    (``nvidia.com/gpu.product``) for a count of SXM GPUs no HGX node has; with neither, a power-of-two count (1, 2, 4,
    8, 16: what GPU servers are built with) passes and another count is unknown (nothing to compare
    with)."""
    from wizard.parsers.container import parse_k8s_node
    from wizard.rules.gpu_presence import SRC_A1, count_measure, count_verdict, sxm_count_doubt, sxm_count_finding

    node = parse_k8s_node(text)
    if node is None:
        return [Finding("driver.k8s_node", Verdict.UNKNOWN, "no node status could be read from this kubectl output",
                        "node", tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole `kubectl describe node <name>` output.", SRC_K8S_NODE)]
    who = node.name or "this node"
    out: list[Finding] = []
    ready = node.conditions.get("Ready")
    pressure = [k for k in K8S_PRESSURE if node.conditions.get(k) == "True"]
    cond_ev = tuple(ln for ln in node.lines if ln.split()[:1] and ln.split()[0] in ("Ready", *K8S_PRESSURE))
    if ready in ("False", "Unknown"):
        out.append(Finding("driver.k8s_node", Verdict.FAIL, Msg("{who}: condition Ready is {ready}: the kubelet is not "
                                                                "running pods here", who=who, ready=ready), who, cond_ev,
                           "Read the Ready condition's reason and message, then `journalctl -u kubelet` on the node "
                           "(container runtime, network plugin, certificates, disk).", SRC_K8S_NODE))
    if pressure:
        out.append(Finding("driver.k8s_node", Verdict.WARN, Msg("{who}: {conds} is True: the kubelet evicts pods and "
                                                                "admits no new ones under it", who=who,
                                                                conds=", ".join(pressure)), who, cond_ev,
                           "Free memory, disk or PIDs on the node (`kubectl describe node` gives each condition's "
                           "message), then check the condition turns False.", SRC_K8S_NODE))
    agent = [f"{k} {v}" for k, v in node.conditions.items() if k not in ("Ready", *K8S_PRESSURE)
             and ((k.endswith("Ready") and v in ("False", "Unknown")) or (not k.endswith("Ready") and v == "True"))]
    if agent:
        # conditions a node-health agent adds (node-problem-detector: KernelDeadlock, ReadonlyFilesystem, true = a
        # problem; the EKS node monitoring agent: AcceleratedHardwareReady, NetworkingReady, false = a problem)
        out.append(Finding("driver.k8s_node", Verdict.WARN, Msg("{who}: a node-health agent's condition says a problem: "
                                                                "{conds}", who=who, conds=", ".join(agent)), who,
                           tuple(ln for ln in node.lines if ln.split()[:1] and ln.split()[0] in
                                 {a.split()[0] for a in agent})[:6],
                           "Read the condition's reason and message (`kubectl describe node`), and the agent's pod log on "
                           "this node; fix what it names, then check the condition clears.",
                           f"{SRC_K8S_NODE}; kubernetes/node-problem-detector README (custom conditions, problem when "
                           "True: https://github.com/kubernetes/node-problem-detector); Amazon EKS User Guide, node health "
                           "(the node monitoring agent's conditions such as AcceleratedHardwareReady: false = a problem)"))
    if node.unschedulable:
        out.append(Finding("driver.k8s_node", Verdict.WARN, Msg("{who} is cordoned (Unschedulable: true): no new pod "
                                                                "lands here", who=who), who,
                           tuple(ln for ln in node.lines if ln.startswith("Unschedulable")),
                           "`kubectl uncordon <node>` when the node is ready for work.", SRC_K8S_NODE))
    cap, alloc = node.gpus(node.capacity), node.gpus(node.allocatable)
    count_label = node.labels.get("nvidia.com/gpu.count", "")
    labelled = sat_int(count_label) if count_label.isdigit() else 0
    if labelled and (cap or alloc) and not sum((cap or alloc).values()):
        # GPU Feature Discovery sees the GPUs, the device plugin advertises none of them (held-out round 137)
        out.append(Finding("driver.k8s_node", Verdict.FAIL,
                           Msg("{who}: its GPU labels say {n} GPU(s) (nvidia.com/gpu.count={n}), but nvidia.com/gpu is "
                               "0 in Capacity and Allocatable: the device plugin advertises none, so no GPU pod is "
                               "scheduled here", who=who, n=labelled), who,
                           tuple([f"nvidia.com/gpu.count={labelled}"] + [ln for ln in node.lines if "gpu" in ln][:4]),
                           "Read the device plugin's pod on this node (`kubectl get pods -n gpu-operator -o wide`, then "
                           "its log): 'NVML not detected' or 'Incompatible strategy' means the container runtime does "
                           "not give it the driver (the NVIDIA runtime as the default or the runtime class).",
                           SRC_K8S_NODE))
        return out
    advertised = cap or alloc
    gpu_ev = tuple(ln for ln in node.lines if "/" in ln and ("gpu" in ln or "mig-" in ln))
    zero = [k for k, v in {**node.capacity, **node.allocatable}.items()
            if (k == "nvidia.com/gpu" or k.startswith("nvidia.com/mig-")) and re.match(r"0(?!\d)", str(v).strip())]
    if not advertised and zero:
        # the resource is registered (the device plugin ran here) with no GPU in it: it finds none, or reports every
        # one unhealthy (held-out round 71: MicroK8s, nvidia.com/gpu: 0 in both blocks)
        out.append(Finding("driver.k8s_node", Verdict.FAIL,
                           Msg("{who}: {res} is 0 in Capacity and Allocatable: the GPU resource is registered on this "
                               "node, but the device plugin advertises no GPU in it (it finds none, or reports each "
                               "unhealthy), so no GPU pod is scheduled here", who=who, res=", ".join(zero)), who,
                           tuple(ln for ln in node.lines if any(z in ln for z in zero))[:4],
                           "Read the device plugin's pod log on this node (`kubectl get pods -n gpu-operator -o wide`, "
                           "then `kubectl logs`): 'NVML not detected', 'No devices found' or an unhealthy-device line "
                           "says why; check `nvidia-smi` on the host and the container runtime (the NVIDIA runtime as "
                           "the default or the runtime class), then restart the plugin.", SRC_K8S_NODE))
        return out
    if not advertised and node.plugin_pod and node.allocated and not any("gpu" in r for r in node.allocated):
        # the device plugin runs here, yet the Allocated resources table (every allocatable resource) has no GPU
        out.append(Finding("driver.k8s_node", Verdict.FAIL,
                           Msg("{who}: the NVIDIA device plugin runs here, but no GPU resource (nvidia.com/gpu) is in "
                               "its Allocated resources ({res}): the plugin advertises no GPU, so no GPU pod is "
                               "scheduled here",
                               who=who, res=", ".join(node.allocated[:6])), who,
                           (node.plugin_pod,) + tuple(f"Allocated: {r}" for r in node.allocated[:4]),
                           "Read the device plugin's pod log on this node (`kubectl logs -n <namespace> <pod>`): 'NVML "
                           "not detected', 'No devices found' or an unhealthy-device line says why; check `nvidia-smi` "
                           "on the host and the container runtime (the NVIDIA runtime as the default or the runtime "
                           "class), then restart the plugin.", SRC_K8S_NODE))
        return out
    if not advertised:
        if node.capacity or node.allocatable:
            out.append(Finding("driver.k8s_node", Verdict.WARN, Msg("{who} advertises no GPU resource (no nvidia.com/gpu "
                                                                    "in Capacity or Allocatable)", who=who), who,
                               tuple(node.lines[:4]),
                               "On a GPU node: check the device plugin's pod on it (`kubectl get pods -n gpu-operator -o "
                               "wide`) and its log; it registers nvidia.com/gpu once the driver and toolkit work.",
                               SRC_K8S_NODE))
        return out or [Finding("driver.k8s_node", Verdict.PASS, Msg("{who}: Ready, no pressure condition", who=who) if ready
                               else Msg("{who}: no problem in the conditions shown ({conds}); its Ready condition is not "
                                        "in this excerpt", who=who, conds=", ".join(f"{k} {v}" for k, v in
                                                                                     node.conditions.items())),
                               who, cond_ev or tuple(node.lines[:4]), "", SRC_K8S_NODE)]
    short = {k: (cap[k], alloc.get(k, 0)) for k in cap if k in alloc and alloc[k] < cap[k]}
    if short:
        # the device plugin withdraws a GPU from Allocatable when its health check sees a critical Xid on it (NVIDIA
        # k8s-device-plugin README, health checks): half or more withdrawn fails (the node cannot take a job of its
        # size; held-out round 256: 4 of 8), fewer warn (the node schedules short of them; round 120: 70 of 80)
        most = any(2 * a <= c for c, a in short.values())
        out.append(Finding("driver.k8s_node", Verdict.FAIL if most else Verdict.WARN,
                           Msg("{who}: ", who=who) + joined("; ", [Msg("{res} allocatable {a} of capacity {c}", res=k,
                                                                       a=a, c=c) for k, (c, a) in short.items()])
                           + Msg(": the device plugin reports the others unhealthy"), who, gpu_ev,
                           "Read the device plugin's log for the GPU it marked unhealthy (an Xid: `kubectl logs -n "
                           "gpu-operator <nvidia-device-plugin pod>`), and `nvidia-smi` / `dmesg | grep Xid` on the node.",
                           SRC_K8S_NODE))
    other_zero = [k for k, v in {**node.capacity, **node.allocatable}.items()
                  if "gpu" in k.lower() and "/" in k and k not in advertised and k not in zero
                  and re.match(r"0(?!\d)", str(v).strip())]
    if other_zero:
        # another device plugin's GPU resource (a sharing plugin's "shared-gpu", a GPU-memory resource) registered with
        # nothing in it, beside the GPUs nvidia.com/gpu advertises (held-out round 280)
        out.append(Finding("driver.k8s_node", Verdict.WARN,
                           Msg("{who}: {res} is 0: that GPU resource is registered on this node, but its device plugin "
                               "advertises nothing in it, so pods that request it stay Pending", who=who,
                               res=", ".join(other_zero)), who,
                           tuple(ln for ln in node.lines if any(z in ln for z in other_zero))[:4],
                           "Read the log of the device plugin that registers it (`kubectl get pods -A -o wide | grep "
                           "<node>`, then `kubectl logs`); a sharing plugin needs the GPUs it shares (and often its own "
                           "node label or config) before it advertises any.", SRC_K8S_NODE))
    seen = sum(advertised.values())
    requested = sum(sat_int(v) for k, v in node.requests.items() if k in advertised and v.isdigit())
    what = Msg("{who} advertises {gpus} ({res})", who=who, gpus=plural(seen, "GPU"),
               res=", ".join(f"{k} {v}" for k, v in advertised.items())) + (
        Msg(", {r} requested by pods", r=requested) if node.requests else "")
    want = gc.plan_count(exp)  # the one reading of the plan's gpu_count (an int above 0, never a bool)
    model = node.labels.get("nvidia.com/gpu.product", "").replace("-", " ")
    cm = count_measure(seen, want, "GPUs the node advertises (the plan's gpu_count)")
    v = count_verdict(seen, want)
    if want is not None:
        out.append(Finding("health.gpu_count", v, what + (Msg(", as the plan expects") if v is Verdict.PASS else
                                                         Msg("; the plan expects {want}", want=want)), who, gpu_ev,
                           "" if v is Verdict.PASS else "Compare with `nvidia-smi -L` on the node: a GPU the driver "
                           "lists that the plugin does not advertise is unhealthy to it; one missing from nvidia-smi "
                           "too failed to initialise (dmesg: NVRM/Xid).", SRC_A1, measured=cm))
    elif model and (doubt := sxm_count_doubt(seen, [model])) is not None:
        out.append(sxm_count_finding(what, doubt, gpu_ev))
    elif model:
        out.append(Finding("health.gpu_count", Verdict.PASS, what + Msg(" ({model})", model=model), who, gpu_ev, "",
                           SRC_K8S_NODE))
    else:
        # what the node shows is healthy (it offers GPUs); with no plan a count GPU servers are built with (1, 2, 4, 8,
        # 16) passes, another (7: one of 8 missing?) stays a question for the plan
        usual = seen > 0 and seen & (seen - 1) == 0
        out.append(Finding("health.gpu_count", Verdict.PASS if usual else Verdict.UNKNOWN,
                           what + Msg(": whether that is all of them, neither the "
                                      "plan's gpu_count nor the GPU model label "
                                      "(nvidia.com/gpu.product) says"), who, gpu_ev,
                           "Set the plan's GPU count (`bringup plan gpu_count=N`), or paste the node's labels too (GPU "
                           "Feature Discovery sets nvidia.com/gpu.product).", SRC_K8S_NODE))
    if not any(f.verdict in (Verdict.FAIL, Verdict.WARN) and f.id == "driver.k8s_node" for f in out) and (
            ready == "True" or not node.conditions):
        said = Msg("{who}: Ready, no pressure condition", who=who) if ready == "True" else Msg(
            "{who}: conditions not in this paste", who=who)
        gpus_said = (Msg("; every GPU of its capacity is allocatable") if cap and alloc else
                     Msg("; its GPU capacity is not in this paste") if alloc else Msg("; its allocatable GPUs are not in this paste"))
        out.insert(0, Finding("driver.k8s_node", Verdict.PASS, said + gpus_said,
                              who, cond_ev + gpu_ev[:2], "", SRC_K8S_NODE))
    return out


SRC_DEVICE_PLUGIN = ("NVIDIA k8s-device-plugin (https://github.com/NVIDIA/k8s-device-plugin#prerequisites): it loads "
                     "the driver's NVML through the NVIDIA container runtime, serves nvidia.com/gpu on the kubelet's "
                     "device-plugin socket and registers it; Kubernetes, Device Plugins "
                     "(https://kubernetes.io/docs/concepts/extend-kubernetes/compute-storage-net/device-plugins/)")


def judge_device_plugin_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``driver.k8s_node`` from NVIDIA's k8s-device-plugin log: it found no GPU (NVML not loadable, an incompatible
    strategy, "No devices found") FAIL; it registered its resource with the kubelet PASS; else UNKNOWN."""
    from wizard.parsers.container import parse_device_plugin_log

    d = parse_device_plugin_log(text)
    fid = "driver.k8s_node"
    if d.no_devices:
        return [Finding(fid, Verdict.FAIL,
                        N_("the device plugin found no GPU (it could not load NVML, the driver's library): it advertises "
                           "no nvidia.com/gpu, so no GPU pod is scheduled on this node"), "node", tuple(d.no_devices[:5]),
                        N_("Give the plugin the driver: the NVIDIA container runtime as the node's default runtime (or the "
                           "plugin's runtimeClassName), the NVIDIA Container Toolkit installed and configured "
                           "(`nvidia-ctk runtime configure`), `nvidia-smi` working on the host; then restart the plugin's "
                           "pod."), SRC_DEVICE_PLUGIN)]
    if d.unhealthy:
        return [Finding(fid, Verdict.FAIL,
                        Msg("the device plugin marked {n} GPU(s) unhealthy: it stops advertising them, so the node's "
                            "allocatable nvidia.com/gpu drops and no pod gets them", n=len(d.unhealthy)), "node",
                        tuple(d.unhealthy[:5]),
                        N_("Read why on each line (a critical Xid: `dmesg | grep Xid` and `nvidia-smi -q` on the node, "
                           "reset or replace the GPU); a plugin that marks GPUs unhealthy for its own reasons (no "
                           "health check for this GPU) needs a newer plugin, or DP_DISABLE_HEALTHCHECKS for that reason; "
                           "restart the plugin's pod after the fix."), SRC_DEVICE_PLUGIN)]
    if d.strategy[0] == "tegra" and not any("nvidia.com/gpu" in r for r, _ in d.registered):
        return [Finding(fid, Verdict.WARN,
                        N_("the device plugin runs with deviceDiscoveryStrategy \"tegra\": it looks for a Jetson's "
                           "integrated GPU, not PCIe GPUs through NVML, so on a discrete-GPU server it advertises none "
                           "(auto picks tegra when it finds Tegra files and no working NVML)"), "node",
                        (d.strategy[1],) + tuple(d.no_devices[:3]),
                        N_("On a discrete-GPU node set the strategy to nvml (Helm value deviceDiscoveryStrategy=nvml, or "
                           "--device-discovery-strategy=nvml), make NVML loadable in the plugin's pod (the NVIDIA runtime "
                           "and toolkit), restart it and check that it logs 'Registered device plugin for "
                           "'nvidia.com/gpu' with Kubelet'."), SRC_DEVICE_PLUGIN)]
    if d.registered:
        res = ", ".join(dict.fromkeys(r for r, _ in d.registered))
        return [Finding(fid, Verdict.PASS,
                        Msg("the device plugin registered {res} with the kubelet, with no error in this log", res=res),
                        "node", tuple(ln for _, ln in d.registered[:3]), "", SRC_DEVICE_PLUGIN)]
    return [Finding(fid, Verdict.UNKNOWN, N_("a device-plugin log that neither registers a resource nor reports an error"),
                    "node", tuple(text.strip().splitlines()[:4]),
                    N_("Paste the plugin's log down to its 'Registered device plugin ... with Kubelet' line."),
                    SRC_DEVICE_PLUGIN)]
