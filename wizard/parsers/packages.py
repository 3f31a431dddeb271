"""Parsers for the driver-install area: installed packages (``dpkg -l`` / ``dpkg-query -W`` and
``rpm -qa``), ``dkms status``, systemd unit state (``systemctl show``, ``systemctl status``,
``is-active``/``is-enabled`` words), ``nv-fabricmanager --version``, ``modinfo nvidia`` and
``mokutil --sb-state``.

Formats (all read from real outputs, see tests/data/PROVENANCE.md):

* dpkg: ``ii  nvidia-dkms-535  535.154.05-0ubuntu1  amd64  NVIDIA DKMS package`` (``dpkg -l``; the
  first two letters are the desired/current state, ``ii`` = installed; dpkg-query(1) "--list").
* rpm: ``kmod-nvidia-open-dkms-615.71.09-1.el9.noarch`` (NAME-VERSION-RELEASE.ARCH) and, from RPM 6,
  ``nvidia-driver-3:580.126.09-1.fc43.x86_64`` (an epoch before the version).
* dkms status: ``nvidia/580.95.05, 6.8.0-45-generic, x86_64: installed`` (dkms 3.x),
  ``nvidia, 510.85.02, 5.13.0-40-generic, x86_64: installed`` (dkms 2.x), ``nvidia/615.71.09: added``
  (registered but not built), optionally followed by ``(WARNING! Diff between built and installed
  module!)`` (dkms(8): the installed .ko is not the one DKMS built).
* systemctl show: ``Key=value`` lines, one block per unit, blocks separated by an empty line
  (systemctl(1) "show").
* nv-fabricmanager --version: ``Fabric Manager version is : 580.95.05``.
* modinfo: ``key: value`` lines; the open kernel module declares ``license: Dual MIT/GPL``
  (NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv-frontend.c, MODULE_LICENSE), the
  proprietary one ``license: NVIDIA``.

Registers the probes ``driver_dpkg``, ``driver_rpm``, ``driver_dkms``, ``driver_services``,
``driver_fm_version``, ``driver_modinfo``, ``driver_uname_m`` (the Secure Boot state is the BIOS stage's ``mokutil_sb_state``) and the explain
kinds ``dkms-status``, ``nvidia-packages-dpkg``, ``nvidia-packages-rpm``, ``nvidia-service-status``,
``fabricmanager-version``, ``modinfo-nvidia``. Parsers never raise on garbage: what they cannot read
goes to ``problems``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.probes import DPKG_PATTERNS, RPM_PATTERNS, SERVICE_UNITS  # noqa: F401 - what the package probes ask for
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re
from wizard.parsers.prompt import SHELL_PROMPT, typed


# ------------------------------------------------------------------ versions


def upstream_version(v: str) -> str:
    """The upstream driver version inside a package version: ``1:580.95.05-0ubuntu0.24.04.1`` ->
    ``580.95.05``; ``580.95.05_k6.4.0_150600.21`` -> ``580.95.05``; "" when it does not start with
    digits and dots."""
    s = (v or "").strip()
    s = re.sub(r"^\d{1,9}:", "", s)
    m = re.match(r"\d{1,6}(?:\.\d{1,6}){1,3}", s)
    return m.group(0) if m else ""


def branch_of(version: str) -> str:
    """Driver branch of a version: ``580.95.05`` -> ``580``; "" when unreadable."""
    m = re.match(r"\s*(\d{3})(?:\.|$)", version or "")
    return m.group(1) if m else ""


# ------------------------------------------------------------------ packages


@dataclass(frozen=True)
class Package:
    """One installed (or known) package. ``state`` is dpkg's two/three-letter state (``ii``), or
    ``installed`` for rpm; ``upstream`` is the upstream version (:func:`upstream_version`)."""

    name: str
    version: str
    arch: str = ""
    state: str = ""
    line: str = ""

    @property
    def upstream(self) -> str:
        return upstream_version(self.version)

    @property
    def installed(self) -> bool:
        """dpkg: desired state any, current state ``i`` (installed) — ``ii``, ``hi``, ``ri``...
        (dpkg-query(1): second letter is the current state); rpm rows are installed."""
        if self.state == "installed":
            return True
        return len(self.state) >= 2 and self.state[1] == "i"


@dataclass(frozen=True)
class PackageList:
    """Packages read from one listing, with the manager (``dpkg``/``rpm``) and unreadable lines."""

    manager: str = ""
    packages: list[Package] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)  # "no packages found matching X" lines
    problems: list[str] = field(default_factory=list)

    def installed(self) -> list[Package]:
        return [p for p in self.packages if p.installed]

    def find(self, pattern: str) -> list[Package]:
        """Installed packages whose name fully matches the regex ``pattern``."""
        rx = re.compile(pattern)
        return [p for p in self.installed() if rx.fullmatch(p.name)]


_DPKG_ROW = lazy_re(r"^(?P<state>[uirhpUIRHP][nicuhfwtUNICUHFWT][ R]?)\s+(?P<name>[a-z0-9][a-z0-9+.\-]*(?::[a-z0-9]+)?)"
                       r"\s+(?P<version>\S+)(?:\s+(?P<arch>\S+))?(?:\s+(?P<desc>.*))?$")
_DPKG_NOISE = lazy_re(r"^(Desired=|\| Status=|\|/ Err\?=|\|\|/ Name|\+\+\+-)")


def parse_dpkg(text: str) -> PackageList:
    """``dpkg -l`` / ``dpkg -l | grep nvidia`` / ``dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}
    ${Version} ${Architecture}\\n'`` -> packages (any state; see :attr:`Package.installed`)."""
    out = PackageList(manager="dpkg")
    for line in text.splitlines():
        s = line.rstrip()
        if not s.strip():
            continue
        if "no packages found matching" in s:
            out.not_found.append(s.strip())
            continue
        if _DPKG_NOISE.match(s.strip()) or SHELL_PROMPT.match(s):
            continue
        m = _DPKG_ROW.match(s.strip())
        if not m:
            out.problems.append(line)
            continue
        name = m.group("name").split(":", 1)[0]
        out.packages.append(Package(name, m.group("version"), m.group("arch") or "", m.group("state").strip(), s.strip()))
    return out


