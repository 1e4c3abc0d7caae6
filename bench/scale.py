"""Scale as MM2 users run it: thousands of topics, topic churn, a thousand consumer groups, and cores.

Every mode runs on two fresh single-node Apache Kafka 4.4 clusters A and B (bench/kafka_brokers.py: the
brokers as Kafka's scripts start them) and, except ``gil``, one ``connect-mirror-maker`` node started the
way a user starts it, from an mm2.properties that keeps MM2's defaults (``A->B.enabled``, ``tasks.max``,
replication factors of 1 for the one-broker clusters, nothing else unless ``--set KEY=VALUE``):

``start``
    ``--topics`` topics x ``--partitions`` partitions on A, ``--records`` records in each partition,
    created and written before the node starts. Measured: how long A itself took to create those topics
    until ListOffsets answered for every partition, with no node running (the broker's floor for the same
    work on B, which the node's start cannot beat on the same machine); seconds from the node's start until
    the first remote topic, every remote topic, every partition flowing (a record of each on B) and every record on
    B; the node's peak memory (the kernel's high-water RSS, and RSS and PSS summed over the node's process
    tree, sampled every 0.5 s); the driver log's trouble (admin-step timeouts, "Consumer poll timeout",
    lost membership, warnings and errors). Then, once everything is on B: ``/metrics`` (bytes, lines,
    scrape seconds), ``/ui``, ``/ui/api/status``, the flow's REST API and ``mirror status`` answer times;
    then ``--steady`` seconds with no record flowing: the node's CPU by thread (the refresh work runs on
    the connectors' ``*-scheduler`` threads and the health monitor on ``mirror-health``), and after them
    ``mirror status`` again, at rest (the first answers come while the node is still busy from its start).
    ``--throttle RATE`` first sets B's ``controller_mutation_rate`` quota (partitions created per second,
    KIP-599) for every client, so B answers CreateTopics with THROTTLING_QUOTA_EXCEEDED beyond it.
``churn``
    ``start``, then for ``--minutes``: ``--rate`` topics a minute created on A (one record per partition)
    and as many of the first topics deleted, while ``--load`` records/s go to the other topics. Measured:
    per new topic, seconds from its creation until each of its partitions has its record on B (against
    ``refresh.topics.interval.seconds`` + 10 s); after the churn, the log lines about deleted topics per
    minute, whether their remote topics are still on B, and whether /metrics still exports their series.
``groups``
    ``start`` with a few topics, then ``--groups`` consumer groups on A, each with committed offsets on the
    partitions of one topic (AdminClient, no members). Measured: seconds from the refresh that found them
    (the driver's "Found N consumer groups" line) until every group has a checkpoint on B, against
    ``2 x emit.checkpoints.interval.seconds``; the node's CPU over that time (its average and its most over
    2 s) and at steady state (``--steady``, with the groups in place).
``scaling``
    For each N of ``--tasks``: one node with ``tasks.max = N`` (data path only: checkpoints and heartbeats
    off) copies ``--records`` records of 100 B from ``--partitions`` partitions; records/s, the node's CPU,
    and the ratio to N = 1. The goal is at least 0.8 x N on N free cores, which a machine of 2 cores with
    both brokers beside the copier cannot show. Where there are more::

        python bench/scale.py scaling --tasks 1,2,4,8 --runs 3 --record

    needs Java 17+ and Maven (the brokers are Apache Kafka 4.4, fetched on first use as the Kafka test tier
    fetches them) and about N + 2 idle cores for N tasks (the two broker JVMs run on the same machine); the
    runs are interleaved (1,2,4,8 then 8,4,2,1) and the recorded section states the cores and the load. The
    figure is the "ratio to tasks.max 1" column against "goal 0.8 x N". All N tasks run in the node's one
    process, so the ratio is also bounded by ``gil``'s Amdahl figure for N.
``gil``
    What share of a record's CPU holds the GIL on the bulk path. ``--tasks`` MirrorSourceTasks run in one
    process through the production WorkerSourceTask (connect_runtime.testing.harness) copying a backlog;
    per task: the task thread's CPU per record, of which the CPU spent inside the C span producer's
    GIL-released sections (``bulk_produce.released_cpu_ns()``: the thread CPU clock read around each
    released section, turned on in the child by ``bulk_produce.count_released_cpu()``; "not measured" with an
    extension without it), and the librdkafka threads' CPU. The GIL-held share
    ``s`` of the task thread's CPU bounds N tasks in one process: at most ``1 / (s + (1 - s) / N)`` times one
    task (Amdahl), never more than ``1 / s``.

Usage::

    python bench/scale.py start --topics 2000 [--partitions 4] [--records 10] [--tasks 4] [--steady 120]
                               [--throttle RATE] [--profile DIR] [--set KEY=VALUE ...]
    python bench/scale.py churn --topics 500 [--rate 100] [--minutes 3] [--refresh 10] [--load 200]
    python bench/scale.py groups --groups 1000 [--topics 50] [--refresh 10] [--emit 20]
    python bench/scale.py scaling --tasks 1,2,4,8 [--records 4000000] [--partitions 32]
    python bench/scale.py gil [--tasks 1] [--records 2000000] [--code DIR]

Each prints its tables; ``--record`` also records them in bench/results.md (a ``## `` section with the
recording rule's facts, as bench/run.py writes), ``--output FILE`` writes that section to FILE instead.
``--code DIR`` runs the node (or the gil child) on the packages in DIR (``common.python_child``); the recorded
commit is then DIR's when DIR is a git checkout (``git worktree add``), and a copy without git is named in a row of
its own as code of unknown commit (:func:`rule_facts`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # last, so that PYTHONPATH (--code DIR in a child) comes first
    sys.path.append(str(Path(__file__).resolve().parent.parent))

import httpx
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]
from confluent_kafka.cimpl import NewTopic

from bench import kafka_brokers, recording, thread_cpu
from bench.common import (
    BENCH_DIR,
    EndOffsets,
    admin,
    cpu_seconds,
    create_topic,
    machine_facts,
    preload,
    python_child,
    stop_child,
    unique,
    wait_for_records,
)
from mirror.local.broker import free_port

SOURCE, TARGET = "A", "B"
FLOW = f"{SOURCE}->{TARGET}"
#: Topics are created on A this many per CreateTopics request (the bench's own setup, not the node's).
CREATE_BATCH = 100
#: Kafka's own defaults for the broker's session with its controller, over the test tier's quick ones (4 s,
#: made for restart tests): under a start of thousands of partitions a one-node broker on a loaded machine
#: missed its 4 s session, was fenced by its own controller and left every partition without a leader.
BROKER_CONFIG = {"broker.session.timeout.ms": "9000", "broker.heartbeat.interval.ms": "2000"}
#: What the driver's log says when the trouble of issue 45's large start happens.
TROUBLE = {
    "admin step timed out": re.compile(r"timed out running"),
    "consumer poll timeout": re.compile(r"[Cc]onsumer poll timeout has expired"),
    "membership lost": re.compile(r"because its membership was lost|stopping all \d+ connector"),
    "event loop blocked": re.compile(r"blocked", re.IGNORECASE),
    # not the creation's summary line when it names none ("..., 0 still throttled by the target, ...")
    "throttled": re.compile(r"THROTTLING_QUOTA_EXCEEDED|(?<!\b0 still )throttl", re.IGNORECASE),
}
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- processes ---------------------------------------------------------------------------------------------
def process_tree(root: int) -> list[int]:
    """``root`` and its descendants (task processes, should a node run any)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
    tree, frontier = [root], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        tree += children
        frontier = children
    return tree


