"""wizard.parsers.prompt: the one reading of shell prompt lines in pastes (strict for explain's split, loose
for parsers' skipping, and :func:`typed`)."""

from wizard.parsers.prompt import PROMPT_RE, SHELL_PROMPT, command_of, typed


def test_zsh_and_custom_prompts_are_prompts_with_their_command():
    for line, cmd in (("zeyer@cn-234 ~ % nvidia-smi", "nvidia-smi"), ("bash$> free -h", "free -h"),
                      ("(venv)$ python -c 'import torch'", "python -c 'import torch'")):
        assert PROMPT_RE.match(line) and command_of(line) == cmd, line
    for line in ("# nThread 1 nGpus 8 minBytes 8", "Mem:  2.0Ti  397Gi", "GPU0  X  NV4"):
        assert not PROMPT_RE.match(line), line


def test_theme_prompts_with_a_directory_and_short_custom_prompts_name_their_command():
    assert command_of("(base) ➜  ~ nvidia-smi topo -m") == "nvidia-smi topo -m"
    assert command_of("➜  nccl-tests git:(master) ✗ ./build/all_reduce_perf -g 8") == "./build/all_reduce_perf -g 8"
    assert command_of(">:/ modinfo nvidia | grep filename") == "modinfo nvidia | grep filename"


def test_the_loose_reading_takes_bare_prompts_and_prompts_before_any_command():
    for line in ("$", "#", "$ dpkg -l | grep nvidia", "root@gpu01:~# ras-mc-ctl --errors", "user@h:~/x$ ",
                 "[admin@login1 ~]$ rpm -qa", "(base) user@h:~$ dkms status"):
        assert SHELL_PROMPT.match(line), line
    for line in ("ii  nvidia-driver-535  535.183.01-0ubuntu1  amd64  NVIDIA driver", "#0 0x7f in main",
                 "$HOME/bin", "No Memory errors.", "kernel-4.18.0-553.el8_10.x86_64"):
        assert not SHELL_PROMPT.match(line), line


def test_typed_finds_a_command_at_a_prompt_with_or_without_sudo():
    assert typed("user@gpu01:~$ sudo dkms status\nnvidia/535.183.01, 6.5.0-41-generic, x86_64: installed\n",
                 "dkms status")
    assert typed("some text\n# dpkg -l | grep nvidia\n", "dpkg")
    assert typed("[root@n1 ~]# rpm -qa | grep nvidia\n", "rpm -q")
    assert not typed("nvidia/535.183.01: added\nrun dkms status to see more\n", "dkms status")


def test_a_json_line_with_odata_metadata_is_not_a_prompt():
    """Redfish JSON lines hold '"@odata.context":"/redfish/v1/$metadata#Memory.Memory"': an '@', then '$...#' and a
    word, which a user@host prompt pattern took for a root prompt (held-out round 232)."""
    line = '{"@odata.context":"/redfish/v1/$metadata#Memory.Memory","@odata.type":"#Memory.v1_1_0.Memory"}'
    assert not PROMPT_RE.match(line)
    assert PROMPT_RE.match("root@node01:~# nvidia-smi -q") and PROMPT_RE.match("user@host:~$ dmesg")
