"""Small pure helpers every layer may use (below the parsers): numbers read from text, byte sizes
for people, and how findings name a PCI function or a GPU.

Nothing here knows about probes, facts or rules; it imports only the standard library.
"""

from __future__ import annotations

import re
from typing import Any, cast


class _LazyPattern:
    """A regular expression compiled the first time it is used (:func:`lazy_re`). On that first use its methods
    become the compiled pattern's own (instance attributes, so later calls cost what a compiled pattern's do)."""

    _METHODS = ("search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split", "scanner")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:  # only for what the instance does not have yet: compile once
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for method in self._METHODS:
            setattr(self, method, getattr(compiled, method))
        self.flags, self.groups, self.groupindex = compiled.flags, compiled.groups, compiled.groupindex
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_re({self.pattern!r})"


CPU_NPROC = 2
"""Ranks per node of a validation on the CPU (gloo), single- or multi-node: issue 5 "gloo backend, 2-4 processes". A
hostfile's GPU count is not a CPU run's rank count (walk 34 #6: 8 gloo ranks a node on a 2-CPU VM)."""


def lazy_re(pattern: str, flags: int = 0) -> "re.Pattern[str]":
    """``re.compile(pattern, flags)``, compiled when first used: bringup's modules hold about 650 patterns, most of
    which a given run (one ``explain``, one health profile) never uses, and compiling them all at import cost about a
    third of a process's start. Use it for module-level patterns; ``pattern`` keeps the source text (for patterns
    built from others). Raises ``re.error`` at first use, not here, for a bad pattern (the tests use each one)."""
    return cast("re.Pattern[str]", _LazyPattern(pattern, flags))


_INT_RE = {n: re.compile(r"-?\d{1,%d}" % n) for n in (12, 18)}


def to_int(s: Any, max_digits: int = 18, *, text: bool = True, signed: bool = True) -> int | None:
    """A decimal integer written in ``s`` (surrounding blanks ignored), else ``None``; never raises.

    The digit count is bounded (``int()`` of a huge digit run is slow on hostile input), so a string
    of more than ``max_digits`` digits is ``None`` too. Non-strings (``None``, numbers from JSON) are
    accepted: an ``int`` (not a ``bool``) is returned as it is, anything else is ``None``.
    ``text=False`` reads JSON numbers only (a string, even "3", is ``None``); ``signed=False`` reads
    counts: a string with a minus sign is ``None``.
    """
    if isinstance(s, bool):
        return None
    if isinstance(s, int):
        return s
    if not text or not isinstance(s, str):
        return None
    s = s.strip()
    if not signed and s.startswith("-"):
        return None
    pat = _INT_RE.get(max_digits) or re.compile(r"-?\d{1,%d}" % max_digits)
    return int(s) if pat.fullmatch(s) else None


INT_SATURATION = 10 ** 20 - 1
"""The magnitude :func:`sat_int` reads a longer digit run as: tools print at most 20 digits (a 64-bit
counter, 18446744073709551615 = 2**64 - 1 when a tool prints -1 unsigned); a longer run is garbage, and
at least this large."""


def sat_int(s: Any) -> int:
    """``int(s)``, except that a decimal string of more than 18 significant digits is read as
    ±:data:`INT_SATURATION`: Python's ``int()`` raises ``ValueError`` past 4,300 digits (and costs time
    quadratic in the digit count below that), so parsers read numbers from text with this, never ``int()``
    (``tests/parsers/test_contract.py`` feeds every real input with huge numbers). Anything else (a float,
    ``None``) goes to ``int()`` as it is.

    Raises:
        ValueError, TypeError: as ``int(s)`` does (not an integer literal; ``None``).
    """
    if not isinstance(s, str):
        return int(s)
    t = s.strip()
    if len(t) <= 20:
        return int(t)
    sign = t[0] if t[0] in "+-" else ""
    digits = t[len(sign):]
    if not digits.isdecimal():
        return int(t)  # raises, as int() does
    significant = digits.lstrip("0")
    if len(significant) > 20:
        return -INT_SATURATION if sign == "-" else INT_SATURATION
    return int(sign + (significant or "0"))


