"""NVIDIA Container Toolkit output: ``nvidia-container-cli info`` (the driver and GPUs the container library
sees) and the errors the toolkit and Docker print when a container cannot get its GPUs. Pure: never raises.

``nvidia-container-cli -k -d /dev/tty info`` prints (glog-style ``I1228 13:13:39.098291 6357 nvc_info.c:489]``
debug lines around it)::

    NVRM version:   384.130
    CUDA version:   9.0

    Device Index:   0
    Device Minor:   0
    Model:          GeForce 920M
    GPU UUID:       GPU-4712226b-...
    Bus Location:   00000000:08:00.0
    Architecture:   3.5

Errors (NVIDIA Container Toolkit troubleshooting guide; libnvidia-container's error strings)::

    nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown
    nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared object file
    nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version
    docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from wizard.parsers._frozen import build_set as _set
from wizard.common import sat_int
from wizard.common import lazy_re

_KV = lazy_re(r"^\s*(NVRM version|CUDA version|Device Index|Device Minor|Model|Brand|GPU UUID|Bus Location|"
                 r"Architecture):\s*(.*?)\s*$")
_CLI_ERROR = lazy_re(r"nvidia-container-cli(?:\.real)?: (?:(\w[\w ]*?) error: )?(.*)$")
_DOCKER_NO_RUNTIME = lazy_re(r"could not select device driver \"[^\"]*\" with capabilities: \[\[gpu\]\]|"
                                r"unknown or invalid runtime name: nvidia|Unknown runtime specified nvidia|"
                                r"exec: \\?\"nvidia-container-runtime-hook\\?\": executable file not found")
_NO_INJECT = lazy_re(r"exec: \\?\"nvidia-smi\\?\": executable file not found in \$PATH")
"""Docker/runc starting ``nvidia-smi`` in a container that got no GPUs: the NVIDIA runtime's hook mounts the driver's
tools and libraries into a container it gives GPUs to, and an image does not carry nvidia-smi itself."""
_NO_DEVICES = lazy_re(r"failed to detect NVIDIA devices")
"""libnvidia-container's warning (nvc.c) when it finds no NVIDIA device node: it then lists no GPU."""
_GLOG = lazy_re(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+\S+:\d+\]")


@dataclass(frozen=True)
class ContainerDevice:
    """One GPU ``nvidia-container-cli info`` lists. ``architecture``: the compute capability it prints ("3.5")."""

    index: str = ""
    model: str = ""
    uuid: str = ""
    bus: str = ""
    architecture: str = ""
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerCli:
    """What the container toolkit output says: ``driver``/``cuda`` from ``info``, its ``devices``, and the
    ``errors`` (the cli's ``(class, message, line)`` and Docker's no-NVIDIA-runtime lines as ("runtime", ...))."""

    driver: str = ""
    cuda: str = ""
    driver_line: str = ""
    devices: list[ContainerDevice] = field(default_factory=list)
    errors: list[tuple[str, str, str]] = field(default_factory=list)
    info_lines: int = 0


def parse_container_cli(text: str) -> ContainerCli:
    r = ContainerCli()
    cur: dict[str, str] = {}
    cur_lines: list[str] = []

    def flush() -> None:
        if cur.get("Device Index") or cur.get("Model"):
            r.devices.append(ContainerDevice(cur.get("Device Index", ""), cur.get("Model", ""), cur.get("GPU UUID", ""),
                                             cur.get("Bus Location", ""), cur.get("Architecture", ""), tuple(cur_lines)))
        cur.clear()
        cur_lines.clear()

    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        m = _KV.match(s)
        if m:
            key, value = m.group(1), m.group(2)
            _set(r, "info_lines", r.info_lines + 1)
            if key == "NVRM version":
                _set(r, "driver", value)
                _set(r, "driver_line", s)
            elif key == "CUDA version":
                _set(r, "cuda", value)
            else:
                if key == "Device Index" and cur:
                    flush()
                cur[key] = value
                cur_lines.append(s)
            continue
        e = _CLI_ERROR.search(s)
        if e:
            r.errors.append(((e.group(1) or "").strip(), e.group(2).strip(), s))
            continue
        if _GLOG.match(s) and _NO_DEVICES.search(s):  # its debug log's warning: no /dev/nvidia* device found
            r.errors.append(("", _NO_DEVICES.pattern, s))
        elif _DOCKER_NO_RUNTIME.search(s):
            r.errors.append(("runtime", s, s))
        elif _NO_INJECT.search(s):
            r.errors.append(("not_injected", s, s))
    flush()
    return r