_RPM_ARCH = r"(?:x86_64|noarch|aarch64|ppc64le|i686|i386|s390x|armv7hl|src)"
_RPM_ROW = lazy_re(rf"^(?P<nvr>[A-Za-z0-9_+.\-:~^]+)\.(?P<arch>{_RPM_ARCH})$")


def parse_rpm(text: str) -> PackageList:
    """``rpm -qa`` (NAME-[EPOCH:]VERSION-RELEASE.ARCH per line), also piped through grep/sort."""
    out = PackageList(manager="rpm")
    for line in text.splitlines():
        s = line.strip()
        if not s or SHELL_PROMPT.match(s):
            continue
        m = _RPM_ROW.match(s)
        if not m:
            out.problems.append(line)
            continue
        parts = m.group("nvr").rsplit("-", 2)
        if len(parts) != 3 or not parts[0] or not re.match(r"^(?:\d{1,9}:)?\d", parts[1]):
            out.problems.append(line)
            continue
        name, ver, rel = parts
        out.packages.append(Package(name, f"{ver}-{rel}", m.group("arch"), "installed", s))
    return out


# ------------------------------------------------------------------ dkms status


@dataclass(frozen=True)
class DkmsEntry:
    """One ``dkms status`` line: module, version, kernel (empty for ``added``), arch, state
    (``added``/``built``/``installed``/...) and the parenthesised notes (WARNING!...)."""

    module: str
    version: str
    kernel: str = ""
    arch: str = ""
    state: str = ""
    notes: list[str] = field(default_factory=list)
    line: str = ""


