"""Parsers for DCGM diagnostics: ``dcgmi diag -r N`` text tables (whole, or cut: metadata only,
one section, one test) and ``dcgmi diag -r N -j`` JSON (DCGM 3.x "DCGM GPU Diagnostic" with
``gpu_ids``/``gpu_id``; DCGM 4.x "DCGM Diagnostic" with ``entity_group``/``entity_id`` and
``test_summary``; the shape is documented in DCGM's nvvs JsonOutput.h).

Result per test and per GPU: ``Pass``, ``Fail``, ``Warn``, ``Skip`` (normalised to lower case),
with the warning/info messages attached. Registers the explain kinds ``dcgmi-diag`` and
``dcgmi-diag-json``. Parsers never raise on garbage.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping
from wizard.parsers._frozen import build_set as _set
from wizard.common import sat_int
from wizard.common import lazy_re
from wizard.i18n import N_, Msg


STATUSES = {"pass": "pass", "passed": "pass", "fail": "fail", "failed": "fail", "warn": "warn", "warning": "warn",
            "skip": "skip", "skipped": "skip", "not run": "skip", "notrun": "skip"}


@dataclass(frozen=True)
class DiagResult:
    """One test's result: ``status`` for the whole test (or None), ``per_gpu`` GPU id -> status,
    ``all_gpus`` status applying to every GPU ("Pass - All"), messages per GPU id (None = not
    tied to a GPU), and the raw lines."""

    test: str
    category: str = ""
    status: str | None = None
    all_gpus: str | None = None
    per_gpu: dict[int, str] = field(default_factory=dict)
    messages: dict[int | None, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    def add_message(self, gpu: int | None, text: str) -> None:
        t = text.strip()
        if t:
            self.messages.setdefault(gpu, []).append(t)

    def status_for(self, gpu: int) -> str | None:
        return self.per_gpu.get(gpu) or self.all_gpus

    @property
    def gpus(self) -> list[int]:
        return sorted(set(self.per_gpu) | {g for g in self.messages if g is not None})


@dataclass(frozen=True)
class DcgmDiag:
    """A parsed diagnostic run. ``metadata``: DCGM version, driver, device ids as printed;
    ``orphans``: Warning/Info rows seen before any test row (a section cut at the top)."""

    metadata: dict[str, str] = field(default_factory=dict)
    metadata_lines: list[str] = field(default_factory=list)
    results: list[DiagResult] = field(default_factory=list)
    orphans: DiagResult | None = None
    categories: list[str] = field(default_factory=list)
    level: int | None = None
    runtime_error: str = ""
    problems: list[str] = field(default_factory=list)
    source: str = "text"  # or "json"
    banner: bool = False  # "Successfully ran diagnostic for group." (or the dcgmi command line) is in the text
    header: bool = False  # the "| Diagnostic | Result |" header row is in the text
    closed: bool = False  # the text ends with the table's closing border: not cut at the bottom
    truncated: bool = False  # JSON cut short (it parsed only once its open strings/brackets were closed)

    @property
    def excerpt(self) -> bool:
        """A table pasted without its banner, header and metadata: only some rows of a run."""
        return self.source == "text" and not (self.banner or self.header or self.metadata)

    @property
    def device_ids(self) -> list[str]:
        v = self.metadata.get("GPU Device IDs Detected", "") or self.metadata.get("GPU Device IDs", "")
        return [x.strip().lower() for x in re.split(r"[,\s]+", v) if x.strip()]

    @property
    def gpu_count(self) -> int | None:
        return len(self.device_ids) or None


_SECTION = lazy_re(r"^[|+]-{2,}\s+([A-Za-z][\w /]*?)\s+-+[+|]")
_ROW = lazy_re(r"^\|([^|]*)\|(.*)$")
_HEAD = lazy_re(r"^(Pass|Fail|Skip|Warn|Warning|Error)\b\s*(?:-\s*(.*))?$", re.I)
_GPU_STATUS = lazy_re(r"\bGPU\s?(\d+)\s*:\s*(Pass|Fail|Skip|Warn|Warning)\b", re.I)
_GPU_IN_TEXT = lazy_re(r"\bGPU\s?(\d+)\b")
_MSG_ROWS = ("warning", "info", "error", "errors", "warnings")


def _gpu_list(s: str) -> list[int] | None:
    """"GPUs: 1, 2, 3" / "GPU: 0" -> [1, 2, 3] / [0]; "All" -> None."""
    m = re.match(r"GPUs?\s*:?\s*([\d,\s]+)$", s.strip(), re.I)
    if m:
        return [sat_int(x) for x in re.findall(r"\d+", m.group(1))]
    return None


def _status_value(r: DiagResult, chunk: str) -> bool:
    """Apply a "Pass - All" / "Fail - GPU: 0" / "GPU0: Pass" chunk to ``r``; False if it is text."""
    c = chunk.strip()
    m = _HEAD.match(c)
    if m:
        st = STATUSES.get(m.group(1).lower(), m.group(1).lower())
        rest = (m.group(2) or "").strip()
        if not rest:
            if r.status is None:
                _set(r, "status", st)
            else:
                _set(r, "all_gpus", r.all_gpus or st)
            return True
        if rest.lower() == "all":
            _set(r, "all_gpus", st)
            _set(r, "status", r.status or st)
            return True
        gl = _gpu_list(rest)
        if gl is not None:
            for g in gl:
                r.per_gpu[g] = st
            return True
        return False
    found = _GPU_STATUS.findall(c)
    if found and re.fullmatch(r"(?:\s*GPU\s?\d+\s*:\s*\w+\s*,?)+", c, re.I):
        for g, st in found:
            r.per_gpu[sat_int(g)] = STATUSES.get(st.lower(), st.lower())
        return True
    return False


def command_level(text: str) -> int | None:
    """The level a ``dcgmi diag -r N`` / ``--run N`` command line in ``text`` asked for (1-4), else ``None``."""
    lv = re.search(r"dcgmi\s+diag\b.*?(?:-r|--run)\s*(\d)\b", text)
    return sat_int(lv.group(1)) if lv else None


def parse_dcgm_text(text: str) -> DcgmDiag:
    d = DcgmDiag()
    section = ""
    current: DiagResult | None = None
    msg_target: tuple[DiagResult, int | None, str] | None = None  # (result, gpu, row name)
    msg_parts: list[str] = []
    prev_cell = ""
    width = 48  # "| " + 45 characters of text + "  |" in DCGM 3.x/4.x tables; re-read from each full row

    def flush() -> None:
        nonlocal msg_target, msg_parts
        if msg_target is not None and msg_parts:
            res, gpu, _ = msg_target
            text_ = re.sub(r"\s+", " ", "".join(msg_parts)).strip()
            if gpu is None:
                m = _GPU_IN_TEXT.search(text_)
                gpu = sat_int(m.group(1)) if m else None
            res.add_message(gpu, text_)
        msg_target, msg_parts = None, []

    lv = command_level(text)
    if lv:
        _set(d, "level", lv)
    for raw in text.splitlines():
        line = raw.rstrip()
        s = line.strip()
        if not s:
            continue
        sm = _SECTION.match(s)
        if sm:
            flush()
            section = sm.group(1).strip()
            if section not in d.categories:
                d.categories.append(section)
            current = None if section != "Metadata" else current
            continue
        if re.match(r"^\+[-=+]+\+?$", s) or s.startswith("Successfully ran diagnostic") or s.startswith("Executing in"):
            flush()
            continue
        rm = _ROW.match(s)
        if not rm:
            if re.search(r"Error|error", s) and "dcgmi" not in s:
                d.problems.append(s)
            continue
        name = rm.group(1).strip()
        cell = rm.group(2)
        if cell.endswith("|"):
            width = len(cell) - 1  # the result column's width, padding included
        cell = cell[:-1] if cell.endswith("|") else cell
        cell = cell[1:] if cell.startswith(" ") else cell
        if name in ("Diagnostic",) and cell.strip() in ("Result",):
            _set(d, "header", True)
            continue
        if section == "Metadata" and name:
            flush()
            d.metadata[name] = cell.strip()
            d.metadata_lines.append(s)
            continue
        if name:
            flush()
            base = name.split(":")[0].strip().lower()
            if base in _MSG_ROWS:
                target = current
                if target is None:
                    target = d.orphans
                    if target is None:
                        target = DiagResult("(test above the cut)", section)
                        _set(d, "orphans", target)
                gm = re.search(r"GPU\s?(\d+)", name)
                msg_target = (target, sat_int(gm.group(1)) if gm else None, base)
                msg_parts = [cell.rstrip()]
                target.lines.append(s)
                prev_cell = cell
                continue
            current = DiagResult(name, section)
            current.lines.append(s)
            d.results.append(current)
            if not _status_value(current, cell):
                current.add_message(None, cell)
            prev_cell = cell
            continue
        # continuation line
        if msg_target is not None:
            # DCGM wraps long messages at the column width, mid-word: a chunk that filled the
            # column continues without a space
            joiner = "" if len(prev_cell.rstrip()) >= width - 3 else " "
            msg_parts.append(joiner + cell.rstrip())
            msg_target[0].lines.append(s)
            prev_cell = cell
            continue
        if current is not None:
            current.lines.append(s)
            if not _status_value(current, cell):
                current.add_message(None, cell)
            prev_cell = cell
            continue
        d.problems.append(s)
    flush()
    # the table's last line is its closing border (lines after the table, such as a Slurm prolog's next message, do
    # not make it cut)
    tail = [s for s in (ln.strip() for ln in text.splitlines()) if s.startswith(("|", "+"))]
    _set(d, "banner", bool(re.search(r"Successfully ran diagnostic|dcgmi\s+diag\b", text)))
    _set(d, "closed", bool(tail) and bool(re.fullmatch(r"\+[-=+]+\+", tail[-1])))
    return d


# ------------------------------------------------------------------ JSON


def _gpu_ids(res: Mapping[str, Any]) -> list[int]:
    if res.get("entity_group") not in (None, "GPU", "gpu"):
        return []
    for k in ("gpu_ids", "gpu_id", "entity_id", "gpuId"):
        v = res.get(k)
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            return [v]
        if isinstance(v, str):
            return [sat_int(x) for x in re.findall(r"\d+", v)]
    return []


def _messages(res: Mapping[str, Any]) -> list[str]:
    out = []
    for key in ("warnings", "warning", "errors", "info"):
        v = res.get(key)
        items = v if isinstance(v, list) else [v] if v is not None else []
        for it in items:
            if isinstance(it, str):
                out.append(it)
            elif isinstance(it, Mapping):
                t = it.get("warning") or it.get("error") or it.get("message") or it.get("info")
                if isinstance(t, str):
                    tags = [f"{k} {v}" for k, v in (("error_id", it.get("error_id")),
                                                    ("category", it.get("category", it.get("error_category"))),
                                                    ("severity", it.get("severity", it.get("error_severity"))))
                            if isinstance(v, int) and not isinstance(v, bool)]
                    out.append(t + (f" ({', '.join(tags)})" if tags else ""))
    return out


_ELISION = lazy_re(r'\{\s*"?(?:\.\.\.|…)"?\s*\}\s*,?|"(?:\.\.\.|…)"\s*,?|^\s*(?:\.\.\.|…)\s*,?\s*$', re.M)
_TRAILING_COMMA = lazy_re(r",(\s*[\]}])")


UNNAMED_TEST = N_("a test not named in this excerpt")
"""The name given to one GPU's result object cut from its test in `dcgmi diag -j` (the name is not in the paste)."""


