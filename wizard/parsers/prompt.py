"""Shell prompts in pasted output: one place for what a prompt line looks like.

Pastes carry the command they came from (``root@h:~# nvidia-smi -q``, ``$ dkms status``,
``[user@login1 ~]$ sinfo``, oh-my-zsh's ``➜  ~ nvidia-smi``). Two readings, for two jobs:

* :data:`PROMPT_RE` (strict): ``bringup explain`` splits one paste into inputs at prompt lines, so a
  ``#`` line counts only before a command it knows (``# dmesg``), never ``# nThread 1`` of nccl-tests;
* :data:`SHELL_PROMPT` (loose): a parser of a known kind skips a line that starts with a prompt,
  with or without a command after it (``$``, ``#``, ``user@host:~$``); such lines are never data there.

:func:`typed` says whether a paste shows a command typed at a prompt (``sudo`` allowed).
Never raises.
"""

from __future__ import annotations

import re

from wizard.common import lazy_re

COMMANDS = ("nvidia-smi", "dmesg", "journalctl", "lspci", "cat", "nvcc", "python", "python3", "dcgmi",
            "all_reduce_perf", "all_gather_perf", "free", "lscpu", "numactl", "swapon", "lsmod", "edac-util",
            "ras-mc-ctl", "torchrun", "mpirun", "srun", "sudo", "grep", "tail", "head", "less", "ibstat", "ibv_devinfo",
            "ibstatus", "deepspeed", "gpu_burn", "modinfo", "modprobe", "dkms", "uname", "systemctl", "docker",
            "kubectl", "nvidia-container-cli", "perfquery", "ib_write_bw", "ib_read_bw", "pip", "pip3")
PROMPT_RE = lazy_re(
    r"^\s*(?:\([\w.\-]+\)\s+)?(?:"                # an active venv/conda env's "(venv) " / "(base) " first
    r"[^\s{\"]\S*@\S+[$#]\s*\S"              # user@host:~$ cmd  /  root@host:~# cmd (not JSON's {"@odata...$metadata#)
    r"|[\w.\-]+@[\w.\-]+ [~/\w.\-]+ [%$#] \S"     # zsh's "user@host ~ % cmd", bash "user@host dir $ cmd"
    r"|\[[^\]]*@[^\]]*\][$#]\s*\S"            # [user@login1 ~]$ cmd
    r"|[$❯➜λ]\s+\S"                             # $ cmd; zsh/starship/oh-my-zsh themes: ❯ cmd, ➜ cmd, λ cmd
    r"|>[:~/\w.\-]{0,20}\s+(?:" + "|".join(re.escape(c) for c in COMMANDS) + r")\b"  # "> nvidia-smi", ">:/ nvidia-smi";
    # not deviceQuery's "> Peer access"
    r"|#\s*(?:" + "|".join(re.escape(c) for c in COMMANDS) + r")\b"  # "# dmesg", "#nvidia-smi" (a root prompt), not "# nThread 1"
    r"|(?:sudo\s+)?(?:kubectl|docker|podman|srun|sudo)\s+[a-z]\S*\s"     # a typed command with no prompt before it:
    r"|(?:" + "|".join(re.escape(c) for c in COMMANDS) + r")\s+-{1,2}[A-Za-z]\S*(?:\s|$)"  # "all_gather_perf -g 8 ..."
    r"|[\w.\-~/()]{1,40}[$#%]>?\s*(?:" + "|".join(re.escape(c) for c in COMMANDS) + r")\b"  # "bash$> free", "(venv)$ ..."
    r")")

SHELL_PROMPT = lazy_re(r"^\s*(?:\([\w.\-]+\)\s+)?(?:\S+@\S+[:~]\S*\s*[$#]|\[[^\]]*@[^\]]*\][$#]|[$#])(?:\s|$)")
"""A line that starts with a shell prompt, a command after it or none (the loose reading; see the module)."""

_TYPED_CACHE: dict[str, "re.Pattern[str]"] = {}


def typed(text: str, command: str) -> bool:
    """Whether ``text`` shows ``command`` (e.g. ``"dkms status"``) typed at a shell prompt line,
    ``sudo`` before it or not."""
    rx = _TYPED_CACHE.get(command)
    if rx is None:
        rx = _TYPED_CACHE[command] = re.compile(
            r"^\s*(?:\([\w.\-]+\)\s+)?(?:\S+@\S+[:~][^\n$#]*[$#]|\[[^\]\n]*@[^\]\n]*\][$#]|[$#])\s*(?:sudo\s+)?"
            + re.escape(command), re.M)
    return bool(rx.search(text))


def command_of(prompt_line: str) -> str:
    """The command typed at a prompt line ("root@h:~# nvidia-smi -q" -> "nvidia-smi -q"; oh-my-zsh's
    "➜  ~ nvidia-smi" and "➜  repo git:(main) ✗ nvidia-smi" -> "nvidia-smi"; ">:/ nvidia-smi" -> "nvidia-smi")."""
    prompt_line = re.sub(r"^\s*\([\w.\-]+\)\s+", "", prompt_line)  # "(venv) " / "(base) "
    omz = re.match(r"^\s*➜\s+\S+\s+(?:git:\([^)]*\)\s+)?(?:✗\s+)?(\S.*)$", prompt_line)
    if omz and (omz.group(1).split()[0] in COMMANDS or re.match(r"^\s*➜\s+(?:~|\S*/)", prompt_line)
                or "git:(" in prompt_line):
        return omz.group(1).strip()  # oh-my-zsh: the directory comes first
    m = re.match(r"^\s*(?:\[[^\]]*\][$#]|[\w.\-]+@[\w.\-]+ [~/\w.\-]+ [%$#]|\S+@\S+?[$#]|[\w.\-~/()]{1,40}[$#%]>?|"
                 r">[:~/\w.\-]{1,20}\s|[$>#❯➜λ])\s*(.*)$", prompt_line)
    return (m.group(1) if m else prompt_line).strip()
