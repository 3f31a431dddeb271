"""The ``bringup`` command line.

    bringup                       the TUI (start or resume a build)
    bringup check [--json] [--stage ID] [--snapshot BUNDLE]
    bringup check --profile health [--timeout S] [--slurm]   the fast health profile (see cmd_check_profile)
    bringup status [--json]
    bringup capture -o node.tar.gz
    bringup plan [KEY=VALUE ...]
    bringup explain FILE... | -   judge pasted/saved outputs [--json]
    bringup run STEP [--yes]      run a step's action without the TUI
    bringup validate gpu|node|soak [--device auto|cuda|cpu] [--nproc N] [--minutes M] [--python PATH]
                                  [--json] [--verbose]   run a validation and judge it (see cmd_validate)
    bringup report [-o FILE] [--format html|md|json] [--snapshot BUNDLE... | --builds DIR...]
                                  the acceptance report (see cmd_report)
    bringup size --params 70e9 --method full --zero 3 --gpus 8 --gpu "H100 SXM5" [--json]
                                  the Plan & sizing screen's figures (see cmd_size)
    bringup answers check FILE | export [-o FILE]
                                  validate an answers file; write the build's (see cmd_answers)
    bringup auto --answers FILE [--build ID|new]
                                  an unattended build from an answers file (see cmd_auto)
    bringup --version

Global options: ``--state DIR``, ``--dry-run``, ``--snapshot BUNDLE``, ``--basic`` (a command's ``--help`` shows those
that apply to it: :data:`COMMANDS`, with its summary and exit statuses).
Exit status of ``check``: 0 all pass (or skips), 1 warn or unknown, 2 fail (NHC/GCM
convention; ``check --profile health``: 0 healthy, 2 unhealthy). Any command exits 3 when bringup itself cannot run (unwritable state dir,
corrupt build file, unreadable bundle), with the reason on stderr.

Imports are deferred so ``bringup --version`` starts in well under a quarter of a second.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import json
import math
import io
import os
import sys
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from wizard import __version__
from wizard.shellwrap import cells, shell_wrap
from wizard.i18n import (Msg, LANGUAGES, N_, _, current_language, names_listed, ngettext, os_error, spaced, tr, tr_source,
                         subject_name, tr_subject)

EXIT_ERROR = 3

EXIT_CONTRACT = N_("0 pass or only skips, 1 warn or unknown, 2 fail, 3 bringup itself could not run (the reason on "
                   "stderr)")
EXIT_CONTRACT_SHORT = N_("0 pass or only skips, 1 warn or unknown, 2 fail, 3 bringup itself could not run")
"""The exit statuses every command draws from (ARCHITECTURE.md, "The JSON contract"); the short form without the
parenthesis, for the help's "It never exits" sentence."""


@dataclass(frozen=True)
class CommandHelp:
    """One command's ``--help``: its one-line summary, the exit statuses it can return (status, what it means for
    this command) and which global options apply to it (``state``, ``dry_run``, ``snapshot``): its help shows only
    those; the others are still accepted, as before, and not shown (status, plan, run, ... refuse ``--snapshot``
    with their reason)."""

    summary: str
    exits: tuple[tuple[int, str], ...]
    options: tuple[str, ...] = ("state",)
    details: str = ""


_COULD_NOT_RUN = N_("bringup could not run (the reason on stderr)")
_STOPPED = (130, N_("you stopped following it (Ctrl-C); the run goes on (bringup status shows it)"))
COMMANDS: dict[str, CommandHelp] = {
    "check": CommandHelp(
        "run the checks on this machine (or a capture bundle) and print the findings",
        ((0, N_("every check passed or was not applicable (skip); --profile health: healthy")),
         (1, N_("a check warned or could not tell (unknown)")),
         (2, N_("a check failed; --profile health: unhealthy; --nodes: on any node")),
         (3, N_("bringup could not run: unknown stage or step, unreadable bundle, ... (the reason on stderr)"))),
        ("state", "snapshot")),
    "status": CommandHelp("where the current build stands: each stage and step with its status",
                          ((0, N_("shown (also when there is no build yet)")), (3, _COULD_NOT_RUN))),
    "capture": CommandHelp(
        "run every probe and write a capture bundle (.tar.gz: manifest.json, index.txt, the raw outputs)",
        ((0, N_("written")),
         (2, N_("--nodes or --hostfile: a node was unreachable or timed out (the others are written)")),
         (3, N_("nothing written (the reason on stderr)")))),
    "plan": CommandHelp("show or set the build's plan answers (KEY=VALUE)",
                        ((0, N_("shown or set")), (3, N_("a key or value refused, or the build could not be opened")))),
    "explain": CommandHelp(
        "judge saved or pasted outputs (nvidia-smi, dmesg, lspci, nccl-tests, ...)",
        ((0, N_("what was read passed (or only skips)")), (1, N_("a warning, or an output bringup could not judge")),
         (2, N_("a failure in what was read")), (3, N_("an input could not be read (the reason on stderr)"))), ()),
    "ack": CommandHelp("acknowledge a past event (an Xid, an AER error) with a reason, so it no longer counts; "
                       "without KEY, list the events acknowledged",
                       ((0, N_("acknowledged, or listed")), (3, N_("no such key, no --reason, or no build")))),
    "run": CommandHelp(
        "run a step's action: shows the exact commands and asks first (unless --yes)",
        ((0, N_("done (--dry-run: shown, nothing run; or nothing to do: already as it would leave it)")), (1, N_("not run (you said no), or its judge warned")),
         (2, N_("it failed, or its check did not verify it")),
         (3, N_("not started: unknown step, no action, refused here (the reason is printed), needs root, no terminal without --yes")), _STOPPED),
        ("state", "dry_run")),
    "validate": CommandHelp(
        "run a validation (one GPU, the node, a soak, a burn-in, several nodes) and judge it",
        ((0, N_("passed (or only skips); a run on the CPU asked for by name (--device cpu) passes the software path "
                "only: its step stays cpu-only, not done")),
         (1, N_("a warning or a result that could not be judged; a GPU run that fell back to the CPU (no GPU used)")),
         (2, N_("it failed")), (3, N_("not started (the reason on stderr)")), _STOPPED), ("state", "dry_run")),
    "size": CommandHelp(
        "GPU memory, GPU count, host RAM, NVMe and power for a workload (the Plan & sizing screen's figures)",
        ((0, N_("fits on these GPUs")), (1, N_("does not fit, or needs more GPUs than given")),
         (3, N_("an input is refused"))),
        details=N_("One computation (wizard/sizing.py) with the Plan & sizing screen: each option is one of its "
                   "fields; an option left out takes the field's default (or, with --from-build, the value the "
                   "screen stored with the build; --state applies only then).")),
    "report": CommandHelp(
        "write the acceptance report: inventory, every step and finding, validation figures, action runs",
        ((0, N_("written (the node's verdict is in the report; `check` is the gate)")), (3, N_("not written"))),
        details=N_("Write the acceptance report of the current build (or of capture bundles, offline). Without -o: a "
                   "build's report goes into its build directory, a bundle's to standard output. The report itself is "
                   "in English (a document handed to others), whatever --lang says.")),
    "answers": CommandHelp(
        "check an answers file, or export the build's as one",
        ((0, N_("check: valid; export: written")),
         (3, N_("check: invalid (each error as FILE:LINE:COL); export: no build or not writable"))),
        details=N_("Answers files drive unattended builds (`bringup auto`); README 'Unattended builds'.")),
    "auto": CommandHelp(
        "an unattended build from an answers file",
        ((0, N_("every step passed, was confirmed or skipped")), (1, N_("a step warned or is not done")),
         (2, N_("a step failed, or an allowed action could not start")),
         (3, N_("the answers file is invalid (nothing ran), or bringup could not run")),
         (130, N_("stopped (Ctrl-C): what it recorded is kept; a started action keeps running"))),
        ("state", "dry_run", "snapshot"),
        details=N_("Validate the answers file, then walk the build in catalogue order: plan, checks, confirmations "
                   "and skips from the file, the actions it allows.")),
}
"""Every ``bringup`` command's help: ``build_parser`` draws each command's summary, description and exit statuses
from here (tests hold every command to having them). The summaries, exit statuses' words and details are English,
translated where the help is built (:func:`_command`; the English is the message id)."""

ANSWERS_COMMANDS: dict[str, CommandHelp] = {
    "check": CommandHelp("validate an answers file offline",
                         ((0, N_("valid")), (3, N_("invalid (each error as FILE:LINE:COL) or unreadable"))), ()),
    "export": CommandHelp("write the build's answers (plan, confirmations, skips, actions run) for the next node",
                          ((0, N_("written")), (3, N_("no build, or not writable")))),
}