def _loads_elided(text: str) -> tuple[Any, bool]:
    """(json.loads, False), or, when a reporter cut parts out with ``{"..."}`` / ``"..."`` / a ``...`` line (the JSON
    is then invalid), the same after removing those marks and the trailing commas they leave; (doc, True) when it
    parsed only once its open strings, arrays and objects were closed (the document is cut short); (None, False) when
    nothing parses."""
    try:
        return json.loads(text, strict=False), False  # strict=False: a paste wraps a long string onto a second line
    except (ValueError, RecursionError):
        pass
    fixed = _TRAILING_COMMA.sub(r"\1", _ELISION.sub("", text))
    for cut, candidate in ((False, fixed), (True, _close_cut(fixed))):
        try:
            return json.loads(candidate, strict=False), cut
        except (ValueError, RecursionError):
            continue
    return None, False


def _close_cut(text: str) -> str:
    """A JSON document pasted only up to some line: close its open strings, arrays and objects (what it shows is
    kept; nothing is invented but the closing brackets)."""
    stack: list[str] = []
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and stack:
            stack.pop()
    out = text + ('"' if in_str else "")
    out = re.sub(r"[,:\s]+$", "", out)
    return out + "".join(reversed(stack))


def parse_dcgm_json(text: str) -> DcgmDiag:
    d = DcgmDiag(source="json")
    start = text.find("{")
    if start < 0:
        d.problems.append(text.strip()[:300] or "(empty)")
        return d
    doc, cut = _loads_elided(text[start:])
    _set(d, "truncated", cut)
    if doc is None:
        d.problems.append(text.strip()[:300])
        return d
    if not isinstance(doc, dict):
        d.problems.append(text.strip()[:300])
        return d
    root: Any = doc
    for k in ("DCGM GPU Diagnostic", "DCGM Diagnostic"):
        if isinstance(doc.get(k), dict):
            root = doc[k]
            break
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    for src in (root, doc, meta):
        if not isinstance(src, dict):
            continue
        for k, v in src.items():
            if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                key = {"version": "DCGM Version", "Driver Version Detected": "Driver Version Detected",
                       "driver_version": "Driver Version Detected", "driver_version_detected": "Driver Version Detected",
                       "runtime_error": "runtime_error"}.get(k, k)
                d.metadata.setdefault(str(key), str(v))  # key: a JSON object key, a str
            elif isinstance(v, list) and k in ("GPU Device IDs", "gpu_device_ids") and all(isinstance(x, str) for x in v):
                d.metadata.setdefault("GPU Device IDs Detected", ", ".join(v))
    _set(d, "runtime_error", d.metadata.pop("runtime_error", "") if isinstance(d.metadata.get("runtime_error"), str) else "")
    cats = root.get("test_categories") if isinstance(root, dict) else None
    tests: list[tuple[str, Any]] = []
    if isinstance(cats, list):
        for c in cats:
            if isinstance(c, dict):
                cname = str(c.get("category", ""))
                if cname and cname not in d.categories:
                    d.categories.append(cname)
                for t in c.get("tests", []) if isinstance(c.get("tests"), list) else []:
                    tests.append((cname, t))
    elif isinstance(root, dict) and isinstance(root.get("tests"), list):
        tests = [("", t) for t in root["tests"]]
    elif isinstance(root, dict) and "gpu_id" in root and isinstance(root.get("status"), str):
        # one GPU's result object cut from its test (held-out round 151): the test's name is not in the excerpt
        tests = [("", {"name": Msg(UNNAMED_TEST), "results": [root]})]
    for cname, t in tests:
        if not isinstance(t, dict):
            continue
        tname = t.get("name", "?")
        r = DiagResult(tname if isinstance(tname, Msg) else str(tname), cname)
        summ = t.get("test_summary")
        if isinstance(summ, dict) and isinstance(summ.get("status"), str):
            _set(r, "status", STATUSES.get(summ["status"].lower(), summ["status"].lower()))
            for m in _messages(summ):
                r.add_message(None, m)
        results = res_list if isinstance(res_list := t.get("results"), list) else []
        for res in results:
            if not isinstance(res, dict):
                continue
            st = res.get("status")
            st = STATUSES.get(st.lower(), st.lower()) if isinstance(st, str) else None
            ids = _gpu_ids(res)
            if ids and st:
                for g in ids:
                    r.per_gpu[g] = st
            elif st and res.get("entity_group") in (None, "GPU", "gpu"):
                _set(r, "status", r.status or st)
            for m in _messages(res):
                r.add_message(ids[0] if len(ids) == 1 else None, m)
        if r.status is None and r.per_gpu:
            vals = set(r.per_gpu.values())
            _set(r, "status", "fail" if "fail" in vals else "warn" if "warn" in vals else "pass" if vals == {"pass"} else (
                "skip" if vals == {"skip"} else None))
        r.lines.append(json.dumps({"name": t.get("name"), "results": results[:8]}, default=str)[:600])
        d.results.append(r)
    if not d.results and not d.runtime_error:
        d.problems.append(text.strip()[:300])
    return d


