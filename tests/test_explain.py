"""explain on pastes as operators make them: several outputs in one paste, prompts, colour, CRLF."""

from __future__ import annotations

from tests.conftest import DATA
from wizard.explain import clean, explain_text
from hypothesis import HealthCheck, given, settings, strategies as st
from tests import strategies
from tests.outputs import findings_ok as _ok
from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from tests.strategies import (
    links_mutated as mutated_real,
    LINKS_TOKENS as TOKENS_LINKS,
    plans,
    tools_mutated as mutated,
    TOOLS_REAL as REAL,
)
from wizard.registry import KINDS

CASES = DATA / "cases"
PUBLIC = DATA / "public"


def case(name: str) -> str:
    return (CASES / name).read_text()


def test_table_and_xid_lines_pasted_together_are_both_judged():
    """`nvidia-smi; dmesg | grep -i xid`: a healthy table must not hide a failing GPU's Xid."""
    table = case("nvidia-smi__8x-h100-hbm3-healthy-with-processes.txt")
    xid = case("dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt")
    for text in (table + xid, xid + table):
        r = explain_text(text)
        assert r.kind is not None and "kernel-log" in r.kind and "nvidia-smi" in r.kind
        assert r.verdict.value == "fail"
        assert any("79" in f.message for f in r.findings if f.verdict.value == "fail")
        assert len(r.to_dict()["parts"]) == 2


def test_two_outputs_back_to_back_without_a_prompt():
    r = explain_text((PUBLIC / "concat__nvidia-smi-t4-580-plus-nvcc-12.8.txt").read_text())
    assert r.kind == "nvidia-smi+nvcc-version"
    ids = {f.id for f in r.findings}
    assert "driver.cuda_toolkit" in ids and "health.gpu_count" in ids


def test_prompts_split_a_session_transcript():
    text = ("root@node7:~# nvidia-smi\n" + case("nvidia-smi__driver-not-loaded-failed-to-communicate.txt")
            + "root@node7:~# cat /proc/cmdline\n" + case("proc-cmdline__iommu-pt.txt"))
    r = explain_text(text)
    assert r.kind == "nvidia-smi+proc-cmdline" and r.verdict.value == "fail"
    assert any(f.id == "bios.iommu" and f.verdict.value == "pass" for f in r.findings)


def test_a_command_continued_with_backslashes_is_the_command_not_an_output():
    """A prompt line ending in a backslash goes on on the next lines (held-out round 252: `mpirun -np 2 -H ... \\` over
    seven lines): those lines are the command, not an output bringup could not read; a short table of partition,
    node counts and GRES (round 256's sinfo) is not taken for lsmod."""
    cmd = "root@gpu01:~# nvidia-smi \\\n    -q \\\n    -d ECC\n"
    r = explain_text(cmd + case("nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt"))
    assert not any(f.id == "explain.unrecognised_part" for f in r.findings) and r.verdict.value == "fail"
    sinfo = explain_text(text(PUBLIC / "sinfo__nesi-partitions-gres-a100-h100-l4-no-state.txt"))
    assert sinfo.kind != "kernel-modules" and sinfo.verdict.value == "unknown"


def test_terminal_colour_and_crlf_do_not_change_the_verdict():
    plain = case("nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt")
    coloured = plain.replace("Pending", "\x1b[01;31m\x1b[KPending\x1b[m\x1b[K").replace("\n", "\r\n")
    assert clean(coloured) == plain
    a, b = explain_text(plain), explain_text(coloured)
    assert a.verdict == b.verdict and a.verdict.value == "fail"
    assert [(f.id, f.verdict) for f in a.findings] == [(f.id, f.verdict) for f in b.findings]


def test_an_unrecognised_part_is_said_not_dropped():
    text = case("proc-cmdline__iommu-pt.txt") + "$ uptime\n 10:00  up 3 days,  2 users\nload average: 0.1 0.2 0.3\nsomething else entirely\n"
    r = explain_text(text)
    assert any(f.id == "explain.unrecognised_part" for f in r.findings)
    assert r.verdict.value == "unknown"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_explain_on_mutated_real_outputs(t: str) -> None:
    e = explain_text(t)
    _ok(e.findings)
    assert e.findings


def test_real_inputs_found() -> None:
    assert len(REAL) >= 30


def test_kinds_registered_and_detect_my_public_and_synthetic_files():
    kinds = KINDS
    mine = {"lspci-vv", "lspci-iommu-groups", "nvidia-smi-topo-m", "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-status",
            "nvidia-smi-nvlink-errors", "nvidia-smi-nvlink-throughput", "dcgmi-nvlink-status"}
    assert mine <= set(kinds)
    expected = {"lspci-vv": "lspci-vv", "lspci-acsctl-grep": "lspci-vv", "lspci-iommu-groups": "lspci-iommu-groups", "nvidia-smi-topo__": "nvidia-smi-topo-m",
                "nvidia-smi-topo-p2p": "nvidia-smi-topo-p2p", "nvidia-smi-nvlink-s": "nvidia-smi-nvlink-status",
                "nvidia-smi-nvlink-e": "nvidia-smi-nvlink-errors", "nvidia-smi-nvlink-gt": "nvidia-smi-nvlink-throughput",
                "dcgmi-nvlink": "dcgmi-nvlink-status",
                "lspci__": "lspci-vv", "lspci-v__": "lspci-vv", "lspci-grep": "lspci-vv", "lspci-nn": "lspci-vv",  # short device lists too
                "lspci-lnksta": "lspci-vv"}  # LnkCap/LnkSta lines only (held-out r42)
    files = [p for d in (PUBLIC, SYNTHETIC) for p in sorted(d.iterdir())  # by name prefix: other areas' files
             if p.name.removeprefix("synthetic_").startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink",
                                                              "dcgmi-nvlink"))]  # may mention nvlink too
    assert len(files) >= 20
    for p in files:
        want = next(v for k, v in expected.items() if k in p.name)
        got = explain_text(text(p)).kind or ""
        assert want in got.split("+"), p.name  # a paste of two commands holds both kinds


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


garbage = strategies.garbage(TOKENS_LINKS, max_size=1500, max_tokens=80)


inputs = st.one_of(garbage, mutated_real())


@FUZZ
@given(inputs, plans)
def test_explain_never_raises_on_my_inputs(t, plan):
    e = explain_text(t, expectations=plan)
    assert e.findings and not any(x.id.startswith("explain.") and "crashed" in x.message for x in e.findings)


