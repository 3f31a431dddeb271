"""First health checks: NVIDIA GPUs on the PCI bus, nouveau, the driver, nvidia-smi, NVML.

Rules (checks-catalogue A1, A2): the GPU count comes from PCI (sysfs), so a GPU the driver
could not bring up still counts; fewer GPUs in NVML than on the bus is a failure. When no
NVIDIA GPU is on the bus at all, driver checks are ``skip`` (they have nothing to drive) and
the one failure points at the hardware.
"""

from __future__ import annotations

from typing import Any, Mapping

from wizard.rules.common import Outputs, garbled, missing
from wizard.model import Finding, Verdict
from wizard.parsers.gpu import PciFacts, parse_driver_version, parse_nvidia_smi_l, parse_nvml, parse_pci
from wizard.parsers.host import parse_modules
from wizard.probes import NVIDIA_VENDOR

SRC_A1 = "NVIDIA Health Validation gpu_count; Meta GCM gpu_num; AzNHC check_gpu_count"
SRC_A2 = "DCGM diagnostics level 1 (deployment checks); /proc/driver/nvidia/version"
SRC_NOUVEAU = ("NVIDIA CUDA installation guide for Linux, 'Disabling Nouveau' "
               "(docs.nvidia.com/cuda/cuda-installation-guide-linux/)")
NO_GPU_REMEDY = (
    "Check that the GPUs (or the GPU baseboard) are seated and that every auxiliary power cable is "
    "plugged in; enable Above 4G decoding in the BIOS; on a VM, check the GPUs are passed through. "
    "Then re-run this check. `lspci -d 10de:` lists NVIDIA functions once they enumerate.")


def _pci(out: Outputs) -> tuple[PciFacts | None, Finding | None]:
    o = out.get("pci")
    if o is None or (not o.ok and not o.files):
        return None, missing("health.gpu_pci", o, "which NVIDIA GPUs are on the PCI bus",
                             remedy="Check that /sys is mounted and readable.", source=SRC_A1)
    return parse_pci(o), None


def _no_gpu(out: Outputs) -> bool:
    """True only when PCI was read and shows no NVIDIA GPU (unknown PCI state is not 'no GPU')."""
    facts, err = _pci(out)
    return err is None and facts is not None and facts.vendors_read > 0 and not facts.gpus


def _skip_no_gpu(fid: str, what: str, observed: str = "", evidence: tuple[str, ...] = ()) -> Finding:
    """``skip`` with what was seen anyway, so nothing the probe found is hidden from the operator."""
    msg = f"{what} skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci)"
    if observed:
        msg += f"; observed: {observed}"
    return Finding(fid, Verdict.SKIP, msg, "host", evidence, "", SRC_A1)


