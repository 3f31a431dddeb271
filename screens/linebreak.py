"""Line breaking between Chinese characters on screen.

Textual (``textual._wrap``) and Rich (``rich._wrap``) wrap a line at whitespace only: a run of Chinese text, which has
no spaces, is one "word" to them, so a paragraph of it jumps whole to the next line and is then folded at the edge
(ragged, half-empty lines). Unicode's line-breaking algorithm lets a line break between any two ideographs (UAX #14,
class ID: https://www.unicode.org/reports/tr14/). :func:`install` makes both libraries' word patterns treat each
wide East Asian character as a word of its own (:data:`wizard.i18n.LINE_WORD`, which the CLI's
wrapping uses too); text without such characters splits into exactly the same words as
before (the English screens and their snapshots do not change).

Rich's ``Text.rstrip_end`` (which drops the spaces a wrapped line ends with) measures the line in characters, not
terminal cells, so a line of Chinese that ends in a space one cell past the width kept it and was then cut with an
ellipsis ("…的 PCI…"). :func:`install` replaces it with the same method measured in cells (a space is one cell).
"""

from __future__ import annotations

import functools
import re

from wizard.i18n import LINE_WORD, line_word

def _original_divide_line():
    import rich._wrap

    return rich._wrap.divide_line


_DIVIDE_LINE = _original_divide_line()
TEXTUAL_CHUNK = re.compile(rf"{LINE_WORD}\s*|\s+")
"""textual._wrap's chunk (a word and its trailing whitespace, or whitespace), one wide character being a word."""
RICH_WORD = re.compile(rf"\s*{LINE_WORD}\s*")
"""rich._wrap's word (leading whitespace, a word, trailing whitespace), one wide character being a word."""


@functools.lru_cache(maxsize=64)
def rich_word(width: int) -> re.Pattern[str]:
    """:data:`RICH_WORD` for a line of ``width`` cells: a path longer than the line breaks after a ``/``
    (:func:`wizard.i18n.path_part`); one the line holds is one word, so it moves whole to the next line; a command in
    backticks longer than the line breaks between its words (:func:`wizard.i18n.code_span`)."""
    # a path the line holds with its brackets and stops: a path of fewer characters than the line but wider with the
    # full-width （）。 around it was folded at the edge, leaving "。" alone on a line (walk 37 #13a)
    return re.compile(rf"\s*{line_word(max(width - 6, 1), min(60, max(width - 2, 1)))}\s*")


def install() -> None:
    """Replace the two libraries' word patterns (module globals they read at every wrap) with the ones above, and
    Rich's ``divide_line`` (which Textual's ``Content`` and Rich's ``Text`` call by the name they imported) with
    one that sets the word pattern for the width it wraps to first. Idempotent."""
    import rich._wrap
    import textual._wrap
    import textual.content

    import rich.text

    textual._wrap.re_chunk = TEXTUAL_CHUNK
    rich._wrap.re_word = RICH_WORD
    rich.text.Text.rstrip_end = _rstrip_end  # type: ignore[method-assign]
    rich.text.divide_line = textual.content.divide_line = _divide_line


def _divide_line(text: str, width: int, fold: bool = True) -> list[int]:
    """``rich._wrap.divide_line`` with the words of :func:`rich_word` for ``width``."""
    import rich._wrap

    rich._wrap.re_word = rich_word(width)
    return _DIVIDE_LINE(text, width, fold)


def _rstrip_end(self, size: int) -> None:
    """rich.text.Text.rstrip_end measured in terminal cells: remove the trailing whitespace beyond ``size`` cells."""
    from rich.cells import cell_len

    excess = cell_len(self.plain) - size
    if excess > 0:
        trailing = len(self.plain) - len(self.plain.rstrip())
        if trailing:
            self.right_crop(min(trailing, excess))
