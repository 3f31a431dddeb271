"""Plan answers: the build's expectations that checks compare against.

Each key has a type, a check of its range, and a help line. ``bringup plan KEY=VALUE`` and the
TUI's plan form both go through :func:`parse_answer`, so a nonsense value is refused with a
reason instead of being stored and silently ignored later.
"""

from __future__ import annotations

from wizard.i18n import Msg

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable, Mapping

SCHEDULERS = ("none", "slurm", "kubernetes")
VALIDATE_DEVICES = ("auto", "cuda", "cpu")


@dataclass(frozen=True)
class PlanKey:
    name: str
    type: type
    help: str
    valid: Callable[[Any], str]  # value -> "" when fine, else why not


def _int_range(lo: int, hi: int) -> Callable[[Any], str]:
    return lambda v: "" if lo <= v <= hi else Msg("must be between {lo} and {hi}", lo=lo, hi=hi)


def _float_range(lo: float, hi: float) -> Callable[[Any], str]:
    def check(v: float) -> str:
        if not math.isfinite(v) or not (lo < v <= hi):
            # whole numbers as such ("1048576", walk 34 #19g: "1.04858e+06"), fractions as short as they read
            return Msg("must be more than {lo} and at most {hi}", lo=f"{lo:.10g}", hi=f"{hi:.10g}")
        return ""
    return check


def _data_path(v: str) -> str:
    """data_path: absolute, without a control character (a newline or tab in it would split the log lines and
    commands that show it; unicodedata category Cc)."""
    if not v.startswith("/"):
        return Msg("must be an absolute path")
    if any(unicodedata.category(c) == "Cc" for c in v):
        return Msg("must not contain a control character (newline, tab, ...)")
    return ""


