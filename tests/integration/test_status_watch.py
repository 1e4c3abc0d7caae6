"""``mirror status --watch`` in a real pseudo-terminal (pexpect) against a running replication flow.

The driver replicates A->B; the command runs in a pty as a user would run it, must draw the flow's line
(its state, with a heartbeat age), redraw it with a newer check time, and stop cleanly on Ctrl-C. The
``--json`` form must print one parseable report per refresh on a pipe and stop cleanly on SIGTERM.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cluster
from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import create_topic, produce, unique

pexpect = pytest.importorskip("pexpect")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_ANSI = r"(?:\x1b\[[0-9;?]*[A-Za-z])*"  # rich's colours and cursor moves between the words


def test_watch_in_a_terminal_and_as_json_lines(cluster_a: Cluster, cluster_b: Cluster, tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    topic = create_topic(cluster_a.bootstrap, unique("watch"), partitions=2)
    produce(cluster_a.bootstrap, topic, 20)
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: cluster_b.bootstrap},
                                    f"{a}->{b}.enabled = true\n{a}->{b}.topics = {topic}\n"), encoding="utf-8")
    # A terminal 140 columns wide (rich believes COLUMNS over the pty's size, and pytest may set it).
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "140", "LINES": "30", "TERM": "xterm-256color"}
    command = ["-m", "mirror.cli", "status", str(props), "--watch", "--interval", "1", "--clusters", b]
    with MirrorMakerProcess(props, "--clusters", b):
        # -X faulthandler: a command that hangs is sent SIGABRT and prints every thread's stack (_stacks)
        term = pexpect.spawn(sys.executable, ["-X", "faulthandler", *command], cwd=str(ROOT), env=env,
                             encoding="utf-8", dimensions=(30, 140), timeout=120)
        try:
            # The flow's state with its heartbeat age. Under a loaded CI machine the flow may be degraded
            # (replication lag over its threshold) for a while: what is tested here is the terminal view,
            # the health rules have tests of their own (test_health_status.py).
            flow_line = rf"{re.escape(a)}->{re.escape(b)}\s*{_ANSI}\s*(?:healthy|degraded){_ANSI}\s+(\d+\.\d) s"
            term.expect(flow_line)  # replicated heartbeats on B: the flow runs
            term.expect(r"checked (\d\d:\d\d:\d\d)")
            first = term.match.group(1)
            # a newer report is drawn in place (rich moves the cursor up and redraws)
            while True:
                term.expect(r"checked (\d\d:\d\d:\d\d)", timeout=30)
                if term.match.group(1) != first:
                    break
            term.expect(flow_line, timeout=30)
            assert float(term.match.group(1)) < 30
            term.sendintr()
            try:
                term.expect(pexpect.EOF, timeout=30)
            except pexpect.TIMEOUT:
                pytest.fail(f"no exit within 30 s of Ctrl-C; its threads:\n{_stacks(term)}")
        finally:
            term.close(force=True)
        assert term.exitstatus == 0, (term.exitstatus, term.signalstatus, term.before)

        lines = subprocess.Popen([sys.executable, "-u", *command[:3], "--json", *command[3:]], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert lines.stdout is not None
            reports = [json.loads(lines.stdout.readline()) for _ in range(2)]
            lines.send_signal(signal.SIGTERM)
            assert lines.wait(30) == 0, lines.stderr.read() if lines.stderr else ""
        finally:
            if lines.poll() is None:
                lines.kill()
                lines.wait(10)
    assert reports[1]["checked_at"] > reports[0]["checked_at"]
    assert [f["flow"] for f in reports[1]["flows"]] == [f"{a}->{b}"]
    assert reports[1]["flows"][0]["heartbeat_age_seconds"] is not None


def _stacks(term: Any) -> str:
    """Every thread's Python stack of a hung command (faulthandler prints them on SIGABRT, even while a
    thread holds the GIL in C code), with what it printed last."""
    before = term.before or ""
    term.kill(signal.SIGABRT)
    try:
        term.expect(pexpect.EOF, timeout=10)
    except pexpect.TIMEOUT:
        pass
    return f"{before[-500:]}\n{term.before or ''}"
