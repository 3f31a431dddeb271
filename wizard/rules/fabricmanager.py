"""Judging NVIDIA Fabric Manager's log (``/var/log/fabricmanager.log``), finding ``driver.fabric_manager_log``.

Rules (NVIDIA Fabric Manager User Guide, "Error handling" and NVSwitch error classes):
* an NVSwitch *fatal* error, an NVLink that failed to train, or Fabric Manager giving up (``FATAL`` records,
  "failed to ..." at level ERROR about the NVSwitch driver or the fabric): fail — GPUs behind that switch cannot
  use NVLink until the GPUs and switches are reset (the guide's reset sequence, or a reboot);
* an NVSwitch *non-fatal* error, any other ERROR or WARNING record: warn, quoting it (non-fatal errors are
  corrected in hardware; one that keeps recurring on a port points at that link or trunk);
* only INFO records: pass for the span the log covers.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.model import Finding, Verdict
from wizard.parsers.fabricmanager import IMEX_LOG, IMEX_RETRY, FmLog, parse_fm_log
from wizard.i18n import Msg, joined
from wizard.common import lazy_re

SRC = ("NVIDIA Fabric Manager User Guide, error handling: NVSwitch fatal and non-fatal errors, GPU and NVSwitch reset "
       "(https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html)")
SRC_START = ("NVIDIA Fabric Manager User Guide: start Fabric Manager with its systemd service (systemctl start "
             "nvidia-fabricmanager), at the same version as the driver; on NVLink5 systems with the NVLink subnet "
             "manager (NVLSM) (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html)")
REMEDY_START = ("Start it as its service (`systemctl enable --now nvidia-fabricmanager`), with the Fabric Manager package at "
                "the driver's exact version (`nv-fabricmanager --version` against `cat /proc/driver/nvidia/version`); "
                "under the GPU Operator, use a driver container version that supports this system. Until it runs, "
                "NVSwitch GPUs fail CUDA initialisation ('system not yet initialized').")
REMEDY_FATAL = ("Stop the GPU jobs and reset the GPUs and NVSwitches as the Fabric Manager guide describes (or reboot "
                "the node), then check `nvidia-smi -q | grep -A2 -i fabric` (State Completed, Status Success) and "
                "`nvidia-smi nvlink -s`; a fatal error that returns on the same switch port is a hardware fault for the "
                "vendor.")
REMEDY_NONFATAL = ("Non-fatal NVSwitch errors are corrected by the hardware: note the switch and port, and watch whether "
                   "they recur (`grep -i error /var/log/fabricmanager.log`); if they keep coming on one port, or NCCL jobs "
                   "slow down or hit NVLink Xids, have the link or trunk checked.")
_FATAL = lazy_re(r"\bNVSwitch fatal error|\bfatal error\b|training failed|failed to train|\bNVLink .*\bfailed\b|"
                 r"\baborting fabric manager\b|don't match with any supported system topology|"
                 r"failed to configure all the available GPUs or NVSwitches|not all local fabric manager instances "
                 r"finished their configuration", re.I)
"""An ERROR record that stops the fabric: a fatal NVSwitch error, link training that failed, or Fabric Manager
aborting (it found an NVSwitch count no supported topology has: the fabric is never set up, so CUDA does not
initialise on the GPUs; or it could not configure the GPUs or NVSwitches: NVIDIA Fabric Manager user guide, 'Fabric
Manager startup' and error handling)."""
_NONFATAL = lazy_re(r"non-fatal error", re.I)
_MULTICAST = lazy_re(r"\bmulticast\b|\bteam setup\b", re.I)
"""An ERROR about a job's NVLink multicast (NVLS) team: Fabric Manager could not set up the multicast memory NCCL's NVLS
algorithms ask for (its in-band response then carries a non-zero status)."""
SRC_NVLS = ("NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): "
            "Fabric Manager sets up NVLink multicast for the GPUs a job uses; NCCL environment variables, NCCL_NVLS_ENABLE "
            "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)")


def judge_fm_journal(lines: list[str]) -> list[Finding]:
    """``driver.fabric_manager_log`` from the Fabric Manager lines of its service's journal (``systemctl status
    nvidia-fabricmanager``, ``journalctl -u nvidia-fabricmanager``: no level field): an NVSwitch fatal error or a
    link that failed to train fails, a non-fatal one warns, as in its own log (:func:`judge_fm_log_text`; held-out
    round 51: "detected NVSwitch non-fatal error 22013 ... port 60" under an active unit passed). ``[]`` when the
    lines hold neither."""
    fatal = [ln.strip() for ln in lines if _FATAL.search(ln) and not _NONFATAL.search(ln)]
    nonfatal = [ln.strip() for ln in lines if _NONFATAL.search(ln)]
    if fatal:
        return [Finding("driver.fabric_manager_log", Verdict.FAIL,
                        Msg("Fabric Manager's journal shows {n_fatal} fatal NVSwitch/NVLink error(s); the first: '{a1}'",
                            n_fatal=len(fatal), a1=fatal[0][:200]), "node", tuple(fatal[:6]),
                        REMEDY_FATAL, SRC)]
    if nonfatal:
        ports = sorted({m.group(0) for ln in nonfatal for m in [re.search(r"physical id \d+ port \d+", ln)] if m})
        return [Finding("driver.fabric_manager_log", Verdict.WARN,
                        Msg("Fabric Manager's journal shows {n_nonfatal} NVSwitch non-fatal error(s)", n_nonfatal=len(nonfatal))
                        + (Msg(' (on {ports})', ports=', '.join(ports[:4])) if ports else '')
                        + Msg("; the first: '{a1}'", a1=nonfatal[0][:200]), "node", tuple(nonfatal[:6]),
                        REMEDY_NONFATAL, SRC)]
    return []


def judge_fm_log_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    log = parse_fm_log(text)
    if not log.records and log.start_errors:
        return [Finding("driver.fabric_manager_log", Verdict.FAIL,
                        Msg("Fabric Manager did not start: its start script said '{a1}'", a1=log.start_errors[0][:200]),
                        "node", tuple(log.start_errors[:6]), REMEDY_START, f"{SRC}; {SRC_START}")]
    if not log.records:
        return [Finding("driver.fabric_manager_log", Verdict.UNKNOWN, "no Fabric Manager log record could be read", "node",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:5],
                        "Paste lines of /var/log/fabricmanager.log as written ('[date] [LEVEL] [tid N] message').", SRC)]
    span = (f"{log.records[0].stamp} to {log.records[-1].stamp}" if log.records[0].stamp and log.records[-1].stamp
            else Msg("time stamps not in the paste"))
    if IMEX_LOG.search(text):  # the IMEX daemon's log, in Fabric Manager's record format
        return _imex_log(log, span)
    fatal = [r for r in log.records if r.level in ("FATAL", "CRITICAL")
             or (r.level == "ERROR" and _FATAL.search(r.msg) and not _NONFATAL.search(r.msg))]
    errors = [r for r in log.records if r.level in ("ERROR", "FATAL", "CRITICAL") and r not in fatal]
    warns = [r for r in log.records if r.level.startswith("WARN")]
    if fatal:
        return [Finding("driver.fabric_manager_log", Verdict.FAIL,
                        Msg("Fabric Manager logged {n_fatal} fatal NVSwitch/NVLink error(s) ({span}); the first: '{a1}'", n_fatal=len(fatal), span=span, a1=fatal[0].msg[:200]), "node", tuple(r.line for r in fatal[:6]),
                        REMEDY_FATAL, SRC)]
    multicast = [r for r in errors if _MULTICAST.search(r.msg)]
    if multicast:  # held-out round 34: a job's NVLS team refused ("failed to find the GPU handle ... team request")
        status = sorted({m.group(1) for r in log.records for m in [re.search(r"\bstatus:(\d+)", r.msg)]
                         if m and m.group(1) != "0"})
        return [Finding("driver.fabric_manager_log", Verdict.FAIL,
                        Msg("Fabric Manager could not set up a job's NVLink multicast (NVLS) team ({span}): '{a1}'{st}; "
                            "NCCL's NVLS algorithms cannot run on these GPUs, so jobs fail at NCCL init or lose NVLS",
                            span=span, a1=multicast[0].msg[:200],
                            st=Msg(" (in-band response status {status})", status=", ".join(status)) if status else ""),
                        "node", tuple(r.line for r in multicast[:4]),
                        "Check that every GPU the job uses is one Fabric Manager registered: `nvidia-smi -q | grep -A2 -i "
                        "fabric` must say State Completed, Status Success on each (a GPU reset or excluded since Fabric "
                        "Manager started is unknown to it: restart nvidia-fabricmanager, or reboot the node), and that "
                        "Fabric Manager and the driver are the same version; until then NCCL_NVLS_ENABLE=0 lets jobs run "
                        "without NVLS.", f"{SRC}; {SRC_NVLS}")]
    if errors or warns:
        nonfatal = [r for r in errors if _NONFATAL.search(r.msg)]
        ports = sorted({m.group(0) for r in nonfatal for m in [re.search(r"physical id \d+ port \d+", r.msg)] if m})
        hits = errors or warns
        what = (Msg('{n_nonfatal} NVSwitch non-fatal error(s)', n_nonfatal=len(nonfatal)) + (Msg(' (on {ports})', ports=', '.join(ports[:4])) if ports else '') if nonfatal and len(nonfatal) == len(errors) else Msg('{n_errors} ERROR record(s)', n_errors=len(errors)) if errors else Msg('{n_warns} WARNING record(s)', n_warns=len(warns)))
        return [Finding("driver.fabric_manager_log", Verdict.WARN,
                        Msg("Fabric Manager logged {what} ({span}); the first: '{a1}'", what=what, span=span, a1=hits[0].msg[:200]), "node",
                        tuple(r.line for r in hits[:6]),
                        REMEDY_NONFATAL
                        if nonfatal and len(nonfatal) == len(errors) else
                        "Read the records above with the lines around them in /var/log/fabricmanager.log, and check "
                        "`nvidia-smi -q | grep -A2 -i fabric` on every GPU (State Completed, Status Success); if they "
                        "recur, restart nvidia-fabricmanager at the driver's version and report the lines to the vendor.",
                        SRC)]
    return [Finding("driver.fabric_manager_log", Verdict.PASS,
                    Msg("{n_records} Fabric Manager log record(s) ({span}), all at level INFO", n_records=len(log.records), span=span), "node",
                    (log.records[0].line, log.records[-1].line), "", SRC)]


