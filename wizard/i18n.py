"""One way to translate what an operator reads: gettext, with the catalogues in ``assets/locale``.

The catalogues ship as ``.po`` text (``assets/locale/<code>/LC_MESSAGES/bringup.po``) and are compiled in memory
the first time a language is used (Babel reads the ``.po``, writes the ``.mo`` into a buffer, gettext reads it),
once per process: there is no build step and nothing is written to disk.

Which language: ``--lang zh_CN|en`` (the CLI's global option, the TUI's too), else the locale's messages
variable (``LC_ALL``, then ``LC_MESSAGES``, then ``LANG``: the first one set decides, as POSIX says) starting with
``zh`` (``zh_CN.UTF-8``) means Chinese, else English. On the Linux console (``TERM=linux``, whose VGA font has no
CJK glyphs) Chinese falls back to English, and :func:`setup` returns the one line that says so.

What is translated is what a person reads; ids, JSON documents, verdict words in JSON, commands and evidence
lines never are. Strings are marked with ``_()`` where they are shown; data declared elsewhere (the catalogue's
stage and step titles, key bindings' words) is translated where it is displayed, with the English text as the
message id, so the stored data never changes.
"""

from __future__ import annotations

import errno
import functools
import gettext as _gettext
import io
import os
import re
import string
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

DOMAIN = "bringup"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "assets" / "locale"
LANGUAGES = ("en", "zh_CN")
"""The languages bringup speaks (``--lang``'s choices); ``en`` is the source text itself."""
CONSOLE_NOTICE = ("bringup: the Linux console (TERM=linux) has no Chinese font: falling back to English (for Chinese, "
                  "run bringup over SSH from a terminal with a CJK font)")
"""Said once (the CLI on stderr, the TUI as a notification) when Chinese was asked for on the Linux console."""

WIDE = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
"""CJK radicals and punctuation, kana, CJK ideographs, Hangul, compatibility ideographs and forms, full-width forms:
the ranges a line may break around (East Asian Wide/Fullwidth, UAX #11). Chinese sets a line break between any two
ideographs, inside a word too ("失|败"), and only punctuation is held back: W3C "Requirements for Chinese Text Layout"
(https://www.w3.org/TR/clreq/, §3.1 line breaking) and UAX #14 class ID."""

OPENING = "（「『【《〈“‘"
CLOSING = "，。、；：！？）」』】》〉”’,.;:!?)"
WIDE_CLOSING = "，。、；：！？）」』】》〉"
"""The full-width ones of :data:`CLOSING`: kept with the word before them whatever follows (walk 35 #6: "，`lspci -d"
started a line when a command followed the comma)."""
"""Punctuation that never starts (CLOSING) or ends (OPENING) a line (the kinsoku rule; UAX #14 classes CL and OP):
kept with the character it belongs to (ASCII ``,.;:!?)`` too, after a Chinese character: "5 个事件: ..."; after a
narrow character they are part of its run already)."""
UNITS = ("GB/s", "Gb/s", "GiB/s", "MB/s", "MiB/s", "GT/s", "BTU/h", "TFLOPS", "KiB", "MiB", "GiB", "TiB", "KB", "MB",
         "GB", "TB", "PB", "MHz", "GHz", "kW", "min", "ms", "µs", "us", "ns", "°C", "%", "B", "W", "s", "h", "UTC")
"""Units a number keeps on its line ("~112-126 GB", "5 s", "17:37 UTC", "3.412 BTU/h"): the number, one space and the
unit are one word (walk 19 saw "126" end a line and "GB" start the next); so are a number and the Chinese word it counts
("54 行日志", "3 个失败": the number with the first character)."""
NUMBER_UNIT = (rf"[(\[~≈<>≤≥=+-]*\d[\d.,:x×–-]*[ \u00a0](?:(?:{'|'.join(re.escape(u) for u in UNITS)})(?![\w/])"
               rf"|[{WIDE}](?=[{WIDE}]))")
PATH_MIN = 30
"""A path or URL of at least this many characters may break after a ``/`` (:func:`line_word`)."""