def exit_status_text(exits: tuple[tuple[int, str], ...]) -> str:
    """The ``exit status:`` part of a command's help: one row per status it returns, then the contract's statuses
    it never returns (help text for :class:`_HelpFormatter`)."""
    rows = "\n".join(f"  {code}\t{_(what)}" for code, what in exits)
    never = [str(c) for c in (0, 1, 2, 3) if c not in {code for code, _unused in exits}]
    tail = ("\n\n" + _("It never exits {statuses} (bringup's statuses: {contract}).").format(
        statuses=_(" or ").join(never), contract=_(EXIT_CONTRACT_SHORT)) if never else "")
    return _("exit status:") + f"\n{rows}{tail}"


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, with descriptions and epilogs in paragraphs (blank-line separated) that may end in a
    table: lines that start with spaces are kept line by line, a line ``"  TERM\\tTEXT"`` is a row whose TEXT is
    wrapped to the terminal under itself (one TEXT column for the whole text); other lines are filled to the
    terminal's width."""

    def _format_usage(self, usage: str | None, actions: Any, groups: Any, prefix: str | None) -> str:
        """argparse's usage, wrapped as if the prefix were as wide on screen as it is ("用法：" is 3 characters and 6
        cells: the line ran one cell past an 80-column terminal)."""
        import unicodedata

        shown = prefix if prefix is not None else argparse._("usage: ")  # type: ignore[attr-defined]  # what it prints
        extra = sum(1 for c in shown if unicodedata.east_asian_width(c) in "WF")  # a wide character: 2 cells, 1 char
        self._width -= extra
        try:
            text = super()._format_usage(usage, actions, groups, prefix)
        finally:
            self._width += extra
        if extra:  # continuation lines line up under the first line's words, which start ``extra`` cells further
            text = "\n".join(ln if i == 0 or not ln.startswith(" ") else " " * extra + ln
                              for i, ln in enumerate(text.split("\n")))
        return text

    def format_help(self) -> str:
        """argparse's help, a Chinese section heading ending in a full-width colon ("选项：") as the other headings
        do ("用法：", "退出状态：")."""
        import re

        return re.sub(r"(?m)^(\S[^\n]*[\u2e80-\u9fff\uff00-\uffef]):$", r"\1：", super().format_help())

    def _split_lines(self, text: str, width: int) -> list[str]:
        """An option's help wrapped to ``width`` terminal cells (argparse counts characters: a Chinese line ran to
        twice the width)."""
        from wizard.i18n import wrap

        return wrap(" ".join(text.split()), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        from wizard.i18n import wrap

        def fill(words: str, first: str, rest: str) -> str:  # widths in terminal cells (Chinese takes two)
            return "\n".join(wrap(words, max(width, len(rest) + 20), first, len(rest)))

        sections: list[list[list[str]]] = []  # a section: paragraphs from one with a head line to the next
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if not sections or (lines and not lines[0].startswith(" ")):
                sections.append([])
            sections[-1].append(lines)
        out = []
        for paras in sections:
            terms = [ln.split("\t", 1)[0] for lines in paras for ln in lines if ln.startswith(" ") and "\t" in ln]
            col = min(max((len(t) for t in terms), default=0) + 2, max(12, width * 2 // 5))
            out.extend(self._paragraphs(paras, col, indent, fill))
        return "\n\n".join(out)

    @staticmethod
    def _paragraphs(paras: list[list[str]], col: int, indent: str, fill: Callable[[str, str, str], str]) -> list[str]:
        out = []
        for lines in paras:
            head = list(itertools.takewhile(lambda ln: not ln.startswith(" "), lines))
            done = [fill(" ".join(" ".join(head).split()), indent, indent)] if head else []
            for ln in lines[len(head):]:
                term, tab, what = ln.partition("\t")
                if not tab:
                    done.append(indent + ln)
                    continue
                first = indent + (term.ljust(col) if len(term) + 2 <= col else term + "  ")
                done.append(fill(what, first, indent + " " * col))
            out.append("\n".join(done))
        return out

    def add_usage(self, usage: str | None, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)  # argparse's word, ours

    def _format_action(self, action: argparse.Action) -> str:
        text = super()._format_action(action)
        if isinstance(action, argparse._SubParsersAction):  # the commands themselves, without a COMMAND line atop
            text = text.split("\n", 1)[1]
        return text


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose epilog may be computed when help is shown (``lazy_epilog``), so that listing the
    catalogue's steps in ``run --help`` does not import the catalogue for every other command."""

    lazy_epilog: Callable[[], str] | None = None

    def format_help(self) -> str:
        if self.lazy_epilog is not None:
            self.epilog = "\n\n".join(e for e in (self.lazy_epilog(), self.epilog) if e)
            self.lazy_epilog = None
        return super().format_help()


def _common_options(applies: tuple[str, ...] = ("state", "dry_run", "snapshot", "basic"),
                    snapshot: bool = True) -> argparse.ArgumentParser:
    """The global options. Every command accepts them (before or after its name), as before; its help shows those in
    ``applies`` (the rest are hidden: ``--basic`` is the TUI's). ``report`` takes ``--snapshot`` with several bundles
    (``snapshot=False``). Their help is in the language in use."""
    return _common_options_in(current_language(), applies, snapshot)


@functools.lru_cache(maxsize=None)  # one parent per language and set of options shown: parents are only read
def _common_options_in(lang: str, applies: tuple[str, ...], snapshot: bool) -> argparse.ArgumentParser:
    """:func:`_common_options` in language ``lang`` (the current one: part of the cache's key)."""
    common = argparse.ArgumentParser(add_help=False)

    def shown(name: str, text: str) -> str:
        return text if name in applies else argparse.SUPPRESS

    common.add_argument("--state", metavar="DIR", default=argparse.SUPPRESS,
                        help=shown("state", _("state directory (default: /var/lib/bringup as root, else the user "
                                              "state dir)")))
    common.add_argument("--dry-run", action="store_true", default=argparse.SUPPRESS,
                        help=shown("dry_run", _("show what actions would run; run nothing that changes the system")))
    if snapshot:
        common.add_argument("--snapshot", metavar="BUNDLE", default=argparse.SUPPRESS,
                            help=shown("snapshot", _("analyse a capture bundle instead of this machine")))
    common.add_argument("--lang", choices=LANGUAGES, default=argparse.SUPPRESS,
                        help=_("the language of what is shown (default: from LC_ALL/LC_MESSAGES/LANG; zh_CN falls "
                               "back to English on the Linux console); --json output is always English")
                        if "json" in applies else
                        _("the language of what is shown (default: from LC_ALL/LC_MESSAGES/LANG; zh_CN falls "
                          "back to English on the Linux console)"))
    common.add_argument("--basic", action="store_true", default=argparse.SUPPRESS,
                        help=shown("basic", _("ANSI colours and ASCII glyphs (automatic on TERM=linux and serial "
                                              "consoles)")))
    return common


JSON_COMMANDS = ("check", "status", "explain", "size", "validate")
"""The commands with a ``--json`` output (JSON is always English)."""


def _command(sub: Any, name: str, ch: CommandHelp, parents: list[argparse.ArgumentParser] | None = None,
             snapshot: bool = True, has_json: bool | None = None) -> argparse.ArgumentParser:
    """One command's parser: its summary in the command list and atop its help, its details, its exit statuses."""
    summary = _(ch.summary)  # the one-line summary in the operator's language (the English one is its message id)
    desc = (summary[0].upper() + summary[1:] + ("。" if current_language() == "zh_CN" else ".")
            + (f"\n\n{_(ch.details)}" if ch.details else ""))
    # --lang's help names --json where the command has it (walk 37 #17: `validate` and `answers check` said so, and
    # `validate gpu`, which has it, did not)
    applies = ch.options + (("json",) if (name in JSON_COMMANDS if has_json is None else has_json) else ())
    return _argparse_words(sub.add_parser(name, parents=[_common_options(applies, snapshot), *(parents or [])],
                                          help=summary, description=desc, epilog=exit_status_text(ch.exits),
                                          formatter_class=_HelpFormatter))


def _argparse_words(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``p`` with argparse's own words in its help (its groups' headings, ``-h``'s and ``--version``'s help) in the
    language in use (argparse's English is the message id; the English help is unchanged)."""
    p._positionals.title = _("positional arguments")
    if p._optionals.title == "options":
        p._optionals.title = _("options")
    for a in p._actions:
        if isinstance(a, argparse._HelpAction):
            a.help = _("show this help message and exit")
        elif isinstance(a, argparse._VersionAction):
            a.help = _("show program's version number and exit")
    return p


def _plan_keys_text() -> str:
    """``plan --help``'s list of keys, from :data:`wizard.plan.PLAN_KEYS` (their help lines: one source)."""
    from wizard.plan import PLAN_KEYS

    return _("plan keys (KEY=VALUE; KEY= clears an answer; the TUI's plan form asks the same):") + "\n" + "\n".join(
        f"  {k.name}\t{_(k.help) if k.help else ''}" for k in PLAN_KEYS.values())


def _run_steps_text() -> str:
    """``run --help``'s list of the catalogue's steps that have an action (what STEP may be), by stage."""
    import steps

    parts = [_("STEP is one of these (the catalogue's steps with an action), by stage; the id of a finding `bringup check` "
                "printed (e.g. driver.persistenced) also works and means the step it belongs to:")]
    for st in steps.STAGES:
        rows = [f"    {s.id}\t{_(s.title)}" for s in st.steps if s.action is not None]
        if rows:
            parts.append(f"  {_(st.title)}\n" + "\n".join(rows))
    return "\n\n".join(parts)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="bringup", parents=[_common_options()], formatter_class=_HelpFormatter,
                description=_("Take a GPU server from bare metal to proven ready for LLM training.") + "\n\n"
                + _("With no command, bringup opens the TUI: the full-screen wizard that walks the build stage by stage "
                    "(its options are below). A command runs one part without the TUI; `bringup COMMAND --help` says "
                    "what it does, its options and its exit statuses."),
                epilog=_("exit status: {contract}; 130 stopped with Ctrl-C. Which a command returns (its --help says "
                         "what each means there):").format(contract=_(EXIT_CONTRACT)) + "\n\n"
                       + "\n".join(f"  {n}\t{' '.join(str(c) for c, _unused in ch.exits)}" for n, ch in COMMANDS.items()))
    p._optionals.title = _("options (the TUI's; --state, --dry-run, --snapshot also go before a command)")
    p.add_argument("--version", action="version", version=f"bringup {__version__}")
    _argparse_words(p)
    _tui_fleet_args(p)
    p.add_argument("--build", dest="tui_build", metavar="ID", help=_("the TUI opens this build, not the newest (the ids "
                                                                     "are the directories under STATE/builds)"))
    sub = p.add_subparsers(dest="command", title=_("commands (each runs without the TUI)"), metavar="COMMAND")
    c = _command(sub, "check", COMMANDS["check"])
    c.add_argument("--json", action="store_true", help=_("machine-readable output (schema in assets/schema)"))
    c.add_argument("--stage", metavar="ID", help=_("only this stage's checks (plan grounding bios os driver health ...)"))
    c.add_argument("--step", metavar="ID", help=_("only this step's checks (a step id, or a finding id: its step)"))
    _fleet_args(c)
    c.add_argument("--prometheus", metavar="FILE", help=_("also write the findings as Prometheus metrics for "
                     "node-exporter's textfile collector (FILE.prom, replaced atomically; wizard/metrics.py)"))
    _profile_args(c)
    s = _command(sub, "status", COMMANDS["status"])
    s.add_argument("--json", action="store_true", help=_("machine-readable output (assets/schema/status.schema.json)"))
    s.add_argument("--build", metavar="ID", help=_("this build (default: the newest; the ids are the directories "
                                                    "under STATE/builds)"))
    cap = _command(sub, "capture", COMMANDS["capture"])
    cap.add_argument("-o", "--output", required=True, metavar="FILE",
                     help=_("bundle to write (.tar.gz); with --nodes or --hostfile a directory: one NODE.tar.gz per node"))
    _fleet_args(cap)
    pl = _command(sub, "plan", COMMANDS["plan"])
    pl.add_argument("answers", nargs="*", metavar="KEY=VALUE", help=_("set these answers (the keys are listed below)"))
    pl.lazy_epilog = _plan_keys_text  # type: ignore[attr-defined]
    ex = _command(sub, "explain", COMMANDS["explain"])
    ex.add_argument("inputs", nargs="+", metavar="FILE", help=_("files to read; - reads standard input"))
    ex.add_argument("--json", action="store_true", help=_("machine-readable output (schema in assets/schema)"))
    ex.add_argument("--kind", help=_("skip detection: treat every input as this kind"))
    ak = _command(sub, "ack", COMMANDS["ack"])
    ak.add_argument("key", nargs="?", metavar="KEY", help=_("the finding's key, as `bringup check` prints it (\"key\" in --json)"))
    ak.add_argument("--reason", help=_("why it no longer counts (kept with the build)"))
    r = _command(sub, "run", COMMANDS["run"])
    r.add_argument("step", metavar="STEP", help=_("the step whose action runs (listed below)"))
    r.add_argument("--yes", action="store_true", help=_("do not ask for confirmation"))
    r.lazy_epilog = _run_steps_text  # type: ignore[attr-defined]
    vcommon = argparse.ArgumentParser(add_help=False)
    vcommon.add_argument("--device", choices=("auto", "cuda", "cpu"),
                         help=_("where to run (default: the plan's validate_device, else auto = cuda with a GPU)"))
    vcommon.add_argument("--python", metavar="PATH",
                         help=_("the Python with PyTorch that runs the script (default: the plan's torch_python)"))
    vcommon.add_argument("--json", action="store_true",
                         help=_("only the check-shaped JSON on stdout (progress goes to stderr)"))
    vcommon.add_argument("--verbose", action="store_true", help=_("print the raw log instead of one line per step"))
    vcommon.add_argument("--yes", action="store_true",
                         help=_("accepted for scripts; validation changes nothing, so it never asks"))
    vcommon.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)  # small sizes: tests, smoke runs
    v = _command(sub, "validate", COMMANDS["validate"], has_json=False)
    vsub = v.add_subparsers(dest="kind", metavar="KIND", required=True)
    for name, vc in VALIDATE_COMMANDS.items():
        kp = _command(vsub, name, dataclasses.replace(COMMANDS["validate"], summary=vc.help), [vcommon], has_json=True)
        vc.add_args(kp)
    sz = _command(sub, "size", COMMANDS["size"])
    for field_name, (flag, help_text) in SIZE_FLAGS.items():
        sz.add_argument(flag, dest=f"f_{field_name}", metavar="V", help=_(help_text))
    sz.add_argument("--from-build", action="store_true", help=_("start from the inputs the sizing screen stored with the build"))
    sz.add_argument("--json", action="store_true", help=_("machine-readable output (assets/schema/size.schema.json)"))
    rp = _command(sub, "report", COMMANDS["report"], snapshot=False)
    rp.add_argument("-o", "--output", metavar="FILE", help=_("where to write it (- for standard output)"))
    rp.add_argument("--format", choices=("html", "md", "json"),
                    help=_("html (default; .md and .json outputs pick their format), md (GitHub-flavoured), json "
                           "(assets/schema/report.schema.json)"))
    rp.add_argument("--snapshot", metavar="BUNDLE", nargs="+", default=argparse.SUPPRESS,
                    help=_("report on capture bundles instead of the build (several: one report of all the nodes)"))
    rp.add_argument("--builds", metavar="DIR", nargs="+",
                    help=_("report on these build directories (STATE/builds/<id>) together, one node per machine (its newest build)"))
    an = _command(sub, "answers", COMMANDS["answers"])
    ansub = an.add_subparsers(dest="answers_command", metavar="check|export", required=True)
    anc = _command(ansub, "check", ANSWERS_COMMANDS["check"], has_json=False)
    anc.add_argument("file", metavar="FILE", help=_("the answers file to validate (TOML)"))
    ane = _command(ansub, "export", ANSWERS_COMMANDS["export"])
    ane.add_argument("-o", "--output", metavar="FILE", help=_("where to write it (default: standard output)"))
    ane.add_argument("--build", metavar="ID", help=_("this build (default: the newest)"))
    au = _command(sub, "auto", COMMANDS["auto"])
    au.add_argument("--answers", required=True, metavar="FILE", help=_("the answers file (TOML; bringup answers check)"))
    au.add_argument("--build", metavar="ID|new", help=_("continue build ID, or start a new one (default: the newest, "
                      "or a new one when there is none)"))
    return p


SIZE_FLAGS: dict[str, tuple[str, str]] = {
    "params": ("--params", N_("parameter count: 7B, 70e9, 350M (default 7B)")),
    "method": ("--method", N_("pretrain | full | lora | qlora (default full)")),
    "lora": ("--lora", N_("LoRA rank (16) or fraction of the parameters (0.5%%)")),
    "precision": ("--precision", "bf16 | fp16 | fp32"),
    "optimizer": ("--optimizer", "adamw | adam8bit | sgd_momentum | sgd"),
    "accounting": ("--accounting", N_("zero (16 B/param, ZeRO paper) | hf (18 B, Hugging Face)")),
    "zero_stage": ("--zero", N_("ZeRO stage 0-3 (FSDP: FULL_SHARD = 3, SHARD_GRAD_OP = 2)")),
    "dp_degree": ("--dp", N_("data-parallel degree ZeRO shards over (default: GPUs / (TP x PP))")),
    "tp": ("--tp", N_("tensor-parallel degree (default 1)")),
    "pp": ("--pp", N_("pipeline-parallel degree (default 1)")),
    "sp": ("--sp", N_("sequence parallelism with TP: off | on")),
    "offload": ("--offload", N_("none | cpu (optimizer to CPU, ZeRO 1-3)")),
    "seq_len": ("--seq-len", N_("sequence length, tokens (default 4096)")),
    "micro_batch": ("--micro-batch", N_("micro-batch per GPU (default 1)")),
    "checkpointing": ("--checkpointing", N_("activation checkpointing: off | full")),
    "attention": ("--attention", "flash | standard"),
    "layers": ("--layers", N_("layers (default: from the model table, else estimated)")),
    "hidden": ("--hidden", N_("hidden size")),
    "heads": ("--heads", N_("attention heads")),
    "kv_heads": ("--kv-heads", N_("KV heads")),
    "largest_layer": ("--largest-layer", N_("parameters of the largest layer (DeepSpeed ZeRO-3 gathers it)")),
    "gpu": ("--gpu", N_("GPU model as in assets/gpu_specs.csv, e.g. 'H100 SXM5' (? lists them)")),
    "gpu_count": ("--gpus", N_("GPUs per node (default 8)")),
    "loader_gb_per_gpu": ("--loader-gb-per-gpu", N_("host RAM of one GPU's data loaders, GB")),
    "ckpt_loaders": ("--loading", N_("model loading: auto | all (full copy per rank) | one (rank 0 + broadcast) | "
                        "sharded (zero.Init / FSDP meta device) | streamed (shards to the GPU: from_pretrained with "
                        "device_map, bitsandbytes)")),
    "host_ram_gib": ("--host-ram-gib", N_("host RAM installed, GiB (compared with the counted minimum)")),
    "dataset_gb": ("--dataset-gb", N_("dataset size, GB")),
    "checkpoints_kept": ("--checkpoints-kept", N_("checkpoints kept on NVMe")),
    "cpu_w": ("--cpu-w", N_("CPU maximum power, W (all sockets)")),
    "other_w": ("--other-w", N_("memory, NICs, drives, fans maximum, W")),
    "psu_w": ("--psu-w", N_("PSU rating, W")),
    "system_max_w": ("--system-max-w", N_("the vendor's system maximum, W")),
}
"""``bringup size`` option -> the sizing form's field (wizard.sizing.FIELDS); tests hold the two lists equal. The help
texts are English, translated where the parser is built (a bare list of values is not marked: nothing to translate)."""


def _profile_args(p: argparse.ArgumentParser) -> None:
    """``check --profile health [--timeout S] [--slurm]`` (wizard/health.py, wizard/slurm.py)."""
    g = p.add_argument_group(_("health profile (Slurm HealthCheckProgram, prolog, epilog; README)"))
    g.add_argument("--profile", choices=("health",), help=_("only the fast checks that mean 'this node must not take "
                     "jobs' (driver, nvidia-smi, GPU count, Xid, ECC, row remapping, PCIe link, NVLink, Fabric Manager, "
                     "full disks), within --timeout; records nothing. Exit 0 healthy, 2 unhealthy, 3 bringup could "
                     "not run"))
    g.add_argument("--timeout", type=float, metavar="S", help=_("with --profile: the whole run's time limit in seconds "
                     "(default 10); a probe still running then is stopped and fails the check"))
    g.add_argument("--slurm", action="store_true", help=_("with --profile health: drain this Slurm node "
                     "(scontrol update State=DRAIN Reason='bringup: ...') when a check fails; resume it when none fails "
                     "and bringup drained it (an operator's drain is left alone). Node: $SLURMD_NODENAME, else "
                     "hostname -s"))


def _fleet_args(p: argparse.ArgumentParser) -> None:
    """``check`` and ``capture`` on many nodes at once over ssh (wizard/fleet.py)."""
    g = p.add_argument_group(_("many nodes over ssh"))
    g.add_argument("--nodes", metavar="NODESET", help=_("these nodes over ssh, e.g. 'gpu[001-016]' (ClusterShell nodeset "
                     "syntax; each name is its ssh target)"))
    g.add_argument("--hostfile", metavar="FILE", help=_("the nodes of a hostfile ('name ssh_target gpus' or 'host slots=N' "
                     "lines, as validate nodes reads it)"))
    g.add_argument("--ssh-config", metavar="FILE", help=_("ssh client config (-F) to reach the nodes"))
    g.add_argument("--fanout", type=int, metavar="N", help=_("nodes at once (default 32)"))
    g.add_argument("--node-timeout", type=float, metavar="S", help=_("seconds one node may take, login included "
                     "(default 600); past it the node is a fleet.timeout finding"))
    g.add_argument("--progress", action="store_true", help=_("progress on stderr even when it is not a terminal"))


TUI_FLEET_OPTIONS = ("nodes", "hostfile", "ssh_config", "fanout", "node_timeout")
"""The fleet options ``bringup`` (the TUI) takes before any command; read as ``tui_<name>``."""


def _tui_fleet_args(p: argparse.ArgumentParser) -> None:
    """``bringup --nodes NODESET`` (or ``--hostfile FILE``): the TUI opens on the fleet view of those nodes
    (screens/fleet.py); the options mean what they mean for ``check --nodes``."""
    g = p.add_argument_group(_("the TUI's fleet view (bringup --nodes NODESET)"))
    g.add_argument("--nodes", dest="tui_nodes", metavar="NODESET", help=_("open on the fleet view: check these nodes "
                     "over ssh, e.g. 'gpu[001-016]', and show the node x stage table"))
    g.add_argument("--hostfile", dest="tui_hostfile", metavar="FILE", help=_("the fleet view's nodes from a hostfile"))
    g.add_argument("--ssh-config", dest="tui_ssh_config", metavar="FILE", help=_("ssh client config (-F) to reach them"))
    g.add_argument("--fanout", dest="tui_fanout", type=int, metavar="N", help=_("nodes at once (default 32)"))
    g.add_argument("--node-timeout", dest="tui_node_timeout", type=float, metavar="S",
                   help=_("seconds one node may take, login included (default 600)"))


@dataclass(frozen=True)
class ValidateCommand:
    """One ``bringup validate NAME``: its help and options, and how they become plan answers for this run.
    Which step it runs is the catalogue's: the step whose action has ``ActionSpec.command == NAME``; how that
    run is judged is the step's (``ActionSpec.judge`` / ``ActionSpec.results``), as for the TUI. Adding a
    validation command is one :class:`~wizard.actions.ActionSpec` with a ``command`` (and an entry here for
    options of its own)."""

    help: str
    add_args: Callable[[argparse.ArgumentParser], None] = lambda p: None
    plan: Callable[[argparse.Namespace], dict] = lambda a: {}


def _nproc_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nproc", type=int, metavar="N", help=_("ranks (default: one per GPU; 2 on cpu)"))


def _soak_args(p: argparse.ArgumentParser) -> None:
    _nproc_arg(p)
    p.add_argument("--minutes", type=float, metavar="M", help=_("soak length (default: the plan's soak_minutes, else 10)"))


def _burnin_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--minutes", type=float, metavar="M",
                   help=_("burn-in length (default: the plan's burnin_minutes, else 10)"))


def _nodes_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hostfile", metavar="FILE", help=_("the nodes, one per line: 'name ssh_target gpus "
                     "[python=/path] [addr=IP]' or 'host slots=N' (default: the plan's hostfile)"))
    p.add_argument("--pairwise", action="store_true", help=_("also run every pair of nodes, to find a bad one"))
    p.add_argument("--ssh-config", metavar="FILE", help=_("ssh client config (-F) to reach the nodes"))


def _nodes_plan(a: argparse.Namespace) -> dict:
    return {"hostfile": os.path.abspath(a.hostfile) if a.hostfile else None,
            "multinode_pairwise": True if a.pairwise else None,
            "ssh_config": os.path.abspath(a.ssh_config) if a.ssh_config else None}


VALIDATE_COMMANDS: dict[str, ValidateCommand] = {
    "gpu": ValidateCommand("each GPU alone: GEMM, memory copy and pattern, host<->device, a training loop"),
    "node": ValidateCommand("all GPUs under torchrun: rank sanity, all-reduce sweep, P2P matrix (and "
                            "all_reduce_perf when installed)", _nproc_arg, lambda a: {"validate_nproc": a.nproc}),
    "soak": ValidateCommand("GEMM and all-reduce for --minutes under NVML sampling", _soak_args,
                            lambda a: {"validate_nproc": a.nproc, "soak_minutes": a.minutes}),
    "burnin": ValidateCommand("burn in every GPU for --minutes: DCGM targeted stress and power where DCGM is installed, "
                              "else sustained GEMM under NVML sampling", _burnin_args,
                              lambda a: {"burnin_minutes": a.minutes}),
    "nodes": ValidateCommand("the hostfile's nodes under torchrun over ssh: facts, rank sanity, all-reduce sweep "
                             "(every pair of nodes with --pairwise)", _nodes_args, _nodes_plan),
}
"""``bringup validate NAME`` -> its help and options (known without importing the catalogue, so ``--version``
stays fast); the step it runs is the one whose ``ActionSpec.command`` is NAME (:func:`validate_step`)."""


def validate_step(name: str):
    """The catalogue step ``bringup validate NAME`` runs (``KeyError`` when none)."""
    import steps

    for st in steps.STAGES:
        for s in st.steps:
            if s.action is not None and s.action.command == name:
                return s
    raise KeyError(name)


def opt(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def lang_flag(argv: list[str]) -> str | None:
    """``--lang``'s value in ``argv`` when it is one of :data:`wizard.i18n.LANGUAGES` (read before the parser is
    built, so that its help is in that language), else ``None`` (a wrong value is refused by the parser itself)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--lang")
    known, _rest = pre.parse_known_args(argv)
    return known.lang if known.lang in LANGUAGES else None


class PipeGuard:
    """Standard output that outlives its reader: once a write or flush meets a closed pipe (``bringup check | head -1``),
    the rest of the output goes to /dev/null and the command runs on to its own exit status (walk 34 #2: a failing check
    piped into ``head`` exited 0, so ``set -o pipefail`` scripts read a failing node as healthy). Every other attribute
    is the wrapped stream's (``isatty``, ``encoding``, ``fileno``)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.broken = False

    def _drop(self) -> None:
        # the pipe's descriptor itself points at /dev/null from now on, so what the first stream still buffers is
        # flushed there at exit (Python's advice for EPIPE, "Note on SIGPIPE" in the signal module's documentation),
        # not reported as an error that would change the exit status
        self.broken = True
        try:
            fd = self._stream.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)
        except (OSError, ValueError, AttributeError):
            pass
        try:
            self._stream = open(os.devnull, "w", encoding="utf-8")
        except OSError:  # pragma: no cover - /dev/null missing
            self._stream = io.StringIO()

    def write(self, s: str) -> int:
        try:
            return self._stream.write(s)
        except BrokenPipeError:
            self._drop()
            return len(s)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class WrappedOut:
    """Standard output on a terminal: a line wider than the terminal wraps to it under an indent (its own indent plus
    4), a shown command (``$ ...``) where a shell reads it back the same (:func:`shell_wrap`), so no command's text is
    cut mid-word by the terminal (walk 39: ``auto``, ``answers check``, ``check --profile``, ``validate nodes``, the
    Ctrl-C hint ran past 80 columns). A partial line is written as it is when flushed (a prompt). Installed only on a
    terminal and never for a document (JSON, a report or answers file written to standard output): what a script or
    a file reads stays as written. Every other attribute is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, s: str) -> int:
        self._pending += s
        if "\n" in self._pending:
            *lines, self._pending = self._pending.split("\n")
            out = []
            for ln in lines:  # a row after one ending in " \\" continues a command: a path longer than a row stays
                # whole there (walk 40: a capture's path broken after a "/" inside the command, so it did not paste)
                out.append(ln if self._continued else self._wrapped(ln))
                # (a shown command's rows: " \\" between words, "\\" inside a word too long for a row)
                self._continued = ln.endswith("\\") and (self._continued or ln.lstrip().startswith("$ "))
            self._stream.write("".join(x + "\n" for x in out))
        return len(s)

    _continued = False

    @staticmethod
    def _wrapped(line: str) -> str:
        width = text_width()
        if cells(line) <= width or "\x1b" in line:  # fits, or carries terminal escapes (a progress bar)
            return line
        if line.lstrip(" ").startswith("$ "):
            return "\n".join(shell_wrap(line, width))
        lead = line[:len(line) - len(line.lstrip(" "))]
        # a verdict row ("[FAIL] health.xid        message"): its message wraps under itself
        import re

        row = re.match(r"^\s*\[[ A-Z?!]{4}\] \S+ +", line)
        if row and len(row.group(0)) <= width // 2:
            return "\n".join(_wrap(row.group(0), line[len(row.group(0)):], width, len(row.group(0))))
        body = line[len(lead):]
        # a note in parentheses continues inside them, under its first word (walk 46 #5: "(torchrun gets ..." went on
        # 4 columns further in, as a command's rows do)
        step = 1 if body.startswith("(") else 2 if body.startswith("（") else 4
        return "\n".join(_wrap(lead, body, width, min(len(lead) + step, max(step, width // 3))))

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class WrappedErrors(WrappedOut):
    """Standard error on a terminal: each line of bringup's own ("bringup: error: ...", "bringup: note: ...") wider
    than the terminal wraps to it, its continuation indented (walk 37 #12: an unknown plan key printed one 490-cell
    line); any other line wider than it as :class:`WrappedOut` wraps standard output's. Standard error to a pipe or
    file (what scripts read) passes as written. Every other attribute is the wrapped stream's."""

    @staticmethod
    def _wrapped(line: str) -> str:
        width = text_width()
        if cells(line) <= width or not line.startswith("bringup: "):  # another shape (the Ctrl-C hint: walk 39 #2)
            return WrappedOut._wrapped(line)
        head = next((h for h in (_("bringup: error: "), "bringup: note: ") if line.startswith(h)), "bringup: ")
        return "\n".join(_wrap(head, line[len(head):], width, 4))


def _writes_a_document(args: argparse.Namespace) -> bool:
    """Whether ``args``' command writes a document to standard output, which :class:`WrappedOut` leaves whole: any
    ``--json``, ``report`` to standard output (``-o -``, or of bundles or builds without ``-o``), ``answers export``,
    ``capture -o -``."""
    return bool(opt(args, "json")) or (args.command == "report" and (
        opt(args, "output") == "-" or bool(opt(args, "snapshot")) or bool(opt(args, "builds")))) or (
        args.command == "answers" and getattr(args, "answers_command", "") == "export") or (
        args.command == "capture" and opt(args, "output") == "-")


