"""screens/linebreak.py: lines may break between Chinese characters; English text wraps exactly as before."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from screens import linebreak


@given(st.text(alphabet=st.characters(max_codepoint=0x2000, blacklist_characters="`/0123456789")))
def test_text_without_wide_characters_splits_as_the_libraries_do(text):
    """Below U+2000 (Latin, Greek, Cyrillic, box-drawing-free), without a backtick, a digit (a number with its unit)
    or a slash (a long path), the patterns are the libraries' own."""
    assert [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer(text)] == \
        [m.group(0) for m in re.finditer(r"\S+\s*|\s+", text)]
    assert [m.group(0) for m in linebreak.RICH_WORD.finditer(text)] == \
        [m.group(0) for m in re.finditer(r"\s*\S+\s*", text)]


def test_chinese_breaks_between_characters_and_keeps_punctuation_and_ascii_words_whole():
    words = [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer("（GB = 10^9 字节，见 /sys/firmware/dmi）以及。")]
    assert words == ["（GB = 10^9 ", "字", "节，", "见 ", "/sys/firmware/dmi）", "以", "及。"]


def test_a_short_western_phrase_in_chinese_text_is_one_word():
    """Two to four narrow words (up to 24 characters) between Chinese text never break apart (walk 46 #4); a longer
    run, or one in English text, breaks at its spaces as before."""
    from wizard.i18n import wrap

    assert wrap("请在 ssh 客户端配置文件（ssh -F）里写好每个节点的地址与密钥", 24, fold=True)[1].startswith("（ssh -F）")
    assert wrap("然后需要 DCGM >= 2.4 才能运行", 16, fold=True)[1].startswith("DCGM >= 2.4")
    assert wrap("驱动分支不支持此 GPU（计算能力 < 7.5）", 30, fold=True) == ["驱动分支不支持此 GPU（计算能力", "< 7.5）"]
    assert wrap("The quick brown fox jumps over DCGM >= 2.4 lazy dog ssh -F", 20, fold=True)[1] == "jumps over DCGM >="
    words = [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer("见 one two three four five six seven 号")]
    assert words[:3] == ["见 ", "one ", "two "]


def test_a_command_in_backticks_is_one_word():
    """A command in backticks moves whole to the next line (the operator copies it); one over 60 characters, or an
    unmatched backtick, splits at spaces as any text does."""
    from textual.content import Content

    linebreak.install()
    text = "Install the headers: Debian/Ubuntu `apt-get install linux-headers-6.18.44-fc-v657`, RHEL `dnf install x`."
    lines = [ln.plain.rstrip() for ln in Content(text).wrap(60)]
    assert lines == ["Install the headers: Debian/Ubuntu", "`apt-get install linux-headers-6.18.44-fc-v657`, RHEL",
                     "`dnf install x`."]
    words = [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer("run (`nvidia-smi -q -d ECC`)，然后 `a b")]
    assert words == ["run ", "(`nvidia-smi -q -d ECC`)，", "然", "后 ", "`a ", "b"]
    long = "`" + " ".join(["word"] * 15) + "`"  # 76 characters: wraps at its spaces
    assert len([m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer(long)]) == 15


def test_a_static_wraps_chinese_to_the_width():
    """Through Textual's own wrapping once installed: every line full up to the width, none starting with '，'."""
    from rich.cells import cell_len
    from textual.content import Content

    linebreak.install()
    text = "按 z（规划与容量估算）：输入参数量、方法（预训练、全量微调、LoRA、QLoRA）、精度、优化器、ZeRO stage、序列长度"
    lines = [ln.plain for ln in Content(text).wrap(40)]
    assert len(lines) >= 3 and all(cell_len(ln.rstrip()) <= 40 for ln in lines)
    assert all(cell_len(ln.rstrip()) >= 34 for ln in lines[:-1])  # no half-empty line before the last
    assert not any(ln.startswith(("，", "、", "）", "：")) for ln in lines)


def test_a_wrapped_chinese_line_ending_in_a_space_is_not_cut_with_an_ellipsis():
    """Rich's rstrip_end counted characters: "…端口的 PCIe " (33 cells, 22 characters) kept its space at width 32 and was
    drawn "…端口的 PCI…" in the overview's step list (a Table.grid row). Installed, the line keeps its last word whole."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    linebreak.install()
    row = Table.grid(padding=(0, 1), expand=True)
    row.add_column(width=11, no_wrap=True)
    row.add_column(ratio=1)
    row.add_row(Text("· pending"), Text("关闭 GPU 所在交换芯片端口的 PCIe ACS（裸金属）"))
    console = Console(width=44)
    with console.capture() as cap:
        console.print(row)
    out = cap.get()
    assert "…" not in out and "PCIe" in out and "ACS（裸金属）" in out


def test_a_path_in_full_width_brackets_never_leaves_its_closing_marks_alone_on_a_line():
    """Walk 37 #13a: os.swap_rollback's why in Chinese ends "（kubernetes.io/docs/.../swap-memory-management）。"; at 75-78
    cells the path counted as one word the line holds (73 characters) but took 79 cells with its full-width marks, so
    Rich folded it at the edge and "。" or "）。" started a line alone. At every width a line starts with text."""
    from rich.console import Console
    from rich.text import Text

    import steps
    from screens import linebreak
    from wizard import i18n

    linebreak.install()
    i18n.set_language("zh_CN")
    try:
        why = i18n.tr(steps.step_by_id("os.swap_rollback").why)
    finally:
        i18n.set_language("en")
    console = Console(width=200)
    for width in range(30, 81):
        for line in Text(why).wrap(console, width):
            assert line.plain.strip() and line.plain.strip()[0] not in "）。，；：、", (width, line.plain)
