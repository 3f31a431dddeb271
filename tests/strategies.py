"""The one set of hypothesis strategies of the fuzz tests: garbage, and mutations of real text.

Every fuzz test draws its inputs from here; what differs between areas is only *which* real outputs
are mutated (the files of ``tests/data`` an area reads) and which area tokens (format fragments such as
``"LnkSta:"`` or ``"NVRM: Xid (PCI:0000:"``) are mixed in. Nothing here knows a format.

- :func:`garbage`: random text, random bytes decoded as hosts decode them (UTF-8, bad bytes replaced),
  and soups of the area's tokens.
- :func:`mutated`: one real output with 1-6 random edits (:data:`OPS`): truncation at any character, a
  cut after any line, lines dropped, duplicated, swapped, cut short, replaced by random text or glued to
  the next, random text or byte garbage inserted, a number replaced by a huge / negative / odd one, an
  area token inserted, CRLF line ends, all lines joined into one.
- :func:`inputs`: either of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

from hypothesis import strategies as st

from tests.probe_data import text as _read

HUGE_NUMBERS = ["9" * 40, "18446744073709551616", "-1", "-99999999999999999999", "0", "00000000", "1e400",
                "NaN", "inf", "0x" + "F" * 20, "4294967295", "1.7976931348623157e309", "१२३"]
"""Numbers a parser must survive in place of a real one: overflow, negative, exponent, NaN, non-ASCII digits."""

NOISE = ["\0", "\x1b[31m", "\x1b[0m", "\ufffd", "\r", "\t", "\u00a0", "\u200b", "é", "\x7f"]
"""Control characters, terminal colour codes and Unicode oddities that pastes and decoded bytes bring."""

OPS = ("truncate", "cut_lines", "drop", "dup", "swap", "cut_line", "garble", "insert", "bytes", "splice",
       "huge", "token", "crlf", "join")
"""The edits :func:`mutated` applies (see the module docstring)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def decoded_bytes(max_size: int = 1500) -> st.SearchStrategy[str]:
    """Random bytes decoded the way hosts decode probe output (UTF-8, bad bytes replaced)."""
    return st.binary(max_size=max_size).map(lambda b: b.decode("utf-8", errors="replace"))


def garbage(tokens: Sequence[str] = (), max_size: int = 1500, max_tokens: int = 60) -> st.SearchStrategy[str]:
    """Random text, random decoded bytes, and (when ``tokens`` are given) strings of area tokens."""
    parts = [st.text(max_size=max_size), decoded_bytes(max_size)]
    if tokens:
        parts.append(st.lists(st.sampled_from(list(tokens)), max_size=max_tokens).map("".join))
    return st.one_of(*parts)


@functools.cache
def _file_text(path: Path) -> str:
    return _read(path)


def _body(source: str | Path) -> str:
    return _file_text(source) if isinstance(source, Path) else source


@st.composite
def mutate(draw, body: str, tokens: Sequence[str] = (), max_ops: int = 4) -> str:
    """``body`` with 1 to ``max_ops`` random edits of :data:`OPS`."""
    toks = list(tokens) + HUGE_NUMBERS + NOISE
    for _ in range(draw(st.integers(1, max(1, max_ops)))):
        op = draw(st.sampled_from(OPS))
        lines = body.splitlines(keepends=True)
        if op == "truncate":
            body = body[: draw(st.integers(0, len(body)))]
            continue
        if op == "crlf":
            body = body.replace("\r\n", "\n").replace("\n", "\r\n")
            continue
        if op == "join":
            body = " ".join(ln.rstrip("\r\n") for ln in lines)
            continue
        if op == "insert" or op == "bytes":
            at = draw(st.integers(0, len(body)))
            junk = draw(st.text(max_size=20) if op == "insert" else decoded_bytes(24))
            body = body[:at] + junk + body[at:]
            continue
        if not lines:
            continue
        i = draw(st.integers(0, len(lines) - 1))
        line, end = lines[i].rstrip("\r\n"), lines[i][len(lines[i].rstrip("\r\n")):]
        if op == "cut_lines":
            lines = lines[:i]
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines[i:i] = [lines[i]] * draw(st.integers(1, 4))
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut_line":
            lines[i] = line[: draw(st.integers(0, len(line)))] + end
        elif op == "garble":
            lines[i] = draw(st.text(max_size=80)) + end
        elif op == "splice":  # the line loses its end and runs into the next
            lines[i] = line
        elif op == "huge":
            numbers = list(_NUMBER.finditer(line))
            if numbers:
                m = numbers[draw(st.integers(0, len(numbers) - 1))]
                line = line[: m.start()] + draw(st.sampled_from(HUGE_NUMBERS)) + line[m.end():]
            else:
                line += " " + draw(st.sampled_from(HUGE_NUMBERS))
            lines[i] = line + end
        else:  # token: appended, put in front, or replacing the line's second half
            tok = draw(st.sampled_from(toks))
            where = draw(st.sampled_from(["end", "start", "half"]))
            line = {"end": line + tok, "start": tok + line, "half": line[: len(line) // 2] + tok}[where]
            lines[i] = line + end
        body = "".join(lines)
    return body


def mutated(sources: Sequence[str | Path], tokens: Sequence[str] = (), max_ops: int = 4) -> st.SearchStrategy[str]:
    """One of ``sources`` (real texts, or paths of real outputs read as hosts decode them), mutated."""
    srcs = list(sources)
    if not srcs:
        raise ValueError("mutated() needs at least one real output")
    return st.sampled_from(srcs).flatmap(lambda s: mutate(_body(s), tokens, max_ops))


def inputs(sources: Sequence[str | Path], tokens: Sequence[str] = (), max_size: int = 1500,
           max_ops: int = 4) -> st.SearchStrategy[str]:
    """Garbage or a mutated real output: what a fuzz test feeds a parser, a judge or ``explain``."""
    return st.one_of(garbage(tokens, max_size), mutated(sources, tokens, max_ops))