PLAN_KEYS: dict[str, PlanKey] = {k.name: k for k in (
    PlanKey("gpu_model", str, "expected GPU model, e.g. 'H100 SXM5'",
            lambda v: "" if v.strip() else Msg("must not be empty")),
    PlanKey("gpu_count", int, "expected number of GPUs in this node", _int_range(1, 256)),
    PlanKey("numa_nodes", int, "expected NUMA node count", _int_range(1, 64)),
    PlanKey("host_ram_gib", float, "host memory this machine has installed, GiB", _float_range(0, 1 << 20)),
    PlanKey("host_ram_min_gib", float, "host memory the workload needs at least, GiB (sizing)",
            _float_range(0, 1 << 20)),
    PlanKey("data_path", str, "absolute path of datasets and checkpoints, e.g. /raid", _data_path),
    PlanKey("data_read_gb_s", float, "read throughput the training job needs from the data path, GB/s (10^9 "
            "bytes/s; your figure, e.g. from the data loader's profile); node.storage_read judges fio against it",
            _float_range(0, 10000)),
    PlanKey("train_tokens_s", float, "tokens per second this node trains at (with token_bytes: the data path must "
            "read at least tokens/s x bytes per token; used when data_read_gb_s is not set)", _float_range(0, 1e12)),
    PlanKey("token_bytes", int, "bytes per token in the tokenized dataset on disk: 2 (uint16, vocabulary under "
            "65,500) or 4 (int32), as Megatron-LM's indexed dataset stores them; default 4", _int_range(1, 8)),
    PlanKey("data_block_kib", int, "block size the data loader reads with, KiB (fio's random-read block size; "
            "default 128)", _int_range(4, 65536)),
    PlanKey("storage_test_mib", int, "size of the test file fio reads under the data path, MiB (default 4096; "
            "written once, removed after)", _int_range(16, 1 << 20)),
    PlanKey("storage_test_s", int, "seconds each fio read job runs (default 30)", _int_range(1, 3600)),
    PlanKey("scheduler", str, "none | slurm | kubernetes",
            lambda v: "" if v in SCHEDULERS else Msg("must be one of {choices}", choices=", ".join(SCHEDULERS))),
    PlanKey("virtualization", bool, "true if this node hosts VMs (keeps the IOMMU on)", lambda v: ""),
    PlanKey("baseline_minutes", float, "length of the idle baseline, minutes", _float_range(0, 24 * 60)),
    PlanKey("driver_branch", str, "NVIDIA driver branch to install and judge against, e.g. 580",
            lambda v: "" if re.fullmatch(r"R?\d{3}", v.strip(), re.I) else Msg("must be a branch number such as 580")),
    PlanKey("torch_python", str, "Python with PyTorch that runs the validation scripts, e.g. /opt/venv/bin/python",
            lambda v: "" if v.strip() and not v.strip().startswith("-") and "\n" not in v
            else Msg("must be a path or command name of a Python interpreter")),
    PlanKey("validate_device", str, "auto | cuda | cpu: where validation runs (auto = cuda with an NVIDIA GPU)",
            lambda v: "" if v in VALIDATE_DEVICES else Msg("must be one of {choices}", choices=", ".join(VALIDATE_DEVICES))),
    PlanKey("validate_nproc", int, "processes (ranks) of the node validation; default one per GPU (2 on cpu)",
            _int_range(1, 256)),
    PlanKey("soak_minutes", float, "length of the soak (GEMM + all-reduce under NVML sampling), minutes",
            _float_range(0, 7 * 24 * 60)),
    PlanKey("dcgm_node_level", str, "DCGM level node.dcgm_l3 runs: 3 (long, ~15 min) or 4 (xlong, longer-running; "
            "DCGM >= 2.4); also long | xlong",
            lambda v: "" if v.strip().lower() in ("3", "4", "long", "xlong") else Msg("must be 3, 4, long or xlong")),
    PlanKey("burnin_minutes", float, "length of the GPU burn-in (gpu.stress: DCGM targeted stress + power, else "
            "sustained GEMM), minutes; default 10", _float_range(0, 7 * 24 * 60)),
    PlanKey("validate_quick", bool, "true: validation scripts use small sizes and few steps (tests, smoke runs)",
            lambda v: ""),
    PlanKey("hostfile", str, "the nodes of the multi-node validation: a file with 'name ssh_target gpus "
            "[python=/path] [addr=IP]' (or 'host slots=N') per line",
            lambda v: "" if v.startswith("/") else Msg("must be an absolute path")),
    PlanKey("ssh_config", str, "ssh client config file (ssh -F) used to reach the nodes; default: ssh's own files",
            lambda v: "" if v.startswith("/") else Msg("must be an absolute path")),
    PlanKey("multinode_pairwise", bool, "true: the multi-node validation also runs every pair of nodes (isolates a "
            "bad node)", lambda v: ""),
    PlanKey("nics_per_node", int, "InfiniBand/RoCE NICs per node NCCL uses (multi-node all-reduce floor)",
            _int_range(1, 64)),
    PlanKey("allreduce_floor_gb_s", float, "site baseline for the node's all-reduce busbw at large sizes, GB/s "
            "(overrides the floor bringup derives from assets/nccl_floors.csv or the topology; e.g. your vendor's "
            "acceptance figure)", _float_range(0, 100000)),
    PlanKey("rdma_device", str, "RDMA device (and port) multinode.rdma_pairs tests on every node, DEV or DEV:PORT, e.g. "
            "mlx5_0:1; default: each node's fastest Active port",
            lambda v: "" if re.fullmatch(r"[\w.-]+(?::\d{1,3})?", v) else Msg("must be DEV or DEV:PORT, e.g. mlx5_0:1")),
    PlanKey("nic_gbit_s", float, "line rate of one such NIC, Gb/s (e.g. 400 for NDR, 200 for HDR)",
            _float_range(0, 3200)),
)}


def whole(v: Any) -> Any:
    """A plan answer's number as the plan shows it: a whole float as an int (1044, not 1044.0; float keys store
    floats), anything else as it is. The one rule ``bringup plan``, the F2 form and ``answers export`` write by."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


def key_help(key: str) -> str:
    """``"KEY: what the answer is"`` in the operator's language, shown under a refusal that needs that answer (the
    TUI's dialog and ``bringup run``); "" for a key without help."""
    from wizard.i18n import _

    k = PLAN_KEYS.get(key)  # "hostfile：…" in Chinese, with the reader's colon (walk 38 #13)
    return key + _(": ") + _(k.help) if k is not None and k.help else ""


def unknown_key(key: str) -> str:
    """The refusal of a key no plan answer has: the closest key when one is close ("did you mean gpu_model?",
    difflib), then every key."""
    import difflib

    from wizard.i18n import Msg

    near = difflib.get_close_matches(key, list(PLAN_KEYS), n=1, cutoff=0.75)
    keys = ", ".join(PLAN_KEYS)
    if near:
        return Msg("unknown plan key {key}: did you mean {near}? Keys: {keys}", key=repr(key), near=near[0], keys=keys)
    return Msg("unknown plan key {key}; keys: {keys}", key=repr(key), keys=keys)