# ------------------------------------------------------------------ kinds


def detect_text(text: str) -> float:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    if "Successfully ran diagnostic for group" in text and "{" not in text:
        return 1.0
    table = [ln for ln in lines if re.match(r"^\s*[|+]", ln)]
    two_col = [ln for ln in table if re.match(r"^\s*[|+][^|+]{20,30}[|+]", ln)]
    keys = re.search(r"\|\s*(Pass|Fail|Skip|Warn)\b|\|\s*(Warning|Info|Error)\s+\||DCGM Version|GPU Memory|"
                     r"Targeted (?:Stress|Power)|Denylist|Blacklist|Persistence Mode", text)
    if keys and table and len(two_col) >= 0.6 * len(table) and len(table) >= 0.6 * len(lines):
        return 0.95
    # a few rows cut out of the table at any column width: "| Memory  | Fail - GPU: 0 |", with or without
    # the +---+ borders; at least one row must carry a DCGM result ("Pass", "Fail - GPU: 0", "GPU0: Pass")
    rows = [ln for ln in table if re.fullmatch(r"\s*\|[^|]{1,60}\|[^|]{0,80}\|?\s*", ln)]
    borders = [ln for ln in table if re.fullmatch(r"\s*\+[-=+ A-Za-z]+\+?\s*", ln)]
    status = [ln for ln in rows if re.match(r"\s*\|[^|]*\|\s*(?:(?:Pass|Fail|Skip|Warn)(?:\s*-\s*(?:All|GPUs?\s*:?\s*[\d, ]+))?"
                                             r"|GPU\s?\d+\s*:\s*(?:Pass|Fail|Skip|Warn))\s*\|?\s*$", ln)]
    if status and len(rows) + len(borders) >= 0.8 * len(table) and len(table) >= 0.6 * len(lines):
        return 0.9
    return 0.0


