"""AMD GPUs as ROCm SMI shows them (``rocm-smi``, ``rocm-smi --showtopo``: :mod:`wizard.parsers.rocm`).

bringup's checks of a node read NVIDIA's tools; a pasted ``rocm-smi`` output is judged on what it shows, with the
same finding ids as the NVIDIA outputs:

- ``health.gpu_count``: the GPUs listed, against the plan's ``gpu_count`` (:func:`~wizard.rules.gpu_presence.
  count_verdict`). On a two-die package (MI250/MI250X: each graphics compute die, GCD, is a GPU of its own) the
  count is of GCDs.
- ``health.gpu_responsive``: every GPU row carries its readings (temperature, clocks); a GPU whose temperature and
  clock both read N/A did not answer the driver (warn; fail when rocm-smi's reads of it also fail, ``ERROR: 15
  GPU[0]``: the GPU is hung or lost). No GPU at all ("No AMD GPUs specified", an empty table) fails ``health.gpu_count``. The readings are given as information: bringup has no
  published AMD temperature limit table, so no temperature is judged high. Average power N/A with a 0 W cap on every
  second GPU of a two-die package is how ROCm SMI shows the package's power on its first die, not a fault.
- ``health.topology``: the link between each GPU pair (``--showtopo``). Every pair over XGMI (AMD Infinity Fabric)
  passes; a GPU with no XGMI link while the others have theirs fails (a GPU that lost its links: peer traffic to it
  falls back to PCIe); every pair over PCIe only warns (on an Instinct OAM board, whose GPUs are meant to reach each
  other over XGMI, that is the fabric down; on PCIe cards, peer traffic crosses the host bridges). A weight of 15
  between two GPUs is one XGMI hop (the Linux kernel's amdkfd sets an XGMI link's weight to 15 per hop), so a weight
  matrix alone can show a fully connected board.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.common import lazy_re
from wizard.i18n import Msg, N_, joined
from wizard.model import Finding, Verdict
from wizard.parsers.rocm import parse_gpu_fields, RocmConcise, RocmTopo, parse_concise, parse_topo
from wizard.rules.kernel_log_common import plural
from wizard.rules.gpu_presence import count_measure, count_verdict

SRC_ROCM_SMI = ("ROCm SMI command-line tool, rocm-smi (https://github.com/ROCm/rocm_smi_lib, python_smi_tools/"
                "rocm_smi.py): Concise Info columns Temp, AvgPwr/Power, SCLK, MCLK, PwrCap, VRAM%, GPU%; AMD CDNA 2 "
                "architecture white paper (https://www.amd.com/system/files/documents/amd-cdna2-white-paper.pdf): an "
                "MI250/MI250X package holds two graphics compute dies, each a GPU to the software")
SRC_ROCM_TOPO = ("rocm-smi --showtopo (https://github.com/ROCm/rocm_smi_lib): Weight, Hops and Link Type (XGMI, PCIE) "
                 "between two GPUs; Linux kernel drivers/gpu/drm/amd/amdkfd/kfd_crat.c (KFD_CRAT_XGMI_WEIGHT 15: an "
                 "XGMI io-link's weight is 15 per hop); Linux kernel documentation, AMDGPU XGMI Support "
                 "(https://docs.kernel.org/gpu/amdgpu/xgmi.html)")
XGMI_WEIGHT = "15"
"""The weight ``--showtopo`` shows for one XGMI hop between two GPUs (amdkfd's KFD_CRAT_XGMI_WEIGHT, :data:`SRC_ROCM_TOPO`)."""


def _span(values: list[float], unit: str) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:g}{unit}" if lo == hi else f"{lo:g}-{hi:g}{unit}"


_READ_ERROR = lazy_re(r"^\s*ERROR: \d+ GPU\[\d+\]|One or more commands failed")
"""rocm-smi's own words when a read of a GPU failed ("ERROR: 15 GPU[0]: ...", then "One or more commands failed" at
the end): with every reading N/A, the GPU does not answer at all."""
_NO_GPUS = lazy_re(r"No AMD GPUs (?:specified|found|detected)", re.I)
"""rocm-smi's words when the driver exposes no AMD GPU (its Concise Info table then has no row)."""