def _kb(path: Path, *fields: str) -> dict[str, int]:
    found: dict[str, int] = {}
    try:
        for line in path.read_text().splitlines():
            name = line.split(":", 1)[0]
            if name in fields:
                found[name] = int(line.split()[1])
    except OSError:
        pass
    return found


def memory_kb(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) summed over ``pids``, kB."""
    rss = pss = 0
    for pid in pids:
        rollup = _kb(Path(f"/proc/{pid}/smaps_rollup"), "Rss", "Pss")
        rss += rollup.get("Rss", 0)
        pss += rollup.get("Pss", 0)
    return rss, pss


def high_water_kb(pid: int) -> int:
    """The kernel's peak RSS of one process (VmHWM), kB."""
    return _kb(Path(f"/proc/{pid}/status"), "VmHWM").get("VmHWM", 0)


def tree_cpu_s(root: int) -> float:
    return sum(cpu_seconds(pid) for pid in process_tree(root))


class MemoryWatch(threading.Thread):
    """Samples the RSS and PSS of a process tree every ``interval_s``; keeps the peaks."""

    def __init__(self, root: int, interval_s: float = 0.5) -> None:
        super().__init__(name="memory-watch", daemon=True)
        self.root = root
        self.interval_s = interval_s
        self.peak_rss_kb = 0
        self.peak_pss_kb = 0
        self.high_water_kb = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        rss, pss = memory_kb(process_tree(self.root))
        self.peak_rss_kb = max(self.peak_rss_kb, rss)
        self.peak_pss_kb = max(self.peak_pss_kb, pss)
        self.high_water_kb = max(self.high_water_kb, high_water_kb(self.root))

    def stop(self) -> None:
        self.sample()
        self._stop_event.set()


# -- clusters ----------------------------------------------------------------------------------------------
def names(prefix: str, count: int, start: int = 0) -> list[str]:
    return [f"{prefix}-{i:05d}" for i in range(start, start + count)]


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """Create ``topics`` on a cluster, :data:`CREATE_BATCH` per request, and wait for their leaders."""
    client = admin(bootstrap)
    for i in range(0, len(topics), CREATE_BATCH):
        batch = [NewTopic(t, num_partitions=partitions, replication_factor=1) for t in topics[i:i + CREATE_BATCH]]
        for name, future in client.create_topics(batch, operation_timeout=60, request_timeout=60).items():
            try:
                future.result(timeout=120)
            except KafkaException as exc:
                raise SystemExit(f"could not create {name} on {bootstrap}: {exc}") from exc
    wait_for_leaders(client, topics, partitions)


def wait_for_leaders(client: AdminClient, topics: list[str], partitions: int, timeout_s: float = 120.0) -> None:
    """Until ListOffsets answers for every partition (Kafka answers NOT_LEADER until leaders are elected)."""
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    pending = {TopicPartition(t, p) for t in topics for p in range(partitions)}
    deadline = time.monotonic() + timeout_s
    while pending:
        client.list_topics(timeout=60)  # ListOffsets answers UNKNOWN_TOPIC for topics its metadata lacks
        result = client.list_offsets(dict.fromkeys(pending, latest), request_timeout=30)
        for tp, future in result.items():
            try:
                future.result(timeout=60)
                pending.discard(tp)
            except KafkaException:
                pass
        if pending:
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(pending)} partitions without a leader after {timeout_s:.0f}s")
            time.sleep(0.5)


def write_records(bootstrap: str, topics: list[str], partitions: int, records: int, value_bytes: int = 100) -> None:
    """``records`` records of ``value_bytes`` in every partition of ``topics``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all",
                         "queue.buffering.max.messages": 2_000_000})
    value = os.urandom(value_bytes)
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    for topic in topics:
        for partition in range(partitions):
            for _ in range(records):
                while True:
                    try:
                        producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
                        break
                    except BufferError:
                        producer.poll(0.05)
        producer.poll(0)
    if producer.flush(300) or failed:
        raise SystemExit(f"writing records failed: {failed[:3]}")


def set_mutation_quota(bootstrap: str, rate: float) -> None:
    """B's ``controller_mutation_rate`` quota for every client (KIP-599), through Kafka's own kafka-configs."""
    from tests.support.apache_kafka import java_command, write_log4j2

    log4j2 = write_log4j2(Path(tempfile.mkdtemp(prefix="scale-quota-")) / "log4j2.properties")
    command = java_command("org.apache.kafka.tools.ConfigCommand",
                           ["--bootstrap-server", bootstrap, "--alter", "--entity-type", "clients", "--entity-default",
                            "--add-config", f"controller_mutation_rate={rate}"], heap_mb=128, log4j2=log4j2)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise SystemExit(f"kafka-configs could not set the quota: {done.stdout}{done.stderr}")


class TargetView:
    """The remote topics of a set of source topics on B: which exist, which partitions have data, how much."""

    def __init__(self, bootstrap: str, remote_topics: list[str], records_per_partition: int = 1) -> None:
        self.admin = admin(bootstrap)
        self.wanted = set(remote_topics)
        #: a partition's end is read again until it holds this many records (a partition caught mid-copy
        #: would otherwise stay counted short, and "every record" would never be reached)
        self.complete_at = max(1, records_per_partition)
        self.ends: dict[tuple[str, int], int] = {}

    def poll(self, only: set[str] | None = None) -> tuple[int, int, int]:
        """(remote topics present, partitions with a record, records) among ``only`` (default: all wanted)."""
        wanted = self.wanted if only is None else only
        metadata = self.admin.list_topics(timeout=60)
        present = {name: topic for name, topic in metadata.topics.items() if name in wanted and topic.error is None}
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        unknown = {TopicPartition(name, p): latest for name, topic in present.items() for p in topic.partitions
                   if self.ends.get((name, p), 0) < self.complete_at}
        if unknown:
            for tp, future in self.admin.list_offsets(unknown, request_timeout=60).items():
                try:
                    self.ends[(tp.topic, tp.partition)] = max(0, future.result(timeout=90).offset)
                except KafkaException:
                    pass
        flowing = [(t, p) for (t, p), end in self.ends.items() if end > 0 and t in wanted]
        return len(present), len(flowing), sum(self.ends[tp] for tp in flowing)

    def refresh_ends(self, topics: set[str]) -> int:
        """Re-read the end offsets of ``topics`` (the records counted so far may have grown); their sum."""
        for key in [k for k in self.ends if k[0] in topics]:
            self.ends[key] = 0
        return self.poll(topics)[2]


# -- the node ----------------------------------------------------------------------------------------------
def mm2_properties(source: str, target: str, tasks: int, extra: dict[str, str]) -> dict[str, str]:
    """MM2's defaults, the flow A->B enabled, RF 1 (one-broker clusters), ``extra`` on top."""
    return {
        "clusters": f"{SOURCE}, {TARGET}", f"{SOURCE}.bootstrap.servers": source,
        f"{TARGET}.bootstrap.servers": target, f"{FLOW}.enabled": "true", "tasks.max": str(tasks),
        "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1", "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1", "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1", **extra,
    }