def path_part(longer_than: int = PATH_MIN - 1) -> str:
    """One directory of a path or URL (a run without spaces) of more than ``longer_than`` characters, with its slash:
    such a path breaks after a ``/`` at the edge of a line, not inside a name (walk 19: "0001-health.idl" /
    "e_baseline.log"), nor between a URL's scheme and its host; once a path breaks, each directory after is a part
    of its own (walk 20: a tail that fits a line left "docs.nvidia.com/" alone on one); a shorter one is one word. A
    long run of comma-separated items (mount options "rw,relatime,...,resuid=65534,resgid=65534") breaks after a comma
    the same way, not inside a number (walk 37 #11: "resuid=6553" / "4,resgid"). The screens pass their line's width: a path a line holds moves
    to the next line whole (:mod:`screens.linebreak`)."""
    return (rf"(?:(?=[^\s{WIDE}]{{{longer_than + 1},}})|(?<=[/,]))(?:[(\[<\"']?[A-Za-z][\w+.-]*://)?"
            rf"[^\s{WIDE}/,]*[/,]+")


def code_span(longest: int = 60) -> str:
    """:data:`CODE_SPAN` for commands of up to ``longest`` characters between the backticks (a screen passes its
    line's width: a longer command breaks between its words, never inside one; walk 35 #7: "multinode.con" /
    "sistency" in a 30-cell toast)."""
    return rf"[^\s{WIDE}`]*`[^`\s,.;:)][^`\n]{{0,{max(0, longest - 1)}}}(?<!\s)`[^\s{WIDE}`]*"


CODE_SPAN = code_span()
"""A command in backticks of up to 60 characters, with what is attached before and after it: text between a closing
backtick and the next opening one (which starts with a space or closing punctuation) is never taken for one."""


def line_word(path_longer_than: int = PATH_MIN - 1, code_longest: int = 60) -> str:
    r"""Where a line of text may break (the CLI and the screens wrap by it, :func:`wrap`): a command in backticks
    (:data:`CODE_SPAN`, ```apt-get install linux-headers-6.8.0` ``) as one word, so a command the operator copies is
    never split across lines; a number with its unit (:data:`NUMBER_UNIT`); a directory of a path longer than
    ``path_longer_than`` characters (:func:`path_part`); a bracketed status word (:data:`STATUS_TAG`); one wide
    character; or a run of other non-space characters;
    with the opening punctuation before it and the closing punctuation after it (where a space, the end or a wide
    character follows: the "." of "/root/.pyenv" starts the next name, walk 32 #17). Text without backticks, wide
    characters, numbers before a unit, long paths or that punctuation splits as ``\S+``, Textual's and Rich's own
    word."""
    return (rf"[{OPENING}]*(?:{code_span(code_longest)}|{STATUS_TAG}|{LATIN_RUN}|{NUMBER_UNIT}|{path_part(path_longer_than)}|"
            rf"[{WIDE}]|[^\s{WIDE}]+)(?:[{CLOSING}]*[{WIDE_CLOSING}]+|[{CLOSING}]+(?=\s|$|[{WIDE}]))?")


LATIN_RUN = (rf"(?:(?<=[{WIDE}])|(?<=[{WIDE}] )|^)(?=[^{WIDE}\n]{{3,{24}}}\s?[{WIDE}])"
             rf"[^\s{WIDE}]+(?: [^\s{WIDE}]+){{1,3}}(?=\s?[{WIDE}])")
"""A short run of narrow words (up to 24 characters, two to four words) set between Chinese text: one word, so a line
never breaks inside it (walk 46 #4: "（ssh" / "-F）", "DCGM >=" / "2.4", "例如 'H100" / "SXM5'", "计算能力 <" / "7.5）").
Chinese typesetting keeps an embedded Western phrase together where it can (W3C "Requirements for Chinese Text
Layout", https://www.w3.org/TR/clreq/, §3.2 mixed text); text without wide characters never matches (the English
screens wrap as before)."""


STATUS_TAG = r"\[[^\s\[\]]{1,8}\]"
"""A status word in square brackets (``[不足]``, ``[SHORT]``): one word, never split between its characters (walk 29
#10: "…都不够  [不" / "足]" at the sizing screen's edge)."""


LINE_WORD = line_word()
""":func:`line_word` with paths of :data:`PATH_MIN` characters or more breaking after a ``/`` (Textual's and Rich's
chunks on the screens, :mod:`screens.linebreak`: a longer command in backticks splits at its spaces as text)."""
WRAP_WORD = line_word(code_longest=400)
""":func:`wrap`'s word: a command in backticks up to 400 characters is one word, which :func:`wrap` breaks at its
spaces only when no line holds it (walk 45 #3: a --query-gpu=a,b,c list broken after a comma, so the pasted command
had two arguments)."""