def detect_json(text: str) -> float:
    if re.search(r'"DCGM (?:GPU )?Diagnostic"\s*:', text):
        return 1.0
    if '"test_categories"' in text:
        return 0.9
    if re.search(r'^\s*\{?\s*"gpu_id"\s*:', text[:4000], re.M) and re.search(r'"status"\s*:\s*"(?:Pass|Fail|Warn|Skip)', text) \
            and re.search(r'"(?:warnings|info|error_id)"\s*:', text):
        return 0.85  # one GPU's result object of `dcgmi diag -j`, cut from its test
    return 0.0


# ------------------------------------------------------------------ dcgmi health -c


HEALTH_STATES = {"healthy": "healthy", "pass": "healthy", "warning": "warning", "warn": "warning",
                 "failure": "failure", "fail": "failure"}


@dataclass(frozen=True)
class HealthIncident:
    """One incident of a health report: the GPU (None when the report does not say), the watched system ("PCIe",
    "Memory", "Power", ...), its state (healthy / warning / failure) and DCGM's message lines."""

    gpu: int | None
    system: str
    state: str
    message: str = ""


@dataclass(frozen=True)
class DcgmHealth:
    """``dcgmi health -c`` (text table, DCGM 1.x ``GPU ID: N`` rows or DCGM 3.x/4.x ``-> N`` tree rows; or ``-j``
    JSON): overall state, each GPU's state and the incidents. overall = "" when the report does not show it."""

    overall: str = ""
    overall_line: str = ""
    gpus: dict[int, str] = field(default_factory=dict)
    incidents: list[HealthIncident] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


_HEALTH_ROW = lazy_re(r"^\s*\|\s*(.*?)\s*\|\s*(.*?)\s*\|\s*$")


def _state(s: str) -> str:
    return HEALTH_STATES.get(s.strip().lower(), "")


def parse_dcgm_health(text: str) -> DcgmHealth:
    """Read ``dcgmi health -c`` output; never raises (an unreadable input gives ``overall == ""``)."""
    if '"Health Monitor Report"' in text or '"Overall Health"' in text:
        return _health_json(text)
    h = DcgmHealth()
    gpu: int | None = None
    cur: dict[str, Any] | None = None
    found: list[dict[str, Any]] = []
    for raw in text.splitlines():
        m = _HEALTH_ROW.match(raw)
        if not m:
            continue
        label, value = m.group(1), m.group(2)
        label_n = label.lstrip("-> ").strip()
        if label_n.lower() == "overall health":
            _set(h, "overall", _state(value))
            _set(h, "overall_line", raw.strip())
            h.lines.append(raw.strip())
            continue
        gm = re.fullmatch(r"(?:GPU ID:\s*|GPU\s*)?(\d+)", label_n) if ("GPU" in label or "->" in label) else None
        if gm and _state(value.split(" - ")[0]):
            gpu = sat_int(gm.group(1))
            h.gpus[gpu] = _state(value.split(" - ")[0])
            h.lines.append(raw.strip())
            cur = None
            continue
        if label_n.lower() in ("gpu", "errors", "warnings"):
            continue
        # "-> PCIe system | Warning" then message rows; DCGM 1.x: "| | PCIe system: Warning - Detected ..."
        sm = re.fullmatch(r"(.+?) system", label_n, re.I)
        if sm and _state(value):
            cur = {"gpu": gpu, "system": sm.group(1), "state": _state(value), "message": []}
            found.append(cur)
            h.lines.append(raw.strip())
            continue
        om = re.match(r"(.+?) system:\s*(\w+)\s*-\s*(.*)$", value, re.I) if not label_n else None
        if om and _state(om.group(2)):
            cur = {"gpu": gpu, "system": om.group(1), "state": _state(om.group(2)), "message": [om.group(3)]}
            found.append(cur)
            h.lines.append(raw.strip())
            continue
        if not label_n and value and cur is not None:
            cur["message"].append(value)
            h.lines.append(raw.strip())
    for f in found:
        h.incidents.append(HealthIncident(f["gpu"], f["system"], f["state"], " ".join(f["message"]).strip()))
    return h