def judge_concise(c: RocmConcise, exp: Mapping[str, Any], text: str = "") -> list[Finding]:
    """Findings of the Concise Info table (see the module doc); ``text``, the whole output, gives rocm-smi's own
    error lines."""
    if not c.gpus:
        return []
    gpus = c.gpus
    names = sorted({g.name for g in gpus if g.name})
    model = ", ".join(names) if names else "AMD GPU"
    want = exp.get("gpu_count")
    v = count_verdict(len(gpus), want)
    ev = (c.header,) + tuple(g.line for g in gpus[:6])
    out = [Finding("health.gpu_count", v,
                   Msg("rocm-smi lists {gpus} ({model})", gpus=plural(len(gpus), "GPU"), model=model)
                   + (Msg("; the plan expects {want}", want=want) if v is not Verdict.PASS else ""), "host", ev,
                   "" if v is Verdict.PASS else
                   Msg("A GPU is missing or the plan's gpu_count is wrong: check `lspci -d 1002:` and `dmesg | grep "
                       "amdgpu` for the missing one, then update the plan (`bringup plan gpu_count=N`)."),
                   SRC_ROCM_SMI, measured=count_measure(len(gpus), want, "AMD GPUs listed by rocm-smi (the plan's gpu_count)"))]
    silent = [g for g in gpus if g.temp_c is None and g.sclk_mhz is None]
    for g in silent:
        errs = [ln.strip() for ln in text.splitlines() if _READ_ERROR.search(ln) and (
            f"GPU[{g.index}]" in ln or "commands failed" in ln)]
        out.append(Finding("health.gpu_responsive", Verdict.FAIL if errs else Verdict.WARN,
                           (Msg("GPU {i}: rocm-smi reads neither its temperature nor its clock (N/A) and its reads "
                                "fail ({err}): the GPU does not answer the driver (hung or lost until a reset)",
                                i=g.index, err=errs[-1]) if errs else
                            Msg("GPU {i}: rocm-smi reads neither its temperature nor its clock (N/A): the driver did not "
                               "answer for it", i=g.index)), f"GPU {g.index}", (g.line, *errs[-2:]),
                           "Read `dmesg | grep -i amdgpu` for this GPU (a reset or a RAS error), and `rocm-smi --showallinfo` "
                           "for what it still reports; reboot the node if it stays silent, and report it to the vendor "
                           "if it does not come back.", SRC_ROCM_SMI))
    fine = [g for g in gpus if g not in silent]
    if not fine:
        return out
    temps = [g.temp_c for g in fine if g.temp_c is not None]
    powers = [g.power_w for g in fine if g.power_w is not None]
    caps = [g.power_cap_w for g in fine if g.power_cap_w]
    busy = [g for g in fine if (g.gpu_pct or 0) > 0 or (g.vram_pct or 0) > 0]
    said = [Msg("{gpus} answer rocm-smi", gpus=plural(len(fine), "GPU"))]
    if temps:
        said.append(Msg("temperature {t}", t=_span(temps, " °C")))
    if powers:
        said.append(Msg("power {p}", p=_span(powers, " W")) + (Msg(" of a {cap} cap", cap=_span(caps, " W")) if caps else ""))
    dual = [g for g in fine if g.power_w is None and not g.power_cap_w]
    if dual and len(dual) * 2 == len(fine) and all(g.index % 2 == 1 for g in dual):
        said.append(Msg("no power on GPUs {gpus}: each is the second die of a two-die package (MI250/MI250X), whose "
                        "power rocm-smi reads on the first", gpus=", ".join(str(g.index) for g in dual)))
    said.append(Msg("in use: GPU(s) {gpus}", gpus=", ".join(str(g.index) for g in busy)) if busy
                else Msg("idle (GPU% and VRAM% 0)"))
    said.append(Msg("no temperature is judged high: bringup has no published AMD limit table"))
    out.append(Finding("health.gpu_responsive", Verdict.PASS, joined("; ", said), "host", tuple(g.line for g in fine[:8]), "",
                       SRC_ROCM_SMI))
    return out


