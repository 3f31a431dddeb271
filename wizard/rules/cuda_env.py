"""Judge of the CUDA environment reports of the CUDA Python ecosystem (``bringup explain``): CuPy's
``cupy.show_config()``, ``python -m xformers.info``, Numba's ``cuda.detect()`` and ``numba -s``, and similar ones
(read by :func:`wizard.parsers.cuda_env.parse_cuda_env`). Finding id ``driver.cuda_env`` (step ``driver.chain``).

Rules:

* the newest CUDA the driver supports against the CUDA runtime the library runs (NVIDIA CUDA Compatibility guide,
  :data:`SRC_COMPAT`): at or above it passes; a driver of an older major fails (the runtime cannot start on it,
  cudaErrorInsufficientDriver); the same major with an older minor warns from CUDA 11 on (minor-version
  compatibility runs it, but PTX JIT compilation and APIs newer than the driver fail) and fails before CUDA 11
  (no minor-version compatibility there); a driver version printed instead of its CUDA is judged against NVIDIA's
  toolkit/driver table (:func:`wizard.rules.driver_chain.judge_chain`);
* a value the library could not read because CUDA failed (CuPy prints the exception, ``CUDARuntimeError(
  'cudaErrorNoDevice: ...')``) is judged by the CUDA error table's class (:data:`wizard.rules.driver_chain.FAIL_CLASSES`);
* CUDA not available (``pytorch.cuda: not available``, ``CUDA Device Initialized : False``) or no devices found
  fails; a device the library lists as not supported warns (some devices) or fails (none supported), saying which
  and why;
* the GPUs listed, all supported and nothing above contrary, pass, named with their compute capability;
* xFormers built for another PyTorch than the one installed warns (its C++/CUDA extensions do not load);
* the report's own error lines that say the CUDA driver chain is not reachable (numba -s's warning log: "call to
  cuInit results in ...") fail through the general rule, :func:`wizard.rules.toolwords.chain_words`;
* missing optional libraries (cuDNN ``None``, no cuTENSOR) are not faults; a report that lists no device and no
  driver version is unknown, saying what it lacks.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.cuda_table import min_driver
from wizard.model import Finding, Verdict
from wizard.parsers.cuda import cuda_error_lookup, version_tuple
from wizard.parsers.cuda_env import MAX_LINES, CudaEnvReport, EnvGpu, parse_cuda_env
from wizard.rules.driver_chain import FAIL_CLASSES, judge_chain
from wizard.rules.kernel_log_common import plural
from wizard.rules.toolwords import chain_words
from wizard.i18n import Msg
from wizard.common import lazy_re

FID = "driver.cuda_env"

_CU_NAME = lazy_re(r"\b(CUDA_ERROR_[A-Z_]+|cudaError[A-Z]\w+)\b")

SRC_COMPAT = ("NVIDIA CUDA Compatibility guide (https://docs.nvidia.com/deploy/cuda-compatibility/): a CUDA runtime "
              "needs a driver that supports its CUDA version; from CUDA 11 on, minor-version compatibility runs it on "
              "an older driver of the same major with a limited feature set (PTX JIT compilation and APIs newer than "
              "the driver fail)")
SRC_REPORTS = ("CuPy cupy.show_config() (cupyx/_runtime.py), xFormers python -m xformers.info, Numba cuda.detect() "
               "and numba -s (numba/cuda/api.py, numba/misc/numba_sysinfo.py): https://github.com/cupy/cupy, "
               "https://github.com/facebookresearch/xformers, https://github.com/numba/numba; compute capabilities: "
               "NVIDIA CUDA GPUs (https://developer.nvidia.com/cuda-gpus)")
SRC_XFORMERS_BUILD = ("xFormers xformers/_cpp_lib.py: \"xFormers can't load C++/CUDA extensions. xFormers was built "
                      "for: PyTorch X with CUDA Y (you have Z)\" (https://github.com/facebookresearch/xformers)")
SRC_CUDA_ERR = "CUDA Runtime API, cudaError_t (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)"

NO_GPU_REMEDY = ("Check that `nvidia-smi` lists the GPUs on this host (else the driver stage), that CUDA_VISIBLE_DEVICES "
                 "names existing GPUs, and, in a container, that it was started with the GPUs (--gpus all / the NVIDIA "
                 "container toolkit).")


def judge_cuda_env_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge: a pasted CUDA environment report -> ``driver.cuda_env`` findings (see the module docstring).
    Never raises."""
    r = parse_cuda_env(text)
    findings = judge_cuda_env(r, text)
    if r.rocm:
        return findings
    # the report's own error lines (numba -s's warning log: "call to cuInit results in ..."): the general rule
    said = [c for c in chain_words(text.splitlines()[:MAX_LINES], _who(r)) if c.verdict is Verdict.FAIL]
    if said:
        c = said[0]
        findings = [f for f in findings if f.verdict is not Verdict.UNKNOWN]
        findings.insert(0, Finding(FID, Verdict.FAIL, c.message, "host", c.lines, c.remedy, f"{c.source}; {SRC_REPORTS}"))
    # a collect_env report (lmdeploy check_env, mmcv) shows the system nvcc next to torch's CUDA: the same rule as an
    # nvcc output pasted next to a torch report (driver_chain.toolkit_and_torch)
    nvcc = [ln.split(":", 1)[1] for ln in text.splitlines()[:MAX_LINES] if ln.strip().startswith("NVCC:")]
    if nvcc:
        from wizard.rules.driver_chain import toolkit_and_torch

        body = "\n".join(text.splitlines()[:MAX_LINES])
        built = (re.search(r"^\s*-\s*CUDA Runtime (\d+\.\d+)", body, re.M)
                 or re.search(r"^PyTorch:\s*\S+\+cu(\d{2,3})(\d)\b", body, re.M))
        cuda = (built.group(1) if built and built.lastindex == 1 else f"{built.group(1)}.{built.group(2)}") if built else ""
        # torch's own CUDA, in the line collect_env prints it ("CUDA used to build PyTorch: 12.1")
        mismatch = toolkit_and_torch(nvcc[0].strip() + "\n", [f"CUDA used to build PyTorch: {cuda}\n"]) if cuda else None
        if mismatch is not None:
            findings.append(mismatch)
    return findings