def detect_container_cli(text: str) -> float:
    """0.95 for nvidia-container-cli's info block (NVRM version plus Device Index/Model/GPU UUID lines) or its
    errors; 0.9 for Docker's "could not select device driver ... [[gpu]]" (no NVIDIA runtime configured), for its
    'exec: "nvidia-smi": executable file not found' (a container given no GPUs) and for info's device blocks without
    the NVRM line above them."""
    if ("nvidia-container-cli" not in text and "Device Index:" not in text and not _DOCKER_NO_RUNTIME.search(text)
            and not _NO_INJECT.search(text) and not _NO_DEVICES.search(text)):
        return 0.0
    r = parse_container_cli(text)
    if r.errors and any(c not in ("runtime", "not_injected") for c, _, _ in r.errors):
        return 0.95
    if r.driver and r.devices:
        return 0.95
    if len(r.devices) >= 1 and all(d.uuid and d.model for d in r.devices):  # the device list without its head
        return 0.9
    if r.errors:
        return 0.9
    return 0.0


def is_debug_line(line: str) -> bool:
    """A glog-style debug line of libnvidia-container (``I1228 13:13:39.098291 6357 nvc_info.c:489] ...``)."""
    return bool(_GLOG.match(line.strip()))


# ------------------------------------------------------------------ kubectl get pods

_PODS_HEAD = lazy_re(r"^\s*(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS(?:\s+RESTARTS\s+AGE\b|\s*$)")
"""kubectl get pods' header; ``-o custom-columns`` or a trimmed paste may keep only NAME READY STATUS."""


@dataclass(frozen=True)
class Pod:
    """One row of ``kubectl get pods``: namespace ("" unless -A), name, READY ("1/1"), STATUS, RESTARTS (the
    number; "3 (5m ago)" reads 3), the raw line."""

    namespace: str
    name: str
    ready: str
    status: str
    restarts: int | None
    line: str


_POD_ROW = lazy_re(r"^[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+(?:\s+\([^)]*\))?\s+\S+\s*$")
"""A pod row of ``kubectl get pods`` without the namespace column: name, READY n/m, STATUS, RESTARTS, AGE."""
_POD_ROW_NS = lazy_re(r"^[a-z0-9][a-z0-9.-]*\s+[a-z0-9][a-z0-9.-]*\s+\d+/\d+\s+\S+\s+\d+(?:\s+\([^)]*\))?\s+\S+\s*$")
"""The same row with the namespace column first (``kubectl get pods -A | grep nvidia``: the header grepped away)."""
_GET_PODS = lazy_re(r"\b(?:kubectl|oc)\s+get\s+po(?:d|ds)?\b")


def parse_kubectl_pods(text: str) -> list[Pod]:
    pods: list[Pod] = []
    ns_col = False
    lines = text.splitlines()[:20000]
    # rows pasted without their header: every line "NAME READY STATUS RESTARTS AGE" by shape (READY is n/m)
    body = [ln.strip() for ln in lines if ln.strip() and not _GET_PODS.search(ln)]  # the command line typed above
    inside = bool(body) and not any(_PODS_HEAD.match(x) for x in body) and all(_POD_ROW.match(x) for x in body)
    if bool(body) and not inside and not any(_PODS_HEAD.match(x) for x in body) and all(_POD_ROW_NS.match(x) for x in body):
        inside, ns_col = True, True  # -A rows, header grepped away
    short = False
    for raw in lines:
        s = raw.strip()
        if _PODS_HEAD.match(s):
            inside, ns_col = True, s.startswith("NAMESPACE")
            short = not re.search(r"\bRESTARTS\b", s)  # NAME READY STATUS only
            continue
        if not inside or not s or (_GET_PODS.search(s) and not pods):  # the command typed above the rows
            continue
        cells = s.split()
        need = (4 if ns_col else 3) if short else (6 if ns_col else 5)
        if len(cells) < need or not re.fullmatch(r"\d+/\d+", cells[1 + ns_col]):
            inside = False  # the listing ended (another command's output follows)
            continue
        ns = cells[0] if ns_col else ""
        rest = cells[1:] if ns_col else cells
        restarts = (sat_int(rest[3]) if len(rest) > 3 and rest[3].isdigit() and len(rest[3]) < 9 else None)
        pods.append(Pod(ns, rest[0], rest[1], rest[2], restarts, s))
    return pods