def judge_topo(t: RocmTopo) -> list[Finding]:
    """Findings of the ``--showtopo`` matrices (see the module doc)."""
    link = t.matrices.get("link type") or {}
    weight = t.matrices.get("weight") or {}
    n = len(t.gpus)
    if n < 2 or not (link or weight):
        return []
    if link:
        xgmi = {p for p, v in link.items() if v.upper() == "XGMI"}
        pcie = {p for p, v in link.items() if v.upper() == "PCIE"}
        how, ev = "Link Type", t.lines.get("link type", ())
    else:
        xgmi = {p for p, v in weight.items() if v == XGMI_WEIGHT}
        pcie = set()
        how, ev = "Weight", t.lines.get("weight", ())
    pairs = n * (n - 1)
    with_xgmi = {a for a, _ in xgmi} | {b for _, b in xgmi}
    lost = [g for g in t.gpus if g not in with_xgmi]
    if xgmi and len(xgmi) == len(link or weight) and len(link or weight) == pairs:
        return [Finding("health.topology", Verdict.PASS,
                        Msg("{n} GPUs: every pair has a direct XGMI (Infinity Fabric) link ({how}{w})", n=n, how=how,
                            w=Msg(": weight 15, one XGMI hop") if not link else ""), "host", ev[:8], "",
                        SRC_ROCM_TOPO)]
    if xgmi and lost and len(with_xgmi) >= 2:
        return [Finding("health.topology", Verdict.FAIL,
                        Msg("GPU(s) {lost} have no XGMI link while {n} other GPUs reach each other over XGMI: their peer "
                            "traffic falls back to PCIe", lost=", ".join(str(g) for g in lost), n=len(with_xgmi)),
                        ", ".join(f"GPU {g}" for g in lost), ev[:8],
                        "Read `dmesg | grep -i -e xgmi -e amdgpu` for link errors, check `rocm-smi --showtopo` after a "
                        "reboot; a GPU whose XGMI links stay down needs its board or OAM module looked at by the vendor.",
                        SRC_ROCM_TOPO)]
    if link and pcie and not xgmi:
        return [Finding("health.topology", Verdict.WARN,
                        Msg("{n} GPUs: no XGMI (Infinity Fabric) link between any of them; every pair talks over PCIe "
                            "(hops {hops}): on an Instinct OAM board, whose GPUs are meant to reach each other over "
                            "XGMI, that is the fabric down; on PCIe cards, peer traffic and RCCL's collectives run at "
                            "PCIe speed through the host bridges", n=n,
                            hops=", ".join(sorted(set((t.matrices.get("hops") or {}).values()))) or "?"),
                        "host", ev[:8],
                        "If these are OAM GPUs (MI200/MI300 class), check `dmesg | grep -i xgmi` and the board with the "
                        "vendor; if they are PCIe cards, expect PCIe-bound collectives and place them under one CPU "
                        "socket or PCIe switch.", SRC_ROCM_TOPO)]
    if not link:
        return [Finding("health.topology", Verdict.UNKNOWN,
                        Msg("{n} GPUs: the weights alone do not say every link's type ({k} of {pairs} pairs at weight "
                            "15, one XGMI hop)", n=n, k=len(xgmi), pairs=pairs), "host", ev[:8],
                        "Paste the whole `rocm-smi --showtopo` (its 'Link Type between two GPUs' matrix).",
                        SRC_ROCM_TOPO)]
    return [Finding("health.topology", Verdict.PASS,
                    Msg("{n} GPUs: {x} of {pairs} GPU pairs over XGMI, the others over PCIe; every GPU has an XGMI link",
                        n=n, x=len(xgmi), pairs=pairs), "host", ev[:8], "", SRC_ROCM_TOPO)]


