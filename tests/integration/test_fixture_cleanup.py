"""A test run stopped by a signal leaves no broker behind.

A small test that holds the session broker fixture (``cluster_a``) runs in its own pytest process with
this suite's conftest; once it holds the broker, the process is stopped with SIGTERM, SIGINT, SIGHUP
or SIGKILL. For the first three the fixtures must be torn down as on Ctrl-C (pytest reports an
interrupted run, exit code 2); for SIGKILL nothing runs in the process any more and the broker must
die with it (the parent-death signal). Either way, every process it started must be gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.support.mm2_process import ROOT
from tests.support.kafka import wait_until
from tests.support.processes import descendants, survivors

pytestmark = pytest.mark.integration

HOLDING_TEST = '''
import os
import time
from pathlib import Path


def test_hold_the_broker(cluster_a):
    Path(os.environ["HOLD_READY"]).write_text(cluster_a.bootstrap)
    while True:  # held until the outer test signals this process (that is what is under test)
        time.sleep(0.2)
'''


def _default_stop_signals() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL],
                         ids=lambda s: s.name)
def test_signalled_test_run_stops_its_brokers(tmp_path: Path, signum: signal.Signals) -> None:
    (tmp_path / "test_hold.py").write_text(HOLDING_TEST)
    ready = tmp_path / "ready"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MIRROR_TEST_BOOTSTRAP_", "PYTEST_XDIST"))}
    env.update(PYTHONPATH=str(ROOT), HOLD_READY=str(ready))
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_hold.py")],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # An ignored signal stays ignored across exec: under `nohup` (SIGHUP ignored) the inner run would
        # ignore the SIGHUP sent below, as nohup intends, and hold for ever. Start it with the default
        # dispositions a test run started from a shell has.
        preexec_fn=_default_stop_signals)
    try:
        wait_until(lambda: ready.exists() or inner.poll() is not None, 60, "the inner test to hold a broker")
        assert inner.poll() is None, inner.communicate()[0]
        children = descendants(inner.pid)
        assert [c for c in children if " broker --cluster-id cluster-a " in c.command], children
        inner.send_signal(signum)
        output = inner.communicate(timeout=30)[0]
        if signum != signal.SIGKILL:
            assert inner.returncode == pytest.ExitCode.INTERRUPTED, output
            assert "KeyboardInterrupt" in output, output
        wait_until(lambda: not survivors(children), 15, f"every process of the test run to exit after {signum.name}")
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait(10)