def main(argv: list[str] | None = None) -> int:
    from wizard import i18n

    # the language first: --lang, else the locale; on the Linux console Chinese falls back to English, said once
    lang_notice = i18n.setup(lang_flag(sys.argv[1:] if argv is None else list(argv)))
    # argparse's own words ("the following arguments are required", "invalid choice") through bringup's catalogue:
    # argparse looks its module's gettext functions up when it speaks (walk 25 #7: English errors in Chinese)
    argparse._ = i18n.gettext  # type: ignore[attr-defined]
    argparse.ngettext = i18n.ngettext  # type: ignore[attr-defined]
    if sys.stderr is not None and sys.stderr.isatty() and not isinstance(sys.stderr, WrappedErrors):
        sys.stderr = WrappedErrors(sys.stderr)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors are bringup's own (3), never a hardware verdict (2 = fail)
        return EXIT_ERROR if exc.code == 2 else int(exc.code or 0)
    try:
        if args.command not in ("explain", "size"):  # they write nothing
            from wizard.store import use_private_umask

            use_private_umask()  # builds, logs and bundles are their owner's only, whatever the umask
        if args.command is None:
            return cmd_tui(args, lang_notice)
        if lang_notice:
            print(lang_notice, file=sys.stderr)
        tui_build = opt(args, "tui_build")
        if tui_build is not None:  # `bringup --build ID status`: the command's own --build, or refused (walk 34 #3)
            if hasattr(args, "build") and args.build in (None, tui_build):
                args.build = tui_build
            else:
                why_not = (_("`{command} --build` names another build ({other})").format(command=args.command,
                                                                                      other=args.build)
                         if hasattr(args, "build") else
                         _("`{command}` reads the newest build; `report --builds STATE/builds/ID` reports on another")
                         .format(command=args.command) if args.command == "report" else
                         _("`{command}` has no --build option").format(command=args.command))
                print(_("bringup: error: ") + _("--build before the command picks the build the TUI opens: {where}")
                      .format(where=why_not), file=sys.stderr)
                return EXIT_ERROR
        given = [n for n in TUI_FLEET_OPTIONS if opt(args, "tui_" + n) is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            print(_("bringup: error: ") + _("{flag} before the command opens the TUI's fleet view; for `{command}` put it "
                                         "after the command (bringup {command} {flag} ...)").format(
                flag=flag, command=args.command), file=sys.stderr)
            return EXIT_ERROR
        if sys.stdout is not None and sys.stdout.isatty() and not _writes_a_document(args):
            sys.stdout = WrappedOut(sys.stdout)
        sys.stdout = PipeGuard(sys.stdout)
        return {"check": cmd_check, "status": cmd_status, "capture": cmd_capture, "plan": cmd_plan,
                "run": cmd_run, "explain": cmd_explain, "ack": cmd_ack,
                "validate": cmd_validate, "size": cmd_size, "report": cmd_report,
                "answers": cmd_answers, "auto": cmd_auto}[args.command](args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # a write PipeGuard does not see (another stream): the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - turned into a clear one-line error below
        from wizard.capture import BundleError
        from wizard.report import ReportError
        from wizard.store import StateDirError, StoreError

        if isinstance(exc, (StoreError, StateDirError, BundleError, ReportError)):
            print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)  # a Msg in the reader's language
            return EXIT_ERROR
        from wizard.store import default_state_dir, disk_full_message, free_bytes, is_disk_full

        if is_disk_full(exc):  # a full disk outside the store's own writes: say it, never "a bug"
            where = getattr(exc, "filename", None)
            if where:
                free = free_bytes(Path(where).parent)
                msg = (_("the disk is full writing {path}").format(path=where)
                       + (_(": {free} bytes free there").format(free=f"{free:,}") if free is not None else ""))
            else:
                msg = disk_full_message(Path(opt(args, "state") or default_state_dir()))
            print(_("bringup: error: ") + f"{msg}", file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("BRINGUP_DEBUG"):
            raise
        print("bringup: internal error: " + _("{error}. This is a bug in bringup: please report it with the command "
                                              "line (run with BRINGUP_DEBUG=1 to see the traceback).").format(
            error=repr(exc)), file=sys.stderr)
        return EXIT_ERROR


# ---------------------------------------------------------------------------------- helpers


def state_dir(args: argparse.Namespace, write: bool = True) -> Path:
    """The state directory. ``write``: create it and prove it writable (else StateDirError);
    otherwise just the path (read-only commands never create it)."""
    from wizard.store import StateDirError, default_state_dir, ensure_state_dir

    raw = opt(args, "state")
    if raw is not None and not str(raw).strip():
        raise StateDirError(_("--state is empty: give a directory"))
    d = Path(raw) if raw else default_state_dir()
    if not write:
        return d
    ensure_state_dir(d)
    say_tightened(d)
    return d


def say_tightened(d: Path) -> None:
    """Make an existing looser state tree private (:func:`wizard.store.tighten_state_dir`) and say so."""
    from wizard.store import tighten_state_dir, tightened_note

    note = tightened_note(d, tighten_state_dir(d))
    if note:
        print(f"bringup: note: {note}", file=sys.stderr)


def open_build_for_reading(args: argparse.Namespace, boot_id: str):
    """(build or None, note). Writable state dir: the build as usual (locked, or observing when
    another bringup holds it). Unwritable: read-only. No build: None. Never creates anything."""
    from wizard.engine import Build
    from wizard.store import DiskFullError, StateDirError, ensure_state_dir, list_builds

    import steps

    d = state_dir(args, write=False)
    if not d.is_dir() or not list_builds(d):
        return None, ""
    which = opt(args, "build")  # `status --build ID`: an earlier build (walk 29 #16: no way back to it)
    try:
        ensure_state_dir(d)
    except StateDirError as exc:
        return (Build.open(d, steps.STAGES, {"boot_id": boot_id}, build_id=which, readonly=True),
                _("{reason}; read-only").format(reason=exc))
    say_tightened(d)
    try:
        return Build.open(d, steps.STAGES, {"boot_id": boot_id}, build_id=which, dry_run=bool(opt(args, "dry_run"))), ""
    except DiskFullError as exc:  # it cannot be written, but it can still be read
        return (Build.open(d, steps.STAGES, {"boot_id": boot_id}, build_id=which, readonly=True),
                _("{reason}; read-only").format(reason=exc))


GLYPH = {"pass": "[ OK ]", "warn": "[WARN]", "fail": "[FAIL]", "skip": "[SKIP]", "unknown": "[ ?? ]"}


# ---------------------------------------------------------------------------------- commands


def cmd_check(args: argparse.Namespace) -> int:
    if opt(args, "profile") is not None or opt(args, "slurm") or opt(args, "timeout") is not None:
        return cmd_check_profile(args)
    if not opt(args, "snapshot") and opt(args, "nodes") is None and opt(args, "hostfile") is None:
        from wizard import prefetch

        prefetch.start()  # the slow probes start while the rest of bringup loads
    import asyncio

    import steps
    from wizard.engine import checked_steps, run_checks
    from wizard.model import Verdict, overall
    from wizard.store import utcnow

    from wizard.registry import did_you_mean

    stage = opt(args, "stage")
    if opt(args, "prometheus") is not None and (stage is not None or opt(args, "step") is not None):
        # a part of the check would replace the whole check's file: its failing series and fail count would vanish
        # and an alert on them would silently stop firing
        print(_("bringup: error: ") + _("--prometheus writes the whole check's metrics; with {option} the file would "
                                     "hold only part of them (a failure elsewhere would vanish from it and stop "
                                     "alerting): run `bringup check --prometheus FILE` without --stage or --step").format(
            option="--stage" if stage is not None else "--step"), file=sys.stderr)
        return EXIT_ERROR
    if stage is not None and stage not in {st.id for st in steps.STAGES}:
        near = did_you_mean(stage, [st.id for st in steps.STAGES])
        stages = " ".join(st.id for st in steps.STAGES)
        print(_("bringup: error: ") + (_("unknown stage {stage}; did you mean {ids}? Stages: {stages}").format(
            stage=repr(stage), ids=_(" or ").join(near), stages=stages) if near else
            _("unknown stage {stage}; stages: {stages}").format(stage=repr(stage), stages=stages)), file=sys.stderr)
        return EXIT_ERROR
    sel = checked_steps(steps.STAGES, stage)
    only_step = opt(args, "step")
    if only_step is not None and stage is not None:
        print(_("bringup: error: ") + _("give --stage or --step, not both"), file=sys.stderr)
        return EXIT_ERROR
    if only_step is not None:
        sid, err = resolve_step_id(only_step)
        if sid is None:
            print(_("bringup: error: ") + f"{err}", file=sys.stderr)
            return EXIT_ERROR
        sel = [s for s in sel if s.id == sid]
        if not sel:
            print(_("bringup: error: ") + _("step {step} is not checked from probes (it is confirmed or run as an "
                                         "action)").format(step=sid), file=sys.stderr)
            return EXIT_ERROR
    if opt(args, "nodes") is not None or opt(args, "hostfile") is not None:
        return cmd_check_fleet(args, sel, stage)
    snap = opt(args, "snapshot")
    build = None
    if snap:
        from wizard.capture import load_bundle

        host, manifest = load_bundle(snap)
        from wizard.plan import valid_plan

        identity = dict(manifest["host"])
        plan = valid_plan(dict(manifest["plan"]))
    else:
        from wizard.engine import host_identity, local_host

        host = local_host()  # type: ignore[assignment]  # a SnapshotHost above, a LocalHost here: both are Hosts
        build, note = open_build_for_reading(args, _boot_id())
        if note:
            print("bringup: note: " + _("{note}: findings are not recorded").format(note=note), file=sys.stderr)
        elif build is not None and build.observing:
            print("bringup: note: " + _("another bringup ({holder}) holds this build: findings are not "
                                        "recorded").format(holder=build.lock.holder or _("another process")),
                  file=sys.stderr)
        plan = build.expectations() if build is not None else {}
    try:
        started = utcnow()

        async def both():
            # identity and checks together: the probes of both run concurrently
            if snap:
                return identity, await run_checks(host, sel, plan)
            return await asyncio.gather(host_identity(host), run_checks(host, sel, plan))

        identity, (results, outputs) = asyncio.run(both())
        from wizard import prefetch

        prefetch.discard()  # a --stage check may not have needed all of them
        if build is not None and not build.observing:
            from wizard.store import DiskFullError

            try:
                with build.store.tx():  # one check, recorded whole or not at all
                    for sid, fs in results.items():
                        build.record_findings(sid, fs, started, plan_read=results.plan_read.get(sid))
                    build.remember_gpu_serials(outputs)
            except DiskFullError as exc:  # the findings are still shown below
                print("bringup: note: " + _("{reason}: the findings below are not recorded").format(reason=exc),
                      file=sys.stderr)
        recorded = None  # a stage without checks: what its runs and confirmations recorded, said beside the skip
        if not sel and stage is not None and build is not None:
            recorded = build.stage_status(next(st for st in build.stages if st.id == stage)).value
    finally:
        if build is not None:
            build.close()
    findings = [f for s in sel for f in results[s.id]]
    verdict = overall(findings)
    note = ""
    if not sel:
        note = Msg("stage {stage} has no automatic checks: its steps are actions (`bringup run STEP`; the validation "
                   "stages: `bringup validate gpu|node|soak|nodes`) or are confirmed by hand in the TUI "
                   "(bringup status shows them)", stage=stage)  # English in --json, translated in the text (tr)
        if recorded is not None and recorded != "pending":
            # the check's skip is not the stage's state: a failed multi-node run stays failed (exit 0 is the check's)
            note = note + Msg("; this build records the stage {status}", status=Msg(recorded))
    elif verdict.value == "skip":
        # a skip that only waits (no GPU on the bus yet, a plan answer missing) is not "not applicable" (walk 18)
        from wizard.engine import waiting_reason

        waiting = sum(1 for f in findings if f.verdict is Verdict.SKIP and waiting_reason(f, plan))
        note = (Msg("nothing was verified: every check was not applicable here") if not waiting else
                Msg("nothing was verified: every check waits (for a GPU on the PCI bus, or a plan answer)")
                if waiting == len(findings) else
                Msg("nothing was verified: {n} check waits (for a GPU on the PCI bus, or a plan answer), the others "
                    "do not apply here", n=waiting) if waiting == 1 else
                Msg("nothing was verified: {n} checks wait (for a GPU on the PCI bus, or a plan answer), the others "
                    "do not apply here", n=waiting))
    if opt(args, "json"):
        doc = check_doc(identity, verdict, findings, stage, opt(args, "snapshot"), started, note)
        if recorded is not None:
            doc["stage_status"] = recorded  # added field: the build's record of a stage with no automatic checks
        print(json.dumps(doc, indent=2))
    else:
        name = identity.get("hostname") or _("this host")
        width = text_width()
        _print_wrapped("", _("bringup check on {host} (snapshot {bundle})").format(host=name, bundle=opt(args, "snapshot"))
                       if opt(args, "snapshot") else _("bringup check on {host}").format(host=name), width, 2)
        for st in steps.STAGES:  # catalogue order, one heading per stage with findings
            fs = [f for s in sel if s.stage_id == st.id for f in results[s.id]]
            if fs:
                print("\n" + "\n".join(_wrap("", _("{stage}: {counts}").format(stage=_(st.title), counts=verdict_counts(fs)),
                                             width, 2)))
                print_findings(fs, width=width, id_width=id_column(findings, width))
        print()
        counts = verdict_counts(findings) if findings else ""
        said = _("; ").join(x for x in (counts, tr(note)) if x)  # "；" in Chinese (walk 28 #17)
        _print_wrapped("", _("overall: {verdict} ({details})").format(verdict=_(verdict.value), details=said)
                               if said else _("overall: {verdict}").format(verdict=_(verdict.value)), width, 2)
    if opt(args, "prometheus") is not None:  # after the output: a file that cannot be written keeps it, exits 3
        from wizard.metrics import MetricsError, write_check_metrics

        try:
            for said in write_check_metrics(opt(args, "prometheus"), findings, snapshot=bool(snap),
                                            node=(identity.get("hostname") or Path(snap).name) if snap else None,
                                            state_dir=None if snap else state_dir(args, write=False)):
                print(f"bringup: note: {tr(said)}", file=sys.stderr)
        except MetricsError as exc:
            print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)
            return EXIT_ERROR
    return verdict.exit_code


def cmd_check_profile(args: argparse.Namespace) -> int:
    """``check --profile NAME [--timeout S] [--slurm]`` (wizard/health.py): only the profile's rules, every probe
    stopped at ``--timeout`` seconds, nothing recorded; ``--slurm`` drains or resumes the Slurm node
    (wizard/slurm.py; with ``--snapshot`` the bundle is judged and this node is the one drained or resumed).
    Exit status, LBNL NHC's convention: 0 healthy (nothing fails; warnings and unknowns are printed), 2 unhealthy
    (a finding fails), 3 bringup could not run (bad options, an unreadable bundle) or an scontrol it needed failed."""
    name = opt(args, "profile")
    if name is None:
        print(_("bringup: error: ") + _("--timeout and --slurm go with --profile health"), file=sys.stderr)
        return EXIT_ERROR
    for flag in ("stage", "step", "nodes", "hostfile", "prometheus"):
        if opt(args, flag) is not None:
            print(_("bringup: error: ") + _("--profile {profile} runs its own set of checks on this node: {option} does "
                                         "not apply").format(profile=name, option="--" + flag), file=sys.stderr)
            return EXIT_ERROR
    timeout = 10.0 if opt(args, "timeout") is None else float(args.timeout)
    if not (math.isfinite(timeout) and 0 < timeout <= 3600):
        print(_("bringup: error: ") + _("--timeout must be more than 0 and at most 3600 seconds, got {timeout}").format(
            timeout=f"{timeout:g}"), file=sys.stderr)
        return EXIT_ERROR
    snap = opt(args, "snapshot")
    from wizard import prefetch

    if not snap:
        prefetch.start(prefetch.HEALTH)  # the profile's slow commands start while its rules are imported
    import asyncio
    import datetime as _dt

    from wizard import health

    do_slurm = bool(opt(args, "slurm"))

    def hung() -> None:  # the watchdog: something blocked past every time limit (a read stuck in the kernel)
        why = _("the health check did not finish within {seconds} s").format(
            seconds=f"{timeout + health.WATCHDOG_GRACE_S:g}")
        print(f"[FAIL] {health.OVERRUN_ID}: {why}", flush=True)
        if do_slurm:
            from wizard import slurm

            try:
                out = slurm.apply(False, None, reason=f"{slurm.REASON_PREFIX} health check hung")
                print(f"slurm: {out.why}", flush=True)
            except slurm.SlurmError as exc:
                print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr, flush=True)

    watchdog = health.start_watchdog(timeout + health.WATCHDOG_GRACE_S, hung)
    try:
        started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        if snap:
            from wizard.capture import load_bundle
            from wizard.plan import valid_plan

            host, manifest = load_bundle(snap)
            identity = dict(manifest["host"])
            plan = valid_plan(dict(manifest["plan"]))
        else:
            import socket

            from wizard.hosts import LocalHost
            from wizard.probes import BUILTINS

            host = LocalHost(builtins=BUILTINS)  # type: ignore[assignment]  # both are Hosts
            plan = health.build_expectations(state_dir(args, write=False))
            identity = {"hostname": socket.gethostname()}
        result = asyncio.run(health.run_profile(host, name, plan, timeout))
        outcome, slurm_error = None, ""
        if do_slurm:
            from wizard import slurm

            try:
                outcome = slurm.apply(result.healthy, result.first_failure())
            except slurm.SlurmError as exc:
                slurm_error = str(exc)
    finally:
        watchdog.cancel()
        prefetch.discard()  # what the profile did not take (a probe stopped early, an error)
    state = _("healthy") if result.healthy else _("unhealthy")  # the text's word (the JSON has "healthy": bool)
    if opt(args, "json"):
        doc = check_doc(identity, result.verdict, result.findings, None, snap, started)
        doc.update(profile=name, healthy=result.healthy, duration_s=round(result.duration_s, 3), timeout_s=timeout)
        if do_slurm:
            doc["slurm"] = outcome.to_dict() if outcome is not None else {"error": slurm_error}
        print(json.dumps(doc, indent=2))
    else:
        host_name = identity.get("hostname") or _("this host")
        seconds = f"{result.duration_s:.2f}"
        print(_("bringup check --profile {profile} on {host} (snapshot {bundle}): {state} in {seconds} s").format(
            profile=name, host=host_name, bundle=snap, state=state, seconds=seconds) if snap else
            _("bringup check --profile {profile} on {host}: {state} in {seconds} s").format(
                profile=name, host=host_name, state=state, seconds=seconds))
        print_findings(result.findings, width=text_width())  # as `check` wraps them (walk 42 #24)
        print(_("overall: {verdict} ({details})").format(verdict=_(result.verdict.value), details=state))
        if outcome is not None:
            print(f"slurm: {outcome.why}")
    if slurm_error:
        print(_("bringup: error: ") + f"{slurm_error}", file=sys.stderr)
        return EXIT_ERROR
    return result.exit_code


def check_doc(identity: Mapping[str, Any], verdict, findings, stage: str | None, snapshot: str | None,
              started: str, note: str = "") -> dict[str, Any]:
    """The ``check --json`` document (assets/schema/check.schema.json); ``validate --json`` adds fields to it."""
    doc = {"schema": 1, "bringup_version": __version__, "host": dict(identity), "verdict": verdict.value,
           "stage": stage, "snapshot": snapshot, "generated_at": started,
           "findings": [f.to_dict() for f in findings]}
    if note:
        doc["note"] = note
    return doc


VERDICT_ORDER = ("pass", "warn", "fail", "skip")
"""The verdicts ``check`` always counts, in this order; ``unknown`` is counted only when there is one."""


