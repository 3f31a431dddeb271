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


def test_free_in_another_language_is_read_by_its_shape() -> None:
    """Real (held-out round 66, a Russian-locale `free -h`): the header and labels are translated ("Память:",
    "Подкачка:"); the six-size row is memory, the three-size row swap."""
    from wizard.parsers.hosttools import detect_free, parse_free
    from tests.probe_data import PUBLIC, text

    body = text(PUBLIC / "free-h__12x-p104-mining-board-russian-locale.txt")
    f = parse_free(body)
    assert detect_free(body) >= 0.9
    assert f.total == 15 * 1024 ** 3 and f.available == int(8.7 * 1024 ** 3)
    assert f.swap["used"] == 297 * 1024 ** 2 and f.header.strip().startswith("всего")
    assert detect_free("total: 1 2 3 4 5 6\nfoo: 1 2 3\n") == 0.0  # no header of words: not free


def test_lscpu_in_another_language_reads_its_labels_back_to_english() -> None:
    """Real (held-out round 66, German locale) and util-linux's own translations (assets/lscpu_labels.csv): the
    labels are read as lscpu's English ones, the NUMA node's number kept."""
    from wizard.parsers.hosttools import detect_lscpu, lscpu_label, parse_lscpu
    from tests.probe_data import PUBLIC, text

    body = text(PUBLIC / "lscpu__dual-xeon-e5-2620v4-2gpu-workstation-german-locale-partial.txt")
    f = parse_lscpu(body)
    assert detect_lscpu(body) == 0.95
    assert f.sockets == 2 and f.cpus == 32 and f.numa_cpus[1] == "8-15,24-31"
    assert lscpu_label("架构：") == "Architecture" and lscpu_label("Сокетов:") == "Socket(s)"
    assert lscpu_label("NUMA 节点3 CPU：") == "NUMA node3 CPU(s)" and lscpu_label("Flags:") == "Flags"