def _chop(s: str, n: int) -> list[str]:
    """``s`` in pieces of ``n`` characters (ASCII: one cell each)."""
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def wrap(text: str, width: int, first: str = "", indent: int = 0, fold: bool = False) -> list[str]:
    """``first + text`` in lines of at most ``width`` terminal cells (:func:`rich.cells.cell_len`: a Chinese character
    takes two), broken between the words of :data:`WRAP_WORD` (a space between words is one space; a line never
    starts with one), continuation lines indented by ``indent`` spaces. A long path moves whole
    to the next line when a line holds it (:func:`path_part`). When ``fold`` (a screen's fixed rows, the CLI's text:
    no line past the terminal) a longer path breaks after a ``/`` and a word longer than the room is cut at the
    width; else either is left whole on its own line (argparse's help)."""
    cell_len: Callable[[str], int] = len  # one cell a character: no import (``bringup --version`` formats help)
    chop_cells: Callable[[str, int], list[str]] = _chop
    if not (first + text).isascii():
        from rich import cells

        cell_len, chop_cells = cells.cell_len, cells.chop_cells

    words: list[list[str]] = []  # a path's directories with its last part are one entry; a space run is [" " x n]
    room = max(1, width - indent)
    toks: list[str] = []
    for tok in re.findall(rf"\s+|{WRAP_WORD}", text):
        # a command span kept together (`sudo systemctl enable --now nvidia-persistenced.service`) that no line holds
        # breaks between its words, not at the width inside one (walk 31 #8)
        toks.extend(re.findall(r"\s+|\S+", tok) if " " in tok.strip() and cell_len(tok) > room else [tok])
    for tok in toks:
        if tok.isspace():
            words.append([] if "\n" in tok else [" " * len(tok)])  # a line break in the text is one space
        elif words and words[-1] and words[-1][-1].endswith("/") and not re.search(rf"[\s{WIDE}]",
                                                                                 tok.rstrip(CLOSING)):
            # a path's last part with the punctuation that closes it ("capture.tar.gz："): still the path's
            words[-1].append(tok)
        else:
            words.append([tok])
    lines: list[str] = []
    line, used = first, cell_len(first)

    def new_line(pad: int = indent) -> None:
        nonlocal line, used
        lines.append(line.rstrip())
        line, used = " " * pad, pad

    for parts in words:
        if not parts or parts[0].isspace():  # spaces between words kept as typed ("Title  (id)"), one at a break
            gap = parts[0] if parts else " "
            if used + len(gap) <= width and line.strip():
                line, used = line + gap, used + len(gap)
            continue
        whole = "".join(parts)
        if used + cell_len(whole) > width and line.strip() and line != first and cell_len(whole) <= width:
            # a path a line holds moves whole, with a smaller indent where the usual one leaves too little room (walk
            # 42: a capture's path broken after a "/" for want of one column)
            new_line(min(indent, width - cell_len(whole)))
        for tok in parts if fold and used + cell_len(whole) > width else [whole]:
            w = cell_len(tok)
            if used + w > width and line.strip() and (line != first or used >= width):
                new_line()  # a ``first`` that fills its line keeps it whole; what follows starts the next
            while fold and used + w > width:  # longer than a line: filled to the width, the rest on the next
                head = chop_cells(tok, max(1, width - used))[0]
                # after the last separator of an option's value (",", "=", ":", ";", "|", "&") in the line's last
                # two thirds, not inside a name ("ecc.e" / "rrors": walk 31 #8)
                cut = max(head.rfind(c) for c in ",=:;|&") + 1
                if cut > len(head) // 3 and cut < len(tok):
                    head = head[:cut]
                line, tok = line + head, tok[len(head):]
                new_line()
                w = cell_len(tok)
            line, used = line + tok, used + w
    lines.append(line.rstrip())
    return lines


_current = "en"