def _health_json(text: str) -> DcgmHealth:
    h = DcgmHealth()
    start = text.find("{")
    doc = _loads_elided(text[start:])[0] if start >= 0 else None
    body = doc.get("body", {}) if isinstance(doc, dict) else {}
    if not isinstance(body, dict):
        return h
    ov = body.get("Overall Health", {})
    value = ov.get("value", "") if isinstance(ov, dict) else str(ov)
    _set(h, "overall", _state(str(value)))
    _set(h, "overall_line", f'"Overall Health": "{value}"')
    h.lines.append(h.overall_line)

    def walk(node: Any, gpu: int | None, path: list[str]) -> None:
        if not isinstance(node, dict):
            return
        for k, v in node.items():
            if k in ("Overall Health",):
                continue
            key = str(k)
            num = re.fullmatch(r"[0-9]{1,6}", key)
            g = sat_int(key) if num and path and path[-1] == "GPU" else gpu
            if isinstance(v, dict):
                val = v.get("value")
                sm = re.fullmatch(r"(.+?) system", key, re.I)
                if g is not None and num and isinstance(val, str) and _state(val):
                    h.gpus[g] = _state(val)
                if sm and isinstance(val, str) and _state(val):
                    msgs = []
                    for c in (v.get("children") or {}).values() if isinstance(v.get("children"), dict) else []:
                        if isinstance(c, dict) and isinstance(c.get("value"), str):
                            msgs.append(c["value"])
                    h.incidents.append(HealthIncident(g, sm.group(1), _state(val), " ".join(msgs)))
                walk(v.get("children", v) if "children" in v else v, g, path + [key])
    walk(body, None, [])
    return h


def detect_health(text: str) -> float:
    """1.0 for ``dcgmi health -c`` (its Health Monitor Report, text or JSON); not for ``dcgmi stats`` job reports,
    whose summary also ends in an "Overall Health" row (held-out round 118: a MIG job's empty statistics read as a
    health report)."""
    if re.search(r"Successfully retrieved statistics for job|\|-+\s*Execution Stats\s*-+", text[:20_000]):
        return 0.0
    if re.search(r"\|\s*Health Monitor Report\s*\|", text) or re.search(r"\|\s*Overall Health\s*\|", text):
        return 1.0
    if '"Health Monitor Report"' in text:
        return 1.0
    if re.search(r"Health watches not enabled", text) and len(text) < 2000:
        return 0.9
    if HEALTH_WATCH_ERROR.search(text[:20_000]):
        return 0.95
    return 0.0


HEALTH_WATCH_ERROR = lazy_re(r"^\s*Error: Unable to (?:set|get) health watches\. Return: (?P<why>.+?)\s*$", re.M)
"""dcgmi health refusing to set (-s) or read (-f, -c) its watches, with DCGM's return ("API version mismatch": dcgmi
and the host engine from two DCGM versions)."""


# ------------------------------------------------------------------ dcgmi discovery -l


@dataclass(frozen=True)
class DiscoveredGpu:
    """One GPU row of ``dcgmi discovery -l``: DCGM's GPU id, name, PCI bus id, UUID and the rows' raw lines."""

    gpu_id: int
    name: str = ""
    bus_id: str = ""
    uuid: str = ""
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DcgmDiscovery:
    """``dcgmi discovery -l``: ``gpus_found`` from "N GPUs found." (None when the paste lacks it), the listed GPUs,
    ``nvswitches`` / ``connectx`` / ``cpus`` from their "N ... found." lines (None when absent), ``errors``: the
    lines of a dcgmi that could not reach the host engine."""

    gpus_found: int | None = None
    found_line: str = ""
    gpus: list[DiscoveredGpu] = field(default_factory=list)
    nvswitches: int | None = None
    nvswitch_line: str = ""
    connectx: int | None = None
    cpus: int | None = None
    errors: list[str] = field(default_factory=list)
    hierarchy: dict[int, dict[str, int]] = field(default_factory=dict)
    """``dcgmi discovery -c`` (the MIG instance hierarchy): GPU id -> {"gi": GPU instances, "ci": compute instances}."""
    hierarchy_lines: list[str] = field(default_factory=list)
    empty_instances: list[str] = field(default_factory=list)
    """GPU instances ("0/2") listed with no compute instance under them."""


_DISC_FOUND = lazy_re(r"^\s*(\d+)\s+(GPUs?|NvSwitch(?:es)?|ConnectX|CPUs?)\s+found\b", re.I)
_DISC_ROW = lazy_re(r"^\s*\|\s*(\d*)\s*\|\s*(Name|PCI Bus ID|Device UUID):\s*(.*?)\s*\|\s*$")
_HIER = lazy_re(r"^\|\s*(?:(?P<gpu>GPU (?P<g>\d+))|-> I (?P<gi>\d+/\d+)|-> CI (?P<ci>\d+/\d+/\d+))\s*\|")
"""A row of ``dcgmi discovery -c``'s Instance Hierarchy table: "| GPU 0 | GPU GPU-... (EntityID: 0) |", "| -> I 0/1 |
GPU Instance ...", "|    -> CI 0/1/0 | Compute Instance ..."."""
_DISC_ERR = lazy_re(r"Unable to (?:establish a )?connect|Host engine connection invalid|^Error:", re.I)


