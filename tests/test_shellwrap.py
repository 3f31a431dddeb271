"""Shown commands wrapped to a width (wizard.shellwrap): every row fits, continues with a backslash, and bash reads
the rows back as the one command."""

import shlex
import subprocess

from wizard.shellwrap import cells, shell_wrap


def test_a_shown_command_wraps_only_outside_quotes_and_pastes_back_the_same():
    """Walk 39: an 80-column terminal broke `-o Dpkg::Options::=--force-confdef` mid-word in `--dry-run run os.tools`,
    and the multi-node consistency's `sh -c '...'` ran past the edge. Rows break at a space outside quotes with a
    trailing backslash, so the rows pasted into a shell are the one command."""
    cmd = ("  $ ssh -o BatchMode=yes -o ConnectTimeout=10 127.0.0.1 -- env LC_ALL=C LANG=C sh -c 'umask 077 && "
           "d=$(mktemp -d \"$1\") && { cat > \"$d/x\"; }' sh /tmp/bringup.XXXX")
    rows = shell_wrap(cmd, 60)
    assert len(rows) > 1 and all(r.endswith("\\") for r in rows[:-1]) and all(len(r) <= 60 for r in rows), rows
    # walk 42 #5: a single-quoted script longer than a row breaks inside too: the row closes the quote ("'\\") and the
    # next reopens it ("'"), so bash reads the one word again
    said = subprocess.run(["bash", "-c", "printf '%s\\n' " + "\n".join(rows).strip()[2:]], capture_output=True,
                          text=True).stdout.split("\n")[:-1]
    assert said == shlex.split(cmd.strip()[2:]), (said, rows)
    assert shell_wrap("  plain words " * 20, 40) == ["  plain words " * 20]  # not a command: as it is
    # walk 42: a word longer than a row (a capture's path) breaks inside outside single quotes; bash joins it again
    long = "  $ bringup capture -o /tmp/state-1/builds/20261206T164901Z-vm/capture-20261206T164902Z.tar.gz"
    rows = shell_wrap(long, 40)
    assert all(len(r) <= 40 for r in rows), rows
    joined = subprocess.run(["bash", "-c", "printf '%s\\n' " + "\n".join(rows).strip()[2:]], capture_output=True,
                            text=True).stdout.split()
    assert joined == shlex.split(long.strip()[2:]), (joined, rows)
    assert shell_wrap(cmd, None) == [cmd]  # a pipe: one line



def test_cells_counts_a_cjk_character_as_two():
    assert cells("ab") == 2 and cells("显存") == 4