def verdict_counts(findings) -> str:
    """"12 pass, 1 warn, 0 fail, 3 skip" (", 2 unknown" when some could not tell) for ``check``'s headings, in the
    language in use."""
    n = {v: 0 for v in (*VERDICT_ORDER, "unknown")}
    for f in findings:
        n[f.verdict.value] += 1
    if n["unknown"]:
        return _("{passed} pass, {warned} warn, {failed} fail, {skipped} skip, {unknown} unknown").format(
            passed=n["pass"], warned=n["warn"], failed=n["fail"], skipped=n["skip"], unknown=n["unknown"])
    return _("{passed} pass, {warned} warn, {failed} fail, {skipped} skip").format(
        passed=n["pass"], warned=n["warn"], failed=n["fail"], skipped=n["skip"])


MIN_TEXT_WIDTH = 40
"""Narrowest width ``check`` wraps its text to (columns); a narrower terminal gets lines of this width."""


def error_text(exc: BaseException) -> str:
    """An exception's message in the reader's language: a :class:`Msg` given to it (``raise ValueError(Msg(...))``)
    translated, any other message as it is (walk 29 #7, #17: "soak_minutes must be more than 0 ..." in Chinese)."""
    said = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], Msg) else str(exc)
    return tr(said)


def seconds_text(s: float) -> str:
    """Seconds for a person: one decimal from a second on, two below it ("0.04", never "0.0" for a run that took time)."""
    return f"{s:.1f}" if s >= 1 else f"{s:.2f}"


def text_width() -> int:
    """The terminal's width in columns for wrapped text: ``COLUMNS`` when set, else the terminal's, else 80
    (:func:`shutil.get_terminal_size`; output to a pipe or file is 80 wide), at least :data:`MIN_TEXT_WIDTH`."""
    import shutil

    return max(MIN_TEXT_WIDTH, shutil.get_terminal_size().columns)


def _ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal cells (a CJK character takes two: a translated column
    heading stays aligned); ``str.ljust`` for ASCII text."""
    if text.isascii():
        return text.ljust(width)
    from rich.cells import cell_len

    return text + " " * max(0, width - cell_len(text))


def _wrap(first: str, text: str, width: int | None, indent: int) -> list[str]:
    """``first + text`` as lines of at most ``width`` terminal cells (:func:`wizard.i18n.wrap`, folding: a word longer
    than the room breaks after a path's '/', else at the width, so no line runs past the terminal),
    continuation lines indented by ``indent`` (by 7 when that would leave under 30 columns); one line when ``width``
    is None."""
    if width is None:
        return [first + text]
    from wizard.i18n import CLOSING, wrap

    if width - indent < 30:
        indent = min(indent, 7)
    if first.strip():
        # punctuation that closes what ``first`` says stays on its line, never starts the next one (walk 27 #13: a
        # report's "wrote PATH: 未就绪" over "；4 条阻塞性检查结果…", its first line as long as its path)
        lead = len(text) - len(text.lstrip(CLOSING))
        first, text = first + text[:lead], text[lead:]
    return wrap(text, width, first, indent, fold=True) if text.strip() else [first.rstrip()]


def _print_wrapped(first: str, text: str, width: int | None, indent: int, file: Any = None) -> None:
    """Print :func:`_wrap`'s lines (to ``file``, stdout by default)."""
    print("\n".join(_wrap(first, text, width, indent)), file=file)


def _cut_row(text: str, width: int) -> str:
    """A verbatim line (evidence quoted from a machine) as one row of at most ``width`` terminal cells: itself when
    it fits, else cut with "…" (the new-operator review: a long line folded into rows read as several input lines,
    a table row's columns fell apart). The one convention for evidence in the CLI's text; --json keeps it whole.
    Tabs are expanded first, so the row's width is what the terminal shows."""
    from rich.cells import cell_len, chop_cells

    text = text.expandtabs()
    width = max(20, width)
    return text if cell_len(text) <= width else chop_cells(text, width - 1)[0] + "…"


ID_COLUMN = (18, 26)
"""The id column of ``check``'s text (characters): as wide as the longest id printed, within these bounds (a longer
id pushes its own message out; every other message lines up)."""


def id_column(findings, width: int | None = None) -> int:
    """The id column's width for ``findings`` (see :data:`ID_COLUMN`); on a terminal of ``width`` columns no wider
    than leaves 34 for the message (a 60-column terminal keeps the narrowest column)."""
    room = ID_COLUMN[1] if width is None else width - 8 - 34
    return max(ID_COLUMN[0], min(ID_COLUMN[1], room, max((len(f.id) for f in findings), default=0)))


def print_findings(findings, out=None, width: int | None = None, id_width: int | None = None) -> None:
    """Findings as ``check`` prints them: glyph, id, subject and message; the remedy under a non-pass. A finding
    whose id is not its step's (health.ecc_mode of step health.ecc) names the step after the message: the step is
    what ``run``, ``check --step``, ``skip`` and the TUI take. ``width`` (columns): wrap each to it, continuation
    lines under the message (the remedy's under the remedy); None: one line each. ``id_width``: the id column
    (:func:`id_column` of these findings when None; ``check`` passes one for all its stages)."""
    from wizard.model import subject_prefix

    out = out or sys.stdout
    idw = id_width or id_column(findings, width)
    for f in findings:
        subject = tr_subject(subject_prefix(f.subject, f.message))
        first = f"{GLYPH[f.verdict.value]} {f.id:<{idw}} "
        text = subject + tr(f.message)
        if f.step and f.step != f.id:
            text += spaced(_("(step {step})").format(step=f.step))  # no space before a full-width bracket
        for line in _wrap(first, text, width, len(first)):
            print(line, file=out)
        if f.verdict.value in ("fail", "warn", "unknown") and f.remedy:
            for line in _wrap("       -> ", tr(f.remedy), width, 10):
                print(line, file=out)
        if f.key and f.verdict.value != "pass":  # one past event: how to set it aside once dealt with
            for line in _wrap("       ", _("once dealt with: bringup ack {key} --reason TEXT").format(key=f.key),
                              width, 7):
                print(line, file=out)


def fleet_options(args: argparse.Namespace) -> tuple[list[Any], dict[str, Any]]:
    """(nodes, keyword options of wizard.fleet's runners) from ``--nodes``/``--hostfile`` and the fleet options.

    Raises:
        wizard.fleet.FleetError: both or neither node list, a bad nodeset or hostfile, a fanout or timeout out of range.
    """
    from wizard.fleet import DEFAULT_FANOUT, DEFAULT_NODE_TIMEOUT_S, FleetError, nodes_from_hostfile, nodes_from_spec

    if opt(args, "nodes") is not None and opt(args, "hostfile") is not None:
        raise FleetError(_("give --nodes or --hostfile, not both"))
    if opt(args, "snapshot"):
        raise FleetError(_("--snapshot reads one bundle; with --nodes or --hostfile the nodes are reached over ssh"))
    nodes = nodes_from_spec(args.nodes) if opt(args, "nodes") is not None else nodes_from_hostfile(args.hostfile)
    fanout = DEFAULT_FANOUT if opt(args, "fanout") is None else args.fanout
    if not 1 <= fanout <= 4096:
        raise FleetError(_("--fanout must be from 1 to 4096 nodes, got {fanout}").format(fanout=fanout))
    timeout = DEFAULT_NODE_TIMEOUT_S if opt(args, "node_timeout") is None else args.node_timeout
    if not (math.isfinite(timeout) and 1 <= timeout <= 86400):
        raise FleetError(_("--node-timeout must be from 1 to 86400 seconds, got {timeout}").format(timeout=f"{timeout:g}"))
    cfg = opt(args, "ssh_config")
    if cfg is not None and not os.path.isfile(cfg):
        raise FleetError(_("--ssh-config {path}: no such file").format(path=cfg))
    return nodes, {"fanout": fanout, "node_timeout_s": timeout, "ssh_config": os.path.abspath(cfg) if cfg else None,
                   "on_progress": _progress_printer(bool(opt(args, "progress")))}


def _progress_printer(forced: bool) -> Callable[[Any], None] | None:
    """Progress on stderr ("nodes 7/16 done, slowest still running: gpu012 (14 s)"): rewritten in place on a terminal
    (at most every 0.2 s), one line per finished node with ``--progress`` elsewhere; ``None`` when neither."""
    import time

    tty = sys.stderr.isatty()
    if not tty and not forced:
        return None
    last = {"t": 0.0, "done": -1}

    def show(p: Any) -> None:
        now = time.monotonic()
        final = p.done == p.total
        if tty:
            if final or now - last["t"] >= 0.2:
                last["t"] = now
                sys.stderr.write("\r\x1b[K" + p.line(now) + ("\n" if final else ""))
                sys.stderr.flush()
        elif p.done != last["done"]:
            last["done"] = p.done
            print(p.line(now), file=sys.stderr, flush=True)

    return show


def cmd_check_fleet(args: argparse.Namespace, sel: list[Any], stage: str | None) -> int:
    """``check --nodes``/``--hostfile``: the selected steps on every node over ssh, then the fleet comparison. Exit
    status: the worst verdict of all nodes and the fleet (0, 1, 2), 3 when bringup cannot run (bad node list)."""
    import asyncio

    import steps
    from wizard.fleet import FleetError, check_fleet, folded_findings, stage_matrix
    from wizard.store import utcnow

    if opt(args, "prometheus") is not None:
        print(_("bringup: error: ") + _("--prometheus writes one node's metrics; run it on each node (without --nodes)"),
              file=sys.stderr)
        return EXIT_ERROR
    try:
        nodes, kw = fleet_options(args)
    except FleetError as exc:
        print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)
        return EXIT_ERROR
    plan: dict[str, Any] = {}
    build, _note = open_build_for_reading(args, _boot_id())
    if build is not None:  # the build's plan is the fleet's expectation; nothing is recorded in it
        try:
            plan = build.expectations()
        finally:
            build.close()
    started = utcnow()
    fc = asyncio.run(check_fleet(nodes, sel, plan, **kw))
    verdict = fc.verdict
    if opt(args, "json"):
        doc = check_doc({"hostname": fc.nodeset}, verdict, fc.findings, stage, None, started)
        doc["nodes"] = {n: {"verdict": c.verdict.value, "findings": [f.to_dict() for f in c.findings],
                            **({"error": c.error} if c.error else {}), "target": c.target, "host": c.identity,
                            "seconds": round(c.seconds, 3)} for n, c in fc.nodes.items()}
        doc["fleet"] = {"nodeset": fc.nodeset, "fanout": fc.fanout, "node_timeout_s": fc.node_timeout_s,
                        "wall_s": round(fc.wall_s, 3)}
        print(json.dumps(doc, indent=2))
        return verdict.exit_code
    from wizard.rules.fleet import fold

    tw = text_width()  # the lines that carry sentences wrap to the terminal (walk 29 #9: ssh errors cut mid-word)
    _print_wrapped("", ngettext(
        "bringup check on {count} node: {nodeset} (fanout {fanout}, node timeout {timeout} s, {wall} s in all)",
        "bringup check on {count} nodes: {nodeset} (fanout {fanout}, node timeout {timeout} s, {wall} s in all)",
        len(fc.nodes)).format(count=len(fc.nodes), nodeset=fc.nodeset, fanout=fc.fanout,
                              timeout=f"{fc.node_timeout_s:g}", wall=seconds_text(fc.wall_s)), tw, 4)
    from rich.cells import cell_len

    ids, rows = stage_matrix(fc, steps.STAGES)
    width = max(6, *(len(r["node"]) for r in rows))

    def cell(r: Mapping[str, Any], sid: str) -> str:
        return (_(r['cells'][sid].value) if r['cells'][sid] else '-') + ('*' if sid in r['odd'] else '')

    # each stage column as wide as its id or its widest cell, so that nine stages fit 80 columns (walk 34 #18)
    cols = {sid: max([cell_len(sid)] + [cell_len(cell(r, sid)) for r in rows if not r["reason"]]) + 1 for sid in ids}
    print(f"{_ljust(_('name'), width)}  {_ljust(_('verdict'), 8)}" + "".join(_ljust(sid, cols[sid]) for sid in ids)
          + _("time"))
    for r in rows:
        # the verdict words and the reason in the reader's language (walk 28 #14: "fail    unreachable: ssh: ..." under
        # Chinese headings); --json keeps them English
        line = f"{r['node']:<{width}}  {_ljust(_(r['verdict'].value), 8)}"
        if r["reason"]:  # its time too (walk 33 #11: the time column was empty for an unreachable node)
            _print_wrapped(line, _("{kind}: {message}").format(kind=_(r["reason"]), message=r["error"])
                           + f" ({seconds_text(r['seconds'])} s)", tw, min(cell_len(line), 24))
            continue
        else:
            line += "".join(_ljust(cell(r, sid), cols[sid]) for sid in ids) + f"{seconds_text(r['seconds'])} s"
        print(line)
    if any(r["odd"] for r in rows):
        print(_("(* differs from most nodes)"))
    judged = [n for n, c in fc.nodes.items() if not c.reason]
    print("\n" + _("across the nodes ({count} compared):").format(count=len(judged)))
    print_findings([f for f in fc.findings if f.verdict.value != "pass"], width=tw)
    passed = [f for f in fc.findings if f.verdict.value == "pass"]
    if passed:
        _print_wrapped("[ OK ] ", _("the same on every node compared: {what}").format(
            what="; ".join(f.message.split(" on all ")[0] for f in passed)), tw, 7)
    print("\n" + _("findings by node (folded where identical):"))
    groups = folded_findings(fc)
    for g in groups:
        if g.findings:
            print(_("{nodes} ({count} nodes):").format(nodes=fold(g.nodes), count=len(g.nodes)) if len(g.nodes) > 1
                  else f"{fold(g.nodes)}:")
            print_findings(g.findings, width=tw)
    counts: dict[tuple[int, int], list[str]] = {}
    for n, c in fc.nodes.items():
        if not c.reason:
            counts.setdefault((sum(f.verdict.value == "pass" for f in c.findings),
                               sum(f.verdict.value == "skip" for f in c.findings)), []).append(n)
    for (npass, nskip), ns in counts.items():
        print(_("{nodes}: {passed} passed, {skipped} not applicable (--json lists them)").format(
            nodes=fold(ns), passed=npass, skipped=nskip))
    by_verdict: dict[str, list[str]] = {}
    for n, c in fc.nodes.items():
        by_verdict.setdefault(c.verdict.value, []).append(n)
    _print_wrapped("", _("overall: {verdict} ({details})").format(
        verdict=_(verdict.value), details=_("; ").join(_("{kind}: {message}").format(kind=_(v), message=fold(ns))
                                                   for v, ns in sorted(by_verdict.items()))), tw, 4)
    return verdict.exit_code


def cmd_capture_fleet(args: argparse.Namespace) -> int:
    """``capture --nodes``/``--hostfile -o DIR``: one bundle per node (DIR/NODE.tar.gz) over ssh. Exit status 0 when
    every node's bundle was written, 2 when a node was unreachable or timed out (the others are written), 3 when
    bringup cannot run."""
    import asyncio

    from wizard.fleet import FleetError, capture_fleet

    try:
        nodes, kw = fleet_options(args)
    except FleetError as exc:
        print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)
        return EXIT_ERROR
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        print(_("bringup: error: ") + _("-o {path} is a file: with --nodes or --hostfile give a directory (one bundle per "
                                     "node)").format(path=out), file=sys.stderr)
        return EXIT_ERROR
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(_("bringup: error: ") + _("cannot make the directory {path}: {reason}").format(
            path=out, reason=tr(os_error(exc))), file=sys.stderr)
        return EXIT_ERROR
    plan: dict[str, Any] = {}
    build, _note = open_build_for_reading(args, _boot_id())
    if build is not None:
        try:
            plan = build.plan()
        finally:
            build.close()
    got = asyncio.run(capture_fleet(nodes, out, plan, **kw))
    missing = 0
    for name, c in got.items():
        if c.path is None:
            missing += 1
            print(_("{node}: no bundle: {reason}").format(node=name, reason=tr(c.error)))
        else:
            print(_("{node}: wrote {path}: {count} probes").format(node=name, path=c.path, count=c.probes)
                  + (_("; not collected there: {probes}").format(probes=names_listed(c.failed)) if c.failed else ""))
    print(_("{captured} of {total} nodes captured into {path}").format(captured=len(got) - missing, total=len(got),
                                                                      path=out))
    return 2 if missing else 0


def cmd_status(args: argparse.Namespace) -> int:
    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("status reads the build record; --snapshot does not apply"), file=sys.stderr)
        return EXIT_ERROR
    sd = state_dir(args, write=False)
    b, note = open_build_for_reading(args, _boot_id())
    if b is None:
        msg = {"schema": 1, "build": None, "state_dir": str(sd)}
        if opt(args, "json"):
            print(json.dumps(msg))
        else:
            print(_("no build under {path} yet: run `bringup` to start one").format(path=sd))
        return 0
    if note:
        print(f"bringup: note: {note}", file=sys.stderr)
    try:
        from wizard.store import ActionState

        running = b.reconcile() if not b.observing else b.store.action_runs(state=ActionState.RUNNING)
        rp = b.resume_point()
        states = b.store.step_states()
        withdrawn = b.store.withdrawn_confirmations()
        plan_changes = b.plan_changes()
        host = b.store.host()
        stages = []
        for st in b.stages:
            stages.append({
                "id": st.id, "title": st.title, "status": b.stage_status(st).value,
                "steps": [{"id": s.id, "title": s.title,
                           "status": states[s.id].status.value if s.id in states else "pending",
                           "verdict": states[s.id].verdict.value if s.id in states and states[s.id].verdict else None,
                           "reason": states[s.id].reason if s.id in states else "",
                           "user": states[s.id].user if s.id in states else "",
                           "updated_at": states[s.id].updated_at if s.id in states else None,
                           "stale_after_reboot": b.stale(s.id),
                           # the plan answers its latest check read and that changed since (walk 30 #1)
                           "plan_changed_since_check": [k for k, _, _ in plan_changes.get(s.id, [])],
                           # a person's confirmation a later failing/warning check or run withdrew (walk 29 #13)
                           "withdrawn_confirmation": ({
                               "user": withdrawn[s.id][0].user, "at": withdrawn[s.id][0].updated_at,
                               "note": withdrawn[s.id][0].reason, "reopened_at": withdrawn[s.id][1].updated_at,
                               "reopened_status": withdrawn[s.id][1].status.value} if s.id in withdrawn else None)}
                          for s in st.steps]})
        doc = {"schema": 1, "build": b.info.build_id, "state_dir": str(b.info.path.parent.parent),
               "observing": b.observing,
               "host": host, "resume": {"stage": rp.stage.id, "step": rp.step.id},
               "running_actions": [{"id": r.id, "step": r.step_id, "title": r.title, "pid": r.pid,
                                    "log": r.log_path, "started_at": r.started_at} for r in running],
               "stages": stages}
        if opt(args, "json"):
            print(json.dumps(doc, indent=2))
        else:
            print(_("build {build} on {host}").format(build=b.info.build_id, host=host.get("hostname", "?"))
                  + ("  " + _("(read-only: the state directory cannot be written)") if note
                     else "  " + _("(observing: another bringup holds it)") if b.observing else ""))
            _print_wrapped("", _("resume at: {stage} > {step}").format(stage=_(rp.stage.title),
                                                                             step=_(rp.step.title)), text_width(), 4)
            for r in running:
                _print_wrapped("", _("running: {title} (pid {pid}, log {log})").format(
                    title=tr(r.title), pid=r.pid, log=r.log_path), text_width(), 4)
            for st in stages:
                n_a_stage = all(s["id"] in states and states[s["id"]].not_applicable for s in st["steps"])
                left = sum(1 for s in st["steps"] if not (s["id"] in states and states[s["id"]].status.done))
                # every stage with steps left says how many, begun or not (walk 19; walk 33 #12: some stages had a
                # count and others none)
                under_way = spaced(_("({left} of {n} steps left)").format(left=left, n=len(st["steps"]))) if (
                    left > 0 and not n_a_stage) else ""
                skipped = sum(1 for s in st["steps"] if s["id"] in states and states[s["id"]].status.value == "skipped"
                              and not states[s["id"]].not_applicable)  # walk 27 #5: "[ OK ]" over a person's skip
                by_person = spaced(ngettext("({n} step skipped by a person)", "({n} steps skipped by a person)",
                                            skipped).format(n=skipped)) if skipped and not n_a_stage else ""
                print(f"{'[ -- ]' if n_a_stage else STATUS_GLYPH.get(st['status'], '[    ]')} {_(st['title'])}{under_way}"
                      f"{by_person}")
                for s in st["steps"]:
                    reason = b.reason_shown(states[s["id"]]) if s["reason"] else ""
                    extra = _(" -- ") + reason if reason else ""  # zh: "——" (walk 42 #Q)
                    if s["verdict"] in ("warn", "unknown") and s["status"] in ("pending", "cpu-only"):
                        # what the last check or run found
                        extra = spaced(_("({verdict})").format(verdict=_(s["verdict"]))) + extra
                    stale = spaced(_("(re-check: rebooted since)")) if s["stale_after_reboot"] else ""
                    if s["plan_changed_since_check"]:
                        stale += spaced(_("(re-check: the plan changed since: {changes})").format(
                            changes=b.plan_changed_words(s["id"], plan_changes)))
                    state = states.get(s["id"])
                    n_a = state is not None and state.not_applicable and bool(reason)
                    first = f"    {'[ -- ]' if n_a else STATUS_GLYPH.get(s['status'], '[    ]')} {s['id']:<28} "
                    # the machine's own skip ("not applicable: ..." says it) is not shown as a person's [SKIP]
                    text = reason + stale if n_a else f"{_(s['status'])}{extra}{stale}"
                    _print_wrapped(first, text, text_width(), len(first))
                    if s["id"] in withdrawn:
                        _print_wrapped(" " * len(first), b.withdrawn_confirmation(s["id"], withdrawn), text_width(),
                                       len(first))
            _print_wrapped("", _("(steps and their status only; the inventory, every finding, the measured "
                                         "figures and past action runs: `bringup report`)"), text_width(), 1)
    finally:
        b.close()
    return 0