def _who(r: CudaEnvReport) -> str:
    return f"{r.tool} {r.tool_version}".strip() if r.tool else Msg("this CUDA library")


def _gpu_text(g: EnvGpu) -> str:
    name = g.name or (f"GPU {g.index}" if g.index is not None else "a GPU")
    return name + (f" (compute capability {g.cc})" if g.cc else "")


def _gpus_text(gpus: list[EnvGpu]) -> str:
    """'2x NVIDIA Quadro RTX 8000 (compute capability 7.5)' / 'A (compute capability 8.0), B (...)'."""
    counts: dict[str, int] = {}
    for g in gpus:
        counts[_gpu_text(g)] = counts.get(_gpu_text(g), 0) + 1
    return ", ".join(f"{n}x {t}" if n > 1 else t for t, n in counts.items())


def _errors(r: CudaEnvReport, who: str) -> list[Finding]:
    out = []
    for line in r.errors[:1]:
        m = _CU_NAME.search(line)
        info = cuda_error_lookup(None, "", m.group(1)) if m else None
        if info is None:
            info = cuda_error_lookup(None, line.split(":", 1)[-1])
        if info is not None:
            verdict = Verdict.FAIL if info.klass in FAIL_CLASSES else Verdict.WARN
            msg = (Msg('{who} could not read a CUDA version because CUDA failed: {name} ("{a1}"): {meaning}', who=who, name=info.name, a1=info.message.split('|')[0], meaning=info.meaning))
            remedy = info.remedy
            src = info.source
        else:
            verdict = Verdict.FAIL
            msg = Msg("{who} could not read a CUDA version because a CUDA call failed: {line}", who=who, line=line)
            remedy = NO_GPU_REMEDY
            src = SRC_CUDA_ERR
        out.append(Finding(FID, verdict, msg, "host", tuple(r.errors[:5]), remedy, f"{src}; {SRC_REPORTS}"))
    return out


