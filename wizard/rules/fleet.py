"""Across the nodes of a fleet check (``bringup check --nodes``): the odd node out, and the nodes that did not answer.

The registry's :class:`~wizard.registry.Rule` is a function of *one* host's facts; a fleet judgement needs every
node's, so this is a fleet judge, not a registry rule. Each node's values are read from its own
:class:`~wizard.facts.Facts` by the parsers the registry declares for those probes (:func:`node_values`, nothing
parsed again), then :func:`judge_fleet` compares them, one finding per compared fact (``fleet.consistency.<key>``),
naming the odd nodes with folded nodesets (``gpu[003,011]: driver 570.86.15, the other 14: 580.95.05``, folded by
ClusterShell's ``NodeSet``). :func:`unreachable` and :func:`timed_out` are the findings of a node that could not be
judged. The ids and the step they join are :data:`FLEET_IDS` (listed in :data:`wizard.registry.FINDING_STEP`).

NCCL is not compared here: none of ``check``'s probes reads it (torch's NCCL is loaded only by a job);
``bringup validate nodes`` compares the NCCL every node's torch loads (``multinode.consistency``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from wizard.facts import Facts
from wizard.model import Finding, Verdict
from wizard.parsers import fabric as p_fabric
from wizard.parsers import gpu as p_gpu
from wizard.parsers import host as p_host
from wizard.parsers import platform as p_platform
from wizard.rules.identity import dmi_fields
from wizard.rules.smi import doc_from_outputs
from wizard.i18n import Msg, joined, SEMICOLON

SRC_E2 = ("consistent configuration across nodes, FAIL on any mismatch: NVIDIA/nccl-tests#200 "
          "(https://github.com/NVIDIA/nccl-tests/issues/200), NVIDIA/nccl#1634 (https://github.com/NVIDIA/nccl/issues/1634)")
SRC_VBIOS = ("Meta GCM health checks, vbios_mismatch (https://github.com/facebookresearch/gcm); Azure "
             "azurehpc-health-checks check_gpu_vbios (https://github.com/Azure/azurehpc-health-checks): VBIOS must "
             "match across the fleet")
SRC_SSH = "ssh(1) EXIT STATUS (255 = ssh itself failed: connect, authentication, host key)"
"""The public sources :mod:`wizard.rules.multinode` gives for the same judgements (repeated here, so that the registry,
which lists :data:`FLEET_IDS`, does not import the multi-node log reader)."""

STEP = "multinode.consistency"
"""The catalogue step fleet findings join (the multi-node stage's "the nodes are alike")."""

SRC_BIOS = ("consistent configuration across nodes (NVIDIA/nccl-tests#200, https://github.com/NVIDIA/nccl-tests/issues/200); "
            "judgement: the same BIOS settings on every node of a job, read from the OS as the bios stage reads them")
SRC_HCA = ("Linux Documentation/ABI/stable/sysfs-class-infiniband (ports/N/rate, fw_ver, hca_type); Azure HPC health "
           "checks check_ibstat / check_ib_bw_* (https://github.com/Azure/azurehpc-health-checks): every node's IB ports "
           "at the same rate")
SRC_TIMEOUT = ("ssh_config(5) ConnectTimeout; judgement: a node that does not finish its checks within the operator's "
               "--node-timeout is not ready to take part in a job")


@dataclass(frozen=True)
class Value:
    """One node's value of one compared fact: ``text`` (what is compared and shown) and ``line`` (the raw line it was
    read from, for evidence; "" when the value is a count of several lines)."""

    text: str
    line: str = ""


def _doc(facts: Facts) -> Any:
    try:
        doc, _ = doc_from_outputs(facts)
    except Exception:  # noqa: BLE001 - a parser bug must not stop the fleet comparison
        return None
    return doc if doc is not None and (doc.gpus or doc.driver_version) else None


def _parsed(facts: Facts, probe: str, fn: Callable[[Any], Any], on: str = "text") -> Any:
    o = facts.get(probe)
    if o is None or (not o.ok and not o.files and not o.text):
        return None
    return facts.parse(probe, fn, on=on)


def _driver(facts: Facts) -> Value | None:
    d = _parsed(facts, "nvidia_driver_version", p_gpu.parse_driver_version)
    if d is not None and d.version:
        return Value(d.version, d.line)
    doc = _doc(facts)
    if doc is not None and doc.driver_version and doc.driver_version.raw:
        return Value(doc.driver_version.raw, doc.driver_version.line)
    return None


def _cuda(facts: Facts) -> Value | None:
    doc = _doc(facts)
    if doc is not None and doc.cuda_version and doc.cuda_version.raw:
        return Value(doc.cuda_version.raw, doc.cuda_version.line)
    return None


def _per_gpu(facts: Facts, key: str) -> Value | None:
    doc = _doc(facts)
    if doc is None or not doc.gpus:
        return None
    vals = [g.text(key) or "" for g in doc.gpus]
    if not any(vals):
        return None
    counts: dict[str, int] = {}
    for v in vals:
        counts[v or "?"] = counts.get(v or "?", 0) + 1
    text = ", ".join(f"{n} x {v}" if n > 1 else v for v, n in sorted(counts.items()))
    return Value(text, next((g.line(key) for g in doc.gpus if g.line(key)), ""))


def _gpu_model(facts: Facts) -> Value | None:
    return _per_gpu(facts, "name")


def _vbios(facts: Facts) -> Value | None:
    return _per_gpu(facts, "vbios_version")


def _inforom(facts: Facts) -> Value | None:
    return _per_gpu(facts, "inforom.img")


def _gpu_count(facts: Facts) -> Value | None:
    doc = _doc(facts)
    if doc is None:
        return None
    n = len(doc.gpus)
    return Value(str(n), doc.attached.line if doc.attached else "")


def _text_of(probe: str) -> Callable[[Facts], Value | None]:
    def read(facts: Facts) -> Value | None:
        o = facts.get(probe)
        t = o.text.strip() if o is not None and o.ok else ""
        return Value(t, t) if t else None
    return read


def _os(facts: Facts) -> Value | None:
    r = _parsed(facts, "os_release", p_host.parse_os_release)
    if r is None or not r.pretty_name:
        return None
    return Value(r.pretty_name, f"PRETTY_NAME={r.fields.get('PRETTY_NAME', r.pretty_name)}")


def _bios_version(facts: Facts) -> Value | None:
    o = facts.get("dmi")
    dmi = dmi_fields(o.files) if o is not None else {}
    v = " ".join(x for x in (dmi.get("bios_vendor", ""), dmi.get("bios_version", "")) if x)
    return Value(v, f"bios_version:{dmi.get('bios_version', '')}") if dmi.get("bios_version") else None


IOMMU_PARAMS = ("intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict")
"""Kernel parameters that set the IOMMU's mode (kernel-parameters.txt), compared with the IOMMU units present."""


def _iommu(facts: Facts) -> Value | None:
    c = _parsed(facts, "cmdline", p_host.parse_cmdline)
    i = _parsed(facts, "iommu", p_host.parse_iommu, "files")
    if c is None and i is None:
        return None
    params = [f"{k}={c.params[k]}" if c.params[k] else k for k in IOMMU_PARAMS if c is not None and k in c.params]
    parts = ["IOMMU on" if i is not None and i.units else "no IOMMU unit"]
    if i is not None and i.group_types:
        parts.append("groups " + "/".join(sorted(set(i.group_types.values()))))
    parts.append(" ".join(params) if params else "no iommu parameter")
    return Value(", ".join(parts), (i.evidence[0] if i is not None and i.evidence else (c.raw if c else "")))


def _smt(facts: Facts) -> Value | None:
    t = _parsed(facts, "cpu_topology", p_host.parse_cpu_topology, "files")
    if t is None or t.smt_active is None:
        return None
    return Value(("on" if t.smt_active else "off") + (f" ({t.smt_control})" if t.smt_control else ""),
                 next((e for e in t.evidence if "smt" in e.lower()), ""))


def _numa(facts: Facts) -> Value | None:
    n = _parsed(facts, "numa", p_host.parse_numa, "files")
    if n is None or not n.nodes:
        return None
    return Value(f"{len(n.nodes)} node(s)", n.evidence[0] if n.evidence else "")


def _cstates(facts: Facts) -> Value | None:
    c = _parsed(facts, "cpuidle", p_platform.parse_cpuidle, "files")
    if c is None or not (c.driver or c.states):
        return None
    names = sorted({s.name for s in c.states if s.name and not s.disabled})
    return Value(f"idle driver {c.driver or '?'}; states enabled: {' '.join(names) or 'none'}",
                 c.evidence[0] if c.evidence else "")


def _governor(facts: Facts) -> Value | None:
    f = _parsed(facts, "cpufreq", p_platform.parse_cpufreq, "files")
    if f is None or not f.policies:
        return None
    govs = f.counts("governor")
    text = ", ".join(f"{g} ({n})" if len(govs) > 1 else g for g, n in sorted(govs.items())) or "?"
    if f.boost is not None:
        text += "; boost " + ("on" if f.boost else "off")
    if f.no_turbo is not None:
        text += "; turbo " + ("off" if f.no_turbo else "on")
    return Value(text, f.evidence[0] if f.evidence else "")


def _secure_boot(facts: Facts) -> Value | None:
    s = _parsed(facts, "mokutil_sb_state", p_platform.parse_mokutil_sb_state, "text+stderr")
    if s is None or not s.state:
        return None
    return Value(s.state, s.line)


def _hcas(facts: Facts) -> Any:
    s = _parsed(facts, "ib_sysfs", p_fabric.parse_ib_sysfs, "files")
    return s if s is not None and (s.devices or s.ports.ports) else None


def _hca_rate(facts: Facts) -> Value | None:
    """The Active RDMA ports' rates (``4 x 400 Gb/s InfiniBand``; "no Active port" when the node has RDMA ports and
    none is Active; ``None`` without an RDMA device), from sysfs."""
    s = _hcas(facts)
    if s is None or not s.ports.ports:
        return None
    active = [p for p in s.ports.ports if p.state == "active" and p.rate_gbit_s]
    if not active:  # RDMA devices without an Active port: the odd node out among nodes whose ports are up
        return Value("no Active port", next((ln for p in s.ports.ports for ln in p.lines if "/state:" in ln), ""))
    counts: dict[str, int] = {}
    for p in active:
        k = f"{p.rate_gbit_s:g} Gb/s {p.link_layer}".strip()
        counts[k] = counts.get(k, 0) + 1
    return Value(", ".join(f"{n} x {k}" for k, n in sorted(counts.items())),
                 next((ln for p in active for ln in p.lines if "/rate:" in ln), ""))


def _hca_firmware(facts: Facts) -> Value | None:
    """The RDMA devices' firmware by HCA type (``MT4129 28.41.1000``), from sysfs fw_ver and hca_type."""
    s = _hcas(facts)
    devs = [d for d in (s.devices.values() if s is not None else []) if d.fw_ver]
    if not devs:
        return None
    counts: dict[str, int] = {}
    for d in devs:
        k = f"{d.hca_type or d.board_id or '?'} {d.fw_ver}"
        counts[k] = counts.get(k, 0) + 1
    return Value(", ".join(f"{n} x {k}" if n > 1 else k for k, n in sorted(counts.items())),
                 f"/sys/class/infiniband/{devs[0].name}/fw_ver:{devs[0].fw_ver}")


@dataclass(frozen=True)
class Field:
    """One compared fact: ``key`` (the finding id is ``fleet.consistency.<key>``), ``label`` (shown), the verdict of a
    mismatch, its public source, what to do, and how one node's value is read (``read``, from its facts)."""

    key: str
    label: str
    mismatch: Verdict
    source: str
    remedy: str
    read: Callable[[Facts], Value | None]


_INSTALL = "Install the same {label} on {odd} as on {others}; a mixed fleet slows or hangs every collective the odd node joins."
_BIOS = ("Set {label} on {odd} as on {others} in the BIOS setup (or the kernel command line where it comes from there), "
         "reboot, then check again.")

FIELDS: tuple[Field, ...] = (
    Field("driver", "driver", Verdict.FAIL, SRC_E2,
          "Install the fleet's driver ({majority}) on {odd} (same branch and release), reboot it, then check again.",
          _driver),
    Field("cuda", "CUDA (driver API)", Verdict.FAIL, SRC_E2,
          "The CUDA version follows the driver: install the fleet's driver on {odd}, then check again.", _cuda),
    Field("gpu_count", "GPU count", Verdict.FAIL, SRC_E2,
          "Find out why {odd} shows another number of GPUs: run `bringup check --stage health` there (a GPU missing "
          "from the bus or NVML).", _gpu_count),
    Field("gpu_model", "GPU model", Verdict.FAIL, SRC_E2,
          "Check {odd}: a node with other GPUs does not belong in the same job (or fix the node list).", _gpu_model),
    Field("vbios", "VBIOS", Verdict.FAIL, f"{SRC_E2}; {SRC_VBIOS}",
          "Update the GPU firmware (VBIOS) on {odd} to the fleet's version ({majority}) with the system vendor's "
          "firmware tool, then check again.", _vbios),
    Field("inforom", "GPU InfoROM", Verdict.WARN, f"{SRC_E2}; {SRC_VBIOS}",
          "Update the GPU firmware on {odd} with the system vendor's firmware bundle, as on {others}.", _inforom),
    Field("bios_version", "system BIOS", Verdict.WARN, SRC_BIOS,
          "Flash the fleet's BIOS release ({majority}) on {odd} with the vendor's tool (BMC or OS updater).",
          _bios_version),
    Field("kernel", "kernel", Verdict.WARN, f"{SRC_E2}; judgement: a different kernel means different driver modules "
          "and network stack", "Boot {odd} into the same kernel as {others} (the same package version).",
          _text_of("kernel")),
    Field("os", "OS", Verdict.WARN, f"{SRC_E2}; judgement: a different OS release ships different libraries", _INSTALL,
          _os),
    Field("iommu", "IOMMU", Verdict.WARN, SRC_BIOS, _BIOS, _iommu),
    Field("smt", "SMT", Verdict.WARN, SRC_BIOS, _BIOS, _smt),
    Field("numa", "NUMA", Verdict.WARN, SRC_BIOS, _BIOS, _numa),
    Field("cstates", "C-states", Verdict.WARN, SRC_BIOS, _BIOS, _cstates),
    Field("cpufreq", "CPU frequency governor", Verdict.WARN, SRC_BIOS, _BIOS, _governor),
    Field("secure_boot", "Secure Boot", Verdict.WARN, SRC_BIOS, _BIOS, _secure_boot),
    Field("hca_rate", "HCA port rates", Verdict.FAIL, f"{SRC_E2}; {SRC_HCA}",
          "Find why {odd} runs other port rates than {others} (`ibstat` there: a port Down or trained low; a cable, "
          "transceiver or switch port): a collective runs at its slowest link.", _hca_rate),
    Field("hca_firmware", "HCA firmware", Verdict.WARN, f"{SRC_E2}; {SRC_HCA}",
          "Flash the fleet's HCA firmware ({majority}) on {odd} (`mlxfwmanager --online -u`, or the system vendor's "
          "bundle), then reboot or `mlxfwreset`, and check again.", _hca_firmware),
)
"""The facts compared across the fleet, in the order findings are given. Driver, CUDA, GPUs and VBIOS must match (FAIL,
as ``bringup validate nodes`` judges them); firmware, kernel, OS and BIOS settings should (WARN)."""

FLEET_PROBES: tuple[str, ...] = ("nvidia_driver_version", "nvidia_smi_qx", "nvml", "dmi", "kernel", "os_release",
                                 "cmdline", "iommu", "cpu_topology", "numa", "cpuidle", "cpufreq", "mokutil_sb_state",
                                 "ib_sysfs")
"""The probes :func:`node_values` reads (collected on every node besides the selected steps' own)."""

FLEET_IDS: dict[str, str] = {
    **{f"fleet.consistency.{f.key}": STEP for f in FIELDS},
    "fleet.unreachable": STEP,
    "fleet.timeout": STEP,
    "fleet.error": STEP,
}
"""Every finding id this module gives, and the catalogue step it joins."""


def node_values(facts: Facts) -> dict[str, Value | None]:
    """One node's value of each :data:`FIELDS` fact (``None`` when its outputs do not tell it). Never raises: a parser
    that fails leaves that value ``None``."""
    out: dict[str, Value | None] = {}
    for f in FIELDS:
        try:
            out[f.key] = f.read(facts)
        except Exception:  # noqa: BLE001 - one unreadable fact must not hide the others
            out[f.key] = None
    return out


def fold(names: Iterable[str]) -> str:
    """Node names folded into one nodeset (``gpu[001-003,007]``; ClusterShell's NodeSet). Raises nothing for names
    NodeSet cannot fold, a node number too long for int() among them (they are joined with commas)."""
    from ClusterShell.NodeSet import NodeSet, NodeSetException  # imported where used: explain never needs it

    names = list(names)
    try:
        return str(NodeSet.fromlist(names))
    except (NodeSetException, ValueError):  # ValueError: a node number past Python's int() digit limit
        return ",".join(names)


def nodes_of(names: Sequence[str], max_chars: int | None = None) -> str:
    """The nodes folded (:func:`fold`) with their count when more than one (``gpu[001-003] (3 nodes)``); a nodeset
    longer than ``max_chars`` is cut at a comma and ends with "..." (the count says the rest)."""
    text = fold(names)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rsplit(",", 1)[0] + ",..."
    return Msg("{nodeset} ({n} nodes)", nodeset=text, n=len(names)) if len(names) > 1 else text



def judge_fleet(values: Mapping[str, Mapping[str, Value | None]], not_judged: Mapping[str, str] | None = None
                ) -> list[Finding]:
    """Compare the nodes' values (node -> :func:`node_values`), one finding per :data:`FIELDS` fact.

    * every node that tells it has the same value: ``pass`` ("driver 580.95.05 on all 14 nodes");
    * values differ: the fact's mismatch verdict; with a majority (more than half of the nodes that tell it) the odd
      nodes are named, folded, against "the other N", else every group is named;
    * some nodes do not tell it while the others agree: ``unknown`` naming those nodes;
    * no node tells it: ``skip``.

    ``not_judged``: nodes left out of the comparison (unreachable, timed out) -> why; said in every finding.
    Fewer than two nodes to compare: one ``unknown`` ``fleet.consistency.driver`` finding saying so.
    """
    nodes = list(values)
    left = dict(not_judged or {})
    tail = ""
    if left:
        by_why: dict[str, list[str]] = {}
        for n, why in left.items():
            by_why.setdefault(why, []).append(n)
        tail = Msg('; not compared: ') + joined(', ', [Msg('{nodes} ({why})', nodes=fold(ns), why=Msg(why))
                                                       for why, ns in by_why.items()])
    if len(nodes) < 2:
        return [Finding("fleet.consistency.driver", Verdict.UNKNOWN,
                        ((Msg('only {node} answered: at least 2 nodes are needed to compare driver, CUDA, GPUs, firmware, kernel and BIOS settings', node=nodes[0]) if nodes else Msg('no node answered: at least 2 are needed to compare driver, CUDA, GPUs, firmware, kernel and BIOS settings')) + tail), fold(nodes) or "node", (),
                        "Make at least two nodes reachable and check again.", SRC_E2, STEP)]
    out: list[Finding] = []
    for f in FIELDS:
        fid = f"fleet.consistency.{f.key}"
        known = {n: v[f.key] for n, v in values.items() if v.get(f.key) is not None}
        lacking = [n for n in nodes if n not in known]
        if not known:
            out.append(Finding(fid, Verdict.SKIP, (Msg('{label}: not read on any node', label=f.label) + tail), fold(nodes), (), "",
                               f.source, STEP))
            continue
        groups: dict[str, list[str]] = {}
        for n, v in known.items():
            assert v is not None
            groups.setdefault(v.text, []).append(n)
        ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
        first = {text: v for text, ns in ranked if (v := known[ns[0]]) is not None}
        evidence = tuple(f"[{ns[0]}] {first[text].line}" for text, ns in ranked[:6] if first[text].line)
        unread = f"; {nodes_of(lacking)}: not read" if lacking else ""
        if len(ranked) == 1:
            text, ns = ranked[0]
            if lacking:
                out.append(Finding(fid, Verdict.UNKNOWN,
                                   (Msg('{of}: {label} not read, so not compared; the other {n_ns}: {text}', of=nodes_of(lacking), label=f.label, n_ns=len(ns), text=text) + tail), fold(lacking), evidence,
                                   Msg("Check {fold} alone (`bringup check --nodes {fold}`): its findings say why the {label} "
                                       "could not be read there.", fold=fold(lacking), label=f.label), f.source, STEP))
            else:
                out.append(Finding(fid, Verdict.PASS, (Msg('{label} {text} on all {n_ns} nodes ({fold})', label=f.label, text=text, n_ns=len(ns), fold=fold(ns)) + tail),
                                   fold(ns), evidence, "", f.source, STEP))
            continue
        majority = ranked[0] if len(ranked[0][1]) * 2 > len(known) else None
        if majority is not None:
            odd = sorted(n for text, ns in ranked[1:] for n in ns)
            msg = (SEMICOLON.join((f'{fold(ns)}: {f.label} {text}' for text, ns in ranked[1:])) + Msg(', the other {n_majority}: {majority}', n_majority=len(majority[1]), majority=majority[0]))
            subject = fold(odd)
            others = f"the other {len(majority[1])} nodes"
            maj_text = majority[0]
        else:
            odd = sorted(known)
            msg = (Msg('{label} differs with no majority: ', label=f.label) + SEMICOLON.join((f'{fold(ns)}: {text}' for text, ns in ranked)))
            subject = fold(odd)
            others = "the rest of the fleet"
            maj_text = "one release for all"
        remedy = f.remedy.format(label=f.label, odd=fold(odd), others=others, majority=maj_text)
        out.append(Finding(fid, f.mismatch, msg + unread + tail, subject, evidence, remedy, f.source, STEP))
    return out


def unreachable(node: str, target: str, error: str) -> Finding:
    """``fleet.unreachable`` (fail) for a node ssh could not reach or log in to; ``error`` is ssh's own text."""
    why = error.split(" failed: ", 1)[-1] if error.startswith("ssh to ") else error
    return Finding("fleet.unreachable", Verdict.FAIL, Msg("{node} is unreachable over ssh: {why}", node=node, why=why), node, (error,),
                   Msg("Check that `ssh {target} true` works from here (the same ssh config, key and "
                       "known_hosts), then check again.", target=target), SRC_SSH, STEP)


def timed_out(node: str, seconds: float) -> Finding:
    """``fleet.timeout`` (fail) for a node that did not finish its checks within ``seconds`` (``--node-timeout``)."""
    return Finding("fleet.timeout", Verdict.FAIL,
                   Msg("{node} did not finish its checks within {seconds:g} s (--node-timeout): what it answered "
                       "before was not judged", node=node, seconds=seconds), node, (f"timed out after {seconds:g} s",),
                   Msg("Find out what is slow on {node} (its login, or a probe: `bringup check` run there shows "
                       "which), or give it more time with --node-timeout.", node=node), SRC_TIMEOUT, STEP)


def crashed(node: str, exc: BaseException) -> Finding:
    """``fleet.error`` (unknown) for a node bringup itself could not finish (a bug, named by its exception)."""
    return Finding("fleet.error", Verdict.UNKNOWN, Msg("bringup could not finish {node}: {exc!r}", node=node, exc=exc), node, (repr(exc),),
                   "This is a bringup bug: report it with the command line; `bringup capture` on that node gives a "
                   "bundle to reproduce it.", "", STEP)


__all__ = ["FIELDS", "crashed", "FLEET_IDS", "FLEET_PROBES", "Value", "fold", "judge_fleet", "node_values", "timed_out",
           "unreachable"]