@dataclass
class Node:
    process: subprocess.Popen[bytes]
    log_path: Path
    config_path: Path
    url: str
    started_at: float
    started_wall: float

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def trouble(self) -> dict[str, int]:
        """Counts of :data:`TROUBLE`'s lines, and of WARNING and ERROR lines."""
        counts: Counter[str] = Counter()
        for line in self.log_text().splitlines():
            for name, pattern in TROUBLE.items():
                if pattern.search(line):
                    counts[name] += 1
            if " WARNING " in line or " WARN " in line:
                counts["warnings"] += 1
            if " ERROR " in line:
                counts["errors"] += 1
        return {name: counts.get(name, 0) for name in (*TROUBLE, "warnings", "errors")}

    def line_time(self, pattern: str, last: bool = False) -> float | None:
        """Wall-clock time of the first (or last) log line containing ``pattern``."""
        found = None
        for line in self.log_text().splitlines():
            if pattern in line:
                stamp = _LOG_TIME.match(line)
                if stamp:
                    found = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
                    if not last:
                        return found
        return found

    def stop(self) -> None:
        stop_child(self.process, 60)


def start_node(workdir: Path, props: dict[str, str], code: Path | None, memtrace: str | None = None,
               memtrace_at: str = "") -> Node:
    """``memtrace``: bench/memtrace's instruments in the node (its RSS, Python heap, malloc and native
    figures every second, tracemalloc snapshots at the process ages ``memtrace_at``) written to that
    directory; they cost the node CPU, so not with the figures of a recorded run."""
    path = workdir / "mm2.properties"
    path.write_text("".join(f"{k} = {v}\n" for k, v in props.items()))
    port = free_port()
    log_path = workdir / "node.log"
    saved = dict(os.environ)
    if memtrace:
        Path(memtrace).mkdir(parents=True, exist_ok=True)
        os.environ.update({"BENCH_TRACE_DIR": str(Path(memtrace).resolve()), "BENCH_TRACE_SNAPSHOTS": memtrace_at,
                           "PYTHONPATH": os.pathsep.join(filter(None, [str(BENCH_DIR / "memtrace"),
                                                                       os.environ.get("PYTHONPATH")]))})
    try:
        started_at, started_wall = time.monotonic(), time.time()
        process = python_child(["-m", "mirror.cli.connect_mirror_maker", str(path), "--rest-port", str(port)],
                               log_path, code)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Node(process, log_path, path, f"http://127.0.0.1:{port}", started_at, started_wall)


@contextmanager
def profiled(pid: int, out: Path | None, rate: int = 20, gil: bool = False) -> Iterator[None]:
    """``py-spy record`` of ``pid`` while the block runs (raw collapsed stacks in ``out``; nothing without it).

    ``gil``: only the samples of the thread holding the GIL (py-spy ``--gil``): where the one resource all
    Python threads of the node share goes. Without it every thread that is not idle is sampled, and a
    thread waiting inside librdkafka (a consume with a timeout) counts as busy."""
    if out is None:
        yield
        return
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                            "--threads", "--nonblocking", *(["--gil"] if gil else []), "-o", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(60)
        except subprocess.TimeoutExpired:
            spy.kill()
        if out.exists():
            top = subprocess.run([sys.executable, str(BENCH_DIR / "profile_top.py"), str(out), "--top", "30"],
                                 capture_output=True, text=True, check=False)
            out.with_suffix(".top.txt").write_text(top.stdout)
            log(f"profile {out} (summary in {out.with_suffix('.top.txt')})")


#: Added to the labels of the ``mirror status`` answers asked again after ``--steady``.
AT_REST = " at rest, after the steady state"
#: How long one answer may take before it counts as none (status 0, the seconds it waited).
HTTP_TIMEOUT_S = 180.0


def timed_get(url: str, timeout_s: float = HTTP_TIMEOUT_S) -> tuple[float, int, bytes]:
    """(seconds, status, body) of one GET; status 0 and no body when it failed or timed out."""
    began = time.monotonic()
    try:
        response = httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError:
        return time.monotonic() - began, 0, b""
    return time.monotonic() - began, response.status_code, response.content


def surface_answers(node: Node, code: Path | None, rounds: int = 3, profile: Path | None = None) -> dict[str, Any]:
    """/metrics, /ui, the status JSON, the flow's REST API and ``mirror status``: seconds (median of ``rounds``);
    ``profile``: see :func:`status_answers`."""
    prefix = f"{node.url}/{SOURCE}/{TARGET}"
    endpoints = {"/metrics": f"{node.url}/metrics", "/ui": f"{node.url}/ui",
                 "/ui/api/status": f"{node.url}/ui/api/status",
                 "REST /connectors?expand=status": f"{prefix}/connectors?expand=status",
                 "REST source connector status": f"{prefix}/connectors/MirrorSourceConnector/status",
                 "REST /health": f"{node.url}/health"}
    result: dict[str, Any] = {}
    metrics = ""
    for name, url in endpoints.items():
        samples = [timed_get(url) for _ in range(rounds)]
        result[name] = {"seconds": statistics.median(s[0] for s in samples), "max_seconds": max(s[0] for s in samples),
                        "status": samples[-1][1], "bytes": len(samples[-1][2])}
        if name == "/metrics":
            metrics = next((s[2] for s in samples if s[1] == 200), b"").decode(errors="replace")
        log(f"{name}: {json.dumps(result[name])}")
    series = [line for line in metrics.splitlines() if line and not line.startswith("#")]
    result["/metrics"]["lines"] = len(series)
    result["/metrics"]["partition series"] = sum(1 for line in series if 'partition="' in line)
    result.update(status_answers(node, code, rounds, profile=profile))
    env = status_env(code)
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", "import mirror.cli.main, mirror.health.probe"], check=False, env=env)
    result["(python start and imports of mirror status)"] = {"seconds": time.monotonic() - began, "status": 0,
                                                             "bytes": 0}
    return result