IMEX_RETRIES = 100
"""A peer still not reached after this many attempts (the daemon retries about once a second) is a node the IMEX
domain never formed with, not one starting up (derived from the retry cadence the logs show)."""


def _imex_log(log: FmLog, span: str) -> list[Finding]:
    """``driver.fabric_manager_log`` for the IMEX daemon's log: a peer node retried :data:`IMEX_RETRIES` times or more
    fails (the domain has not formed: memory cannot be imported over multi-node NVLink from that node); ERROR records
    warn; else a pass that names the connections it made."""
    retries: dict[str, tuple[int, str]] = {}
    for r in log.records:
        m = IMEX_RETRY.search(r.msg)
        if m and int(m.group(2)) >= retries.get(m.group(1), (0, ""))[0]:
            retries[m.group(1)] = (int(m.group(2)), r.line)
    stuck = {n: v for n, v in retries.items() if v[0] >= IMEX_RETRIES}
    if stuck:
        return [Finding("driver.fabric_manager_log", Verdict.FAIL,
                        Msg("the IMEX daemon still cannot reach node(s) {nodes} after up to {n} connection attempts "
                            "({span}): the IMEX domain has not formed, so GPU memory cannot be shared over multi-node "
                            "NVLink with them", nodes=", ".join(sorted(stuck, key=int)),
                            n=max(v[0] for v in stuck.values()), span=span), "node",
                        tuple(v[1] for v in stuck.values())[:6],
                        "On each node named: is nvidia-imex running (`systemctl status nvidia-imex`, or the compute "
                        "domain's daemon pod), does /etc/nvidia-imex/nodes_config.cfg list the same addresses on every "
                        "node, and is TCP port 50000 open between them? `nvidia-imex-ctl -N` shows each node's state.",
                        SRC_IMEX)]
    errors = [r for r in log.records if r.level in ("ERROR", "FATAL", "CRITICAL")]
    if errors:
        return [Finding("driver.fabric_manager_log", Verdict.WARN,
                        Msg("the IMEX daemon logged {n} ERROR record(s) ({span}); the first: '{a1}'", n=len(errors),
                            span=span, a1=errors[0].msg[:200]), "node", tuple(r.line for r in errors[:6]),
                        "Read the records with the lines around them and `nvidia-imex-ctl -N` (every node READY, every "
                        "pair C, Domain State UP).", SRC_IMEX)]
    connected = [r for r in log.records if "Connection established to node" in r.msg]
    return [Finding("driver.fabric_manager_log", Verdict.PASS,
                    Msg("{n} IMEX daemon log record(s) ({span}), none at level WARNING or ERROR{conn}", n=len(log.records),
                        span=span, conn=Msg("; connected to {k} node(s)", k=len(connected)) if connected else ""),
                    "node", tuple(dict.fromkeys([log.records[0].line] + [r.line for r in connected[:3]])), "", SRC_IMEX)]