# ------------------------------------------------------------------ errors reported by the framework

import pytest  # noqa: E402

from wizard.model import Verdict  # noqa: E402


@pytest.mark.parametrize("name,verdict,words", [
    # CUDA error numbers, every form, mapped through assets/cuda_errors.csv
    ("torch-cuda__llamafactory7888-a100-env-cudagetdevicecount-error802-partial.txt", "fail",
     ("802", "cudaErrorSystemNotReady", "nvidia-fabricmanager", "2.7.0+cu126")),
    ("torch-cuda__pytorch35710-thcudacheck-runtime-error802-driver440-partial.txt", "fail", ("802", "Fabric Manager")),
    ("torch-cuda__videollava22-rtx3090-error804-forward-compat.txt", "fail", ("804", "cuda-compat")),
    ("torch-cuda__aperag120-error805-mps-client-failed.txt", "fail", ("805", "nvidia-cuda-mps-control")),
    ("torch-cuda__redn5-runtime-error100-no-cuda-capable-device.txt", "fail", ("cudaErrorNoDevice",)),
    # no kernel image: the wheel's arch list, with or without a CUDA_LAUNCH_BLOCKING line, legacy number 48
    ("torch-cuda__nailseg8-batchnorm-cuda-error-no-kernel-image.txt", "fail", ("get_arch_list", "compute capability")),
    ("torch-cuda__pytorch6515-geforce820m-runtime-error48-no-kernel-image-partial.txt", "fail",
     ("CUDA <= 10.0 numbering", "2.1")),
    ("torch-cuda__goae16-rtxa6000-sm86-not-compatible-warning-partial.txt", "fail", ("sm_86", "sm_37 sm_50 sm_60 sm_70")),
    # out of memory: a workload problem, not a broken machine
    ("torch-cuda__pytorch16417-oom-24gib-gpu-this-process-23gib.txt", "warn",
     ("not a hardware fault", "22.00 MiB", "11.06 MiB free of 23.65 GiB", "this process holds 23.60 GiB")),
    ("torch-cuda__vdsr2-legacy-oom-16gib-gpu-reserved.txt", "warn", ("13.13 GiB allocated", "14.80 GiB reserved")),
    # healthy: collect_env and one-liners
    ("torch-cuda__vllm6134-collect-env-8x-a100-sxm4-40gb-cuda-available-partial.txt", "pass", ("2.3.0+cu121",)),
    ("torch-cuda__robosense-track5-11-shell-version-cu118-is-available-true.txt", "pass", ("2.1.0+cu118",)),
])
def test_torch_framework_errors_are_judged_with_their_meaning(name: str, verdict: str, words: tuple[str, ...]) -> None:
    e = explain_text(text(PUBLIC / name))
    assert e.kind == "torch-cuda" and e.verdict.value == verdict, [(f.verdict, f.message) for f in e.findings]
    said = " ".join(f"{f.message} {f.remedy}" for f in e.findings)
    assert all(w in said for w in words), said
    assert all(f.source for f in e.findings)


def test_oom_with_memory_held_by_others_says_so() -> None:
    """synthetic variant of the torch >= 2.1 message: 80 GiB GPU, 1 GiB free, this process 20 GiB -> others ~59 GiB."""
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
            "79.15 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 20.00 GiB memory in "
            "use. Of the allocated memory 18.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but "
            "unallocated.")
    e = explain_text(line)
    assert e.verdict is Verdict.WARN and "held by other processes" in e.findings[0].message
    assert "GPU 3" in e.findings[0].message