def parse_dcgmi_discovery(text: str) -> DcgmDiscovery:
    """Read ``dcgmi discovery -l`` (and ``-c``'s MIG instance hierarchy); never raises (rows it cannot read are left
    out)."""
    d = DcgmDiscovery()
    if not isinstance(text, str):
        return d
    section = ""
    cur: DiscoveredGpu | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _DISC_FOUND.match(line)
        if m:
            n, what = sat_int(m.group(1)), m.group(2).lower()
            section = what
            if what.startswith("gpu") and d.gpus_found is None:
                _set(d, "gpus_found", n)
                _set(d, "found_line", line.strip())
            elif what.startswith("nvswitch"):
                _set(d, "nvswitches", n)
                _set(d, "nvswitch_line", line.strip())
            elif what == "connectx":
                _set(d, "connectx", n)
            elif what.startswith("cpu"):
                _set(d, "cpus", n)
            continue
        if _DISC_ERR.search(line):
            d.errors.append(line.strip())
            continue
        h = _HIER.match(line.strip())
        if h:
            d.hierarchy_lines.append(line.strip())
            if h.group("g"):
                gpu = sat_int(h.group("g"))
                d.hierarchy.setdefault(gpu, {"gi": 0, "ci": 0})
                m2 = re.search(r"GPU-[0-9a-fA-F*-]+", line)
                d.gpus.append(DiscoveredGpu(gpu, uuid=m2.group(0) if m2 else "", lines=[line.strip()]))
            elif h.group("gi"):
                gpu = sat_int(h.group("gi").split("/")[0])
                d.hierarchy.setdefault(gpu, {"gi": 0, "ci": 0})["gi"] += 1
                d.empty_instances.append(h.group("gi"))
            else:
                gpu = sat_int(h.group("ci").split("/")[0])
                d.hierarchy.setdefault(gpu, {"gi": 0, "ci": 0})["ci"] += 1
                gi = "/".join(h.group("ci").split("/")[:2])
                if gi in d.empty_instances:
                    d.empty_instances.remove(gi)
            continue
        r = _DISC_ROW.match(line)
        if not r or not section.startswith("gpu"):
            continue
        if r.group(1):
            cur = DiscoveredGpu(sat_int(r.group(1)))
            d.gpus.append(cur)
        if cur is None:
            continue
        cur.lines.append(line.strip())
        key, value = r.group(2).lower(), r.group(3)
        if key == "name":
            _set(cur, "name", value)
        elif key == "pci bus id":
            _set(cur, "bus_id", value)
        else:
            _set(cur, "uuid", value)
    return d


def detect_dcgmi_discovery(text: str) -> float:
    """1.0 for "N GPUs found." with DCGM's "| GPU ID | Device Information |" table, 0.9 for "N NvSwitches found.",
    0.95 for ``dcgmi discovery -c``'s Instance Hierarchy table, 0.9 for a ``dcgmi discovery`` that could not reach the
    host engine."""
    if not isinstance(text, str):
        return 0.0
    # [ \t]*, not \s*: at each line start \s* ran through every blank line after it (quadratic in a run of them)
    if re.search(r"^[ \t]*\d+\s+GPUs?\s+found\b", text, re.M) and re.search(r"\|\s*GPU ID\s*\|\s*Device Information", text):
        return 1.0
    if re.search(r"^[ \t]*\d+\s+NvSwitch(?:es)?\s+found\.", text, re.M):
        return 0.9
    if "Instance Hierarchy" in text and parse_dcgmi_discovery(text).hierarchy:
        return 0.95
    if "dcgmi discovery" in text and re.search(r"Unable to (?:establish a )?connect|Host engine connection invalid",
                                                text, re.I):
        return 0.9
    return 0.0


# ------------------------------------------------------------------ dcgmi dmon


@dataclass(frozen=True)
class DmonSample:
    """One ``dcgmi dmon`` row: the entity ("GPU", "Switch", "GPU-I", ...), its id, and the value of each column by
    the column's short name (as the header prints it: ``XIDER``, ``RPCTR``, ``EDVTL``, ...), raw strings."""

    entity: str
    entity_id: int
    values: dict[str, str]
    line: str


@dataclass(frozen=True)
class DcgmDmon:
    """``dcgmi dmon -e ...``: the column short names from the ``#Entity`` header, the samples in order, and
    ``errors`` (e.g. "Error setting watches. Result: -6: Feature not supported"). The same shape holds dcgm-exporter's
    metrics (:func:`parse_dcgm_exporter`: ``tool`` "dcgm-exporter", a column per metric name)."""

    tool: str = "dcgmi dmon"
    columns: list[str] = field(default_factory=list)
    header_line: str = ""
    samples: list[DmonSample] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_DMON_HEAD = lazy_re(r"^\s*#\s*Entity\s+(.*\S)\s*$", re.I)
_DMON_ROW = lazy_re(r"^\s*(GPU-CI|GPU-I|GPU|Switch|NvSwitch|Link|CPU|Core|CX|ConnectX)\s*(\d+)\s+(.*\S)\s*$", re.I)


def parse_dcgmi_dmon(text: str) -> DcgmDmon:
    """Read ``dcgmi dmon`` output: columns by their header names (never by position alone); never raises."""
    d = DcgmDmon()
    if not isinstance(text, str):
        return d
    for raw in text.splitlines():
        line = raw.rstrip()
        h = _DMON_HEAD.match(line)
        if h:
            cols = h.group(1).split()
            if not d.columns:
                _set(d, "columns", cols)
                _set(d, "header_line", line.strip())
            continue
        if re.search(r"^\s*Error\b|Result:\s*-\d+", line):
            d.errors.append(line.strip())
            continue
        r = _DMON_ROW.match(line)
        if not r or not d.columns:
            continue
        vals = r.group(3).split()
        if len(vals) != len(d.columns):
            d.problems.append(line.strip())
            if len(vals) < len(d.columns):
                continue
        d.samples.append(DmonSample(r.group(1).upper(), sat_int(r.group(2)), dict(zip(d.columns, vals)), line.strip()))
    return d


