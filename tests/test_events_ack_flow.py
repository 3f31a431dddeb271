"""The acknowledgement loop end to end: a real Xid log, its finding's key, acknowledged with a
reason in the build, and the next check no longer counts it (new events still would)."""

from __future__ import annotations

import steps
from tests.conftest import DATA, frozen_clock
from wizard.rules.kernel_log import kernel_log
from wizard.engine import Build
from wizard.model import Verdict
from wizard.probes import ProbeOutput


def test_acknowledged_xid_no_longer_counts(state_dir):
    text = (DATA / "cases" / "dmesg__xe9680-h100-xid119-gsp-timeout.txt").read_text()
    out = {"kernel_log_journal": ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=text, rc=0)}
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    first = kernel_log(out, b.expectations())
    bad = [f for f in first if f.verdict is Verdict.FAIL]
    assert bad and all(f.key for f in bad), [(f.id, f.key) for f in first]
    for f in bad:
        b.acknowledge(f, "GSP timeouts from the 2025-02 driver, fixed by the driver update")
    again = kernel_log(out, b.expectations())
    assert not [f for f in again if f.verdict is Verdict.FAIL]
    ignored = [f for f in again if f.id == "health.kernel_log_ignored"]
    assert ignored and "acknowledged" in ignored[0].message
    # a new event (a later Xid line) still counts
    newer = text + "\n[Sun Feb 23 17:00:00 2025] NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off the bus.\n"
    out["kernel_log_journal"] = ProbeOutput("kernel_log_journal", "$ journalctl -k -b", text=newer, rc=0)
    assert [f for f in kernel_log(out, b.expectations()) if f.verdict is Verdict.FAIL]
    b.close()