_DS_HEAD = lazy_re(r"^\s*(?:NAMESPACE\s+)?NAME\s+DESIRED\s+CURRENT\s+READY(?:\s+UP-TO-DATE\s+AVAILABLE)?\b")


@dataclass(frozen=True)
class DaemonSet:
    """One row of ``kubectl get daemonsets``: namespace ("" unless -A), name, DESIRED / CURRENT / READY / AVAILABLE
    pod counts, the raw line (its last cell is the AGE), UP-TO-DATE (pods running the current template)."""

    namespace: str
    name: str
    desired: int
    current: int
    ready: int
    available: int
    line: str
    up_to_date: int = 0


def parse_kubectl_daemonsets(text: str) -> list[DaemonSet]:
    """``kubectl get ds`` rows under their header; never raises."""
    out: list[DaemonSet] = []
    ns_col, inside, counts = False, False, 5
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        if _DS_HEAD.match(s):
            inside, ns_col = True, s.startswith("NAMESPACE")
            counts = 5 if "UP-TO-DATE" in s else 3  # a trimmed listing: DESIRED CURRENT READY only
            continue
        cells = s.split()
        k = 1 if ns_col else 0
        if (not inside or len(cells) < k + counts + 2
                or not all(c.isdigit() and len(c) < 7 for c in cells[k + 1:k + 1 + counts])):
            inside = inside and not s  # a blank line keeps the listing; another command's output ends it
            continue
        n = [sat_int(c) for c in cells[k + 1:k + 1 + counts]]
        if counts == 3:  # not shown: taken as rolled out and available as far as READY says
            n = [n[0], n[1], n[2], n[0], n[2]]
        out.append(DaemonSet(cells[0] if ns_col else "", cells[k], n[0], n[1], n[2], n[4], s, n[3]))
    if not out and not any(_DS_HEAD.match(ln.strip()) for ln in text.splitlines()[:20000]):
        out = _headerless_daemonsets(text)
    return out


_DS_ROW = lazy_re(r"^(?:(?P<ns>[a-z0-9][a-z0-9.-]*)\s+)?(?P<name>[a-z0-9][a-z0-9.-]*)\s+(?P<n>(?:\d{1,6}\s+){5})"
                  r"(?P<sel>\S+)\s+(?P<age>\d+[smhd](?:\d+[smh])?)$")
"""A ``kubectl get ds`` row with its header cut off: [NAMESPACE] NAME, DESIRED CURRENT READY UP-TO-DATE AVAILABLE,
NODE SELECTOR (``<none>`` when none) and AGE (held-out round 342)."""


def _headerless_daemonsets(text: str) -> list[DaemonSet]:
    """Rows of :data:`_DS_ROW` when every non-blank line (two or more) is one."""
    lines = [ln.strip() for ln in text.splitlines()[:2000] if ln.strip()]
    rows = [m for ln in lines for m in [_DS_ROW.match(ln)] if m]
    if len(rows) < 2 or len(rows) != len(lines):
        return []
    out = []
    for m in rows:
        n = [sat_int(c) for c in m.group("n").split()]
        out.append(DaemonSet(m.group("ns") or "", m.group("name"), n[0], n[1], n[2], n[4], m.group(0), n[3]))
    return out


def detect_kubectl_pods(text: str) -> float:
    """0.9 for ``kubectl get pods`` (its column header and at least one pod row) or ``kubectl get daemonsets``;
    0.75 for pod rows pasted without the header (every line the shape of one)."""
    if _DS_HEAD.search(text[:20000]) and parse_kubectl_daemonsets(text[:20000]):
        return 0.9
    if _headerless_daemonsets(text[:20000]):
        return 0.75
    if "READY" not in text[:20000] or "STATUS" not in text[:20000]:
        return 0.75 if parse_kubectl_pods(text[:20000]) else 0.0
    return 0.9 if parse_kubectl_pods(text[:20000]) else 0.0


# ------------------------------------------------------------------ kubectl describe node


