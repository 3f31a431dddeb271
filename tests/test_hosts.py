"""SSHHost against real OpenSSH servers on loopback (tests/sshd.py): commands, files, globs, stdin, and the
failures an operator meets (node down, unknown name, a hanging command)."""

from __future__ import annotations

import asyncio

from wizard.hosts import SSH_FAILED_RC, SSHHost, ssh_error_text, ssh_failed


def _host(cluster, target: str = "node1", **kw) -> SSHHost:
    return SSHHost(target, ssh_config=str(cluster.ssh_config), **kw)


def test_run_keeps_argv_words_exit_status_and_streams(ssh_cluster):
    h = _host(ssh_cluster)
    r = asyncio.run(h.run(["sh", "-c", 'printf "%s|" "$@"; echo err >&2; exit 7', "sh", "a b", "it's", "$HOME", "*"]))
    assert r.rc == 7 and r.error == ""
    # every word arrives as one argument, unexpanded, on the remote side
    assert r.text == "a b|it's|$HOME|*|"
    assert r.stderr.strip() == b"err"
    assert r.argv[:2] == ["sh", "-c"]  # the argv as asked, not the ssh command line


def test_a_command_the_node_lacks_is_said_as_a_local_run_says_it(ssh_cluster):
    """Walk 34 #8: over ssh a missing ipmitool was "printed nothing readable"; the node's own words (exit status 127,
    "No such file or directory" / "command not found") are "command not found: X", as on this machine. A command
    that exits 127 by itself is not taken for a missing one."""
    h = _host(ssh_cluster)
    r = asyncio.run(h.run(["bringup-no-such-tool", "sel", "elist"]))
    assert r.rc == 127 and r.error == "command not found: bringup-no-such-tool", (r.rc, r.error, r.stderr)
    r = asyncio.run(h.run(["sh", "-c", "echo it failed >&2; exit 127"]))
    assert r.rc == 127 and r.error == ""


def test_run_is_on_the_node_and_uses_c_locale(ssh_cluster):
    h = _host(ssh_cluster, "node2")
    r = asyncio.run(h.run(["sh", "-c", 'echo "$SSH_CONNECTION|$LC_ALL"']))
    assert r.ok
    conn, lc = r.text.strip().split("|")
    assert conn.split()[2] == ssh_cluster.node("node2").addr  # the server side of this connection
    assert lc == "C"


def test_read_file_and_missing_file(ssh_cluster, tmp_path):
    p = tmp_path / "probe.txt"
    p.write_bytes(b"line 1\nline \xff 2\n")
    h = _host(ssh_cluster)
    r = asyncio.run(h.read(str(p)))
    assert r.ok and r.data == b"line 1\nline \xff 2\n"
    missing = asyncio.run(h.read(str(tmp_path / "nope")))
    assert missing.data is None and missing.error == "no such file"
    d = asyncio.run(h.read(str(tmp_path)))
    assert d.data is None and d.error == "is a directory"


def test_glob_matches_on_the_node(ssh_cluster, tmp_path):
    for name in ("a 1.txt", "b.txt", "c.log"):
        (tmp_path / name).write_text("x")
    h = _host(ssh_cluster)
    got = asyncio.run(h.glob(str(tmp_path / "*.txt")))
    assert got == [str(tmp_path / "a 1.txt"), str(tmp_path / "b.txt")]
    assert asyncio.run(h.glob(str(tmp_path / "*.none"))) == []


def test_stdin_is_fed_to_the_command(ssh_cluster, tmp_path):
    target = tmp_path / "copied.py"
    data = b"print('hello')\n" * 5000  # bigger than a pipe buffer
    h = _host(ssh_cluster, "node3")
    r = asyncio.run(h.run(["sh", "-c", 'cat > "$1"', "sh", str(target)], stdin=data))
    assert r.ok, r
    assert target.read_bytes() == data


def test_unreachable_node_is_rc_255_with_ssh_error_named(ssh_cluster):
    h = _host(ssh_cluster, "dead", connect_timeout_s=3)
    r = asyncio.run(h.run(["true"]))
    assert r.rc == SSH_FAILED_RC
    assert ssh_failed(r)
    assert r.error.startswith("ssh to dead failed: ")
    assert "Connection refused" in r.error and ssh_cluster.dead.addr in r.error
    from wizard import i18n  # walk 24 #9: bringup's words in the operator's language, ssh's own as ssh said them

    i18n.set_language("zh_CN")
    try:
        shown = i18n.tr(r.error)
    finally:
        i18n.set_language("en")
    assert shown.startswith("ssh 连接 dead 失败：") and shown.endswith(r.error.split(" failed: ", 1)[1])
    f = asyncio.run(h.read("/etc/hostname"))
    assert f.data is None and "Connection refused" in f.error
    assert asyncio.run(h.glob("/etc/*")) == []


def test_unknown_host_name_is_rc_255_never_an_exception(ssh_cluster):
    h = _host(ssh_cluster, "no-such-node.invalid", connect_timeout_s=3)
    r = asyncio.run(h.run(["true"]))
    assert r.rc == 255 and ssh_failed(r)
    assert "no-such-node.invalid" in r.error


def test_remote_exit_255_without_ssh_message_is_not_unreachable(ssh_cluster):
    r = asyncio.run(_host(ssh_cluster).run(["sh", "-c", "echo out; exit 255"]))
    assert r.rc == 255 and r.text == "out\n"
    assert not ssh_failed(r)


def test_timeout_kills_the_local_ssh(ssh_cluster):
    r = asyncio.run(_host(ssh_cluster).run(["sleep", "30"], timeout_s=1.5))
    assert r.rc == 124 and "timed out after 1.5 s" in r.error
    assert r.duration_s < 10


def test_missing_ssh_client_is_127():
    r = asyncio.run(SSHHost("node1", ssh="/nonexistent/ssh").run(["true"]))
    assert r.rc == 127 and "command not found" in r.error


def test_hostname_follows_the_ssh_config(ssh_cluster):
    assert asyncio.run(_host(ssh_cluster, "node3").hostname()) == ssh_cluster.node("node3").addr
    assert asyncio.run(_host(ssh_cluster).builtin("nvml")).error.startswith("in-process probe nvml")


def test_ssh_argv_uses_batchmode_config_and_options(ssh_cluster):
    h = SSHHost("user@gpu7", ssh_config="/etc/site_ssh", options=("Port=2222",), connect_timeout_s=4)
    argv = h.ssh_argv("true")
    assert argv[:3] == ["ssh", "-F", "/etc/site_ssh"]
    assert "BatchMode=yes" in argv and "ConnectTimeout=4" in argv and "Port=2222" in argv
    assert not any("StrictHostKeyChecking" in a for a in argv)  # the operator's known_hosts policy stands
    assert argv[-3:] == ["user@gpu7", "--", "true"]
    assert SSHHost.remote_command(["echo", "a b"], {"K": "v w"}) == "env 'K=v w' echo 'a b'"


def test_ssh_error_text_picks_the_reason():
    err = b"Warning: Permanently added 'x' (ED25519) to the list of known hosts.\r\nroot@x: Permission denied (publickey).\r\n"
    assert ssh_error_text(err) == "root@x: Permission denied (publickey)."
    assert ssh_error_text(b"") == ""
