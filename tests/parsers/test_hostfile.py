"""Tests of wizard/parsers/hostfile.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from wizard.multinode import HostfileError, hostfile_nodes, read_hostfile
from wizard.parsers.hostfile import Hostfile, NodeSpec, parse_hostfile

from tests import strategies

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


HOSTFILE_TOKENS = ["gpu1", "host-a", "admin@", " ", "\t", "\n", "#", "8", "0", "-1", "=", "slots=", "python=",
                   "addr=", ":", "@", "[", "]", "ssh://", "-o", "\0", "9" * 5000]


@FUZZ
@given(raw=strategies.garbage(HOSTFILE_TOKENS, max_size=2000))
def test_hostfile_parser_never_raises_and_names_what_it_could_not_read(raw):
    from wizard.parsers.hostfile import MAX_GPUS_PER_NODE, Hostfile, parse_hostfile

    hf = parse_hostfile(raw, "fuzz")
    assert isinstance(hf, Hostfile) and hf.source == "fuzz"
    assert hf.nodes or hf.problems
    assert all(p.startswith(("line ", "no nodes")) for p in hf.problems), hf.problems
    assert len({n.name for n in hf.nodes}) == len(hf.nodes)
    assert all(n.gpus is None or 1 <= n.gpus <= MAX_GPUS_PER_NODE for n in hf.nodes)
    assert all(not n.name.startswith("-") and not n.target.startswith("-") for n in hf.nodes)


def test_hostfile_native_and_mpi_forms_with_comments():
    text = """# rack 1
    gpu1  admin@10.0.0.11  8  python=/opt/venv/bin/python addr=10.0.0.11   # head
    gpu2  gpu2-ib          8

    gpu3 slots=4 python=/usr/bin/python3
    gpu4
    """
    hf = parse_hostfile(text)
    assert hf.ok and hf.problems == ()
    assert list(hf.nodes) == [
        NodeSpec("gpu1", "admin@10.0.0.11", 8, "/opt/venv/bin/python", "10.0.0.11", 2),
        NodeSpec("gpu2", "gpu2-ib", 8, None, None, 3),
        NodeSpec("gpu3", "gpu3", 4, "/usr/bin/python3", None, 5),
        NodeSpec("gpu4", "gpu4", None, None, None, 6),
    ]
    assert hostfile_nodes(text) == list(hf.nodes)  # the launcher takes them as they are
    assert parse_hostfile("root@n1 slots=2\n").nodes[0] == NodeSpec("n1", "root@n1", 2, None, None, 1)


def test_hostfile_errors_name_every_line_and_problem():
    text = "\n".join([
        "a host-a 8",            # 1 fine
        "b host-b eight",        # 2 gpus not a number
        "c host-c",              # 3 gpus missing
        "a host-d 8",            # 4 duplicate name
        "e host-a 8",            # 5 duplicate target
        "f host-f 8 colour=red",  # 6 unknown key
        "g host-g 0",            # 7 out of range
        "h slots=x",             # 8 bad slots
        "i host-i 8 python=",    # 9 empty value
        "j host-j 8 extra word",  # 10 too many words
        "k[1] host-k 8",         # 11 bad name (it prefixes log lines)
        "l host-l 2 slots=2",    # 12 slots in the native form
        "python=/x m host-m 8",  # 13 key before the positional words
    ])
    hf = parse_hostfile(text, "hosts.txt")  # the parser never raises: it names what it could not read
    assert not hf.ok and [n.name for n in hf.nodes] == ["a"]
    with pytest.raises(HostfileError) as ei:  # the launcher refuses the file whole, naming every problem
        hostfile_nodes(text, "hosts.txt")
    probs = ei.value.problems
    assert probs == list(hf.problems)
    expect = {2: "gpus must be a whole number", 3: "the GPU count is missing", 4: "already used on line 1",
              5: "already listed on line 1", 6: "unknown key 'colour'", 7: "from 1 to 64", 8: "slots must be a whole",
              9: "python= has no value", 10: "got 5 words", 11: "may hold only", 12: "slots= is for the MPI form",
              13: "must come after"}
    for line, what in expect.items():
        assert any(p.startswith(f"line {line}: ") and what in p for p in probs), (line, what, probs)
    assert not any(p.startswith("line 1:") for p in probs)
    assert str(ei.value).startswith("hosts.txt: line 2: ")


def test_hostfile_refuses_host_port_and_option_like_targets():
    text = "\n".join([
        "a admin@host-a:2222 8",      # 1 host:port: ssh takes no port there
        "b host-b:22 8",              # 2 the same without a user
        "c ssh://admin@host-c:2222 8",  # 3 fine: ssh's URI form
        "d fe80::1 8",                # 4 fine: an IPv6 literal (several colons)
        "e [2001:db8::1] 8",          # 5 fine: bracketed IPv6
        "f -oProxyCommand=x 8",       # 6 would be read as an ssh option (it holds '=': a key=value item)
        "g -host-g 8",                # 7 target starts with '-'
        "-h host-h 8",                # 8 name starts with '-'
        "host-i:22 slots=2",          # 9 MPI form with host:port
    ])
    probs = list(parse_hostfile(text).problems)
    with pytest.raises(HostfileError):
        hostfile_nodes(text)
    for line in (1, 2, 9):
        assert any(p.startswith(f"line {line}: ") and "looks like host:port" in p and "ssh://host:port" in p
                   and "Host alias in your ssh config" in p for p in probs), (line, probs)
    assert any(p.startswith("line 7: ssh target '-host-g' starts with '-'") for p in probs), probs
    assert any(p.startswith("line 8: node name '-h' starts with '-'") for p in probs), probs
    assert any(p.startswith("line 6: ") for p in probs), probs
    assert not any(p.startswith(("line 3:", "line 4:", "line 5:")) for p in probs), probs
    nodes = hostfile_nodes("c ssh://admin@host-c:2222 8\nd fe80::1 8\ne [2001:db8::1] 8\n")
    assert [n.target for n in nodes] == ["ssh://admin@host-c:2222", "fe80::1", "[2001:db8::1]"]


def test_hostfile_empty_and_unreadable(tmp_path):
    assert parse_hostfile("# nothing\n\n   \n") == Hostfile("hostfile", (), ("no nodes (every line is blank or a comment)",))
    with pytest.raises(HostfileError, match="no nodes"):
        hostfile_nodes("# nothing\n\n   \n")
    with pytest.raises(HostfileError, match="cannot read it"):
        read_hostfile("/nonexistent/hostfile")
    bad = tmp_path / "hosts"
    bad.write_text("a host-a 8\nb host-b\n")
    with pytest.raises(HostfileError) as ei:
        read_hostfile(bad)
    assert ei.value.source == str(bad) and ei.value.problems[0].startswith("line 2: ")
