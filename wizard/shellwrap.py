"""A shown shell command wrapped to a width so that it pastes back into a shell as the same command: the one
wrapping the command line (``bringup run``'s confirmation, at a terminal) and the TUI's confirmation dialog use.

Nothing here knows about probes, facts or rules.
"""

from __future__ import annotations


def shell_wrap(line: str, width: int | None) -> list[str]:
    """A shown command (``"  $ cmd ..."``) as rows of at most ``width`` cells that paste back into a shell as the same
    command: broken at a space outside quotes, each broken row ending in `` \\`` and the next indented 4 more (walk 39:
    the terminal broke ``--force-confdef`` in two at 80 columns). A word that does not fit beside that indent gets a
    smaller one; a word longer than a row (a capture's path, an ssh command's quoted script: walk 42) is broken inside
    with ``\\`` at the row's end and the rest at the next row's start, which the shell joins again (bash removes a
    backslash-newline outside single quotes; inside them the row closes the quote, ``'\\``, and the next reopens it,
    ``'``: adjacent quoted strings are one word). A line that is not a ``$`` command, or no ``width``, is returned as
    it is."""
    lead = len(line) - len(line.lstrip(" "))
    if not width or not line.lstrip(" ").startswith("$ ") or cells(line) <= width:
        return [line]
    # break points: spaces outside quotes and not escaped; the quote in force before each character
    points: list[int] = []
    before = [""] * (len(line) + 1)
    escaped = [False] * (len(line) + 1)  # the character after an unquoted or double-quoted backslash
    quote = ""
    i = lead + 2
    while i < len(line):
        before[i] = quote
        ch = line[i]
        if ch == "\\" and quote != "'" and i + 1 < len(line):
            before[i + 1], escaped[i + 1] = quote, True
            i += 2
            continue
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            points.append(i)
        i += 1
    before[len(line)] = quote
    rows: list[str] = []
    start, pad, reopen = 0, "", ""
    while start < len(line):
        room = width - 2  # for " \\"
        if cells(pad + reopen + line[start:]) <= width:
            rows.append(pad + reopen + line[start:])
            break
        nxt = [p for p in points if p > start]
        fits = [p for p in nxt if cells(pad + reopen + line[start:p]) <= room]
        if fits:
            rows.append(pad + reopen + line[start:fits[-1]] + " \\")
            start, pad, reopen = fits[-1] + 1, " " * (lead + 4), ""
            continue
        end = nxt[0] if nxt else len(line)
        tail = 2 if nxt else 0
        word = reopen + line[start:end]
        if cells(word) + tail <= width:  # the word fits with a smaller indent
            pad = " " * min(len(pad), width - tail - cells(word))
            if not nxt:
                rows.append(pad + word)
                break
            rows.append(pad + word + " \\")
            start, pad, reopen = end + 1, " " * (lead + 4), ""
            continue
        # longer than a row: break inside it, leaving room for "'\\" (a single-quoted part) or "\\"
        cut = start
        while cut < end and cells(pad + reopen + line[start:cut + 1]) <= width - 2:
            cut += 1
        while cut > start + 1 and (escaped[cut] or line[cut - 1] == "\\" and before[cut - 1] != "'"):
            cut -= 1  # never between a backslash and the character it escapes
        if cut <= start:
            rows.append(pad + word + (" \\" if nxt else ""))  # no place to break: whole, the terminal wraps it
            if not nxt:
                break
            start, pad, reopen = end + 1, " " * (lead + 4), ""
            continue
        quoted = before[cut] == "'"
        rows.append(pad + reopen + line[start:cut] + ("'\\" if quoted else "\\"))
        start, pad, reopen = cut, "", "'" if quoted else ""
    return rows


def cells(text: str) -> int:
    """Terminal cells of ``text`` (a CJK character takes two)."""
    from rich.cells import cell_len

    return cell_len(text)