def parse_value(key: str, raw: str) -> Any:
    """Convert and validate one answer. Raises ``ValueError`` with a reason for the operator."""
    if key not in PLAN_KEYS:
        raise ValueError(unknown_key(key))
    k = PLAN_KEYS[key]
    raw = raw.strip()
    if k.type is bool:
        if raw.lower() not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError(Msg("{key} takes true or false, not {raw!r}", key=key, raw=raw))
        value: Any = raw.lower() in ("true", "yes", "1")
    else:
        try:
            value = k.type(raw)
        except ValueError:
            raise ValueError(Msg("{key} takes a number, not {raw!r}", key=key, raw=raw) if k.type in (int, float)
                             else Msg("{key} takes a {type}, not {raw!r}", key=key, type=k.type.__name__, raw=raw)) from None
    why = k.valid(value)
    if why:
        raise ValueError(Msg("{key} {why} (got {raw!r})", key=key, why=why, raw=raw))
    return value


def parse_answer(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (key, validated value); ``KEY=`` (nothing after ``=``) -> (key, ``None``): clear the answer,
    as an empty field of the plan form does. Raises ``ValueError`` (no ``=``, an unknown key, a value refused)."""
    key, sep, raw = item.partition("=")
    if not sep:
        raise ValueError(f"{item!r}: expected KEY=VALUE with KEY one of {', '.join(PLAN_KEYS)}")
    key = key.strip()
    if not raw.strip():
        if key not in PLAN_KEYS:
            raise ValueError(unknown_key(key))
        return key, None
    return key, parse_value(key, raw)


def valid_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """Only the answers that are known and valid (a stored value is re-checked before use)."""
    out = {}
    for k, v in plan.items():
        if k in PLAN_KEYS:
            try:
                out[k] = parse_value(k, str(v).lower() if isinstance(v, bool) else str(v))
            except ValueError:
                continue
    return out


PATH_KEYS = ("torch_python", "hostfile", "ssh_config", "data_path")
"""Plan answers that name a file, directory or program on this machine."""


def plan_warnings(answers: Mapping[str, Any]) -> list[str]:
    """What ``bringup plan`` and the F2 form say after saving ``answers`` (the keys just set): a ``gpu_model`` no table
    names (:func:`unknown_gpu_model`), and a path answer that names nothing on this machine (walk 34 #9:
    ``torch_python=/usr/bin/nonexist`` was taken without a word, then read as "python3 is not installed"). The answers
    are kept either way: a path may be made later, or name another node's layout."""
    import os
    import shutil

    said = [w for w in [unknown_gpu_model(answers.get("gpu_model"))] if w]
    for key in PATH_KEYS:
        v = answers.get(key)
        if not isinstance(v, str) or not v.strip():
            continue
        path = os.path.expanduser(v.strip())
        there = (shutil.which(path) is not None) if key == "torch_python" and os.sep not in path else os.path.exists(path)
        if not there:
            said.append(Msg("{key} {path!r} is not on this machine yet: steps that use it cannot run until it is",
                            key=key, path=v.strip()))
    return said


def unknown_gpu_model(model: Any) -> str:
    """What to say when a plan's ``gpu_model`` names no GPU of the sizing table (assets/gpu_specs.csv) nor of the PCI
    id table the driver checks match it against (assets/pci_ids.csv, :func:`wizard.install.catalog.gpus_of`); "" when
    it names one (or is not a name). The one warning ``bringup plan`` and the F2 form give (walk 28 #20: F2 saved
    "RTX 9999 Ultra" without it)."""
    if not isinstance(model, str) or not model.strip():
        return ""
    from wizard import sizing
    from wizard.install.catalog import gpus_of

    if sizing.gpu_by_name(model) is not None:
        return ""
    # a name several of the sizing table's GPUs hold ("H100": PCIe, SXM5, NVL): the same "did you mean" as `bringup size
    # --gpu` (walk 33 #2: `plan gpu_model=H100` was taken without a word while `size` refused it)
    names = [g.name for g in sizing.gpu_specs()]
    several = [n for n in names if model.strip().lower() in n.lower()]
    if len(several) > 1:
        return Msg("gpu_model {model!r} names several GPUs: did you mean {near}? The driver checks and the sizing need "
                   "the one this node has", model=model, near=" / ".join(several[:4]))
    if gpus_of({}, {"gpu_model": model}).gpus:
        return ""
    return Msg("gpu_model {model!r} is not a GPU bringup's tables name: the driver checks and the sizing cannot use it "
               "(names such as 'H100 SXM5'; `bringup size --gpu ?` lists them)", model=model)