def gpu_pci(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    facts, err = _pci(out)
    if err is not None:
        return [err]
    assert facts is not None
    o = out["pci"]
    if facts.devices_seen == 0:
        return [missing("health.gpu_pci", o, "which NVIDIA GPUs are on the PCI bus", source=SRC_A1)]
    if facts.vendors_read == 0:  # listed but unreadable: "no GPU" would be a guess
        ev = tuple([o.source] + [f"{p}: <{e}>" for p, e in list(o.file_errors.items())[:10]])
        return [Finding("health.gpu_pci", Verdict.UNKNOWN,
                        f"could not tell which NVIDIA GPUs are on the PCI bus: none of the "
                        f"{facts.devices_seen} PCI functions' vendor files could be read", "host", ev,
                        "Check that /sys is mounted and readable (run as root inside containers).", SRC_A1)]
    gpus = facts.gpus
    if not gpus:
        # the raw vendor lines the verdict rests on (NVIDIA functions first, then the others)
        vendor_lines = sorted((f"{p}:{c.strip()}" for p, c in o.files.items()
                               if p.endswith("/vendor") and c is not None),
                              key=lambda line: (not line.endswith(NVIDIA_VENDOR), line))
        ev = (f"{o.source}: {facts.devices_seen} PCI functions, none with vendor "
              f"{NVIDIA_VENDOR} and a display class (0x0300/0x0302)",)
        ev += tuple(line for f in facts.functions for line in f.evidence)  # NVIDIA non-GPU functions
        ev += tuple(line for line in vendor_lines[:16] if line not in ev)
        return [Finding("health.gpu_pci", Verdict.FAIL, "no NVIDIA GPU on the PCI bus", "host",
                        ev, NO_GPU_REMEDY, SRC_A1)]
    findings: list[Finding] = []
    from wizard.parsers.pcie import marketing_name

    counts: dict[str, int] = {}
    for g in gpus:
        counts[g.pci_id] = counts.get(g.pci_id, 0) + 1
    kinds = [f"{n}x {marketing_name(pid.split(':')[1]) or 'NVIDIA GPU'} ({pid})" for pid, n in sorted(counts.items())]
    bridges = facts.bridges
    desc = f"{len(gpus)} NVIDIA GPU(s) on the PCI bus: {', '.join(kinds)}"
    if bridges:
        desc += f", {len(bridges)} NVSwitch/bridge function(s)"
    ev = tuple(line for g in gpus for line in g.evidence)
    expected = plan.get("gpu_count")
    if isinstance(expected, int) and expected > 0 and len(gpus) < expected:
        findings.append(Finding("health.gpu_pci", Verdict.FAIL, f"{desc}; the plan expects {expected}", "host",
                                ev, "A GPU is missing from the bus: reseat it and its power cables, check "
                                "the BIOS sees it, then re-check. " + NO_GPU_REMEDY.split(". ")[-1], SRC_A1))
    else:
        findings.append(Finding("health.gpu_pci", Verdict.PASS, desc, "host", ev, "", SRC_A1))
    return findings


def _loaded_modules(out: Outputs) -> tuple[set[str] | None, dict[str, str], list[str], str]:
    """(module names, name -> evidence line, unreadable lines, where from) from /proc/modules,
    falling back to /sys/module (also lists built-in drivers) when /proc/modules is absent
    (a kernel without loadable-module support). ``None`` names = could not tell."""
    o, sm = out.get("modules"), out.get("sys_module")
    if o is not None and o.ok:
        mods, problems = parse_modules(o.text)
        return set(mods), {n: m.line for n, m in mods.items()}, problems, o.source
    if sm is not None and sm.ok:
        names = {p.rsplit("/", 1)[-1] for p in sm.files}
        return names, {n: f"/sys/module/{n}" for n in names}, [], f"/sys/module (no /proc/modules: {o.error if o else 'not read'})"
    return None, {}, [], ""


def _nouveau_blacklist(out: Outputs) -> list[str]:
    """``path:line`` of modprobe.d lines that blacklist nouveau (``blacklist nouveau``)."""
    o = out.get("modprobe_d")
    found = []
    for path, content in (o.files.items() if o is not None else ()):
        for line in (content or "").splitlines():
            if line.split("#", 1)[0].split() == ["blacklist", "nouveau"]:
                found.append(f"{path}:{line.strip()}")
    return found


def nouveau(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("modules")
    names, lines, problems, where = _loaded_modules(out)
    if names is None:
        return [missing("os.nouveau", o, "which kernel modules are loaded", source=SRC_NOUVEAU)]
    if not names and problems:
        return [garbled("os.nouveau", o, "/proc/modules", problems, source=SRC_NOUVEAU)]
    if "nouveau" in names:
        bl = _nouveau_blacklist(out)
        if bl:  # the fix is in place; only the reboot is missing
            return [Finding("os.nouveau", Verdict.FAIL,
                            "nouveau is still loaded, although it is blacklisted: reboot to apply", "host",
                            (lines["nouveau"], *bl),
                            "Reboot (the initramfs must have been rebuilt after the blacklist was written), "
                            "then check again.", SRC_NOUVEAU)]
        return [Finding("os.nouveau", Verdict.FAIL,
                        "the open-source nouveau driver is loaded and will hold the GPUs", "host",
                        (lines["nouveau"],),
                        "Blacklist nouveau (blacklist nouveau + options nouveau modeset=0 in "
                        "/etc/modprobe.d/), rebuild the initramfs, reboot, then install the NVIDIA driver.",
                        SRC_NOUVEAU)]
    return [Finding("os.nouveau", Verdict.PASS, "nouveau is not loaded", "host",
                    (f"{where}: no nouveau",), "", SRC_NOUVEAU)]


def driver(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    mo, vo = out.get("modules"), out.get("nvidia_driver_version")
    names, lines, problems, where = _loaded_modules(out)
    if _no_gpu(out):
        seen = ("module list unreadable" if names is None else
                "the nvidia module is loaded" if "nvidia" in names else "the nvidia module is not loaded")
        return [_skip_no_gpu("driver.loaded", "driver check", seen, (where,) if where else ())]
    if names is None:
        return [missing("driver.loaded", mo, "whether the nvidia module is loaded", source=SRC_A2)]
    if not names and problems:  # unreadable, not "no nvidia module"
        return [garbled("driver.loaded", mo, "/proc/modules", problems, source=SRC_A2)]
    if "nvidia" not in names:
        return [Finding("driver.loaded", Verdict.FAIL, "the nvidia kernel module is not loaded", "host",
                        (f"{where}: no nvidia module",) + ((vo.source + ": " + vo.error,) if vo is not None and vo.error else ()),
                        "Install the driver (driver & CUDA stage), or load it with `modprobe nvidia` "
                        "and read `dmesg | grep -i nvrm` if that fails.", SRC_A2)]
    ev = [lines["nvidia"]]
    version = flavour = ""
    if vo is not None and vo.ok:
        d = parse_driver_version(vo.text)
        if d.line:
            ev.append(d.line)
        version, flavour = d.version, d.flavour
    msg = "nvidia kernel module loaded" + (f": {version} ({flavour} kernel module)" if version else "")
    return [Finding("driver.loaded", Verdict.PASS, msg, "host", tuple(ev), "", SRC_A2)]


def nvidia_smi(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("nvidia_smi_l")
    if _no_gpu(out):
        seen, ev = "", ()
        if o is not None:
            if o.rc == 127 or o.error.startswith("command not found"):
                seen = "nvidia-smi is not installed"
            else:
                first = (o.text.strip() or o.stderr.strip() or o.error).splitlines()
                seen = first[0][:120] if first else ""
            ev = tuple(o.evidence_error()) if o.error or o.rc else (o.source,)
        return [_skip_no_gpu("driver.nvidia_smi", "nvidia-smi check", seen, ev)]
    if o is None:
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    if o.rc == 127 or o.error.startswith("command not found"):
        return [Finding("driver.nvidia_smi", Verdict.FAIL, "nvidia-smi is not installed", "host",
                        tuple(o.evidence_error()),
                        "Install the NVIDIA driver (it ships nvidia-smi); see the driver & CUDA stage.", SRC_A2)]
    if o.error and o.rc is None:
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    s = parse_nvidia_smi_l(o.text + "\n" + o.stderr)
    if s.error_kind == "no_driver":
        return [Finding("driver.nvidia_smi", Verdict.FAIL, "nvidia-smi cannot talk to the NVIDIA driver",
                        "host", tuple([o.source] + s.error_lines),
                        "The driver is not loaded or its user-space libraries do not match the kernel "
                        "module (often after a driver upgrade without reboot): reboot, or reinstall the "
                        "driver for the running kernel.", SRC_A2)]
    if s.error_kind == "no_devices":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "nvidia-smi finds no devices although GPUs are on the PCI bus: the driver could "
                        "not initialise them", "host", tuple([o.source] + s.error_lines),
                        "Read `dmesg | grep -i -e NVRM -e RmInitAdapter`; typical causes are Above 4G "
                        "decoding off in the BIOS, or a driver too old for this GPU.", SRC_A2)]
    if s.error_kind == "gpu_unreachable":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        f"nvidia-smi cannot reach {len(s.error_lines)} GPU(s) (it lists {len(s.gpus)})",
                        "host", tuple([o.source] + s.error_lines),
                        "A GPU stopped answering the driver (typically Xid 79, fallen off the bus): read "
                        "`dmesg | grep -e NVRM -e Xid` for its PCI address, check its power cables and "
                        "seating, and RMA it if it happens again after a cold boot.", SRC_A2)]
    if o.error:  # timed out or could not run: the error is the evidence, not the (partial) output
        return [missing("driver.nvidia_smi", o, "whether nvidia-smi works", source=SRC_A2)]
    if not s.gpus:
        return [garbled("driver.nvidia_smi", o, "nvidia-smi -L", s.problems or o.lines()[:10], source=SRC_A2)]
    return [Finding("driver.nvidia_smi", Verdict.PASS, f"nvidia-smi lists {len(s.gpus)} GPU(s)", "host",
                    tuple([o.source] + o.lines()[:16]), "", SRC_A2)]