STATUS_GLYPH = {"pending": "[    ]", "running": "[ >> ]", "passed": "[ OK ]", "confirmed": "[ OK ]",
                "failed": "[FAIL]", "skipped": "[SKIP]", "interrupted": "[ !! ]", "warned": "[WARN]",
                "cpu-only": "[CPU ]"}


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def cmd_capture(args: argparse.Namespace) -> int:
    import asyncio

    from wizard.capture import capture
    from wizard.engine import host_identity, local_host

    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("capture reads this machine; --snapshot makes no sense here"), file=sys.stderr)
        return EXIT_ERROR
    if opt(args, "nodes") is not None or opt(args, "hostfile") is not None:
        return cmd_capture_fleet(args)
    host = local_host()
    identity = asyncio.run(host_identity(host))
    plan: dict[str, Any] = {}
    try:
        from wizard.store import default_state_dir, list_builds

        sd = Path(opt(args, "state")) if opt(args, "state") else default_state_dir()
        if list_builds(sd):
            from wizard.engine import Build

            import steps

            b = Build.open(sd, steps.STAGES, identity)
            plan = b.plan()
            b.close()
    except Exception as exc:  # noqa: BLE001 - a capture must work even when the build is broken
        print("bringup: note: " + _("plan answers not included ({reason})").format(reason=exc), file=sys.stderr)
    out = Path(args.output)
    problem = (_("{path} is a directory: give the bundle's file name (e.g. {example})").format(
                   path=out, example=out / "capture.tar.gz") if out.is_dir()
               else _("cannot write the bundle to {path}: its directory {parent} does not exist").format(
                   path=out, parent=out.parent) if not out.parent.is_dir() else "")
    if not problem:  # a device, FIFO, socket or symlink is refused as report -o refuses it (walk 22: -o /dev/null
        # as root made /dev/null a regular file)
        from wizard.fileedit import NotRegularFileError, refuse_non_regular

        try:
            refuse_non_regular(out)
        except NotRegularFileError as exc:
            problem = tr(exc.args[0])
    if problem:  # said before the probes run (walk 20: a traceback after them)
        print(_("bringup: error: ") + problem, file=sys.stderr)
        return EXIT_ERROR
    try:
        manifest = asyncio.run(capture(host, out, identity, plan=plan))
    except OSError as exc:
        print(_("bringup: error: ") + _("cannot write the bundle to {path}: {reason}").format(
            path=out, reason=tr(os_error(exc))), file=sys.stderr)
        return EXIT_ERROR
    from wizard.capture import not_collected

    causes = _("; ").join(_(NOT_COLLECTED_WORDS[c]).format(what=names_listed(what))
                       for c, what in not_collected(manifest).items())  # by cause, not probe ids (index.txt has those)
    _print_wrapped("", _("wrote {path}: {probes} probes, {operations} commands and file reads").format(
        path=out, probes=len(manifest["probes"]), operations=len(manifest["ops"]))
        + (_("; not collected here: {probes}").format(probes=causes) if causes else ""), text_width(), 4)
    return 0


NOT_COLLECTED_WORDS = {"not_installed": N_("tool not installed: {what}"), "missing": N_("path missing: {what}"),
                       "denied": N_("needs root (permission denied): {what}"), "timed_out": N_("timed out: {what}"),
                       "other": N_("other: {what}")}
"""``capture``'s words for each cause :func:`wizard.capture.not_collected` groups the probes it could not collect by
(``other``: the error each recorded, as the machine said it, with the probe's name)."""


PLAN_LOCK_WAIT_S = 3.0
"""How long ``plan KEY=VALUE`` waits for another bringup command to let the build go (two commands started
together) before it refuses with "another bringup holds this build"."""


def cmd_plan(args: argparse.Namespace) -> int:
    from wizard.plan import parse_answer

    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("plan edits the build record; --snapshot does not apply"), file=sys.stderr)
        return EXIT_ERROR

    try:
        answers = dict(parse_answer(a) for a in args.answers)
    except ValueError as exc:
        print(_("bringup: error: ") + f"{tr(exc.args[0]) if exc.args else exc}", file=sys.stderr)
        return EXIT_ERROR
    if not answers:  # reading, as status and check do: a build this user cannot write is shown read-only
        b, note = open_build_for_reading(args, _boot_id())
        if b is None:
            print(_("no build yet; set answers with `bringup plan KEY=VALUE` to start one"))
            return 0
        if note:
            print(f"bringup: note: {note}", file=sys.stderr)
        try:
            print_plan(b.store.plan())
        finally:
            b.close()
        return 0
    from wizard.engine import Build
    from wizard.store import list_builds

    import steps

    sd = state_dir(args)
    identity = {"boot_id": _boot_id()}
    wait = PLAN_LOCK_WAIT_S
    if not list_builds(sd):
        import asyncio

        from wizard.engine import host_identity, local_host

        identity = asyncio.run(host_identity(local_host()))
        b = Build.open_or_create(sd, steps.STAGES, identity, wait_s=wait)  # another command may have made it
    else:
        b = Build.open(sd, steps.STAGES, identity, wait_s=wait)
    try:
        if b.observing:
            print(_("bringup: error: ") + _("another bringup holds this build: use its plan form (F2), or close it "
                                         "first"), file=sys.stderr)
            return EXIT_ERROR
        before = b.store.plan()
        recheck = b.set_plan(**answers)
        plan = b.store.plan()
    finally:
        b.close()
    # what it set, each with what it replaced: the whole plan is `bringup plan` alone (walk 17: 40 lines for one key)
    for k in answers:
        old, new = before.get(k), plan.get(k)
        was = _("unset") if old is None else plan_value(old)
        if new is None:
            print(_("cleared {key} (was {was})").format(key=k, was=was))
            continue
        shown = plan_value(new)
        print(_("set {key} = {value}").format(key=k, value=shown) if old == new else
              _("set {key} = {value} (was unset)").format(key=k, value=shown) if old is None else  # walk 35 #15
              _("set {key} = {value} (was {was})").format(key=k, value=shown, was=was))
    if recheck:  # walk 30 #1: the steps whose verdict was judged against the old answer
        _print_wrapped("", _("these steps were checked before this change; check them again: {steps} (`bringup check`, or c on "
                             "each step)").format(steps=", ".join(recheck)), text_width(), 2)
    print(_("`bringup plan` lists every answer."))
    from wizard.plan import plan_warnings

    for said in plan_warnings(answers):
        print(_("bringup: warning: ") + tr(said), file=sys.stderr)
    return 0


def plan_value(v: Any) -> str:
    """A plan answer as ``bringup plan`` prints it: JSON, a whole number without ".0" (1044, as the F2 form shows it;
    walk 20)."""
    from wizard.plan import whole

    return json.dumps(whole(v), ensure_ascii=False)  # a Chinese path as typed (walk 34 #16: "/\u6570\u636e")


def print_plan(plan: Mapping[str, Any]) -> None:
    """The plan answers as ``bringup plan`` prints them: every key, its value (blank when unset), its help, in three
    columns (the keys' as wide as the longest key, the values' 14 to 16 characters), the help wrapped to the
    terminal under itself; a longer value stands on its own line, its help on the next ones in the help column."""
    from wizard.plan import PLAN_KEYS

    shown = {k: "" if plan.get(k) is None else plan_value(plan.get(k)) for k in PLAN_KEYS}
    kw = max(len(k) for k in PLAN_KEYS)
    # the values' column at most 16 wide: the help keeps 40 columns at 80 for its hanging indent (walk 19: a 30-wide
    # column left under 30, and the help fell back to column 7, where it read as a new row)
    vw = max(14, min(16, max(len(v) for v in shown.values())))
    width = text_width()
    for k, pk in PLAN_KEYS.items():
        if len(shown[k]) > vw:  # a long value on its own line, its help under the help column (walk 20)
            print(f"{k:<{kw}} {shown[k]}")
            _print_wrapped(" " * (kw + vw + 2), _(pk.help) if pk.help else "", width, kw + vw + 2)
        else:
            _print_wrapped(f"{k:<{kw}} {shown[k]:<{vw}} ", _(pk.help) if pk.help else "", width, kw + vw + 2)


def _stopped_following(started: list[Any], sd: Path) -> int:
    """Ctrl-C while ``run``/``validate`` follow an action: the supervised run keeps going; say where to find it."""
    if started:
        run = started[0]
        print("\n" + _("stopped following; run {run} keeps running (pid {pid}). See it with `bringup --state {state} "
                       "status` or follow it with `tail -f {log}`.").format(run=run.id, pid=run.pid, state=sd,
                                                                           log=run.log_path), file=sys.stderr)
    return 130


def print_run_lines(lines: list[str]) -> None:
    """An action's log lines as ``bringup run`` follows them: a validation's ``BRINGUP {json}`` events as the TUI shows
    them (:meth:`wizard.validate.LiveView.readable`; walk 34 #17: the raw protocol lines), every other line as it is.
    The log file keeps the events."""
    from wizard.validate import LiveView

    # on a terminal standard output wraps each line to it (WrappedOut; walk 38 #3: a capture's "wrote ..." line ran
    # 371 cells); to a pipe or file every line stays as the log has it
    for line in LiveView.readable(lines):
        print(line, flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """``bringup run STEP``: show the exact commands, ask (unless ``--yes``), run the step's action through
    ``Build.run_action`` (the TUI's path too), print its log as it grows, then its verdict: the step's judge
    (from the log) or its check. Exit status: 0 done, 1 not run, 2 failed or not verified, 3 cannot run."""
    import asyncio

    from wizard.engine import Build, host_identity, local_host
    from wizard.model import overall
    from wizard.store import ActionState

    import steps

    sid, err = resolve_step_id(args.step)
    if sid is None:
        print(_("bringup: error: ") + f"{err}", file=sys.stderr)
        return EXIT_ERROR
    step = steps.step_by_id(sid)
    if step.action is None:
        # say how it is completed from here (walk 48 #21: "checked or confirmed instead" for a step with no check, and no
        # word of how a shell confirms one)
        from wizard.engine import is_checked

        print(_("bringup: error: ") + (
            _("step {step} has no action: `bringup check` checks it").format(step=step.id) if is_checked(step) else
            _("step {step} has no action and no check: confirm it with a note, d on the step in the TUI, or from a "
              "shell in an answers file's [confirm] for `bringup auto --answers FILE`").format(step=step.id)),
            file=sys.stderr)
        return EXIT_ERROR
    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("run acts on this machine; --snapshot describes another one"), file=sys.stderr)
        return EXIT_ERROR
    host = local_host()
    identity = asyncio.run(host_identity(host))
    sd = state_dir(args)
    b = Build.open_or_create(sd, steps.STAGES, identity, dry_run=bool(opt(args, "dry_run")))
    if b.observing and not opt(args, "dry_run"):  # refused before its commands are shown, in a shell's words
        b.close()
        print(_("bringup: error: ") + held_refusal(b), file=sys.stderr)
        return EXIT_ERROR
    said_no: list[int] = []
    started: list[Any] = []
    width = text_width()

    def show(prep) -> None:
        """The confirmation: its words wrapped to the terminal, the exact commands (and diffs) verbatim."""
        shown = prep.confirmation()
        for i, line in enumerate(shown.words):
            print("\n".join(_wrap("  " if i else "", tr(line).strip(), width, 2)))
        if prep.needless:  # as the TUI's dialog says it (walk 45 #10)
            print("\n".join(_wrap("  ! ", _(prep.needless), width, 4)))
        for line in shown.commands:  # verbatim; a line that says what a command does (a Msg) in the reader's language
            print(tr(line))  # on a terminal a long command wraps where a shell reads it back (WrappedOut)

    def confirm(prep) -> bool:
        show(prep)
        if prep.dry_run or args.yes:
            return True
        if not sys.stdin.isatty():
            print(_("bringup: error: ") + _("not a terminal; pass --yes to run without asking"), file=sys.stderr)
            said_no.append(EXIT_ERROR)
            return False
        try:
            answer = input(_("Run it? [y/N] "))
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print(_("not run"))
            said_no.append(1)
            return False
        return True

    def on_start(run) -> None:
        started.append(run)
        if run.state is ActionState.RUNNING:
            print(_("started run {run} (pid {pid}); log: {log}").format(run=run.id, pid=run.pid, log=run.log_path))

    def on_lines(lines: list[str]) -> None:
        print_run_lines(lines)

    try:
        try:
            out = asyncio.run(b.run_action(host, step.id, confirm=confirm, on_start=on_start, on_lines=on_lines))
        except KeyboardInterrupt:
            return _stopped_following(started, sd)
        prep = out.prepared
        if prep.refusal_kind == "running":  # its commands are not shown: nothing is asked or run
            print(_("bringup: error: ") + running_refusal(prep.running, step.id), file=sys.stderr)
            return EXIT_ERROR
        if prep.refusal:
            show(prep)
            if prep.refusal_kind == "done":  # already as the action would leave it: done, nothing run
                _print_wrapped("  ", tr(prep.refusal), width, 2)
                return 0
            if prep.refusal_kind == "manual":
                _print_wrapped("  ", _("cannot run here: {reason}").format(reason=tr(prep.refusal)), width, 2)
                from wizard.plan import key_help

                if key_help(prep.resolved.plan_key):  # what the answer is, as the TUI's dialog shows it
                    _print_wrapped("  ", key_help(prep.resolved.plan_key), width, 2)
            elif prep.refusal_kind == "root":  # say so before asking, with how to keep this build
                print(_("bringup: error: ") + _("this action needs root: {command}").format(
                    command=f"sudo {sys.argv[0] or 'bringup'} --state {sd} run {step.id}"), file=sys.stderr)
            elif prep.refusal_kind == "observing" and prep.dry_run:
                # a dry run only shows what would run: shown, not recorded (walk 33 #14: the commands, then an error);
                # one that could not run here anyway says why, as without the other bringup (walk 38 #19)
                if prep.resolved.manual:
                    _print_wrapped("  ", (tr(prep.resolved.manual) if prep.resolved.done else _(
                        "cannot run here: {reason}").format(reason=tr(prep.resolved.manual))), width, 2)
                _print_wrapped("", _("dry run: nothing was run; not recorded in the build: {why}").format(
                    why=held_refusal(b)), width, 4)
                return 0
            else:
                print(_("bringup: error: ") + (held_refusal(b) if prep.refusal_kind == "observing" else tr(prep.refusal)),
                      file=sys.stderr)
            return EXIT_ERROR
        if out.declined:
            return said_no[0] if said_no else 1
        if out.error:
            print(_("bringup: error: ") + f"{tr(out.error)}", file=sys.stderr)
            return EXIT_ERROR
        run = out.run
        assert run is not None
        if run.state is ActionState.DRY_RUN:
            _print_wrapped("", _("dry run: nothing was run (recorded as run {run}, {log})").format(
                run=run.id, log=run.log_path), width, 4)
            return 0

        print(tr(b.run_outcome(run)))
        rc = 0 if run.state is ActionState.SUCCEEDED else 2
        if out.checked:  # the commands ran; then its check verified what they were for
            print(_("checking {step} ...").format(step=step.id))
            for f in out.findings:
                print(f"{GLYPH[f.verdict.value]} {f.id:<18} {tr(f.message)}")
            rc = 0 if b.status(step.id).done else 2
        elif rc == 0 and step.action.judge is not None:  # judged from its log when it ended
            for f in out.findings:
                print(f"{GLYPH[f.verdict.value]} {f.id:<18} {tr(f.message)}")
            rc = overall(out.findings).exit_code
        return rc
    finally:
        b.close()


def new_findings_said(new: list[dict[str, Any]]) -> str:
    """What the report's new findings are, after their count: " (all pass)", or how many are not a pass (walk 23: "3
    new" beside "3 blocking" read as three new problems; they were three passes)."""
    if not new:
        return ""
    other = sum(f.get("verdict") != "pass" for f in new)
    return spaced(_("(all pass)")) if not other else spaced(_("({n} not a pass)").format(n=other))


def resolved_by_plan_said(resolved: list[dict[str, Any]]) -> str:
    """After the report's resolved count: how many a plan edit settled rather than a repair (walk 31 #3), or ""."""
    n = sum(bool(f.get("plan_changed")) for f in resolved)
    return spaced(_("({n} by a plan change, not a repair)").format(n=n)) if n else ""


def held_refusal(b: Any) -> str:
    """Why ``run`` or ``validate`` cannot start an action of build ``b`` from this shell while another bringup holds
    it (its pid), and what to do: the one wording both commands print (walk 23: validate said "this window")."""
    return _("another bringup ({holder}) holds this build: run the step's action from its window (a on the step), "
             "or close it first").format(holder=b.lock.holder or _("another process"))


def running_refusal(run: Any, step_id: str) -> str:
    """Why ``run`` or ``validate`` does not start ``step_id``'s action while its run ``run`` goes on
    (:meth:`wizard.engine.Build.running_run`), and how to follow that run: the one wording both commands print
    (walk 24: a second burn-in started beside the first, on the same GPUs)."""
    if run.step_id != step_id:  # another step's run on the same GPUs (Build.gpu_load_run)
        return _("run {run} of {other} is still running on this node (pid {pid}): {step} is not started beside "
                 "it, as a second load would spoil both runs' figures. Wait for it (`tail -f {log}`) or cancel it "
                 "(k on its screen in bringup's window), then start {step} again").format(
            run=run.id, other=run.step_id, step=step_id, pid=run.pid, log=run.log_path)
    return _("run {run} of {step} is still running (pid {pid}): not started again. Follow it with `tail -f {log}`, "
             "or in bringup's window (a on the step)").format(run=run.id, step=step_id, pid=run.pid, log=run.log_path)