def status_env(code: Path | None) -> dict[str, str]:
    env = {**os.environ}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    return env


def status_answers(node: Node, code: Path | None, rounds: int = 3, when: str = "",
                   profile: Path | None = None) -> dict[str, Any]:
    """``mirror status --json`` with the default latency window and with none: seconds (median of ``rounds``), and
    the command's own CPU seconds (median): an answer much longer than its CPU waited, on the clusters or for a
    core. ``when`` is added to each label (the same command asked again once the node is at rest). ``profile``: a
    directory for one more answer of each, after the timed ones and not counted, under ``py-spy record``."""
    result: dict[str, Any] = {}
    for label, extra in (("mirror status (default latency window)", []),
                         ("mirror status --latency-window 0", ["--latency-window", "0"])):
        command = [sys.executable, "-m", "mirror.cli", "status", str(node.config_path), "--json", *extra]
        samples_s, cpu_s = [], []
        status, size = -1, 0  # -1: it did not answer within HTTP_TIMEOUT_S
        for _ in range(rounds):
            began, children = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=HTTP_TIMEOUT_S, check=False,
                                      env=status_env(code))
                status, size = done.returncode, len(done.stdout)
            except subprocess.TimeoutExpired:
                status, size = -1, 0
            samples_s.append(time.monotonic() - began)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu_s.append(after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
        log(f"{label}{when}: {samples_s[-1]:.1f}s ({cpu_s[-1]:.1f} CPU-s), exit {status}")
        if profile is not None:
            out = profile / f"status{'-window-0' if extra else ''}{when.replace(' ', '-').replace(',', '')}.txt"
            subprocess.run(["py-spy", "record", "--rate", "100", "--format", "raw", "--threads", "-o", str(out), "--",
                            *command], capture_output=True, timeout=HTTP_TIMEOUT_S, check=False, env=status_env(code))
            top = subprocess.run([sys.executable, str(BENCH_DIR / "profile_top.py"), str(out), "--top", "30"],
                                 capture_output=True, text=True, check=False)
            out.with_suffix(".top.txt").write_text(top.stdout)
            log(f"profile {out} (summary in {out.with_suffix('.top.txt')})")
        result[label + when] = {"seconds": statistics.median(samples_s), "max_seconds": max(samples_s),
                                "cpu_seconds": statistics.median(cpu_s), "status": status, "bytes": size}
    return result


def steady_cpu(node: Node, seconds: float) -> dict[str, Any]:
    """The node's CPU over ``seconds`` (cores), by thread (Python names from ``py-spy dump``)."""
    before_threads = thread_cpu.snapshot(node.pid)
    before = tree_cpu_s(node.pid)
    began = time.monotonic()
    time.sleep(seconds)
    spent = tree_cpu_s(node.pid) - before
    elapsed = time.monotonic() - began
    after_threads = thread_cpu.snapshot(node.pid)
    by_thread = thread_cpu.by_thread(before_threads, after_threads, thread_cpu.python_thread_names(node.pid), spent)
    return {"seconds": elapsed, "cpu_s": spent, "cores": spent / elapsed,
            "by_thread_cores": {k: v / elapsed for k, v in list(by_thread.items())[:12]}}


# -- start ------------------------------------------------------------------------------------------------
@dataclass
class StartResult:
    topics: int
    partitions: int
    records_per_partition: int
    milestones: dict[str, float | None] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)
    trouble: dict[str, int] = field(default_factory=dict)
    surface: dict[str, Any] = field(default_factory=dict)
    steady: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def run_start(args: argparse.Namespace, source: str, target: str, workdir: Path,
              extra_props: dict[str, str], after: Callable[[Node, TargetView, StartResult], None] | None = None
              ) -> StartResult:
    topics = names("scale", args.topics)
    log(f"creating {len(topics)} topics x {args.partitions} partitions on A, {args.records} records each")
    created = time.monotonic()
    create_topics(source, topics, args.partitions)
    floor_s = time.monotonic() - created
    log(f"A created them and answered ListOffsets for every partition in {floor_s:.1f}s")
    write_records(source, topics, args.partitions, args.records)
    if args.throttle:
        set_mutation_quota(target, args.throttle)
        log(f"B: controller_mutation_rate = {args.throttle} for every client")
    remote = [f"{SOURCE}.{t}" for t in topics]
    view = TargetView(target, remote, args.records)
    result = StartResult(len(topics), args.partitions, args.records)
    result.extra["the broker's floor: A's own creation of the same topics, no node running, until ListOffsets "
                 "answers for every partition (s)"] = round(floor_s, 1)
    expected_partitions = len(topics) * args.partitions
    expected_records = expected_partitions * args.records
    props = mm2_properties(source, target, args.tasks, {**extra_props, **dict(args.set)})
    node = start_node(workdir, props, args.code, args.memtrace, args.memtrace_at)
    watch = MemoryWatch(node.pid)
    watch.start()
    milestones: dict[str, float | None] = dict.fromkeys(
        ("first remote topic", "every remote topic", "first record", "every partition flowing", "every record"))
    profile_dir = Path(args.profile) if args.profile else None
    if profile_dir is not None:
        profile_dir.mkdir(parents=True, exist_ok=True)
    try:
        deadline = node.started_at + args.timeout
        with profiled(node.pid, profile_dir / f"start-{args.topics}.txt" if profile_dir else None,
                      gil=args.profile_gil):
            while time.monotonic() < deadline:
                if not node.alive():
                    raise SystemExit(f"the node exited with {node.process.returncode}:\n{node.log_text()[-3000:]}")
                present, flowing, records = view.poll()
                now = time.monotonic() - node.started_at
                for name, reached in (("first remote topic", present > 0),
                                      ("every remote topic", present == len(remote)),
                                      ("first record", records > 0),
                                      ("every partition flowing", flowing == expected_partitions),
                                      ("every record", records >= expected_records)):
                    if reached and milestones[name] is None:
                        milestones[name] = now
                        log(f"{now:6.1f}s {name} ({present} topics, {flowing} partitions, {records} records on B)")
                if milestones["every record"] is not None:
                    break
                time.sleep(1.0)
        result.milestones = milestones
        result.extra["on B at the end of the start"] = {"remote topics": present, "partitions flowing": flowing,
                                                        "records": records}
        watch.sample()
        result.memory = {"peak RSS (MiB)": watch.peak_rss_kb / 1024, "peak PSS (MiB)": watch.peak_pss_kb / 1024,
                         "high-water RSS (MiB)": watch.high_water_kb / 1024}
        result.trouble = node.trouble()
        log(f"memory {json.dumps(result.memory)}; log {json.dumps(result.trouble)}")
        if milestones["every record"] is None:
            log(f"not everything on B within {args.timeout:.0f}s; the log's last lines:\n{node.log_text()[-2000:]}")
        log("answer times of /metrics, /ui, REST and mirror status")
        result.surface = surface_answers(node, args.code, profile=profile_dir)
        if after is not None:
            after(node, view, result)
        if args.steady > 0:
            log(f"steady state: {args.settle:.0f}s to settle, then {args.steady:.0f}s measured")
            time.sleep(args.settle)
            with profiled(node.pid, profile_dir / f"steady-{args.topics}.txt" if profile_dir else None, rate=50,
                          gil=args.profile_gil):
                result.steady = steady_cpu(node, args.steady)
            # asked again at rest: the answers above come right after the start, while the node still works
            result.surface.update(status_answers(node, args.code, when=AT_REST, profile=profile_dir))
        watch.stop()
        result.memory.update({"peak RSS (MiB)": watch.peak_rss_kb / 1024, "peak PSS (MiB)": watch.peak_pss_kb / 1024,
                              "high-water RSS (MiB)": watch.high_water_kb / 1024})
        result.trouble = node.trouble()
    finally:
        watch.stop()
        node.stop()
        kept = workdir / "node.log"
        if args.keep_log:
            Path(args.keep_log).write_text(kept.read_text(errors="replace"))
    return result


