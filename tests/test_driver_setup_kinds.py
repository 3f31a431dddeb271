"""`bringup explain` on the driver-area outputs: each real file is recognised as its kind (no kind
argument) and judged by the same rules as the live checks; these detectors do not claim the shared
cases or other areas' files."""

from __future__ import annotations

import pytest

from tests.probe_data import DATA, text
from wizard.explain import explain_text
from wizard.registry import KINDS

PUB = DATA / "public" / "driver"
TODAY = {"today": "2026-11-30"}
MINE = {"dkms-status", "nvidia-packages-dpkg", "nvidia-packages-rpm", "nvidia-service-status", "fabricmanager-version",
        "modinfo-nvidia"}

# file, kind, overall verdict, a word the findings must mention
CASES = [
    ("dkms-status__debian13-nvidia-610-zfs.txt", "dkms-status", "pass", "7.1.3+deb13-amd64"),
    ("dkms-status__gcp-nvidia-465-added-old-format.txt", "dkms-status", "fail", "added"),
    ("dkms-status__nobara43-nvidia-580-openrazer.txt", "dkms-status", "pass", "580.126.09"),
    ("dkms-status__rocky9-nvidia-615-added.txt", "dkms-status", "fail", "not built"),
    ("dkms-status__rocky9-nvidia-615-installed-after-depmod.txt", "dkms-status", "pass", "el9_8_ciq"),
    ("dkms-status__ubuntu-hwe-nvidia-390-added-kernel-6.8.txt", "dkms-status", "fail", "390.157"),
    ("dkms-status__ubuntu-realsense-nvidia-510-old-format.txt", "dkms-status", "pass", "5.13.0-40-generic"),
    ("dkms-status__ubuntu2404-535-diff-built-installed-warning.txt", "dkms-status", "warn", "differs"),
    ("dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt", "nvidia-packages-dpkg", "warn", "end of life"),
    ("dpkg-l__lambda-h100-vm-fabricmanager-570.txt", "nvidia-packages-dpkg", "warn", "no NVIDIA driver package"),
    ("rpm-qa__nobara43-nvidia-580-epoch.txt", "nvidia-packages-rpm", "pass", "R580"),
    ("rpm-qa__rocky9-ciq-nvidia-open-615-t4.txt", "nvidia-packages-rpm", "warn", "R615"),
    ("journal__fabricmanager-version-mismatch-550.127.05-vs-550.120.txt", "nvidia-service-status", "fail", "550.120"),
    ("journal__fabricmanager-nv-warn-nothing-to-do-a40-nvlink-bridge-partial.txt", "nvidia-service-status", "fail",
     "NV_WARN_NOTHING_TO_DO"),
    ("systemctl-status__sberlinux-fabricmanager-590-active.txt", "nvidia-service-status", "pass", "active"),
    ("systemctl-status__dell-nvl5-fabricmanager-nvlsm-active-partial.txt", "nvidia-service-status", "pass", "active"),
    ("systemctl-status__fabricmanager-failed-signal-kill.txt", "nvidia-service-status", "fail", "signal"),
    ("systemctl-status__persistenced-active-no-persistence-mode-a100.txt", "nvidia-service-status", "warn",
     "--no-persistence-mode"),
    ("systemctl-status__persistenced-active-proxmox-partial.txt", "nvidia-service-status", "pass", "active"),
    ("systemctl-status__persistenced-failed-exit-code-gcp.txt", "nvidia-service-status", "warn", "failed"),
    ("nv-fabricmanager-version__dell-nvl5-610.57.04.txt", "fabricmanager-version", "unknown", "610.57.04"),
    ("nv-fabricmanager-version__masked-580.txt", "fabricmanager-version", "unknown", "not readable"),
    ("modinfo-nvidia__nobara43-580-open-on-gtx1050ti.txt", "modinfo-nvidia", "pass", "open"),
    ("modinfo-nvidia__ubuntu-nvidia-current-295-proprietary.txt", "modinfo-nvidia", "pass", "proprietary"),
    ("modprobe__gcp-module-nvidia-not-found.txt", "modinfo-nvidia", "fail", "no nvidia module"),
]


def words(r) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in r.findings).lower()


@pytest.mark.parametrize("name, kind, verdict, mention", CASES)
def test_real_driver_outputs_explained(name, kind, verdict, mention):
    r = explain_text(text(PUB / name), expectations=TODAY)
    assert r.kind == kind
    assert r.verdict.value == verdict, [(f.id, f.verdict, f.message) for f in r.findings]
    assert mention.lower() in words(r)


def test_fm_version_next_to_a_driver_version_is_compared():
    from wizard.rules.driver_install import judge_fm_version_text

    body = text(PUB / "proc-driver-nvidia-version__sberlinux-open-590.48.01.txt").split("\n", 1)[1]
    f = judge_fm_version_text("Fabric Manager version is : 580.95.05\n" + body, TODAY)
    assert [x.verdict.value for x in f] == ["fail"] and "590.48.01" in f[0].message
    same = judge_fm_version_text("Fabric Manager version is : 590.48.01\n" + body, TODAY)
    assert [x.verdict.value for x in same] == ["pass"]
    # pasted as two commands, explain judges each part on its own
    r = explain_text("$ nv-fabricmanager --version\nFabric Manager version is : 580.95.05\n$ cat /proc/driver/nvidia/version\n"
                     + body, expectations=TODAY)
    assert r.kind == "fabricmanager-version+proc-driver-nvidia-version"


@pytest.mark.parametrize("path", sorted(p for p in (DATA / "cases").iterdir() if p.suffix in (".txt", ".xml")),
                         ids=lambda p: p.name)
def test_shared_cases_are_not_claimed_by_driver_kinds(path):
    pass  # the registry lists every kind and probe; nothing to load
    assert explain_text(text(path)).kind not in MINE


@pytest.mark.parametrize("path", sorted(p for p in (DATA / "public").iterdir() if p.is_file()), ids=lambda p: p.name)
def test_other_public_files_are_not_claimed_by_driver_kinds(path):
    assert explain_text(text(path)).kind not in MINE