def cmd_validate(args: argparse.Namespace) -> int:
    """``bringup validate NAME``: run the validation step's action through ``Build.run_action`` (recorded like
    ``run``; it changes nothing, so it never asks), follow it with one line per step of the script
    (``--verbose``: the raw log), then print the findings and results the engine judged and stored with the
    run, like ``check``. ``--json``: only the check-shaped document on stdout, with ``step``, ``run``,
    ``results`` (the results table), ``series`` (all-reduce busbw by size, with the floor) and ``ran_on_cpu``
    added. Exit status: the verdict's (0 pass/skip, 1 warn/unknown, 2 fail), but 1 for a passing run that fell back to
    the CPU without being asked to (validate_device auto, no GPU: no GPU was validated); 3 when bringup could not run
    it."""
    import asyncio

    from wizard.engine import Build, host_identity, local_host, ran_on_cpu_run
    from wizard.model import StepStatus, overall
    from wizard.plan import parse_value
    from wizard.store import ActionState
    from wizard.validate import event_line

    import steps

    vc = VALIDATE_COMMANDS[args.kind]
    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("validate runs on this machine; --snapshot describes another one"), file=sys.stderr)
        return EXIT_ERROR
    step = validate_step(args.kind)
    raw = {"validate_device": opt(args, "device"), "torch_python": opt(args, "python"),
           "validate_quick": True if opt(args, "quick") else None, **vc.plan(args)}
    overrides: dict[str, Any] = {}
    try:
        for k, v in raw.items():
            if v is not None:
                overrides[k] = parse_value(k, str(v).lower() if isinstance(v, bool) else str(v))
    except ValueError as exc:
        print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)
        return EXIT_ERROR
    as_json = bool(opt(args, "json"))
    verbose = bool(opt(args, "verbose"))
    out = sys.stderr if as_json else sys.stdout  # --json keeps stdout for the document alone
    host = local_host()
    identity = asyncio.run(host_identity(host))
    sd = state_dir(args)
    b = Build.open_or_create(sd, steps.STAGES, identity, dry_run=bool(opt(args, "dry_run")))
    if b.observing and not opt(args, "dry_run"):  # as `run` refuses it, before its commands are shown (walk 23)
        b.close()
        print(_("bringup: error: ") + held_refusal(b), file=sys.stderr)
        return EXIT_ERROR
    started: list[Any] = []

    def on_start(run) -> None:
        started.append(run)
        if run.state is ActionState.RUNNING:
            print(_("started run {run} (pid {pid}); log: {log}").format(run=run.id, pid=run.pid, log=run.log_path),
                  file=out)

    last_tick: list[int] = []  # the seconds count of the last progress line printed

    def on_lines(lines: list[str]) -> None:
        for line in lines:
            if not verbose and quiet_tick(line, last_tick):
                continue
            text = line if verbose else event_line(line)
            if text is None and line.startswith("# dcgmi "):  # the progress wrapper's lines (wizard.progress)
                text = line[2:]
            if text is not None:
                print(text, file=out, flush=True)

    def show(prep) -> bool:  # nothing to confirm: it changes nothing; show what runs
        print(tr(prep.confirmation().words[0]), file=out)  # "{title}（{step}）"; wrapped on a terminal (WrappedOut)
        for line in prep.commands:
            print(f"  {tr(line)}", file=out)
        return True

    try:
        try:
            res = asyncio.run(b.run_action(host, step.id, overrides, confirm=show, on_start=on_start,
                                           on_lines=on_lines, poll_s=0.5))
        except KeyboardInterrupt:
            return _stopped_following(started, sd)
        prep = res.prepared
        if prep.refusal:
            print(tr(prep.confirmation().words[0]), file=out)
            print(_("bringup: error: ") + (held_refusal(b) if prep.refusal_kind == "observing" else
                                        running_refusal(prep.running, step.id) if prep.refusal_kind == "running" else
                                        _("cannot run it here: {reason}").format(reason=tr(prep.refusal))),
                  file=sys.stderr)
            return EXIT_ERROR
        if res.error:
            print(_("bringup: error: ") + _("could not start the validation: {reason}").format(reason=tr(res.error)),
                  file=sys.stderr)
            return EXIT_ERROR
        run = res.run
        assert run is not None
        if run.state is ActionState.DRY_RUN:
            print(_("dry run: nothing was run (recorded as run {run}, {log})").format(run=run.id, log=run.log_path),
                  file=out)
            return 0

        findings = res.findings
        verdict = overall(findings)
        extra = res.results
        measured = bool(extra and extra.get("results"))
        # walk 33 #10: "what it measured" under a run that measured nothing (torch missing)
        print((_("the run {outcome}; the verdicts below judge what it measured") if measured else
               _("the run {outcome} and measured nothing; the verdicts below say why")).format(
            outcome=tr(b.run_outcome(run))), file=out)
        cpu_only = b.status(step.id) is StepStatus.CPU_ONLY
        asked = str(overrides.get("validate_device") or b.store.plan().get("validate_device") or "auto")
        # a GPU validation that fell back to the CPU (validate_device auto, no GPU seen) proved no GPU: a script reading
        # exit 0 would take the node's GPUs as validated (walk 28 #3); a CPU run asked for by name is what was asked
        exit_code = 1 if cpu_only and asked != "cpu" and verdict.exit_code == 0 else verdict.exit_code
        if as_json:
            doc = check_doc(identity, verdict, findings, step.stage_id, None, run.started_at)
            doc.update({"step": step.id, "step_status": b.status(step.id).value,
                        "ran_on_cpu": ran_on_cpu_run(run),
                        "run": {"id": run.id, "state": run.state.value,
                                                  "exit_status": run.exit_status, "log": run.log_path,
                                                  "argv": run.argv}})
            doc.update(extra)
            print(json.dumps(doc, indent=2))
        else:
            _print_results(extra)
            print_findings(findings, width=text_width())  # wrapped to the terminal, as `check` prints them
            print(_("overall: {verdict} (of the software path on the CPU: the GPU is not validated)").format(
                verdict=_(verdict.value)) if cpu_only else _("overall: {verdict}").format(verdict=_(verdict.value)))
            st = b.store.step_states().get(step.id)
            if st is not None:
                print(_("step {step}: {status}").format(step=step.id, status=_(st.status.value))
                      + (_(" -- ") + b.reason_shown(st) if st.reason else ""))  # as `status` shows it (walk 23)
            if exit_code != verdict.exit_code:
                _print_wrapped("", _("exit status 1: validate_device is {device} and no GPU was used, so no GPU was "
                                     "validated (run it on the GPUs, or ask for the CPU by name: --device cpu)").format(
                    device=asked), text_width(), 0)
        return exit_code
    finally:
        b.close()


SECONDS_TICK = 30
"""A soak or burn-in says how far it is once a second; the CLI prints one such line every this many seconds (and the
first and the last), the log keeps them all (walk 28 #19: 600 lines for a ten-minute burn-in)."""


def quiet_tick(line: str, last: list[int]) -> bool:
    """``line`` is a seconds-counting progress event (``unit: s``) the CLI leaves out: neither the first nor the last,
    and under :data:`SECONDS_TICK` seconds after the one printed before (``last`` holds its count, updated here).
    Never raises."""
    from wizard.parsers.validate import Event, parse_event_line

    e = parse_event_line(line) if '"progress"' in line else None
    if not isinstance(e, Event) or e.kind != "progress" or e.get("unit") != "s" or e.rank:
        return False
    done, total = e.get("done"), e.get("total")
    if not isinstance(done, int) or not isinstance(total, int) or isinstance(done, bool):
        return False
    if last and 0 < done < total and done - last[0] < SECONDS_TICK:
        return True
    last[:] = [done]
    return False


def _print_results(extra: Mapping[str, Any]) -> None:
    """The results table and, for an all-reduce sweep, the busbw-by-size chart with the floor."""
    rows = extra.get("results") or []
    if rows:
        print(_("results:"))
        from wizard.validate import limit_shown, metric_word, test_word, value_shown

        for r in rows:
            limit = limit_shown(r)
            fl = "" if limit == "-" else spaced(_("(limit {limit})").format(limit=limit))
            subj = f" {subject_name(r['subject'])}" if r.get("subject") and r.get("subject") != "host" else ""
            # the test, where it ran, then " · " and the metric (walk 43 #4: "memory patterns pattern errors" ran
            # two names together)
            print(f"  {GLYPH.get(r.get('verdict'), '[    ]')} {test_word(str(r.get('test')))}{subj} · "
                  f"{metric_word(str(r.get('metric')))}{_(': ')}{value_shown(r.get('value'), r.get('unit'))}{fl}"
                  .rstrip())
    series = extra.get("series") or {}
    points = series.get("points") or []
    if len(points) > 1:
        try:
            from wizard.textchart import bandwidth_chart
        except ImportError:  # the chart is a nicety; the table has the figures
            return
        basic = os.environ.get("TERM") == "linux" or not sys.stdout.isatty()
        for line in bandwidth_chart([(s, v) for s, v in points], series.get("floor_gb_s"), unicode=not basic):
            print("  " + line)


def cmd_ack(args: argparse.Namespace) -> int:
    """List acknowledgements, or acknowledge the event behind a finding's key with a reason."""
    from wizard.engine import Build
    from wizard.model import subject_prefix
    from wizard.store import list_builds

    import steps

    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("ack edits the build record; --snapshot does not apply"), file=sys.stderr)
        return EXIT_ERROR
    sd = state_dir(args, write=args.key is not None)
    if not sd.is_dir() or not list_builds(sd):
        if args.key is None:
            print(_("no build under {path} yet: nothing to acknowledge").format(path=sd))
            return 0
        print(_("bringup: error: ") + _("no build under {path} yet: nothing to acknowledge").format(path=sd),
              file=sys.stderr)
        return EXIT_ERROR
    b = Build.open(sd, steps.STAGES, {"boot_id": _boot_id()}, readonly=args.key is None)
    try:
        if args.key is None:
            acks = b.store.acks()
            if not acks:
                print(_("no acknowledged events"))
            for key, a in acks.items():
                print(f"{key}  {a['finding_id']}  {tr_subject(subject_prefix(a['subject'], a['message']))}{tr(a['message'])}\n    "
                      + _("acknowledged by {user} at {at}: {reason}").format(user=a["user"], at=a["at"],
                                                                             reason=a["reason"]))
            return 0
        if not (args.reason or "").strip():
            print(_("bringup: error: ") + _("say why with --reason (it is kept with the build)"), file=sys.stderr)
            return EXIT_ERROR
        if b.observing:
            print(_("bringup: error: ") + _("another bringup holds this build; acknowledge there"), file=sys.stderr)
            return EXIT_ERROR
        found = None
        for s in b.steps():
            _run, findings = b.store.latest_check(s.id)
            found = next((f for f in findings if f.key == args.key), None)
            if found:
                break
        if found is None:
            from wizard.registry import did_you_mean

            keys = [f.key for s in b.steps() for f in b.store.latest_check(s.id)[1] if f.key]
            near = did_you_mean(args.key, keys)
            said = (_("no finding with key {key} in this build's latest checks; did you mean {ids}?") if near else
                    _("no finding with key {key} in this build's latest checks; `bringup check` prints each "
                      "acknowledgeable finding's key (a finding id is not a key)"))
            print(_("bringup: error: ") + said.format(key=repr(args.key), ids=_(" or ").join(near)), file=sys.stderr)
            return EXIT_ERROR
        b.acknowledge(found, args.reason)
        print(_("acknowledged: {subject}: {message}").format(subject=found.subject, message=tr(found.message))
              + "\n  " + _("it no longer counts in checks of this build"))
        return 0
    finally:
        b.close()


def resolve_step_id(word: str) -> tuple[str | None, str]:
    """A step id, or a finding id (resolved to the step it belongs to, :func:`wizard.registry.step_of`),
    -> (step id, "") ; unknown -> (None, an error naming the closest known ids)."""
    import steps
    from wizard.registry import did_you_mean, known_ids, step_of

    step_ids = [s.id for s in steps.all_steps()]
    sid = step_of(word, step_ids)
    if sid is not None:
        return sid, ""
    near = did_you_mean(word, known_ids(step_ids)) if word.strip() else []  # nothing typed: nothing is near it
    said = (_("no step or finding id {word}; did you mean {ids}?") if near else
            _("no step or finding id {word}; `bringup status` lists the steps"))
    return None, said.format(word=repr(word), ids=_(" or ").join(near))



EXPLAIN_MAX_BYTES = 8 * 1024 * 1024
"""``explain`` judges at most this many bytes of one input (a file or standard input), ending at the last
whole line; the rest is not read, and a finding says how much was judged and how to judge the rest. Real
outputs cost up to ~35 times their size in memory and ~2.5 s of CPU per MiB to judge (benchmarks/bench_fuzz.py),
so 8 MiB keeps one input under 512 MiB and ~25 s; a kernel log of 8 MiB is about 90,000 lines."""

EXPLAIN_MAX_LINES = 200_000
"""...and at most this many lines: parsers keep an object per line or row (a ``--query-gpu`` CSV row costs
~1.5 KB), so many short lines cost memory per line, not per byte."""

EXPLAIN_BINARY_SHARE = 0.3
"""An input whose bytes are more than this share control bytes (not tab, line ends, form feed or ESC) or not
UTF-8 is binary data, not a command's output: it is said so and not judged."""

EXPLAIN_CPU_BASE_S = 2.0
EXPLAIN_CPU_PER_MIB_S = 3.0
EXPLAIN_CPU_PER_LINE_S = 50e-6
"""``explain`` judges its inputs in a child process (:func:`explain_in_child`) that the kernel stops after 2 s + 3 s
per MiB + 50 us per line judged of CPU time (:func:`explain_cpu_budget`, rounded up to whole seconds; 8 MiB of
90,000 lines: ~31 s), which an ``explain.time_limit`` finding says: real outputs take well under it
(benchmarks/bench_fuzz.py); what takes longer is a shape no tool prints (a line of a million characters that some
pattern reads in quadratic time)."""

_CONTROL_BYTES = bytes(b for b in range(256) if b < 0x20 and b not in b"\t\n\r\x0b\x0c\x1b" or b == 0x7f)


@dataclass
class ExplainInput:
    """What ``explain`` read of one input. ``text``: the judged part, decoded (UTF-8, or UTF-16 with its
    byte-order mark, as Windows PowerShell writes redirected output; bytes that do not decode become U+FFFD);
    ``judged_bytes``/``judged_lines``: its size; ``total_bytes``: the whole input's size in bytes, ``None``
    when unknown (a pipe not read to its end); ``cut``: "" when all of it is judged, else "bytes" or
    "lines" (which limit cut it); ``binary``: the share (0-1) of non-text bytes when it is over
    :data:`EXPLAIN_BINARY_SHARE`, else 0; ``gzip``: it starts with the gzip magic number (a capture bundle is
    one); ``last_line``: the last non-blank line judged of a cut input (where judging stopped; "" when longer
    than 500 characters); ``utf16``: it was UTF-16 (a byte-order mark)."""

    name: str
    text: str
    judged_bytes: int
    judged_lines: int
    total_bytes: int | None
    cut: str = ""
    binary: float = 0.0
    gzip: bool = False
    last_line: str = ""
    utf16: bool = False


def read_explain_input(name: str) -> ExplainInput:
    """Read one ``explain`` input (``-`` = standard input), at most :data:`EXPLAIN_MAX_BYTES` + 1 bytes of it
    (standard input is not read further, so a huge pipe costs neither time nor memory), cut to whole lines
    within :data:`EXPLAIN_MAX_BYTES` and :data:`EXPLAIN_MAX_LINES`.

    Raises:
        OSError: the file cannot be opened or read.
    """
    import codecs
    import re
    import stat

    def size_of(fd: int, got: int) -> int | None:
        try:
            st = os.fstat(fd)
        except (OSError, ValueError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) and st.st_size >= got else None

    if name == "-":
        raw = sys.stdin.buffer.read(EXPLAIN_MAX_BYTES + 1)
        total = size_of(sys.stdin.buffer.fileno(), len(raw))
    else:
        with open(name, "rb") as f:
            raw = f.read(EXPLAIN_MAX_BYTES + 1)
            total = size_of(f.fileno(), len(raw))
    if total is None and len(raw) <= EXPLAIN_MAX_BYTES:
        total = len(raw)  # read to its end
    cut = ""
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    if len(raw) > EXPLAIN_MAX_BYTES:
        cut = "bytes"
        nl = -1 if utf16 else raw.rfind(b"\n", 0, EXPLAIN_MAX_BYTES)  # UTF-16: cut at a line end once decoded
        raw = raw[:nl + 1 if nl >= 0 else EXPLAIN_MAX_BYTES & ~1]
    if not utf16 and raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n") > EXPLAIN_MAX_LINES:
        cut = "lines"  # line ends are the same bytes in UTF-8 and ASCII: cut the bytes, then decode
        end = next(itertools.islice(re.finditer(rb"\r\n|\r|\n", raw), EXPLAIN_MAX_LINES - 1, None)).end()
        raw = raw[:end]
    if utf16:
        text = raw.decode("utf-16", "replace")
        nontext = text.count("\ufffd") + sum(text.count(chr(b)) for b in _CONTROL_BYTES)
        if text.count("\n") + text.count("\r") - text.count("\r\n") > EXPLAIN_MAX_LINES:
            cut = "lines"
            end = next(itertools.islice(re.finditer(r"\r\n|\r|\n", text), EXPLAIN_MAX_LINES - 1, None)).end()
            text = text[:end]
        elif cut and "\n" in text:
            text = text[:text.rindex("\n") + 1]
        if cut:
            raw = raw[:2 + len(text.encode("utf-16-le", "surrogatepass"))]
    else:
        text = raw.decode("utf-8-sig", "replace")
        nontext = text.count("\ufffd") + len(raw) - len(raw.translate(None, _CONTROL_BYTES))
    share = nontext / max(1, len(text))
    judged, gz = len(raw), raw.startswith(b"\x1f\x8b")
    del raw
    n_lines = text.count("\n") + text.count("\r") - text.count("\r\n") + (not text.endswith(("\n", "\r")) and text != "")
    last = ""
    if cut:  # the last non-blank whole line judged, when it is at most 500 characters (evidence is never cut)
        window = text[-2000:]
        pieces = window.splitlines()[(len(window) < len(text)):]  # the window's first piece may be part of a line
        last = next((ln for ln in reversed(pieces) if ln.strip()), "")
    return ExplainInput(name, text, judged, n_lines, total, cut,
                        share if share > EXPLAIN_BINARY_SHARE else 0.0, gz,
                        last if len(last) <= 500 else "", utf16)


def explain_cpu_budget(inp: ExplainInput) -> float:
    """CPU seconds ``explain`` may spend judging ``inp`` (see :data:`EXPLAIN_CPU_BASE_S`)."""
    return (EXPLAIN_CPU_BASE_S + EXPLAIN_CPU_PER_MIB_S * inp.judged_bytes / (1024 * 1024)
            + EXPLAIN_CPU_PER_LINE_S * inp.judged_lines)


EXPLAIN_MAX_MEMORY = 512 * 1024 * 1024
"""Address space (bytes) of the process that judges one ``explain`` input (RLIMIT_AS, so its resident memory stays
under it too): past it, judging stops and an ``explain.memory_limit`` finding says so."""


def explain_in_child(names: list[str], kind: str | None) -> tuple[list[tuple[str, Any]], str, dict[str, Any]]:
    """Read and judge ``names`` in order in one forked child (:func:`_explain_child`): before each input it sets
    RLIMIT_CPU to the CPU time used so far + that input's :func:`explain_cpu_budget` (the kernel stops it, whatever
    it is doing, even inside one regular-expression match), and it runs under RLIMIT_AS = :data:`EXPLAIN_MAX_MEMORY`.
    Results come back pickled through a pipe as each input is done.

    Returns (done, stopped, meta): ``done`` holds ("ok", the result's JSON shape, ``Explained.to_dict()``) or
    ("unreadable", message) per input finished, in order; ``stopped`` is "" when the child got through all of them, else why it stopped on the next one ("time",
    "memory", or the child's exit status) and ``meta`` what it had read of that one (sizes, its longest line).
    """
    return _explain_collect(*_explain_fork(names, kind))