@dataclass(frozen=True)
class DkmsStatus:
    entries: list[DkmsEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "Error! ..." lines
    problems: list[str] = field(default_factory=list)

    def module(self, rx: str = r"nvidia(?:-current)?(?:-open)?|nvidia-srv|nvidia-tesla(?:-\d+)?(?:-open)?"
                               r"|nvidia-\d{3}(?:-updates)?") -> list[DkmsEntry]:
        """Entries of the NVIDIA GPU driver's DKMS module (``nvidia`` in NVIDIA's and Ubuntu's
        packages, ``nvidia-current``/``-open`` in Debian's, ``nvidia-331`` … ``nvidia-384`` in Ubuntu's older
        branch-named packages); other ``nvidia-*`` modules such as ``nvidia-fs`` (GPUDirect Storage) or
        ``nvidia-331-uvm`` are not the driver."""
        r = re.compile(rx)
        return [e for e in self.entries if r.fullmatch(e.module)]


_DKMS_NEW = lazy_re(r"^(?P<mod>[A-Za-z0-9_.+\-]+)/(?P<ver>[^,:\s]+)(?:,\s*(?P<kernel>[^,:\s]+)(?:,\s*(?P<arch>[^,:\s]+))?)?"
                       r"\s*:\s*(?P<rest>.*)$")
_DKMS_OLD = lazy_re(r"^(?P<mod>[A-Za-z0-9_.+\-]+),\s*(?P<ver>[^,:\s]+)(?:,\s*(?P<kernel>[^,:\s]+)(?:,\s*(?P<arch>[^,:\s]+))?)?"
                       r"\s*:\s*(?P<rest>.*)$")


DKMS_BUILD_FAILED = lazy_re(r"Error! Bad return status for module build on kernel: \S+|"
                               r"dkms autoinstall on \S+ failed for nvidia|Error! One or more modules failed to install")
"""DKMS saying a module did not build or install (``dkms install`` / ``autoinstall`` output)."""


def parse_dkms_status(text: str) -> DkmsStatus:
    """``dkms status`` (dkms 2.x comma form and 3.x slash form) -> entries; never raises."""
    out = DkmsStatus()
    for line in text.splitlines():
        s = line.strip()
        if not s or SHELL_PROMPT.match(s):
            continue
        if s.lower().startswith(("error!", "error:", "warning:", "deprecated feature")):
            out.errors.append(s)
            continue
        m = _DKMS_NEW.match(s) or _DKMS_OLD.match(s)
        if not m:
            out.problems.append(line)
            continue
        rest = m.group("rest")
        notes = re.findall(r"\(([^()]*)\)", rest)
        state = re.sub(r"\([^()]*\)", "", rest).strip().split(" ")[0] if rest.strip() else ""
        out.entries.append(DkmsEntry(m.group("mod"), m.group("ver"), m.group("kernel") or "", m.group("arch") or "",
                                     state, notes, s))
    return out


# ------------------------------------------------------------------ systemd units


@dataclass(frozen=True)
class Unit:
    """What is known about one systemd unit: load/active/sub/unit-file state, the ExecStart
    command line (``systemctl show``), evidence lines and log lines that followed (``status``)."""

    name: str
    load: str = ""  # loaded | not-found | masked | error
    active: str = ""  # active | inactive | failed | activating | deactivating
    sub: str = ""  # running | dead | exited | failed
    unit_file: str = ""  # enabled | disabled | static | masked | "" (unit absent)
    result: str = ""
    exec_start: str = ""
    lines: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def running(self) -> bool:
        return self.active == "active"

    @property
    def exists(self) -> bool:
        return self.load not in ("not-found", "")


@dataclass(frozen=True)
class Units:
    units: dict[str, Unit] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def get(self, name: str) -> Unit | None:
        """The unit by name, with or without ``.service``."""
        n = name if name.endswith(".service") else name + ".service"
        return self.units.get(n)


def _unit_name(s: str) -> str:
    s = s.strip()
    return s if "." in s else s + ".service"


def parse_systemctl_show(text: str, units: tuple[str, ...] = SERVICE_UNITS) -> Units:
    """``systemctl show -p Id,LoadState,... UNIT...``: blocks of ``Key=value`` lines separated by a
    blank line. A block without ``Id=`` takes the name of the unit at its position in ``units``."""
    out = Units()
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if not line.strip():
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(line)
    for i, block in enumerate(b for b in blocks if b):
        kv: dict[str, str] = {}
        for line in block:
            m = re.match(r"^([A-Za-z][A-Za-z0-9]*)=(.*)$", line.strip())
            if m:
                kv[m.group(1)] = m.group(2)
            else:
                out.problems.append(line)
        if not kv:
            continue
        name = kv.get("Id") or (units[i] if i < len(units) else f"unit-{i}")
        u = Unit(_unit_name(name), kv.get("LoadState", ""), kv.get("ActiveState", ""), kv.get("SubState", ""),
                 kv.get("UnitFileState", ""), kv.get("Result", ""), kv.get("ExecStart", ""), [ln.strip() for ln in block])
        out.units[u.name] = u
    return out


_STATUS_HEAD = lazy_re(r"^\s*(?:[●○×*↻]\s*)?(?P<unit>[A-Za-z0-9@_.\-]+\.(?:service|path|socket|timer|mount))"
                      r"(?:\s+-\s+(?P<desc>.*))?$")
"""The head line of ``systemctl status``: a service, or the path/socket/timer unit that triggers one
(nvidia-nvswitch-devices.path triggers nvidia-fabricmanager.service on RHEL AI: held-out round 334; systemd.unit(5))."""
_LOADED = lazy_re(r"^\s*Loaded:\s*(?P<load>[a-z\-]+)(?:\s*\((?P<inner>[^)]*)\))?")
_ACTIVE = lazy_re(r"^\s*Active:\s*(?P<active>[a-z\-]+)(?:\s*\((?P<sub>[^)]*)\))?")
_NOT_FOUND = lazy_re(r"Unit (?P<unit>[A-Za-z0-9@_.\-]+?)(?:\.service)? could not be found", re.I)


def parse_systemctl_status(text: str) -> Units:
    """``systemctl status UNIT`` (one or several units, with their journal tail): head line, Loaded:,
    Active:, Process:/Main PID: lines and the log lines below. ``Unit X could not be found.`` gives a
    not-found unit."""
    out = Units()
    cur: Unit | None = None
    for line in text.splitlines():
        s = line.rstrip()
        if not s.strip():
            continue
        m = _STATUS_HEAD.match(s)
        if m and not s.lstrip().startswith(("Loaded:", "Active:")) and " systemd[" not in s:
            cur = Unit(m.group("unit"))
            cur.lines.append(s.strip())
            out.units[cur.name] = cur
            continue
        m = _NOT_FOUND.search(s)
        if m:
            u = Unit(_unit_name(m.group("unit")), load="not-found", active="inactive", lines=[s.strip()])
            out.units[u.name] = u
            cur = None
            continue
        j = _JOURNAL_UNIT.search(s)
        if cur is None and j:
            # journal lines only (no status header): systemd's own lines name the unit and its failure
            name = _unit_name(j.group("unit"))
            u = out.units.setdefault(name, Unit(name, load="loaded"))
            u.log.append(s.strip())
            if _JOURNAL_FAIL.search(s):
                _set(u, "active", "failed")
                _set(u, "result", u.result or "exit-code")
            continue
        life = _JOURNAL_LIFE.search(s)
        if cur is None and life:  # systemd naming the unit by its Description: the state it went to
            name = _DESC_UNIT[life.group("desc").lower()]
            u = out.units.setdefault(name, Unit(name, load="loaded"))
            u.log.append(s.strip())
            _set(u, "active", {"started": "active", "stopped": "inactive", "failed to start": "failed"}.get(
                life.group("what").lower(), u.active))
            continue
        if cur is None and _PERSISTENCED_OWN.match(s.strip()):
            u = out.units.setdefault("nvidia-persistenced.service", Unit("nvidia-persistenced.service", load="loaded"))
            u.log.append(s.strip())
            if s.strip().startswith(("Started (", "Shutdown (")) and u.active != "failed":
                _set(u, "active", "active" if s.strip().startswith("Started") else "inactive")
            continue
        if cur is None:
            d = _JOURNAL_DAEMON.search(s)
            if d:
                name = _DAEMON_UNIT.get(d.group("daemon") or d.group("bare"), "")
                if name:
                    u = out.units.setdefault(name, Unit(name, load="loaded"))
                    u.log.append(s.strip())
                    own = _DAEMON_LIFE.search(s)
                    if own and u.active != "failed":  # nvidia-persistenced's own "Started (PID)" / "Shutdown (PID)"
                        _set(u, "active", "active" if own.group(1) == "Started" else "inactive")
            continue
        m = _LOADED.match(s)
        if m:
            _set(cur, "load", m.group("load"))
            inner = [x.strip() for x in (m.group("inner") or "").split(";")]
            if len(inner) >= 2 and re.fullmatch(r"[a-z\-]+", inner[1]):
                _set(cur, "unit_file", inner[1])
            cur.lines.append(s.strip())
            continue
        m = _ACTIVE.match(s)
        if m:
            _set(cur, "active", m.group("active"))
            sub = m.group("sub") or ""
            _set(cur, "sub", sub.split(":")[0].strip() if not sub.startswith("Result") else "")
            r = re.search(r"Result:\s*([a-z\-]+)", sub)
            if r:
                _set(cur, "result", r.group(1))
                _set(cur, "sub", "failed" if cur.active == "failed" else cur.sub)
            cur.lines.append(s.strip())
            continue
        if re.match(r"^\s*(Process|Main PID|Tasks|Memory|CPU|CGroup|Docs|Drop-In|TriggeredBy|Triggers|Until|Status):", s):
            if "ExecStart=" in s and not cur.exec_start:
                _set(cur, "exec_start", s.strip())
            cur.lines.append(s.strip())
            continue
        if re.match(r"^\s*[└├│]", s):
            if not cur.exec_start and "/" in s:
                _set(cur, "exec_start", s.strip())
            continue
        cur.log.append(s.strip())
    return out


_JOURNAL_UNIT = lazy_re(r"systemd\[\d+\]: (?P<unit>nvidia-(?:fabricmanager|persistenced|dcgm)\.service): ")
_JOURNAL_FAIL = lazy_re(r"Control process exited, code=exited, status=[1-9]|Failed with result|Main process exited, "
                           r"code=(?:exited|killed), status=[1-9]")
_JOURNAL_LIFE = lazy_re(r"systemd\[\d+\]: (?P<what>Started|Starting|Stopped|Stopping|Failed to start) "
                        r"(?P<desc>NVIDIA fabric manager service|NVIDIA Persistence Daemon|NVIDIA DCGM service)\b", re.I)
"""systemd's lifecycle lines name a unit by its Description= (the units' own: nvidia-fabricmanager.service "NVIDIA
fabric manager service", nvidia-persistenced.service "NVIDIA Persistence Daemon", nvidia-dcgm.service "NVIDIA DCGM
service"); "Started" is the unit reaching active (systemd(1))."""
_DESC_UNIT = {"nvidia fabric manager service": "nvidia-fabricmanager.service",
              "nvidia persistence daemon": "nvidia-persistenced.service", "nvidia dcgm service": "nvidia-dcgm.service"}
_JOURNAL_DAEMON = lazy_re(r"\s(?P<daemon>nv-fabricmanager|nvidia-fabricmanager-start\.sh|nvidia-persistenced|nv-hostengine)\[\d+\]:"
                          r"|^(?:[A-Z][a-z]{2} +\d{1,2} [\d:]{8}|\d{4}-\d\d-\d\dT\S+) \S+ (?P<bare>nvidia-persistenced):")
"""A line of one of the daemons in the journal ("nvidia-persistenced[3400]:"), or in a syslog file that tags it without
its PID ("Apr 26 20:40:08 host nvidia-persistenced: Started (3400)": held-out round 310)."""
_DAEMON_LIFE = lazy_re(r"nvidia-persistenced(?:\[\d+\])?: (Started|Shutdown) \(\d+\)$")
"""nvidia-persistenced's own syslog line when it has forked and runs, or stops (nvidia-persistenced.c: "Started (%d)",
"Shutdown (%d)"; syslog writes it without a PID tag on some systems: held-out round 310, Azure, 4 GPUs registered)."""
_PERSISTENCED_OWN = lazy_re(r"^(?:Verbose syslog connection opened|Started \(\S+\)|Shutdown \(\S+\)|"
                            r"device [0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] - (?:registered|persistence mode "
                            r"(?:enabled|disabled)\.?|NUMA memory onlined\.?)|Local RPC services initialized|"
                            r"PID file (?:locked|unlocked|closed)\.?)$")
"""nvidia-persistenced's own messages copied without the syslog prefix (held-out round 334: "Verbose syslog connection
opened", "Started (<pid>)", "device 0000:04:00.0 - registered", "... - persistence mode enabled."; the daemon's
nvidia-persistenced.c and its man page, --verbose)."""
_DAEMON_UNIT = {"nv-fabricmanager": "nvidia-fabricmanager.service", "nvidia-fabricmanager-start.sh": "nvidia-fabricmanager.service",
                "nvidia-persistenced": "nvidia-persistenced.service", "nv-hostengine": "nvidia-dcgm.service"}
"""journalctl / syslog lines of the three units when a paste has no ``systemctl status`` header."""


def parse_systemctl_words(text: str, units: tuple[str, ...], what: str) -> Units:
    """``systemctl is-active A B`` / ``is-enabled A B``: one word per line, in unit order. ``what`` is
    ``active`` or ``enabled``; an error line (unit file absent) marks that unit not-found."""
    out = Units()
    i = 0
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if i >= len(units):
            out.problems.append(line)
            continue
        u = Unit(_unit_name(units[i]), lines=[s])
        if re.search(r"No such file|not found|could not be found", s, re.I):
            _set(u, "load", "not-found")
        elif what == "active" and re.fullmatch(r"active|inactive|failed|activating|deactivating|reloading|unknown", s):
            _set(u, "active", s)
            _set(u, "load", "loaded")
        elif what == "enabled" and re.fullmatch(r"[a-z\-]+", s):
            _set(u, "unit_file", s)
            _set(u, "load", "loaded")
        else:
            out.problems.append(line)
            i += 1
            continue
        out.units[u.name] = u
        i += 1
    return out


FM_MISMATCH = lazy_re(r"fabric manager NVIDIA GPU driver interface version (?P<fm>\S+) (?:don'?t|doesn'?t|don’t) "
                         r"match with driver version (?P<drv>[0-9]+(?:\.[0-9]+)*)", re.I)
"""Fabric Manager's own refusal to start when its version differs from the driver (journal line)."""

FM_START_FAILURE = lazy_re(
    r"(?P<umad>Kernel module \W?ib_umad\W? has not been loaded|umad_init: can't read ABI version.*?is ib_umad module "
    r"loaded\??)|fabric manager config file item: (?P<item>\S+) has an invalid value|"
    r"(?P<other>fabric ?manager cannot be started)", re.I)
"""Fabric Manager (and, on NVLink 5 systems, the NVLink Subnet Manager NVLSM it starts) refusing to start, in its own
words: the ib_umad kernel module missing (FM's pre-start check on NVL5+ systems, or NVLSM's ``umad_init`` warning), a
configuration item with an invalid value, or its generic "fabric manager cannot be started". Seen in
spectrocloud/CanvOS#700 (HGX B200), siderolabs/docs#581 and siderolabs/extensions#511 (H200, Talos)."""

# ------------------------------------------------------------------ nv-fabricmanager --version


@dataclass(frozen=True)
class FmVersion:
    version: str = ""
    line: str = ""
    build_line: str = ""
    problems: list[str] = field(default_factory=list)


def parse_fm_version(text: str) -> FmVersion:
    """``nv-fabricmanager --version``: ``Fabric Manager version is : 580.95.05`` (+ ``Build Info``)."""
    out = FmVersion()
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        m = re.search(r"Fabric Manager version is\s*:\s*(\S+)", s, re.I)
        if m:
            _set(out, "line", s)
            v = m.group(1)
            _set(out, "version", v if re.fullmatch(r"\d{3}(?:\.\d{1,4}){1,3}", v) else "")
            continue
        if s.lower().startswith("build info"):
            _set(out, "build_line", s)
            continue
        out.problems.append(line)
    return out


# ------------------------------------------------------------------ modinfo nvidia


@dataclass(frozen=True)
class ModInfo:
    """``modinfo nvidia``: the module file the running kernel would load and its metadata."""

    filename: str = ""
    version: str = ""
    license: str = ""
    vermagic: str = ""
    signer: str = ""
    sig_id: str = ""
    not_found: str = ""  # modinfo's error line when no nvidia module exists for this kernel
    insert_error: str = ""  # modprobe/insmod could not load it: "modprobe: ERROR: could not insert 'nvidia': <reason>"
    lines: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def flavour(self) -> str:
        """``open`` (license Dual MIT/GPL), ``proprietary`` (license NVIDIA) or ""."""
        lic = self.license.strip().lower()
        if lic == "dual mit/gpl":
            return "open"
        if lic == "nvidia":
            return "proprietary"
        return ""

    @property
    def kernel(self) -> str:
        """Kernel release the module was built for: first word of ``vermagic``, else the
        ``/lib/modules/<release>/`` part of the file name."""
        if self.vermagic:
            return self.vermagic.split()[0]
        m = re.search(r"/lib/modules/([^/]+)/", self.filename)
        return m.group(1) if m else ""

    @property
    def signed(self) -> bool:
        return bool(self.sig_id or self.signer)


INSERT_ERROR = lazy_re(r"could not insert '?nvidia|Error inserting nvidia\b|could not insert module \S*nvidia|"
                           r"NVIDIA: failed to load the NVIDIA kernel module|Failed to insert module '?nvidia|"
                           r"Process '\S*modprobe nvidia[\w-]*' failed with exit code [1-9]|"
                           r"^\s*Kernel module load error:")
"""modprobe / insmod refusing to load the nvidia module (the reason follows the last colon; nvidia-installer's "Kernel
module load error: Operation not permitted"); systemd-modules-load's
"Failed to insert module 'nvidia_uvm': No such device" at boot too (held-out round 60), and udev's "Process
'/sbin/modprobe nvidia-uvm' failed with exit code 1" (held-out round 67: the module rule udev ran at boot)."""


def parse_modinfo(text: str) -> ModInfo:
    """``modinfo nvidia`` (or ``modinfo nvidia | head``); ``modinfo: ERROR: Module nvidia not found.``"""
    out = ModInfo()
    for line in text.splitlines():
        s = line.rstrip()
        if not s.strip() or SHELL_PROMPT.match(s):
            continue
        if re.search(r"modinfo: ERROR: Module \S+ not found|FATAL: Module \S+ not found", s):
            _set(out, "not_found", s.strip())
            continue
        if INSERT_ERROR.search(s):
            if not out.insert_error or "NVIDIA: failed to load" in out.insert_error:
                _set(out, "insert_error", s.strip())
            continue
        m = re.match(r"^\s*([a-z_]+):\s*(.*)$", s)
        if not m:
            out.problems.append(line)
            continue
        key, val = m.group(1), m.group(2).strip()
        out.lines.setdefault(key, s.strip())
        if key in ("filename", "version", "license", "vermagic", "signer", "sig_id") and not getattr(out, key):
            _set(out, key, val)
    return out


# ------------------------------------------------------------------ mokutil --sb-state


# ------------------------------------------------------------------ explain kinds

def detect_dkms(text: str) -> float:
    if "dkms" not in text and not re.search(r": ?(?:added|built|installed|broken)\b", text):  # cheap first
        return 0.0
    if typed(text, "dkms status") or DKMS_BUILD_FAILED.search(text):
        return 0.95
    d = parse_dkms_status(text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not d.entries:
        return 0.0
    ok = sum(1 for e in d.entries if re.fullmatch(r"added|built|installed|installed-weak|broken", e.state))
    if not d.module():
        return 0.3 * ok / len(lines)
    return min(0.9, 0.5 + 0.4 * ok / len(lines))


def detect_dpkg(text: str) -> float:
    p = parse_dpkg(text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not p.packages:
        return 0.0
    nv = [x for x in p.packages if re.search(r"nvidia|cuda|datacenter-gpu-manager", x.name)]
    if not nv:
        return 0.0
    head = 0.2 if re.search(r"^\|\|/ Name", text, re.M) or typed(text, "dpkg") else 0.0
    return min(0.92, 0.4 + 0.5 * len(p.packages) / len(lines) + head)


def detect_rpm(text: str) -> float:
    p = parse_rpm(text)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines or not p.packages:
        return 0.0
    nv = [x for x in p.packages if re.search(r"nvidia|cuda", x.name)]
    if not nv:
        return 0.0
    head = 0.2 if typed(text, "rpm -q") else 0.0
    return min(0.92, 0.3 + 0.6 * len(p.packages) / len(lines) + head)


_NV_UNITS = lazy_re(r"nvidia-(?:fabricmanager|persistenced|dcgm)\.service|nv-hostengine")


def detect_service(text: str) -> float:
    """0.95 for Fabric Manager refusing the driver's version or refusing to start (:data:`FM_START_FAILURE`); 0.93 for ``systemctl status`` (or the journal) of
    nvidia-fabricmanager / nvidia-persistenced / nvidia-dcgm; 0.9 for ``systemctl status`` of any other unit (its
    ``UNIT.service`` head line with ``Loaded:`` and ``Active:`` lines) or systemctl's "Unit X could not be found."; 0.6
    for one of the three named without a state; else 0."""
    nvidia = "nvidia-" in text or "nv-hostengine" in text or "abric" in text or "umad" in text
    if not nvidia and sum(1 for ln in text[:4000].splitlines() if _PERSISTENCED_OWN.match(ln.strip())) >= 3:
        nvidia = True  # nvidia-persistenced's own lines without their syslog prefix
    if not nvidia and ("Active:" not in text or ".service" not in text) and "could not be found" not in text:
        return 0.0  # cheap first: no NVIDIA unit named, no status lines
    if nvidia and (FM_MISMATCH.search(text) or FM_START_FAILURE.search(text)):
        return 0.95
    u = parse_systemctl_status(text)
    nv = [x for x in u.units.values() if _NV_UNITS.search(x.name)]
    if nv and any(x.load or x.active for x in nv):
        return 0.93
    if any((x.load and x.active) or x.load == "not-found" for x in u.units.values()):
        return 0.9
    if nv:
        return 0.6
    return 0.0


def detect_fm_version(text: str) -> float:
    return 0.95 if re.search(r"Fabric Manager version is\s*:", text, re.I) else 0.0


def detect_modinfo(text: str) -> float:
    if "nvidia" not in text:  # cheap first: every branch below needs the module's name
        return 0.0
    m = parse_modinfo(text)
    if m.not_found and re.search(r"Module nvidia", m.not_found):
        return 0.9
    if m.insert_error:
        return 0.93
    if re.search(r"/nvidia(?:_current)?\.ko", m.filename) or (m.license and re.search(r"nvidia", m.lines.get("firmware", "") + m.filename)):
        return 0.92
    return 0.0