@dataclass(frozen=True)
class K8sNode:
    """``kubectl describe node NAME`` (what the kubelet reports): ``name``; ``labels`` (key -> value);
    ``conditions`` (type -> status: "Ready" -> "True"); ``capacity`` / ``allocatable`` (resource -> quantity as
    printed: "nvidia.com/gpu" -> "8"); ``requests`` (the "Allocated resources" table: resource -> requests);
    ``taints``; ``unschedulable`` (True/False, None when not shown) and the lines read. Sections a paste elides
    ("[...]", "....") are simply absent."""

    name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    conditions: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[str, ...] = ()
    unschedulable: bool | None = None
    lines: tuple[str, ...] = ()
    allocated: tuple[str, ...] = ()
    """Every resource the "Allocated resources" table lists (cpu, memory, ..., nvidia.com/gpu): kubectl lists each
    resource of the node's Allocatable there, so an extended resource missing from it is not advertised."""
    plugin_pod: str = ""
    """The NVIDIA device plugin's row among the node's non-terminated pods, when listed."""

    def gpus(self, block: Mapping[str, str]) -> dict[str, int]:
        """GPU resources in ``block`` (nvidia.com/gpu, nvidia.com/mig-*, amd.com/gpu...) -> count."""
        return {k: sat_int(v) for k, v in block.items()
                if re.fullmatch(r"[\w.-]+/(?:gpu|mig-[\w.-]+)", k) and v.strip().isdigit()}


_K8S_TOP = lazy_re(r"^([A-Z][A-Za-z ]{1,30}):\s*(.*)$")
_K8S_KV = lazy_re(r"^\s+([\w./-]+):\s+(\S.*?)\s*$")


_MANIFEST_YAML = lazy_re(r"^([ \t]*)(allocatable|capacity|conditions):[ \t]*$", re.M)
_MANIFEST_JSON = lazy_re(r'"(allocatable|capacity)"\s*:\s*\{([^{}]{0,4000})\}')
_MANIFEST_PAIR = lazy_re(r'^[ \t]*"?([\w./-]+)"?\s*:\s*"?([^",\s]+)"?\s*,?\s*$')


def manifest_as_described(text: str) -> str:
    """The node object of ``kubectl get node NODE -o yaml`` / ``-o json`` (its ``status.capacity``,
    ``status.allocatable`` and ``status.conditions``) written as ``kubectl describe node`` prints them ("Capacity:",
    indented "resource:  quantity" lines, a "Conditions:" table of type and status), so one reader reads both; "" when
    ``text`` holds no such block. Kubernetes API reference, Node v1 (NodeStatus: capacity, allocatable, conditions),
    https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/."""
    head = text[:200_000]
    blocks: dict[str, dict[str, str]] = {"Capacity": {}, "Allocatable": {}}
    conditions: dict[str, str] = {}
    lines = head.splitlines()
    for m in _MANIFEST_YAML.finditer(head):
        indent = len(m.group(1).expandtabs())
        start = head.count("\n", 0, m.start()) + 1
        item: dict[str, str] = {}
        for ln in lines[start:start + 400]:
            if not ln.strip():
                continue
            if len(ln) - len(ln.lstrip()) <= indent and not ln.lstrip().startswith("- "):
                break
            if m.group(2) == "conditions":
                body = ln.strip().removeprefix("- ")
                if ln.strip().startswith("- ") and item:
                    item = {}
                k, _, v = body.partition(":")
                item[k.strip()] = v.strip().strip('"')
                if item.get("type") and item.get("status") in ("True", "False", "Unknown"):
                    conditions[item["type"]] = item["status"]
                continue
            pm = _MANIFEST_PAIR.match(ln)
            if pm:
                blocks[m.group(2).capitalize()][pm.group(1)] = pm.group(2)
    for m in _MANIFEST_JSON.finditer(head):
        for part in m.group(2).split(","):
            pm = _MANIFEST_PAIR.match(part.strip())
            if pm:
                blocks[m.group(1).capitalize()][pm.group(1)] = pm.group(2)
    if not (blocks["Capacity"] or blocks["Allocatable"]):
        return ""
    out: list[str] = []
    for sec, kv in blocks.items():
        if kv:
            out.append(f"{sec}:")
            out.extend(f"  {k}:  {v}" for k, v in kv.items())
    if conditions:
        out += ["Conditions:", "  Type  Status"] + [f"  {t}  {st}" for t, st in conditions.items()]
    return "\n".join(out) + "\n"