def _explain_fork(names: list[str], kind: str | None) -> tuple[int, int]:
    """Fork the judging child of :func:`explain_in_child` for ``names``: (its pid, the read end of its pipe)."""
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller (os._exit), never flushes the parent's buffers
        code = 70
        try:
            os.close(rfd)
            code = _explain_child(names, kind, wfd)
        except MemoryError:
            code = 71
        finally:
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def explain_in_children(names: list[str], kind: str | None) -> list[tuple[list[str], tuple[list[tuple[str, Any]], str,
                                                                                               dict[str, Any]]]]:
    """:func:`explain_in_child` for ``names`` split into up to one contiguous run per CPU (balanced by file size), the
    children judging side by side: [(the run's names, what its child returned)] in order. One child for a few inputs,
    for standard input, or on one CPU. All children are forked before any pipe is read (by one thread each), so no
    fork happens beside a running thread."""
    from concurrent.futures import ThreadPoolExecutor

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    k = min(cpus, 4, len(names) // EXPLAIN_PER_CHILD_MIN)
    if k < 2 or "-" in names:
        return [(names, explain_in_child(names, kind))]
    sizes = []
    for n in names:
        try:
            sizes.append(max(1, os.path.getsize(n)))
        except OSError:
            sizes.append(1)
    share, acc = sum(sizes) / k, 0
    runs: list[list[str]] = []
    cur: list[str] = []
    for n, size in zip(names, sizes):
        if cur and acc + size / 2 > share * (len(runs) + 1) and len(runs) < k - 1:
            runs.append(cur)
            cur = []
        cur.append(n)
        acc += size
    runs.append(cur)
    started = [_explain_fork(run, kind) for run in runs]
    with ThreadPoolExecutor(len(started)) as pool:
        got = list(pool.map(lambda pr: _explain_collect(*pr), started))
    return list(zip(runs, got))


EXPLAIN_PER_CHILD_MIN = 8
"""``explain`` judges in parallel children only with at least this many inputs each: a child costs its imports
(about 0.2 s on the 2-core test VM), which a few small inputs do not pay back."""


def _explain_collect(pid: int, rfd: int) -> tuple[list[tuple[str, Any]], str, dict[str, Any]]:
    """Read the results :func:`_explain_child` sends through ``rfd`` until it ends, then reap ``pid``: (done,
    stopped, meta) as :func:`explain_in_child` returns them."""
    import pickle
    import signal
    import struct

    done: list[tuple[str, Any]] = []
    meta: dict[str, Any] = {}
    with os.fdopen(rfd, "rb") as pipe:
        while head := pipe.read(4):
            (n,) = struct.unpack("!I", head)
            msg, body = pickle.loads(pipe.read(n))
            if msg == "start":
                meta = body
            else:
                done.append((msg, body))
                meta = {}
    _pid, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return done, "", {}
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
        return done, "time", meta
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 71:
        return done, "memory", meta
    return done, Msg("the judging process ended with status {status}", status=status), meta


def _explain_child(names: list[str], kind: str | None, wfd: int) -> int:
    """The judging child of :func:`explain_in_child`: each input read, judged, sent; 0 when all are done."""
    import pickle
    import resource
    import struct

    from wizard.explain import Explained

    resource.setrlimit(resource.RLIMIT_AS, (EXPLAIN_MAX_MEMORY, EXPLAIN_MAX_MEMORY))
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    with os.fdopen(wfd, "wb") as out:
        def send(msg: str, body: Any) -> None:
            data = pickle.dumps((msg, body))
            out.write(struct.pack("!I", len(data)) + data)
            out.flush()

        for name in names:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            if hard == resource.RLIM_INFINITY:  # reading and the binary check are cheap: room, whatever the last used
                resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(usage.ru_utime + usage.ru_stime + 30), hard))
            try:
                inp = read_explain_input(name)
            except OSError as exc:
                send("unreadable", _("cannot read {path}: {reason}").format(path=name, reason=tr(os_error(exc))))
                return 0
            if inp.binary:
                send("ok", Explained(name, None, "", [binary_input_finding(inp)], 0.0).to_dict())
                continue
            budget = explain_cpu_budget(inp)
            longest = max(map(len, inp.text.split("\n")), default=0)
            send("start", {"name": name, "bytes": inp.judged_bytes, "lines": inp.judged_lines, "longest": longest,
                           "budget": budget, "cut": input_cut_finding(inp).to_dict() if inp.cut else None})
            usage = resource.getrusage(resource.RUSAGE_SELF)
            soft = math.ceil(usage.ru_utime + usage.ru_stime + budget)
            resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
            r = _judge_one(inp.text, name, kind)
            if inp.cut:
                r.findings.insert(0, input_cut_finding(inp))
            del inp
            send("ok", r.to_dict())
    return 0


def _judge_one(text: str, name: str, kind: str | None) -> Any:
    """``explain_text`` in the judging child; a MemoryError a judge reported as its crash is the memory limit."""
    from wizard.explain import explain_text

    r = explain_text(text, name, kind=kind)
    if any(f.verdict.value == "unknown" and "crashed: MemoryError(" in f.message for f in r.findings):
        raise MemoryError
    return r


def over_budget_finding(meta: Mapping[str, Any], how: str) -> Any:
    """The finding (verdict unknown) for an input whose judging was stopped: ``explain.time_limit`` at its CPU
    budget, ``explain.memory_limit`` at :data:`EXPLAIN_MAX_MEMORY`, ``explain.judge_failed`` otherwise (``how``).
    ``meta``: what :func:`_explain_child` had read of it ("bytes", "lines", "longest" line, "budget" s)."""
    from wizard.common import human_bytes
    from wizard.model import Finding, Verdict

    size = Msg("{size} in {lines:,} lines (its longest line: {longest:,} characters)",
               size=human_bytes(meta.get("bytes", 0)), lines=meta.get("lines", 0), longest=meta.get("longest", 0))
    remedy = Msg("Give bringup the tool's own output, or the part of it that matters: no output bringup reads takes "
                 "this much (very long lines are the usual cause). If it is a tool's real output, please report it.")
    if how == "time":
        return Finding("explain.time_limit", Verdict.UNKNOWN, Msg("judging this input was stopped after {budget:.1f} s of CPU time, the limit for {size}: "
                                                                  "nothing of it was judged", budget=meta.get('budget', 0), size=size),
                       "input", (), remedy, "")
    if how == "memory":
        return Finding("explain.memory_limit", Verdict.UNKNOWN, Msg("judging this input was stopped at {human_bytes} of memory, the limit for one input "
                                                                    "({size}): nothing of it was judged", human_bytes=human_bytes(EXPLAIN_MAX_MEMORY), size=size), "input", (), remedy, "")
    return Finding("explain.judge_failed", Verdict.UNKNOWN, Msg("judging this input failed ({how}): nothing of it was judged", how=how), "input", (), "This is a bringup bug: please report it with the input.", "")