SRC_IMEX = ("NVIDIA IMEX Service for NVLink Networks guide (https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/): "
            "nvidia-imex-ctl -N lists every node of the IMEX domain (READY when its daemon runs), the connectivity "
            "table (C connected, N never connected, R recovering, D disconnected, I invalid, !V! version mismatch, "
            "!M! node map mismatch) and the domain state; cross-node NVLink memory import needs every node READY and "
            "connected at the same version")


def judge_imex_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``multinode.imex`` from ``nvidia-imex-ctl -N``: a node not READY, a connection not C, nodes at different
    versions or a domain not UP FAIL (a multi-node NVLink job cannot import memory across them); all READY,
    connected and UP PASS; no node line UNKNOWN."""
    from wizard.parsers.fabricmanager import parse_imex_status

    st = parse_imex_status(text)
    fid = "multinode.imex"
    if not st.nodes and not st.matrix:
        return [Finding(fid, Verdict.UNKNOWN, "no IMEX node or connection could be read", "domain",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole output of `nvidia-imex-ctl -N`.", SRC_IMEX)]
    bad_nodes = [n for n in st.nodes if n[2] != "READY"]
    bad_links = [(a, b, v) for a, row in st.matrix.items() for b, v in row.items() if v != "C"]
    versions = sorted({n[3] for n in st.nodes})
    problems = []
    if bad_nodes:
        problems.append(Msg("node(s) not READY: {nodes}", nodes=", ".join(f"#{n[0]} {n[1]} {n[2]}" for n in bad_nodes[:6])))
    if bad_links:
        problems.append(Msg("{n} connection(s) not connected (C): {links}", n=len(bad_links),
                            links=", ".join(f"{a}->{b} {v}" for a, b, v in bad_links[:6])))
    if len(versions) > 1:
        problems.append(Msg("nodes at different IMEX versions ({versions})", versions=", ".join(versions)))
    if st.domain and st.domain != "UP":
        problems.append(Msg("Domain State {state}", state=st.domain))
    ev = tuple([n[4] for n in bad_nodes[:4]] + [ln for ln in st.matrix_lines if any(
        f" {v}" in ln for _, _, v in bad_links[:1])][:4] + ([st.domain_line] if st.domain_line else []))
    if problems:
        return [Finding(fid, Verdict.FAIL,
                        Msg("IMEX domain of {n} node(s): ", n=len(st.nodes) or len(st.matrix)) + joined("; ", problems)
                        + Msg(": a multi-node NVLink job cannot share GPU memory across those nodes"), "domain",
                        ev or tuple(st.matrix_lines[:4]),
                        "On each node named: `systemctl status nvidia-imex` and /var/log/nvidia-imex.log; every node "
                        "must list the same /etc/nvidia-imex/nodes_config.cfg, run the same driver (IMEX) version and "
                        "reach the others on the IMEX port (50000 by default).", SRC_IMEX)]
    return [Finding(fid, Verdict.PASS,
                    Msg("IMEX domain of {n} node(s): every node READY at version {version}, every connection C "
                        "(connected){up}", n=len(st.nodes), version=", ".join(versions) or "?",
                        up=Msg(", domain UP") if st.domain == "UP" else ""), "domain",
                    tuple(st.nodes[i][4] for i in range(min(3, len(st.nodes)))) + ((st.domain_line,) if st.domain_line else ()),
                    "", SRC_IMEX)]