def parse_k8s_node(text: str) -> K8sNode | None:
    """The first ``kubectl describe node`` in ``text`` (or the node object of ``kubectl get node -o yaml|json``,
    :func:`manifest_as_described`); None when it has neither a Capacity/Allocatable block nor a Conditions table.
    Never raises."""
    if not re.search(r"^(?:Capacity|Allocatable):\s*$", text[:200_000], re.M):
        described = manifest_as_described(text)
        if described:
            text = described
    name, section = "", ""
    labels: dict[str, str] = {}
    conditions: dict[str, str] = {}
    blocks: dict[str, dict[str, str]] = {"Capacity": {}, "Allocatable": {}}
    requests: dict[str, str] = {}
    taints: list[str] = []
    unsched: bool | None = None
    lines: list[str] = []
    allocated: list[str] = []
    plugin = ""
    for ln in text.splitlines():
        if not plugin and re.search(r"\bnvidia-device-plugin[\w-]*\s+\S+\s+\(\d+%\)", ln):  # a non-terminated pod's row
            plugin = ln.strip()
        top = _K8S_TOP.match(ln)
        if top and not ln.startswith(" "):
            section, value = top.group(1), top.group(2).strip()
            if section == "Name" and not name:
                name = value
            elif section == "Labels" and "=" in value:
                k, _, v = value.partition("=")
                labels[k.strip()] = v.strip()
            elif section == "Taints" and value and value != "<none>":
                taints.append(value)
            elif section == "Unschedulable":
                unsched = value.lower() == "true"
                lines.append(ln.rstrip())
            continue
        s = ln.strip()
        if not s or set(s) <= set(".[]-"):
            continue
        if section == "Labels" and "=" in s and ln.startswith(" "):
            k, _, v = s.partition("=")
            labels[k.strip()] = v.strip()
        elif section == "Taints" and ln.startswith(" "):
            taints.append(s)
        elif section == "Conditions":
            cols = s.split()
            if len(cols) >= 2 and cols[1] in ("True", "False", "Unknown"):
                conditions[cols[0]] = cols[1]
                lines.append(ln.rstrip())
        elif section in blocks:
            m = _K8S_KV.match(ln)
            if m:
                blocks[section][m.group(1)] = m.group(2)
                if "/" in m.group(1):
                    lines.append(f"{section}: {s}")
        elif section == "Allocated resources":
            cols = s.split()
            if len(cols) >= 2 and re.fullmatch(r"[a-z][\w./-]*", cols[0]) and cols[0] != "Resource":
                allocated.append(cols[0])
            if len(cols) >= 2 and "/" in cols[0] and re.fullmatch(r"\d+", cols[1]):
                requests[cols[0]] = cols[1]
                lines.append(f"Allocated: {s}")
    if not (blocks["Capacity"] or blocks["Allocatable"] or conditions):
        # `kubectl describe node N | grep nvidia.com/gpu`: the GPU labels, then the resource's Capacity and
        # Allocatable lines, in that order, without their headings
        counts = [(ln.rstrip(), m.group(1)) for ln in text.splitlines()
                  for m in [re.match(r"^\s+nvidia\.com/gpu:\s+(\d{1,6})\s*$", ln)] if m]
        if not counts:
            if allocated and plugin:  # an excerpt: the pods and the Allocated resources table, no blocks
                return K8sNode(name, labels, conditions, {}, {}, requests, tuple(taints), unsched, tuple(lines),
                               tuple(allocated), plugin)
            return None
        for ln in text.splitlines():
            m = re.match(r"^\s+([\w./-]+)=(\S*)\s*$", ln)
            if m:
                labels[m.group(1)] = m.group(2)
        for (ln, v), section in zip(counts, ("Capacity", "Allocatable")):
            blocks[section]["nvidia.com/gpu"] = v
            lines.append(f"{section}: {ln.strip()}")
    return K8sNode(name, labels, conditions, blocks["Capacity"], blocks["Allocatable"], requests, tuple(taints),
                   unsched, tuple(lines), tuple(allocated), plugin)


def detect_k8s_node(text: str) -> float:
    """0.95 for ``kubectl describe node``: a "Capacity:" or "Allocatable:" block (or a Conditions table) beside the
    node's "Name:" / "Allocated resources:"; 0.9 for the blocks alone with an nvidia.com/gpu line, or for its lines
    grepped for nvidia.com/gpu (the GPU Feature Discovery labels and the resource's counts)."""
    head = text[:200_000]
    blocks = re.search(r"^(Capacity|Allocatable):\s*$", head, re.M)
    if not blocks and ("allocatable" in head or "capacity" in head):
        described = manifest_as_described(head)
        if re.search(r"^  (?:[\w.-]+/gpu|pods):", described, re.M):
            return 0.9  # kubectl get node -o yaml|json: the node's status blocks
    node = re.search(r"^(Name|Allocated resources|Roles|Conditions|Taints|System Info|PodCIDRs?):", head, re.M)
    both = re.search(r"^Capacity:\s*$", head, re.M) and re.search(r"^Allocatable:\s*$", head, re.M)
    if blocks and node or both and re.search(r"^\s+pods:\s+\d+\s*$", head, re.M):
        return 0.95
    if (re.search(r"^Allocated resources:", head, re.M) and re.search(r"^\s+Resource\s+Requests\s+Limits", head, re.M)
            and re.search(r"\bnvidia-device-plugin", head)):  # an excerpt: the device plugin's pod and the table
        return 0.9
    if re.search(r"^Conditions:\s*\n\s+Type\s+Status\s+LastHeartbeatTime\b", head, re.M) and re.search(
            r"^\s+[A-Z]\w+\s+(?:True|False|Unknown)\s+\w{3}, \d", head, re.M):
        return 0.9  # the node's Conditions table cut out of the description
    gpu_line = re.search(r"^\s+nvidia\.com/gpu:\s+\d{1,6}\s*$", head, re.M)
    if blocks and gpu_line:  # the Capacity/Allocatable blocks alone
        return 0.9
    if gpu_line and re.search(r"^\s+nvidia\.com/gpu\.(?:count|present|product)=", head, re.M):  # | grep nvidia.com/gpu
        return 0.9
    return 0.0