_EXPORTER_SAMPLE = lazy_re(r"^\s*(DCGM_FI_[A-Z0-9_]+)(\{[^\n]*\})?\s+(\S+)(?:\s+\d+)?\s*$")


def parse_dcgm_exporter(text: str) -> DcgmDmon:
    """dcgm-exporter's Prometheus metrics (``curl localhost:9400/metrics``, or what Prometheus scraped): each
    ``DCGM_FI_*`` sample read with prometheus_client's exposition parser (labels unescaped as Prometheus does), one
    column per metric name, one sample per series with the GPU from its ``gpu`` label (a MIG instance's series is a
    sample of its GPU). Other lines (a prompt, ``# HELP``/``# TYPE``) are skipped; a line the parser refuses goes
    to ``problems``. Never raises."""
    from prometheus_client.parser import text_string_to_metric_families

    d = DcgmDmon(tool="dcgm-exporter")
    if not isinstance(text, str):
        return d
    cols: dict[str, None] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not _EXPORTER_SAMPLE.match(line):
            continue
        try:
            samples = [smp for fam in text_string_to_metric_families(line + "\n") for smp in fam.samples]
        except (ValueError, IndexError, KeyError):
            d.problems.append(line[:300])
            continue
        for smp in samples:
            gpu = sat_int(smp.labels["gpu"]) if str(smp.labels.get("gpu", "")).isdigit() else None
            if gpu is None:
                d.problems.append(line[:300])
                continue
            value = f"{smp.value:.0f}" if float(smp.value).is_integer() else f"{smp.value:g}"
            if "XID" in smp.name and str(smp.labels.get("xid", "")).isdigit():
                # dcgm-exporter's Xid count series (DCGM_EXP_XID_ERRORS_COUNT, one series per Xid with an xid label: the
                # Xids seen within its window): read as the Xid's number where the count is above 0, as the last-Xid field
                value = str(smp.labels["xid"]) if smp.value > 0 else "0"
            cols[smp.name] = None
            d.samples.append(DmonSample("GPU", gpu, {smp.name: value}, line if len(line) <= 400 else line[:400]))
    _set(d, "columns", list(cols))
    _set(d, "header_line", "")
    return d


def detect_dcgm_exporter(text: str) -> float:
    """0.95 for dcgm-exporter metrics: at least one ``DCGM_FI_*{...} value`` sample line."""
    if not isinstance(text, str):
        return 0.0
    return 0.95 if re.search(r"^[ \t]*DCGM_FI_[A-Z0-9_]+\{[^\n]*\}[ \t]+[-+0-9.eEnaNIf]+", text, re.M) else 0.0


def detect_dcgmi_dmon(text: str) -> float:
    """1.0 for dcgmi dmon's ``#Entity  <FIELDS>`` header (with or without sample rows)."""
    if not isinstance(text, str):
        return 0.0
    if re.search(r"^[ \t]*#\s*Entity\s+[A-Z0-9#_]{3,}", text, re.M):
        return 1.0
    return 0.0


# ------------------------------------------------------------------ dcgmi modules -l

_MODULE_ROW = lazy_re(r"^\|\s*(\d{1,2})\s*\|\s*([A-Za-z][\w ]*?)\s*\|\s*(Loaded|Not loaded|Failed to load|Denylisted|"
                      r"Blacklisted|Unloaded|Paused)\s*\|\s*$", re.I)


def detect_dcgmi_modules(text: str) -> float:
    """0.95 for ``dcgmi modules -l``: its "List Modules" table with Module ID / Name / State rows."""
    head = text[:50_000]
    return 0.95 if "List Modules" in head and any(_MODULE_ROW.match(ln.strip()) for ln in head.splitlines()) else 0.0


def parse_dcgmi_modules(text: str) -> list[tuple[int, str, str, str]]:
    """``dcgmi modules -l`` -> [(module id, name, state, the row)]: state "Loaded", "Not loaded" (lazy-loaded, not
    needed yet), "Failed to load", "Denylisted" (dcgmi-modules(1)). Never raises."""
    out: list[tuple[int, str, str, str]] = []
    for raw in text.splitlines():
        m = _MODULE_ROW.match(raw.strip())
        if m:
            out.append((sat_int(m.group(1)), m.group(2), m.group(3), raw.strip()))
    return out


# ------------------------------------------------------------------ dcgmi stats (job statistics)

_STATS_ROW = lazy_re(r"^\|\s*([A-Za-z][^|]*?)\s*\|\s*([^|]*?)\s*\|\s*$")


def detect_dcgmi_stats(text: str) -> float:
    """0.95 for ``dcgmi stats -j JOB`` (job statistics: Execution, Performance, Event and Slowdown Stats)."""
    head = text[:50_000]
    return 0.95 if (re.search(r"\|-+\s*Execution Stats\s*-+", head) and re.search(r"\|\s*Critical XID Errors\s*\|", head)) \
        else 0.0


def parse_dcgmi_stats(text: str) -> dict[str, tuple[str, str]]:
    """``dcgmi stats`` job report -> {row label: (value, the row)}: "No. of Processes", "Single Bit ECC Errors",
    "Double Bit ECC Errors", "PCIe Replay Warnings", "Critical XID Errors", "Overall Health", ... (the first of each
    label: the summary or the first GPU). Never raises."""
    out: dict[str, tuple[str, str]] = {}
    for raw in text.splitlines():
        m = _STATS_ROW.match(raw.strip())
        if m and not m.group(1).startswith("-"):
            out.setdefault(m.group(1).strip(), (m.group(2).strip(), raw.strip()))
    return out


