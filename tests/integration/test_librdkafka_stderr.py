"""With a cluster down, librdkafka writes nothing to stderr: its lines go through Python logging, rate-limited.

librdkafka prints ``%3|<time>|FAIL|rdkafka#producer-1| ...`` straight to file descriptor 2 unless a client
has a log callback, so the check is on a subprocess's real stderr: first clients built by the factory
against a closed port, then the ``connect-mirror-maker`` process with its target cluster unreachable.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mirror.local.broker import free_port
from tests.conftest import Cluster
from tests.integration.support.mm2_process import ROOT, MirrorMakerProcess, aliases, mm2_properties
from tests.support.kafka import wait_until

pytestmark = pytest.mark.integration

RAW_LINE = re.compile(r"(?m)^%\d\|\d+\.\d+\|")

CLIENTS = textwrap.dedent("""
    import logging, sys, time
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(name)s %(levelname)s %(message)s")
    from connect_runtime.clients.factory import new_admin, new_consumer, new_producer
    bootstrap = sys.argv[1]
    producer = new_producer({"bootstrap.servers": bootstrap, "reconnect.backoff.max.ms": 100})
    consumer = new_consumer({"bootstrap.servers": bootstrap, "group.id": "g", "reconnect.backoff.max.ms": 100})
    admin = new_admin({"bootstrap.servers": bootstrap, "reconnect.backoff.max.ms": 100})
    consumer.subscribe(["t"])
    producer.produce("t", b"v")
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        producer.poll(0.1)
        consumer.poll(0.1)
    print("DONE", flush=True)
""")


def test_clients_against_a_closed_port_write_nothing_to_stderr() -> None:
    closed = f"127.0.0.1:{free_port()}"
    done = subprocess.run([sys.executable, "-c", CLIENTS, closed, "4"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "DONE" in done.stdout, done.stderr
    assert RAW_LINE.findall(done.stderr) == [], done.stderr[:2000]
    assert done.stderr == ""
    # the connection failures did reach Python logging, once per kind (three clients, one broker, ~4 s
    # of retries every 100 ms: hundreds of raw lines without the rate limit)
    failures = [line for line in done.stdout.splitlines() if line.startswith("librdkafka ERROR FAIL")]
    assert 1 <= len(failures) <= 6, done.stdout


@pytest.mark.slow
def test_connect_mirror_maker_with_its_target_down_writes_no_librdkafka_line(cluster_a: Cluster,
                                                                              tmp_path: Path) -> None:
    a, b = aliases("A", "B")
    down = f"127.0.0.1:{free_port()}"
    props = tmp_path / "mm2.properties"
    props.write_text(mm2_properties({a: cluster_a.bootstrap, b: down}, f"{a}->{b}.enabled = true\ntopics = none\n"))
    log = tmp_path / "mm2.log"  # stdout and stderr of the process (logging goes to stderr)
    with MirrorMakerProcess(props, log=log) as node:
        # the herders keep retrying the unreachable cluster; give librdkafka time to complain
        wait_until(lambda: node.log_text().count("retrying in") >= 2, 60, "two herder retries")
        started = time.monotonic()
        assert node.terminate(timeout_s=30) == 0
        stop_s = time.monotonic() - started
    text = log.read_text(errors="replace")
    assert RAW_LINE.findall(text) == [], text[-3000:]
    print(f"SIGTERM to exit with a cluster down: {stop_s:.1f}s")