def start_tables(result: StartResult, args: argparse.Namespace) -> str:
    throttle = f", B's controller_mutation_rate {args.throttle}" if args.throttle else ""
    lines = [f"{result.topics:,} topics x {result.partitions} partitions, {result.records_per_partition} records "
             f"each, tasks.max {args.tasks}{throttle}",
             "", "| from the node's start until | seconds |", "|---|---|"]
    lines += [f"| {name} | {'-' if value is None else f'{value:.1f}'} |" for name, value in result.milestones.items()]
    lines += ["", "| memory | MiB |", "|---|---|", *(f"| {k} | {v:.0f} |" for k, v in result.memory.items())]
    lines += ["", "| the driver's log | lines |", "|---|---|", *(f"| {k} | {v} |" for k, v in result.trouble.items())]
    if result.surface:
        lines += ["", "| answer | seconds (median of 3) | max | its own CPU seconds (median) | HTTP status / exit | "
                      "bytes |", "|---|---|---|---|---|---|"]
        for name, value in result.surface.items():
            cpu = f"{value['cpu_seconds']:.2f}" if "cpu_seconds" in value else "-"
            lines.append(f"| {name} | {value['seconds']:.2f} | {value.get('max_seconds', value['seconds']):.2f} | "
                         f"{cpu} | {value['status']} | {value['bytes']:,} |")
        metrics = result.surface.get("/metrics", {})
        if "lines" in metrics:
            lines += ["", f"/metrics: {metrics['lines']:,} series, {metrics['partition series']:,} of them with a "
                          "partition label"]
    if result.steady:
        steady = result.steady
        lines += ["", f"steady state, no record flowing: {steady['cores'] * 100:.2f}% of a core over "
                      f"{steady['seconds']:.0f} s", "", "| thread | % of a core |", "|---|---|"]
        lines += [f"| {name.replace('|', '/')} | {cores * 100:.2f} |"
                  for name, cores in steady["by_thread_cores"].items()]
    for name, value in result.extra.items():
        lines += ["", f"{name}: {json.dumps(value)}"]
    return "\n".join(lines)


# -- churn ------------------------------------------------------------------------------------------------
class Churn:
    """Creates and deletes topics on A at a steady rate under a light load, and watches the new ones on B."""

    def __init__(self, args: argparse.Namespace, source: str) -> None:
        self.args = args
        self.live = names("scale", args.topics)
        self.producer = Producer({"bootstrap.servers": source, "linger.ms": 20})
        self.client = admin(source)
        self.created: dict[str, float] = {}
        self.arrived: dict[str, float] = {}
        self.deleted: list[str] = []
        self.sent = 0

    def change(self) -> None:
        """One new topic (a record in each partition) and, while half the first ones remain, one deleted."""
        name = f"churn-{len(self.created):05d}"
        partitions = self.args.partitions
        self.client.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(60)
        wait_for_leaders(self.client, [name], partitions)
        for partition in range(partitions):
            self.producer.produce(name, value=b"churn", partition=partition)
        self.producer.flush(30)
        self.created[name] = time.monotonic()
        if len(self.live) > self.args.topics // 2:
            victim = self.live.pop(0)
            self.client.delete_topics([victim], operation_timeout=30)[victim].result(60)
            self.deleted.append(victim)

    def load(self, records: int) -> None:
        for _ in range(records):
            self.producer.produce(self.live[self.sent % len(self.live)], value=b"load",
                                  partition=self.sent % self.args.partitions)
            self.sent += 1
        self.producer.poll(0)

    def check(self, view: TargetView) -> None:
        """Note the new topics whose every partition has its record on B."""
        waiting = {f"{SOURCE}.{t}" for t in self.created if t not in self.arrived}
        if not waiting:
            return
        view.wanted |= waiting
        view.poll(waiting)
        for remote in waiting:
            if all(view.ends.get((remote, p), 0) > 0 for p in range(self.args.partitions)):
                self.arrived[remote[len(SOURCE) + 1:]] = time.monotonic()

    def run(self, node: Node, view: TargetView, result: StartResult) -> None:
        args = self.args
        log(f"churn: {args.rate} topics a minute created and deleted for {args.minutes} min, {args.load} records/s")
        interval, end = 60.0 / args.rate, time.monotonic() + args.minutes * 60
        next_change = last_check = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= next_change:
                self.change()
                next_change += interval
            if args.load > 0:
                self.load(max(1, int(args.load / 10)))
            if time.monotonic() - last_check > 1.0:
                last_check = time.monotonic()
                self.check(view)
            time.sleep(0.1)
        self.producer.flush(30)
        grace = time.monotonic() + args.refresh + 30
        while time.monotonic() < grace and len(self.arrived) < len(self.created):
            self.check(view)
            time.sleep(1.0)
        result.extra.update(self.summary(node, view))
        log(json.dumps(result.extra["churn"]))

    def summary(self, node: Node, view: TargetView) -> dict[str, Any]:
        args, deleted = self.args, self.deleted
        delays = sorted(self.arrived[t] - self.created[t] for t in self.arrived)
        on_b = set(view.admin.list_topics(timeout=60).topics)
        metrics = timed_get(f"{node.url}/metrics")[2].decode(errors="replace")
        stale = sum(1 for line in metrics.splitlines() if any(f'topic="{SOURCE}.{t}"' in line for t in deleted[-20:]))
        noisy = [line for line in node.log_text().splitlines()
                 if (" WARNING " in line or " ERROR " in line) and any(t in line for t in deleted)]
        found: dict[str, Any] = {"churn": {
            "topics created": len(self.created), "flowing on B": len(self.arrived), "deleted": len(deleted),
            "seconds from creation to every partition on B: median": statistics.median(delays) if delays else None,
            "max": max(delays) if delays else None,
            "bound (refresh.topics.interval.seconds + 10)": args.refresh + 10,
            "over the bound": sum(1 for d in delays if d > args.refresh + 10),
            "remote topics of deleted topics still on B": sum(1 for t in deleted if f"{SOURCE}.{t}" in on_b),
            "series of the last 20 deleted topics still in /metrics": stale,
            "warnings and errors naming a deleted topic, per minute": round(len(noisy) / max(1.0, args.minutes), 1),
            "records of load sent": self.sent,
        }}
        if noisy:
            found["churn: a sample of those lines"] = noisy[:3]
        return found