def input_cut_finding(inp: ExplainInput) -> Any:
    """The ``explain.input_cut`` finding (verdict unknown: what was not read is not judged) for an input
    :func:`read_explain_input` cut: how much was judged, of how much, and how to judge the rest."""
    from wizard.common import human_bytes
    from wizard.model import Finding, Verdict

    # the clauses are Msgs too (tr translates them inside the sentence); the commands in them are never translated
    of = (Msg("{total:,} bytes in all", total=inp.total_bytes) if inp.total_bytes else
          Msg("more than {size}", size=human_bytes(EXPLAIN_MAX_BYTES)))
    limit = (Msg("at most {size}", size=human_bytes(EXPLAIN_MAX_BYTES)) if inp.cut == "bytes" else
             Msg("at most {lines:,} lines", lines=EXPLAIN_MAX_LINES))
    rest = (Msg("convert it to UTF-8 ({command}) and explain the part after line {line:,}",
                command="`iconv -f UTF-16 -t UTF-8 FILE > out.txt`", line=inp.judged_lines) if inp.utf16 else
            # a file of more than two limits: cut into parts, every part judged (walk 34 #15: `tail -c +N` judged the
            # next 8 MiB of a 106 MiB log, and the Xid at its end in none of twelve rounds)
            Msg("{command} cuts it into {n} parts, then {explain} judges them all",
                command=f"`split -C {human_bytes(EXPLAIN_MAX_BYTES).replace(' ', '').replace('MiB', 'M')} {inp.name} "
                        "part.`", n=-(-(inp.total_bytes or 0) // EXPLAIN_MAX_BYTES), explain="`bringup explain part.*`")
            if inp.name != "-" and inp.cut == "bytes" and (inp.total_bytes or 0) > 2 * EXPLAIN_MAX_BYTES else
            Msg("{command} judges what follows", command=f"`tail -c +{inp.judged_bytes + 1} {inp.name} | bringup explain -`")
            if inp.name != "-" and inp.cut == "bytes" else
            Msg("{command} judges what follows", command=f"`tail -n +{inp.judged_lines + 1} FILE | bringup explain -`")
            if inp.cut == "lines" else Msg("{command} cuts it into parts bringup judges whole",
                                           command="`split -C 8M FILE part.`"))
    return Finding("explain.input_cut", Verdict.UNKNOWN,
                   Msg("only the first {judged_bytes:,} bytes ({human_bytes}, {judged_lines:,} lines) of this "
                       "input were judged ({of}): bringup explain reads {limit} of one input; the rest was not "
                       "read", judged_bytes=inp.judged_bytes, human_bytes=human_bytes(inp.judged_bytes), judged_lines=inp.judged_lines, of=of, limit=limit),
                   "input", (inp.last_line,) if inp.last_line else (),
                   Msg("Judge the rest on its own: {rest}; or give only the part that matters (`tail`, `grep`).", rest=rest), "")


def binary_input_finding(inp: ExplainInput) -> Any:
    """The ``explain.binary_input`` finding (verdict unknown) for an input that is binary data, not text."""
    from wizard.model import Finding, Verdict

    hint = (Msg("It starts like a gzip file: a capture bundle is judged with `bringup check --snapshot FILE`; "
                "decompress other files first (`zcat FILE | bringup explain -`).") if inp.gzip else
            Msg("Give bringup the command's text output (a saved terminal log, `cmd > out.txt 2>&1`)."))
    return Finding("explain.binary_input", Verdict.UNKNOWN,
                   Msg("this input is binary data, not a command's text output: {binary:.0%} of it is control "
                       "bytes or not UTF-8; it was not judged", binary=inp.binary), "input", (), hint, "")


def cmd_explain(args: argparse.Namespace) -> int:
    """Judge each input; exit status = the worst verdict over all inputs (0/1/2), 3 unreadable.

    The inputs are read and judged in a child (:func:`explain_in_child`), which sends each result as its JSON shape;
    this process imports only what it prints with (the child imports the rules: nothing to copy on write)."""
    from wizard.model import Verdict, subject_prefix, worst

    if opt(args, "kind"):
        from wizard.registry import KINDS

        if opt(args, "kind") not in KINDS:
            print(_("bringup: error: ") + _("unknown kind {kind}; kinds: {kinds}").format(
                kind=repr(args.kind), kinds=", ".join(sorted(KINDS))), file=sys.stderr)
            return EXIT_ERROR
    if "-" in args.inputs and sys.stdin is not None and sys.stdin.isatty():  # walk 39 #6b: a blank wait at a terminal
        print(_("bringup explain: paste the output, then press Ctrl-D on a new line (Ctrl-C to stop)"), file=sys.stderr,
              flush=True)
    results: list[dict[str, Any]] = []
    for names, got in explain_in_children(list(args.inputs), opt(args, "kind")):  # runs of inputs, side by side
        mine: list[dict[str, Any]] = []
        out = got
        while True:  # a run's child; a new one after an input it was stopped on
            done, stopped, meta = out
            for how, r in done:
                if how == "unreadable":
                    print(_("bringup: error: ") + f"{r}", file=sys.stderr)
                    return EXIT_ERROR
                mine.append(r)
            if stopped:
                findings = [over_budget_finding(meta, stopped).to_dict()]
                if meta.get("cut") is not None:
                    findings.insert(0, meta["cut"])
                mine.append({"input": names[len(mine)], "kind": None, "title": "", "verdict": "unknown",
                             "confidence": 0.0, "findings": findings})
            if len(mine) >= len(names):
                break
            out = explain_in_child(names[len(mine):], opt(args, "kind"))
        results += mine
    verdict = worst(Verdict(r["verdict"]) for r in results)
    if opt(args, "json"):
        print(json.dumps({"schema": 1, "bringup_version": __version__, "verdict": verdict.value,
                          "inputs": results}, indent=2))
    else:
        width = text_width()  # messages and remedies wrap to the terminal (by cells); evidence lines are cut to it
        cut = False
        for r in results:
            title = " + ".join(tr(t) for t in r["title"].split(" + ")) if r["title"] else _("not recognised")
            _print_wrapped("", f"{r['input']}: {title} -> "  # each kind of a several-kind paste (walk 29 #14)
                                       f"{_(r['verdict'])}", width, 4)
            idw = max(22, min(width - 8 - 34, max((len(f["id"]) for f in r["findings"]), default=0)))
            for f in r["findings"]:  # one id column for the input (walk 40: a 23-character id pushed its message)
                subject = tr_subject(subject_prefix(f["subject"], f["message"]))
                first = f"  {GLYPH[f['verdict']]} {f['id']:<{idw}} "
                _print_wrapped(first, subject + tr(f["message"]), width, len(first))
                if f["verdict"] in ("fail", "warn", "unknown"):
                    for e in f["evidence"][:3]:  # verbatim under a "| ", one row each, cut to the width with "…"
                        row = _cut_row(e, width - 11)
                        cut = cut or row != e.expandtabs()
                        print("         | " + row)
                    if f["remedy"]:
                        _print_wrapped("         -> ", tr(f["remedy"]), width, 12)
        if cut:  # where the cut lines are whole (walk 32 #18: the key part of a line lost to "…")
            _print_wrapped("", _("Evidence lines ending in … are cut to the terminal's width; --json keeps them "
                                 "whole."), width, 0)
    return verdict.exit_code


def cmd_size(args: argparse.Namespace) -> int:
    """``bringup size``: the sizing screen's computation (wizard.sizing.size) from options. Exit 0 fits on the
    given GPUs (and their count suffices), 1 it does not, 3 an input is refused (the reasons on stderr).
    ``--gpu ?`` lists the GPU names the sizing table knows, one a line (exit 0)."""
    from wizard import sizing as szm

    raw: dict[str, str] = {}
    if opt(args, "from_build"):
        b, _note = open_build_for_reading(args, _boot_id())
        if b is not None:
            try:
                raw.update(szm.stored_inputs(b.store.meta()))
            finally:
                b.close()
    if getattr(args, "f_gpu", None) == "?":  # the GPUs the sizing table names, one a line (plan's warning points here)
        print("\n".join(g.name for g in szm.gpu_specs()))
        return 0
    for field_name in SIZE_FLAGS:
        v = getattr(args, f"f_{field_name}", None)
        if v is not None:
            raw[field_name] = v
    inputs, errors = szm.parse_inputs(raw)
    if errors:
        for k, why in errors.items():
            print(_("bringup: error: ") + f"{SIZE_FLAGS[k][0]} {raw.get(k, '')!r}: {tr(why)}", file=sys.stderr)
        return EXIT_ERROR
    s = szm.size(inputs)
    ok = s.fits and s.min_gpus is not None and s.min_gpus <= inputs.gpu_count
    if opt(args, "json"):
        print(json.dumps({"schema": 1, "bringup_version": __version__, "fits": ok, **szm.to_json(s, raw)}, indent=2))
        return 0 if ok else 1
    def gb(b: float | None) -> str:
        return "-" if b is None else f"{b / 1e9:,.1f} GB"

    par = _(", ").join([f"ZeRO-{inputs.zero_stage}", f"Nd {inputs.nd}"]  # "，" in Chinese (walk 24 #12)
                       + ([f"TP {inputs.tp}", f"PP {inputs.pp}"] if inputs.mp > 1 else []))
    rows = [(_("workload"), _("{params} params, {method}, {parallelism}").format(
                params=szm.fmt_count(inputs.params), method=_(szm.METHODS[inputs.method]), parallelism=par)),
            (_("model states"), _("{size} per GPU (paper {paper}, DeepSpeed {deepspeed})").format(
                size=gb(s.states_per_gpu), paper=gb(s.model_states_per_gpu), deepspeed=gb(s.ds_states_per_gpu))),
            (_("activations"), _("{size} per GPU (estimate)").format(size=gb(s.activations))),
            (_("per GPU"), _("{size} vs {gpu} ({memory}): {fits}").format(  # "32GB (32.0 GB)", not "32GB 32.0 GB"
                size=gb(s.per_gpu), gpu=inputs.gpu, memory=gb(s.gpu_memory), fits=_("fits") if s.fits else _("SHORT"))),
            (_("min GPUs"), (_("{count} (paper {paper}, DeepSpeed {deepspeed}); {given} given").format(
                count=s.min_gpus, paper=s.min_gpus_paper or _("none"),
                deepspeed=s.min_gpus_ds or (_("none") if s.ds_states_per_gpu is not None else "-"),
                given=inputs.gpu_count) if s.min_gpus else  # walk 20: "no count is enough (paper no count is ...)"
                # walk 32 #10: a dead end that blamed DeepSpeed at ZeRO-0 (no DeepSpeed estimator there); the way out,
                # the ZeRO-3 count, as the TUI's summary gives it
                (_("no GPU count is enough (by the paper's formula or DeepSpeed's); {given} given").format(
                    given=inputs.gpu_count) if s.ds_states_per_gpu is not None else
                 _("no GPU count is enough at ZeRO-{stage}; {given} given").format(stage=inputs.zero_stage,
                                                                                  given=inputs.gpu_count))
                + (spaced(_("(ZeRO-3: {count})").format(count=s.min_gpus_stage3 or _("not enough either")))
                   if inputs.zero_stage < 3 else ""))
                + (_(": the activations alone ({size}) exceed one GPU: turn on checkpointing (--checkpointing full), or "
                     "cut micro-batch or sequence").format(size=gb(s.activations))
                   if s.min_gpus is None and s.gpu_memory and s.activations >= s.gpu_memory else "")),
            (_("host RAM"), _("{size} needed = {gib:,.1f} GiB (loading: {loading})").format(
                size=gb(s.host_min), gib=s.host_min / 2**30 if s.host_min else 0,
                loading=_(szm.CKPT_LOADERS[s.loading])))]
    width = text_width()  # every line wrapped to the terminal (by cells), continuations under their text
    for k, v in rows:
        _print_wrapped(_ljust(k, 13) + " ", v, width, 14)
    print()
    for r in s.results:
        head = _("{title}: {value}").format(title=tr(r.title), value=tr(r.value))
        _print_wrapped("", head + (f"  [{_(r.status_word)}]" if r.status_word else ""), width, 4)
        for m in r.math:
            _print_wrapped("    ", tr(m), width, 6)
        _print_wrapped("    ", _("source: {source}").format(source=tr_source(r.source)), width, 6)
    return 0 if ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    """``bringup report``: one report model (wizard.report) from the current build, from ``--builds DIR...`` or from
    ``--snapshot BUNDLE...``, rendered as html, md or json. A single build's report also stores its findings summary
    under the build directory, which the next report of that build compares with ("What changed")."""
    import asyncio

    import steps
    from wizard import report as rpt
    from wizard.store import utcnow

    out = opt(args, "output")
    snaps = opt(args, "snapshot")
    if isinstance(snaps, str):  # `bringup --snapshot B report`: the global option's one bundle
        snaps = [snaps]
    builds = opt(args, "builds")
    if snaps and builds:
        print(_("bringup: error: ") + _("give --snapshot BUNDLE... or --builds DIR..., not both"), file=sys.stderr)
        return EXIT_ERROR
    try:
        fmt = rpt.format_of(None if out in (None, "-") else out, opt(args, "format"))
        if out not in (None, "-"):
            from wizard.fileedit import refuse_non_regular

            refuse_non_regular(out)  # a FIFO, device, socket, directory or symlink: never replaced by the rename
    except (rpt.ReportError, OSError) as exc:
        reason = tr(exc.args[0]) if exc.args and isinstance(exc.args[0], str) and len(exc.args) == 1 else str(exc)
        print(_("bringup: error: ") + _("cannot write the report: {reason}").format(reason=reason)
              if isinstance(exc, OSError) else _("bringup: error: ") + f"{reason}", file=sys.stderr)
        return EXIT_ERROR
    if snaps and len(snaps) > 1:
        snaps = _distinct_bundles(snaps)
    build_dir: Path | None = None
    previous = None
    superseded: list[dict[str, str]] = []
    if snaps:
        async def all_bundles() -> list[dict]:
            return [await rpt.node_from_bundle(p, steps.STAGES) for p in snaps]

        nodes = asyncio.run(all_bundles())
    elif builds:
        nodes, superseded = _newest_build_per_machine([_report_node_of_build_dir(Path(d)) for d in builds])
    else:
        b, note = open_build_for_reading(args, _boot_id())
        if b is None:
            print(_("bringup: error: ") + _("no build under {path} yet: start one with `bringup` (or report on a capture "
                                         "bundle: `bringup report --snapshot BUNDLE`)").format(
                path=state_dir(args, write=False)), file=sys.stderr)
            return EXIT_ERROR
        if note:
            print(f"bringup: note: {note}", file=sys.stderr)
        try:
            nodes = [_report_node(b)]
            build_dir = b.info.path
        finally:
            b.close()
        previous = rpt.previous_summary(build_dir)
    report = rpt.assemble(nodes, previous)
    if superseded:
        report["superseded"] = superseded
    text = rpt.render(report, fmt)
    if out == "-" or (out is None and build_dir is None):
        sys.stdout.write(text)
        where = "standard output"
    else:
        stamp = utcnow().replace(":", "").replace("-", "").replace("+0000", "Z")
        path = Path(out) if out else build_dir / f"report-{stamp}.{fmt}"  # type: ignore[operator]  # build_dir is set when out is None here
        tmp = path.with_name(path.name + ".part")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            print(_("bringup: error: ") + _("cannot write the report to {path}: {reason}").format(
                path=path, reason=tr(os_error(exc))), file=sys.stderr)
            return EXIT_ERROR
        where = str(path)
    if build_dir is not None:
        try:
            rpt.store_summary(build_dir, report)
        except OSError as exc:
            print("bringup: note: " + _("the findings summary was not kept in {path} ({reason}): the next report cannot "
                                        "say what changed since this one").format(path=build_dir,
                                                                                  reason=tr(os_error(exc))),
                  file=sys.stderr)
    if where != "standard output":
        c = report["changes"]
        blocking = len(report["blocking"])
        failed = sum(s["status"] == "failed" for s in report["steps_not_done"])
        counts = (ngettext("{n} blocking finding", "{n} blocking findings", blocking).format(n=blocking),
                  ngettext("{n} step failed", "{n} steps failed", failed).format(n=failed),
                  _("{n} not done").format(n=len(report["steps_not_done"]) - failed))
        # "wrote PATH: VERDICT" stays one line (a log or a grep reads it); the counts wrap under it (walk 19)
        _print_wrapped(_("wrote {path}: {verdict}").format(path=where, verdict=_(report["verdict"])), ""
              # failed and not done counted apart, as the hand-over dialog counts them (walk 18: "58 not done" here
              # was "5 failed, 53 not done" there)
              + (_("; ") + _(", ").join(counts) if report["verdict"] == "not ready" else "")
              + (_("; since the previous report: {new} new{which}, {resolved} resolved{by_plan}, {changed} changed").format(
                  new=len(c["new"]), which=new_findings_said(c["new"]), resolved=len(c["resolved"]),
                  by_plan=resolved_by_plan_said(c["resolved"]), changed=len(c["changed"])) if c["previous"] else ""),
              text_width(), 4)  # wrapped to the terminal as check's lines are (walk 19)
    else:
        print(f"bringup: report: {report['verdict']}", file=sys.stderr)
    return 0


def _distinct_bundles(paths: list[str]) -> list[str]:
    """``paths`` with a bundle given again (the same file: same path, or another name of the same file) left out,
    each one said on standard error; a file that cannot be examined is kept (loading it says why)."""
    seen: list[tuple[str, os.stat_result | None]] = []
    out = []
    for p in paths:
        try:
            st: os.stat_result | None = os.stat(p)
        except OSError:
            st = None
        same = next((q for q, s in seen if (st is not None and s is not None and os.path.samestat(st, s))
                     or (st is None and q == p)), None)
        if same is not None:
            print("bringup: note: " + (_("bundle {path} was given twice: it is reported once").format(path=p) if same == p
                                       else _("bundle {path} was given twice (it is {same}): it is reported once").format(
                                           path=p, same=same)), file=sys.stderr)
            continue
        seen.append((p, st))
        out.append(p)
    return out


def _machine_id() -> str:
    try:
        return Path("/etc/machine-id").read_text().strip()
    except OSError:
        return ""


def _report_node(b) -> dict:
    """The report's node of an opened build. Its inventory is read from this machine now when the build is this
    machine's (same machine id), else from the newest capture bundle in the build directory, else it is absent
    (said)."""
    import asyncio

    from wizard import report as rpt

    host = b.store.host()
    here = _machine_id()
    if here and host.get("machine_id") == here:
        from wizard.engine import local_host

        outputs = asyncio.run(rpt.collect_inventory(local_host(), b.plan()))
        # no clock inside the hashed content: the report's generated_at says when (walk 34 #12: two reports of one
        # build state, seconds apart, had two content hashes)
        return rpt.node_from_build(b, outputs, "this machine when the report was made")
    bundles = sorted(b.info.path.glob("capture-*.tar.gz"))
    if bundles:
        from wizard.capture import BundleError, load_bundle

        try:
            snap, manifest = load_bundle(bundles[-1])
            outputs = asyncio.run(rpt.collect_inventory(snap, manifest.get("plan") or {}))
            return rpt.node_from_build(b, outputs, f"capture bundle {bundles[-1].name} ({manifest.get('created', '')})")
        except BundleError as exc:
            return rpt.node_from_build(b, None, f"No inventory: the build's capture bundle cannot be read ({exc}).")
    return rpt.node_from_build(b, None, "No inventory: the report was not made on this build's machine and its build "
                                        "directory holds no capture bundle (the Report stage's capture step writes one).")


def _newest_build_per_machine(built: list[tuple[dict, dict]]) -> tuple[list[dict], list[dict[str, str]]]:
    """The report's nodes of ``built`` (each a node and its build's recorded host identity), one per machine: two
    builds of one machine (:func:`wizard.engine.same_host`: by machine id, else by hostname) are not two nodes
    (walk 25: two builds of host vm became "2 nodes" with every failure counted twice), so only the newest build of
    each (its ``created`` time, then its id) is kept, in the order given. Returns the nodes kept and one entry per
    build left out (``build_id``, ``path``, ``node``, ``newer_build_id``), each also said on standard error."""
    from wizard.engine import host_words, same_host

    def age(node: dict) -> tuple[str, str]:
        return str(node["source"].get("created") or ""), str(node["source"].get("build_id") or "")

    newest: list[tuple[dict, dict]] = []  # one (node, identity) per machine, the newest seen so far
    for node, ident in built:
        i = next((k for k, (_n, other) in enumerate(newest) if same_host(ident, other)), None)
        if i is None:
            newest.append((node, ident))
        elif age(node) > age(newest[i][0]):
            newest[i] = (node, ident)
    kept_ids = {id(n) for n, _i in newest}
    kept = [n for n, _i in built if id(n) in kept_ids]
    left: list[dict[str, str]] = []
    for node, ident in built:
        if id(node) in kept_ids:
            continue
        newer = next(n for n, other in newest if same_host(ident, other))
        if newer["source"].get("path") == node["source"].get("path"):
            print("bringup: note: " + _("build {path} was given twice: it is reported once").format(
                path=node["source"].get("path")), file=sys.stderr)
            continue
        entry = {"build_id": str(node["source"].get("build_id") or ""), "path": str(node["source"].get("path") or ""),
                 "node": str(node["name"]), "newer_build_id": str(newer["source"].get("build_id") or "")}
        left.append(entry)
        print("bringup: note: " + _("build {build} is of the same machine as build {newer} ({host}) and older: it is "
                                    "left out, as a report counts each machine once (report on it alone with "
                                    "`bringup report --builds {path}`)").format(
            build=entry["build_id"], newer=entry["newer_build_id"], host=host_words(ident), path=entry["path"]),
            file=sys.stderr)
    return kept, left


def _report_node_of_build_dir(d: Path) -> tuple[dict, dict]:
    """The report's node of one build directory (``STATE/builds/<id>``), opened read-only, and the host identity
    the build recorded (:meth:`wizard.store.Store.host`).

    Raises:
        StoreError: not a build directory, or its build file cannot be read.
    """
    from wizard.engine import Build
    from wizard.store import DB_NAME, StoreError

    import steps

    if not (d / DB_NAME).is_file() or d.parent.name != "builds":
        raise StoreError(_("{path} is not a build directory (STATE/builds/<id> holding {db})").format(path=d, db=DB_NAME))
    b = Build.open(d.parent.parent, steps.STAGES, {"boot_id": _boot_id()}, build_id=d.name, readonly=True)
    try:
        return _report_node(b), dict(b.store.host())
    finally:
        b.close()


def cmd_answers(args: argparse.Namespace) -> int:
    """``bringup answers check FILE``: validate an answers file offline (TOML syntax, ``assets/schema/answers.schema.json``,
    the catalogue's step and action ids, the plan's own ranges: :func:`wizard.answers.load_answers`); each error goes
    to stderr as ``FILE:LINE:COL: error: ...`` (``FILE: error: ...`` when it is about the whole file: unreadable, not
    a regular file, too large), at most :data:`wizard.answers.MAX_ERRORS_SHOWN` of them. Exit status 0 valid, 3 invalid or unreadable (bringup's status for a
    usage error: 2 is kept for a hardware failure).

    ``bringup answers export [-o FILE] [--build ID]``: the current build's answers (plan, confirmations with their
    notes, skips with their reasons, the actions that were run) as a file ``answers check`` accepts and ``auto``
    replays on the next node; standard output without ``-o``. Exit status 0 written, 3 no build or not writable."""
    import steps
    from wizard import answers as ans

    if args.answers_command == "check":
        try:
            a = ans.load_answers(args.file, steps.STAGES)
        except ans.AnswersError as exc:
            for line in ans.error_lines(exc):
                print(line, file=sys.stderr)
            print(ngettext("{file}: invalid ({count} error)", "{file}: invalid ({count} errors)", len(exc.errors)).format(
                file=exc.source, count=len(exc.errors)), file=sys.stderr)
            return EXIT_ERROR
        print(_("{file}: valid: {summary}").format(file=args.file, summary=tr(a.summary())))
        from wizard.plan import plan_warnings

        for said in plan_warnings({k: v for k, v in a.plan.items() if k == "gpu_model"}):
            # what `bringup plan` says of the same answer (walk 34 #19j: "h100" valid here, ambiguous there); paths
            # are the target node's, not this machine's, so they are not looked for here
            print(_("bringup: warning: ") + tr(said), file=sys.stderr)
        return 0
    from wizard.engine import Build
    from wizard.store import list_builds, utcnow

    if opt(args, "snapshot"):
        print(_("bringup: error: ") + _("answers export reads the build record; --snapshot does not apply"),
              file=sys.stderr)
        return EXIT_ERROR
    sd = state_dir(args, write=False)
    if not sd.is_dir() or not list_builds(sd):
        print(_("bringup: error: ") + _("no build under {path} yet: nothing to export").format(path=sd), file=sys.stderr)
        return EXIT_ERROR
    b = Build.open(sd, steps.STAGES, {"boot_id": _boot_id()}, build_id=opt(args, "build"), readonly=True)
    try:
        host = b.store.host()
        text = ans.export_answers(b, header=(
            f"bringup answers export of build {b.info.build_id} ({host.get('hostname') or 'unknown host'}), {utcnow()}",
            "check it: bringup answers check FILE; replay it on the next node: bringup auto --answers FILE"))
    finally:
        b.close()
    out = opt(args, "output")
    if out in (None, "-"):
        sys.stdout.write(text)
        return 0
    path = Path(out)
    try:
        ans.write_answers(path, text)  # refuses a FIFO, device, directory or symbolic link: nothing is written
    except OSError as exc:
        print(_("bringup: error: ") + _("cannot write the answers to {path}: {reason}").format(
            path=path, reason=tr(os_error(exc))), file=sys.stderr)
        return EXIT_ERROR
    print(_("wrote {path}").format(path=path))
    return 0


def cmd_auto(args: argparse.Namespace) -> int:
    """``bringup auto --answers FILE [--build ID|new]``: an unattended build (:func:`wizard.answers.run_auto`). The
    file is validated first (invalid: its errors, nothing runs, exit 3); then the build (the newest, or a new one when
    there is none; ``--build new`` starts one, ``--build ID`` continues that one) is walked step by step in
    catalogue order, one progress line each, and the steps not done are listed at the end. With ``--snapshot`` the
    checks read the bundle and allowed actions are dry runs; a bundle of another host than the build's is refused
    (:func:`_bundle_fits_build`). With ``--dry-run`` nothing is written: the walk is previewed (:func:`_auto_preview`).
    Exit status: 0 every step passed, was confirmed or
    skipped; 1 a step warned or is not done (waiting for a person, an action not allowed, a check that could not
    tell); 2 a step failed or an allowed action could not start (with ``on_failure = "stop"`` the walk ends there);
    3 the answers file is invalid or bringup could not run."""
    import asyncio
    import dataclasses

    import steps
    from wizard import answers as ans
    from wizard.engine import Build

    try:
        a = ans.load_answers(args.answers, steps.STAGES)
    except ans.AnswersError as exc:
        for line in ans.error_lines(exc):
            print(line, file=sys.stderr)
        print(_("bringup: error: ") + ngettext("{file} is not a valid answers file ({count} error): nothing was run",
                                          "{file} is not a valid answers file ({count} errors): nothing was run",
                                          len(exc.errors)).format(
            file=exc.source, count=len(exc.errors)), file=sys.stderr)
        return EXIT_ERROR
    a = dataclasses.replace(a, source=str(Path(args.answers).absolute()))
    snap = opt(args, "snapshot")
    if snap:
        from wizard.capture import load_bundle

        host, manifest = load_bundle(snap)
        identity = dict(manifest["host"])
    else:
        from wizard.engine import host_identity, local_host

        host = local_host()  # type: ignore[assignment]  # a SnapshotHost above, a LocalHost here: both are Hosts
        identity = asyncio.run(host_identity(host))
    which = opt(args, "build")
    dry = bool(opt(args, "dry_run"))
    if dry:
        return _auto_preview(args, a, identity if snap else None, snap or "")
    sd = state_dir(args)
    if which == "new":
        b = Build.open(sd, steps.STAGES, identity, create=True, dry_run=dry)
    elif which:
        b = Build.open(sd, steps.STAGES, identity, build_id=which, dry_run=dry)
    else:
        b = Build.open_or_create(sd, steps.STAGES, identity, dry_run=dry)
    try:
        if b.observing:
            print(_("bringup: error: ") + _("another bringup ({holder}) holds build {build}: close it first").format(
                holder=b.lock.holder or _("another process"), build=b.info.build_id), file=sys.stderr)
            return EXIT_ERROR
        if snap and not _bundle_fits_build(b, identity, snap, sd):
            return EXIT_ERROR
        still = b.reconcile()
        if still:
            print(_("bringup: error: ") + _("run {run} ({step}) is still running: let it finish (`bringup status`) before "
                                         "an unattended walk").format(run=still[0].id, step=still[0].step_id),
                  file=sys.stderr)
            return EXIT_ERROR
        print("bringup auto: " + (_("{file}: {summary}; build {build} (snapshot {bundle}: allowed actions are dry "
                                    "runs)") if snap else _("{file}: {summary}; build {build}")).format(
            file=a.source, summary=tr(a.summary()), build=b.info.build_id, bundle=snap), flush=True)
        try:
            result = asyncio.run(ans.run_auto(b, host, a, snapshot=snap or "",
                                              say=lambda line: print(tr(line), flush=True)))
        except KeyboardInterrupt:
            print("\nbringup auto: " + _("stopped (Ctrl-C): what it recorded is kept; a started action keeps running "
                                         "({command})").format(command=f"`bringup --state {sd} status`"),
                  file=sys.stderr)
            return 130
        ans.print_auto_summary(result, a, say=lambda line: print(tr(line)))
        return result.exit_code
    finally:
        b.close()


def _bundle_fits_build(b, identity: Mapping[str, Any], snap: str, sd: Path) -> bool:
    """Whether ``auto --snapshot`` may record the bundle's findings into build ``b``: not when the build is another
    host's (by machine id, else hostname: :func:`wizard.engine.same_host`). Builds are not keyed by host: the
    newest build of a state directory is the one every command acts on, so a build for the bundle's host is only
    started when asked (``--build new``); refused, it says so and names that host's builds. Prints the refusal."""
    from wizard.engine import host_words, same_host
    from wizard.store import Store, list_builds

    recorded = b.store.host()
    if same_host(recorded, identity) is not False:
        return True
    theirs = []
    for info in list_builds(sd):
        try:
            st = Store.open(info.db, readonly=True)
        except Exception:  # an unreadable build is not a candidate; status says why
            continue
        try:
            if same_host(st.host(), identity):
                theirs.append(info.build_id)
        finally:
            st.close()
    said = (_("the bundle {bundle} is from {bundle_host}, but build {build} was made for {build_host}: auto records "
              "the bundle's findings into the build, so nothing was written; start a build for {name} with `--build "
              "new`, or continue its build with `--build {theirs}`") if theirs else
            _("the bundle {bundle} is from {bundle_host}, but build {build} was made for {build_host}: auto records "
              "the bundle's findings into the build, so nothing was written; start a build for {name} with `--build "
              "new`"))
    print(_("bringup: error: ") + said.format(bundle=snap, bundle_host=tr(host_words(identity)), build=b.info.build_id,
                                           build_host=tr(host_words(recorded)),
                                           name=identity.get("hostname") or _("the bundle"),
                                           theirs=theirs[-1] if theirs else ""), file=sys.stderr)
    return False


def _auto_preview(args: argparse.Namespace, a, identity: Mapping[str, Any] | None, snap: str) -> int:
    """``bringup --dry-run auto``: what the walk would do (:func:`wizard.answers.preview_auto`) on the build it
    would walk, opened read-only; nothing is created or written, nothing is checked or run. Exit 0, or 3 when the
    build cannot be opened, or is another host's (``--snapshot``)."""
    import steps
    from wizard import answers as ans
    from wizard.engine import Build
    from wizard.store import list_builds

    sd = state_dir(args, write=False)
    which = opt(args, "build")
    b = None
    if which != "new" and sd.is_dir() and list_builds(sd):
        b = Build.open(sd, steps.STAGES, build_id=which, readonly=True)
    elif which not in (None, "new"):
        print(_("bringup: error: ") + _("no build {build} under {path}").format(build=which, path=sd), file=sys.stderr)
        return EXIT_ERROR
    try:
        if b is not None and identity is not None and not _bundle_fits_build(b, identity, snap, sd):
            return EXIT_ERROR
        where = (_("build {build}").format(build=b.info.build_id) if b is not None else
                 _("a new build under {path}").format(path=sd))
        print("bringup auto --dry-run: " + (_("{file}: {summary}; {where} (snapshot {bundle}: allowed actions would be "
                                              "dry runs)") if snap else _("{file}: {summary}; {where}")).format(
            file=a.source, summary=tr(a.summary()), where=where, bundle=snap))
        print(_("nothing is written, checked or run: this is what `bringup auto` would do (what the checks find "
                "decides whether an allowed action runs and whether a confirmation applies)"))
        for line in ans.preview_auto(a, steps.STAGES, b, snapshot=snap):
            print(tr(line))
        return 0
    finally:
        if b is not None:
            b.close()


def cmd_tui(args: argparse.Namespace, lang_notice: str = "") -> int:
    """The TUI; with ``--nodes``/``--hostfile`` it opens on the fleet view of those nodes (exit 3 with the reason
    when the node list or a fleet option cannot be used)."""
    fleet = None
    if opt(args, "tui_nodes") is not None or opt(args, "tui_hostfile") is not None:
        from wizard.fleet import FleetError

        ns = argparse.Namespace(snapshot=opt(args, "snapshot"),
                                **{n: opt(args, "tui_" + n) for n in TUI_FLEET_OPTIONS})
        try:
            nodes, kw = fleet_options(ns)
        except FleetError as exc:
            print(_("bringup: error: ") + f"{error_text(exc)}", file=sys.stderr)
            return EXIT_ERROR
        kw.pop("on_progress", None)  # the fleet view shows progress itself
        fleet = (nodes, kw)
    elif any(opt(args, "tui_" + n) is not None for n in TUI_FLEET_OPTIONS):
        print(_("bringup: error: ") + _("--ssh-config, --fanout and --node-timeout go with --nodes or --hostfile"),
              file=sys.stderr)
        return EXIT_ERROR
    from screens.app import run_app

    return run_app(state=opt(args, "state"), snapshot=opt(args, "snapshot"),
                   dry_run=bool(opt(args, "dry_run")), basic=opt(args, "basic"), fleet=fleet, notice=lang_notice,
                   build_id=opt(args, "tui_build"))


if __name__ == "__main__":
    sys.exit(main())