# ------------------------------------------------------------------ NVIDIA k8s-device-plugin log


_DP_REGISTERED = lazy_re(r"Registered device plugin for '([\w./-]+)' with Kubelet")
_DP_SERVING = lazy_re(r"Starting to serve '([\w./-]+)'")
_DP_NO_DEVICES = lazy_re(r"No devices found\. Waiting indefinitely|NVML not detected|could not load NVML library|"
                         r"Incompatible strategy detected|Failed to initialize NVML|factory\.go:\d+\] .*configure the NVIDIA "
                         r"Container Toolkit", re.I)
_DP_UNHEALTHY = lazy_re(r"\b[Mm]arking (?:it|the device|device \S+)(?: as)? unhealthy\b")
"""The device plugin taking a GPU out of what it advertises (k8s-device-plugin's health check: "XidCriticalError: Xid=79
on Device=...; marking device as unhealthy"; its 2018 releases: "GPU ... is too old to support healtchecking ...
Marking it unhealthy")."""
_DP_MARK = lazy_re(r"Starting NVIDIA Device Plugin|Loading NVML|Retr(?:ei|ie)ving plugins|Starting GRPC server for '|"
                   r"Detected NVML platform|Starting FS watcher")


_DP_STRATEGY = lazy_re(r'"deviceDiscoveryStrategy":\s*"(\w+)"')
"""The device plugin's "Running with config:" JSON: how it finds GPUs (auto, nvml: PCIe GPUs through NVML, tegra:
Jetson's integrated GPU) (NVIDIA k8s-device-plugin README, --device-discovery-strategy)."""


@dataclass(frozen=True)
class DevicePluginLog:
    """What NVIDIA's k8s-device-plugin logged: the resources it ``registered`` with the kubelet, and the lines saying
    it found no GPU (``no_devices``: NVML not loadable, an incompatible strategy, "No devices found")."""

    registered: list[tuple[str, str]] = field(default_factory=list)  # (resource, line)
    no_devices: list[str] = field(default_factory=list)
    unhealthy: list[str] = field(default_factory=list)  # lines marking a GPU unhealthy
    strategy: tuple[str, str] = ("", "")  # its config's deviceDiscoveryStrategy ("auto", "nvml", "tegra") and the line


def parse_device_plugin_log(text: str) -> DevicePluginLog:
    d = DevicePluginLog()
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        m = _DP_REGISTERED.search(s)
        st = _DP_STRATEGY.search(s)
        if st and not d.strategy[0]:
            _set(d, "strategy", (st.group(1), s))
        if m:
            d.registered.append((m.group(1), s))
        elif _DP_NO_DEVICES.search(s):
            d.no_devices.append(s)
        elif _DP_UNHEALTHY.search(s):
            d.unhealthy.append(s)
    return d


def detect_device_plugin_log(text: str) -> float:
    """0.9 for NVIDIA k8s-device-plugin's log (its start-up lines, a registration with the kubelet, or its no-GPU
    lines)."""
    head = "\n".join(text.splitlines()[:400])
    marks = len(_DP_MARK.findall(head))
    if re.search(r"\bGPU\b|Device=|UUID", head) and _DP_UNHEALTHY.search(head):
        return 0.9
    if marks and (_DP_REGISTERED.search(head) or _DP_SERVING.search(head) or _DP_NO_DEVICES.search(head)
                  or _DP_STRATEGY.search(head)):
        return 0.9
    return 0.0