def test_program_errors_warn_and_hardware_errors_fail() -> None:
    """synthetic one-line variants: the class column of the error table sets the verdict."""
    assert explain_text("RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be "
                        "asynchronously reported\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1").verdict is Verdict.WARN
    # a GPU that refuses every new context: no job starts on it (held-out rounds 87 and 146: experts failed it)
    assert explain_text("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
                        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.").verdict is Verdict.FAIL
    hw = explain_text("RuntimeError: CUDA error: unknown error\nCompile with `TORCH_USE_CUDA_DSA` to enable "
                      "device-side assertions.")
    assert hw.verdict is Verdict.FAIL and "cudaErrorUnknown" in hw.findings[0].message


def test_one_cuda_error_printed_on_several_lines_is_one_finding():
    """Held-out round 25: legacy PyTorch printed error 59 twice (RuntimeError and THCudaCheck): one finding, both lines
    and the kernel's failed assertion as its evidence."""
    from tests.probe_data import PUBLIC

    e = explain_text((PUBLIC / "pytorch__cuda-runtime-error-59-device-assert.txt").read_text())
    torch = [f for f in e.findings if f.id == "driver.torch_cuda"]
    assert len(torch) == 1 and torch[0].verdict is Verdict.WARN and "cudaErrorAssert" in str(torch[0].message)
    ev = " ".join(torch[0].evidence)
    assert "cuda runtime error (59)" in ev and "THCudaCheck FAIL" in ev and "Assertion `idx < size" in ev


def test_zsh_and_custom_prompts_split_a_session():
    """"user@host ~ % nvidia-smi" (zsh) and "bash$> free -h" are prompts (tests/parsers/test_prompt.py): each
    command's output is its own part."""
    r = explain_text("bash$> free -h\n               total        used        free      shared  buff/cache   available\n"
                     "Mem:           2.0Ti       397Gi       448Gi       757Mi       1.1Ti       1.6Ti\n"
                     "Swap:             0B          0B          0B\n")
    assert r.kind == "free" and r.verdict.value == "pass"


def test_a_comment_or_quote_prefix_on_every_line_is_removed():
    """Real (GoogleCloudPlatform/ramble): a dcgmi diag table published inside a code comment, "    # " before
    every line, is judged as the table itself."""
    from tests.probe_data import PUBLIC as PUB

    r = explain_text(text(PUB / "dcgmi-diag__ramble-8x-h200-dcgm339-r3-all-pass-eud-skip-commented.txt"))
    assert r.kind == "dcgmi-diag" and r.verdict.value == "pass"
    assert clean("> a\n> b\n> c\n") == "a\nb\nc\n" and clean("# nThread 1\n# x\n# y\n").startswith("# nThread")


def test_a_venv_prompt_splits_and_names_the_command_and_two_toolkits_warn() -> None:
    """'(venv) user@host:path$ /usr/bin/nvcc -V' is a prompt (the real two-toolkit paste): each nvcc output is its own
    part with its command, and two CUDA releases in one paste warn that PATH decides which one builds extensions."""
    r = explain_text(text(PUBLIC / "nvcc-version__two-nvcc-usr-bin-12.0-vs-usr-local-cuda-12.8.txt"), "x")
    two = [f for f in r.findings if "CUDA toolkits are installed" in f.message]
    assert r.verdict.value == "warn" and len(two) == 1
    assert "12.0 (/usr/bin/nvcc)" in two[0].message and "12.8 (/usr/local/cuda/bin/nvcc)" in two[0].message


def test_python_one_liners_at_prompts_stay_one_torch_report_and_peer_access_lines_are_not_prompts() -> None:
    """A `python -c "print(...)"` prompt keeps its output (the real robosense session passes as one report);
    deviceQuery's '> Peer access from ...' lines are output, not '> cmd' prompts (the real GTX 1060 + NVS 310 run:
    one part, Result = PASS; its Fermi NVS 310 warns under driver.branch)."""
    r = explain_text(text(PUBLIC / "torch-cuda__robosense-track5-11-shell-version-cu118-is-available-true.txt"), "t")
    assert r.kind == "torch-cuda" and r.verdict.value == "pass"
    d = explain_text(text(PUBLIC / "deviceQuery__gtx1060-plus-nvs310-cuda7.5-pass.txt"), "d")
    assert d.kind == "cuda-devicequery" and len(d.parts) == 1
    assert [f.verdict.value for f in d.findings if f.id == "health.gpu_count"] == ["pass"]


def test_theme_prompts_split_like_dollar_prompts() -> None:
    """zsh/starship themes print '❯ cmd' (the real flash-attention#1921 paste): '❯ nvcc -V' starts the nvcc part and the
    python --version line between two prompts is a stray line, not an unrecognised part."""
    r = explain_text(text(PUBLIC / "nvcc__cuda-12.6-v12.6.20.txt"), "x")
    assert r.kind == "nvcc-version" and r.verdict.value == "pass"
    assert not [f for f in r.findings if f.id == "explain.unrecognised_part"]


def test_an_output_is_split_only_at_the_start_markers_of_the_output_they_name():
    """lscpu starts with 'Architecture: x86_64', /proc/driver/nvidia/version with 'NVRM version: NVIDIA': pasted back
    to back they are two parts; nvidia-container-cli info's 'Architecture: 3.5' and 'NVRM version:   384.130' lines
    are fields of one output, never a new part."""
    from tests.probe_data import PUBLIC

    two = text(PUBLIC / "proc-driver-nvidia-version__proprietary-515.txt") + text(
        PUBLIC / "lscpu__dev-vm-2vcpu-flat-local.txt")
    assert explain_text(two).kind == "proc-driver-nvidia-version+lscpu"
    one = explain_text(text(PUBLIC / "nvidia-container-cli__info-tail.txt"))
    assert one.kind == "nvidia-container-cli" and len(one.parts) == 1


def test_short_custom_prompts_split_a_paste():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "nvidia-smi__nvml-mismatch-nixos.txt"))  # ">:/ " prompts split the paste
    assert r.kind.startswith("nvidia-smi+") and r.verdict.value == "fail"


def test_the_same_command_run_again_supersedes_its_earlier_output_but_pieces_of_one_output_do_not():
    from tests.probe_data import PUBLIC

    pods = explain_text(text(PUBLIC / "kubectl-get-pods__k8s-cuda-vectoradd-passed.txt"))
    assert [f.verdict.value for f in pods.findings if f.id == "driver.k8s_pods"] == ["pass"]
    # one `nvidia-smi; dmesg` output split into two kinds keeps both parts' findings
    both = explain_text(text(PUBLIC / "aer__corrected-dll-timeout-burst-rootport-gpu-unknown-error-nvidia-smi.txt"))
    assert {"health.gpu_responsive", "health.aer"} <= {f.id for f in both.findings}


def test_a_kernel_word_inside_another_tools_line_does_not_split_off_a_kernel_log():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "driver" / "dkms-status__autoinstall-nvidia340-build-failed.txt"))
    assert r.kind == "dkms-status"  # "Error! Bad return status for module build on kernel: 6.6.3..." is DKMS's line


def test_a_topology_matrix_whose_paste_glued_two_columns_is_read():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "nvidia-smi-topo__vllm-dgx-h100-topo-nv18.txt"))
    assert r.kind == "nvidia-smi-topo-m" and r.verdict.value == "pass"
    assert any("GPU5->NIC9" in f.message for f in r.findings)  # "NIC8NIC9" and "NODENODE" split back


# ------------------------------------------------------------------ input bounds (issue 11): size, lines, binary, shapes


MiB = 2 ** 20


def _explain_child(*args: str, stdin=None):
    from tests.childproc import run_measured

    return run_measured(["explain", "--json", *args], stdin=stdin)


def _findings(out: str) -> list[dict]:
    import json

    return [f for i in json.loads(out)["inputs"] for f in i["findings"]]


