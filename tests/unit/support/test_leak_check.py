"""The per-test leak check (tests/support/leak_check.py) catches what it exists for.

No broker is needed: a client pointed at a closed loopback port still holds a librdkafka handle, its
threads and its descriptors until it is closed, which is exactly what a leak leaves.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from connect_runtime.clients.factory import new_admin, new_consumer, new_producer
from tests.support import leak_check

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "log_level": "0"}
ROOT = Path(__file__).resolve().parents[3]


def test_a_client_left_open_is_named_with_its_component() -> None:
    before = leak_check.sample()
    producer = new_producer(NOWHERE)
    found = leak_check.settled_leaks(before, settle_s=0.5)
    assert f"1 producer client(s) built by {__name__} still open" in found
    assert any(line.startswith("OS threads") for line in found)  # librdkafka's own threads
    producer.close()
    assert leak_check.settled_leaks(before) == []


def test_a_consumer_and_an_admin_count_until_closed_or_gone() -> None:
    before = leak_check.sample()
    consumer, admin = new_consumer({**NOWHERE, "group.id": "leak-check"}), new_admin(NOWHERE)
    found = leak_check.settled_leaks(before, settle_s=0.5)
    assert f"1 consumer client(s) built by {__name__} still open" in found
    assert f"1 admin client(s) built by {__name__} still open" in found
    consumer.close()
    del admin  # an AdminClient has no close: it is destroyed with its last reference
    assert leak_check.settled_leaks(before) == []


def test_a_thread_left_running_is_named_with_where_it_waits() -> None:
    before = leak_check.sample()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="forgotten-worker", daemon=True)
    thread.start()
    found = leak_check.settled_leaks(before, settle_s=0.3)
    assert any(line.startswith("thread 'forgotten-worker' still running, at") and "wait" in line for line in found)
    stop.set()
    thread.join()
    assert leak_check.settled_leaks(before) == []


def test_descriptors_beyond_the_tolerance_are_listed() -> None:
    before = leak_check.sample()
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(leak_check.FDS_TOLERANCE)]
    assert leak_check.settled_leaks(before, settle_s=0.1) == []  # within the tolerance
    opened.append(os.open(os.devnull, os.O_RDONLY))
    found = leak_check.settled_leaks(before, settle_s=0.1)
    assert any(line.startswith("file descriptors") and "/dev/null" in line for line in found)
    for fd in opened:
        os.close(fd)
    assert leak_check.settled_leaks(before) == []


def test_the_plugin_fails_an_integration_test_that_leaks_a_client(tmp_path: Path) -> None:
    """End to end, in a pytest run of its own: the autouse fixture turns a leaked client into a teardown
    error of that test, and leaves a test that closes its client, or that is not an integration test, alone."""
    (tmp_path / "test_leaky.py").write_text(LEAKY_TESTS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env.update(PYTHONPATH=str(ROOT), MIRROR_LEAK_SETTLE_S="1")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.leak_check", "-p", "no:cacheprovider", "-q", "-rE",
         "--rootdir", str(tmp_path), "-c", os.devnull, "-o", "markers=integration", str(tmp_path / "test_leaky.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1, run.stdout
    assert "3 passed, 1 error" in run.stdout, run.stdout
    assert "ERROR at teardown of test_leaks" in run.stdout, run.stdout
    assert "1 producer client(s) built by test_leaky still open" in run.stdout, run.stdout


LEAKY_TESTS = """
import pytest
from connect_runtime.clients.factory import new_producer

NOWHERE = {"bootstrap.servers": "127.0.0.1:9", "log_level": "0"}
kept = []

@pytest.mark.integration
def test_leaks():
    kept.append(new_producer(NOWHERE))

@pytest.mark.integration
def test_closes():
    new_producer(NOWHERE).close()

def test_unit_not_checked():
    kept.append(new_producer(NOWHERE))
"""
