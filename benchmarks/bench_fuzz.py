"""Resource bounds on any input (issue 11): mutated real inputs and hostile shapes through the CLI.

Two phases, each input in a fresh process (what an operator or a scheduler hook pays):

* **shapes**: the hostile inputs issue 11 names, at full size: nested and wide XML, a 16 MiB line,
  random bytes, many short lines, 200 MiB on standard input, a bundle whose 300 entries name one big
  member, a 4 GiB member before the manifest, bad manifest types.
* **fuzz**: ``--count`` inputs (default 2,000) made from the real outputs in ``tests/data`` (and the capture
  bundle) by bit flips, byte overwrites, truncation, duplication of a slice, splicing two inputs, deep
  nesting, huge numbers and long lines (one to three of them per input, seeded: ``--seed``). Text goes to
  ``bringup explain --json``, bundles to ``bringup check --snapshot --json``.

Reported: exit-status counts, bringup's own errors (``internal error``, a judge that ``crashed``), the
largest RSS and the longest time (with the input), and the inputs over the caps.
Caps (issue 11, "resource bounds"): RSS <= 512 MiB; CPU time (user + system, so a busy machine does not count)
<= explain's own budget for what it judges (2 s + 3 s per MiB + 50 us per line, ``wizard.cli.explain_cpu_budget``;
explain reads at most 8 MiB and 200,000 lines) + 1.5 s for the process; a bundle 10 s + 3 s per MiB. Every child
also runs under
RLIMIT_AS = ``--as-gib`` (default 4) and RLIMIT_CPU = ``--cpu-limit`` (default 120 s), so a regression cannot take
the machine down.

Run: .venv/bin/python benchmarks/bench_fuzz.py [--count 2000] [--jobs 2] [--seed 11] [--keep DIR] [--no-shapes]
     .venv/bin/python benchmarks/bench_fuzz.py --patterns   (the regular expressions in wizard/ that are superlinear)
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import io
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.childproc import start_feeder  # noqa: E402  (one way to feed a child's stdin)
DATA = ROOT / "tests" / "data"
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
MiB = 1024 * 1024
RSS_CAP_MIB = 512
# explain's CPU budget for one input (wizard.cli.explain_cpu_budget): 2 s + 3 s per MiB + 50 us per line judged; the
# cap adds 1.5 s for the process itself (interpreter start, reading, printing). A bundle: 10 s + 3 s per MiB of file.
TIME_BASE_S, TIME_PER_MIB_S, TIME_PER_LINE_S, PROCESS_S = 2.0, 3.0, 50e-6, 1.5
JUDGED_MAX, JUDGED_LINES = 8 * MiB, 200_000  # wizard.cli.EXPLAIN_MAX_BYTES / _LINES (not imported: the CLI as a user runs it)


def bringup() -> list[str]:
    exe = Path(sys.executable).parent / "bringup"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "wizard.cli"]


@dataclass
class Case:
    name: str
    path: Path
    kind: str  # "text" | "bundle" | "stdin"
    size: int
    judged: tuple[float, int] | None = None


@dataclass
class Result:
    case: Case
    rc: int | str
    wall_s: float
    cpu_s: float  # the child's user + system time: what the input costs, whatever else the machine runs
    rss_mib: float
    own_error: str  # bringup's own failure: an internal error, a crashed judge, a traceback
    cut: bool = False
    stopped: bool = False
    binary: bool = False


def run_case(case: Case, state: Path, cpu_s: float, as_gib: float) -> Result:
    """Run one input in a fresh process, under RLIMIT_CPU = ``cpu_s`` and RLIMIT_AS = ``as_gib``; its wall time,
    CPU time and peak RSS (``os.wait4``'s rusage of that child). "timeout" = killed at the CPU limit."""
    judged(case)  # what explain will judge of it, for the cap (read before the input is removed)
    if case.kind == "bundle":
        argv = bringup() + ["--state", str(state), "check", "--snapshot", str(case.path), "--json"]
    elif case.kind == "stdin":
        argv = bringup() + ["explain", "--json", "-"]
    else:
        argv = bringup() + ["explain", "--json", str(case.path)]

    def limits() -> None:
        n = int(as_gib * 1024 ** 3)
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s), int(cpu_s) + 5))

    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE if case.kind == "stdin" else subprocess.DEVNULL, stdout=out,
                         stderr=err, preexec_fn=limits, cwd=ROOT)
    feeder = start_feeder(p, case.path) if case.kind == "stdin" else None
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    rc: int | str = "timeout" if p.returncode in (-24, -9) and ru.ru_utime + ru.ru_stime >= cpu_s - 1 else p.returncode
    if feeder is not None:
        feeder.join(5)
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    out.close()
    err.close()
    own = ""
    for text, marker in ((stderr, "internal error"), (stderr, "Traceback (most recent call last)"),
                         (stderr, "MemoryError"), (stdout, "This is a bringup bug")):
        if marker in text:
            i = text.index(marker)
            own = text[max(0, text.rfind("\n", 0, i) + 1): text.find("\n", i) if "\n" in text[i:] else None][:300]
            break
    return Result(case, rc, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, own, '"explain.input_cut"' in stdout,
                  '"explain.time_limit"' in stdout, '"explain.binary_input"' in stdout)