@functools.lru_cache(maxsize=None)
def translations(code: str) -> _gettext.NullTranslations:
    """The compiled catalogue of language ``code`` (one of :data:`LANGUAGES`), built once per process.

    ``en`` (or a code with no catalogue) gives gettext's pass-through ``NullTranslations``. Entries that are
    fuzzy or have an empty msgstr are left out (their English is shown). Raises ``OSError`` or Babel's
    ``PoFileError`` only when a shipped catalogue exists but cannot be read (a broken installation)."""
    path = LOCALE_DIR / code / "LC_MESSAGES" / f"{DOMAIN}.po"
    if code == "en" or not path.is_file():
        return _gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        catalog = read_po(f, locale=code, abort_invalid=True)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return _gettext.GNUTranslations(buf)


def set_language(code: str) -> None:
    """Use language ``code`` from now on in this process. Raises ``ValueError`` for a code not in
    :data:`LANGUAGES`."""
    global _current
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {code!r}: choose one of {', '.join(LANGUAGES)}")
    translations(code)  # compile it now, so a broken catalogue shows at start, not mid-screen
    _current = code


def current_language() -> str:
    """The language in use (one of :data:`LANGUAGES`)."""
    return _current


def language_from_env(environ: Mapping[str, str] | None = None) -> str:
    """``zh_CN`` when the locale's messages variable (``LC_ALL``, ``LC_MESSAGES``, ``LANG``: the first one set)
    starts with ``zh``, else ``en``."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var, "")
        if value:
            return "zh_CN" if value.lower().startswith("zh") else "en"
    return "en"


def choose_language(flag: str | None = None, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The language to use and the notice to give (``""`` for none): ``flag`` (``--lang``) if given, else the
    locale's (:func:`language_from_env`); Chinese on ``TERM=linux`` becomes English with :data:`CONSOLE_NOTICE`."""
    env = os.environ if environ is None else environ
    wanted = flag or language_from_env(env)
    if wanted != "en" and env.get("TERM", "") == "linux":
        return "en", CONSOLE_NOTICE
    return wanted, ""