def test_a_file_past_the_limit_is_judged_on_its_first_part_and_the_finding_says_which_part(tmp_path):
    import re

    from wizard.cli import EXPLAIN_MAX_BYTES

    log = text(PUBLIC / "kernel-log__dev-vm-firecracker-dmesg-local.txt").encode()
    xid = b"[99999.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
    data = log * (EXPLAIN_MAX_BYTES // len(log) + 1) + xid  # the Xid past the limit: not judged, and that is said
    p = tmp_path / "dmesg.txt"
    p.write_bytes(data)
    r = _explain_child(str(p))
    assert r.rc == 1 and r.maxrss_mib < 512, (r.rc, r.maxrss_mib, r.stderr[-500:])
    cut = [f for f in _findings(r.stdout) if f["id"] == "explain.input_cut"]
    assert cut and cut[0]["verdict"] == "unknown"
    judged = int(re.search(r"only the first ([\d,]+) bytes \(8.0 MiB, ", cut[0]["message"]).group(1).replace(",", ""))
    assert f"({len(data):,} bytes in all)" in cut[0]["message"]
    n = int(re.search(r"tail -c \+(\d+) ", cut[0]["remedy"]).group(1))
    assert n == judged + 1 and judged <= EXPLAIN_MAX_BYTES and data[judged - 1:judged] == b"\n"  # whole lines judged
    assert xid in data[judged:]  # and the remedy's command gives the rest
    assert not any(f["verdict"] == "fail" for f in _findings(r.stdout))  # the Xid 79 past the limit: not judged
    # a file of more than two limits: cut into parts, each judged whole (walk 34 #15: `tail -c +N` judged 8 MiB more)
    big = tmp_path / "big.txt"
    big.write_bytes(log * (3 * EXPLAIN_MAX_BYTES // len(log) + 1) + xid)
    r = _explain_child(str(big))
    (cut,) = [f for f in _findings(r.stdout) if f["id"] == "explain.input_cut"]
    assert f"split -C 8M {big} part." in cut["remedy"] and "cuts it into 4 parts" in cut["remedy"]
    assert "bringup explain part.*" in cut["remedy"] and "tail -c" not in cut["remedy"]


def test_standard_input_is_read_only_to_the_limit(tmp_path):
    """issue 11: `explain -` read all of stdin (200 MB: 57 s, 3.5 GB). Now it stops at the limit: 40 MiB piped in."""
    p = tmp_path / "big.txt"
    p.write_bytes(b"lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt\n"
                  * (40 * MiB // 90))
    r = _explain_child("-", stdin=p)
    assert r.rc == 1 and r.maxrss_mib < 512, (r.rc, r.maxrss_mib)
    (cut,) = [f for f in _findings(r.stdout) if f["id"] == "explain.input_cut"]
    assert "(more than 8 MiB)" in cut["message"] and "split -C 8M" in cut["remedy"]


def test_many_short_lines_are_cut_at_the_line_limit():
    from wizard.cli import EXPLAIN_MAX_LINES

    r = _explain_child("-", stdin=b"ab\n" * (EXPLAIN_MAX_LINES + 100_000))
    assert r.maxrss_mib < 512
    (cut,) = [f for f in _findings(r.stdout) if f["id"] == "explain.input_cut"]
    assert f", {EXPLAIN_MAX_LINES:,} lines)" in cut["message"] and f"tail -n +{EXPLAIN_MAX_LINES + 1} " in cut["remedy"]


def test_binary_input_is_said_to_be_binary_not_judged(tmp_path):
    import gzip
    import random

    p = tmp_path / "random.bin"
    p.write_bytes(random.Random(5).randbytes(2 * MiB))  # issue 11: 5 MB of random bytes took 10.6 s
    r = _explain_child(str(p))
    assert r.rc == 1 and r.cpu_s < 10
    (f,) = _findings(r.stdout)
    assert f["id"] == "explain.binary_input" and "not a command's text output" in f["message"]
    gz = tmp_path / "bundle.tar.gz"
    gz.write_bytes(gzip.compress(b"x" * 10000))
    (f,) = _findings(_explain_child(str(gz)).stdout)
    assert f["id"] == "explain.binary_input" and "bringup check --snapshot" in f["remedy"]


def test_utf16_with_a_byte_order_mark_is_read_as_text(tmp_path):
    """Windows PowerShell 5 writes `nvidia-smi > out.txt` as UTF-16 with a BOM: read as the text it is."""
    body = case("nvidia-smi__driver-not-loaded-failed-to-communicate.txt")
    p8, p16 = tmp_path / "u8.txt", tmp_path / "u16.txt"
    p8.write_text(body, encoding="utf-8")
    p16.write_bytes(body.encode("utf-16"))
    import json

    a, b = (json.loads(_explain_child(str(x)).stdout)["inputs"][0] for x in (p8, p16))
    assert a["kind"] == b["kind"] == "nvidia-smi" and a["verdict"] == b["verdict"] == "fail"


@pytest.mark.parametrize("name, data, words", [
    # issue 11: 210 KB of nested tags took 46 s and 9.7 GB; 160 KB of sibling tags 3.2 GB
    ("nested.xml", b'<?xml version="1.0" ?>\n<nvidia_smi_log>\n' + b"<gpu>\n" * 35000, "nested more than 32 deep"),
    ("wide.xml", b'<?xml version="1.0" ?>\n<nvidia_smi_log>\n' + b"<a>1</a>" * 20000 + b"\n</nvidia_smi_log>\n",
     "no GPU in this nvidia-smi -q -x output"),
    ("long-line.txt", b"x" * (4 * MiB) + b"\n", "does not recognise"),
    ("digits.txt", case("dcgmi-diag__r2-gpu0-memory-fail-thermal-violation-partial.txt").replace(
        "GPU: 0", "GPU: " + "9" * 5000, 1).encode(), "GPU 0"),  # a 5,000-digit number: no judge crashes
], ids=["nested-xml", "wide-xml", "long-line", "digits"])
def test_hostile_shapes_stay_in_bounds(tmp_path, name, data, words):
    p = tmp_path / name
    p.write_bytes(data)
    r = _explain_child(str(p))
    assert r.rc in (0, 1, 2) and r.maxrss_mib < 512 and r.cpu_s < 30, (r.rc, r.maxrss_mib, r.cpu_s, r.stderr[-300:])
    assert words in r.stdout and "crashed" not in r.stdout and "bringup bug" not in r.stdout


def test_nvidia_smi_header_values_one_per_line_are_read_as_the_driver_version():
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "nvidia-smi-versions__te516-nvsmi-nvcc-versions.txt"))
    assert r.kind.startswith("nvidia-smi-versions") and r.verdict.value == "pass"
    assert any(f.id == "driver.version" and "550.54.14" in f.message and "12.4" in f.message for f in r.findings)


def test_judging_is_stopped_at_its_cpu_and_memory_limits_and_says_so(tmp_path, monkeypatch, capsys):
    """Whatever a pattern costs on a shape no tool prints (a line of 600,000 characters made one NCCL pattern
    quadratic: > 120 s, inside one regular-expression match that no Python signal handler interrupts), explain judges
    in a child the kernel stops at 2 s + 3 s/MiB + 50 us/line of CPU per input, and at 512 MiB, says so, and goes on
    with the next input in a new child."""
    import json
    import re
    import time

    from wizard import cli, explain

    real = explain.explain_text

    def judge(text, name="-", expectations=None, kind=None):
        if name.endswith("slow.txt"):  # one match, minutes of CPU (quadratic in the 300,000 characters)
            re.search(r"\S+\.cc:\d+ -> (\d+)", "x" * 300_000)
        if name.endswith("big.txt"):
            return bytearray(600 * 2 ** 20)
        return real(text, name, expectations, kind)

    monkeypatch.setattr(explain, "explain_text", judge)
    paths = []
    for n in ("slow.txt", "fine.txt", "big.txt", "fine2.txt"):
        paths.append(tmp_path / n)
        paths[-1].write_text(case("nvidia-smi__driver-not-loaded-failed-to-communicate.txt"))
    t0 = time.monotonic()
    assert cli.main(["explain", "--json", *map(str, paths)]) == 2
    assert time.monotonic() - t0 < 30
    out = json.loads(capsys.readouterr().out)["inputs"]
    want = [f.id for f in real(paths[1].read_text(), "fine.txt").findings]
    assert [[f["id"] for f in i["findings"]] for i in out] == [["explain.time_limit"], want, ["explain.memory_limit"], want]
    assert "stopped after 2.0 s of CPU time, the limit for 144 B in 1 lines" in out[0]["findings"][0]["message"]
    assert "stopped at 512 MiB of memory" in out[2]["findings"][0]["message"]
    assert out[1]["verdict"] == out[3]["verdict"] == "fail"


def test_many_inputs_are_judged_by_children_side_by_side_in_order_with_their_limits(tmp_path, monkeypatch, capsys):
    """explain of many inputs splits them into contiguous runs judged by one child each, side by side (the benchmark of
    every shared case in one process: 0.54 s -> 0.40 s on the 2-core VM); the output keeps the inputs' order, and an
    input stopped at its CPU or memory limit inside a run is said as with one child, its run going on in a new one."""
    import json
    import os
    import re

    from wizard import cli, explain

    real = explain.explain_text

    def judge(text, name="-", expectations=None, kind=None):
        if name.endswith("slow.txt"):
            re.search(r"\S+\.cc:\d+ -> (\d+)", "x" * 300_000)
        if name.endswith("big.txt"):
            return bytearray(600 * 2 ** 20)
        return real(text, name, expectations, kind)

    monkeypatch.setattr(explain, "explain_text", judge)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(cli, "EXPLAIN_PER_CHILD_MIN", 4)
    names = [f"in{i:02d}.txt" for i in range(16)]
    names[5], names[13] = "in05-slow.txt", "in13-big.txt"
    sources = ["nvidia-smi__driver-not-loaded-failed-to-communicate.txt", "free-h__gpu-cluster-node-ram-exhausted-swap-full.txt"]
    paths = []
    for i, n in enumerate(names):
        paths.append(tmp_path / n)
        paths[-1].write_text(case(sources[i % 2]))
    runs = cli.explain_in_children(list(map(str, paths)), None)
    assert len(runs) == 4 and [n for run, _ in runs for n in run] == list(map(str, paths))
    assert cli.main(["explain", "--json", *map(str, paths)]) == 2
    out = json.loads(capsys.readouterr().out)["inputs"]
    assert [i["input"] for i in out] == list(map(str, paths))
    assert out[5]["findings"][-1]["id"] == "explain.time_limit" and out[13]["findings"][-1]["id"] == "explain.memory_limit"
    for i in (0, 1, 6, 12, 14, 15):
        assert [f["id"] for f in out[i]["findings"]] == [f.id for f in real(paths[i].read_text(), names[i]).findings]


def test_a_command_typed_twice_whose_earlier_output_had_several_findings_does_not_crash():
    """Found by the hypothesis test of nvidia-smi pastes (synthetic: a real A100 table's lines shuffled under one
    prompt): the earlier run's findings were dropped with a dict.pop inside a comprehension, popped again for each
    finding -> KeyError. The later output counts; nothing crashes."""
    s = ("bash-5.2# nvidia-smi\n|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:10:1C.0 Off |                    0 |\n"
         "+-----------------------------------------------------------------------------------------+\n"
         "| NVIDIA-SMI 580.126.09             Driver Version: 580.126.09     CUDA Version: 13.0     |\n"
         "+-----------------------------------------+------------------------+----------------------+\n"
         "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
         "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
         "|                                         |                        |               MIG M. |\n"
         "|=========================================+========================+======================|\n"
         "Thu Feb 19 19:24:54 2026\n"
         "| N/A   41C    P0             67W /  400W |     598MiB /  40960MiB |     11%   E. Process |\n"
         "|                                         |                        |             Disabled |\n"
         "+-----------------------------------------+------------------------+----------------------+\n"
         "|   1  NVIDIA A100-SXM4-40GB          On  |   00000000:10:1D.0 Off |                    0 |\n"
         "| N/A   37C    P0             66W /  400W |     602MiB /  40960MiB |      7%   E. Process |\n"
         "|                                         |                        |             Disabled |\n")
    r = explain_text(s, "x")
    assert r.kind and r.kind.startswith("nvidia-smi") and r.findings
    assert not any("crashed" in f.message for f in r.findings)


def test_an_input_that_lists_thousands_of_gpus_keeps_a_bounded_answer():
    """fuzz (issue 11): a real query-gpu CSV whose GPU row was duplicated 158,000 times gave a finding per GPU and
    check, and the explain process grew to 736 MiB writing them. At most MAX_FINDINGS are kept, the most severe
    first; one more finding counts what was folded, so the verdict is unchanged."""
    from wizard.explain import MAX_FINDINGS

    body = text(PUBLIC / "query-gpu-csv__h100-gpu-requires-reset-after-launch-failure.txt")
    head, *rows = [ln for ln in body.splitlines() if ln.strip()]
    # the GPU row with a new index each time: thousands of distinct GPUs (identical findings are merged into one)
    many = [f"{i}," + rows[i % len(rows)].split(",", 1)[1] for i in range(3 * MAX_FINDINGS)]
    big = "\n".join([head] + many) + "\n"
    small, r = explain_text(body, "x"), explain_text(big, "y")
    assert len(r.findings) == MAX_FINDINGS and r.findings[-1].id == "explain.findings_folded"
    same = explain_text("\n".join([head] + rows * 500) + "\n", "z")  # one GPU's row 500 times: its findings once
    assert len(same.findings) == len(small.findings)
    assert r.verdict == small.verdict and "more findings of this input are not listed" in r.findings[-1].message


def test_a_job_runners_per_line_tags_are_removed_before_judging():
    """Ray and SkyPilot tag every relayed line with the worker: "(sky-cmd, pid=13008) " (real: skypilot-org/skypilot
    #4099's nvidia-smi), "(RayWorkerWrapper pid=92234, ip=172.19.24.110) " plus Ray's "[repeated 2x across cluster]"
    (real: OpenRLHF/OpenRLHF#621). Lines without a tag stay as they are."""
    smi = "\n".join("(sky-cmd, pid=13008) " + ln for ln in [
        "+---------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 535.183.06             Driver Version: 535.183.06   CUDA Version: 12.2     |",
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|=========================================+======================+======================|",
        "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:04:00.0 Off |                    0 |",
        "| N/A   32C    P0              70W / 700W |      0MiB / 81559MiB |      0%      Default |"])
    assert clean(smi).splitlines()[1].startswith("| NVIDIA-SMI 535.183.06")
    e = explain_text(smi, "sky")
    assert e.kind == "nvidia-smi" and e.verdict is Verdict.PASS
    ray = ("(raylet) A worker died or was killed while executing a task by an unexpected system error.\n"
           "(RayWorkerWrapper pid=92234, ip=172.19.24.110) mlx5: host_unknown: got completion with error: "
           "[repeated 2x across cluster]\n"
           "(RayWorkerWrapper pid=92234, ip=172.19.24.110) [rank1]:[E1224 13:23:05.483840160 ProcessGroupNCCL.cpp:542]"
           " [Rank 12] Collective WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=778567680, NumelOut=778567680, "
           "Timeout(ms)=1800000) raised the following async exception: NCCL error: remote process exited or there "
           "was a network error, NCCL version 2.21.5\n")
    assert clean(ray).splitlines()[1] == "mlx5: host_unknown: got completion with error:"
    assert explain_text(ray, "ray").verdict is Verdict.FAIL
    # a paste where few lines carry such a tag is left alone
    assert clean("(pid=1) a\nb\nc\nd\n") == "(pid=1) a\nb\nc\nd\n"


def test_mpirun_and_torchrun_line_tags_are_removed_so_the_log_reads_as_one_node():
    """Open MPI's ``--tag-output`` ``[1,0]<stdout>:`` and torchrun's ``--tee`` ``[default0]:`` before every line (real:
    NVIDIA/nccl#300, a 4-GPU container's NCCL init under mpirun): the NCCL lines are read with their host, so the
    log is seen as one node's, where the lo socket never carries data between GPUs: not a failure."""
    from tests.probe_data import PUBLIC, text

    log = text(PUBLIC / "nccl-log__docker-4gpu-no-ib-socket-lo-bootstrap.txt")
    assert log.startswith("[1,0]<stdout>:") and clean(log).startswith("5873af64cf59:10158:10560 [0] NCCL INFO")
    r = explain_text(log, "mpirun")
    t = next(f for f in r.findings if f.id == "multinode.transport")
    assert t.verdict is Verdict.UNKNOWN and "one node" in t.message and r.verdict is not Verdict.FAIL
    tee = "\n".join(f"[default{i % 2}]:" + ln.split(":", 1)[1] for i, ln in enumerate(log.splitlines()))
    assert clean(tee).splitlines()[0] == clean(log).splitlines()[0]


def test_kubectl_notices_typed_commands_and_nvidia_smis_date_line_do_not_leave_an_unread_part():
    """`kubectl exec ... -- nvidia-smi` typed without a prompt, kubectl's "Defaulted container" notice and the date
    nvidia-smi prints above its table (real: NVIDIA/gpu-operator#406): one nvidia-smi output, judged."""
    paste = ('kubectl exec nvidia-driver-daemonset-qmsb9 -n gpu-operator -- nvidia-smi\n'
             'Defaulted container "nvidia-driver-ctr" out of: nvidia-driver-ctr, k8s-driver-manager (init)\n'
             'Tue Sep 20 13:11:24 2022\n'
             '+-----------------------------------------------------------------------------+\n'
             '| NVIDIA-SMI 515.48.07    Driver Version: 515.48.07    CUDA Version: 11.7     |\n'
             '|-------------------------------+----------------------+----------------------+\n'
             '| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n'
             '| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n'
             '|                               |                      |               MIG M. |\n'
             '|===============================+======================+======================|\n'
             '|   0  Tesla T4            On   | 00000000:17:00.0 Off |                    0 |\n'
             '| N/A   61C    P0    70W /  70W |    949MiB / 15360MiB |    100%      Default |\n'
             '|                               |                      |                  N/A |\n'
             '+-------------------------------+----------------------+----------------------+\n')
    e = explain_text(paste, "k8s")
    assert e.kind == "nvidia-smi" and e.verdict is Verdict.PASS
    assert not any(f.id == "explain.unrecognised_part" for f in e.findings)


def test_the_typed_command_helps_recognise_its_output():
    """`srun ... nvidia-smi -L` typed without a prompt: the launcher's own lines follow it; the command says what ran
    (real: a pyxis node, tests/data/public/nvidia-smi-L__pyxis-srun-nvidia-smi-L-8xh100.txt)."""
    e = explain_text(text(PUBLIC / "nvidia-smi-L__pyxis-srun-nvidia-smi-L-8xh100.txt"), "pyxis")
    assert e.kind == "nvidia-smi-L" and e.verdict is Verdict.PASS


def test_a_paste_cut_inside_its_last_part_keeps_the_verdict_of_what_came_before() -> None:
    """collect_env cut two lines into its lscpu section (as round 7's held-out pastes were): the torch part passes,
    the cut lscpu tail is skip ("cut, not judged"), so the whole is pass, not unknown. The same lscpu cut on its own,
    or the torch part missing, stays unknown (nothing was judged)."""
    lines = text(PUBLIC / "collect-env__1x-h100-hbm3-torch291-cu126-driver580.txt").splitlines()
    cut = "\n".join(lines[:lines.index("CPU:") + 3]) + "\n"
    r = explain_text(cut)
    assert r.verdict is Verdict.PASS, [(f.id, f.verdict) for f in r.findings]
    tail = [f for f in r.findings if f.id == "bios.cpu"]
    assert [f.verdict for f in tail] == [Verdict.SKIP] and "at the end of this paste is cut" in tail[0].message
    alone = explain_text("\n".join(lines[lines.index("CPU:"):lines.index("CPU:") + 3]) + "\n")
    assert alone.verdict is Verdict.UNKNOWN


def test_srun_label_prefixes_are_removed_before_reading():
    """A real nccl-tests run relayed by `srun --label` ('0: ' before every line; held-out round 13) is read as
    nccl-tests; a short `ip link` (whose '1: lo:' is not a label on every line) keeps its numbers."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "nccl-tests__allreduce-2x-p4de-a100-efa-78gbs.txt"))
    assert r.kind == "nccl-tests" and "78.33" in r.findings[0].message
    from wizard.explain import clean

    ip = "1: lo: <LOOPBACK,UP> mtu 65536\n    link/loopback 00:00:00:00:00:00\n2: eth0: <UP> mtu 1500\n    link/ether aa\n"
    assert clean(ip) == ip


def test_a_container_pulling_its_image_first_is_not_an_unrecognised_part():
    """round 20: `docker run --gpus all ... nvidia-smi` on a node without the image printed docker's pull lines
    first, and that part made the whole paste unknown. A part made only of image-pull lines is left out."""
    e = explain_text(text(PUBLIC / "nvidia-smi__a100-40gb-x8-in-container.txt"))
    assert e.verdict is Verdict.PASS and not any(f.id == "explain.unrecognised_part" for f in e.findings)
    # a part with anything else in it is still said (synthetic: one pull line and one line of another program)
    mixed = ("Unable to find image 'x:1' locally\nsomething else entirely here\nthird odd line\n"
             + text(PUBLIC / "nvidia-smi__a100-40gb-x8-in-container.txt").split("Status: Downloaded", 1)[1].split("\n", 1)[1])
    assert any(f.id == "explain.unrecognised_part" for f in explain_text(mixed).findings)


def test_an_empty_input_is_said_to_be_empty():
    """walk 20: an empty file (a failed paste or redirect) read as "bringup does not recognise this input", and with
    --kind nvidia-smi as "no GPU in this output". It is unknown, and said to be empty."""
    from wizard.explain import explain_text

    for text, words in (("", "the input is empty (0 bytes)"), ("\n  \n", "only white space (4 bytes)")):
        for kind in (None, "nvidia-smi"):
            e = explain_text(text, kind=kind)
            assert [f.verdict for f in e.findings] == [Verdict.UNKNOWN] and words in e.findings[0].message, (kind, e)


def test_one_hosts_label_before_every_line_is_removed_before_reading():
    """Held-out round 32: a runner relayed rocm-smi with "nid005113 out: " before every line (pdsh's and clush's
    "node01: " is the same); the label goes and the table is read. A tag without a digit ("NVRM: ") is not a host's
    name, and several hosts' lines stay as relayed."""
    r = explain_text(text(PUBLIC / "rocm-smi__cray-nid-mi250x-8gcd-idle.txt"))
    assert r.kind == "rocm-smi" and r.verdict is Verdict.PASS
    nvrm = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module\nNVRM: Xid (PCI:0000:3b:00): 79\nNVRM: GPU at 0000:3b:00.0\n"
    assert clean(nvrm) == nvrm  # synthetic_
    two = "node01: a line\nnode02: a line\nnode01: more\nnode02: more\n"  # synthetic_
    assert clean(two) == two
    assert clean("node7: one\nnode7: two\nnode7: three\n") == "one\ntwo\nthree\n"  # synthetic_


def test_slurm_clients_progress_lines_are_not_the_output():
    """Held-out r35 #12: `salloc` printed "Granted job allocation 7", "Waiting for resource configuration" and "Nodes
    compute000000 are ready for job" above `nvidia-smi -L`; the paste was "not recognised". Those progress lines are
    dropped before reading; an `srun: error:` line is not."""
    smi = ("GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-f99b470b-763f-a830-53fa-6afd5076789b)\n"
           "GPU 1: Tesla V100-SXM2-32GB (UUID: GPU-1ecd009f-aaf6-29d4-e7a3-076c717e2bbd)\n")
    chatter = ("salloc: Granted job allocation 7\nsalloc: Waiting for resource configuration\n"
               "salloc: Nodes compute000000 are ready for job\n")
    e = explain_text(chatter + smi + "salloc: Relinquishing job allocation 7")
    assert e.kind == "nvidia-smi-L" and e.verdict.value == "pass"
    assert clean(chatter + smi) == smi
    assert "srun: error: task 0 launch failed" in clean("srun: error: task 0 launch failed\n" + smi)


def test_several_hosts_labelled_lines_are_judged_per_host_and_named():
    """Held-out r37 #08: `clush -a free -g` over four nodes (IPv4 labels) was not recognised. Each host's lines are
    judged on their own and its findings carry the host; the totals (125, 3023) are not KiB (no host has 3 MiB), so
    they are judged by their ratios and shown as printed. A single host's label is still only stripped."""
    e = explain_text(text(PUBLIC / "free__oci-h200-cluster-clush-free-g.txt"))
    assert e.kind == "free" and e.verdict.value == "pass"
    subjects = [f.subject for f in e.findings if f.id == "os.memory_pressure"]
    assert subjects == ["172.16.0.225", "172.16.0.59", "172.16.48.190", "172.16.48.244"]
    assert all("unit not shown" in f.message for f in e.findings) and not any(f.id == "os.memory" for f in e.findings)
    one = "\n".join("node07: " + ln for ln in text(PUBLIC / "free__oci-h200-cluster-clush-free-g.txt")
                    .splitlines()[6:9] if ln) .replace("node07: 172.16.48.190: ", "node07: ")
    assert [f.subject for f in explain_text(one).findings] == ["host"]


def test_topo_m_and_topo_p2p_pasted_back_to_back_are_two_outputs():
    """Held-out round 45 (2x RTX 2080 Ti, AutoDL): `nvidia-smi topo -m` then `topo -p2p` without a prompt between
    them: the second matrix's header after the first one's legend starts its own part, so P2P 'NS' is judged (a
    warning without a GPU model: NCCL stages through host memory), not lost inside the topology matrix. rocm-smi's
    several GPU-pair matrices stay one output."""
    r = explain_text(text(PUBLIC / "nvidia-smi-topo__2x-2080ti-pix-p2p-not-supported.txt"), "x")
    assert r.kind == "nvidia-smi-topo-m+nvidia-smi-topo-p2p", r.kind
    p2p = [f for f in r.findings if f.id == "health.p2p"]
    assert [f.verdict for f in p2p] == [Verdict.WARN] and "GPU0-GPU1 NS (Not supported)" in p2p[0].message
    rocm = explain_text(text(PUBLIC / "rocm-smi__8x-mi300-mi308-xgmi-weight-15-all-pairs.txt"), "x")
    assert len(rocm.parts) == 1


def test_findings_that_say_the_same_thing_are_one_with_both_evidence_lines():
    """walk 30 #10: torch's THCudaCheck line and the RuntimeError of one error 35 gave two identical driver.torch_cuda
    findings; they are one, quoting both lines."""
    r = explain_text(text(CASES / "torch-cuda__driver-insufficient-runtime-error35.txt"), "x")
    fails = [f for f in r.findings if f.id == "driver.torch_cuda"]
    assert len(fails) == 1 and len(fails[0].evidence) >= 2
    assert any("THCudaCheck" in e for e in fails[0].evidence) and any("RuntimeError" in e for e in fails[0].evidence)


def test_ifconfig_pasted_after_another_output_is_its_own_part():
    """Held-out round 49 (a pod's ibdev2netdev line, then its ifconfig): ifconfig's first interface starts a part, so
    the port line is judged (Down: a fail) and ifconfig's interfaces stay one unrecognised part."""
    r = explain_text(text(PUBLIC / "ibdev2netdev__pod-ib-vf-down.txt"), "x")
    assert r.verdict is Verdict.FAIL and len(r.parts) == 2
    assert [f.id for f in r.findings].count("explain.unrecognised_part") == 1


def test_an_nvidia_smi_banner_cut_before_its_gpu_rows_is_named():
    """Walk 33 #15: nvidia-smi's banner alone (a console paste cut early) got the generic "not recognised": it is named
    as the start of an nvidia-smi table, still unknown (no GPU to judge), with what to paste."""
    r = explain_text("Tue Dec  2 10:00:00 2025\n+----------------------+\n| NVIDIA-SMI 580.65.06 |\n")
    (f,) = r.findings
    assert f.verdict.value == "unknown" and "start of an nvidia-smi table" in f.message and "nvidia-smi" in f.remedy
    assert "start of an nvidia-smi" not in explain_text("hello world\nnothing here\n").findings[0].message


def test_no_break_spaces_and_triple_quote_marks_are_undone_before_reading():
    """Held-out rounds 154 and 157: an ibv_devinfo from a mail archive with U+00A0 for spaces; a guide's '>>> ' before
    every output line under the command line the person typed."""
    nb = explain_text((PUBLIC / "ibv-devinfo__2x-connectx7-roce-fw-28.39-both-ports-active-mtu-1024.txt").read_text())
    assert nb.kind is not None and nb.verdict is Verdict.PASS
    body = "root@node:~# smartctl -H /dev/sda\n" + "".join(
        ">>> " + ln + "\n" for ln in ("smartctl 7.2 2020-12-30 r5155 [x86_64-linux] (local build)",
                                      "Copyright (C) 2002-20, Bruce Allen, Christian Franke, www.smartmontools.org", "",
                                      "=== START OF READ SMART DATA SECTION ===",
                                      "SMART overall-health self-assessment test result: PASSED"))
    r = explain_text(body)  # synthetic_ quoting of a real smartctl -H shape
    assert r.kind is not None and r.verdict is Verdict.PASS


def test_host_banners_split_a_fleet_sweep_but_section_titles_do_not():
    """Held-out round 185: `for h in ...; do echo "=== $h ==="; ssh $h nvidia-smi ...; done` prints a banner per
    host; each host's output is judged on its own (one host's NVML mismatch fails the paste). A script's section
    titles without a digit ("=== nvidia-smi ===", "=== GPU Identity ===") are not host banners."""
    from wizard.explain import split_parts

    sweep = text(PUBLIC / "nvidia-smi-query-gpu__fleet-sweep-nvml-driver-library-mismatch.txt")
    assert len(split_parts(sweep)) == 3
    r = explain_text(sweep, "sweep")
    assert r.verdict.value == "fail" and any("cannot talk to the NVIDIA driver" in f.message for f in r.findings)
    from wizard.explain import _HOST_BANNER

    assert [bool(_HOST_BANNER.match(t)) for t in ("=== gpu-worker-1 ===", "--- node03 ---", "=== nvidia-smi ===",
                                                  "=== GPU Identity ===", "=== GPU ===", "------")] == [
        True, True, False, False, False, False]
    titles = "=== GPU Identity ===\nGPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n=== Clock Speeds ===\nx\n"
    assert len(split_parts(titles)) == 1


def test_an_elision_mark_is_not_a_kernel_line():
    """Held-out round 275 (real): the '[...]' an author put between NVLink lines matched dmesg's stamp pattern, was
    split off as a kernel log, and the nvlink -s listing lost its elision: '2 of 18 links active' failed. The mark
    stays with the listing, which is then unknown (links elided), not failed."""
    r = explain_text(text(PUBLIC / "nvidia-smi-nvlink-s__ml-engineering-h100-status-elided.txt"))
    assert r.verdict.value == "unknown" and "elides links" in r.findings[0].message


def test_an_environment_report_and_the_topology_under_it_are_two_outputs():
    """Held-out round 273 (real): sglang.check_env ends with 'NVIDIA Topology:' and the matrix; the whole was read as
    nvidia-smi topo -m (the report's A40 and driver unread). The report is read as the report, the matrix as the
    matrix."""
    r = explain_text(text(PUBLIC / "collect-env__sglang-check-env-a40-single.txt"))
    assert r.kind == "cuda-env-report+nvidia-smi-topo-m"
    assert any("NVIDIA A40" in f.message for f in r.findings if f.id == "driver.cuda_env")


def test_torchrun_agent_lines_in_an_nccl_log_are_judged_as_the_launcher():
    """Held-out round 284 (real): after NCCL came up, torchrun's agent reported local_rank 2 'failed (exitcode: -9)';
    the log passed as 'NCCL communicator initialised'. The agent's lines are the launcher's output: SIGKILL said."""
    r = explain_text(text(PUBLIC / "nccl-debug__4x-init-complete-then-rank-sigkill.txt"))
    assert r.kind == "nccl-debug+launcher"
    assert [f.verdict.value for f in r.findings if f.id == "node.rank_exit"] == ["warn"]


def test_launcher_and_log_collector_prefixes_are_not_output():
    """ssh's 'Warning: Permanently added ... to the list of known hosts.' (mpirun over ssh: held-out round 283) is
    launch noise, and a stern/kubectl --prefix 'POD CONTAINER ' tag on every line (round 288) is removed, so the
    nvidia-smi relayed by the GPU Operator's driver manager is read."""
    r = explain_text(text(PUBLIC / "nccl-debug__p5-2node-h100-efa-ofi-init-32-nics.txt"))
    assert r.kind == "nccl-tests" and not any(f.id == "explain.unrecognised_part" for f in r.findings)
    smi = explain_text(text(PUBLIC / "nvidia-smi__gpu-operator-driver-manager-grid-a100d-4c-vgpu-525.txt"))
    assert smi.kind == "nvidia-smi" and smi.verdict.value == "pass"
    assert clean("[pod/p/ctr0] GPU 0: A\n[pod/p/ctr1] GPU 0: A\n[pod/p/ctr1] x\n").startswith("GPU 0: A\nGPU 0: A")
