"""Parser for the "Key : value" CUDA environment reports of the CUDA Python ecosystem (``bringup explain``).

The libraries operators paste print what CUDA looks like from inside their process, each in its own words:

* CuPy, ``cupy.show_config()``: ``CUDA Driver Version : 12040`` (``cudaDriverGetVersion``: the newest CUDA the
  driver supports, 1000 * major + 10 * minor), ``CUDA Runtime Version : 12060 (linked to CuPy) / 12030 (locally
  installed)``, ``CUDA Build Version``, ``Device 0 Name``, ``Device 0 Compute Capability : 75``; a value CuPy could
  not get is the exception's repr (``CUDARuntimeError('cudaErrorNoDevice: no CUDA-capable device is detected')``,
  cupyx/_runtime.py, https://github.com/cupy/cupy);
* xFormers, ``python -m xformers.info``: ``pytorch.cuda: available``, ``gpu.name``, ``gpu.compute_capability``,
  ``build.cuda_version: 1107`` (100 * major + minor), ``build.torch_version`` and ``pytorch.version``;
* Numba, ``numba.cuda.detect()``: ``Found N CUDA devices``, ``id 0 b'NAME' [SUPPORTED]`` (or ``[NOT SUPPORTED: CC <
  X]``), ``Compute Capability: 7.5`` under each device, ``Summary: N/M devices are supported``
  (numba/cuda/api.py); ``numba -s``: ``CUDA Device Initialized : True``, ``CUDA Driver Version : 11020`` (or
  ``(12, 2)``) in its ``__CUDA Information__`` section (numba/misc/numba_sysinfo.py, https://github.com/numba/numba);
* similar reports (``python -m sglang.check_env``): ``CUDA available: True``, ``GPU 0,1: NAME``,
  ``GPU 0,1 Compute Capability: 9.0``, ``CUDA Driver Version: 550.90.07`` (the driver's own version there).

Read once into :class:`CudaEnvReport`; never raises (what it could not read is in ``problems``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.common import sat_int
from wizard.parsers._frozen import build_set
from wizard.common import lazy_re

MAX_LINES = 20000
"""Lines read at most (a report is a few dozen; ``numba -s`` lists installed packages too)."""


@dataclass(frozen=True)
class EnvGpu:
    """One GPU the report lists.

    index: its device number (``None`` when the report does not number it); name: as printed; cc: compute capability
    "major.minor" ("7.5"; "" when not shown); supported: the library's own word (Numba's [SUPPORTED] / [NOT
    SUPPORTED]; ``None`` when the report does not say); why: the reason a not-supported device gives ("CC < 3.5");
    line: the line it was read from."""

    index: int | None
    name: str = ""
    cc: str = ""
    supported: bool | None = None
    why: str = ""
    line: str = ""


@dataclass(frozen=True)
class CudaEnvReport:
    """What one CUDA environment report says.

    tool: the library that printed it ("CuPy", "xFormers", "Numba", "" when unknown); tool_version.
    gpus: the GPUs listed; devices_found: Numba's "Found N CUDA devices"; supported / listed: Numba's "N/M devices are
    supported". cuda_available: whether the library reaches CUDA ("pytorch.cuda: available", "CUDA Device
    Initialized : True", "CUDA available: True"; ``None`` when not said). driver_cuda: the newest CUDA the driver
    supports ("12.4"); driver_version: the driver's own version when the report prints that instead ("550.90.07");
    runtime_cuda: the CUDA runtime the library runs ("12.6"); local_runtime_cuda: a locally installed runtime CuPy
    names beside it; build_cuda: the CUDA the library was built with. torch_version / build_torch_version: xFormers'
    "pytorch.version" and "build.torch_version". rocm: the report is of an AMD ROCm build, not CUDA.
    errors: values that are errors (an exception's repr in place of a version) and error lines; evidence: the raw
    line each fact was read from (keys: the field names); problems: what could not be read.
    """

    tool: str = ""
    tool_version: str = ""
    gpus: list[EnvGpu] = field(default_factory=list)
    devices_found: int | None = None
    supported: int | None = None
    listed: int | None = None
    cuda_available: bool | None = None
    driver_cuda: str = ""
    driver_version: str = ""
    runtime_cuda: str = ""
    local_runtime_cuda: str = ""
    build_cuda: str = ""
    torch_version: str = ""
    build_torch_version: str = ""
    attention_kernels: dict[str, bool] = field(default_factory=dict)
    """xFormers' ``memory_efficient_attention.<kernel>: available|unavailable`` lines: kernel -> available."""
    rocm: bool = False
    errors: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


_KV = lazy_re(r"^[ \t]*([A-Za-z_][\w .,()/+\t-]{0,80}):(.*)$")
_FOUND = lazy_re(r"^\s*Found (\d{1,6}) CUDA devices?\b")
_SUMMARY = lazy_re(r"^\s*(\d{1,6})/(\d{1,6}) devices are supported\b")
_DEVICE_KEY = lazy_re(r"^Device (\d{1,4}) (Name|Compute Capability)$", re.I)
_GPU_KEY = lazy_re(r"^GPU(?: ((?:\d{1,4}\s*,\s*)*\d{1,4}))?( Compute Capability)?$", re.I)
"""``GPU 0,1,2: NAME`` (OpenMMLab), ``GPU: NAME`` (older mmcv: one GPU model for all), ``GPU 0  NAME (arch=8.0)``
(detectron2)."""
_D2_TABLE = lazy_re(r"^-{10,}[ \t]+-{10,}[ \t]*$|^sys\.platform[ \t]{2,}\w+[ \t]*$", re.M)
"""detectron2's ``collect_env`` table: its ruled header and ``sys.platform   linux`` (two or more spaces, no colon)."""
_D2_ROW = lazy_re(r"^([A-Za-z][\w .]{0,40}?)[ \t]{2,}(\S.*)$")
_D2_ARCH = lazy_re(r"\s*\(arch=(\d{1,2}\.\d)\)\s*$")
_ERROR_VALUE = lazy_re(r"\b\w*Error\(|\bcudaError\w+|\bCUDA_ERROR_\w+")
_TOOL = (("CuPy", lazy_re(r"^CuPy Version\s*:\s*(\S+)")), ("xFormers", lazy_re(r"^xFormers (\d\S*)")),
         ("Numba", lazy_re(r"^__CUDA Information__|^Found \d+ CUDA devices")))


def cuda_from_value(value: str, hundreds: bool = False) -> str:
    """A CUDA version as these reports print it -> "major.minor"; "" when it is not one.

    "12040" (1000 * major + 10 * minor, cudaDriverGetVersion) -> "12.4"; with ``hundreds`` (xFormers'
    build.cuda_version, 100 * major + minor) "1107" -> "11.7"; "(12, 2)" -> "12.2"; "12.2" -> "12.2"."""
    v = value.strip()
    m = re.fullmatch(r"\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)", v)
    if m:
        return f"{sat_int(m.group(1))}.{sat_int(m.group(2))}"
    m = re.fullmatch(r"(\d{1,2})\.(\d{1,2})(?:\.\d+)?", v)
    if m:
        return f"{sat_int(m.group(1))}.{sat_int(m.group(2))}"
    if re.fullmatch(r"\d{3,6}", v):
        n = sat_int(v)
        if hundreds:
            return f"{n // 100}.{n % 100}" if n >= 100 else ""
        return f"{n // 1000}.{(n % 1000) // 10}" if n >= 1000 else ""
    return ""


def _cc(value: str) -> str:
    """Compute capability as printed -> "major.minor": "7.5" -> "7.5"; CuPy's "75" -> "7.5", "100" -> "10.0"."""
    v = value.strip()
    if re.fullmatch(r"\d{1,2}\.\d{1,2}", v):
        return v
    if re.fullmatch(r"\d{2,3}", v):
        return f"{v[:-1]}.{v[-1]}"
    return ""


def _bool(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("true", "available", "yes"):
        return True
    if v in ("false", "not available", "unavailable", "no", "none"):
        return False
    return None


def _set_gpu(gpus: list[EnvGpu], index: int, name: str = "", cc: str = "", supported: bool | None = None,
             why: str = "", line: str = "") -> None:
    """Fill the GPU numbered ``index`` (added when new) with what is given (empty values change nothing)."""
    for i, g in enumerate(gpus):
        if g.index == index:
            gpus[i] = EnvGpu(index, name or g.name, cc or g.cc, g.supported if supported is None else supported,
                             why or g.why, line or g.line)
            return
    gpus.append(EnvGpu(index, name, cc, supported, why, line))


def parse_cuda_env(text: str) -> CudaEnvReport:
    """Read one CUDA environment report (see the module docstring for the forms). Never raises."""
    r = CudaEnvReport()
    gpus: list[EnvGpu] = []
    numba_dev: int | None = None  # the Numba device whose attribute lines follow
    table = bool(_D2_TABLE.search(text[:16384]))
    for n, raw in enumerate(text.splitlines()):
        if n >= MAX_LINES:
            r.problems.append(f"only the first {MAX_LINES} lines were read")
            break
        s = raw.strip()
        if not s:
            continue
        if not r.tool:
            for tool, rx in _TOOL:
                m = rx.match(s)
                if m:
                    build_set(r, "tool", tool)
                    if m.groups():
                        build_set(r, "tool_version", m.group(1))
                    break
        m = _FOUND.match(s)
        if m:
            build_set(r, "devices_found", sat_int(m.group(1)))
            r.evidence["devices_found"] = s
            continue
        m = _SUMMARY.match(s)
        if m:
            build_set(r, "supported", sat_int(m.group(1)))
            build_set(r, "listed", sat_int(m.group(2)))
            r.evidence["supported"] = s
            continue
        dev = _numba_device(s)
        if dev is not None:
            numba_dev = dev.index
            _set_gpu(gpus, dev.index if dev.index is not None else 0, name=dev.name, supported=dev.supported,
                     why=dev.why, line=s)
            continue
        kv = _KV.match(s)
        if not kv:
            d2 = _D2_ROW.match(s) if table else None  # detectron2's collect_env: "GPU 0      NVIDIA A100 (arch=8.0)"
            if d2 is None:
                continue
            key, value = d2.group(1).strip(), d2.group(2).strip()
        else:
            key, value = kv.group(1).strip(), kv.group(2).strip()  # strip(), not a regex: linear on any spacing
        arch = _D2_ARCH.search(value)
        gpu_key = _GPU_KEY.match(key) if arch else None
        if arch and gpu_key:  # detectron2's "NAME (arch=8.0)": the name, and the compute capability it gives
            value = value[:arch.start()].strip()
            _set_gpu(gpus, sat_int((gpu_key.group(1) or "0").split(",")[0]), cc=arch.group(1))
        low = " ".join(key.lower().split())
        if numba_dev is not None and low == "compute capability":
            _set_gpu(gpus, numba_dev, cc=_cc(value))
            continue
        if _ERROR_VALUE.search(value) and ("version" in low or "cuda" in low):
            r.errors.append(s)
            continue
        dm = _DEVICE_KEY.match(key)
        if dm:
            idx = sat_int(dm.group(1))
            if dm.group(2).lower() == "name":
                _set_gpu(gpus, idx, name=value, line=s)
            else:
                _set_gpu(gpus, idx, cc=_cc(value))
            continue
        gm = _GPU_KEY.match(key)
        if gm:  # "GPU 0,1,2: NAME" / "GPU 0,1,2 Compute Capability: 9.0" / "GPU: NAME"
            for part in (gm.group(1) or "0").split(","):
                idx = sat_int(part.strip())
                if gm.group(2):
                    _set_gpu(gpus, idx, cc=_cc(value))
                else:
                    _set_gpu(gpus, idx, name=value, line=s)
            continue
        if low == "cuda driver version":
            cv = cuda_from_value(value)
            dv = re.match(r"^(\d{3,4}\.\d{1,3}(?:\.\d{1,3})?)\b", value)
            if cv and not value.startswith(("N/A", "?")):
                _fact(r, "driver_cuda", cv, s)
            elif dv:
                _fact(r, "driver_version", dv.group(1), s)
        elif low == "cuda runtime version":
            first = value.split("(", 1)[0].strip() if not value.startswith("(") else value
            cv = cuda_from_value(first)
            if cv:
                _fact(r, "runtime_cuda", cv, s)
            lm = re.search(r"/\s*(\d{4,6})\s*\(locally installed\)", value)
            if lm:
                _fact(r, "local_runtime_cuda", cuda_from_value(lm.group(1)), s)
        elif low == "cuda build version":
            _fact(r, "build_cuda", cuda_from_value(value), s)
        elif low == "build.cuda_version":
            _fact(r, "build_cuda", cuda_from_value(value, hundreds=True), s)
        elif low == "build.hip_version" and value not in ("", "None"):
            build_set(r, "rocm", True)
            r.evidence["rocm"] = s
        elif low == "cupy platform" and "rocm" in value.lower():
            build_set(r, "rocm", True)
            r.evidence["rocm"] = s
        elif low == "driver version":  # detectron2's collect_env
            dv = re.match(r"^(\d{3,4}\.\d{1,3}(?:\.\d{1,3})?)\b", value)
            if dv:
                _fact(r, "driver_version", dv.group(1), s)
        elif low in ("pytorch.cuda", "cuda device initialized", "cuda available", "is cuda available",
                     "gpu available"):
            b = _bool(value)
            if b is not None and r.cuda_available is None:
                build_set(r, "cuda_available", b)
                r.evidence["cuda_available"] = s
        elif low == "gpu.name":
            _set_gpu(gpus, 0, name=value, line=s)
        elif low == "gpu.compute_capability":
            _set_gpu(gpus, 0, cc=_cc(value))
        elif low in ("pytorch.version", "pytorch"):  # xFormers; sglang.check_env / lmdeploy check_env ("PyTorch:")
            _fact(r, "torch_version", value, s)
            cu = re.search(r"\+cu(\d{2})(\d)\b", value)  # a wheel's local version: +cu129 is built with CUDA 12.9
            if cu and not r.build_cuda:
                _fact(r, "build_cuda", f"{int(cu.group(1))}.{cu.group(2)}", s)
        elif low == "build.torch_version":
            _fact(r, "build_torch_version", value, s)
        elif low.startswith("memory_efficient_attention.") and value.strip().lower() in ("available", "unavailable"):
            r.attention_kernels[low.split(".", 1)[1]] = value.strip().lower() == "available"
            r.evidence.setdefault("attention_kernels", s)
    if r.torch_version and "rocm" in r.torch_version.lower():
        build_set(r, "rocm", True)
        r.evidence.setdefault("rocm", r.evidence.get("torch_version", ""))
    build_set(r, "gpus", gpus)
    return r


def _numba_device(s: str) -> EnvGpu | None:
    """Numba's device line "id 0    b'NVIDIA Quadro RTX 8000'    [SUPPORTED]" (or "[NOT SUPPORTED: CC < 3.5]"), read
    with string operations (a regular expression with two spacing runs would backtrack on long runs of spaces)."""
    if not s.startswith("id ") or not s.endswith("]"):
        return None
    num, _, rest = s[3:].lstrip().partition(" ")
    if not re.fullmatch(r"\d{1,4}", num):
        return None
    at = rest.rfind("[")
    word = rest[at + 1:-1].strip() if at >= 0 else ""
    if not re.match(r"(?:NOT )?SUPPORTED\b", word):
        return None
    name = rest[:at].strip()
    if len(name) >= 3 and name[0] == "b" and name[1] in "'\"" and name[-1] == name[1]:
        name = name[2:-1]
    why = word.split(":", 1)[1].strip() if ":" in word else ""
    return EnvGpu(sat_int(num), name, "", not word.startswith("NOT"), why, s)


def _fact(r: CudaEnvReport, name: str, value: str, line: str) -> None:
    """Record the first value of one fact and the line it came from."""
    if value and not getattr(r, name):
        build_set(r, name, value)
        r.evidence[name] = line


# ------------------------------------------------------------------ kind

_STRONG = lazy_re(r"^[ \t]*CuPy Version[ \t]*:|^__CUDA Information__|^[ \t]*xFormers \d[\w.+]*[ \t]*$", re.M)
_FOUND_LINE = lazy_re(r"^[ \t]*Found \d{1,6} CUDA devices?\b", re.M)
_DEV_LINE = lazy_re(r"^[ \t]*id \d{1,4}[ \t][^\n]*\[(?:NOT )?SUPPORTED", re.M)
_ENV_KEYS = lazy_re(r"^[ \t]*(?:CUDA Driver Version|CUDA Runtime Version|CUDA Build Version|CUDA Device Initialized"
                       r"|pytorch\.cuda|gpu\.compute_capability|build\.cuda_version|Device \d+ Compute Capability)[ \t]*:",
                       re.M)


_MM_ENV = lazy_re(r"^[ \t]*sys\.platform:[ \t]*\w+[ \t]*$", re.M)
_MM_TOOLS = lazy_re(r"^[ \t]*(?:MMCV|MMEngine):[ \t]*\d", re.M)
_MM_CUDA = lazy_re(r"^[ \t]*CUDA available:[ \t]*(?:True|False)[ \t]*$", re.M)
"""OpenMMLab's ``collect_env`` (mmcv/mmengine, and the tools built on it: ``lmdeploy check_env``, xtuner, mmdet):
``sys.platform: linux``, ``CUDA available: True``, ``GPU 0,1: NAME``, ``NVCC: Cuda compilation tools, ...``."""


def detect_cuda_env(text: str) -> float:
    """Confidence that ``text`` is a CUDA environment report of CuPy, xFormers, Numba, OpenMMLab's collect_env
    (``lmdeploy check_env``) or the like."""
    head = text[:16384]
    if _MM_ENV.search(head) and _MM_CUDA.search(head):
        return 0.97  # above nvcc's own kind: its "NVCC:" line is one field of the report
    if _MM_CUDA.search(head) and _MM_TOOLS.search(head):
        return 0.95  # an older mmcv collect_env without its sys.platform line ("GPU: NAME", "MMCV: 1.2.4")
    if _MM_CUDA.search(head) and (_ENV_KEYS.search(head) or re.search(r"^[ \t]*GPU [\d,]+:[ \t]*\S", head, re.M)):
        return 0.95  # sglang.check_env and the like: "CUDA available: True", "GPU 0,1: NAME", "CUDA Driver Version: ..."
    if _D2_TABLE.search(head) and re.search(r"^GPU available[ \t]{2,}(?:Yes|No)\b", head, re.M):
        return 0.95  # detectron2's collect_env table
    keys = len(_ENV_KEYS.findall(head))
    numba = bool(_FOUND_LINE.search(head) and _DEV_LINE.search(head))
    if numba or (_STRONG.search(head) and keys):
        return 0.95
    if keys >= 2:
        return 0.6
    return 0.0