def _versions(r: CudaEnvReport, who: str) -> Finding | None:
    """The driver's CUDA against the runtime the library runs (or, without a runtime, the one it was built with)."""
    runtime = r.runtime_cuda or r.build_cuda
    what = (Msg('runtime') if r.runtime_cuda else Msg('build'))
    ev = tuple(r.evidence[k] for k in ("driver_cuda", "driver_version", "runtime_cuda", "build_cuda")
               if k in r.evidence)
    ev = tuple(dict.fromkeys(ev))
    local = (Msg('; the locally installed CUDA runtime is {local_runtime_cuda} ({value} uses the one it links)', local_runtime_cuda=r.local_runtime_cuda, value=r.tool or 'the library') if r.local_runtime_cuda and r.local_runtime_cuda != runtime else '')
    no_dev = (Msg('; this report lists no device, so it does not show that a GPU is visible') if not r.gpus and (not r.devices_found) and (r.cuda_available is None) else '')
    if not runtime or not (r.driver_cuda or r.driver_version):
        return None
    if r.driver_version and not r.driver_cuda:
        res = judge_chain(runtime, driver=r.driver_version)
        if res is None:
            return None
        verdict, why, src = res
        remedy = ('' if verdict is Verdict.PASS else Msg('Upgrade the NVIDIA driver to a branch that supports CUDA {runtime}, or install a {value} build for a CUDA the driver supports.', runtime=runtime, value=r.tool or 'library'))
        return Finding(FID, verdict, Msg("{who} runs the CUDA {runtime} {what}: {why}{local}{no_dev}", who=who, runtime=runtime, what=what, why=why, local=local, no_dev=no_dev), "host", ev,
                       remedy, f"{src}; {SRC_COMPAT}")
    want, have = version_tuple(runtime), version_tuple(r.driver_cuda)
    if len(want) < 2 or len(have) < 2:
        return None
    head = (Msg('{who}: the driver supports CUDA {driver_cuda} and the library runs the CUDA {runtime} {what}', who=who, driver_cuda=r.driver_cuda, runtime=runtime, what=what))
    need = min_driver(runtime)
    upgrade = (Msg("Upgrade the NVIDIA driver to one that supports CUDA {runtime}", runtime=runtime)
               + (Msg(" (>= {need}, NVIDIA's toolkit/driver table)", need=need[0]) if need else "")
               + Msg(", or install a {tool} build for CUDA {driver_cuda} or older.", tool=r.tool or Msg("library"),
                     driver_cuda=r.driver_cuda))
    if have >= want:
        return Finding(FID, Verdict.PASS, Msg("{head}: the driver is new enough for that runtime{local}{no_dev}", head=head, local=local, no_dev=no_dev), "host", ev, "", SRC_COMPAT)
    if have[0] < want[0]:
        return Finding(FID, Verdict.FAIL, Msg("{head}: the driver's CUDA major ({a1}) is older than the runtime's ({a2}), so the CUDA "
                                              "runtime cannot start on it (cudaErrorInsufficientDriver){local}", head=head, a1=have[0], a2=want[0], local=local),
                       "host", ev, upgrade, SRC_COMPAT)
    if want[0] < 11:
        return Finding(FID, Verdict.FAIL, Msg("{head}: the driver is older than the runtime and before CUDA 11 there is no minor-version "
                                              "compatibility, so the runtime cannot start on it (cudaErrorInsufficientDriver){local}", head=head, local=local), "host", ev, upgrade, SRC_COMPAT)
    return Finding(FID, Verdict.WARN, Msg("{head}: the driver is older than the runtime (same major {a1}): CUDA minor-version "
                                          "compatibility lets basic work run, but PTX JIT compilation and APIs newer than CUDA "
                                          "{driver_cuda} fail (cudaErrorUnsupportedPtxVersion, "
                                          "cudaErrorCallRequiresNewerDriver){local}", head=head, a1=want[0], driver_cuda=r.driver_cuda, local=local),
                   "host", ev, upgrade, SRC_COMPAT)


def _devices(r: CudaEnvReport, who: str) -> Finding | None:
    ev_keys = tuple(r.evidence[k] for k in ("cuda_available", "devices_found", "supported") if k in r.evidence)
    dev_lines = tuple(g.line for g in r.gpus if g.line)
    ev = tuple(dict.fromkeys(ev_keys + dev_lines))[:10]
    if r.cuda_available is False:
        return Finding(FID, Verdict.FAIL, Msg("{who} reports CUDA not available ({get}): the library cannot use any GPU", who=who, get=r.evidence.get('cuda_available', '')), "host", ev, NO_GPU_REMEDY, SRC_REPORTS)
    if r.devices_found == 0 or (r.listed == 0 and not r.gpus):
        return Finding(FID, Verdict.FAIL, Msg("{who} finds no CUDA device", who=who), "host", ev, NO_GPU_REMEDY, SRC_REPORTS)
    bad = [g for g in r.gpus if g.supported is False]
    good = [g for g in r.gpus if g.supported is not False]
    n_ok = r.supported if r.supported is not None else (len(good) if r.gpus else None)
    n_all = r.listed if r.listed is not None else (len(r.gpus) if r.gpus else None)
    tally = (Msg('; {n_ok}/{n_all} devices supported', n_ok=n_ok, n_all=n_all) if r.supported is not None and r.listed is not None else '')
    if bad or (n_ok is not None and n_all is not None and n_ok < n_all):
        which = ", ".join(_gpu_text(g) + (f": not supported, {g.why}" if g.why else ": not supported") for g in bad)
        which = which or f"{(n_all or 0) - (n_ok or 0)} device(s) the report does not name"
        remedy = (Msg('Use GPUs the library supports (its compute capability floor is in the reason above), or a release of the library that still supports them; a not-supported GPU is not faulty, it is below what this build runs on.'))
        if not n_ok:
            return Finding(FID, Verdict.FAIL, Msg("{who} supports none of the GPUs it found ({which}){tally}: CUDA work cannot run on them "
                                                  "with this library", who=who, which=which, tally=tally), "host", ev, remedy, SRC_REPORTS)
        return Finding(FID, Verdict.WARN, (Msg('{who} does not support every GPU it found ({which}){tally}; it sees ', who=who, which=which, tally=tally) + _gpus_text(good)), "host", ev, remedy, SRC_REPORTS)
    if r.gpus:
        avail = (Msg('; CUDA available') if r.cuda_available else '')
        return Finding(FID, Verdict.PASS, Msg("{who} sees {gpus}: {gpus_text}{tally}{avail}", who=who, gpus=plural(len(r.gpus), "GPU"), gpus_text=_gpus_text(r.gpus), tally=tally, avail=avail),
                       "host", ev, "", SRC_REPORTS)
    if r.cuda_available:
        return Finding(FID, Verdict.PASS, Msg("{who} reports CUDA available ({get}); the report does not name the GPUs", who=who, get=r.evidence.get('cuda_available', '')), "host", ev, "", SRC_REPORTS)
    return None


