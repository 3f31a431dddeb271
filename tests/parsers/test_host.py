"""Tests of wizard/parsers/host.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.parsers.host import (
    mount_for,
    parse_cmdline,
    parse_cpu,
    parse_cpulist,
    parse_df,
    parse_iommu,
    parse_meminfo,
    parse_modules,
    parse_mounts,
    parse_numa,
    parse_os_release,
    parse_proc_swaps,
)

from tests import strategies
from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC, collect_tree, grep_tree, text

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TOKENS = ["0", "1", "-", ",", ":", "=", " ", "\t", "\n", "\0", "\"", "'", "\\", "#",
          "kB", "GPU ", "0x10de", "%", "9" * 5000, "[", "{", "}"]


garbage = strategies.garbage(TOKENS, max_size=2000)
"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


@FUZZ
@given(raw=garbage)
def test_parse_cpulist_returns_a_set_of_ints_or_none(raw):
    cpus = parse_cpulist(raw)
    assert cpus is None or all(isinstance(c, int) and c >= 0 for c in cpus)


@FUZZ
@given(path=st.text(max_size=40), mps=st.lists(st.text(max_size=20), max_size=8))
def test_mount_for_returns_one_of_the_mount_points(path, mps):
    mp = mount_for(path, mps)
    assert mp is None or mp in mps


CPU = "/sys/devices/system/cpu"


NODE = "/sys/devices/system/node"


@pytest.fixture(scope="module")
def vm():
    """The development VM's probe outputs, collected by the registry's own probes."""
    return collect_tree(LOCAL_VM, ["cpuinfo", "cpu_topology", "numa", "iommu", "mounts"])


@pytest.mark.parametrize("raw, expected", [
    ("0-1\n", {0, 1}),                      # /sys/devices/system/cpu/online on the dev VM
    ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}),
    ("0", {0}),
    ("", set()),                            # an empty node's cpulist
    ("\n", set()),
])
def test_parse_cpulist_reads_kernel_ranges(raw, expected):
    assert parse_cpulist(raw) == expected


@pytest.mark.parametrize("raw", ["0-", "a-b", "3-1", "0,,2", "0-1 2", "0-99999999",
                                 pytest.param("1" * 5000, id="5000-digit-run")])
def test_parse_cpulist_rejects_malformed_lists(raw):
    assert parse_cpulist(raw) is None


def test_parse_os_release_debian_from_dev_vm():
    r = parse_os_release(text(LOCAL_VM / "etc/os-release"))
    assert (r.id, r.version_id, r.version_codename) == ("debian", "12", "bookworm")
    assert r.pretty_name == "Debian GNU/Linux 12 (bookworm)"  # quotes removed
    assert r.id_like == []
    assert r.problems == []
    assert r.fields["HOME_URL"] == "https://www.debian.org/"


def test_parse_os_release_ubuntu_id_like():
    r = parse_os_release(text(PUBLIC / "os-release__ubuntu-24.04.txt"))
    assert (r.id, r.version_id, r.version_codename) == ("ubuntu", "24.04", "noble")
    assert r.id_like == ["debian"]
    assert r.pretty_name == "Ubuntu 24.04.3 LTS"
    assert r.problems == []


def test_parse_os_release_rhel_quoted_id_and_blank_line():
    r = parse_os_release(text(PUBLIC / "os-release__rhel-9.6.txt"))
    assert r.id == "rhel"  # ID="rhel": quoted
    assert r.id_like == ["fedora"]
    assert r.version_id == "9.6"
    assert r.fields["REDHAT_BUGZILLA_PRODUCT_VERSION"] == "9.6"  # after the blank line
    assert r.problems == []


def test_parse_os_release_synthetic_lines_it_cannot_read():
    raw = "ID=foo\nthis is not a key\nNAME=\"unterminated\nVERSION_ID='1.0'\n# comment\n"
    r = parse_os_release(raw)
    assert r.id == "foo"
    assert r.problems == ["this is not a key"]
    assert r.fields["NAME"] == "unterminated"  # shlex failed; quotes stripped instead
    assert r.version_id == "1.0"
    assert r.pretty_name == "unterminated 1.0"  # no PRETTY_NAME: NAME + VERSION_ID


def test_parse_meminfo_dev_vm():
    m = parse_meminfo(text(LOCAL_VM / "proc/meminfo"))
    assert m.problems == []
    assert m.total_kib == 24684092
    assert m.available_kib == 24391432
    assert (m.swap_total_kib, m.swap_free_kib) == (0, 0)
    assert m.kib["Active(anon)"] == 1520  # keys with parentheses
    assert "HugePages_Total" in m.kib  # a count without "kB"


def test_parse_meminfo_keeps_unreadable_lines_and_refuses_absurd_numbers():
    m = parse_meminfo("MemTotal:  " + "9" * 5000 + " kB\nMemFree: lots\nSwapTotal: 0 kB\n")
    assert m.total_kib is None
    assert m.swap_total_kib == 0
    assert len(m.problems) == 2
    assert m.problems[1] == "MemFree: lots"


def test_parse_proc_swaps_dev_vm_header_only():
    s = parse_proc_swaps(text(LOCAL_VM / "proc/swaps"))
    assert s.header_seen
    assert s.devices == [] and s.problems == []
    assert s.total_kib == 0


def test_parse_proc_swaps_partition():
    raw = text(PUBLIC / "proc-swaps__arm64-nvme-partition.txt")
    s = parse_proc_swaps(raw)
    assert s.header_seen and s.problems == []
    (d,) = s.devices
    assert (d.filename, d.type, d.size_kib, d.used_kib, d.priority) == (
        "/dev/nvme0n1p2", "partition", 466838356, 116922112, -2)
    assert d.line == raw.splitlines()[1]
    assert s.total_kib == 466838356


def test_parse_proc_swaps_columns_run_together_are_problems():
    # Cygwin printed size and used with no space between them: 4 fields, not 5.
    raw = text(PUBLIC / "proc-swaps__cygwin-size-used-run-together.txt")
    s = parse_proc_swaps(raw)
    assert s.header_seen
    assert s.devices == []
    assert s.problems == raw.splitlines()[1:]


def test_parse_proc_swaps_synthetic_escaped_space_in_file_name():
    raw = "Filename\tType\tSize\tUsed\tPriority\n/swap\\040file file 1024 0 -2\n"
    (d,) = parse_proc_swaps(raw).devices
    assert d.filename == "/swap file"


def test_parse_cmdline_dev_vm_stops_at_double_dash():
    c = parse_cmdline(text(LOCAL_VM / "proc/cmdline"))
    assert c.get("console") == "ttyS0"
    assert c.get("mitigations") == "auto,no_guest_host,no_guest_guest"
    assert c.get("nomodule") == ""  # a bare flag
    assert c.get("page_reporting.page_reporting_order") == "11"
    assert c.get("rdinit") == "/process_api"
    assert c.get("--firecracker-init") is None  # after "--": arguments for init
    assert c.get("--addr") is None
    assert c.raw.endswith("--auth-required")


def test_parse_cmdline_iommu_pt():
    c = parse_cmdline(text(CASES / "proc-cmdline__iommu-pt.txt"))
    assert c.get("iommu") == "pt"
    assert c.get("root") == "/dev/mapper/ubuntu--vg-ubuntu--lv"
    assert c.get("ro") == ""
    assert c.get("intel_iommu") is None


def test_parse_cmdline_synthetic_nul_separated_and_last_value_wins():
    c = parse_cmdline("iommu=on\0quiet\0iommu=pt\0")
    assert c.get("iommu") == "pt"
    assert c.get("quiet") == ""


def test_parse_cpu_dev_vm(vm):
    f = parse_cpu(vm["cpuinfo"].text, vm["cpu_topology"].files)
    assert f.model == "Intel(R) Xeon(R) Processor"
    assert (f.sockets, f.cores, f.logical) == (1, 2, 2)
    assert f.online == {0, 1} and f.possible == {0, 1}
    assert f.present is None  # the probe does not read /sys/devices/system/cpu/present
    assert f.smt_active is False and f.smt_control == "notsupported"
    assert f.threads_per_core == 1.0
    assert f.problems == []
    assert "model name\t: Intel(R) Xeon(R) Processor" in f.evidence
    assert f"{CPU}/online:0-1" in f.evidence


def _topology(online: str, possible: str, cpus: dict[int, tuple[int, int]], **extra: str):
    tree: dict[str, str | None] = {f"{CPU}/online": online + "\n", f"{CPU}/possible": possible + "\n"}
    for cpu, (pkg, core) in cpus.items():
        tree[f"{CPU}/cpu{cpu}/topology/physical_package_id"] = f"{pkg}\n"
        tree[f"{CPU}/cpu{cpu}/topology/core_id"] = f"{core}\n"
    for name, value in extra.items():
        tree[f"{CPU}/{name.replace('__', '/')}"] = value + "\n"
    return tree


def test_parse_cpu_synthetic_two_sockets_with_smt():
    cpus = {c: (c // 4 % 2, c % 4) for c in range(16)}  # 2 packages x 4 cores x 2 threads
    f = parse_cpu("model name\t: AMD EPYC 9354 32-Core Processor\n",
                  _topology("0-15", "0-15", cpus, smt__active="1", smt__control="on"))
    assert (f.sockets, f.cores, f.logical) == (2, 8, 16)
    assert f.threads_per_core == 2.0
    assert f.smt_active is True


def test_parse_cpu_synthetic_offline_cpus_are_not_counted():
    cpus = {0: (0, 0), 1: (0, 1), 2: (0, 2), 3: (0, 3)}
    f = parse_cpu("", _topology("0-1", "0-3", cpus, present="0-3"))
    assert f.online == {0, 1} and f.possible == {0, 1, 2, 3} and f.present == {0, 1, 2, 3}
    assert f.logical == 2 and f.cores == 2


def test_parse_cpu_synthetic_garbled_online_is_a_problem():
    f = parse_cpu("", _topology("zero-one", "0-1", {0: (0, 0), 1: (0, 1)}))
    assert f.online is None
    assert f"{CPU}/online:zero-one" in f.problems
    assert f.logical == 2  # still counted from the topology files


def test_parse_cpu_synthetic_arm_cpuinfo_without_model_name():
    cpuinfo = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"
    f = parse_cpu(cpuinfo, {})
    assert f.model == "Arm CPU (implementer 0x41, part 0xd0c)"
    assert f.logical is None and f.online is None


def test_parse_numa_dev_vm(vm):
    n = parse_numa(vm["numa"].files)
    assert n.nodes == {0: {0, 1}}
    assert n.online == {0}
    assert n.problems == []
    assert f"{NODE}/node0/cpulist:0-1" in n.evidence


def test_parse_numa_synthetic_two_nodes_and_a_memory_only_node():
    # node CPU lists from the real `numactl -H` in Yu Zhao's Neoverse-N1 report (PROVENANCE.md);
    # node 2 without CPUs (an HBM/CXL memory-only node) is synthetic.
    tree = {f"{NODE}/online": "0-2\n", f"{NODE}/node0/cpulist": "0-63\n",
            f"{NODE}/node1/cpulist": "64-127\n", f"{NODE}/node2/cpulist": "\n"}
    n = parse_numa(tree)
    assert sorted(n.nodes) == [0, 1, 2]
    assert n.nodes[1] == set(range(64, 128))
    assert n.nodes[2] == set()
    assert n.online == {0, 1, 2}


def test_parse_numa_synthetic_unreadable_cpulist():
    n = parse_numa({f"{NODE}/online": "0-1\n", f"{NODE}/node0/cpulist": "0-3\n",
                    f"{NODE}/node1/cpulist": "garbage\n", f"{NODE}/node2/cpulist": None})
    assert n.nodes == {0: {0, 1, 2, 3}}
    assert n.problems == [f"{NODE}/node1/cpulist:garbage"]


def test_parse_iommu_real_identity_groups():
    f = parse_iommu(grep_tree(PUBLIC / "iommu-groups-type__exynos-identity-grep.txt"))
    assert len(f.group_types) == 11
    assert f.types == {"identity"}
    assert f.units == []
    assert "/sys/kernel/iommu_groups/*/type: identity (11 groups)" in f.evidence


def test_parse_iommu_synthetic_translated_groups_and_units():
    f = parse_iommu(grep_tree(SYNTHETIC / "synthetic_iommu-tree__dmar-dma-fq.txt"))
    assert f.units == ["dmar0", "dmar1"]
    assert f.types == {"DMA-FQ", "DMA"}
    assert "/sys/kernel/iommu_groups/*/type: DMA-FQ (6 groups)" in f.evidence
    assert "/sys/class/iommu: dmar0 dmar1" in f.evidence


def test_parse_iommu_dev_vm_has_none(vm):
    f = parse_iommu(vm["iommu"].files)
    assert f.units == [] and f.group_types == {}
    # the evidence says sysfs was read and held nothing, so "off or not exposed" does not rest on the cmdline alone
    assert f.evidence == ["/sys/class/iommu: no IOMMU unit; /sys/kernel/iommu_groups: no group"]


def test_parse_mounts_dev_vm(vm):
    mounts, problems = parse_mounts(vm["mounts"].text)
    assert problems == []
    root = [m for m in mounts if m.mountpoint == "/"]
    assert root and root[0].source == "/dev/vda" and root[0].fstype == "ext4"
    assert "rw" in root[0].options
    assert root[0].line in vm["mounts"].text.splitlines()


def test_parse_mounts_synthetic_octal_escapes_and_short_lines():
    mounts, problems = parse_mounts("/dev/sdb1 /mnt/my\\040disk ext4 rw 0 0\nbroken line\n")
    assert mounts[0].mountpoint == "/mnt/my disk"
    assert problems == ["broken line"]


def test_parse_df_dev_vm():
    raw = text(LOCAL_VM / "df-P-T-B1-l.txt")
    rows, problems = parse_df(raw)
    assert problems == []
    by_mp = {r.mountpoint: r for r in rows}
    assert set(by_mp) == {"/", "/dev", "/dev/shm", "/sys/fs/cgroup",
                          "/mnt/sandboxing/model_tools_env/v1/python"}
    root = by_mp["/"]
    assert (root.source, root.fstype, root.size_bytes) == ("/dev/vda", "ext4", 270553174016)
    assert root.capacity_pct == 22 and root.used_pct == 22.0
    assert root.line in raw.splitlines()


def test_parse_df_synthetic_space_in_mount_point_and_dash_capacity():
    raw = ("Filesystem Type 1-blocks Used Available Capacity Mounted on\n"
           "/dev/sdb1 ext4 1000 500 500 50% /mnt/my disk\n"
           "none autofs 0 0 0 - /net\n")
    rows, problems = parse_df(raw)
    assert [r.mountpoint for r in rows] == ["/mnt/my disk"]
    assert problems == []  # a Use% of "-" is a pseudo filesystem with no size: left out, not unreadable


def test_parse_df_reads_the_forms_operators_paste() -> None:
    """synthetic_ rows in GNU df's layouts (df(1)): -h sizes in powers of 1024, the default 1K-blocks, a wrapped long
    source name, no Type column; garbage is kept as unreadable."""
    rows, problems = parse_df("Filesystem      Size  Used Avail Use% Mounted on\n"
                              "overlay         1.8T  1.2T  541G  70% /\n"
                              "shm              64M     0   64M   0% /dev/shm\n"
                              "/dev/mapper/vg-very-long-logical-volume-name\n"
                              "                 50G   48G  2.0G  96% /data\n"
                              "not a df row\n")
    by = {r.mountpoint: r for r in rows}
    assert by["/dev/shm"].size_bytes == 64 * 2**20 and by["/dev/shm"].fstype == ""
    assert by["/"].size_bytes == int(1.8 * 2**40) and by["/data"].capacity_pct == 96
    assert by["/data"].source == "/dev/mapper/vg-very-long-logical-volume-name" and "48G" in by["/data"].line
    assert problems == ["not a df row"]
    kib, _ = parse_df("Filesystem     1K-blocks    Used Available Use% Mounted on\n"
                      "tmpfs           65536       0     65536   0% /dev/shm\n")
    assert kib[0].size_bytes == 64 * 2**20


@pytest.mark.parametrize("path, mountpoints, expected", [
    ("/data/ckpt", ["/", "/data"], "/data"),
    ("/database", ["/", "/data"], "/"),  # a path prefix is not a mount prefix
    ("/data", ["/", "/data"], "/data"),
    ("/srv", ["/boot"], None),
    ("/", ["/", "/dev"], "/"),
])
def test_mount_for_picks_the_longest_containing_mount(path, mountpoints, expected):
    assert mount_for(path, mountpoints) == expected


def test_parse_modules_lsmod_nvidia_used_by():
    raw = text(CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt")
    mods, problems = parse_modules(raw)
    assert problems == []
    assert mods["nvidia"].used_by == ["nvidia_uvm", "nv_peer_mem", "gdrdrv", "nvidia_modeset"]
    assert mods["nvidia"].line == raw.splitlines()[1]
    assert mods["gdrdrv"].used_by == []


def test_parse_modules_proc_modules_format():
    mods, problems = parse_modules(text(PUBLIC / "proc-modules__cloudlinux9-vm.txt"))
    assert problems == []
    assert len(mods) == 12
    assert mods["cdrom"].used_by == ["hfsplus", "hfs"]  # trailing comma in /proc/modules
    assert mods["autofs4"].used_by == []  # "-"
    assert mods["xor"].used_by == ["btrfs"]


def test_parse_modules_lsmod_nouveau_and_header():
    raw = "Module                  Size  Used by\n" + text(PUBLIC / "lsmod__quadro-t2000-nouveau-loaded-partial.txt")
    mods, problems = parse_modules(raw)
    assert problems == []
    assert "Module" not in mods
    assert mods["nouveau"].line == "nouveau              2416640  0"
    assert mods["ttm"].used_by == ["drm_ttm_helper", "nouveau"]


def test_parse_modules_unreadable_lines():
    mods, problems = parse_modules("nvidia\nnot a module line at all\n")
    assert mods == {}
    assert problems == ["nvidia", "not a module line at all"]
