"""wizard/i18n.py: the language chosen (--lang, the locale, the Linux console's fallback), the zh_CN catalogue
complete for every string the code marks or displays through ``_()``, and the CLI's text in Chinese with its JSON
unchanged."""

from __future__ import annotations

import ast
import inspect
import io
import json
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from tests.conftest import DATA, DEVVM_BUNDLE
from wizard import i18n

ROOT = Path(__file__).resolve().parent.parent
PO = ROOT / "assets" / "locale" / "zh_CN" / "LC_MESSAGES" / "bringup.po"
KEYWORDS = {"_", "gettext", "N_", "Msg"}
CLAUSE_HELPERS = {"missing": 2, "missing_rerun": 2, "_skip_no_gpu": 1}
"""Helpers that put a constant clause (what could not be told, which check was skipped) into their message, and the
index of that argument: shown translated (a plain-string clause is looked up in the catalogue)."""


@pytest.fixture(autouse=True)
def _english_after():
    """Each test leaves the process in English (the language is process-wide)."""
    yield
    i18n.set_language("en")


def marked_in_code() -> dict[str, str]:
    """Every string literal passed to ``_()``/``gettext()``/``N_()`` (and both forms of ``ngettext()``), every template
    of a ``Msg()`` (findings' messages and remedies), and every constant given as a finding's message or remedy
    (``Finding(id, verdict, MESSAGE, subject, evidence, REMEDY)`` or a ``message=``/``remedy=`` keyword; a literal
    or a module-level string constant) in wizard/, screens/ and steps/: message id -> where (file:line)."""
    found: dict[str, str] = {}
    for pkg in ("wizard", "screens", "steps"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            consts = {t.id: st.value.value for st in tree.body if isinstance(st, ast.Assign)
                      for t in st.targets if isinstance(t, ast.Name)
                      and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.id if isinstance(node.func, ast.Name) else (
                    node.func.attr if isinstance(node.func, ast.Attribute) else "")
                args = node.args[:2] if name == "ngettext" else node.args[:1] if name in KEYWORDS else []
                if name == "Finding":
                    args = args + [a for i, a in enumerate(node.args) if i in (2, 5)]
                if name in CLAUSE_HELPERS and len(node.args) > CLAUSE_HELPERS[name]:  # a clause a helper words
                    args = args + [node.args[CLAUSE_HELPERS[name]]]
                args = args + [k.value for k in node.keywords if k.arg in ("message", "remedy")]
                for a in args:
                    text = a.value if isinstance(a, ast.Constant) else consts.get(a.id) if isinstance(a, ast.Name) \
                        and name not in KEYWORDS else None
                    if isinstance(text, str) and text.strip():
                        found.setdefault(text, f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def displayed_data() -> dict[str, str]:
    """The data the screens and the CLI translate where they show it (the English text is the message id): the
    catalogue's stage titles, labels and summaries and step titles, the screens' key words, the status and verdict
    words, the commands' one-line summaries."""
    import steps
    from screens import action, app, build, dialogs, fleet, help, plan, sizing, start, step, validation_view
    from screens.glyphs import VERDICT_LABEL
    from wizard.cli import ANSWERS_COMMANDS, COMMANDS, VALIDATE_COMMANDS
    from wizard.model import StepStatus

    found: dict[str, str] = {}
    for st in steps.STAGES:
        for text in (st.title, st.label, st.summary):
            found.setdefault(text, f"stage {st.id}")
        for s in st.steps:
            found.setdefault(s.title, f"step {s.id}")
            for what, text in (("why", s.why), ("instructions", s.instructions),
                               ("instructions when set", s.instructions_when_set)):
                if text:
                    found.setdefault(text, f"step {s.id} {what}")
            if s.action is not None:
                found.setdefault(s.action.title, f"step {s.id} action title")
                found.setdefault(s.action.description, f"step {s.id} action description")
    for mod in (action, app, build, dialogs, fleet, help, plan, sizing, start, step, validation_view):
        for name, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != mod.__name__:
                continue
            for b in cls.__dict__.get("BINDINGS", []):
                desc = b.description if hasattr(b, "description") else (b[2] if len(b) > 2 else "")
                if desc:
                    found.setdefault(desc, f"{mod.__name__}.{name}.BINDINGS")
    for s in StepStatus:
        found.setdefault(s.value, "StepStatus")
    for label in VERDICT_LABEL.values():
        found.setdefault(label, "VERDICT_LABEL")
    for table in (COMMANDS, ANSWERS_COMMANDS):
        for n, ch in table.items():
            found.setdefault(ch.summary, f"command {n}")
    for n, vc in VALIDATE_COMMANDS.items():
        found.setdefault(vc.help, f"validate {n}")
    from wizard import sizing as sz
    from wizard.plan import PLAN_KEYS

    for k in PLAN_KEYS.values():  # the plan form's placeholders
        if k.help:
            found.setdefault(k.help, f"plan key {k.name}")
    from wizard.data import table as data_table

    for name, column in (("xid.csv", "follow_up"), ("xid_buckets.csv", "action"), ("xid154_actions.csv", "remedy")):
        for row in data_table(name):  # remedies the Xid rules show as the table has them
            if row.get(column):
                found.setdefault(row[column], f"assets/{name} {column}")
    from wizard.parsers.cuda import action_sentence

    for row in data_table("cuda_errors.csv"):  # a CUDA error's meaning, and its action as a remedy or a clause
        found.setdefault(row["meaning"], "assets/cuda_errors.csv meaning")
        found.setdefault(action_sentence(row["action"]), "assets/cuda_errors.csv action")
        found.setdefault(action_sentence(row["action"]) + ".", "assets/cuda_errors.csv action")
    from wizard.registry import KINDS

    for kind in KINDS.values():  # what explain says it read ("kernel log (dmesg, ...)")
        found.setdefault(kind.title, "explain kind title")
    for row in data_table("xid.csv"):  # the Xid's description in a finding's message
        if row.get("description"):
            found.setdefault(row["description"], "assets/xid.csv description")
    from wizard.nvml_probe import INIT_ERRORS
    from wizard.rules.os import support_rows

    for text in INIT_ERRORS.values():  # what a failed nvmlInit means, before the library's own words
        found.setdefault(text, "wizard/nvml_probe.py INIT_ERRORS")
    for row in support_rows():  # how a support row was verified, shown after os.driver_support's message
        if row.verification and row.verification != "read from the table":
            found.setdefault(row.verification, "assets/os_support.csv verification")
    for table in (sz.METHODS, sz.ACCOUNTINGS, sz.CHECKPOINTING, sz.ATTENTION, sz.OFFLOAD, sz.CKPT_LOADERS,
                  sz.SEQ_PARALLEL, sz.OPTIMIZER_LABEL):  # the sizing form's choices
        for label in table.values():
            found.setdefault(label, "sizing choice")
    return found


def catalogue() -> dict[str, str]:
    with PO.open("rb") as f:
        cat = read_po(f, locale="zh_CN")
    out: dict[str, str] = {}
    for m in cat:
        if not m.id or m.fuzzy:
            continue
        if isinstance(m.id, str):
            out[m.id] = m.string
        else:  # an ngettext entry: zh_CN has one plural form (nplurals=1), msgstr[0] serves both English forms
            for form in m.id:
                out[form] = m.string[0] if m.string else ""
    return out


# ------------------------------------------------------------------ the catalogue


def test_catalogue_translates_every_marked_and_displayed_string():
    cat = catalogue()
    wanted = {**displayed_data(), **marked_in_code()}
    missing = sorted(f"{where}: {msg!r}" for msg, where in wanted.items() if not cat.get(msg, "").strip())
    assert not missing, "zh_CN catalogue lacks (or has an empty msgstr for):\n" + "\n".join(missing)


def test_catalogue_placeholders_match():
    """A translation keeps every ``{name}`` of its English (``.format`` would raise KeyError on a lost one)."""
    import string

    def fields(s: str) -> set[str]:
        return {f for _t, f, _s, _c in string.Formatter().parse(s) if f}

    bad = [msg for msg, tr in catalogue().items() if fields(msg) != fields(tr)]
    assert not bad


def test_confirm_and_acknowledge_are_two_words_in_chinese():
    """walk 19: "confirm" (d: a step done by hand) and "acknowledge" (x: a past event dealt with) were both 确认, so
    `bringup ack` said 没有已确认的事件 ("no confirmed events"). Acknowledging is 知悉 wherever it is translated."""
    cat = catalogue()
    # a network's acknowledgement of a packet (RDMA) is another word (确认 there is the protocol's ACK)
    ack = {m: t for m, t in cat.items() if "cknowledg" in m and "transport retry" not in m and "never acknowledged" not in m
           and "did not receive or acknowledge" not in m}
    assert len(ack) >= 10
    assert all("确认" not in t for t in ack.values()), [t for t in ack.values() if "确认" in t]
    assert all("知悉" in t for t in ack.values())
    assert "确认" in cat["confirm (done by hand, with an optional note); moves to the next open step"]


def test_the_marked_strings_are_found():
    """The AST walk sees the screens' marks (an empty result would let the completeness test pass vacuously)."""
    marked = marked_in_code()
    assert "What to do" in marked and "Findings" in marked and "Cancel (esc)" in marked
    assert "GPU {bdf}: link width not readable in sysfs" in marked  # a Msg template (wizard/rules/pcie.py)


def test_translations_compile_in_memory_once():
    i18n.set_language("zh_CN")
    assert i18n._("Findings") == "检查结果"
    assert i18n.gettext("Health checks") == "健康检查"
    assert i18n.ngettext("step", "steps", 2) == "steps"  # not in the catalogue: the English form
    assert i18n.translations("zh_CN") is i18n.translations("zh_CN")
    assert i18n.current_language() == "zh_CN"
    i18n.set_language("en")
    assert i18n._("Findings") == "Findings"


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        i18n.set_language("fr")
    assert i18n.current_language() == "en"


# ------------------------------------------------------------------ choosing the language


@pytest.mark.parametrize("env, want", [
    ({"LANG": "zh_CN.UTF-8"}, "zh_CN"),
    ({"LANG": "zh_TW.UTF-8"}, "zh_CN"),
    ({"LANG": "en_US.UTF-8"}, "en"),
    ({}, "en"),
    ({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL decides when set
    ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh_CN"),
    ({"LC_ALL": "", "LANG": "zh_CN.utf8"}, "zh_CN"),  # an empty variable is not set
])
def test_language_from_the_locale(env, want):
    assert i18n.choose_language(None, env) == (want, "")


def test_flag_wins_over_the_locale():
    assert i18n.choose_language("en", {"LANG": "zh_CN.UTF-8"}) == ("en", "")
    assert i18n.choose_language("zh_CN", {"LANG": "en_US.UTF-8"}) == ("zh_CN", "")


def test_linux_console_falls_back_to_english_and_says_so():
    assert i18n.choose_language(None, {"LANG": "zh_CN.UTF-8", "TERM": "linux"}) == ("en", i18n.CONSOLE_NOTICE)
    assert i18n.choose_language("zh_CN", {"TERM": "linux"}) == ("en", i18n.CONSOLE_NOTICE)
    assert i18n.choose_language(None, {"LANG": "en_US.UTF-8", "TERM": "linux"}) == ("en", "")  # nothing to say
    assert i18n.setup(None, {"LANG": "zh_CN.UTF-8", "TERM": "linux"}) == i18n.CONSOLE_NOTICE
    assert i18n.current_language() == "en"


# ------------------------------------------------------------------ the CLI


def run_main(argv: list[str]) -> tuple[int, str, str]:
    from wizard.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_check_text_in_chinese_and_json_unchanged(monkeypatch):
    monkeypatch.delenv("TERM", raising=False)
    rc_en, en, _e = run_main(["check", "--snapshot", str(DEVVM_BUNDLE)])
    rc_zh, zh, _e = run_main(["--lang", "zh_CN", "check", "--snapshot", str(DEVVM_BUNDLE)])
    assert rc_en == rc_zh
    assert "\nHealth checks: " in en and "健康检查" not in en
    assert "\n健康检查：" in zh and "\n驱动与 CUDA：" in zh and "\nHealth checks: " not in zh
    rc_j1, j_en, _e = run_main(["check", "--json", "--snapshot", str(DEVVM_BUNDLE)])
    rc_j2, j_zh, _e = run_main(["check", "--json", "--lang", "zh_CN", "--snapshot", str(DEVVM_BUNDLE)])
    a, b = json.loads(j_en), json.loads(j_zh)
    for doc in (a, b):
        doc.pop("started_at", None)
        doc.pop("finished_at", None)

    def shape(d):  # keys, ids and verdicts, and every finding's message, which stays English
        return [(f["id"], f["verdict"], f["message"], sorted(f)) for f in d["findings"]], sorted(d), d["verdict"]

    assert shape(a) == shape(b)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in j_zh)


def test_lang_from_LANG_and_console_fallback_in_a_real_process(tmp_path):
    import os

    env = {**os.environ, "BRINGUP_STATE_DIR": str(tmp_path), "LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
    args = [sys.executable, "-m", "wizard.cli", "check", "--snapshot", str(DEVVM_BUNDLE)]
    zh = subprocess.run(args, capture_output=True, text=True, timeout=120, env={**env, "TERM": "xterm-256color"},
                        cwd=ROOT)
    assert "\n健康检查：" in zh.stdout and i18n.CONSOLE_NOTICE not in zh.stderr
    con = subprocess.run(args, capture_output=True, text=True, timeout=120, env={**env, "TERM": "linux"}, cwd=ROOT)
    assert "\nHealth checks: " in con.stdout and "健康检查" not in con.stdout
    assert con.stderr.count(i18n.CONSOLE_NOTICE) == 1


def test_help_lists_commands_in_chinese(monkeypatch):
    """``--lang zh_CN --help``: each command's one-line summary in Chinese; without it, the English as before."""
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.setenv("COLUMNS", "200")  # each summary on one line
    rc, out, _e = run_main(["--lang", "zh_CN", "--help"])
    assert rc == 0 and "在本机（或采集包）上运行检查并输出检查结果" in out
    assert "run the checks on this machine (or a capture bundle) and print the findings" not in out
    rc, out, _e = run_main(["check", "--help", "--lang", "zh_CN"])
    assert rc == 0 and "在本机（或采集包）上运行检查并输出检查结果。" in out
    rc, out, _e = run_main(["--help"])
    assert rc == 0 and "run the checks on this machine (or a capture bundle) and print the findings" in out


def test_wrong_lang_is_a_usage_error():
    rc, _out, err = run_main(["--lang", "fr", "status"])
    assert rc == 3 and "invalid choice: 'fr'" in err


def test_a_msg_is_its_english_text_and_shows_translated_with_the_same_values():
    """wizard.i18n.Msg: equal to the formatted English (JSON and comparisons see a plain string), keeps template and
    arguments (non-plain ones as their str()), survives pickling; tr() formats the translated template with those
    values, gives the English when the catalogue lacks the template or its translation does not fit the arguments,
    and looks a plain string up as a message id."""
    import pickle
    from pathlib import PurePosixPath

    m = i18n.Msg("{n} of {total} GPUs at {w:.1f} W on {path}", n=7, total=8, w=3.14159, path=PurePosixPath("/dev/x"))
    assert m == "7 of 8 GPUs at 3.1 W on /dev/x" and json.dumps(m) == '"7 of 8 GPUs at 3.1 W on /dev/x"'
    assert m.args == {"n": 7, "total": 8, "w": 3.14159, "path": "/dev/x"}
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.template == m.template and back.args == m.args
    i18n.set_language("zh_CN")
    assert i18n.tr(m) == "7 of 8 GPUs at 3.1 W on /dev/x"  # not in the catalogue: English
    i18n.translations("zh_CN")._catalog["GPU {index} fell off the bus"] = "GPU {index} 已从总线上掉线"
    i18n.translations("zh_CN")._catalog["broken {nope}"] = "坏的 {other}"
    try:
        assert i18n.tr(i18n.Msg("GPU {index} fell off the bus", index=3)) == "GPU 3 已从总线上掉线"
        assert i18n.tr(i18n.Msg("broken {nope}", nope=1)) == "broken 1"
        assert i18n.tr("Findings") == i18n._("Findings") != "Findings"
    finally:
        del i18n.translations("zh_CN")._catalog["GPU {index} fell off the bus"]
        del i18n.translations("zh_CN")._catalog["broken {nope}"]
    i18n.set_language("en")
    assert i18n.tr(i18n.Msg("GPU {index} fell off the bus", index=3)) == "GPU 3 fell off the bus"


def test_a_concatenated_msg_keeps_its_pieces_and_translates_each():
    """Msg + str, str + Msg, Msg + Msg and += give a Msg equal to the concatenated English whose pieces tr()
    translates one by one (a plain piece as it is, or by the catalogue); it survives pickling and its JSON form."""
    import pickle

    head = i18n.Msg("GPU {index} fell off the bus", index=3)
    m = "[x] " + head + "; seen twice" + i18n.Msg(" at {t}", t="12:00")
    m += ""
    assert isinstance(m, i18n.Msg) and m == "[x] GPU 3 fell off the bus; seen twice at 12:00"
    assert [t for t, _a in m.parts] == [None, "GPU {index} fell off the bus", None, " at {t}"]
    for back in (pickle.loads(pickle.dumps(m)), i18n.Msg.from_json(str(m), json.loads(json.dumps(m.to_json())))):
        assert isinstance(back, i18n.Msg) and back == m and back.parts == m.parts
    assert i18n.Msg.from_json("something else", m.to_json()) == "something else"  # stale: the English wins
    i18n.set_language("zh_CN")
    cat = i18n.translations("zh_CN")._catalog
    cat["GPU {index} fell off the bus"], cat[" at {t}"] = "GPU {index} 已从总线上掉线", "，时间 {t}"
    try:
        # the plain piece as it is, but for bringup's joiner at its start (walk 24 #12)
        assert i18n.tr(m) == "[x] GPU 3 已从总线上掉线；seen twice，时间 12:00"
    finally:
        del cat["GPU {index} fell off the bus"], cat[" at {t}"]


def test_explain_text_in_chinese_and_json_unchanged(monkeypatch):
    """`bringup --lang zh_CN explain` shows a finding's message and remedy translated (a Msg judged in the child process
    keeps its template and arguments through the pipe), while --json stays the English contract."""
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # one line per message (the text wraps to the terminal's width)
    case = str(ROOT / "tests" / "data" / "cases" / "free-h__gpu-cluster-node-ram-exhausted-swap-full.txt")
    rc_en, en, _e = run_main(["explain", case])
    rc_zh, zh, _e = run_main(["--lang", "zh_CN", "explain", case])
    assert rc_en == rc_zh == 2  # a fail
    assert "host RAM is exhausted and swap is full: 2.9 GiB of 251 GiB" in en
    line = next(ln for ln in zh.splitlines() if "os.memory_pressure" in ln)
    assert "主机内存已耗尽且 swap 已满：可用 2.9 GiB / 251 GiB（1.2%）" in line  # the same figures, a nested clause too
    assert "host RAM is exhausted" not in zh
    _r1, j_en, _e = run_main(["explain", "--json", case])
    _r2, j_zh, _e = run_main(["--lang", "zh_CN", "explain", "--json", case])
    assert json.loads(j_en) == json.loads(j_zh)
    assert "host RAM is exhausted and swap is full" in j_zh


def test_check_text_wraps_chinese_by_terminal_cells():
    """Wrapped check text never passes the width in terminal cells (a CJK character takes two) and never splits a
    run of ASCII (a path or a command word)."""
    from rich.cells import cell_len

    from wizard.cli import _wrap

    text = "未暴露 SMBIOS/DMI 表（没有 /sys/firmware/dmi）：此系统无法读取内存插槽（虚拟机的典型情况）；请在 BIOS 中检查"
    lines = _wrap("[SKIP] bios.memory_channels ", text, 60, 28)
    assert len(lines) > 1 and all(cell_len(ln) <= 60 for ln in lines)
    assert any("/sys/firmware/dmi" in ln for ln in lines)
    assert "".join(ln.strip() for ln in lines).replace(" ", "") == ("[SKIP]bios.memory_channels" + text).replace(" ", "")


def test_full_width_closing_punctuation_never_starts_a_line_whatever_follows_it():
    """Walk 35 #6 / walk 36 #7: "，`lspci -d 10de:`" and "”，NVIDIA" started lines: a full-width closing mark (after a
    closing quote too) stays with the word before it even where a command or Latin text follows, at every width."""
    texts = ("此检查读取 /sys/bus/pci，GPU 一枚举出来就能看到（装有 pciutils 时，`lspci -d 10de:` 也能看到）。",
             "对所有 GPU 运行 `dcgmi diag -r 2 -j`（中等验证：部署、PCIe、显存；“约两分钟”，NVIDIA dcgmi diag 参考），运行期间")
    for text in texts:
        for width in range(16, 80):
            starts = [ln for ln in i18n.wrap(text, width, fold=True) if ln.strip()[:1] in "，。、；：！？）」』】》"]
            assert not starts, (width, starts)


def test_cli_wrap_keeps_closing_punctuation_on_a_first_line_that_fills_the_width():
    """Walk 27 #13: a report's "wrote PATH: 未就绪", longer than the terminal, was followed by a line starting with
    "；4 条阻塞性检查结果". The semicolon stays on the first line (kinsoku: it never starts one); what follows it
    starts the next, and no single character of it is left hanging on the overlong first line."""
    from wizard.cli import _wrap

    first = "已写出 /tmp/walk27-state/builds/20261205T135959Z-vm/report-20261205T141602Z.html：未就绪"
    lines = _wrap(first, "；4 条阻塞性检查结果，4 个步骤失败，25 个未完成", 80, 4)
    assert lines == [first + "；", "    4 条阻塞性检查结果，4 个步骤失败，25 个未完成"], lines
    en = _wrap(first.replace("已写出", "wrote").replace("：未就绪", ": not ready"), "; 4 blocking findings", 80, 4)
    assert en[0].endswith(": not ready;") and en[1:] == ["    4 blocking findings"], en


def test_cli_wrap_folds_a_word_longer_than_the_room():
    """The new-operator review: a mount options string (one word, no spaces) indented to the message column stayed
    whole and ran to 92 columns, the terminal folding it to column 1. The CLI's text folds it at the width (by cells
    in Chinese), under the message column, nothing lost."""
    from rich.cells import cell_len

    from wizard.cli import _wrap

    opts = "(rw,relatime,discard,resv_strict,resuid=65534,resgid=65534)"
    first = "[ OK ] os.mount_options         "
    lines = _wrap(first, f"journal write barriers on (no barrier=0/nobarrier): /: ext4 {opts}", 80, len(first))
    assert all(len(ln) <= 80 for ln in lines), lines
    # walk 31 #8: after the option's last comma that the line holds, not inside "resgid"
    # walk 37 #11: a long run of comma-separated items breaks after a comma wherever it starts, as a long path does
    assert lines[-2:] == [" " * 32 + "barrier=0/nobarrier): /: ext4 (rw,relatime,",
                          " " * 32 + "discard,resv_strict,resuid=65534,resgid=65534)"]
    zh = _wrap(first, f"日志写屏障已开启（没有 barrier=0/nobarrier）：/: ext4 {opts}", 80, len(first))
    assert all(cell_len(ln) <= 80 for ln in zh) and "".join("".join(zh).split()).endswith(opts)
    blob = "x" * 100
    assert _wrap("  ", blob, 40, 2) == ["  " + "x" * 38, "  " + "x" * 38, "  " + "x" * 24]


def test_cli_wrap_breaks_a_long_command_between_its_words_not_inside_one():
    """Walk 31 #8: a backticked command kept together as one word was cut at the width when no line held it
    ("`sudo systemctl enable --now nvidia-persistenced.service" over a lone "`."), and a long option value inside a
    name ("ecc.e" / "rrors"). It breaks between the command's words, a value after a comma."""
    from wizard.cli import _wrap

    text = ("Run `nvidia-smi --query-gpu=index,name,pci.bus_id,persistence_mode,ecc.errors.uncorrected.volatile.total"
            " --format=csv` and read it; then `sudo systemctl enable --now nvidia-persistenced.service`.")
    lines = _wrap("  ", text, 60, 4)
    assert all(len(ln) <= 60 for ln in lines), lines
    words = set(" ".join(text.split()).replace("`", " ").replace(",", " ").split())
    pieces = " ".join(lines).replace("`", " ").replace(",", " ").split()
    assert all(p in words for p in pieces), [p for p in pieces if p not in words]  # no word cut in two
    assert not any(ln.strip().startswith("`.") for ln in lines)
    assert "".join(ln.strip() + ("" if ln.endswith(",") else " ") for ln in lines).strip() == text


def test_cli_wrap_keeps_a_dotted_directory_of_a_path_whole():
    """Walk 32 #17: "/root/." at a line's end over "pyenv/versions/..." (the "." taken for the closing punctuation of
    "root/"): a copied path broke. The path moves or breaks after a "/", never before a name's dot."""
    from wizard.cli import _wrap

    t = ("vm: PyTorch is not importable by the Python that ran the validation (torch is not importable by "
         "/root/.pyenv/versions/3.11.7/bin/python3: No module named torch)")
    lines = _wrap("[FAIL] gpu.run            ", t, 80, 26)
    assert not any(ln.rstrip().endswith("/.") for ln in lines), lines
    assert any("/root/.pyenv/" in ln for ln in lines), lines


def test_a_remedy_from_the_xid_table_shows_translated(monkeypatch):
    """The Xid rules' remedies come from assets/xid.csv (plain text, or a Msg around it): in Chinese the table's text
    is looked up too, so Xid 79's power-cycle advice reads in Chinese, and Msg.strip() keeps the pieces."""
    monkeypatch.delenv("TERM", raising=False)
    case = str(ROOT / "tests" / "data" / "cases" / "dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt")
    _rc, zh, _e = run_main(["--lang", "zh_CN", "explain", case])
    assert "完整的裸机断电重启" in zh and "Power-cycle the node (a full bare-metal" not in zh
    m = i18n.Msg("x {n}", n=1) + " tail"
    assert isinstance(m.strip(), i18n.Msg) and m.strip().parts == m.parts
    assert not isinstance((m + "  ").strip(), i18n.Msg)  # stripped text is plain again


def test_explain_of_a_captured_input_shows_the_cli_text_and_a_finding_in_chinese(monkeypatch, tmp_path):
    """`bringup --lang zh_CN explain` on a captured edac-util output (and on text it does not recognise): the finding's
    message (a Msg judged in the child process, with a nested Msg clause) and the CLI's own words ("not recognised")
    read in Chinese from the catalogue (here two entries installed in memory, so the test does not hang on the
    shipped wording), while ``--json`` is byte for byte the English document."""
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # one line per message (the text wraps to the terminal's width)
    case = str(ROOT / "tests" / "data" / "cases" / "edac-util__31-corrected-errors-dimm.txt")
    other = tmp_path / "notes.txt"
    other.write_text("nothing any tool prints\n")
    template = "{where}: {ce} corrected (CE) memory error(s) since the counters were reset"
    rc_en, en, _e = run_main(["explain", case, str(other)])
    _r, j_en, _e = run_main(["explain", "--json", case, str(other)])
    assert "31 corrected (CE) memory error(s) since the counters were reset" in en
    assert f"{other}: not recognised -> " in en
    cat = i18n.translations("zh_CN")._catalog
    monkeypatch.setitem(cat, template, "{where}：计数器清零以来有 {ce} 个可纠正内存错误（测试译文）")
    monkeypatch.setitem(cat, "not recognised", "未识别（测试译文）")
    rc_zh, zh, _e = run_main(["--lang", "zh_CN", "explain", case, str(other)])
    assert rc_zh == rc_en
    line = next(ln for ln in zh.splitlines() if "health.host_memory" in ln)
    assert "计数器清零以来有 31 个可纠正内存错误（测试译文）" in line and "CPU_SrcID#1_Channel#1_DIMM#0" in line
    assert "corrected (CE) memory error(s)" not in zh
    assert f"{other}: 未识别（测试译文） -> " in zh
    assert "| mc1: csrow1: CPU_SrcID#1_Channel#1_DIMM#0: 31 Corrected Errors" in zh  # evidence is never translated
    _r, j_zh, _e = run_main(["--lang", "zh_CN", "explain", "--json", case, str(other)])
    assert j_zh == j_en
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in j_zh)


def test_a_clause_follows_with_a_space_in_english_and_without_one_in_chinese():
    """i18n.spaced: "8 of 88 steps done (1 warned)" in English; the Chinese clause opens with a full-width parenthesis
    and follows directly ("已完成 8/88 个步骤（1 个有警告）"), as Chinese is written."""
    assert i18n.spaced("(1 warned)") == " (1 warned)"
    assert i18n.spaced("（1 个有警告）") == "（1 个有警告）"
    assert i18n.spaced("") == " "


def test_explain_text_wraps_to_the_terminal_by_cells(monkeypatch):
    """Issue 15 (reviewer): explain's messages and remedies ran past the terminal and were cut by it mid-word. They wrap
    to the width in terminal cells, continuation lines under the message; evidence lines stay verbatim."""
    from rich.cells import cell_len

    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    case = str(ROOT / "tests" / "data" / "cases" / "free-h__gpu-cluster-node-ram-exhausted-swap-full.txt")
    for lang in ("en", "zh_CN"):
        _rc, out, _e = run_main(["--lang", lang, "explain", case])
        lines = out.splitlines()
        prose = [ln for ln in lines[1:] if not ln.lstrip().startswith("|")]
        assert len(prose) > 3 and all(cell_len(ln) <= 80 for ln in prose)
        assert any(ln.startswith(" " * 20) for ln in prose)  # a message's continuation, under the message


def test_a_translated_template_spaces_han_and_latin_and_drops_a_space_after_full_width_punctuation():
    """Issue 15 (reviewer): "无法判断nvidia-persistenced 的状态" (no space between the Chinese template and a Latin
    argument) and "以 root 重新运行检查。 如果" (an English space after "。"). clreq 3.2.6: a space between Han and
    Western text; none after full-width punctuation. English is unchanged."""
    from wizard.i18n import Msg

    fmt = i18n._format_spaced
    assert fmt("无法判断{what}：{a1}", {"what": "nvidia-persistenced 的状态", "a1": "没有输出"}) == \
        "无法判断 nvidia-persistenced 的状态：没有输出"
    assert fmt("{name}在{bnote}的支持列表中", {"name": "Debian 12 (bookworm)", "bnote": "R580"}) == \
        "Debian 12 (bookworm) 在 R580 的支持列表中"
    assert fmt("共 {n} 个（{x:.1f} GB）", {"n": 3, "x": 2.25}) == "共 3 个（2.2 GB）"  # already spaced: unchanged
    assert fmt("{a}：{b}", {"a": "GPU", "b": "x"}) == "GPU：x"  # full-width punctuation takes no space
    i18n.set_language("zh_CN")
    joined_msg = Msg("no output") + " " + Msg("no output")
    assert i18n.tr(Msg("could not tell {what}: {a1}", what="nvidia-persistenced's state", a1="x")).startswith("无法判断 ")
    assert "。 " not in i18n.tr(Msg("Run the check again (as root where the file needs it); if it stays unknown, "
                                    "attach `bringup capture -o node.tar.gz` to a bug report.") + " " + Msg("no output"))
    assert i18n.tr(joined_msg) == "没有输出 没有输出"  # a space between two Chinese words that are not punctuation stays
    i18n.set_language("en")
    assert str(joined_msg) == "no output no output"


def test_explain_in_chinese_translates_bringups_own_sentences_in_the_rules(monkeypatch):
    """`bringup --lang zh_CN explain` of public inputs whose findings the rules used to build with f-strings (an AER
    burst, nccl-tests, a CUDA arch error, an InfiniBand port down and a completion error, launcher summaries, a
    downgraded PCIe link, RmInitAdapter): bringup's own sentences read in Chinese, while what the tools printed (the
    quoted error, the ibv status name, ids, figures) stays as it was, and the English output is unchanged."""
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("COLUMNS", "2000")  # one line per message (the text wraps to the terminal's width)
    public = ROOT / "tests" / "data" / "public"
    files = [str(public / name) for name in (
        "aer__corrected-rxerr-burst-boot-rootport-1d0.txt",
        "nccl-tests__12pod-24xa800-sxm4-80gb-kubeflow-allreduce-512m-2g-42gbs.txt",
        "torch-cuda__a100-sm80-not-compatible-with-pytorch-install.txt",
        "ib-ports__mlx4-ib-port-polling.txt",
        "nccl-debug__azure-2node-net-ib-detected-then-completion-error12-vendor129-wrapped.txt",
        "torchrun__glm130b100-ranks-6-7-exitcode-1-no-traceback-partial.txt",
        "launcher__2x3090ti-torchrun-sigkill-exitcode-9.txt",
        "lspci-vv__lspci-lnksta-downgraded.txt",
        "dmesg__titanv-rminitadapter-failed-0x25.txt",
    )]
    _rc, en, _e = run_main(["explain", *files])
    _rc, zh, _e = run_main(["--lang", "zh_CN", "explain", *files])
    prose = "\n".join(ln for ln in zh.splitlines() if not ln.lstrip().startswith("|"))  # evidence stays verbatim
    english = [
        "a burst of 6 corrected errors within", "busbw 42.31 GB/s at 2 GiB (the largest message",
        "(printed 42.31)", "no floor is known for this network",
        "has no compiled code for this GPU's architecture", "was built without this GPU's compute capability",
        "physical state Polling: the port sees no link partner", "is Down, physical state Disabled",
        "the peer did not acknowledge in time", "first observed failure: rank 6", "all on host localhost",
        "killed outright", "the device in this excerpt (its lspci header line is not included)",
        "narrower than x4", "idle or unknown load: GPUs lower the PCIe speed when idle",
        "The NVIDIA driver could not initialise the GPU (RmInitAdapter failed)",
        "If this GPU worked before or the failure comes and goes", "64-bit MMIO) in the BIOS, leaving Resizable BAR",
        "Blackwell and Grace Hopper need the open kernel modules",
    ]
    for phrase in english:
        assert phrase in en, phrase  # the English output says it ...
        assert phrase not in prose, phrase  # ... and the Chinese does not
    for phrase in (
        "0.0 s 内连续出现 6 个可纠正错误",  # the AER burst
        "（输出值 42.31）", "此网络没有已知下限",  # nccl-tests
        "torch 没有为此 GPU 架构编译的代码（A100-SXM4-40GB with CUDA capability sm_80",  # the tool's words kept
        "该 wheel 包（或某个 CUDA 扩展）构建时未包含此 GPU 的计算能力",
        "物理状态 Polling：该端口看不到链路对端",
        "错误 12 = IBV_WC_RETRY_EXC_ERR：transport retry counter exceeded（传输重试次数超限）：对端没有及时确认",
        "最先观察到的失败：rank 6", "全部在主机 localhost.localdomain 上", "（exitcode -9：被直接杀掉）",
        "此摘录中的设备（没有包含其 lspci 标题行）：PCIe 链路为 x2（降级），窄于 x4",
        "GPU 空闲时会降低 PCIe 速率；请在负载下复查",
        "NVIDIA 驱动无法初始化该 GPU（RmInitAdapter 失败）。如果这块 GPU 以前正常工作",
        "Blackwell 和 Grace Hopper 需要开源内核模块",
    ):
        assert phrase in prose, phrase
    _r, j_en, _e = run_main(["explain", "--json", *files])
    _r, j_zh, _e = run_main(["--lang", "zh_CN", "explain", "--json", *files])
    assert j_zh == j_en and not any("\u4e00" <= ch <= "\u9fff" for ch in j_zh)


def test_an_action_reason_is_stored_in_english_and_shown_translated(monkeypatch):
    """The reason a step keeps after its action ended ("action succeeded (exit status 0)") is English in the build
    file and the JSON; the status line and the TUI show it in the operator's language (the reviewer's walk: it stayed
    English in zh_CN)."""
    from wizard import engine
    from wizard.i18n import set_language, tr

    r = engine.action_reason("succeeded", 0)
    assert str(r) == "action succeeded (exit status 0)" and engine._ACTION_REASON.match(str(r))
    assert str(engine.action_reason("cancelled", None)) == "action cancelled"
    set_language("zh_CN")
    try:
        assert tr(r) == "操作成功（退出状态 0）"
    finally:
        set_language("en")


def test_wrap_keeps_a_path_whole_when_a_line_holds_it_else_breaks_it_after_a_slash():
    """walk 18: "log file: /tmp/.../0001-health.idl" / "e_baseline.log"; walk 19: a path longer than a row broken
    inside a name. A path a row holds moves whole to it; a longer one breaks after a '/'; a name longer than a row is
    cut at the width only when folding (a screen's rows)."""
    from wizard.i18n import wrap

    path = "/var/lib/bringup/builds/20261204T150531Z-vm/actions/0001-os.tools.log"  # 70 characters
    assert wrap(f"log file: {path}", 78) == ["log file:", path]
    assert wrap("log file: /raid/a.log (it goes on)", 78) == ["log file: /raid/a.log (it goes on)"]
    longer = "/tmp/walk19-state/builds/20261204T172616Z-vm/actions/0001-health.idle_baseline.log"
    assert wrap(f"log file: {longer} (the run goes on)", 60) == ["log file:", longer, "(the run goes on)"]  # the CLI
    rows = wrap(f"log file: {longer} (the run goes on)", 60, fold=True)
    assert rows == ["log file: /tmp/walk19-state/builds/20261204T172616Z-vm/", "actions/0001-health.idle_baseline.log (the run goes on)"]
    url = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
    assert all(r.endswith("/") or r.endswith("acs") for r in wrap(f"see {url}", 60, fold=True))
    blob = "/tmp/" + "x" * 90 + ".log"
    folded = wrap(f"log file: {blob}", 60, fold=True)
    assert all(len(r) <= 60 for r in folded) and "".join(folded) == f"log file: {blob}"
    assert wrap(f"log file: {blob}", 60) == ["log file:", blob]  # not folding: whole on its own line


def test_wrap_keeps_a_number_with_its_unit():
    """walk 19: "~112-126" / "GB", "(1 W = 3.412" / "BTU/h)", "用时 5" / "s": a number and its unit share a line."""
    from wizard.i18n import wrap

    text = "A 7B full fine-tune therefore needs ~112-126 GB of GPU memory; (1 W = 3.412 BTU/h) after 5 s, at 17:37 UTC"
    for width in range(20, 60):
        rows = wrap(text, width)
        assert not any(r.endswith(("126", "3.412", " 5", "17:37")) for r in rows), (width, rows)
    assert wrap("用时 5 s，主机内存计 5.9 GiB", 12) == ["用时 5 s，主", "机内存计", "5.9 GiB"]


def test_a_long_code_span_stays_whole_where_a_line_holds_it_else_breaks_at_its_spaces():
    """walk 19 (steps/onegpu.py): the text between a >60-character span's closing backtick and the next span was
    taken for one word, so a line broke early and "-j`" read as a command of its own. Walk 45 #3: a span over 60
    characters was wrapped as text, breaking `--query-gpu=a,b,c` after a comma, so the pasted command changed. A span a
    line holds moves whole to its own line; a longer one breaks at its spaces only."""
    from wizard.i18n import wrap

    text = ("to pin the NUMA node: `nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -j`, or CUDA "
            "samples' bandwidthTest, pinned with `numactl --cpunodebind=N`")
    rows = wrap(text, 76)
    assert any(r.startswith("`nvbandwidth -t host_to_device_memcpy_ce -t device_to_host_memcpy_ce -j`") for r in rows)
    assert "`numactl --cpunodebind=N`" in rows[-1] and not any(r.startswith("-j`") for r in rows), rows
    rows = wrap("check: `nvidia-smi --query-gpu=index,pcie.link.gen.max,pcie.link.width.current --format=csv` now", 60)
    assert any(r.startswith("--query-gpu=index,pcie.link.gen.max,pcie.link.width.current") for r in rows), rows


def test_a_subject_naming_a_rank_or_gpu_on_a_node_reads_in_chinese():
    """Walk 23 #5: a soak finding's subject "rank 0 on vm: " stayed English ("rank 0 on vm：soak_gemm ...")."""
    i18n.set_language("zh_CN")
    assert i18n.tr_subject("rank 0 on vm: ") == "rank 0（vm）："
    assert i18n.tr_subject("GPU 1 (00000000:1B:00.0) on node-2: ") == "GPU 1 (00000000:1B:00.0)（node-2）："
    assert i18n.tr_subject("GPU 1 (00000000:1B:00.0): ") == "GPU 1 (00000000:1B:00.0)："  # no node: as it was
    i18n.set_language("en")
    assert i18n.tr_subject("rank 0 on vm: ") == "rank 0 on vm: "


def test_a_list_of_names_uses_the_readers_list_mark_when_shown():
    """Walk 28 #17: `explain -` on unknown input suggested "`nvidia-smi`, `dmesg`, ..." with English commas in a
    Chinese sentence. A names list keeps its English and shows "、" in Chinese, also when stored and shown later."""
    listed = i18n.names(["`nvidia-smi`", "`dmesg`", "`journalctl -k`"])
    assert listed == "`nvidia-smi`, `dmesg`, `journalctl -k`"  # the English (JSON, the store) as it was
    remedy = i18n.Msg("e.g. {common}; more", common=listed)
    again = i18n.Msg.from_json(str(remedy), remedy.to_json())
    assert i18n.names(["one"]) == "one" and i18n.names([]) == ""
    i18n.set_language("zh_CN")
    try:
        assert i18n.tr(listed) == "`nvidia-smi`、`dmesg`、`journalctl -k`"
        assert "`nvidia-smi`、`dmesg`、`journalctl -k`" in i18n.tr(again)
        assert i18n.names_listed(["lspci", "nvidia-smi"]) == "lspci、nvidia-smi"
    finally:
        i18n.set_language("en")
    assert i18n.tr(listed) == str(listed)


def test_a_measurements_subject_reads_in_chinese():
    """Walk 28 #17: the CLI's validation results table said "[SKIP] soak_gemm rank 0 on vm tflops" in Chinese."""
    i18n.set_language("zh_CN")
    try:
        assert i18n.subject_name("rank 0 on vm") == "rank 0（vm）"
        assert i18n.subject_name("GPU 3") == "GPU 3"
    finally:
        i18n.set_language("en")
    assert i18n.subject_name("rank 0 on vm") == "rank 0 on vm"


def test_bringups_own_joiners_are_full_width_in_chinese():
    """walk 24 #12: `explain` in Chinese mixed ASCII ": " and "; " with the full-width punctuation around them: "GPU 1
    (0000:2a:00.0): 自驱动加载以来...", "'Tested 8 GPUs' 全部 OK; 16890-17177 Gflop/s", "2 块 GPU：GPU 0 (...); GPU 1",
    and `size` said "ZeRO-3, Nd 8". The joiners bringup puts between a message's pieces show as "：", "；", "，"; what
    a piece holds (a bus id, a quoted line) stays as it is; English is unchanged."""
    from wizard.explain import explain_text
    from wizard.i18n import Msg, joined

    ecc = "GPU 1 (0000:2a:00.0): " + joined("; ", [Msg("{n} uncorrectable memory error(s) since the driver loaded",
                                                           n="2")])
    group = "2 GPUs: GPU 0 (0000:18:00.0); GPU 1 (0000:2a:00.0): "
    burn = explain_text((DATA / "public" / "gpu-burn__a100-8gpu.txt").read_text(), "burn").findings
    i18n.set_language("zh_CN")
    try:
        assert i18n.tr(ecc) == "GPU 1 (0000:2a:00.0)：自驱动加载以来有 2 个不可纠正的显存错误"
        assert i18n.tr_subject(group) == "2 块 GPU：GPU 0 (0000:18:00.0)；GPU 1 (0000:2a:00.0)："
        said = [i18n.tr(f.message) for f in burn if f.id == "gpu.stress"]
        assert said and "全部 OK；16890-17177 Gflop/s" in said[0]
        assert i18n.tr(Msg("dcgmi dmon printed no samples{why}", why=": Error setting watches")) == (
            "dcgmi dmon 没有输出任何样本：Error setting watches")  # a clause's leading joiner, its words as they are
        # a rule's list of items (i18n.SEMICOLON.join, joined): the items as they are, the joiner in Chinese
        assert i18n.tr(Msg("NVLink links active as expected: ") + i18n.SEMICOLON.join(["GPU 0 6/6", "GPU 1 6/6"])) == (
            "NVLink 链路按预期活动：GPU 0 6/6；GPU 1 6/6")
        assert i18n.tr(joined(", ", ["0x55555555", "0xAAAAAAAA"])) == "0x55555555，0xAAAAAAAA"
    finally:
        i18n.set_language("en")
    assert i18n.tr(ecc) == str(ecc) and i18n.tr_subject(group) == group
    assert i18n.SEMICOLON.join(["a", "b"]) == "a; b" and joined("; ", ["a"]) == "a" and joined("; ", []) == ""


def test_explain_in_chinese_puts_no_ascii_colon_or_semicolon_beside_chinese_text():
    """walk 24 #12, over every real output of tests/data (cases and public): a finding's subject and message shown in
    Chinese have no ASCII ":"/";"/"," right after a Chinese character and no ": "/"; " right before one. Quoted text
    (in backticks, quotes or brackets: a command, the program's own line, a bus id) is left out: it is the machine's."""
    import re

    from wizard.explain import explain_text
    from wizard.model import subject_prefix

    cjk = r"[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]"
    mixed = re.compile(rf"{cjk}[:;,]|[:;] {cjk}")
    files = sorted(p for d in ("cases", "public") for p in (DATA / d).rglob("*")
                   if p.is_file() and p.suffix not in (".csv", ".md"))
    assert len(files) > 500
    judged = [(p.name, f) for p in files
              for f in explain_text(p.read_text(encoding="utf-8", errors="replace"), p.name).findings]
    bad = []
    i18n.set_language("zh_CN")
    try:
        for name, f in judged:
            line = i18n.tr_subject(subject_prefix(f.subject, f.message)) + i18n.tr(f.message)
            bare = re.sub(r"`[^`]*`|'[^']*'|\([^()]*\)", "", line)
            if re.search(cjk, line) and mixed.search(bare):
                bad.append(f"{name} {f.id}: {line[:160]}")
    finally:
        i18n.set_language("en")
    assert not bad, "\n".join(bad[:20])


def test_a_multinode_findings_nodes_label_and_a_failed_probes_notes_are_in_chinese():
    """walk 24 #10: `explain` of a multi-node nccl-tests output said "12 nodes (kubeflow-…)：" in Chinese, and the step
    screen's evidence of os.tools said "error: command not found: lspci" / "exit status 127". The label and bringup's
    own notes on a failed probe are translated (the command's name kept); a line a command printed stays as it is."""
    from wizard.explain import explain_text
    from wizard.model import subject_prefix
    from wizard.probes import ProbeOutput, evidence_shown

    nccl = explain_text((DATA / "public" / "nccl-tests__2node-v100-pcie-broadcast-tcp-header-only.txt").read_text(),
                        "nccl").findings
    failed = ProbeOutput("lspci", "lspci -D", "", rc=127, error="command not found: lspci").evidence_error()
    i18n.set_language("zh_CN")
    try:
        label = [i18n.tr_subject(subject_prefix(f.subject, f.message)) for f in nccl if "nodes (" in f.subject]
        notes = [evidence_shown(e) for e in failed]
        kept = [evidence_shown(e) for e in ("error: unknown option -X", "exit status 1 (from make)")]
        timed = evidence_shown("error: timed out after 20 s")
        # walk 35 #5: bringup's notes on a file it could not read, and its whole-line notes
        files = [evidence_shown(e) for e in ("/proc/modules: no such file", "/sys/class/dmi/id/bios_date: no readable "
                                                                            "file", "(no EDAC counters found)",
                                             "cat: /x: no such file")]
        no_gpu = evidence_shown("/sys/bus/pci/devices/*/{vendor,device,class,...}: 6 PCI functions, none with vendor "
                                "0x10de and a display class (0x0300/0x0302)")
    finally:
        i18n.set_language("en")
    assert files == ["/proc/modules：没有此文件", "/sys/class/dmi/id/bios_date：没有可读的文件", "（没有找到 EDAC 计数器）",
                     "cat: /x: no such file"], files
    assert no_gpu.endswith("：6 个 PCI 功能，没有一个的厂商为 0x10de 且类别为显示控制器（0x0300/0x0302）"), no_gpu
    assert label and label[0] == "2 个节点（v100-gpu-1、v100-gpu-5）："
    assert notes == ["lspci -D", "错误：找不到命令：lspci", "退出状态 127"]
    assert kept == ["error: unknown option -X", "exit status 1 (from make)"] and timed == "错误：20 s 后超时"
    assert [evidence_shown(e) for e in failed] == failed  # English as stored


ZH_FINDINGS = [  # (file, finding id, words its Chinese message must hold, English words it must not hold)
    ("cases/nvidia-smi-q__8x-h100-sxm-hw-power-brake-slowdown-active-all-gpus.txt", "health.clock_events",
     "GPU 空闲时 HW Power Brake Slowdown 生效（8 块 GPU 中有 8 块）", "while the GPU is idle"),
    ("cases/free-h__gpu-cluster-node-ram-exhausted-swap-full.txt", "os.swap",
     "swap 已开启（4 GiB，已用 4 GiB）", "of it"),
    ("cases/nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt", "health.topology", "28 对 NV18", "pair(s)"),
    ("cases/nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt", "health.topology", "位于 NUMA 0（CPU 0-47,96-143）", " on NUMA"),
    ("cases/nccl-tests__1node-8xh100-allreduce-256m-2g.txt", "node.allreduce", "的下限，工具阈值（AzNHC 配置）",
     "tool threshold"),
    ("public/gpu-burn__8gpu-all-died-no-clients-alive.txt", "gpu.stress", "错误计数", "error count"),
    ("public/bandwidthTest__4x-rtx6000ada-gen4.txt", "gpu.host_bandwidth", "x16 实用带宽 24 GB/s 的 112%", "practical"),
]


@pytest.mark.parametrize("name,fid,has,hasnt", ZH_FINDINGS)
def test_explain_findings_say_bringups_own_words_in_chinese(name, fid, has, hasnt):
    """Walk 25 #3: whole English sentences among Chinese findings ("HW Power Brake Slowdown active while the GPU is idle
    (on 8 of 8 GPUs)", "swap is on (4 GiB, 4 GiB used)", "28 pair(s) NV18", the nccl-tests floor's basis, gpu-burn's
    "error count"). bringup's own words are messages, shown in the reader's language; the tool's quoted words and the
    English (JSON) stay as they are."""
    from wizard.cli import read_explain_input
    from wizard.explain import explain_text

    path = str(DATA / name)
    r = explain_text(read_explain_input(path).text, path)
    mine = [f for f in r.findings if f.id == fid]
    assert mine, [f.id for f in r.findings]
    i18n.set_language("zh_CN")
    try:
        zh = " ".join(i18n.tr(f.message) for f in mine)
    finally:
        i18n.set_language("en")
    assert has in zh and hasnt not in zh, zh
    assert hasnt in " ".join(f.message for f in mine) or hasnt.strip() in " ".join(f.message for f in mine)


def test_a_findings_source_is_shown_in_chinese_and_stays_english_in_json():
    """Walk 25 #4: "来源：bringup's judgement: WARN above 90% used ..." beside translated step text. A source is shown
    through the catalogue, whole or citation by citation ("; "), an untranslated citation as written; the stored and
    JSON source stays English."""
    from wizard.rules.os import SRC_DISK as fs  # the words the reviewer quoted
    both = "ZeRO paper arxiv.org/abs/1910.02054 §5, Fig. 1; a citation no catalogue has"
    assert i18n.tr_source(fs) == fs  # English: as stored
    i18n.set_language("zh_CN")
    try:
        zh_fs, zh_both = i18n.tr_source(fs), i18n.tr_source(both)
    finally:
        i18n.set_language("en")
    assert zh_fs.startswith("bringup 的判断：使用超过 90% 即告警") and zh_fs.endswith("df(1)")
    assert zh_both == "ZeRO 论文 arxiv.org/abs/1910.02054 第 5 节，图 1；a citation no catalogue has"


ENGLISH_RUN_WORDS = 4
"""A run of this many English words in a Chinese finding is an English sentence (walk 25 #3), not a name."""
ENGLISH_RUNS_CEILING = 125  # stop 57: two more (held-out rounds 359-374: Python's JSON error text and CUDA's 'system not yet initialized' re-quoted from inputs cut mid-line, one more machine-check log's 'earlier errors were lost'; bringup's own new phrases, the mlx5 syndromes' meanings, gdrcopy's waived tests, the SYS-topology head and smartctl's unreadable JSON, are translated); stop 56: three fewer (the GPU/RDMA stack units' descriptions in systemctl status findings are now translated; held-out rounds 330-353 brought none of their own); stop 55: six fewer (the Xid severity classes' meanings, assets/xid_severity.csv, are now translated where a program's Xid line is explained); held-out rounds 273-296 four more: PyTorch's own warning text quoted ("The detected CUDA version mismatches ..."), a SEL sensor name, NCCL's ncclRemoteError text, a GPU product name ("Blackwell Server Edition"); held-out rounds 144-172 brought 11 runs (an Xid catalogue meaning among them) of tools' words: SEL events, a sensor name, DCGM and NCCL texts; rounds 217-232 two SEL sensor names ("Mmry ECC Sensor", "System Firmware Error"); rounds 249-256 three: DCGM's targeted-power texts wrapped across its table's rows and NCCL's ncclRemoteError text; rounds 257-272 three: a SEL sensor name and the Xid catalogue's action for Xid 79 named by a node agent
"""Runs left (zh_CN ``explain`` over tests/data, 14:00 UTC walk 25 fixes): the tools' own words that the input does
not hold verbatim (DCGM's JSON-escaped error texts, IPMI SEL event words, ibstat/NCCL error strings re-quoted) and
known bringup phrases still English: gpu.host_bandwidth's inferred-link clause in nvbandwidth's summary (its
``message.split(': ')`` drops the Msg), health.pcie_aer's "the device in this excerpt". Lower it as they are fixed;
before these fixes the count was 173; 112 at walk 29 (2026-12-05: nvbandwidth's inferred-link clause fixed, CUDA error meanings, the
IPMI event meanings translated), with 28 more real outputs in tests/data since; 110 on 2026-12-06 (235 more real
outputs; the NVMe critical-warning bits and an md array's empty slots translated); 111 on 2026-12-07 (48 more real
outputs: one more NCCL log re-quoting ibverbs' "transport retry counter exceeded"); 112 (54 more: one more machine-check
log whose "earlier errors were lost" is the kernel's own words); 109 after modinfo's module summary was translated."""


def test_explain_in_chinese_has_no_run_of_english_words_of_bringups_own():
    """Walk 25 #3: bringup's own words shown in English among Chinese findings ("column 5 (a memory size in MiB ...:
    cannot tell which)", "clock slowdown reasons not judged", "this CUDA library sees", "(this paste lists 2 of them)").
    Over every real output of tests/data, a run of :data:`ENGLISH_RUN_WORDS` English words in a finding's Chinese
    subject and message is counted unless the input holds it verbatim (the tool's quoted line) or it is inside
    backticks (a command); the count stays at most :data:`ENGLISH_RUNS_CEILING`, and the phrases fixed here never
    come back."""
    import re

    from wizard.explain import explain_text
    from wizard.model import subject_prefix

    word = r"[A-Za-z][A-Za-z'\-]*"
    run = re.compile(rf"\b{word}(?: {word}){{{ENGLISH_RUN_WORDS - 1},}}\b")
    files = sorted(p for d in ("cases", "public") for p in (DATA / d).rglob("*")
                   if p.is_file() and p.suffix not in (".csv", ".md"))
    runs: list[str] = []
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        flat = " ".join(text.split()).lower()
        findings = explain_text(text, p.name).findings
        i18n.set_language("zh_CN")
        try:
            lines = [i18n.tr_subject(subject_prefix(f.subject, f.message)) + " " + i18n.tr(f.message) for f in findings]
        finally:
            i18n.set_language("en")
        for f, line in zip(findings, lines):
            runs += [f"{p.name} {f.id}: {m.group(0)}" for m in run.finditer(re.sub(r"`[^`]*`", "", line))
                     if m.group(0).lower() not in flat]
    fixed = ("cannot tell which", "only N/A values", "clock slowdown reasons", "ECC error counters",
             "this CUDA library", "this paste lists")
    assert not [r for r in runs if any(x in r for x in fixed)], [r for r in runs if any(x in r for x in fixed)][:10]
    assert len(runs) <= ENGLISH_RUNS_CEILING, "\n".join(runs[:40])


def test_the_validation_scripts_remedies_have_chinese():
    """Walk 27 #3: a validation error's remedy (the script's own English, shown under the error in the results panel)
    stayed English in Chinese; every remedy the script can send is in the catalogue."""
    import importlib.util

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("bringup_validate_script", ROOT / "assets/scripts/bringup_validate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    i18n.set_language("zh_CN")
    try:
        missing = [r for r in mod.REMEDY.values() if i18n.tr(r) == r]
    finally:
        i18n.set_language("en")
    assert not missing, missing


def test_a_gpu_name_says_serial_in_the_readers_language():
    """Walk 25/26: "serial" was the one English word left in a Chinese GPU name, in messages and subjects alike. The
    index, bus id and number stay as they are; the word "serial" elsewhere is not touched, and English is as written."""
    from wizard import i18n
    from wizard.common import gpu_subject

    name = gpu_subject(3, "0000:9b:00.0", "1654922005923")
    assert name == "GPU 3 (0000:9b:00.0, serial 1654922005923)"
    i18n.set_language("zh_CN")
    try:
        # walk 39 #6: the language's brackets and comma too, not "GPU 3 (0000:9b:00.0, 序列号 ...)"
        assert i18n.tr(name + " reports Xid 79").startswith("GPU 3（0000:9b:00.0，序列号 1654922005923）")
        assert i18n.tr_subject(f"2 GPUs: {name}; {gpu_subject(4, '9c:00.0', '7')}: ") == (
            "2 块 GPU：GPU 3（0000:9b:00.0，序列号 1654922005923）；GPU 4（0000:9c:00.0，序列号 7）：")
        assert i18n.tr_subject(gpu_subject(None, "", "12") + ": ").startswith("GPU（序列号 12）")
        assert i18n.gpu_names("GPU 0 (0000:01:00.0) is fine") == "GPU 0 (0000:01:00.0) is fine"  # no serial: as is
        assert i18n.gpu_names("the serial console (ttyS0)") == "the serial console (ttyS0)"
    finally:
        i18n.set_language("en")
    assert i18n.tr(name) == name


def test_chinese_lists_names_and_stage_names_without_stray_spaces():
    """Walk 28 #17: "未安装的工具：lspci, nvidia-smi, rpm" (names joined with ", "), "已跳过 验证多个节点 的 4 个步骤"
    (spaces around a Chinese stage name), "（至少 50% 或 已用 8 GiB 即为重度" (a space after 或) and the fleet view's
    "无法连接: ssh" (an ASCII colon after Chinese)."""
    from wizard.i18n import Msg

    assert i18n.names_listed(["lspci", "nvidia-smi"]) == "lspci, nvidia-smi"
    i18n.set_language("zh_CN")
    try:
        listed = i18n.names_listed(["lspci", "nvidia-smi", "rpm"])
        skipped = i18n.ngettext("skipped {n} step of {stage}", "skipped {n} steps of {stage}", 4).format(
            n=4, stage=i18n._("Several nodes"))
        swap = i18n.tr(Msg("{swap_heavy_pct:g}% or ", swap_heavy_pct=50.0) + Msg("{human_bytes} in use is heavy; derived)",
                                                                               human_bytes="8 GiB"))
        reason = i18n._("{kind}: {message}").format(kind=i18n._("unreachable"), message="ssh: x")
    finally:
        i18n.set_language("en")
    assert listed == "lspci、nvidia-smi、rpm"
    assert skipped.startswith("已跳过“") and "” 的" not in skipped and "”的 4 个步骤" in skipped, skipped
    assert "50% 或已用 8 GiB" in swap, swap
    assert reason == "无法连接：ssh: x"


def test_a_bracketed_status_word_is_never_split():
    """Walk 29 #10: the sizing screen at 80x24 in Chinese broke "[不足]" into "[不" and "足]" (each Chinese character
    was a break point). A bracketed status word moves whole to the next line."""
    from wizard.i18n import wrap

    assert wrap("最少 GPU 数量：ZeRO-0 下多少块都不够  [不足]", 42) == ["最少 GPU 数量：ZeRO-0 下多少块都不够", "[不足]"]
    assert wrap("Min GPUs: no count is enough at ZeRO-0  [SHORT]", 44)[-1] == "[SHORT]"


def test_walk29_dialog_and_error_texts_read_in_chinese(tmp_path):
    """Walk 29 #1, #3, #7: the DCGM "do this by hand" text, a hostfile's problems, an OS error and the node-count
    refusal were English in the Chinese TUI and CLI."""
    from wizard.dcgm_diag import not_installed
    from wizard.multinode import HostfileError, read_hostfile

    bad = tmp_path / "hosts"
    bad.write_text("node1 root@127.0.0.1 eight\n")
    with pytest.raises(HostfileError) as got:
        read_hostfile(bad)
    with pytest.raises(HostfileError) as missing:
        read_hostfile(tmp_path / "nope")
    assert "line 1: gpus must be a whole number, got 'eight'" in str(got.value)
    i18n.set_language("zh_CN")
    try:
        assert "第 1 行：gpus 必须是整数，而不是 'eight'" in i18n.tr(got.value.message)
        assert "无法读取：没有那个文件或目录" in i18n.tr(missing.value.message)
        dcgm = i18n.tr(not_installed(2))
        assert dcgm.startswith("这里没有安装 DCGM") and "has not run" not in dcgm and "cover part" not in dcgm
    finally:
        i18n.set_language("en")