# -- groups -----------------------------------------------------------------------------------------------
class CpuTrace(threading.Thread):
    """The CPU seconds a process tree used so far, sampled every ``interval_s`` with the wall-clock time: the
    node's CPU over a stretch known only afterwards (from a log line's time to the last checkpoint's arrival)."""

    def __init__(self, root: int, interval_s: float = 0.5) -> None:
        super().__init__(name="cpu-trace", daemon=True)
        self.root = root
        self.interval_s = interval_s
        self.samples: list[tuple[float, float]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        self.samples.append((time.time(), tree_cpu_s(self.root)))
        while not self._stop_event.wait(self.interval_s):
            self.samples.append((time.time(), tree_cpu_s(self.root)))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)

    def cores(self, start: float, end: float) -> float | None:
        """Cores used on average from ``start`` to ``end`` (the samples around them); None without two samples."""
        inside = [s for s in self.samples if start - self.interval_s <= s[0] <= end + self.interval_s]
        if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
            return None
        return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])

    def peak(self, start: float, end: float, window_s: float = 2.0) -> float | None:
        """The most cores used over any ``window_s`` from ``start`` to ``end``."""
        inside = [s for s in self.samples if start - self.interval_s <= s[0] <= end + self.interval_s]
        best = None
        for i, (began, cpu) in enumerate(inside):
            later = [s for s in inside[i + 1:] if s[0] - began >= window_s]
            if later:
                cores = (later[0][1] - cpu) / (later[0][0] - began)
                best = cores if best is None else max(best, cores)
        return best


