"""Answers files: unattended builds, the way subiquity's autoinstall answers an installer.

An answers file (TOML, ``assets/schema/answers.schema.json``) holds what a person answers in the TUI: the
plan (``[plan]``, keys and values as ``bringup plan KEY=VALUE`` takes them), confirmations of steps done by
hand with their notes (``[confirm] "grounding.esd" = "strap on, bench ground point B"``), skips with their
reasons (``[skip]``), which actions may run (``[actions] allow = ["driver.install"]``) and ``on_failure``
(``"stop"``, the default, or ``"continue"``). Example::

    version = 1
    on_failure = "stop"

    [plan]
    gpu_model = "H100 SXM5"
    gpu_count = 8

    [confirm]
    "grounding.esd" = "strap on, bench ground point B"

    [skip]
    "bios.sriov" = "no VMs on this fleet"

    [actions]
    allow = ["os.tools", "driver.install"]

:func:`load_answers` reads and validates one offline (``bringup answers check``): TOML syntax (tomllib's
line and column), the schema (``jsonschema``), then the catalogue (step ids, action ids) and the plan's own
ranges (:func:`wizard.plan.parse_value`); every error names its line. :func:`run_auto` walks a build with
it (``bringup auto``) in catalogue order through the engine's own paths (:meth:`Build.record_findings`,
:meth:`Build.confirm`, :meth:`Build.skip`, :meth:`Build.run_action`); :func:`export_answers` writes a build's
answers back as a file that :func:`load_answers` accepts (``bringup answers export``).

The catalogue is passed in (``stages``), as :class:`wizard.engine.Build` takes it: this module sits in the
engine's layer and never imports ``steps``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from wizard import actions as act
from wizard.data import ASSETS
from wizard.engine import Build, accepted_note, is_checked, run_checks
from wizard.hosts import Host
from wizard.model import UNVERIFIED_PREFIX, Finding, Stage, Step, StepStatus, Verdict, proven_by_run
from wizard.plan import PLAN_KEYS, parse_value, whole
from wizard.registry import did_you_mean, step_of
from wizard.store import ActionState
from wizard.i18n import N_, Msg, joined
from wizard.common import lazy_re

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, published as tomli (a dependency there only)
    import tomli as tomllib

ANSWERS_VERSION = 1
"""The answers file format this bringup reads and writes (``version = 1``)."""

SCHEMA_PATH = ASSETS / "schema" / "answers.schema.json"

MAX_ANSWERS_BYTES = 1 << 20
"""An answers file is read only up to this size (1 MiB); a real one is a few kilobytes."""

MAX_ERRORS_SHOWN = 50
"""``answers check`` and ``auto`` print at most this many errors of a file, then "... and N more errors"."""

ON_FAILURE = ("stop", "continue")
TOP_KEYS = ("version", "on_failure", "plan", "confirm", "skip", "actions")


class AnswersError(Exception):
    """An answers file that cannot be used: unreadable, or invalid (``errors``, each naming its line)."""

    def __init__(self, source: str, errors: "list[AnswerError]") -> None:
        self.source = source
        self.errors = errors
        super().__init__("\n".join(e.format(source) for e in errors))


@dataclass(frozen=True)
class AnswerError:
    """One problem of an answers file: ``line`` and ``col`` are 1-based (0: not tied to a line)."""

    line: int
    col: int
    message: str

    def format(self, source: str) -> str:
        """``FILE:LINE:COL: error: MESSAGE`` (the compilers' form, so editors jump to it)."""
        where = f"{source}:{self.line}:" + (f"{self.col}:" if self.col else "") if self.line else f"{source}:"
        from wizard.i18n import tr

        return f"{where} error: {tr(self.message)}"


@dataclass(frozen=True)
class Answers:
    """A valid answers file: plan answers (validated values), step id -> note / reason, allowed action step
    ids (catalogue order is not required), and ``stop`` or ``continue``."""

    source: str
    plan: dict[str, Any] = field(default_factory=dict)
    confirm: dict[str, str] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] = ()
    on_failure: str = "stop"
    version: int = ANSWERS_VERSION

    def summary(self) -> str:
        """What the file holds, in counts (a :class:`~wizard.i18n.Msg`: shown in the reader's language)."""
        return Msg("{plan} plan answer(s), {confirm} confirmation(s), {skip} skip(s), {allow} action(s) allowed; "
                   "on_failure = {on_failure}", plan=len(self.plan), confirm=len(self.confirm), skip=len(self.skip),
                   allow=len(self.allow), on_failure=self.on_failure)


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The published schema (``assets/schema/answers.schema.json``)."""
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return json.load(fh)


# ------------------------------------------------------------------------------------------ where a key is

_SEG = r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|[A-Za-z0-9_-]+'
_DOTTED = rf"(?:{_SEG})(?:[ \t]*\.[ \t]*(?:{_SEG}))*"
_HEADER = lazy_re(rf"^[ \t]*\[[ \t]*({_DOTTED})[ \t]*\]")
_KEYLINE = lazy_re(rf"^[ \t]*({_DOTTED})[ \t]*=")
_AOT_HEADER = lazy_re(rf"^[ \t]*\[\[[ \t]*({_DOTTED})[ \t]*\]\]")
_INLINE_KEY = lazy_re(rf"[{{,][ \t]*({_DOTTED})[ \t]*=")


def _parts(dotted: str) -> tuple[str, ...]:
    out = []
    for seg in re.findall(_SEG, dotted):
        if seg.startswith('"'):
            try:
                seg = json.loads(seg)
            except ValueError:
                seg = seg[1:-1]
        elif seg.startswith("'"):
            seg = seg[1:-1]
        out.append(seg)
    return tuple(out)


class _Locator:
    """Where each key of a TOML text is defined (its line and column): tomllib returns values, not positions.
    It reads table headers and ``key =`` lines (bare, quoted and dotted keys), skipping multi-line strings."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.keys: dict[tuple[str, ...], tuple[int, int]] = {}
        table: tuple[str, ...] = ()
        in_string = ""
        for i, line in enumerate(self.lines, 1):
            if in_string:
                if line.count(in_string) % 2:
                    in_string = ""
                continue
            m = _AOT_HEADER.match(line) or _HEADER.match(line)  # [[skip]] (an array of tables) is placed too
            if m:
                table = _parts(m.group(1))
                self._add(table, i, m.start(1) + 1)
                continue
            m = _KEYLINE.match(line)
            if m:
                key = table + _parts(m.group(1))
                self._add(key, i, m.start(1) + 1)
                rest = line[m.end():]
                if rest.lstrip().startswith("{"):  # an inline table: its keys are placed at their own columns
                    base = m.end()
                    for k in _INLINE_KEY.finditer(rest):
                        self._add(key + _parts(k.group(1)), i, base + k.start(1) + 1)
                for quote in ('"""', "'''"):
                    if rest.count(quote) % 2:
                        in_string = quote
                        break

    def _add(self, path: tuple[str, ...], line: int, col: int) -> None:
        for n in range(1, len(path) + 1):
            self.keys.setdefault(path[:n], (line, col))

    def where(self, path: Sequence[str]) -> tuple[int, int]:
        """The line and column defining ``path`` (or its nearest enclosing key or table); (0, 0) when none."""
        path = tuple(path)
        for n in range(len(path), 0, -1):
            if path[:n] in self.keys:
                return self.keys[path[:n]]
        return (0, 0)

    def item(self, path: Sequence[str], value: str, nth: int = 1) -> tuple[int, int]:
        """The line and column of the ``nth`` string ``value`` in the array at ``path`` (else the array's key)."""
        line, col = self.where(path)
        found = 0
        for i in range(max(line, 1), len(self.lines) + 1):
            text = self.lines[i - 1]
            at = col if i == line else 0
            while True:
                hits = [h for h in (text.find(lit, at) for lit in (json.dumps(value), f"'{value}'")) if h >= 0]
                if not hits:
                    break
                found += 1
                if found == nth:
                    return i, min(hits) + 1
                at = min(hits) + 1
        return line, col

    def literal(self, path: Sequence[str], value: Any) -> tuple[int, int]:
        """The line and column of the first bare (not quoted) number or boolean ``value`` after the key at
        ``path`` (an array's item that is not a string); else the key's place."""
        line, col = self.where(path)
        word = (str(value).lower() if isinstance(value, bool) else repr(value) if isinstance(value, float)
                else str(value))
        pattern = re.compile(rf"(?<![\w.\"'+-]){re.escape(word)}(?![\w.\"'])")
        for i in range(max(line, 1), len(self.lines) + 1):
            text = self.lines[i - 1]
            eq = text.find("=", col) if i == line else -1
            m = pattern.search(text, eq + 1)
            if m:
                return i, m.start() + 1
        return line, col


