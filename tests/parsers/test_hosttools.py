"""Tests of wizard/parsers/hosttools.py."""

from __future__ import annotations

from wizard.parsers.hosttools import size_bytes


def test_size_units() -> None:
    assert size_bytes("251G") == 251 * 1024 ** 3
    assert size_bytes("1.9Gi") == int(1.9 * 1024 ** 3)
    assert size_bytes("0B") == 0
    assert size_bytes("1024", 1024) == 1024 ** 2
    assert size_bytes("x") is None


def test_tops_memory_lines_read_as_free_does():
    """Held-out r38 #12: top's summary ("Mem: ...k total, ...k used" / "Swap: ... 0k free, ...k cached", procps 3.2)
    was not recognised. Both layouts read in bytes; the old one's available memory is free + buffers + cached, the new
    one's "avail Mem". The procps-ng lines here are synthetic (a 512 GiB node)."""
    from wizard.parsers.hosttools import detect_top_memory, parse_top_memory

    old = ("Mem:  264488144k total, 251337344k used, 13150800k free,   252480k buffers\n"
           "Swap:  8388592k total,  8388592k used,        0k free, 231253868k cached\n")
    f = parse_top_memory(old)
    assert f.total == 264488144 * 1024 and f.swap == {"total": 8388592 * 1024, "used": 8388592 * 1024, "free": 0}
    assert f.available == (13150800 + 252480 + 231253868) * 1024 and f.old_layout
    new = ("MiB Mem :  515703.2 total, 480321.5 free,  20123.4 used,  15258.3 buff/cache\n"
           "MiB Swap:   8192.0 total,   8192.0 free,      0.0 used. 491234.1 avail Mem\n")
    g = parse_top_memory(new)
    assert g.total == int(515703.2 * 1024 ** 2) and g.available == int(491234.1 * 1024 ** 2) and g.swap["used"] == 0
    assert detect_top_memory(old) == detect_top_memory(new) == 0.95
    assert detect_top_memory("Mem:  264488144k total\n") == 0.0  # one line is not the summary