def groups_phase(args: argparse.Namespace, source: str, target: str) -> Callable[[Node, TargetView, StartResult], None]:
    def groups(node: Node, view: TargetView, result: StartResult) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions

        from mirror.client.models import Checkpoint

        topics = names("scale", args.topics)
        client = admin(source)
        group_names = [f"scale-group-{i:05d}" for i in range(args.groups)]
        trace = CpuTrace(node.pid)
        trace.start()
        log(f"committing offsets of {len(group_names)} groups on A (all requests at once: one refresh finds them)")
        began_cpu, began = tree_cpu_s(node.pid), time.monotonic()
        commits: list[Any] = []
        for i, group in enumerate(group_names):
            topic = topics[i % len(topics)]
            offsets = [TopicPartition(topic, p, args.records) for p in range(args.partitions)]
            commits += client.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)],
                                                           request_timeout=60).values()
        for future in commits:
            future.result(60)
        committed_at = time.time()
        reader = Consumer({"bootstrap.servers": target, "group.id": unique("scale-checkpoints"),
                           "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        reader.assign([TopicPartition(f"{SOURCE}.checkpoints.internal", 0, 0)])
        first_checkpoint: dict[str, float] = {}
        wanted = set(group_names)
        deadline = time.monotonic() + args.refresh + 2 * args.emit + args.timeout
        while time.monotonic() < deadline and not wanted <= set(first_checkpoint):
            for message in reader.consume(10_000, 1.0):
                if message.error() is not None:
                    continue
                try:
                    checkpoint = Checkpoint.from_record(message.key(), message.value())
                except Exception:
                    continue
                first_checkpoint.setdefault(checkpoint.consumer_group_id, time.time())
        reader.close()
        cpu = tree_cpu_s(node.pid) - began_cpu
        elapsed = time.monotonic() - began
        trace.stop()
        found = (node.line_time(f"Found {args.groups} consumer groups")
                 or node.line_time("consumer groups for", last=True))
        got = [first_checkpoint[g] for g in group_names if g in first_checkpoint]
        fan_out = None if found is None or not got else (found, max(got))

        def percent(cores: float | None) -> float | None:
            return None if cores is None else round(100 * cores, 1)

        result.extra["groups"] = {
            "groups": len(group_names), "with a checkpoint": len(got),
            "seconds from the commits to the refresh that found them": None if found is None else found - committed_at,
            "seconds from that refresh to the last group's first checkpoint":
                None if fan_out is None else fan_out[1] - fan_out[0],
            "bound (2 x emit.checkpoints.interval.seconds)": 2 * args.emit,
            "node CPU from that refresh to the last first checkpoint (% of a core)":
                None if fan_out is None else percent(trace.cores(*fan_out)),
            "its most over 2 s (% of a core)": None if fan_out is None else percent(trace.peak(*fan_out)),
            "node CPU from the commits to the last first checkpoint (% of a core)": round(100 * cpu / elapsed, 1),
        }
        log(json.dumps(result.extra["groups"]))
    return groups


# -- scaling ----------------------------------------------------------------------------------------------
def run_scaling(args: argparse.Namespace, source: str, target: str, workdir: Path) -> str:
    from bench import replication

    counts = [int(n) for n in str(args.tasks).split(",")]
    topic = unique("scale-copy")
    create_topic(source, topic, args.partitions)
    preload(source, topic, args.records, 100, args.partitions)
    rows = []
    base: float | None = None
    for run in range(args.runs):
        for n in counts if run % 2 == 0 else counts[::-1]:
            alias = f"S{unique('')[1:6]}"
            repl = replication.start(workdir / f"{alias}-{n}", source, target, topic=topic, tasks=n,
                                     source_alias=alias, launcher="driver", code=args.code)
            try:
                ends = EndOffsets(target, f"{alias}.{topic}", args.partitions)
                cpu0 = sum(cpu_seconds(p) for p in repl.pids)
                done = wait_for_records(ends, args.records, 900, alive=repl.alive)
                cpu = sum(cpu_seconds(p) for p in repl.pids) - cpu0
                ends.close()
            finally:
                repl.stop()
            rate = done.records / done.seconds
            rows.append({"tasks": n, "run": run, "records_per_s": rate, "cpu_us_per_record": 1e6 * cpu / done.records})
            log(f"tasks.max={n} run {run}: {rate:,.0f} records/s")
    lines = ["| tasks.max (one node) | runs | records/s, median [min-max] | ratio to tasks.max 1 | goal 0.8 x N | "
             "node CPU us/record |", "|---|---|---|---|---|---|"]
    for n in counts:
        rates = [r["records_per_s"] for r in rows if r["tasks"] == n]
        median = statistics.median(rates)
        if n == counts[0]:
            base = median
        ratio = median / base if base else 0.0
        cpu_us = statistics.median(r["cpu_us_per_record"] for r in rows if r["tasks"] == n)
        lines.append(f"| {n} | {len(rates)} | {median:,.0f} [{min(rates):,.0f}-{max(rates):,.0f}] | {ratio:.2f}x | "
                     f"{0.8 * n:.1f}x | {cpu_us:.2f} |")
    lines += ["", f"{args.records:,} records of 100 B on {args.partitions} partitions, cores: {os.cpu_count()}, "
                  "brokers on the same machine"]
    return "\n".join(lines)


# -- gil --------------------------------------------------------------------------------------------------
GIL_CHILD = "--gil-child"


def gil_child(args: argparse.Namespace) -> None:
    """In a process of its own: ``--tasks`` MirrorSourceTasks copy their topics; print one JSON line."""
    from connect_runtime.clients import bulk_produce
    from connect_runtime.testing.harness import run_source_task
    from mirror.source.task import MirrorSourceTask

    try:  # the module's name since the house plan's renames, and before (for --code DIR of an older commit)
        from mirror.config.mirror_maker_config import MirrorMakerConfig, SourceAndTarget
    except ImportError:
        from mirror.config.mirror_maker import MirrorMakerConfig, SourceAndTarget  # type: ignore[no-redef]

    spec = json.loads(args.spec)
    props = mm2_properties(spec["source"], spec["target"], 1, {"emit.checkpoints.enabled": "false",
                                                                "emit.heartbeats.enabled": "false"})
    base = MirrorMakerConfig(props).connector_base_config(SourceAndTarget(SOURCE, TARGET),
                                                          "org.apache.kafka.connect.mirror.MirrorSourceConnector")
    _, why = bulk_produce._binding()
    counting = getattr(bulk_produce, "count_released_cpu", None)  # absent in --code DIR of an older commit
    released = bulk_produce.released_cpu_ns if counting is not None and counting(True) else None
    total = spec["records"] * len(spec["topics"])
    with contextlib_exit_stack() as stack:
        runs = []
        for index, topic in enumerate(spec["topics"]):
            config = {**base, "task.assigned.partitions": ",".join(f"{topic}-{p}" for p in range(spec["partitions"])),
                      "task.index": str(index)}
            runs.append(stack.enter_context(run_source_task(MirrorSourceTask, config, bootstrap_servers=spec["target"],
                                                            connector="MirrorSourceConnector", task_number=index)))
        threads = {t.native_id: t.name for t in threading.enumerate()}
        before = thread_cpu.snapshot(os.getpid())
        released_before = (released() or 0) if released is not None else 0
        process_before, began = time.process_time(), time.monotonic()
        while sum(r.records_written() for r in runs) < total:
            time.sleep(0.01)
            if time.monotonic() - began > 900:
                raise SystemExit("the copy did not finish within 900 s")
        elapsed = time.monotonic() - began
        after = thread_cpu.snapshot(os.getpid())
        process_cpu = time.process_time() - process_before
        released_s = (((released() or 0) - released_before) / 1e9) if released is not None else None
    task_cpu = sum(after[tid][1] - before.get(tid, ("", 0.0))[1] for tid, name in threads.items()
                   if tid in after and name.startswith("task-"))
    rdk_cpu = sum(cpu - before.get(tid, ("", 0.0))[1] for tid, (name, cpu) in after.items() if name.startswith("rdk:"))
    print(json.dumps({"tasks": len(runs), "records": total, "seconds": elapsed, "process_cpu_s": process_cpu,
                      "task_thread_cpu_s": task_cpu, "released_cpu_s": released_s, "librdkafka_cpu_s": rdk_cpu,
                      "produce_path": why}), flush=True)


@contextmanager
def contextlib_exit_stack() -> Iterator[Any]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield stack


def run_gil(args: argparse.Namespace, source: str, target: str) -> str:
    counts = [int(n) for n in str(args.tasks).split(",")]
    rows = []
    for run in range(args.runs):
        for n in counts:
            topics = [unique("scale-gil") for _ in range(n)]
            for topic in topics:  # the remote topics too: no connector runs to create them
                create_topic(source, topic, args.partitions)
                create_topic(target, f"{SOURCE}.{topic}", args.partitions)
                preload(source, topic, args.records // n, 100, args.partitions)
            spec = {"source": source, "target": target, "topics": topics, "records": args.records // n,
                    "partitions": args.partitions}
            env = {**os.environ}
            if args.code is not None:
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.code), env.get("PYTHONPATH")]))
            done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "gil", GIL_CHILD,
                                   "--spec", json.dumps(spec)], capture_output=True, text=True, timeout=1200,
                                  check=False, env=env, cwd=None if args.code is None else str(args.code))
            if done.returncode != 0:
                raise SystemExit(f"gil child failed:\n{done.stderr[-3000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["run"] = run
            rows.append(row)
            log(json.dumps(row))
    lines = ["| tasks in one process | runs | records/s | task threads' CPU us/record | of which in the span without "
             "the GIL | GIL-held share s of the task threads' CPU | librdkafka threads' CPU us/record | "
             "process CPU us/record | Amdahl bound for N tasks: 2 / 4 / 8 / 16 (and 1/s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in counts:
        mine = [r for r in rows if r["tasks"] == n]

        def med(key: str, rows: list[dict[str, Any]] = mine) -> float:
            return float(statistics.median(r[key] for r in rows))

        per = 1e6 / med("records")
        task_us = statistics.median(1e6 * r["task_thread_cpu_s"] / r["records"] for r in mine)
        if all(r["released_cpu_s"] is not None for r in mine):
            free_us = statistics.median(1e6 * r["released_cpu_s"] / r["records"] for r in mine)
            share = (task_us - free_us) / task_us if task_us else 1.0
            bounds = " / ".join(f"{1 / (share + (1 - share) / k):.2f}x" for k in (2, 4, 8, 16))
            free_text, share_text, bound_text = f"{free_us:.2f}", f"{share:.2f}", f"{bounds} ({1 / share:.1f}x)"
        else:
            free_text, share_text, bound_text = "not measured (no released_cpu_ns in the extension)", "-", "-"
        rdk_us = statistics.median(1e6 * r["librdkafka_cpu_s"] / r["records"] for r in mine)
        lines.append(f"| {n} | {len(mine)} | {med('records') / med('seconds'):,.0f} | {task_us:.2f} | {free_text} | "
                     f"{share_text} | {rdk_us:.2f} | "
                     f"{med('process_cpu_s') * per:.2f} | {bound_text} |")
    lines += ["", f"produce path: {rows[-1]['produce_path']}; {args.records:,} records of 100 B per row, "
                  f"{args.partitions} partitions per task, cores: {os.cpu_count()}"]
    return "\n".join(lines)


# -- recording --------------------------------------------------------------------------------------------
#: The machine-table row that names the code the node ran when it is not this tree (``--code DIR``).
NODE_CODE_ROW = "the node's code"


def rule_facts(code: Path | None) -> dict[str, str]:
    """The recording rule's rows, whose commit is the code the node runs: with ``--code DIR`` that is DIR's commit
    when DIR is a git checkout (a worktree); a ``git archive`` copy keeps none, so the row keeps this tree's commit
    and one more row names DIR as code of unknown commit. Without it, this tree's."""
    if code is not None and (code / ".git").exists():
        rule, loads = recording.at_start(code)
        return {**rule.rows(loads), NODE_CODE_ROW: f"{code} (the commit above)"}
    rule, loads = recording.at_start()
    rows = rule.rows(loads)
    if code is not None:
        rows[NODE_CODE_ROW] = (f"{code}, not a git checkout: its commit is not known here "
                               "(the commit above is the bench's)")
    return rows


def record_section(args: argparse.Namespace, title: str, body: str, facts: dict[str, str], start: datetime.datetime,
                   began: float) -> None:
    command = "python bench/scale.py " + " ".join(sys.argv[1:])
    heading, text = recording.section(command, args.title or title, kafka_brokers.label("kafka"), "bench/scale.py",
                                      facts, [(title, body)], start, began)
    if args.output is not None or args.record:
        recording.keep(heading, text, None if args.output is None else Path(args.output), BENCH_DIR / "results.md")

def key_value(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"KEY=VALUE expected, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("start", "churn", "groups", "scaling", "gil"))
    parser.add_argument("--topics", type=int, default=None, help="topics on A (start 2000, churn 500, groups 50)")
    parser.add_argument("--partitions", type=int, default=None, help="partitions per topic (4; scaling 32, gil 8)")
    parser.add_argument("--records", type=int, default=None,
                        help="records per partition (10); scaling and gil: records in all (4,000,000 / 2,000,000)")
    parser.add_argument("--tasks", default=None, help="tasks.max (4); scaling: a list (1,2,4); gil: a list (1,2)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the start may take at most")
    parser.add_argument("--steady", type=float, default=120.0, help="seconds of steady state measured (0: none)")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds before the steady state is measured")
    parser.add_argument("--throttle", type=float, default=0.0, help="B's controller_mutation_rate (0: none)")
    parser.add_argument("--rate", type=int, default=100, help="churn: topics created and deleted a minute")
    parser.add_argument("--minutes", type=float, default=3.0, help="churn: minutes")
    parser.add_argument("--load", type=float, default=200.0, help="churn: records/s to the other topics")
    parser.add_argument("--refresh", type=float, default=10.0,
                        help="churn: refresh.topics.interval.seconds; groups: refresh.groups.interval.seconds")
    parser.add_argument("--groups", type=int, default=1000, help="groups: consumer groups on A")
    parser.add_argument("--emit", type=float, default=20.0, help="groups: emit.checkpoints.interval.seconds")
    parser.add_argument("--runs", type=int, default=1, help="scaling and gil: interleaved runs")
    parser.add_argument("--set", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                        help="an mm2.properties line on top of the defaults (repeatable)")
    parser.add_argument("--profile", metavar="DIR",
                        help="py-spy profiles of the start, the steady state and mirror status into DIR")
    parser.add_argument("--memtrace", metavar="DIR", help="bench/memtrace's memory figures of the node into DIR")
    parser.add_argument("--memtrace-at", default="", metavar="S,S",
                        help="with --memtrace: tracemalloc snapshots at these process ages (s); bench/memdiff.py")
    parser.add_argument("--profile-gil", action="store_true",
                        help="with --profile: only the samples of the thread holding the GIL (py-spy --gil)")
    parser.add_argument("--keep-log", metavar="FILE", help="copy the node's log to FILE")
    parser.add_argument("--code", type=Path, metavar="DIR", help="run the node on the packages in DIR")
    parser.add_argument("--record", action="store_true", help="record the tables in bench/results.md")
    parser.add_argument("--output", help="write the section to FILE instead of recording it")
    parser.add_argument("--title", help="the recorded section's heading after its date")
    parser.add_argument(GIL_CHILD, action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.gil_child:
        gil_child(args)
        return 0
    defaults = {"start": (2000, 4, 10, "4"), "churn": (500, 4, 10, "4"), "groups": (50, 4, 10, "4"),
                "scaling": (1, 32, 4_000_000, "1,2,4"), "gil": (1, 8, 2_000_000, "1,2")}[args.mode]
    args.topics = defaults[0] if args.topics is None else args.topics
    args.partitions = defaults[1] if args.partitions is None else args.partitions
    args.records = defaults[2] if args.records is None else args.records
    args.tasks = defaults[3] if args.tasks is None else args.tasks
    kafka_brokers.select("kafka")
    facts = {**machine_facts(), **rule_facts(args.code)}
    start, began = datetime.datetime.now(datetime.UTC), time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, \
            kafka_brokers.kafka_brokers(("scale-a", "scale-b"), config=BROKER_CONFIG) as (source, target):
        workdir = Path(tmp)
        if args.mode == "scaling":
            title, body = "tasks of one node on the machine's cores (bench/scale.py scaling)", \
                run_scaling(args, source, target, workdir)
        elif args.mode == "gil":
            title, body = "the GIL-held share of a record's CPU on the bulk path (bench/scale.py gil)", \
                run_gil(args, source, target)
        else:
            args.tasks = int(args.tasks)
            extra: dict[str, str] = {}
            after = None
            if args.mode == "churn":
                extra["refresh.topics.interval.seconds"] = str(int(args.refresh))
                after = Churn(args, source).run
            elif args.mode == "groups":
                extra.update({"refresh.groups.interval.seconds": str(int(args.refresh)),
                              "emit.checkpoints.interval.seconds": str(int(args.emit))})
                after = groups_phase(args, source, target)
            result = run_start(args, source, target, workdir, extra, after)
            title = {"start": f"a start of {args.topics:,} topics x {args.partitions} partitions",
                     "churn": f"topic churn, {args.rate} a minute, on {args.topics:,} topics",
                     "groups": f"{args.groups:,} consumer groups"}[args.mode] + f" (bench/scale.py {args.mode})"
            body = start_tables(result, args)
    print(f"\n## {title}\n\n{body}\n")
    record_section(args, title, body, facts, start, began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