# ------------------------------------------------------------------------------------------ reading

def _kind(mode: int) -> str:
    return ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def read_text(path: str | Path) -> str:
    """The text of an answers file (UTF-8, a byte-order mark dropped), at most :data:`MAX_ANSWERS_BYTES`. Only a
    regular file (or a symbolic link to one) is read: a FIFO, device, socket or directory is refused before it is
    read (it is opened non-blocking, so a FIFO with no writer never hangs it).

    Raises:
        AnswersError: it cannot be read, is not a regular file, is too large or is not UTF-8 text (errors about the
            whole file have no line; a decoding error names its line and column).
    """
    source = str(path)

    def whole(message: str) -> AnswersError:
        return AnswersError(source, [AnswerError(0, 0, message)])

    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise whole(f"{_kind(st.st_mode)}, not a regular file: give the answers file itself")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())  # what was opened (it may have been swapped since the stat)
            if not stat.S_ISREG(st.st_mode):
                raise whole(f"{_kind(st.st_mode)}, not a regular file: give the answers file itself")
            data = fh.read(MAX_ANSWERS_BYTES + 1)
    except OSError as exc:
        raise whole(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_ANSWERS_BYTES:
        raise AnswersError(source, [AnswerError(0, 0, f"more than {MAX_ANSWERS_BYTES:,} bytes: not an answers file")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise AnswersError(source, [AnswerError(line, col, "not UTF-8 text (TOML files are UTF-8)")]) from None
    return text[1:] if text.startswith("\ufeff") else text


def load_answers(path: str | Path, stages: Sequence[Stage]) -> Answers:
    """Read and validate an answers file against the schema, the catalogue ``stages`` and the plan keys.

    Raises:
        AnswersError: unreadable or invalid; ``errors`` lists every problem found, each with its line.
    """
    text = read_text(path)
    answers, errors = validate_text(text, stages, str(path))
    if errors or answers is None:
        raise AnswersError(str(path), errors)
    return answers


def _syntax_error(exc: Exception, text: str = "") -> AnswerError:
    msg = str(exc)
    line, col = getattr(exc, "lineno", None), getattr(exc, "colno", None)  # Python 3.14 has them
    m = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", msg)
    if m:
        line, col = line or int(m.group(1)), col or int(m.group(2))
        msg = msg[:m.start()]
    elif msg.endswith("(at end of document)"):
        msg = msg[: -len("(at end of document)")].rstrip()
        lines = text.split("\n")  # the end of the document: its last line, after its last character
        line, col = line or len(lines), col or len(lines[-1]) + 1
    return AnswerError(int(line or 0), int(col or 0), f"TOML syntax: {msg}")


_TYPE_WORD = {"string": N_("a string"), "integer": N_("an integer"), "number": N_("a number"),
              "boolean": N_("true or false"), "object": N_("a table"), "array": N_("an array")}


def _what(value: Any) -> str:
    """The value a file gave, in words: a :class:`Msg` (shown in the reader's language: walk 28 #14), the value as
    written."""
    if isinstance(value, bool):
        return Msg("the boolean {value}", value=str(value).lower())
    if isinstance(value, int):
        return Msg("the integer {value}", value=value)
    if isinstance(value, float):
        return Msg("the number {value}", value=repr(value))
    if isinstance(value, str):
        return Msg("the string {value}", value=json.dumps(value))
    if isinstance(value, dict):
        return Msg.plain(N_("a table"))
    if isinstance(value, list):
        return Msg.plain(N_("an array"))
    return f"a {type(value).__name__} ({value})"  # dates and times


def _label(path: Sequence[Any]) -> str:
    if not path:
        return Msg.plain(N_("the file"))
    if path[0] in ("confirm", "skip") and len(path) > 1:
        return f"[{path[0]}] {json.dumps(path[1])}"
    if path[0] == "plan" and len(path) > 1:
        return Msg("plan key {key}", key=path[1])
    return ".".join(str(p) for p in path)


def _schema_errors(doc: Mapping[str, Any], loc: _Locator) -> list[AnswerError]:
    """The schema's verdict on the document, each error said for a person and placed on its line."""
    import jsonschema  # type: ignore[import-untyped]  # it ships no type stubs

    out: list[AnswerError] = []
    validator = jsonschema.Draft202012Validator(schema())
    for e in validator.iter_errors(doc):
        path = tuple(e.path)
        where = loc.where([str(p) for p in path if not isinstance(p, int)])
        if path[:2] == ("actions", "allow") and len(path) == 3 and isinstance(e.instance, str):
            where = loc.item(("actions", "allow"), e.instance)
        elif path[:2] == ("actions", "allow") and len(path) == 3 and isinstance(e.instance, (bool, int, float)):
            where = loc.literal(("actions", "allow"), e.instance)
        if e.validator == "additionalProperties":
            known = list(e.schema.get("properties") or {})
            for k in e.instance:
                if k in known:
                    continue
                near = did_you_mean(str(k), known)
                hint = Msg(" (did you mean {near}?)", near=" or ".join(near)) if near else ""
                kw = loc.where([*map(str, path), str(k)])
                if not path:
                    if k in ("allow",):
                        hint = Msg(" (it belongs under [actions]: [actions] allow = [...])")
                    out.append(AnswerError(*kw, Msg("unknown key {key} at the top level{hint}; the keys are {keys}",
                                                    key=repr(k), hint=hint, keys=", ".join(TOP_KEYS))))
                elif path == ("plan",):
                    out.append(AnswerError(*kw, Msg("unknown plan key {key}{hint}", key=repr(k),
                                                    hint=hint or Msg("; `bringup plan` lists the keys"))))
                else:
                    out.append(AnswerError(*kw, Msg("unknown key {key} in [{table}]{hint}; its keys are {keys}",
                                                    key=repr(k), table=".".join(map(str, path)), hint=hint,
                                                    keys=", ".join(known))))
        elif e.validator == "type":
            want = e.validator_value if isinstance(e.validator_value, str) else "/".join(e.validator_value)
            msg: str = Msg("{label} takes {get}, not {what}", label=_label(path), get=Msg.plain(_TYPE_WORD[want]) if want in _TYPE_WORD else want, what=_what(e.instance))
            if path and path[0] in ("confirm", "skip") and len(path) == 2 and isinstance(e.instance, dict):
                msg = (Msg('[{table}] {step!r} is a table, not a note: quote step ids, e.g. "{step}.…" = "..." (a bare '
                           "dotted key makes nested tables)", table=path[0], step=path[1]) if path[0] == "confirm" else
                       Msg('[{table}] {step!r} is a table, not a reason: quote step ids, e.g. "{step}.…" = "..." (a bare '
                           "dotted key makes nested tables)", table=path[0], step=path[1]))
            elif path and path[0] in ("confirm", "skip") and len(path) == 2:
                msg = (Msg("{label} takes a string (the note), not {what}", label=_label(path), what=_what(e.instance))
                       if path[0] == "confirm" else
                       Msg("{label} takes a string (the reason), not {what}", label=_label(path), what=_what(e.instance)))
            elif want == "string" and isinstance(e.instance, (int, float)) and not isinstance(e.instance, bool):
                msg += (Msg(' (quote it: "{instance}")', instance=e.instance) if isinstance(path[-1], int) else Msg(' (quote it: {path} = "{instance}")', path=path[-1], instance=e.instance))
            elif want == "object" and isinstance(e.instance, list) and len(path) == 1 and path[0] in TOP_KEYS:
                msg += (Msg(' (write [{path}], not [[{path}]]: [[...]] makes an array of tables)', path=path[0]))
            out.append(AnswerError(*where, msg))
        elif e.validator == "const":
            out.append(AnswerError(*where, Msg("{label} must be {want} (this bringup reads answers files of version "
                                               "{version}), not {got}", label=_label(path), want=e.validator_value,
                                               version=ANSWERS_VERSION, got=_what(e.instance))))
        elif e.validator == "enum":
            out.append(AnswerError(*where, Msg("{label} must be one of {values}, not {got}", label=_label(path),
                                               values=", ".join(json.dumps(v) for v in e.validator_value),
                                               got=_what(e.instance))))
        elif e.validator == "required":
            missing = [k for k in e.validator_value if k not in e.instance]
            out.append(AnswerError(1, 1, Msg("missing {keys}: an answers file starts with `version = {version}`",
                                             keys=", ".join(missing), version=ANSWERS_VERSION)))
        elif e.validator in ("minLength", "pattern") and path[:1] == ("skip",):
            out.append(AnswerError(*where, Msg("{label}: a skip needs a reason (say why this step is not done on this "
                                               "node)", label=_label(path))))
        elif e.validator == "uniqueItems":
            seen: set[str] = set()
            for x in e.instance:
                if x in seen:
                    out.append(AnswerError(*loc.item(("actions", "allow"), str(x), nth=2),
                                           Msg("actions.allow lists {step} more than once", step=json.dumps(x))))
                seen.add(x)
        else:
            out.append(AnswerError(*where, f"{_label(path)}: {e.message}"))
    return out


_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_CHAR_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "backspace", 0x0a: "LF, a line break", 0x0c: "form feed",
               0x0d: "CR, a carriage return", 0x1b: "ESC, which starts terminal escape sequences", 0x7f: "DEL",
               0x85: "NEL, a line break", 0x9b: "CSI, which starts terminal escape sequences"}


def _refused_char(ch: str) -> bool:
    """A character a note or reason may not hold: C0 and C1 controls and DEL (a tab excepted), the line and
    paragraph separators, and the bidirectional overrides (they reorder what a terminal shows)."""
    return ch != "\t" and (unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI)


def _char_name(ch: str) -> str:
    name = _CHAR_NAMES.get(ord(ch)) or unicodedata.name(ch, "").lower()
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def _char_where(text: str, key: tuple[int, int], ch: str) -> tuple[int, int]:
    """Where ``ch`` is written in the value of the key at ``key`` (line, column): the character itself or its TOML
    escape (``\\e``, ``\\n``, ``\\u001b``, ...), the first after the key's ``=``; the key's place when not found."""
    line, col = key
    if not line:
        return key
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[:line - 1]) + max(col - 1, 0)
    eq = text.find("=", start)
    if eq < 0:
        return key
    short = {"\n": r"\n", "\r": r"\r", "\b": r"\b", "\f": r"\f", "\x1b": r"\e"}.get(ch)
    pattern = "|".join([re.escape(ch), rf"\\u{ord(ch):04x}", rf"\\U{ord(ch):08x}"]
                       + ([re.escape(short)] if short else []))
    m = re.compile(pattern, re.IGNORECASE).search(text, eq + 1)
    if m is None:
        return key
    at = m.start()
    return text.count("\n", 0, at) + 1, at - (text.rfind("\n", 0, at) + 1) + 1


def _no_step(sid: str, ids: Sequence[str], with_action: Sequence[str] | None = None) -> str:
    """Why ``sid`` is not a step id (of ``ids``), with the fix: an empty id, a finding id (and its step), a step id
    in other letter case, or the closest ids. ``with_action``: the ids of steps with actions (for ``allow``)."""
    if not sid.strip():
        return f"empty step id {json.dumps(sid)}: write a step's id (`bringup status` lists them)"
    owner = step_of(sid.strip())
    if owner is not None and owner != sid:
        fix = (f"; write {json.dumps(owner)}" if with_action is None or owner in with_action
               else f", which has no action to allow; steps with actions: {', '.join(with_action)}")
        return f"{json.dumps(sid)} is a finding id, not a step id: it is a finding of step {owner}{fix}"
    folded = [i for i in ids if i.lower() == sid.strip().lower()]
    if folded:  # Msg: shown in the reader's language (walk 28 #14: "[confirm] no step ... did you mean" in English)
        return (Msg("no action {sid} in the catalogue; did you mean {id}? (step ids are lower case)", sid=json.dumps(sid),
                    id=folded[0]) if with_action is not None else
                Msg("no step {sid} in the catalogue; did you mean {id}? (step ids are lower case)", sid=json.dumps(sid),
                    id=folded[0]))
    near = did_you_mean(sid, list(with_action) if with_action is not None else list(ids))
    head = (Msg("no action {sid} in the catalogue (actions are named by their step's id)", sid=json.dumps(sid))
            if with_action is not None else Msg("no step {sid} in the catalogue", sid=json.dumps(sid)))
    return head + (Msg("; did you mean {ids}?", ids=Msg(" or ".join("{i%d}" % k for k in range(len(near))),
                                                         **{f"i{k}": n for k, n in enumerate(near)})) if near else
                   Msg("; steps with actions: {ids}", ids=", ".join(with_action)) if with_action is not None else
                   Msg.plain("; `bringup status` lists the steps"))


def error_lines(exc: AnswersError, limit: int = MAX_ERRORS_SHOWN) -> list[str]:
    """The errors of ``exc`` as printed (``FILE:LINE:COL: error: ...``, or ``FILE: error: ...`` for an error about
    the whole file), at most ``limit`` of them, then ``... and N more errors``."""
    out = [e.format(exc.source) for e in exc.errors[:limit]]
    if len(exc.errors) > limit:
        rest = len(exc.errors) - limit
        from wizard.i18n import tr

        out.append(f"{exc.source}: " + tr(Msg("... and {n} more error", n=rest) if rest == 1 else Msg("... and {n} more errors", n=rest)))
    return out


def _typed(key: str, value: Any) -> bool:
    """The value has the TOML type the plan key takes (a whole float is an integer's too)."""
    t = PLAN_KEYS[key].type
    if isinstance(value, bool):
        return t is bool
    if t is int:
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if t is float:
        return isinstance(value, (int, float))
    return isinstance(value, t)


def validate_text(text: str, stages: Sequence[Stage], source: str = "answers") -> tuple[Answers | None, list[AnswerError]]:
    """Validate an answers file's text: TOML syntax, the schema, then step ids, action ids and plan values
    against ``stages`` and :data:`wizard.plan.PLAN_KEYS`. Returns (the answers or ``None``, the errors sorted by
    line); the answers are only returned when there is no error. Never raises for any text."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [_syntax_error(exc, text)]
    except RecursionError:  # arrays or inline tables nested thousands deep: no answers file is
        return None, [AnswerError(0, 0, "TOML nested too deeply to read (arrays or inline tables inside each other)")]
    loc = _Locator(text)
    errors = _schema_errors(doc, loc)
    steps = [s for st in stages for s in st.steps]
    by_id = {s.id: s for s in steps}
    plan: dict[str, Any] = {}
    raw_plan = doc.get("plan") if isinstance(doc.get("plan"), dict) else {}
    for k, v in (raw_plan or {}).items():
        if k in PLAN_KEYS and _typed(k, v):
            raw = str(v).lower() if isinstance(v, bool) else str(int(v) if PLAN_KEYS[k].type is int else v)
            try:
                plan[k] = parse_value(k, raw)
            except ValueError as exc:
                errors.append(AnswerError(*loc.where(("plan", k)), f"plan {exc}"))
    notes: dict[str, dict[str, str]] = {}
    for table in ("confirm", "skip"):
        got = doc.get(table) if isinstance(doc.get(table), dict) else {}
        notes[table] = {k: v for k, v in (got or {}).items() if isinstance(v, str)}
        for sid, note in list(notes[table].items()):
            if sid not in by_id:
                errors.append(AnswerError(*loc.where((table, sid)), f"[{table}] " + _no_step(sid, list(by_id))))
            bad = next((ch for ch in note if _refused_char(ch)), None)
            if bad is not None:
                what = "note" if table == "confirm" else "reason"
                errors.append(AnswerError(*_char_where(text, loc.where((table, sid)), bad),
                                          f"[{table}] {json.dumps(sid)}: the {what} holds a control character "
                                          f"{_char_name(bad)}; {what}s are one line of text"))
            notes[table][sid] = note.replace("\t", " ")  # a tab is allowed: it becomes a space
    for sid in notes["confirm"]:
        if sid in notes["skip"]:
            errors.append(AnswerError(*loc.where(("skip", sid)), Msg("step {step} is both confirmed and skipped: keep one",
                                                                     step=sid)))
        elif sid in by_id and proven_by_run(by_id[sid]):
            errors.append(AnswerError(*loc.where(("confirm", sid)),
                                      Msg("[confirm] {step}: this step is proven by its run, not by a note: allow its "
                                          "action ([actions] allow = [{step}]) or skip it with a reason",
                                          step=json.dumps(sid))))
    actions = doc.get("actions") if isinstance(doc.get("actions"), dict) else {}
    allow_raw = (actions or {}).get("allow")
    allow = [a for a in allow_raw if isinstance(a, str)] if isinstance(allow_raw, list) else []
    with_action = [s.id for s in steps if s.action is not None]
    for a in allow:
        where = loc.item(("actions", "allow"), a)
        if a not in by_id:
            errors.append(AnswerError(*where, "actions.allow: " + _no_step(a, list(by_id), with_action)))
        elif by_id[a].action is None:
            how = Msg("confirmed by hand") if by_id[a].manual or not is_checked(by_id[a]) else Msg("checked from probes")
            errors.append(AnswerError(*where, Msg("actions.allow: step {step} has no action to allow (it is {how}); steps "
                                                  "with actions: {steps}", step=a, how=how, steps=", ".join(with_action))))
        elif a in notes["skip"]:
            errors.append(AnswerError(*where, Msg("actions.allow: {step} is also skipped in [skip], so its action would "
                                                  "never run: keep one", step=a)))
    errors = sorted(dict.fromkeys(errors), key=lambda e: (e.line, e.col))  # each once (a value may break two rules)
    if errors:
        return None, errors
    return Answers(source, plan, notes["confirm"], notes["skip"], tuple(dict.fromkeys(allow)),
                   str(doc.get("on_failure", "stop")), int(doc["version"])), []


# ------------------------------------------------------------------------------------------ auto


@dataclass
class StepOutcome:
    """What :func:`run_auto` did on one step: its status afterwards and what was done (``detail``);
    ``failed``: the step failed or an allowed action could not start (``error``)."""

    index: int
    step: Step
    status: StepStatus
    detail: str = ""
    failed: bool = False
    error: str = ""


@dataclass
class AutoResult:
    """A walk: one outcome per step walked, where it stopped (``stopped_at``, ``None`` when it walked them all)
    and the steps it did not reach."""

    outcomes: list[StepOutcome]
    total: int
    stopped_at: str | None = None
    not_walked: list[str] = field(default_factory=list)

    @property
    def not_done(self) -> list[StepOutcome]:
        """Walked steps that are not done (pending, cpu-only, failed, interrupted), in catalogue order."""
        return [o for o in self.outcomes if not o.status.done]

    @property
    def exit_code(self) -> int:
        """``check``'s convention: 2 a step failed (or an allowed action could not start), 1 a step warned or
        is not done (pending: waiting for a person, an action not allowed, a check that could not tell), else 0."""
        if any(o.failed for o in self.outcomes) or self.stopped_at:
            return 2
        if any(o.status is StepStatus.WARNED or not o.status.done for o in self.outcomes) or self.not_walked:
            return 1
        return 0


def attribution(source: str) -> str:
    """Who a confirmation or skip made by ``auto`` is recorded as: the person running it, and the file."""
    return f"{act.current_user()} (answers file {source})"


def _why_not_done(b: Build, s: Step, answers: Answers) -> str:
    st = b.store.step_states().get(s.id)
    if st is not None and st.status is StepStatus.CPU_ONLY:
        return b.reason_shown(st)
    if st is not None and st.status is StepStatus.FAILED:
        return Msg("failed")
    if s.action is not None and s.id not in answers.allow:
        return Msg("its action is not in [actions] allow: run it (`bringup run`), allow it, or skip it with a reason")
    if s.manual and s.automated_by:
        return Msg("needs a person: {auto}'s run measures it; confirm it (the TUI's Confirm) once {auto} has passed, or "
                   "add it to [confirm]", auto=s.automated_by)
    if s.manual or (not is_checked(s) and s.action is None):
        return Msg("needs a person: do it, then confirm it (the TUI's Confirm), or add it to [confirm] or [skip]")
    if st is not None and st.verdict is Verdict.UNKNOWN:
        return Msg("its check could not tell (unknown): see `bringup report`; confirm or skip it with a note")
    return b.reason_shown(st) if st is not None and st.reason else Msg("not done")


async def run_auto(build: Build, host: Host, answers: Answers, *, snapshot: str = "",
                   say: Callable[[str], Any] = print) -> AutoResult:
    """Walk ``build`` headless with ``answers``, in catalogue order: set the plan, then for each step record its
    skip (never checked or run), or check it (consecutive steps are judged from one collection of probes, as
    ``check`` does, up to the next step whose action may run), run its action when ``[actions] allow`` lists it
    and the step is not done after its check (:meth:`Build.run_action`, its confirmation answered by the file;
    with ``snapshot`` the facts are another machine's, so the action is a dry run, as in the TUI), and apply
    its confirmation (never over a failed check). Confirmations and skips keep the file's note as their
    reason and are recorded as :func:`attribution`. ``say`` gets one progress line per step
    (``[12/80] driver.install: passed``) and indented details. Stops after the first failing step when
    ``on_failure`` is ``stop``.

    Raises:
        StoreError: the build is observed (another bringup holds it), or cannot be written.
    """
    from wizard.store import StoreError

    if build.observing:
        raise StoreError("another bringup holds this build: close it first (auto writes the build)")
    steps = build.steps()
    total = len(steps)
    user = attribution(answers.source)
    if answers.plan:
        build.set_plan(**answers.plan)  # every step it walks is checked again below, so none is left to name
    build.store.set_meta(answers_on_failure=answers.on_failure)  # what `answers export` writes back
    result = AutoResult([], total)
    checked: dict[str, list[Finding]] = {}
    plan_read: dict[str, dict[str, Any]] = {}  # the plan answers each checked step's rules read
    started = ""

    def operator_skipped(s: Step) -> bool:  # skipped by a person before (not by a check), and the file is silent
        st = build.store.step_states().get(s.id)
        return bool(st and st.status is StepStatus.SKIPPED and st.verdict is None and s.id not in answers.skip
                    and s.id not in answers.confirm and s.id not in answers.allow)

    def runs_action(s: Step) -> bool:
        return s.action is not None and s.id in answers.allow and s.id not in answers.skip

    for i, s in enumerate(steps, 1):
        outcome = StepOutcome(i, s, build.status(s.id))
        details: list[str] = []
        if s.id in answers.skip:
            build.skip(s.id, answers.skip[s.id], user=user)
            details.append(answers.skip[s.id])
        elif operator_skipped(s):
            prev = build.store.step_states()[s.id]
            details.append(Msg("skipped earlier by {user}: {reason} (kept)", user=prev.user, reason=prev.reason))
        else:
            if is_checked(s):
                if s.id not in checked:  # judge this step and the next ones up to the next action that may run
                    batch: list[Step] = []
                    for t in steps[i - 1:]:
                        if is_checked(t) and t.id not in answers.skip and not operator_skipped(t):
                            batch.append(t)
                        if runs_action(t):  # its action may change what the next steps' checks see
                            break
                    started = build.store.clock()
                    checked, outputs = await run_checks(host, batch, build.expectations())
                    plan_read.update(checked.plan_read)
                    build.remember_gpu_serials(outputs)
                build.record_findings(s.id, checked.pop(s.id), started, snapshot,
                                      plan_read=plan_read.get(s.id))
            if runs_action(s):
                status = build.status(s.id)
                if status in (StepStatus.PASSED, StepStatus.SKIPPED, StepStatus.CONFIRMED):
                    details.append(Msg("its action is not needed: the step is {status}", status=Msg.plain(status.value)))
                else:
                    await _run_allowed(build, host, s, answers, bool(snapshot), say, outcome, details)
            if s.id in answers.confirm:
                _apply_confirm(build, s, answers.confirm[s.id], user, details)
        st = build.store.step_states().get(s.id)
        outcome.status = st.status if st else StepStatus.PENDING
        if st is not None and st.status in (StepStatus.FAILED, StepStatus.INTERRUPTED):
            outcome.failed = True
        if not outcome.status.done and not outcome.failed and not details:
            details.append(_why_not_done(build, s, answers))
        verdict = (Msg(" ({verdict})", verdict=Msg.plain(st.verdict.value)) if (
            st and st.verdict in (Verdict.WARN, Verdict.UNKNOWN)
            and st.status in (StepStatus.PENDING, StepStatus.CPU_ONLY)) else "")
        outcome.detail = joined("; ", [d for d in details if d])
        # the machine's own "nothing here to verify" is not a person's skip (walk 29 #12: 已跳过 in Chinese)
        shown = N_("not applicable") if st is not None and st.not_applicable else outcome.status.value
        say(Msg("[{i}/{total}] {step}: {status}", i=i, total=total, step=s.id, status=Msg.plain(shown))
            + verdict + (Msg(" -- ") + outcome.detail if outcome.detail else ""))
        if outcome.failed:
            for f in [f for f in build.store.latest_check(s.id)[1] if f.verdict is Verdict.FAIL][:3]:
                say("    [FAIL] " + f.id + " " + f.message)
        result.outcomes.append(outcome)
        if outcome.failed and answers.on_failure == "stop":
            result.stopped_at = s.id
            result.not_walked = [t.id for t in steps[i:]]
            break
    return result


async def _run_allowed(build: Build, host: Host, s: Step, answers: Answers, dry: bool, say: Callable[[str], Any],
                       outcome: StepOutcome, details: list[str]) -> None:
    """Run ``s``'s allowed action through :meth:`Build.run_action`; its confirmation is the file's."""
    def confirm(prep) -> bool:
        for line in prep.confirmation():
            say("    " + line)
        say("    " + (Msg("dry run: allowed by the answers file {file} ([actions] allow)", file=answers.source)
                      if prep.dry_run else Msg("allowed by the answers file {file} ([actions] allow)", file=answers.source)))
        return s.id in answers.allow

    out = await build.run_action(host, s.id, confirm=confirm, dry_run=True if dry else None)
    if out.prepared.refusal_kind == "done":  # already as the action would leave it
        details.append(Msg("nothing to run: {why}", why=out.prepared.refusal))
    elif out.prepared.refusal_kind == "manual":  # this machine needs it done by hand: a person, not a failure
        details.append(Msg("needs a person: its action is done by hand here: {why}", why=out.prepared.refusal))
    elif out.prepared.refusal:
        outcome.failed, outcome.error = True, out.prepared.refusal
        details.append(Msg("its action cannot run here: {why}", why=out.prepared.refusal))
    elif out.error:
        outcome.failed, outcome.error = True, out.error
        details.append(Msg("its action could not start: {why}", why=out.error))
    elif out.run is not None and out.run.state is ActionState.DRY_RUN:
        details.append(Msg("action dry run {run}: nothing was run", run=out.run.id)
                       + (Msg(" (--snapshot: these facts are another machine's)") if dry else ""))
    elif out.run is not None:
        details.append(Msg("action run {run} {outcome}, log {log}", run=out.run.id, outcome=build.run_outcome(out.run),
                           log=out.run.log_path))


def _apply_confirm(build: Build, s: Step, note: str, user: str, details: list[str]) -> None:
    st = build.store.step_states().get(s.id)
    if st is not None and (st.verdict is Verdict.FAIL or st.status is StepStatus.FAILED):
        details.append(Msg("not confirmed: it failed (fix it and check again, or skip it with a reason)"))
        return
    if st is not None and st.status in (StepStatus.PASSED, StepStatus.SKIPPED) and st.verdict is not None:
        details.append(Msg("its check passed: the confirmation is not needed") if st.status is StepStatus.PASSED
                       else Msg("its check found it not applicable: the confirmation is not needed"))
        return
    why = build.confirm_refusal(s.id, note)
    if why:
        details.append(Msg("not confirmed: {why}", why=why))
        return
    build.confirm(s.id, note, user=user)
    details.append(note)


def preview_auto(answers: Answers, stages: Sequence[Stage], build: Build | None = None, *,
                 snapshot: str = "") -> list[str]:
    """What :func:`run_auto` would do with ``answers``, step by step, without doing any of it (``bringup --dry-run
    auto``): the plan answers it would set (with the build's current values), then per step (catalogue order):
    skip with the reason, keep an earlier skip by a person, check, run the allowed action when the step is not done
    after its check (a dry run with ``snapshot``), confirm with the note (after the check; never over a failed one),
    or leave it waiting for a person. ``build``: the build it would walk (read only; ``None``: a new one). What the
    checks will find is not known before they run, so a step's outcome is not predicted. Writes nothing."""
    out: list[str] = []
    plan_now = build.plan() if build is not None else {}
    states = build.store.step_states() if build is not None else {}
    for k, v in answers.plan.items():
        now = plan_now.get(k)
        out.append(Msg("plan: set {key} = {value}", key=k, value=_toml_value(v))
                   + ("" if k not in plan_now else Msg(" (unchanged)") if now == v
                      else Msg(" (now {value})", value=_toml_value(now))))
    steps = [s for st in stages for s in st.steps]
    total = len(steps)
    for i, s in enumerate(steps, 1):
        st = states.get(s.id)
        todo: list[str] = []
        if s.id in answers.skip:
            todo.append(Msg("skip -- {reason}", reason=answers.skip[s.id]))
        elif (st is not None and st.status is StepStatus.SKIPPED and st.verdict is None
              and s.id not in answers.confirm and s.id not in answers.allow):
            todo.append(Msg("keep the skip by {user} -- {reason}", user=st.user, reason=st.reason))
        else:
            if is_checked(s):
                todo.append(Msg("check"))
            waits = _waits_for_plan(s, {**plan_now, **answers.plan}) if s.id in answers.allow else ""
            if waits:  # walk 48 #3: an allowed action that cannot start without a plan answer is not promised
                todo.append(Msg("leave it waiting for a person (its action cannot start: {why})", why=waits))
            elif s.action is not None and s.id in answers.allow:
                todo.append(Msg("run its action ({title})", title=Msg.plain(s.action.title))
                            + (Msg(" as a dry run (--snapshot)") if snapshot else "")
                            + (Msg(" when the step is not done after its check") if is_checked(s) else ""))
            if s.id in answers.confirm:
                todo.append((Msg("confirm -- {note}", note=answers.confirm[s.id]) if answers.confirm[s.id].strip()
                             else Msg("confirm (no note)"))
                            + (Msg(" (unless its check fails)") if is_checked(s) else ""))
            if not todo:  # not checked, no allowed action, not confirmed
                why = (Msg("its action is not in [actions] allow") if s.action is not None
                       else Msg("{auto}'s run measures it; it is recorded done by a confirmation: add it to [confirm] "
                                "(once {auto} has passed, no note is needed)", auto=s.automated_by)
                       if s.automated_by  # walk 30 #5: "needs a person" read as if no run proved it
                       else Msg("it needs a person and is not in [confirm] or [skip]"))
                todo.append(Msg("leave it {status} ({why})", why=why,
                                status=Msg.plain((st.status if st is not None else StepStatus.PENDING).value)))
        then: str = todo[0]
        for t in todo[1:]:
            then = then + Msg(", then ") + t
        out.append(Msg("[{i}/{total}] {step}: would {todo}", i=i, total=total, step=s.id, todo=then))
    return out


def _waits_for_plan(s: Step, plan: Mapping[str, Any]) -> str:
    """Why ``s``'s action cannot start with ``plan`` (""when it can, or when only the machine can tell): the action
    is resolved without the machine's facts, and only a refusal that names a plan answer (:attr:`Resolved.plan_key`:
    the multi-node runs without a ``hostfile``, or with one that cannot be read) is the run's own; anything that needs
    the facts is decided when it runs."""
    if s.action is None:
        return ""
    try:
        r = s.action.resolve(act.ActionContext({}, plan, ""))
    except Exception:  # noqa: BLE001 - a preview never fails for what only the run would meet
        return ""
    return r.manual if r.manual and r.plan_key and not r.done else ""


def print_auto_summary(result: AutoResult, answers: Answers, say: Callable[[str], Any] = print) -> None:
    """The end of an ``auto`` walk: counts by status, where it stopped, and every walked step not done, with why."""
    counts: dict[str, int] = {}
    for o in result.outcomes:
        counts[o.status.value] = counts.get(o.status.value, 0) + 1
    say("auto: " + Msg("{n} of {total} steps walked: {counts}", n=len(result.outcomes), total=result.total,
                       counts=joined(", ", [Msg("{n} {status}", n=n, status=Msg.plain(k))
                                             for k, n in sorted(counts.items(), key=lambda kv: -kv[1])])))
    if result.stopped_at:
        say(Msg("stopped at {step} (on_failure = \"stop\"): {n} step(s) after it were not walked",
                step=result.stopped_at, n=len(result.not_walked)))
    people = [o for o in result.not_done if o.detail.startswith("needs a person")]
    if people:
        say(Msg("waiting for a person ({n}): {steps}", n=len(people), steps=", ".join(o.step.id for o in people)))
        say("    " + Msg("do each, then confirm it in the TUI, or add it to [confirm] (with a note) or [skip] (with a "
                         "reason)"))
    others = [o for o in result.not_done if o not in people]
    if others:
        say(Msg("not done ({n}):", n=len(others)))
        for o in others:
            say("    " + Msg("{step}: {status}", step=o.step.id, status=Msg.plain(o.status.value))
                + (Msg(" -- ") + o.detail if o.detail else ""))


# ------------------------------------------------------------------------------------------ export


def _toml_str(s: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL is escaped too, as TOML requires)."""
    s = s.encode("utf-8", "replace").decode("utf-8")
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(whole(v))  # 105, not 105.0: as `bringup plan` shows it (walk 23)
    return _toml_str(str(v))


def build_answers(build: Build, on_failure: str = "stop") -> Answers:
    """A build's answers: its plan; the steps a person confirmed (with the note; a warned step whose warnings
    were accepted, with the acceptance's note); the steps a person skipped (with the reason; a step a check
    found not applicable is not one); and the steps whose action was run (not dry runs), unless the step was
    skipped later. A step about this one machine (:attr:`~wizard.model.Step.per_machine`: its serials, its hand-over)
    is left out unless a person skipped it (a reason such as "not at this station" is not this machine's)."""
    states = build.store.step_states()
    confirm: dict[str, str] = {}
    skip: dict[str, str] = {}
    for s in build.steps():
        st = states.get(s.id)
        if st is None:
            continue
        accepted = accepted_note(st.reason, st.user)
        if s.per_machine and st.status is not StepStatus.SKIPPED:  # this machine's serials or hand-over, not the next's
            continue
        if st.status is StepStatus.CONFIRMED:
            # the person's note, without the words bringup put before it (walk 28 #4: "confirmed by hand; the
            # machine's check could not tell here (unknown): ..." written into the file and replayed as the note)
            said = re.match(re.escape(UNVERIFIED_PREFIX) + r"[\w-]+\): ", st.reason)
            confirm[s.id] = st.reason[said.end():] if said else st.reason
        elif st.status is StepStatus.WARNED and accepted is not None:
            confirm[s.id] = accepted
        elif st.status is StepStatus.SKIPPED and st.verdict is None and st.reason.strip():
            skip[s.id] = st.reason
    confirm = {k: _one_line(v) for k, v in confirm.items()}
    skip = {k: _one_line(v) for k, v in skip.items()}
    ran = {r.step_id for r in build.store.action_runs() if r.state is not ActionState.DRY_RUN}
    allow = tuple(s.id for s in build.steps() if s.id in ran and s.action is not None and s.id not in skip)
    return Answers("", build.plan(), confirm, skip, allow, on_failure)


def _one_line(note: str) -> str:
    """A note as an answers file may hold it: line breaks and tabs become spaces, other control characters U+FFFD
    (a note typed before notes were checked may hold them)."""
    return "".join(" " if ch in "\t\n\r\x85\u2028\u2029" else "\ufffd" if _refused_char(ch) else ch for ch in note)


def write_answers(path: str | Path, text: str) -> None:
    """Write an answers file's ``text`` to ``path`` atomically (a temporary file in the same directory, renamed
    over it), mode 0644 for a new file (a replaced one keeps its mode). A path that exists and is not a regular file (a FIFO, device, directory,
    socket or symbolic link) is refused before anything is written (:func:`wizard.fileedit.refuse_non_regular`).

    Raises:
        OSError: the path is not a regular file (:class:`wizard.fileedit.NotRegularFileError`), or it cannot be
            written (the directory is not writable, the disk is full); nothing is left behind.
    """
    from wizard.fileedit import refuse_non_regular

    path = Path(path)
    refuse_non_regular(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o644)  # a replaced file keeps its mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def render_answers(answers: Answers, stages: Sequence[Stage], header: Iterable[str] = ()) -> str:
    """An answers file's text (TOML) that :func:`validate_text` accepts; ``header``: comment lines on top."""
    titles = {s.id: s.title for st in stages for s in st.steps}
    out = [f"# {line}" for line in header]
    out += [f"version = {ANSWERS_VERSION}",
            "# stop: auto stops at the first step that fails; continue: it walks every step",
            f"on_failure = {_toml_str(answers.on_failure)}", "", "[plan]"]
    out += [f"{k} = {_toml_value(v)}" for k, v in answers.plan.items()]
    for table, notes in (("confirm", answers.confirm), ("skip", answers.skip)):
        out += ["", f"[{table}]"]
        for sid, note in notes.items():
            out += [f"# {titles.get(sid, '')}", f"{_toml_str(sid)} = {_toml_str(note)}"]
    out += ["", "[actions]", "# only these actions run; each is recorded with its log, as every action is",
            "allow = [" + ", ".join(_toml_str(a) for a in answers.allow) + "]"]
    return "\n".join(out) + "\n"


def export_answers(build: Build, header: Iterable[str] = (), on_failure: str | None = None) -> str:
    """The answers file of ``build`` (:func:`build_answers` rendered by :func:`render_answers`), checked with
    :func:`validate_text` before it is returned. ``on_failure``: as given, else what the last ``auto`` walk of the
    build used, else ``stop``.

    Raises:
        ValueError: the text would not validate (a bug: the message lists why).
    """
    if on_failure is None:
        last = build.store.meta().get("answers_on_failure")
        on_failure = last if last in ("stop", "continue") else "stop"
    text = render_answers(build_answers(build, on_failure), build.stages, header)
    _, errors = validate_text(text, build.stages)
    if errors:
        raise ValueError("the exported answers do not validate: " + "; ".join(e.format("export") for e in errors))
    return text