def judge_rocm_smi(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """rocm-smi output -> findings (Concise Info and ``--showtopo``, whichever the text holds); an unknown when it
    holds neither in a form bringup reads."""
    out = judge_concise(parse_concise(text), exp, text) + judge_topo(parse_topo(text))
    if out:
        return out
    lines = tuple(ln for ln in text.splitlines() if ln.strip())[:5]
    none = [ln.strip() for ln in text.splitlines() if _NO_GPUS.search(ln)]
    if none:
        return [Finding("health.gpu_count", Verdict.FAIL,
                        Msg("rocm-smi finds no AMD GPU: {quote}", quote=none[0]), "host",
                        tuple(dict.fromkeys([*none[:2], *(ln.strip() for ln in lines[:3])])),
                        "Check that the GPUs are on the bus (`lspci -d 1002:`) and that the amdgpu driver bound them "
                        "(`dmesg | grep -i amdgpu`, `lsmod | grep amdgpu`); in a container, pass /dev/kfd and /dev/dri.",
                        SRC_ROCM_SMI)]
    blank = judge_gpu_fields(parse_gpu_fields(text), text)
    if blank:
        return blank
    return [Finding("health.gpu_responsive", Verdict.UNKNOWN,
                    Msg("rocm-smi output without a Concise Info table or a GPU-pair matrix bringup reads"), "host", lines,
                    "Paste plain `rocm-smi` (the Concise Info table) or `rocm-smi --showtopo`.", SRC_ROCM_SMI)]


_ID_FIELDS = ("Device ID", "Device Rev", "Subsystem ID", "PCI Bus", "Device Name")


def judge_gpu_fields(fields: dict[int, dict[str, Any]], text: str) -> list[Finding]:
    """rocm-smi's per-GPU lines (``-i``, ``--showbus``): a GPU whose identity fields read N/A where others of the same
    output read a value warns (rocm-smi cannot read that GPU's sysfs entries: a driver or partition-mode problem, or a
    tool bug; cross-check it); otherwise nothing (the caller says what it cannot read)."""
    blank: dict[int, list[str]] = {}
    for i, f in sorted(fields.items()):
        missing = [k for k in _ID_FIELDS if f.get(k, "").upper() == "N/A"
                   and any(o.get(k, "N/A").upper() != "N/A" for j, o in fields.items() if j != i)]
        if missing:
            blank[i] = missing
    ev = tuple(ln.strip() for ln in text.splitlines() if "N/A" in ln and ln.strip().startswith("GPU["))[:6]
    if blank:
        return [Finding("health.gpu_responsive", Verdict.WARN,
                        Msg("rocm-smi reads N/A for {what} of {gpus} while the other GPUs read values: it cannot read "
                            "their identity from the driver", what=", ".join(sorted({k for v in blank.values() for k in v})),
                            gpus=", ".join(f"GPU[{i}]" for i in blank)), "host", ev,
                        N_("Cross-check with `amd-smi list` / `amd-smi static` and `lspci -d 1002: -nn` that every GPU is "
                           "on the bus with its device ID; a GPU missing there is a hardware or driver fault, one that "
                           "is there is rocm-smi failing to read it (a compute-partition mode or a tool bug: update "
                           "ROCm)."), SRC_ROCM_SMI)]
    return []


SRC_ROCMINFO = ("ROCm documentation, rocminfo: lists the HSA agents (CPUs and GPUs) the ROCm runtime enumerates, each GPU "
                "by its gfx target and marketing name (https://rocm.docs.amd.com/projects/rocminfo/en/latest/)")
SRC_CLINFO = ("clinfo(1): lists the OpenCL platforms the ICD loader finds and each platform's devices "
              "(https://github.com/Oblomov/clinfo); AMD ROCm OpenCL runtime")


def judge_rocminfo_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``rocminfo`` -> ``health.gpu_count``: the GPU agents the ROCm runtime sees pass, naming them; CPU agents and no
    GPU agent fail (the runtime sees no GPU: amdgpu/KFD not bound)."""
    from wizard.parsers.rocm import parse_rocminfo

    r = parse_rocminfo(text)
    dead = [ln.strip() for ln in text.splitlines() if re.search(r"\bROCk module is NOT (?:live|loaded)\b", ln)]
    if dead:
        return [Finding("health.gpu_count", Verdict.FAIL,
                        Msg("rocminfo: '{line}': the amdgpu driver's compute interface (KFD) is not loaded, so no GPU "
                            "can run anything", line=dead[0]), "host", tuple(dead[:2]),
                        N_("Check `lsmod | grep amdgpu` and `dmesg | grep -i -e amdgpu -e kfd` (a probe error, firmware "
                           "missing), that amdgpu-dkms is built for the running kernel (`dkms status`) and /dev/kfd "
                           "exists; load it (`sudo modprobe amdgpu`) or reboot, then run rocminfo again."),
                        SRC_ROCMINFO)]
    if r.gpus:
        counts: dict[str, int] = {}
        for gfx, name in r.gpus:
            key = f"{name} ({gfx})" if name else gfx
            counts[key] = counts.get(key, 0) + 1
        return [Finding("health.gpu_count", Verdict.PASS,
                        Msg("the ROCm runtime enumerates {n} GPU agent(s): {what}", n=len(r.gpus),
                            what=", ".join(f"{n}x {k}" for k, n in counts.items())),
                        "host", r.lines[:6], "", SRC_ROCMINFO)]
    if r.cpus:
        return [Finding("health.gpu_count", Verdict.FAIL,
                        Msg("the ROCm runtime enumerates only CPU agents: no GPU agent"), "host",
                        tuple(ln.strip() for ln in text.splitlines() if "Name:" in ln)[:4],
                        N_("Check that the GPUs are on the bus (`lspci -d 1002:`), that amdgpu bound them without error "
                           "(`dmesg | grep -i amdgpu`), and that /dev/kfd exists and this user is in the render and video "
                           "groups (in a container: pass /dev/kfd and /dev/dri)."), SRC_ROCMINFO)]
    return [Finding("health.gpu_count", Verdict.UNKNOWN, Msg("no agent could be read from this rocminfo output"), "host",
                    tuple(ln.strip() for ln in text.splitlines() if ln.strip())[:4],
                    N_("Paste the whole `rocminfo` output."), SRC_ROCMINFO)]


def judge_clinfo_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``clinfo`` -> ``health.gpu_count``: platforms that all report 0 devices fail (the OpenCL runtime is installed
    but sees no GPU); otherwise a pass counting the devices."""
    from wizard.parsers.rocm import parse_clinfo

    plats = parse_clinfo(text)
    total = sum(n for _, n, _ in plats)
    ev = tuple(x for name, _, line in plats for x in ([f"Platform Name: {name}"] if name else []) + [line])[:6]
    if plats and total == 0:
        return [Finding("health.gpu_count", Verdict.FAIL,
                        Msg("clinfo: {platforms} report 0 devices: the OpenCL runtime is installed but sees no GPU",
                            platforms=", ".join(dict.fromkeys(n or "the platform" for n, _, _ in plats))), "host", ev,
                        N_("The GPU driver is not loaded or did not bind the GPUs: check `lspci -nnk` (Kernel driver in "
                           "use), `dmesg` for the driver's probe errors, and for AMD GPUs that amdgpu (amdgpu-dkms) is "
                           "built for the running kernel and /dev/kfd exists; then `rocminfo` or `nvidia-smi`."),
                        SRC_CLINFO)]
    return [Finding("health.gpu_count", Verdict.PASS,
                    Msg("clinfo: {n} OpenCL device(s) on {p} platform(s)", n=total, p=len(plats)), "host", ev, "",
                    SRC_CLINFO)]