def setup(flag: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """Choose the language (:func:`choose_language`) and use it; returns the notice to show once (``""``)."""
    code, notice = choose_language(flag, environ)
    set_language(code)
    return notice


def tr_subject(prefix: str) -> str:
    """A finding's subject prefix (``"BMC power supplies: "``) in the current language where the catalogue has the
    subject; GPU names, bus ids, mounts and interfaces stay as they are."""
    if not prefix.endswith(": "):
        return prefix
    return subject_name(prefix[:-2]) + gettext(": ")  # the language's own colon (Chinese: full-width, no space after)


def subject_name(subject: str) -> str:
    """A finding's or a measurement's subject (``"rank 0 on node07"``, ``"2 GPUs: GPU 0 (...); GPU 2 (...)"``) in the
    current language where the catalogue has its words; GPU names, bus ids, node names, mounts and interfaces stay as
    they are (walk 28 #17: "rank 0 on vm" in a Chinese results table). Never raises."""
    m = re.match(r"(\d+) GPUs: (.+)$", subject)  # a group of GPUs ("2 GPUs: GPU 0 (...); GPU 2 (...)")
    if m:  # the list's joiner in the language too (walk 24 #12: "2 块 GPU：GPU 0 (0000:18:00.0); GPU 1 ...")
        gpus = re.sub(r"(?<=\)); (?=GPU \d)|(?<=GPU \d); (?=GPU \d)|(?<=GPU \d\d); (?=GPU \d)", gettext("; "),
                      m.group(2))
        return gpu_names(gettext(N_("{n} GPUs: {gpus}")).format(n=m.group(1), gpus=gpus))
    m = re.match(r"(\d+) nodes \((.+)\)$", subject)  # the nodes of a multi-node run (walk 24 #10: "12 nodes (...)")
    if m:
        return gettext(N_("{n} nodes ({nodes})")).format(n=m.group(1), nodes=names_listed(m.group(2).split(", ")))
    m = re.match(r"(rank \d+|GPU \d+(?: \([^()]*\))?) on (\S+)$", subject)  # a rank or GPU of a node (walk 23)
    if m:
        return gpu_names(gettext(N_("{who} on {node}")).format(who=m.group(1), node=m.group(2)))
    return gpu_names(gettext(subject))


def gettext(message: str) -> str:
    """``message`` in the current language (itself when untranslated)."""
    return translations(_current).gettext(message)


_OS_ERRORS = {errno.ENOENT: "No such file or directory", errno.EACCES: "Permission denied",
              errno.EISDIR: "Is a directory", errno.ENOTDIR: "Not a directory",
              errno.ELOOP: "Too many levels of symbolic links", errno.ENAMETOOLONG: "File name too long",
              errno.EROFS: "Read-only file system", errno.ENOSPC: "No space left on device",
              errno.EIO: "Input/output error"}
"""The errno texts an operator meets reading or writing a file (errno(3) / strerror on Linux), kept so that a
message shows them in the reader's language; any other errno shows the system's own text."""


def os_error(exc: BaseException) -> str:
    """Why an ``OSError`` happened, as a message shown in the reader's language (a :class:`Msg` for the errno texts
    of :data:`_OS_ERRORS`, else the system's own text). Never raises."""
    no = getattr(exc, "errno", None)
    if isinstance(no, int) and no in _OS_ERRORS:
        return Msg.plain(_OS_ERRORS[no])
    return str(getattr(exc, "strerror", None) or exc)


def names_listed(items: Iterable[str]) -> str:
    """Names in a list (tools, commands, probes) joined the reader's way now: ", " in English, "、" in Chinese (walk
    28 #17: "未安装的工具：lspci, nvidia-smi, rpm"). :func:`names` is the same list kept for later showing."""
    return tr(names(items))


def names(items: Iterable[str]) -> str:
    """Names in a list (tools, commands, probes, files) as a :class:`Msg` (a plain string for fewer than two): its
    English is ``", ".join(items)``, and :func:`tr` shows it with the reader's list mark ("、" in Chinese) (walk 28
    #17: the commands ``explain`` suggests, "`nvidia-smi`, `dmesg`"). Each name stays as written."""
    items = list(items)
    if len(items) < 2:
        return items[0] if items else ""
    out: str = items[-1]
    for name in reversed(items[:-1]):
        out = Msg(N_("{name}, {names}"), name=name, names=out)
    return out


def joined(sep: str, items: Iterable[str]) -> str:
    """``sep.join(items)`` that keeps each :class:`Msg` item a piece of its own (shown translated); a plain
    ``str.join`` would turn the clauses into one English string. A joiner of :data:`_JOINERS` ("; ", ", ", ": ")
    between two or more items is a piece too, shown in the operator's language ("；"), the items as they are (walk 24
    #12: "GPU 0 18/18 Up; GPU 1 18/18 Up" in a Chinese line)."""
    parts = list(items)
    if sep in _JOINERS and len(parts) > 1:
        out: str = Msg._joined(Msg._parts_of(parts[0]) or ((None, ""),))
        for item in parts[1:]:
            out = out + sep + item
        return out
    out = ""
    for i, item in enumerate(parts):
        out = item if i == 0 else out + sep + item
    return out


class _Joiner(str):
    """A joiner whose ``join`` is :func:`joined`: ``SEMICOLON.join(items)`` reads as ``"; ".join(items)`` and keeps the
    pieces (the "; " shown as "；" in Chinese)."""

    def join(self, items: Iterable[str]) -> str:
        return joined(str.__str__(self), items)


SEMICOLON = _Joiner("; ")
"""``SEMICOLON.join(items)``: a rule's list of bringup's items ("GPU 0 18/18 Up; GPU 1 18/18 Up"), the "; " between
them in the operator's language (walk 24 #12)."""


def spaced(text: str) -> str:
    """``text`` after a space, as a clause follows the words before it in English ("8 steps done (1 warned)"); a
    translation that opens with a wide character (Chinese "（1 个有警告）") follows with none, as Chinese writes it."""
    return text if text[:1] and "\u2e80" <= text[0] <= "\uffef" else " " + text


def label(text: str) -> str:
    """``text``, a label that ends in a colon ("Result:"), ready for the value after it: a space after an ASCII
    colon, none after a full-width one ("结果：✓"), as Chinese writes it."""
    return text if text[-1:] and "\u2e80" <= text[-1] <= "\uffef" else text + " "


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of ``singular``/``plural`` for ``n`` in the current language (Chinese has one form)."""
    return translations(_current).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 - gettext's conventional name for "mark only"
    """Mark ``message`` for translation without translating it (data declared before a language is chosen)."""
    return message


_ = gettext


_PLAIN_ARG = (str, int, float, bool)


class Msg(str):
    """A sentence built from a template, that can be shown in another language later.

    ``Msg("{n} of {total} GPUs answered", n=7, total=8)`` *is* the English string ("7 of 8 GPUs answered": every
    place that takes a ``str`` takes it: JSON, the report, comparisons) and keeps its ``template`` and ``args``, so
    :func:`tr` can format the translated template with the same values when a screen shows it. The rules build
    findings' messages and remedies this way; the store keeps the template and arguments beside the English text
    (:meth:`to_json`/:meth:`from_json`), so a check judged in one language is shown in the other.

    Concatenating keeps the pieces: ``Msg(...) + "; " + Msg(...)`` (either side a ``Msg``) is a ``Msg`` whose
    ``parts`` are the pieces in order, each a ``(template, args)`` or a plain string (``(None, text)``); :func:`tr`
    translates the pieces one by one. A plain ``Msg`` has one part.

    Arguments that are not ``str``/``int``/``float``/``bool`` are kept as their ``str()`` (after the English is
    formatted from the originals). Raises ``KeyError``/``IndexError``/``ValueError`` as ``str.format`` does when the
    template and arguments do not fit (a programming error, caught by the tests).
    """

    template: str
    args: dict[str, Any]
    parts: tuple[tuple[str | None, Any], ...]

    def __new__(cls, template: str, /, **args: Any) -> "Msg":
        self = super().__new__(cls, template.format(**args))
        self.template = template
        self.args = {k: (v if isinstance(v, _PLAIN_ARG) else str(v)) for k, v in args.items()}
        self.parts = ((template, self.args),)
        return self

    @classmethod
    def _joined(cls, parts: tuple[tuple[str | None, Any], ...]) -> "Msg":
        """A Msg of several pieces (see the class docstring); its English is the pieces' English in order."""
        english = "".join(t.format(**a) if t is not None else a for t, a in parts)
        self = str.__new__(cls, english)
        self.parts = parts
        first, first_args = parts[0] if len(parts) == 1 and parts[0][0] is not None else ("", {})
        self.template, self.args = first or "", first_args  # "or": for the type checker (first is a str here)
        return self

    @classmethod
    def plain(cls, text: str) -> "Msg":
        """A constant message id (a step's title, an action's description) as a Msg of one plain piece: shown
        translated where the catalogue has it, never formatted (braces in it are kept)."""
        return cls._joined(((None, str.__str__(text)),)) if text else cls("")

    @staticmethod
    def _parts_of(text: str) -> tuple[tuple[str | None, Any], ...]:
        if isinstance(text, Msg):
            return text.parts
        return ((None, str.__str__(text)),) if text else ()

    def __add__(self, other: str) -> "Msg":
        if not isinstance(other, str):
            return NotImplemented
        return Msg._joined(self.parts + Msg._parts_of(other))

    def __radd__(self, other: str) -> "Msg":
        if not isinstance(other, str):
            return NotImplemented
        return Msg._joined(Msg._parts_of(other) + self.parts)

    def strip(self, chars: str | None = None) -> str:
        """``str.strip``, keeping the Msg when there is nothing to strip (a ``str`` method returns a plain ``str``)."""
        out = str.strip(self, chars)
        return self if out == str.__str__(self) else out

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return _msg_from_json, (str.__str__(self), self.to_json())

    def to_json(self) -> Any:
        """``[template, args]`` for one piece, ``{"parts": [[template, args] or [null, text], ...]}`` for several:
        what the store keeps to rebuild it (:meth:`from_json`). An argument that is itself a Msg (a clause built
        elsewhere) is kept as ``{"$msg": [english, its to_json()]}``."""
        def enc(a: Any) -> Any:
            return {k: ({"$msg": [str.__str__(v), v.to_json()]} if isinstance(v, Msg) else v) for k, v in a.items()}

        if len(self.parts) == 1 and self.parts[0][0] is not None:
            return [self.template, enc(self.args)]
        return {"parts": [[t, enc(a) if t is not None else a] for t, a in self.parts]}

    @classmethod
    def from_json(cls, english: str, data: Any) -> str:
        """The stored ``english`` text as a :class:`Msg` again when ``data`` (:meth:`to_json`'s shape) formats to
        exactly that text; otherwise ``english`` itself (a plain string, or an entry from an older bringup)."""
        parts: list[tuple[str | None, Any]] = []
        if isinstance(data, list) and len(data) == 2:
            data = {"parts": [data]}
        if not isinstance(data, dict) or not isinstance(data.get("parts"), list) or not data["parts"]:
            return english
        for p in data["parts"]:
            if not (isinstance(p, list) and len(p) == 2):
                return english
            if p[0] is None and isinstance(p[1], str):
                parts.append((None, p[1]))
            elif isinstance(p[0], str) and isinstance(p[1], dict):
                parts.append((p[0], {k: _decoded_arg(v) for k, v in p[1].items() if isinstance(k, str)}))
            else:
                return english
        try:
            m = cls._joined(tuple(parts))
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            return english
        return m if str.__str__(m) == english else english


def _decoded_arg(v: Any) -> Any:
    """A stored Msg argument: a nested ``{"$msg": [english, data]}`` becomes a Msg again (else its English)."""
    if isinstance(v, dict) and isinstance(v.get("$msg"), list) and len(v["$msg"]) == 2 and isinstance(v["$msg"][0], str):
        return Msg.from_json(v["$msg"][0], v["$msg"][1])
    return v


def _msg_from_json(english: str, data: Any) -> str:
    """Unpickling a :class:`Msg` (it crosses process boundaries: explain's judging child)."""
    return Msg.from_json(english, data)


def tr(text: str) -> str:
    """``text`` as the operator reads it in the current language: a :class:`Msg` formats its translated template
    with its arguments; any other string is looked up as a message id (itself when the catalogue lacks it).
    Never raises: a translated template that does not fit its arguments (a catalogue error) gives the English."""
    if _current == "en" or not text:
        return str(text)
    if isinstance(text, Msg):
        # pieces joined with an English space ("... as root. If it ...") lose it after Chinese punctuation
        return gpu_names(_AFTER_WIDE_PUNCT.sub(r"\1", "".join(_tr_part(t, a) for t, a in text.parts)))
    return gpu_names(gettext(text))


_GPU_SERIAL = re.compile(r"\bGPU((?: [\w.-]+)?) \(((?:[^()\n,]{1,40}, )?)serial ([^\s(),;]+)\)")
"""A GPU's name as findings give it (:func:`wizard.common.gpu_subject`: "GPU 3 (0000:9b:00.0, serial 1654922005923)",
"GPU (serial 12)")."""


def gpu_names(text: str) -> str:
    """``text`` with each GPU name in the current language: "serial" translated and the brackets and comma the
    language's ("GPU 3（0000:9b:00.0，序列号 1654922005923）"); the index, bus id and serial number stay as they are
    (walk 25: "serial" was the one English word in a Chinese GPU name; walk 39 #6: ASCII brackets around 序列号).
    Never raises."""
    if _current == "en" or "serial " not in text:
        return text
    word = gettext(N_("serial"))
    lb, rb, comma = gettext(N_("(")), gettext(N_(")")), gettext(", ")

    def name(m: re.Match[str]) -> str:
        bus = m.group(2)[:-2] + comma if m.group(2) else ""
        return f"GPU{m.group(1)}{lb}{bus}{word} {m.group(3)}{rb}"

    return _GPU_SERIAL.sub(name, text)


def tr_source(text: str) -> str:
    """A finding's or a sizing result's ``source`` (document titles, URLs and what they say) as the operator reads it:
    the whole text looked up as a message id, else each "; "-separated citation looked up on its own and joined with
    the language's own semicolon; an untranslated citation stays as written (titles and URLs are the documents' own).
    The stored and JSON ``source`` stays English (walk 25 #4: "来源：bringup's judgement: ..." in Chinese)."""
    if _current == "en" or not text:
        return str(text)
    if isinstance(text, Msg):  # a source built from parts (a datasheet row's name): its own pieces translated, the
        # citations of a plain piece each on their own (walk 37 #5a: "...h100/；DGX H100 user guide ...; NIST SP 811")
        return _AFTER_WIDE_PUNCT.sub(r"\1", "".join(_tr_part(t, a) if t is not None else _source_piece(a)
                                                   for t, a in text.parts))
    whole = gettext(str(text))
    if whole != text:
        return whole
    parts = citations(str(text))
    return text if len(parts) == 1 else gettext("; ").join(tr_source(p) for p in parts)


def _source_piece(text: str) -> str:
    """A plain piece of a source built as a :class:`Msg`: its leading joiner ("; ") in the language, then its
    citations as :func:`tr_source` shows them."""
    head = next((j for j in _JOINERS if text.startswith(j)), "")
    rest = text[len(head):]
    return (gettext(head) if head else "") + (tr_source(rest) if rest.strip() else rest)


def citations(source: str) -> list[str]:
    """``source`` split into its citations: at each "; " outside brackets (a citation's own "(...; https://...)"
    stays whole with it). Never raises."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(source):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and c == ";" and source.startswith("; ", i):
            parts.append(source[start:i])
            start = i + 2
    parts.append(source[start:])
    return parts


_AFTER_WIDE_PUNCT = re.compile(r"([\u3001\u3002\uff01\uff0c\uff1a\uff1b\uff1f\uff09\u300d\u300f\u3011]) +(?=\S)")
"""Spaces after full-width punctuation (、。！，：；？）」』】), which carries its own space in Chinese text."""


def _tr_part(template: str | None, args: Any) -> str:
    """One piece of a :class:`Msg` translated (a plain piece is looked up as a message id as it is). Its arguments:
    a Msg (a clause built elsewhere) is translated; a plain string with a space in it that is itself a message id (a
    constant message passed on as a clause, e.g. a wrapped finding's message) is looked up too; any other value is
    shown as it is (a number, a name, a path)."""
    if template is None:
        return _plain_piece(args) if args.strip() else args
    shown = {k: (tr(v) if isinstance(v, Msg) else _plain_piece(v, tail=False) if isinstance(v, str) and " " in v
                 else v) for k, v in args.items()}
    try:
        return _format_spaced(gettext(template), shown)
    except (KeyError, IndexError, ValueError, TypeError):  # a catalogue entry that does not fit: the English
        return template.format(**args)


_JOINERS = ("; ", ": ", ", ")
"""The separators bringup's code puts between the pieces of a message (``f"{subject}: " + ...``, ``"; " + figures``):
shown in the operator's language (Chinese "；", "：", "，") at a piece's start or end (walk 24 #12: "GPU 1 (...): 自驱动
加载以来", "全部 OK; 16890-17177 Gflop/s"); what is inside a piece (names, figures, a quoted line) stays as it is."""


def _plain_piece(text: str, tail: bool = True) -> str:
    """A plain piece of a :class:`Msg` (or a clause passed as an argument: ``why=f": {error}"``, ``tail=False``) in the
    current language: itself looked up as a message id, else its leading (and trailing) joiners (:data:`_JOINERS`)
    translated, what is between them kept."""
    shown = gettext(text)
    if shown != text or text in _JOINERS:
        return shown
    head = next((j for j in _JOINERS if text.startswith(j)), "")
    end = next((j for j in _JOINERS[:2] if tail and text.endswith(j) and len(text) > len(head) + len(j)), "")

    if not head and not end:
        return text
    return (gettext(head) if head else "") + text[len(head):len(text) - len(end)] + (gettext(end) if end else "")


_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_END = re.compile(r"[A-Za-z0-9)\]%]")
"""What a value may end with to be spaced from a Chinese character after it (a closing bracket, a percent sign)."""
_LATIN_START = re.compile(r"[A-Za-z0-9(\[]")
"""What a value may start with to be spaced from a Chinese character before it (an opening bracket)."""


def _format_spaced(template: str, values: Mapping[str, Any]) -> str:
    """``template.format(**values)``, with a space put between a Chinese character of the template and Latin letters
    or digits a value starts or ends with ("无法判断 nvidia-persistenced 的状态", not "无法判断nvidia-…"): the spacing
    between Han and Western text of the W3C's Requirements for Chinese Text Layout (clreq, 3.2.6), which a translator
    cannot write into a template whose value may be either. Raises what ``str.format`` raises when they do not fit."""
    out: list[str] = []
    fmt = string.Formatter()
    for literal, field, spec, conv in fmt.parse(template):
        if literal:
            if out and out[-1] and _LATIN_END.match(out[-1][-1]) and _HAN.match(literal[0]):
                out.append(" ")
            out.append(literal)
        if field is None:
            continue
        if field == "" or field.isdigit():
            raise IndexError(field)  # positional fields: not how a Msg's template is written
        value = fmt.convert_field(fmt.get_field(field, (), values)[0], conv)
        text = fmt.format_field(value, fmt.vformat(spec, (), values) if spec else "")
        if text and out and out[-1] and _HAN.match(out[-1][-1]) and _LATIN_START.match(text[0]):
            out.append(" ")
        out.append(text)
    return "".join(out)