# ------------------------------------------------------------------ mutations of real inputs


def real_inputs() -> tuple[list[Path], list[Path]]:
    skip = {"PROVENANCE.md", "expected.csv", "README.md"}
    texts = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name not in skip and not p.name.endswith(".tar.gz")
                   and p.stat().st_size > 0 and "/bundles/" not in str(p))
    bundles = sorted(DATA.glob("bundles/*.tar.gz"))
    return texts, bundles


def _slice(rng: random.Random, data: bytes) -> tuple[int, int]:
    lines = [m.end() for m in re.finditer(rb"\n", data[:2 * MiB])]
    if len(lines) >= 2:
        a, b = sorted(rng.sample(lines, 2))
        return a, b
    a = rng.randrange(max(1, len(data)))
    return a, min(len(data), a + rng.randrange(1, 4096))


def mutate(rng: random.Random, data: bytes, others: list[bytes]) -> tuple[bytes, str]:
    """One to three mutations; returns the bytes and their names."""
    names = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.choice(("bitflip", "bytes", "truncate", "duplicate", "splice", "nest", "digits", "longline",
                         "duplicate_big"))
        if not data:
            data = rng.choice(others) or b"x\n"
        if op == "bitflip":
            b = bytearray(data)
            for _ in range(rng.randint(1, 64)):
                i = rng.randrange(len(b))
                b[i] ^= 1 << rng.randrange(8)
            data = bytes(b)
        elif op == "bytes":
            b = bytearray(data)
            for _ in range(rng.randint(1, 32)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            data = bytes(b)
        elif op == "truncate":
            data = data[:rng.randrange(len(data))]
        elif op == "duplicate":
            a, z = _slice(rng, data)
            data = data[:z] + data[a:z] * rng.randint(2, 200) + data[z:]
            data = data[:8 * MiB]
        elif op == "duplicate_big":  # past explain's 8 MiB: judged on a stated part
            a, z = _slice(rng, data)
            piece = data[a:z] or data
            data = data[:z] + piece * max(1, (20 * MiB) // max(1, len(piece))) + data[z:]
            data = data[:24 * MiB]
        elif op == "splice":
            other = rng.choice(others)
            i, j = rng.randrange(len(data) + 1), rng.randrange(len(other) + 1)
            data = data[:i] + other[j:j + rng.randrange(1, 64 * 1024)] + data[i:]
        elif op == "nest":
            depth = rng.choice((100, 1000, 20000, 100000))
            opener, closer = rng.choice(((b"<gpu>", b"</gpu>"), (b"[", b"]"), (b"{\"a\":", b"}"), (b"(", b")"),
                                         (b"<nvidia_smi_log>", b""), (b"  ", b"")))
            i = rng.randrange(len(data) + 1)
            data = data[:i] + opener * depth + (closer * depth if rng.random() < 0.5 else b"") + data[i:]
        elif op == "digits":
            digits = rng.choice((12, 30, 700, 5000))
            nums = list(re.finditer(rb"\d+", data[:2 * MiB]))
            if nums:
                for m in rng.sample(nums, min(len(nums), rng.randint(1, 5))):
                    data = data[:m.start()] + b"9" * digits + data[m.end():]
                    break  # offsets change after one replacement
        elif op == "longline":
            n = rng.choice((10_000, 1 * MiB, 4 * MiB))
            i = rng.randrange(len(data) + 1)
            data = data[:i] + (rng.choice((b"x", b"0", b"<a>", b"| ", b"GPU ")) * n) + data[i:]
        names.append(op)
    return data, "+".join(names)


def bundle_members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def write_bundle(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def mutate_bundle(rng: random.Random, members: dict[str, bytes], others: list[bytes]) -> tuple[bytes | dict, str]:
    """A mutated bundle: its compressed bytes flipped, a member's content mutated, or its manifest mutated
    (types, duplicated entries, entries renamed to another member)."""
    choice = rng.choice(("gz_bytes", "member", "member", "manifest_types", "manifest_dup", "manifest_text"))
    members = dict(members)
    if choice == "member":
        name = rng.choice([n for n in members if n != "manifest.json"])
        members[name], how = mutate(rng, members[name], others)
        return members, f"member {name}: {how}"
    if choice == "manifest_text":
        members["manifest.json"], how = mutate(rng, members["manifest.json"], others)
        return members, f"manifest text: {how}"
    m = json.loads(members["manifest.json"])
    if choice == "manifest_dup":
        ops = m["ops"]
        big = max((o for o in ops if o.get("stdout") or o.get("data")), key=lambda o: len(
            members.get(o.get("stdout") or o.get("data"), b"")))
        ref = big.get("stdout") or big.get("data")
        for o in ops:
            for k in ("stdout", "data"):
                if o.get(k):
                    o[k] = ref
        members[ref] = (members[ref] or b"x\n") * max(1, (8 * MiB) // max(1, len(members[ref])))
        members["manifest.json"] = json.dumps(m).encode()
        return members, "every entry names the largest member, grown to 8 MiB"
    if choice == "manifest_types":
        bad = rng.choice((True, [], {}, "x", 1e308, None, [["deep"]], -1))
        where = rng.choice(("schema", "host", "plan", "ops", "probes", "op"))
        if where == "op" and m["ops"]:
            o = rng.choice(m["ops"])
            o[rng.choice(list(o))] = bad
        else:
            m[where] = bad
        members["manifest.json"] = json.dumps(m).encode()
        return members, f"manifest {where} = {json.dumps(bad)}"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    b = bytearray(buf.getvalue())
    for _ in range(rng.randint(1, 16)):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b), "compressed bytes flipped"


# ------------------------------------------------------------------ hostile shapes


def shapes(work: Path) -> list[Case]:
    out: list[Case] = []

    def text(name: str, data: bytes, kind: str = "text") -> None:
        p = work / name
        p.write_bytes(data)
        out.append(Case(name, p, kind, len(data)))

    hdr = b'<?xml version="1.0" ?>\n<nvidia_smi_log>\n'
    text("nested-xml-210k.xml", hdr + b"<gpu>\n" * 35000)
    text("wide-xml-160k.xml", hdr + b"<a>1</a>" * 20000 + b"\n</nvidia_smi_log>\n")
    text("wide-xml-16m.xml", hdr + b"<a/>" * (4 * MiB - 20) + b"\n</nvidia_smi_log>\n")
    text("long-line-16m.txt", b"x" * (16 * MiB - 1) + b"\n")
    text("random-5m.bin", random.Random(5).randbytes(5 * MiB))
    text("short-lines-16m.txt", b"ab\n" * (16 * MiB // 3))
    text("query-gpu-csv-500k-rows.csv", b"index, pstate, temperature.gpu\n" + b"0, P8, 25\n" * 500_000)
    text("digits-5000.txt", (DATA / "cases").joinpath(
        "dcgmi-diag__r2-gpu0-memory-fail-thermal-violation-partial.txt").read_bytes().replace(b"GPU: 0", b"GPU: " + b"9" * 5000, 1))
    kernel = next(iter(sorted(DATA.glob("public/kernel-log__*"), key=lambda p: -p.stat().st_size)))
    k = kernel.read_bytes()
    p = work / "stdin-200m.txt"
    with open(p, "wb") as f:
        for _ in range(200 * MiB // len(k) + 1):
            f.write(k)
    out.append(Case("stdin-200m.txt (through a pipe)", p, "stdin", p.stat().st_size))
    lspci = next(iter(sorted(DATA.glob("platform/public/lspci-vvv__*"), key=lambda p: -p.stat().st_size))).read_bytes()
    text("lspci-dup-16m.txt", (lspci * (16 * MiB // len(lspci)))[:16 * MiB])
    # bundles
    ops = [{"kind": "command", "argv": ["cmd", str(i)], "rc": 0, "error": "", "duration_s": 0, "stdout": "ops/big"}
           for i in range(300)]
    bp = work / "bomb-300-entries-one-60m-member.tar.gz"
    write_bundle(bp, {"manifest.json": json.dumps({"schema": 1, "ops": ops}).encode(), "ops/big": bytes(60 * MiB)})
    out.append(Case(bp.name, bp, "bundle", bp.stat().st_size))
    devvm = bundle_members(DATA / "bundles" / "devvm.tar.gz")
    m = json.loads(devvm["manifest.json"])
    ref = max((n for n in devvm if n != "manifest.json"), key=lambda n: len(devvm[n]))
    for o in m["ops"]:
        for key in ("stdout", "data"):
            if o.get(key):
                o[key] = ref
    devvm2 = dict(devvm, **{"manifest.json": json.dumps(m).encode(), ref: (devvm[ref] * (30 * MiB // len(devvm[ref])))})
    bp = work / "devvm-every-entry-names-one-30m-member.tar.gz"
    write_bundle(bp, devvm2)
    out.append(Case(bp.name, bp, "bundle", bp.stat().st_size))
    bp = work / "huge-4g-member-first.tar.gz"
    with tarfile.open(bp, "w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("ops/huge")
        info.size = 4 * 1024 ** 3

        class Zeros(io.RawIOBase):
            left = info.size

            def readable(self) -> bool:
                return True

            def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tar.addfile(info, io.BufferedReader(Zeros(), MiB))
        data = json.dumps({"schema": 1, "ops": []}).encode()
        mi = tarfile.TarInfo("manifest.json")
        mi.size = len(data)
        tar.addfile(mi, io.BytesIO(data))
    out.append(Case(bp.name, bp, "bundle", bp.stat().st_size))
    for name, manifest in (("nested", '{"schema": 1, "ops": ' + "[" * 100000 + "]" * 100000 + "}"),
                           ("schema-true", json.dumps({"schema": True, "ops": []})),
                           ("list-for-path", json.dumps({"schema": 1, "ops": [{"kind": "file", "path": ["/x"]}]}))):
        bp = work / f"manifest-{name}.tar.gz"
        write_bundle(bp, {"manifest.json": manifest.encode()})
        out.append(Case(bp.name, bp, "bundle", bp.stat().st_size))
    return out


def judged(c: Case) -> tuple[float, int]:
    """(MiB, lines) of ``c`` that explain judges: the first 8 MiB to a line end, at most 200,000 lines."""
    if c.kind == "bundle":
        return c.size / MiB, 0
    if c.judged is None:
        with open(c.path, "rb") as f:
            head = f.read(JUDGED_MAX + 1)
        if len(head) > JUDGED_MAX:
            nl = head.rfind(b"\n", 0, JUDGED_MAX)
            head = head[:nl + 1 if nl >= 0 else JUDGED_MAX]
        ends = [m.end() for m in re.finditer(rb"\r\n|\r|\n", head)]
        if len(ends) > JUDGED_LINES:
            head = head[:ends[JUDGED_LINES - 1]]
        c.judged = (len(head) / MiB, min(len(ends), JUDGED_LINES) + (not head.endswith((b"\n", b"\r")) and head != b""))
    return c.judged


def judged_mib(c: Case) -> float:
    return judged(c)[0]


def cpu_cap(c: Case) -> float:
    mib, lines = judged(c)
    if c.kind == "bundle":
        return 10.0 + TIME_PER_MIB_S * mib
    return TIME_BASE_S + TIME_PER_MIB_S * mib + TIME_PER_LINE_S * lines + PROCESS_S


def over_caps(r: Result) -> list[str]:
    why = []
    if r.rss_mib > RSS_CAP_MIB:
        why.append(f"RSS {r.rss_mib:.0f} MiB > {RSS_CAP_MIB}")
    cap = cpu_cap(r.case)
    if r.cpu_s > cap:
        why.append(f"CPU {r.cpu_s:.1f} s > {cap:.1f} s")
    if r.own_error:
        why.append(f"bringup's own error: {r.own_error}")
    if r.rc not in (0, 1, 2, 3):
        why.append(f"exit status {r.rc}")
    return why


def report(title: str, results: list[Result]) -> int:
    print(f"\n== {title}: {len(results)} inputs")
    codes = collections.Counter(str(r.rc) for r in results)
    print("exit status: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())))
    own = [r for r in results if r.own_error]
    print(f"bringup's own errors (internal error, crashed judge, traceback): {len(own)}")
    top = max(results, key=lambda r: r.rss_mib)
    slow = max(results, key=lambda r: r.cpu_s)
    wall = max(results, key=lambda r: r.wall_s)
    rate = max(results, key=lambda r: r.cpu_s / max(judged_mib(r.case), 0.25))
    print(f"max RSS {top.rss_mib:.0f} MiB ({top.case.name}, {top.case.size / MiB:.1f} MiB)")
    print(f"max CPU time {slow.cpu_s:.2f} s ({slow.case.name}, {slow.case.size / MiB:.1f} MiB); "
          f"max wall time {wall.wall_s:.2f} s ({wall.case.name})")
    print(f"max CPU time per MiB judged (inputs under 0.25 MiB count as 0.25) "
          f"{rate.cpu_s / max(judged_mib(rate.case), 0.25):.2f} s ({rate.case.name})")
    bad = [(r, over_caps(r)) for r in results if over_caps(r)]
    print(f"over the caps (RSS <= {RSS_CAP_MIB} MiB; CPU <= {TIME_BASE_S:g} s + {TIME_PER_MIB_S:g} s per MiB + "
          f"{TIME_PER_LINE_S * 1e6:g} us per line judged + {PROCESS_S:g} s; a bundle 10 s + 3 s per MiB): {len(bad)}")
    stopped = sum(1 for r in results if r.stopped)
    cut = sum(1 for r in results if r.cut)
    print(f"judged on a stated part (explain.input_cut): {cut}; stopped at the CPU budget (explain.time_limit): "
          f"{stopped}; binary (explain.binary_input): {sum(1 for r in results if r.binary)}")
    for r, why in bad[:30]:
        print(f"  {r.case.name} ({r.case.size / MiB:.2f} MiB): {'; '.join(why)}")
    return len(bad)


def pattern_scan(n: int = 20_000, slow_s: float = 0.05) -> int:
    """``--patterns``: every regular expression literal in wizard/ (``re.compile``/``search``/``match``/...: their
    first argument, when it is a literal), searched in a line of ``n`` copies of one character (and of blank lines):
    those slower than ``slow_s`` are superlinear (quadratic: a 1 MiB line costs 2,500 times the 20,000-character one).
    A pattern used only with ``match``/``fullmatch`` tries one position and is not at risk, though it is listed.
    explain stops any input at its CPU budget; this lists what to make linear."""
    import ast
    import signal

    class Slow(Exception):
        pass

    def alarm(*_: object) -> None:
        raise Slow()

    def const(node: ast.AST) -> object:
        try:
            return eval(compile(ast.Expression(node), "f", "eval"), {"re": re})  # noqa: S307 - our own literals
        except Exception:  # noqa: BLE001
            return None

    pats: dict[tuple[str, int], str] = {}
    for path in sorted((ROOT / "wizard").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "re" and node.args):
                pat = const(node.args[0])
                if not isinstance(pat, str):
                    continue
                flag_node = next((k.value for k in node.keywords if k.arg == "flags"), None)
                if flag_node is None and len(node.args) >= (2 if node.func.attr == "compile" else 3):
                    flag_node = node.args[1 if node.func.attr == "compile" else 2]
                flags = const(flag_node) if flag_node is not None else 0
                pats.setdefault((pat, flags if isinstance(flags, int) else 0),
                                f"{path.relative_to(ROOT)}:{node.lineno}")
    signal.signal(signal.SIGALRM, alarm)
    runs = [" ", "a", "9", "(", "/", ".", ":", "-", "x ", "a.", "9 ", "\t", "[", "<", "=", ",", "|", "_", "#", "0x",
            "a:", "a/", "1.", "GPU ", "*", "'", '"', "\n", " \n", "a\n"]
    slow = []
    for (pat, flags), where in pats.items():
        try:
            rx = re.compile(pat, flags)
        except re.error:
            continue
        worst = (0.0, "")
        for c in runs:
            line = (c * (n // len(c) + 1))[:n]
            signal.setitimer(signal.ITIMER_REAL, 2.0)
            t0 = time.perf_counter()
            try:
                rx.findall(line)
                dt = time.perf_counter() - t0
            except Slow:
                dt = float("inf")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            worst = max(worst, (dt, c))
        if worst[0] > slow_s:
            slow.append((worst[0], where, worst[1], pat))
    print(f"\n== patterns: {len(pats)} literals in wizard/; slower than {slow_s * 1000:.0f} ms on a {n:,}-character run: "
          f"{len(slow)}")
    for dt, where, c, pat in sorted(slow, reverse=True):
        print(f"  {'> 2' if dt == float('inf') else f'{dt:.2f}'} s  {where:<34} run of {c!r:<7} {pat[:90]!r}")
    return len(slow)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--cpu-limit", type=float, default=120.0, help="CPU seconds per input before it is killed")
    ap.add_argument("--as-gib", type=float, default=4.0)
    ap.add_argument("--keep", type=Path, help="keep the inputs over a cap in this directory")
    ap.add_argument("--no-shapes", action="store_true")
    ap.add_argument("--patterns", action="store_true", help="only list the regular expressions that are superlinear")
    ap.add_argument("--bundle-share", type=float, default=0.1, help="share of fuzz inputs made from bundles")
    a = ap.parse_args()
    if a.patterns:
        return 1 if pattern_scan() else 0
    work = Path(tempfile.mkdtemp(prefix="bringup-fuzz-"))
    state = work / "state"
    state.mkdir()
    os.environ["BRINGUP_STATE_DIR"] = str(state)
    os.environ["XDG_STATE_HOME"] = str(work / "xdg")
    subprocess.run(bringup() + ["--version"], stdout=subprocess.DEVNULL, check=False)  # bytecode
    bad = 0
    try:
        if not a.no_shapes:
            cases = shapes(work)
            results = [run_case(c, state, a.cpu_limit, a.as_gib) for c in cases]  # one at a time: clean figures
            print("\n== hostile shapes (one at a time)")
            for r in results:
                print(f"  {r.case.name:<50} {r.case.size / MiB:>9.2f} MiB  rc {str(r.rc):<7} wall {r.wall_s:6.2f} s "
                      f"CPU {r.cpu_s:6.2f} s {r.rss_mib:6.0f} MiB" + (f"  !! {'; '.join(over_caps(r))}" if over_caps(r) else ""))
            bad += report("hostile shapes", results)
            for c in cases:
                c.path.unlink(missing_ok=True)
        rng = random.Random(a.seed)
        texts, bundles = real_inputs()
        blobs = [p.read_bytes() for p in texts]
        members = [bundle_members(b) for b in bundles]
        fuzz: list[Case] = []
        for i in range(a.count):
            if members and rng.random() < a.bundle_share:
                j = rng.randrange(len(members))
                data, how = mutate_bundle(rng, members[j], blobs)
                p = work / f"f{i:05d}.tar.gz"
                if isinstance(data, dict):
                    write_bundle(p, data)
                else:
                    p.write_bytes(data)
                fuzz.append(Case(f"#{i} {bundles[j].name} [{how}]", p, "bundle", p.stat().st_size))
            else:
                j = rng.randrange(len(blobs))
                data, how = mutate(rng, blobs[j], blobs)
                p = work / f"f{i:05d}{texts[j].suffix}"
                p.write_bytes(data)
                fuzz.append(Case(f"#{i} {texts[j].relative_to(DATA)} [{how}]", p, "text", len(data)))
        t0 = time.perf_counter()
        results = []
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for n, r in enumerate(ex.map(lambda c: run_case(c, state, a.cpu_limit, a.as_gib), fuzz), 1):
                results.append(r)
                if a.keep and over_caps(r):
                    a.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(r.case.path, a.keep / r.case.path.name)
                    (a.keep / (r.case.path.name + ".why")).write_text(r.case.name + "\n" + "\n".join(over_caps(r)))
                r.case.path.unlink(missing_ok=True)
                if n % 200 == 0:
                    print(f"  {n}/{len(fuzz)} inputs, {time.perf_counter() - t0:.0f} s", flush=True)
        bad += report(f"fuzz (seed {a.seed}, {a.jobs} at a time)", results)
        sizes = sorted(r.case.size for r in results)
        print(f"input sizes: median {sizes[len(sizes) // 2] / 1024:.0f} KiB, max {sizes[-1] / MiB:.1f} MiB; "
              f"wall {time.perf_counter() - t0:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
