"""Fuzzing the driver-area parsers, judges, checks and install resolvers: random text, random bytes
decoded with errors="replace", truncations and line mutations of the real outputs. None may raise;
findings keep the contract (verdict, non-empty message, remedy for anything not pass/skip)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.probe_data import DATA, text
from tests import strategies
from wizard.actions import ActionContext
from wizard.install import driver as di
from wizard.rules import driver_install as ds
from wizard.model import Verdict
from wizard.parsers import packages as pk
from wizard.parsers.platform import parse_mokutil_sb_state
from wizard.probes import ProbeOutput

PUB = DATA / "public" / "driver"
SYN = DATA / "synthetic" / "driver"
REAL = [text(p) for p in sorted(PUB.iterdir()) if p.is_file()] + [text(p) for p in sorted(SYN.iterdir())]
FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

random_text = st.text(max_size=400)
random_bytes = st.binary(max_size=400).map(lambda b: b.decode("utf-8", errors="replace"))


def mutated_real() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL)


any_text = st.one_of(random_text, random_bytes, mutated_real())

PARSERS = [pk.parse_dpkg, pk.parse_rpm, pk.parse_dkms_status, pk.parse_systemctl_show, pk.parse_systemctl_status,
           pk.parse_fm_version, pk.parse_modinfo, parse_mokutil_sb_state, pk.upstream_version, pk.branch_of,
           lambda t: pk.parse_systemctl_words(t, pk.SERVICE_UNITS, "active"),
           lambda t: pk.parse_systemctl_words(t, pk.SERVICE_UNITS, "enabled")]
JUDGES = [ds.judge_dkms_text, ds.judge_dpkg_text, ds.judge_rpm_text, ds.judge_service_text, ds.judge_fm_version_text,
          ds.judge_modinfo_text]


def check_contract(findings) -> None:
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f.verdict, Verdict) and f.message and f.id.startswith("driver.") or f.id.startswith("health.")
        if f.verdict not in (Verdict.PASS, Verdict.SKIP):
            assert f.remedy, (f.id, f.verdict, f.message)
        assert all(isinstance(e, str) for e in f.evidence)


@FAST
@given(any_text)
def test_parsers_never_raise(t):
    for p in PARSERS:
        p(t)


@FAST
@given(any_text)
def test_judges_never_raise_and_keep_the_contract(t):
    for j in JUDGES:
        check_contract(j(t, {"today": "2026-11-30"}))


PROBES = ["driver_dpkg", "driver_rpm", "driver_dkms", "driver_services", "driver_fm_version", "driver_modinfo",
          "driver_secure_boot", "nvidia_driver_version", "kernel", "os_release", "driver_uname_m", "nvml"]


@st.composite
def outputs(draw) -> dict[str, ProbeOutput]:
    out: dict[str, ProbeOutput] = {}
    for name in draw(st.lists(st.sampled_from(PROBES), unique=True, max_size=len(PROBES))):
        rc = draw(st.sampled_from([0, 1, 127, None]))
        err = draw(st.sampled_from(["", "", "command not found: x", "no such file", "timeout"]))
        out[name] = ProbeOutput(name, f"$ {name}", text=draw(any_text), rc=rc, error=err, stderr=draw(st.sampled_from(["", "x"])))
    if draw(st.booleans()):
        did = draw(st.sampled_from(["2330", "1db4", "2901", "1c82", "26b9", "0000", "zzzz"]))
        out["pci"] = ProbeOutput("pci", "sysfs", files={"/sys/bus/pci/devices/0000:17:00.0/vendor": "0x10de\n",
                                                        "/sys/bus/pci/devices/0000:17:00.0/device": f"0x{did}\n",
                                                        "/sys/bus/pci/devices/0000:17:00.0/class": "0x030200\n"})
    return out


CHECKS = [ds.branch_choice, ds.installed_driver, ds.kernel_module, ds.persistenced, ds.fabric_manager_setup, ds.dcgm,
          ds.container_toolkit, ds.chain_summary]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs())
def test_checks_never_raise(out):
    for c in CHECKS:
        check_contract(c(out, {"today": "2026-11-30"}))


RESOLVERS = [di.resolve_driver_install, di.resolve_fabric_manager, di.resolve_cuda_toolkit, di.resolve_dcgm,
             di.resolve_container_toolkit, di.resolve_persistenced]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs())
def test_resolvers_never_raise_and_never_emit_non_string_argv(out):
    ctx = ActionContext(out, {"today": "2026-11-30"}, "/tmp/b", state_dir="/tmp/s")
    for r in RESOLVERS:
        res = r(ctx)
        assert bool(res.manual) != bool(res.ops)
        for op in res.ops:
            if "argv" in op:
                assert op["argv"] and all(isinstance(a, str) and a for a in op["argv"])


@st.composite
def known_distro_outputs(draw) -> dict[str, ProbeOutput]:
    """Known distribution IDs with odd versions, kernels and machine types: resolvers must still
    answer with string argv or manual text."""
    osid = draw(st.sampled_from(["ubuntu", "debian", "rocky", "rhel", "almalinux", "sles", "fedora", "arch"]))
    ver = draw(st.one_of(st.sampled_from(["22.04", "24.04", "12", "13", "9.4", "8.10", "10.0", "15.6", ""]), random_text))
    osr = f'ID={osid}\nVERSION_ID="{ver}"\nPRETTY_NAME="{osid} {ver}"\n'
    return {
        "os_release": ProbeOutput("os_release", "/etc/os-release", text=osr),
        "kernel": ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=draw(st.one_of(random_text, st.just("6.8.0-31-generic")))),
        "driver_uname_m": ProbeOutput("driver_uname_m", "$ uname -m", text=draw(st.sampled_from(["x86_64", "aarch64", "ppc64le", ""]))),
        "driver_secure_boot": ProbeOutput("driver_secure_boot", "$ mokutil --sb-state",
                                          text=draw(st.sampled_from(["SecureBoot enabled\n", "SecureBoot disabled\n", ""]))),
        "nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=draw(any_text)),
        "driver_dpkg": ProbeOutput("driver_dpkg", "$ dpkg-query -W", text=draw(any_text), rc=draw(st.sampled_from([0, 1]))),
        "driver_rpm": ProbeOutput("driver_rpm", "$ rpm -qa", text=draw(any_text)),
        "pci": ProbeOutput("pci", "sysfs", files={"/sys/bus/pci/devices/0000:17:00.0/vendor": "0x10de\n",
                                                  "/sys/bus/pci/devices/0000:17:00.0/device":
                                                      f"0x{draw(st.sampled_from(['2330', '1db4', '2901', '15f8']))}\n",
                                                  "/sys/bus/pci/devices/0000:17:00.0/class": "0x030200\n"}),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_distro_outputs())
def test_resolvers_on_known_distributions_with_odd_facts(out):
    ctx = ActionContext(out, {"today": "2026-11-30"}, "/tmp/b", state_dir="/tmp/s")
    for r in RESOLVERS:
        res = r(ctx)
        assert bool(res.manual) != bool(res.ops)
        for op in res.ops:
            if "argv" in op:
                assert op["argv"] and all(isinstance(a, str) and a for a in op["argv"])
