"""screens/linebreak.py: lines may break between Chinese characters; English text wraps exactly as before."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from screens import linebreak


@given(st.text(alphabet=st.characters(max_codepoint=0x2000)))
def test_text_without_wide_characters_splits_as_the_libraries_do(text):
    """Below U+2000 (Latin, Greek, Cyrillic, box-drawing-free) the patterns are the libraries' own."""
    assert [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer(text)] == \
        [m.group(0) for m in re.finditer(r"\S+\s*|\s+", text)]
    assert [m.group(0) for m in linebreak.RICH_WORD.finditer(text)] == \
        [m.group(0) for m in re.finditer(r"\s*\S+\s*", text)]


def test_chinese_breaks_between_characters_and_keeps_punctuation_and_ascii_words_whole():
    words = [m.group(0) for m in linebreak.TEXTUAL_CHUNK.finditer("（GB = 10^9 字节，见 /sys/firmware/dmi）以及。")]
    assert words == ["（GB ", "= ", "10^9 ", "字", "节，", "见 ", "/sys/firmware/dmi）", "以", "及。"]


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