def to_float(s: Any, *, text: bool = True, positive: bool = False) -> float | None:
    """A finite number written in ``s`` ("12.5", "1e3", or an int/float from JSON), else ``None``;
    never raises. NaN and infinities are ``None`` (they compare false with every threshold).
    ``text=False`` reads JSON numbers only (a string, even "12.5", is ``None``); ``positive=True``
    makes 0 and negative numbers ``None`` too (a figure that must be above zero to mean anything)."""
    if isinstance(s, bool) or s is None or (not text and isinstance(s, str)):
        return None
    try:
        v = float(s.strip() if isinstance(s, str) else s)
    except (TypeError, ValueError, OverflowError):
        return None
    if v != v or v in (float("inf"), float("-inf")) or (positive and v <= 0):
        return None
    return v


def human_bytes(n: float | int | None) -> str:
    """Bytes in binary units (IEC 80000-13: KiB = 1024 B): "8 B", "64 KiB", "1.5 GiB"; ``None`` -> "?".

    Whole numbers print without decimals ("64 GiB", as lspci and nccl-tests print sizes), others with
    one decimal."""
    if n is None:
        return "?"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(v) < 1024 or unit == "TiB":
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.0f} TiB"  # pragma: no cover


def normalise_bus_id(bus_id: str) -> str:
    """"00000000:9B:00.0" (NVML/nvidia-smi) or "9b:00.0" (lspci) -> "0000:9b:00.0" (sysfs form)."""
    b = bus_id.strip().lower()
    if b.count(":") == 1:
        b = "0000:" + b
    dom, _, rest = b.partition(":")
    if len(dom) > 4:
        dom = dom[-4:]
    return f"{dom}:{rest}"


def gpu_subject(index: int | str | None = None, bus_id: str = "", serial: str = "") -> str:
    """How findings name a GPU: "GPU 3 (0000:9b:00.0, serial 1654922005923)"; parts may be missing."""
    head = f"GPU {index}" if index not in (None, "") else "GPU"
    inner = ", ".join(x for x in (normalise_bus_id(bus_id) if bus_id else "",
                                  f"serial {serial}" if serial and serial.upper() not in ("N/A", "[N/A]") else "") if x)
    return f"{head} ({inner})" if inner else head


_EDITOR_NUMBER = re.compile(r"^[ \t]*(\d{1,7})(?:[ \t]|$)")


def strip_editor_line_numbers(text: str) -> str:
    """``text`` without the line numbers an editor or ``cat -n`` put before every line ("  1 P2P=Disabled ...",
    "  7" for a blank line), where every line carries one and they count up by one from the first; otherwise
    ``text`` unchanged. A matrix row's GPU index never passes for one: the title and column lines of a matrix
    start with words, not numbers. Never raises."""
    if not isinstance(text, str):
        return text
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 3:
        return text
    out: list[str] = []
    want: int | None = None
    for ln in lines:
        m = _EDITOR_NUMBER.match(ln)
        if not m:
            return text
        n = sat_int(m.group(1))
        if want is not None and n != want:
            return text
        want = n + 1
        out.append(ln[m.end():])
    return "\n".join(out) + "\n"


def fmt_value(v: Any) -> str:
    """A measured figure as the screens, the charts and the CLI show it: counts whole, big figures without decimals,
    two decimals from 1, three significant digits below ("0.161"); "-" for None, other values as they are."""
    f = to_float(v, text=False)
    if f is None:
        return "-" if v is None else str(v)
    if f == int(f) and abs(f) < 1e6:  # counts (ranks, errors) and whole figures without decimals
        return f"{int(f):,}"
    return f"{f:,.0f}" if abs(f) >= 1000 else (f"{f:.2f}" if abs(f) >= 1 else f"{f:.3g}")