def _xformers_build(r: CudaEnvReport) -> Finding | None:
    if not (r.torch_version and r.build_torch_version) or r.torch_version == r.build_torch_version:
        return None
    return Finding(FID, Verdict.WARN, Msg("xFormers was built for PyTorch {build_torch_version} but PyTorch {torch_version} is "
                                          "installed: xFormers cannot load its C++/CUDA extensions (its memory-efficient attention "
                                          "kernels are unavailable)", build_torch_version=r.build_torch_version, torch_version=r.torch_version), "host",
                   tuple(r.evidence[k] for k in ("torch_version", "build_torch_version")),
                   "Install the xFormers wheel built for the installed PyTorch (pip installs the matching pair from the "
                   "same index), or the PyTorch it was built for.", SRC_XFORMERS_BUILD)


def _xformers_kernels(r: CudaEnvReport) -> Finding | None:
    """Every one of xFormers' memory-efficient attention kernels listed unavailable while CUDA is available: the wheel
    has none built for this GPU and PyTorch (a GPU below the kernels' compute capability, or a wheel for another
    PyTorch), so a job that asks for them fails (held-out round 86: a P100, compute capability 6.0)."""
    k = r.attention_kernels
    if len(k) < 3 or any(k.values()) or r.cuda_available is not True:
        return None
    cc = next((g.cc for g in r.gpus if g.cc), "")
    return Finding(FID, Verdict.WARN, Msg("xFormers lists none of its {n} memory-efficient attention kernels as available "
                                          "on this system{cc}: a job that uses them fails here",
                                          n=len(k), cc=Msg(" (GPU compute capability {cc})", cc=cc) if cc else ""),
                   "host", (r.evidence.get("attention_kernels", ""),),
                   "Install the xFormers wheel built for the installed PyTorch and CUDA (pip installs the matching pair "
                   "from the same index), on a GPU its kernels support (xFormers' README lists the compute capabilities "
                   "its wheels are built for); or use PyTorch's own scaled_dot_product_attention.", SRC_REPORTS)


def judge_cuda_env(r: CudaEnvReport, text: str = "") -> list[Finding]:
    """``driver.cuda_env`` findings for one parsed report (``text``: the raw report, quoted when nothing is read)."""
    who = _who(r)
    if r.rocm:
        return [Finding(FID, Verdict.UNKNOWN, Msg("{who} reports an AMD ROCm build ({get}): bringup judges NVIDIA CUDA stacks", who=who, get=r.evidence.get('rocm', '')), "host", (r.evidence.get("rocm", ""),),
                        "Judge a ROCm stack with AMD's tools (rocm-smi, rocminfo).", SRC_REPORTS)]
    findings = _errors(r, who)
    for f in (_versions(r, who), _devices(r, who), _xformers_build(r) or _xformers_kernels(r)):
        if f is not None:
            findings.append(f)
    if findings:
        return findings
    lines = tuple(ln.strip() for ln in text.splitlines() if ln.strip())[:6]
    return [Finding(FID, Verdict.UNKNOWN, Msg("{who}'s report lists no GPU and no driver version (nor CUDA's availability), so it shows "
                                              "neither that a GPU is visible nor that the driver runs the library's CUDA", who=who), "host", lines,
                    "Paste the whole report (CuPy lists 'Device N Name' lines when it sees a GPU; numba -s has a CUDA "
                    "Detect Output section), or give bringup `nvidia-smi`.", SRC_REPORTS)]
