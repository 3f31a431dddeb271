"""Judges for a pasted or saved output (``bringup explain``): text + expectations -> findings.

Where a live rule reads the pasted output as it is, :data:`wizard.registry.KINDS` names that rule
(through :func:`as_probe` when it takes probe outputs); the functions here are the judges that need
more: parsing with an extra argument, splitting a listing into two probes, or a judgement of their
own. Either way a paste reaches the same rule the live check uses, so a paste and a capture bundle are judged by one set of rules. The
kinds themselves (name, detector, judge, commands) are listed in :data:`wizard.registry.KINDS`.
Judges never raise: unreadable text gives an ``unknown`` finding with the raw lines as evidence.
"""

from __future__ import annotations

import dataclasses

import re
from typing import Any, Callable, Mapping

from wizard.install.catalog import flavour_word
from wizard.model import Finding, Verdict
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.edac import parse_edac_grep, parse_edac_sysfs, parse_edac_util, parse_ras_mc_ctl
from wizard.parsers.gpu import parse_driver_version
from wizard.parsers.platform import _lines
from wizard.probes import EDAC_ROOT, ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.rules.smi import INVENTORY_IDS, judge_doc
from wizard.i18n import Msg, SEMICOLON



# from wizard/parsers/dcgm.py
def dcgm_judge_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import dcgm

    from wizard.parsers.dcgm import command_level

    d = parse_dcgm_text(text)
    if not d.level and isinstance(exp.get("command"), str):  # the prompt line explain split off the output
        d = dataclasses.replace(d, level=command_level(exp["command"]))
    return dcgm.judge(d, text, exp)


# from wizard/parsers/dcgm.py
def dcgm_health_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.dcgm import parse_dcgm_health
    from wizard.rules import dcgm

    return dcgm.judge_health(parse_dcgm_health(text), text)


# from wizard/parsers/launcher.py
def launcher_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import launcher

    return launcher.judge_text(text, exp)


def training_log_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import launcher

    return launcher.judge_training_log_text(text, exp)


# from wizard/parsers/gpu.py
def smi_list_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``nvidia-smi -L``: the driver's errors (gc.nvidia_smi, as the live check) and the GPU list (gc.smi_list)."""
    out = {"nvidia_smi_l": ProbeOutput("nvidia_smi_l", "$ nvidia-smi -L (pasted)", text=text, rc=0)}
    return gc.nvidia_smi(out, exp) + gc.smi_list(out, exp)