# ------------------------------------------------------------------ dcgm-exporter and nv-hostengine logs


@dataclass(frozen=True)
class DcgmLog:
    """What a dcgm-exporter or nv-hostengine log says, line by class: ``no_nvml`` (DCGM could not load or reach
    NVML, so it manages no GPU), ``disconnected`` (the exporter lost its host engine), ``no_switch_libs`` (the
    NvSwitch module could not load NVSDM/NSCQ), ``started`` (the exporter's pipeline/webserver started, DCGM
    initialised), ``errors`` (other ERROR lines)."""

    no_nvml: list[str] = field(default_factory=list)
    disconnected: list[str] = field(default_factory=list)
    no_switch_libs: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    fatal: list[str] = field(default_factory=list)
    """Lines at logrus's fatal level (``level=fatal msg=...``, ``FATA[0000] ...``) or the Go runtime's crash lines
    (:data:`_GO_CRASH`): the process exited on them."""
    exporter: bool = False


_DLOG_EXPORTER = lazy_re(r"Starting dcgm-exporter|dcgm-exporter|Failed to collect metrics|Pipeline starting|"
                         r"Starting webserver|Collecting DCP Metrics|Not collecting \w[\w ]* metrics")
_DLOG_ENGINE = lazy_re(r"\[/builds/dcgm/dcgm/[^\]]+\.cpp:\d+\]|\bnv-hostengine\b")
_DLOG_NO_NVML = lazy_re(r"Cannot load NVML|Cannot init NVML|NVML doesn't exist on this system|Not collecting GPU metrics; "
                        r"Error getting devices count|Failed to initialize NVML|NVML (?:Shared Library )?Not Found", re.I)
_DLOG_DISCONNECTED = lazy_re(r"Host engine connection invalid|Unable to connect to host engine|"
                             r"connection to (?:the )?host engine (?:was )?(?:lost|refused)", re.I)
_DLOG_SWITCH_LIBS = lazy_re(r"\[\[NvSwitch\]\].*(?:Could not load (?:NVSDM|NSCQ)|AttachToNvsdm\(\) returned|"
                            r"libnvidia-nscq)", re.I)
_DLOG_STARTED = lazy_re(r"DCGM successfully initialized|Pipeline starting|Starting webserver|Listening on")
_GO_CRASH = lazy_re(r"^(?:SIG(?:SEGV|BUS|ABRT|FPE|ILL): |panic: |fatal error: )")
"""The Go runtime's own crash lines (dcgm-exporter is a Go program): a signal in cgo code ("SIGSEGV: segmentation
violation"), a panic, a fatal runtime error; the process exits after its goroutine dump (Go runtime package
documentation, https://pkg.go.dev/runtime; held-out round 280: a SIGSEGV in dcgmGetDeviceTopology read as a start)."""
_DLOG_ERROR = lazy_re(r"^\s*(?:ERROR\b|E\d{4} |\S+ \S+ ERROR\b|time=(?:\"[^\"]*\"|\S+) level=(?:error|fatal)\b|"
                      r"(?:ERRO|FATA)\[)", re.I)
"""An error line: logrus (``time="..." level=error``), Go's log/slog (``time=2026-09-19T20:06:59Z level=ERROR``, the
exporter from 4.x), glog (``E0123``) or the host engine's ``ERROR``."""


def parse_dcgm_log(text: str) -> DcgmLog:
    """A dcgm-exporter log (logrus: ``time=... level=info msg="..."`` or ``INFO[0000] ...``) or an nv-hostengine log
    (``2025-01-23 22:23:52.097 DEBUG [pid:tid] message [/builds/dcgm/dcgm/.../File.cpp:N] [Function]``) ->
    :class:`DcgmLog`. Never raises."""
    d = DcgmLog()
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        if not s:
            continue
        if _DLOG_EXPORTER.search(s):
            _set(d, "exporter", True)
        if re.search(r"level=fatal\b|^FATA\[\d+\]", s, re.I) or _GO_CRASH.match(s):
            d.fatal.append(s)
        elif _DLOG_NO_NVML.search(s):
            d.no_nvml.append(s)
        elif _DLOG_DISCONNECTED.search(s):
            d.disconnected.append(s)
        elif _DLOG_SWITCH_LIBS.search(s):
            d.no_switch_libs.append(s)
        elif _DLOG_STARTED.search(s):
            d.started.append(s)
        elif _DLOG_ERROR.search(s):
            d.errors.append(s)
    return d


def detect_dcgm_log(text: str) -> float:
    """0.85 for a dcgm-exporter or nv-hostengine log (three or more lines of either's form, or one of the lines whose
    meaning :class:`DcgmLog` reads in a log line of either)."""
    head = "\n".join(text.splitlines()[:400])
    engine = len(_DLOG_ENGINE.findall(head))
    exporter = len(re.findall(r"(?:level=\w+ msg=|^(?:INFO|WARN|ERRO|FATA)\[\d+\] |"
                              r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (?:DEBUG|INFO|WARN|ERROR) )", head, re.M))
    if not engine and not (exporter and _DLOG_EXPORTER.search(head)):
        return 0.0
    d = parse_dcgm_log(head)
    if engine >= 3 or exporter >= 3 or d.no_nvml or d.disconnected or d.started or d.fatal:
        return 0.85
    return 0.0
