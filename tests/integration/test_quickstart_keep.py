"""``mirror quickstart --keep`` as a new user runs it: the printed URLs answer, and a stop leaves nothing behind.

Each test runs the real command (two embedded brokers, the real driver), reads the "where to look" block
it prints, fetches every URL in it, then stops it the way a user or a supervisor would: SIGTERM,
SIGINT (Ctrl-C), SIGHUP (the terminal closed) or SIGKILL (nothing runs in the quickstart any more:
the kernel's parent-death signal must stop its children). The processes below the quickstart are read
from /proc before the stop, and every one of them must be gone afterwards.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.support.mm2_process import ROOT
from tests.support.kafka import wait_until
from tests.support.processes import Proc, descendants, survivors

pytestmark = [pytest.mark.integration, pytest.mark.slow]

_URL = re.compile(r"(?:status page|REST API|metrics)\s+(http://\S+)|curl -s '?(http://[^'\s]+)'?")


class Quickstart:
    """The running command, its stdout read line by line on a thread (so a read can time out)."""

    def __init__(self, workdir: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mirror.cli", "quickstart", "--keep", "--records", "200", "--timeout", "90",
             "--workdir", str(workdir)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def read_until(self, pattern: str, timeout_s: float) -> str:
        """Lines up to the first matching ``pattern``; AssertionError with the output if it never comes."""
        regex = re.compile(pattern)
        try:
            while True:
                line = self.lines.get(timeout=timeout_s)
                if line is None:
                    raise AssertionError(f"quickstart exited ({self.proc.wait()}) before {pattern!r}")
                self.seen.append(line)
                if regex.search(line):
                    return line
        except queue.Empty:
            raise AssertionError(f"no line matching {pattern!r} within {timeout_s}s") from None
        except AssertionError as exc:
            exc.add_note("quickstart printed:\n" + "\n".join(self.seen))
            raise


@pytest.fixture
def quickstart(tmp_path: Path) -> Iterator[Quickstart]:
    running = Quickstart(tmp_path)
    children: list[Proc] = []
    try:
        yield running
    finally:
        if running.proc.poll() is None:  # a failed test: do not leave it (or its children) running
            children = descendants(running.proc.pid)
            running.proc.kill()
            running.proc.wait(10)
        for child in survivors(children):
            os.kill(child.pid, signal.SIGKILL)


def started(run: Quickstart) -> list[Proc]:
    """Wait for the live summary; fetch every printed URL; the processes the quickstart runs now."""
    run.read_until(r"Press Ctrl-C to stop", 150)
    run.read_until(r"records replicated \d+", 30)
    urls = [a or b for a, b in _URL.findall("\n".join(run.seen))]
    assert len(urls) == 5, run.seen  # status page, REST base, two curl examples, /metrics
    port = urls[0].split(":")[2].split("/")[0]
    assert port != "0" and all(f":{port}/" in url for url in urls), urls
    assert re.search(r"mirror status \S+mm2\.properties", "\n".join(run.seen)), run.seen
    assert re.search(r"mirror offsets translate --group billing --source A --target B \S+", "\n".join(run.seen))
    for url in urls:
        response = httpx.get(url, timeout=10)
        assert response.status_code == 200, (url, response.text[:300])
    assert "<html" in httpx.get(urls[0], timeout=10).text.lower()
    assert "mirror_source_record_count_total" in httpx.get(urls[-1], timeout=10).text
    children = descendants(run.proc.pid)
    brokers = [c for c in children if " broker --cluster-id cluster-" in c.command]
    drivers = [c for c in children if "mirror.cli.connect_mirror_maker" in c.command]
    assert len(brokers) == 2 and len(drivers) == 1, children
    return children


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_stop_signal_stops_everything(quickstart: Quickstart, signum: signal.Signals) -> None:
    children = started(quickstart)
    quickstart.proc.send_signal(signum)
    assert quickstart.proc.wait(60) == 0, quickstart.seen
    quickstart.read_until(r"Stopped connect-mirror-maker \(exit code 0\) and both clusters", 5)
    assert survivors(children) == [], f"left running after {signum.name}: {survivors(children)}"


def test_killed_quickstart_leaves_no_child(quickstart: Quickstart) -> None:
    """SIGKILL runs no handler: the kernel kills the brokers and the driver (their parent-death signal)."""
    children = started(quickstart)
    quickstart.proc.kill()
    quickstart.proc.wait(10)
    wait_until(lambda: not survivors(children), 20, "every child of the killed quickstart to exit")