# from wizard/parsers/dcgm.py
def dcgm_judge_json(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import dcgm

    return dcgm.judge(parse_dcgm_json(text), text, exp)


# from wizard/parsers/edac.py
def edac_judge_edac_util(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_edac_facts(parse_edac_util(text), exp, "$ edac-util -v")


# from wizard/parsers/edac.py
def edac_judge_ras(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_ras_mc_ctl(parse_ras_mc_ctl(text), exp)


# from wizard/parsers/edac.py
def edac_judge_mcelog(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.parsers.edac import parse_mcelog
    from wizard.rules import edac as events

    return events.judge_mcelog(parse_mcelog(text))


# from wizard/parsers/edac.py
def edac_judge_sysfs(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_edac_facts(parse_edac_sysfs(parse_edac_grep(text)), exp, EDAC_ROOT)


# from wizard/parsers/platform.py
def platform_judge_cpu_power(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import bios as bios_rules

    idle: dict[str, str | None] = {}
    freq: dict[str, str | None] = {}
    for ln in _lines(text):
        p, sep, v = ln.partition(":")
        if sep and p.startswith("/sys/"):
            (freq if "/cpufreq/" in p or "/intel_pstate/" in p else idle)[p.strip()] = v + "\n"
    src = "sysfs listing (pasted)"
    return bios_rules.power_profile({"cpuidle": ProbeOutput("cpuidle", src, text=text, files=idle),
                             "cpufreq": ProbeOutput("cpufreq", src, text=text, files=freq)}, exp)


# from wizard/parsers/topology.py
def as_probe(probe: str, source: str, rule: Callable[[Mapping[str, Any], Mapping[str, Any]], list[Finding]],
             rc: int | None = None) -> Callable[[str, Mapping[str, Any]], list[Finding]]:
    """A judge that hands the pasted text to ``rule`` as the output of ``probe`` (the same rule the live
    check runs on that probe); ``rc``: the exit status to assume for a command's output."""
    def judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
        return rule({probe: ProbeOutput(probe, source, text=text, rc=rc)}, exp)

    judge.__name__ = f"judge_{probe}"
    return judge


# from wizard/parsers/host_kinds.py
def host_kinds_judge_driver_version(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    d = parse_driver_version(text)
    if not d.version:
        return [Finding("driver.version", Verdict.UNKNOWN, "no driver version in this text", "host",
                        tuple(text.splitlines()[:3]), "Paste the whole of /proc/driver/nvidia/version.",
                        gc.SRC_A2)]
    return [Finding("driver.version", Verdict.PASS,
                    Msg("NVIDIA driver {version} loaded ({flavour} kernel module)", version=d.version, flavour=flavour_word(d.flavour)), "host",
                    tuple(x for x in (d.line, d.gcc_line) if x), "", gc.SRC_A2)]


# from wizard/parsers/gpu.py
def gpu_information_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``/proc/driver/nvidia/gpus/<bus>/information`` of one or several GPUs (gc.gpu_information: excluded GPUs,
    GPUs the driver has not brought up, GSP firmware vs the loaded driver); ``/proc/driver/nvidia/version`` pasted
    with them (``head`` of both files) is judged as its own kind judges it."""
    from wizard.parsers.gpu import parse_gpu_information

    info = parse_gpu_information(text)
    return (host_kinds_judge_driver_version(text, exp) if info.driver.line else []) + gc.gpu_information(info)


# from wizard/parsers/host_kinds.py
def host_kinds_judge_smi_versions(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """nvidia-smi's header values pasted one per line: ``driver.version`` (the driver nvidia-smi talks to and the newest
    CUDA it supports; the table itself, with the GPUs, is what shows their health)."""
    from wizard.parsers.host_kinds import smi_version_lines

    v = smi_version_lines(text)
    drv = (v.get("driver version") or v.get("nvidia-smi") or ("", ""))
    cuda = v.get("cuda version")
    return [Finding("driver.version", Verdict.PASS,
                    (Msg('nvidia-smi reports NVIDIA driver {drv}', drv=drv[0]) + (Msg(", which supports CUDA up to {cuda} (the driver's limit, not the installed toolkit)", cuda=cuda[0]) if cuda else '') + Msg('; these lines hold no GPU, so GPU health is not judged')), "host",
                    tuple(x[1] for x in v.values()), "", gc.SRC_A2)]


# from wizard/parsers/host_kinds.py
def host_kinds_judge_modules(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    src = "/proc/modules" if re.search(r" (Live|Loading) 0x", text) else "lsmod"
    out = {"modules": ProbeOutput("modules", src, text=text)}
    from wizard.parsers.host import parse_modules
    from wizard.rules.fabric_node import judge_module_list

    cmd = exp.get("command")
    typed: str = cmd if isinstance(cmd, str) else ""
    g = re.search(r"\blsmod\b.*\|\s*(?:e?grep|rg)\s+(?:-\w+\s+)*['\"]?([^'\"|]+?)['\"]?\s*$", typed)
    if g and not re.search(r"nvidia|nouveau", g.group(1), re.I) and "nvidia" not in text:
        # `lsmod | grep nvme_core`: a filtered list cannot say the nvidia module is missing (held-out round 163)
        return [Finding("driver.loaded", Verdict.SKIP,
                        Msg("lsmod filtered by grep '{pattern}': it cannot show whether the nvidia module is loaded",
                            pattern=g.group(1).strip()), "host", (typed.strip(),), "", gc.SRC_A2)] + \
            judge_module_list(parse_modules(text)[0], src)
    return gc.nouveau(out, exp) + gc.driver(out, exp) + judge_module_list(parse_modules(text)[0], src)


SRC_CSV_FIELDS = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ and `nvidia-smi "
                  "--help-query-gpu` (the --query-gpu properties; 'noheader' drops the line naming the columns, "
                  "'[N/A]' = not available or not supported)")


# from wizard/parsers/smi_kinds.py
def smi_csv_noheader_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``--query-gpu ... --format=csv,noheader`` rows: the fields whose column the values name (GPU name,
    bus id, UUID, pstate, driver version, compute mode) go through the same rules as a CSV with its header;
    one more finding says which columns could not be named, so are not judged, and counts the N/A cells."""
    from wizard.parsers.smi import parse_smi_csv_noheader, read_noheader_csv

    nh = read_noheader_csv(text)
    findings = judge_doc(parse_smi_csv_noheader(text), exp, before_tests=False, inventory_note=False)
    named = [Msg("column {n} = {label}", n=i + 1, label=lab) for i, (k, lab) in enumerate(zip(nh.columns, nh.labels)) if k]
    unnamed = [Msg("column {n} ({label})", n=i + 1, label=lab) for i, (k, lab) in enumerate(zip(nh.columns, nh.labels)) if not k]
    msg = (Msg('{n_rows} row(s) of `nvidia-smi --query-gpu ... --format=csv,noheader` without column names: ', n_rows=len(nh.rows)) + (Msg('read {named}', named=SEMICOLON.join(named)) if named else Msg('no column could be named from its values')) + (Msg('; not judged, because the value fits more than one property: {unnamed}', unnamed=SEMICOLON.join(unnamed)) if unnamed else '') + Msg('; {na} field(s) N/A', na=nh.na))
    # stricter than judge_doc's inventory rule (INVENTORY_IDS): without the header a driver version is one more
    # identity column, not a sign the query was about the GPUs' state
    identity = INVENTORY_IDS | {"driver.version", "driver.nvidia_smi", "health.smi_csv_columns"}
    health_judged = any(f.id not in identity and f.verdict is not Verdict.SKIP for f in findings)
    if not health_judged:  # names and versions only: nothing says whether the GPUs are healthy
        msg += (Msg('; no health field (temperature, ECC, power, clocks, errors) could be named, so health is not judged'))
    findings.append(Finding("health.smi_csv_columns", Verdict.SKIP if health_judged else Verdict.UNKNOWN, msg, "host",
                            tuple(nh.lines[:4]),
                            "To have every field judged, run the query again with its header "
                            "(`--format=csv`, not `csv,noheader`) and paste that.", SRC_CSV_FIELDS))
    return findings


def smi_kinds_judge(parse):
    def judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
        return judge_doc(parse(text), exp, before_tests=False)
    return judge


# from wizard/parsers/fabric.py
def fabric_judge_ib_ports(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_ib_ports
    from wizard.rules import fabric

    return fabric.judge(parse_ib_ports(text), text, exp)


# from wizard/parsers/fabric.py
def fabric_judge_ethtool(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_ethtool
    from wizard.rules import fabric

    return fabric.judge_ethtool(parse_ethtool(text), text, exp)


def fabric_judge_fi_info(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_fi_info
    from wizard.rules import fabric

    info = parse_fi_info(text)
    typed = exp.get("command")
    if not info.asked and isinstance(typed, str) and "fi_info" in typed:  # the command typed at the paste's prompt
        info = parse_fi_info(f"{typed}\n{text}")
    return fabric.judge_fi_info(info, text, exp)


def fabric_judge_iblinkinfo(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_iblinkinfo
    from wizard.rules import fabric

    return fabric.judge_iblinkinfo(parse_iblinkinfo(text), text, exp)


def fabric_judge_ibnetdiscover(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_ibnetdiscover
    from wizard.rules import fabric

    return fabric.judge_ibnetdiscover(parse_ibnetdiscover(text), text, exp)


def fabric_judge_osu(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import fabric

    return fabric.judge_osu_text(text, exp)


def fabric_judge_mlxlink(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_mlxlink
    from wizard.rules import fabric

    return fabric.judge_mlxlink(parse_mlxlink(text), text, exp)


def fabric_judge_ibswinfo(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_ibswinfo
    from wizard.rules import fabric

    return fabric.judge_ibswinfo(parse_ibswinfo(text), text, exp)


def fabric_judge_show_gids(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_show_gids
    from wizard.rules import fabric

    return fabric.judge_show_gids(parse_show_gids(text), text, exp)


def fabric_judge_ip_addr(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_ip_addr
    from wizard.rules import fabric

    return fabric.judge_ip_addr(parse_ip_addr(text), text, exp)


# from wizard/parsers/fabric.py
def fabric_judge_perfquery(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_perfquery
    from wizard.rules import fabric

    return fabric.judge_counters(parse_perfquery(text), text)


# from wizard/parsers/fabric.py
def fabric_judge_perftest(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.fabric import parse_perftest
    from wizard.rules import fabric

    return fabric.judge_perftest(parse_perftest(text), text, exp)


# from wizard/parsers/dcgm.py
def dcgm_discovery_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.dcgm import parse_dcgmi_discovery
    from wizard.rules import dcgm

    return dcgm.judge_discovery(parse_dcgmi_discovery(text), text, exp)


# from wizard/parsers/dcgm.py
def dcgm_exporter_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.dcgm import parse_dcgm_exporter
    from wizard.rules import dcgm

    return dcgm.judge_dmon(parse_dcgm_exporter(text), text, exp)


def dcgm_dmon_judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.parsers.dcgm import parse_dcgmi_dmon
    from wizard.rules import dcgm

    return dcgm.judge_dmon(parse_dcgmi_dmon(text), text, exp)