def nvml(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("nvml")
    if _no_gpu(out):
        seen, ev = "", ()
        if o is not None and o.ok:
            nf = parse_nvml(o.text)
            seen = (f"NVML initialised and sees {nf.count} GPU(s)" if nf.init == "ok" else
                    nf.error or "NVML output unreadable")
            ev = (o.source,) + ((nf.error,) if nf.error else ())
        elif o is not None:
            seen, ev = o.error, tuple(o.evidence_error())
        return [_skip_no_gpu("health.nvml", "NVML check", seen, ev)]
    if o is None or not o.ok:
        return [missing("health.nvml", o, "whether NVML initialises", source=SRC_A1)]
    f = parse_nvml(o.text)
    if f.problems:
        lines = [ln for p in f.problems for ln in p.splitlines()]  # evidence is lines, not a blob
        return [garbled("health.nvml", o, "the NVML probe output", lines, source=SRC_A1)]
    if f.init != "ok":
        remedy = {
            "library_not_found": "libnvidia-ml.so.1 is installed with the NVIDIA driver: install the "
                                 "driver (driver & CUDA stage).",
            "driver_not_loaded": "Load the driver (`modprobe nvidia`) and read dmesg if it fails.",
            "no_permission": "Run as root or check the permissions of /dev/nvidia*.",
            "module_missing": "Reinstall bringup: its dependency nvidia-ml-py is missing.",
        }.get(f.init, "Read `dmesg | grep NVRM` for the driver's reason.")
        return [Finding("health.nvml", Verdict.FAIL, f"NVML did not initialise: {f.error}", "host",
                        (o.source, f.error), remedy, SRC_A1)]
    if f.count is None:  # nvmlDeviceGetCount failed: NVML is up but the GPU count is not known
        return [garbled("health.nvml", o, "the NVML GPU count", o.text.strip()[:500].splitlines(), source=SRC_A1)]
    findings: list[Finding] = []
    pci, _ = _pci(out)
    on_bus = len(pci.gpus) if pci is not None else None
    desc = f"NVML sees {f.count} GPU(s), driver {f.driver_version}" + (
        f", CUDA {f.cuda_version_str} supported by the driver" if f.cuda_version_str else "")
    ev = [o.source] + [f"GPU {g.get('index')}: {g.get('name', '?')} {g.get('pci_bus_id', '?')} "
                       f"serial {g.get('serial', '?')}" for g in f.gpus]
    # a GPU NVML counts but cannot open (nvmlDeviceGetHandleByIndex: "GPU is lost" after Xid 79)
    lost = [g for g in f.gpus if isinstance(g.get("errors"), dict) and g["errors"].get("handle")]
    if lost:
        findings.append(Finding("health.nvml", Verdict.FAIL,
                                f"{desc}, but cannot open {len(lost)} of them", "host",
                                tuple(ev + [f"GPU {g.get('index')}: handle: {g['errors']['handle']}" for g in lost]),
                                "Read `dmesg | grep -e NVRM -e Xid` for the GPU's PCI address; reseat it or "
                                "RMA it if it keeps failing.", SRC_A1))
    elif on_bus is not None and f.count is not None and f.count < on_bus:
        findings.append(Finding("health.nvml", Verdict.FAIL,
                                f"{desc}, but {on_bus} are on the PCI bus: the driver could not bring up "
                                f"{on_bus - f.count}", "host", tuple(ev),
                                "Read `dmesg | grep -e NVRM -e Xid` for the missing GPU's PCI address; "
                                "reseat it or RMA if it keeps failing.", SRC_A1))
    else:
        findings.append(Finding("health.nvml", Verdict.PASS, desc, "host", tuple(ev), "", SRC_A1))
    return findings


SRC_AER = ("PCIe AER counters in sysfs (kernel Documentation/PCI/pcieaer-howto.rst, aer_dev_* files); "
           "Meta GCM pcie-aer: fatal -> fail, uncorrectable non-fatal -> warn, corrected -> information")


def aer_counters(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """AER error counters the kernel keeps per GPU function since boot (sysfs ``aer_dev_*``):
    any fatal -> fail, any non-fatal uncorrectable -> warn, corrected -> pass with the count."""
    facts, err = _pci(out)
    if err is not None or facts is None:
        return [err] if err is not None else []
    if _no_gpu(out):
        return [_skip_no_gpu("health.pcie_aer_counters", "AER counter check")]
    findings = []
    for g in facts.gpus:
        subject = f"GPU ({g.bdf})"
        if not g.aer:
            continue
        total = {sev: sum(v for k, v in c.items() if not k.startswith("TOTAL")) for sev, c in g.aer.items()}
        fatal, nonfatal, corr = total.get("fatal", 0), total.get("nonfatal", 0), total.get("correctable", 0)
        lines = [ln for sev in ("fatal", "nonfatal", "correctable") for ln in g.aer_lines.get(sev, [])
                 if not ln.rstrip().endswith(" 0")]
        if fatal:
            findings.append(Finding("health.pcie_aer_counters", Verdict.FAIL,
                                    f"{subject}: {fatal} fatal PCIe error(s) since boot", subject, tuple(lines[:12]),
                                    "Reseat the GPU or check its riser and slot; read `dmesg | grep -i aer` for the "
                                    "failing port. A GPU with fatal link errors should not train until fixed.", SRC_AER))
        elif nonfatal:
            findings.append(Finding("health.pcie_aer_counters", Verdict.WARN,
                                    f"{subject}: {nonfatal} uncorrectable (non-fatal) PCIe error(s) since boot",
                                    subject, tuple(lines[:12]),
                                    "Watch whether the count grows under load; check seating, risers and cables.",
                                    SRC_AER))
        else:
            findings.append(Finding("health.pcie_aer_counters", Verdict.PASS,
                                    f"{subject}: no uncorrectable PCIe errors since boot"
                                    + (f" ({corr} corrected)" if corr else ""), subject, tuple(lines[:6]), "",
                                    SRC_AER))
    if not findings:
        return [Finding("health.pcie_aer_counters", Verdict.SKIP,
                        "no AER counters in sysfs (the kernel exposes aer_dev_* only with AER enabled)",
                        "host", (), "", SRC_AER)]
    return findings
