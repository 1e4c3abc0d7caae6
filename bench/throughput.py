"""Replication throughput against the raw-client limit, measured side by side on the same brokers.

For each record size (100 B and 1 KB values, no key) ``--records`` records are pre-loaded round-robin on
an 8-partition topic of a fresh cluster A. Then, each against a fresh cluster B (on Kafka: one B per
size, warmed up by an untimed round, see :func:`shared_target`):

* ``native``: the native copier (bench/native_copier.py: the same copy in C on confluent-kafka's own
  librdkafka, the task's client settings): the limit of a copier on this client, the headline's base;
* ``pipe``: the raw pipe baseline (bench/pipe.py: one Python process, batched consume, async produce);
* ``mm2 x1``: our replication, MirrorSourceConnector with tasks.max=1 in one worker process;
* ``mm2-2``, ``mm2-TwW``: tasks.max=T across W processes (scaling);
* ``mm2-1-eos``, ``mm2-1-eos-1s``: (b) with exactly-once source support on;
* ``mm2-1-periodic``, ``mm2-1-periodic-1s``: (b) with the checkpoint and heartbeat connectors and every
  periodic job, at MM2's default intervals and at 1 s;
* ``spark``: the same backlog copied by ``mirror backfill`` on Spark (``local[2]``);
* ``java-mm2-1``: Java's MirrorMaker 2, tasks.max=1 as shipped (bench/java_copier.py; ``--broker kafka`` only);
* ``java-mm2-1-tuned``: the same, tuned to our client settings and timed warm (bench/java_copier.py);
* ``kafka-producer-perf``, ``kafka-consumer-perf``: Kafka's own perf tools, the brokers' ceilings
  (bench/kafka_perf.py; ``--broker kafka`` only).

``--compression lz4,zstd`` (besides ``none``) repeats every mode on a source topic of that
``compression.type``, pre-loaded by a producer that compresses (:func:`bench.common.preload`).

``--broker kafka`` runs every cluster as a single-node Apache Kafka 4.4 (bench/kafka_brokers.py) instead
of embedded Tansu; the table's last column names the broker of each row.

Each copier runs as its own process. The clock starts when the first record is visible on B (so process
start-up, group joins and topic creation are excluded; they are reported as "start-up") and stops when
the exact high watermarks of the target topic add up to ``--records``. Records/s, MB/s (payload bytes,
10^6) and the ratio to the pipe measured in the same run. CPU is the copier processes' user+system time
while copying (the pipe: its whole life, as it reports it; Spark: not measured, see ``SPARK_MASTER``).

On Kafka every row also gets the brokers' CPU by broker (A the source, B the target) and by thread pool,
with the kernel's share (bench/broker_load.py); ``--request-log`` counts the requests the brokers
completed per client and API while each copier copied (a run of its own: logging them costs the brokers
CPU). ``--variant NAME:KEY=VALUE,...`` adds mode ``mm2-1-NAME``, (b) with those mm2.properties entries, for
an interleaved A/B of a setting. ``--profile-format perf`` profiles the native copier too, and with
``--profile-brokers`` the broker JVMs (bench/perf_top.py sums a profile per thread, library and symbol).

Usage::

    python bench/throughput.py [--records 1000000] [--sizes 100,1000] [--modes pipe,mm2-1,mm2-2]
                               [--runs 1] [--json out.json] [--broker tansu|kafka] [--compression none,lz4]
                               [--request-log] [--variant NAME:KEY=VALUE,...]
                               [--profile-dir DIR --profile-format perf [--profile-brokers]]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from subprocess import DEVNULL, STDOUT, Popen, TimeoutExpired
from typing import Any

from confluent_kafka import KafkaError

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import broker_load, java_copier, kafka_brokers, kafka_perf, native_copier, replication, thread_cpu
from bench.common import (
    CommittedRecords,
    Completion,
    EndOffsets,
    admin,
    cpu_seconds,
    create_topic,
    delete_topics_and_wait,
    fmt_rate,
    local_brokers,
    preload,
    python_child,
    rss_kb,
    stop_child,
    unique,
    wait_for_records,
)

PARTITIONS = 8
#: The headline: the native copier (the limit of a copier on this client), the raw pipe and the flow as
#: shipped. ``mm2-1-datapath`` shows what the checkpoint and heartbeat connectors cost it.
MODES = ("native", "pipe", "mm2-1", "mm2-1-datapath")
#: Scaling: tasks.max T in one process (``mm2-Tw1``) or in W processes (``mm2-TwW``; ``mm2-2`` is 2 in 2).
#: Data path only: with the checkpoint connector's task in the group, which process runs which source task
#: would vary between runs.
SCALING = ("mm2-2w1", "mm2-4w1", "mm2-2", "mm2-4w2")
#: The flow as shipped (bench/replication.py's DEFAULT_FLOW: checkpoints and heartbeats on, default
#: intervals) runs in (b) and the modes built on it; the others run the data path alone (both off).
#: Consumer groups with committed offsets on the source give the checkpoint connector work to do.
DEFAULT_FLOW = replication.DEFAULT_FLOW
#: Every periodic job of a full flow (group offset sync too), at MM2's default intervals
#: (``mm2-1-periodic``) and with every interval at 1 s (``mm2-1-periodic-1s``): the copy loop should not
#: notice them.
PERIODIC_DEFAULT = {**DEFAULT_FLOW, "sync.group.offsets.enabled": "true"}
PERIODIC_1S = {**PERIODIC_DEFAULT, **{key: "1" for key in (
    "refresh.topics.interval.seconds", "refresh.groups.interval.seconds", "sync.topic.configs.interval.seconds",
    "emit.checkpoints.interval.seconds", "emit.heartbeats.interval.seconds", "sync.group.offsets.interval.seconds",
    "sync.topic.acls.interval.seconds")}, "health.refresh.interval.ms": "1000"}
PERIODIC = {"mm2-1-periodic": PERIODIC_DEFAULT, "mm2-1-periodic-1s": PERIODIC_1S}
#: Exactly-once (``exactly.once.source.support=enabled`` on the target's worker): (b) with its default
#: transaction boundary (a transaction per poll batch) and with a 1 s interval, next to (b). The clock stops
#: when a read_committed consumer on B has read every record (:class:`bench.common.CommittedRecords`), not
#: at high watermarks, which count records of open transactions and commit markers.
EOS_WORKER = {"mm2-1-eos": {"exactly.once.source.support": "enabled"},
              "mm2-1-eos-1s": {"exactly.once.source.support": "enabled"}}
EOS_CONNECTOR = {"mm2-1-eos-1s": {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1000"}}
#: ``mm2-1-nosyncs``: the data path without offset syncs (``emit.offset-syncs.enabled=false``, KIP-1031; the
#: checkpoint connector cannot run then): next to ``mm2-1-datapath``, what a sync every ``offset.lag.max``
#: records costs the copy.
VARIANTS = {"mm2-1-nosyncs": {"emit.offset-syncs.enabled": "false"}}
#: Modes that run the flow as shipped (plus what their own table adds); the others run the data path only.
ON_DEFAULT_FLOW = ("mm2-1", "mm2-1-base", "java-mm2-1", "java-mm2-1-tuned", "mm2-1-eos", "mm2-1-eos-1s",
                   "mm2-1-periodic", "mm2-1-periodic-1s")
SOURCE_GROUPS = 5
#: Every run deletes the topics it created on the clusters that outlive it: A always, and on Kafka the
#: shared B (:func:`shared_target`). An MM2 run leaves its offset syncs on A (``mm2-offset-syncs.B.internal``,
#: named after the target alias only, so each run's checkpoint task read every earlier run's syncs at its
#: start, during the copy: the flow as shipped lost a few % of its rate per round), the internal topics of
#: the B->A herder on A, and on B the A->B herder's internal topics, checkpoints, heartbeats and offset map
#: (about 40 partitions a run, under the run's own alias): B then served ever more partitions, compacted
#: logs and metadata, and the flow as shipped used more CPU per record round after round (3.60, 4.10 and
#: 4.27 us in the run of 2026-11-26 20:31 at 1 KB). Internal topics of the brokers (``__*``) stay.
KEPT_TOPIC_PREFIX = "__"
#: Runs per mode: every figure is the median of this many interleaved runs, with its min-max.
RUNS = 5
#: ``mm2-1-base``: (b) on the code given by ``--compare-code`` (before a change), run next to (b).
LABELS = {"native": "(n) native copier: C on librdkafka, the task's client settings",
          "pipe": "(a) raw pipe, the task's client settings",
          "mm2-1": "(b) mm2 tasks.max=1 as shipped: checkpoints, heartbeats on",
          "mm2-1-base": "(b) before: --compare-code",
          "mm2-1-datapath": "(b) data path only: checkpoints, heartbeats off",
          "mm2-1-periodic": "(b) + group offset sync, default intervals",
          "mm2-1-periodic-1s": "(b) + group offset sync, every interval 1 s",
          "mm2-2": "(c) data path, tasks.max=2, 2 workers", "mm2-2w1": "(c) data path, tasks.max=2, 1 process",
          "mm2-4w1": "(c) data path, tasks.max=4, 1 process", "mm2-4w2": "(c) data path, tasks.max=4, 2 processes",
          "mm2-1-eos": "(b) exactly-once, transaction per poll", "mm2-1-eos-1s": "(b) exactly-once, 1 s transactions",
          "mm2-1-nosyncs": "(b) data path without offset syncs", "spark": "(d) Spark backfill, local[2]",
          "java-mm2-1": "(j) Java MM2 tasks.max=1 as shipped: checkpoints, heartbeats on",
          "java-mm2-1-tuned": "(j) Java MM2 tasks.max=1 tuned to our client settings, warm: checkpoints, heartbeats on",
          "kafka-producer-perf": "(k) kafka-producer-perf-test into B, our producer settings",
          "kafka-consumer-perf": "(k) kafka-consumer-perf-test from A, our consumer settings, its own clock"}
#: Java's MirrorMaker 2 (bench/java_copier.py), on the same mm2.properties as (b): ``--broker kafka`` only.
JAVA_MODES = java_copier.MODES
#: Kafka's perf tools (bench/kafka_perf.py): ``--broker kafka`` only.
PERF_MODES = kafka_perf.MODES
#: Modes whose copier is a JVM: their JIT compilers' CPU is reported apart.
JVM_MODES = (*JAVA_MODES, *PERF_MODES)
#: Modes timed warm: the clock starts once this share of the records is on B, copied by the same process.
WARM = dict.fromkeys(java_copier.TUNED, java_copier.WARM_FRACTION)
#: Source topics: ``none`` (the default), or a ``compression.type`` the source topic and its producer use.
COMPRESSIONS = ("none", "lz4", "zstd", "snappy", "gzip")
#: Modes whose copier is one process.
SINGLE_PROCESS = ("pipe", "native", "spark", *JVM_MODES)
#: Modes whose process exits once it is done: no resident memory at the end.
EXITS_WHEN_DONE = ("pipe", "native", "spark", *PERF_MODES)
#: The order of the summary's rows.
ROW_ORDER = ("kafka-producer-perf", "kafka-consumer-perf", "native", "pipe", "mm2-1", "java-mm2-1",
             "java-mm2-1-tuned", "mm2-1-base", "mm2-1-datapath", "mm2-1-nosyncs", "mm2-1-eos",
             "mm2-1-eos-1s", "mm2-1-periodic", "mm2-1-periodic-1s", *SCALING, "spark")
#: ``spark``: the same backlog copied by ``mirror backfill`` (Spark, ``--master local[2]``) instead of
#: streaming replication, timed the same way (first record on B to the last); its start-up includes the
#: JVM's. Its CPU is not measured (shown as -): most of it is spent in Spark's JVM, which the command's
#: Python process does not reap, so neither its /proc figures nor RUSAGE_CHILDREN include it.
SPARK_MASTER = "local[2]"
#: ``--profile-gil``: profiles sample only the thread holding the GIL (see :func:`start_profiler`).
PROFILE_GIL = False
#: Kafka: seconds the brokers' CPU is sampled with no copier running, after the warm-up (what a copier pays
#: per second of its copy whoever it is).
IDLE_SAMPLE_S = 5.0
#: ``--profile-brokers``: with ``--profile-format perf``, the broker JVMs are recorded too
#: (bench/broker_load.py: ``<profile>-broker-<A|B>.perf``).
PROFILE_BROKERS = False


#: ``--variant NAME:KEY=VALUE,...``: mode ``mm2-1-NAME``, (b) as shipped with these mm2.properties entries.
SETTING_VARIANTS: dict[str, dict[str, str]] = {}


def add_variant(spec: str) -> str:
    """Register ``--variant NAME:KEY=VALUE[,KEY=VALUE]`` as mode ``mm2-1-NAME``; returns the mode."""
    name, _, settings = spec.partition(":")
    pairs = [item.split("=", 1) for item in settings.split(",") if item.strip()]
    if not name or not pairs or any(len(pair) != 2 or not pair[0].strip() for pair in pairs) or "-" in name:
        raise SystemExit(f"--variant {spec}: expected NAME:KEY=VALUE[,KEY=VALUE] (NAME without '-')")
    mode = f"mm2-1-{name}"
    if mode in LABELS:
        raise SystemExit(f"--variant {spec}: {mode} is a mode already")
    SETTING_VARIANTS[mode] = {key.strip(): value.strip() for key, value in pairs}
    VARIANTS[mode] = SETTING_VARIANTS[mode]
    LABELS[mode] = "(b) as shipped with " + ", ".join(f"{k}={v}" for k, v in SETTING_VARIANTS[mode].items())
    return mode


def on_default_flow(mode: str) -> bool:
    """Whether ``mode`` runs the flow as shipped (checkpoints and heartbeats on) under what its table adds."""
    return mode in ON_DEFAULT_FLOW or mode in SETTING_VARIANTS


def tasks_and_workers(mode: str) -> tuple[int, int]:
    """``mm2-1`` and its variants: 1 task in 1 process; ``mm2-T``: T tasks in T processes; ``mm2-TwW``."""
    rest = mode.split("-")[1]  # mm2-1-datapath, mm2-1-eos...: 1
    if "w" in rest:
        tasks, workers = rest.split("w")
        return int(tasks), int(workers)
    return int(rest), int(rest)


@dataclass
class Result:
    mode: str
    value_bytes: int
    records: int
    seconds: float = 0.0
    records_per_s: float = 0.0
    mb_per_s: float = 0.0
    startup_s: float = 0.0
    cpu_s: float = 0.0
    skipped: str | None = None
    #: (c): seconds between the two processes starting their task (see Replication.task_start_gap_s).
    task_start_gap_s: float | None = None
    #: Several processes: records/s from the moment every process ran its tasks to the end (None: most
    #: records were copied before that, see ``copied_before_all_started``).
    all_running_records_per_s: float | None = None
    copied_before_all_started: float | None = None
    #: CPU seconds per thread of the (first) replication process while copying (bench/thread_cpu.py).
    threads: dict[str, float] | None = None
    #: Ours and Java's: seconds per thread that it was ready to run but waited for a CPU while copying
    #: (bench/thread_cpu.py run_queue_snapshot).
    thread_waits: dict[str, float] | None = None
    #: Which round of the interleaved runs (the pipe run of the same round is its ratio's base).
    round: int = 0
    #: The brokers it ran on (bench/kafka_brokers.py: ``Tansu`` or ``Kafka 4.4.0``).
    broker: str = "Tansu"
    #: Resident memory of the copier's processes when the last record was on the target (MiB; None: not
    #: measured, e.g. the pipe, which has exited by then).
    rss_mib: float | None = None
    #: CPU seconds of the broker JVMs while copying, and of their JIT compiler threads (Kafka only).
    broker_cpu_s: float | None = None
    broker_jit_s: float | None = None
    #: The source topic's ``compression.type`` (``none``: uncompressed, as before this field).
    compression: str = "none"
    #: CPU seconds of the copier's own JIT compiler threads while copying (JVM copiers only).
    jit_cpu_s: float | None = None
    #: Timed warm (``WARM``): records on B when the clock started; ``records`` counts the rest.
    warm_records: int = 0
    #: Kafka: CPU seconds of the brokers while copying per ``"<broker> <thread pool>"``, and per broker its
    #: total and ``"<broker> system"`` (bench/broker_load.py).
    broker_threads: dict[str, float] | None = None
    broker_totals: dict[str, float] | None = None
    #: ``--request-log``: the requests the brokers completed while copying, ``"<broker> <API> <client>"`` ->
    #: [requests, partitions with records, record bytes] (bench/broker_load.py).
    requests: dict[str, list[int]] | None = None


#: ``--profile-format perf``: samples a second of each thread (bench/copier_profile.py turns them into CPU time).
PERF_HZ = 499


def start_profiler(pid: int, output: Path, gil: bool = False) -> Popen[bytes]:
    """py-spy recording ``pid`` (every thread by name) until :func:`stop_profiler`.

    ``gil``: only samples of the thread holding the GIL (``py-spy --gil``), so a thread's share of the
    samples is its share of the GIL; otherwise idle samples too (where each thread waits).
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix == ".perf":  # native code too (librdkafka's threads): `perf report --sort comm,dso,sym`
        return Popen([shutil.which("perf") or "perf", "record", "-F", str(PERF_HZ), "-g", "-p", str(pid),
                      "-o", str(output)],
                     stdout=DEVNULL, stderr=DEVNULL)
    fmt = {".json": "speedscope", ".txt": "raw"}.get(output.suffix, "flamegraph")
    return Popen([shutil.which("py-spy") or "py-spy", "record", "--pid", str(pid), "--rate", "200",
                  "--gil" if gil else "--idle", "--threads",
                  "--format", fmt, "--output", str(output)], stdout=DEVNULL, stderr=DEVNULL)


def stop_profiler(profiler: Popen[bytes]) -> None:
    profiler.send_signal(signal.SIGINT)
    try:
        profiler.wait(60)
    except TimeoutExpired:
        profiler.kill()


@dataclass
class Profiles:
    """The profilers of one run (``--profile-dir``): of the copier, and with ``--profile-brokers`` and
    ``--profile-format perf`` of the broker JVMs (bench/broker_load.py)."""

    path: Path | None
    copier: Popen[bytes] | None = None
    brokers: list[tuple[int, Popen[bytes]]] = field(default_factory=list)

    #: The copier's pid when it is a JVM profiled with perf: its JIT's methods are named at :meth:`stop`.
    jvm: int | None = None

    def start(self, pid: int, ours: bool, native: bool, jvm: bool = False) -> None:
        """Profile the copier if it is ours (py-spy or perf), or the native copier or Java's MirrorMaker (perf
        only: C, and a JVM, whose samples in compiled Java code are named through its perf map)."""
        if self.path is None:
            return
        perf = self.path.suffix == ".perf"
        if ours or (native and perf):
            self.copier = start_profiler(pid, self.path, PROFILE_GIL)
        elif jvm and perf:
            self.copier, self.jvm = broker_load.start_jvm_perf(pid, self.path), pid
        if PROFILE_BROKERS and perf:
            self.brokers = broker_load.start_perf(self.path.with_suffix(""))

    def running(self) -> list[Popen[bytes]]:
        return [p for p in (self.copier, *(b for _, b in self.brokers)) if p is not None]

    def stop(self) -> None:
        for profiler in self.running():
            stop_profiler(profiler)
        broker_load.write_perf_maps([pid for pid, _ in self.brokers] + ([self.jvm] if self.jvm else []))

    def kill(self) -> None:
        for profiler in self.running():
            if profiler.poll() is None:
                profiler.kill()


def broker_figures(result: Result, at_first: dict[int, broker_load.Sample],
                   at_done: dict[int, broker_load.Sample]) -> None:
    """Kafka: the brokers' CPU by broker and thread while copying, and with ``--request-log`` their requests."""
    if not at_first:
        return
    result.broker_threads, result.broker_totals = broker_load.cpu_since(at_first, at_done)
    if kafka_brokers.LOG_REQUESTS:
        result.requests = broker_load.requests_between(at_first, at_done).as_rows()


@dataclass
class Copier:
    """One running copier: its processes, how to stop it and tell it is alive, and where it writes."""

    processes: list[Popen[bytes]]
    stop: Callable[[], None]
    alive: Callable[[], bool]
    target_topic: str
    log_tail: Callable[[], str]
    repl: replication.Replication | None = None
    #: The copier's CPU seconds once stopped, when not taken from its processes while it copies.
    final_cpu: Callable[[], float | None] = lambda: None
    #: Its first process's threads now (default: read from /proc; a JVM tool that exited: its last sample).
    threads_now: Callable[[], thread_cpu.Snapshot] | None = None


def start_copier(mode: str, source: str, target: str, topic: str, records: int, workdir: Path,
                 extra: dict[str, str] | None, code: Path | None, began: float,
                 topic_config: dict[str, str] | None = None, value_bytes: int = 100) -> Copier:
    """``topic_config``: the source topic's non-default configs, which the copiers that do not create their
    target topic themselves (MirrorMaker does, with the source's configs) get on theirs."""
    if mode in ("pipe", "native"):
        target_topic = unique(mode)
        create_topic(target, target_topic, PARTITIONS, topic_config)
        log = workdir / f"{target_topic}.log"
        if mode == "native":
            with log.open("wb") as out:
                process = Popen(native_copier.command(workdir, source, target, topic, target_topic, PARTITIONS,
                                                      records), stdout=out, stderr=STDOUT)
        else:
            process = python_child([str(Path(__file__).with_name("pipe.py")), source, target, topic,
                                    target_topic, str(PARTITIONS), str(records)], log)

        def reported_cpu() -> float | None:  # it has exited by now: the CPU time it reported itself
            report = log.read_text(errors="replace")
            return float(report.rsplit("cpu_s=", 1)[1].split()[0]) if "cpu_s=" in report else None

        return Copier([process], lambda: stop_child(process), lambda: process.poll() in (None, 0), target_topic,
                      lambda: log.read_text(errors="replace")[-20000:], final_cpu=reported_cpu)
    if mode == "kafka-producer-perf":
        target_topic = unique("producer-perf")
        create_topic(target, target_topic, PARTITIONS, topic_config)
        tool = kafka_perf.start_producer(workdir, target, target_topic, records, value_bytes)
        return Copier([tool.proc], tool.reap, tool.alive, target_topic, tool.tail,
                      threads_now=lambda: (tool.running(), tool.threads)[1])
    if mode == "spark":
        process, target_topic = start_backfill(workdir, source, target, topic)
        return Copier([process], lambda: stop_child(process, 120), lambda: process.poll() in (None, 0),
                      target_topic, lambda: (workdir / "backfill.log").read_text(errors="replace")[-20000:],
                      final_cpu=lambda: float("nan"))
    alias = f"A{unique('')[1:6]}"
    flow = {**(DEFAULT_FLOW if on_default_flow(mode) else {}), **PERIODIC.get(mode, {}),
            **EOS_CONNECTOR.get(mode, {}), **VARIANTS.get(mode, {}), **(extra or {})}
    if mode in JAVA_MODES:
        java = java_copier.start(workdir, source, target, topic=topic, source_alias=alias, extra=flow,
                                 tuned=mode in java_copier.TUNED)
        return Copier([java.proc], java.stop, lambda: java.proc.poll() is None, f"{alias}.{topic}",
                      lambda: java.tail(400))
    tasks, workers = tasks_and_workers(mode)
    repl = replication.start(workdir, source, target, topic=topic, tasks=tasks, workers=workers,
                             source_alias=alias, extra=flow, worker_extra=EOS_WORKER.get(mode),
                             code=code if mode == "mm2-1-base" else None)
    alive = partial(_two_processes_or_fail, repl, began) if workers > 1 else repl.alive
    return Copier(repl.processes, repl.stop, alive, f"{alias}.{topic}", lambda: repl.tail(400), repl)


@contextmanager
def shared_target() -> Iterator[str | None]:
    """``--broker kafka``: the one target cluster of every run of a size (None on Tansu: a fresh one per run).

    A fresh Kafka broker per run is a new JVM, and its JIT compilers then ran during the timed copy: C2 and
    C1 threads took 0.5 us per record of the pipe's copy at 100 B and 0.8 of (b)'s, and the source broker,
    which lives through all runs, still compiled 500 methods during a run of (b), whose clients use more of
    the broker's code (transactions, compacted topics, group coordination) than the pipe's. Long-running
    brokers have paid that once. So on Kafka every run of a size copies to the same broker, after an
    untimed warm-up round of every mode (:func:`run`); each run still copies to topics of its own, deleted
    after it.
    """
    if kafka_brokers.current() != "kafka":
        yield None
        return
    with local_brokers(("bench-b",)) as (target,):
        yield target


def run_mode(mode: str, source: str, topic: str, records: int, value_bytes: int, workdir: Path,
             extra: dict[str, str] | None = None, profile: Path | None = None,
             code: Path | None = None, target: str | None = None, compression: str = "none") -> Result:
    """One copier run against ``target`` (None: a fresh cluster B); ``profile``: py-spy the replication
    while it copies; ``compression``: the source topic's ``compression.type``."""
    result = Result(mode, value_bytes, records, broker=kafka_brokers.label(), compression=compression)
    if mode == "kafka-consumer-perf":
        return run_consumer_perf(result, source, topic, workdir)
    workers = 1 if mode in SINGLE_PROCESS else tasks_and_workers(mode)[1]
    if workers > 1 and (why := replication.multi_worker_support()) is not None:
        result.skipped = why
        return result
    target_shared = target is not None  # it outlives this run: delete what the run wrote on it
    with nullcontext([target]) if target is not None else local_brokers(("bench-b",)) as (target,):
        existing = {cluster: topic_names(cluster) for cluster in (source, target)}
        began = time.monotonic()
        copier = start_copier(mode, source, target, topic, records, workdir, extra, code, began,
                              topic_config(compression), value_bytes)
        ends: EndOffsets | CommittedRecords = (CommittedRecords if mode in EOS_WORKER else EndOffsets)(
            target, copier.target_topic, PARTITIONS)
        cpu_at_first: list[float] = []
        samples: list[tuple[float, int]] = []
        profiles = Profiles(profile)
        threads_at_first: thread_cpu.Snapshot = {}
        waits_at_first: thread_cpu.Snapshot = {}
        brokers_at_first: kafka_brokers.BrokerCpu = {}
        load_at_first: dict[int, broker_load.Sample] = {}
        threads_now = copier.threads_now or (lambda: thread_cpu.snapshot(copier.processes[0].pid))

        def first() -> None:
            cpu_at_first.extend(cpu_seconds(p.pid) for p in copier.processes)
            brokers_at_first.update(kafka_brokers.broker_cpu())  # none on Tansu
            load_at_first.update(broker_load.sample())
            if copier.repl is not None or mode in JVM_MODES:  # a JVM's threads by their JVM names
                threads_at_first.update(threads_now())
            if copier.repl is not None or mode in JAVA_MODES:  # a copier that lives past its copy
                waits_at_first.update(thread_cpu.run_queue_snapshot(copier.processes[0].pid))
            profiles.start(copier.processes[0].pid, copier.repl is not None, mode == "native", mode in JAVA_MODES)

        try:
            try:
                warm, done = timed_copy(mode, ends, records, copier.alive, first, samples)
            except SystemExit as exc:  # one copier failing must not lose the other figures
                if mode == "pipe":
                    raise
                kept = Path(tempfile.gettempdir()) / f"bench-failed-{mode}-{value_bytes}b.log"
                kept.write_text(copier.log_tail())
                result.skipped = f"failed: {exc} (log tail: {kept})"
                return result
            load_at_done = broker_load.sample()
            measure(result, copier, cpu_at_first, brokers_at_first, threads_at_first, threads_now, waits_at_first)
            profiles.stop()
            broker_figures(result, load_at_first, load_at_done)
            if copier.repl is not None:
                check_tasks(copier.repl, workers)
                if workers > 1:
                    result.task_start_gap_s = copier.repl.task_start_gap_s()
                    all_running(result, copier.repl, samples, records)
        finally:
            profiles.kill()
            ends.close()
            copier.stop()
            for cluster in (source, target) if target_shared else (source,):
                delete_topics_and_wait(cluster, [name for name in topic_names(cluster) - existing[cluster]
                                                 if not name.startswith(KEPT_TOPIC_PREFIX)])
        final_cpu = copier.final_cpu()
        if final_cpu is not None:
            result.cpu_s = final_cpu
        result.startup_s = done.first_at - began
        if warm is not None:  # timed from the moment the warm share was there
            result.warm_records = warm.records
            result.records = records - warm.records
            result.startup_s = warm.first_at - began
        result.seconds = done.done_at - (warm.done_at if warm is not None else done.first_at)
        result.records_per_s, result.mb_per_s = fmt_rate(result.records, result.seconds, value_bytes)
    return result


def timed_copy(mode: str, ends: EndOffsets | CommittedRecords, records: int, alive: Callable[[], bool],
               first: Callable[[], None], samples: list[tuple[float, int]]) -> tuple[Completion | None, Completion]:
    """Wait for the copy; ``first`` runs when the clock starts: at the first record on the target, or for a
    mode timed warm (``WARM``) once its warm share is there, copied untimed by the same process."""
    timeout_s = max(300.0, records / 2000)
    warm = None
    if mode in WARM:
        warm = wait_for_records(ends, math.ceil(records * WARM[mode]), timeout_s, alive=alive)
        first()
    done = wait_for_records(ends, records, timeout_s, alive=alive, on_first=None if warm else first, samples=samples)
    return warm, done


def measure(result: Result, copier: Copier, cpu_at_first: list[float], brokers_at_first: kafka_brokers.BrokerCpu,
            threads_at_first: thread_cpu.Snapshot, threads_now: Callable[[], thread_cpu.Snapshot],
            waits_at_first: thread_cpu.Snapshot) -> None:
    """The copier's and the brokers' CPU since the clock started, by thread, its JIT's apart; how long its
    threads waited for a CPU; its RSS."""
    jvm = result.mode in JVM_MODES
    pid = copier.processes[0].pid
    waits_now = thread_cpu.run_queue_snapshot(pid) if waits_at_first else {}
    result.cpu_s = sum(cpu_seconds(p.pid) for p in copier.processes) - sum(cpu_at_first)
    result.broker_cpu_s, result.broker_jit_s = kafka_brokers.broker_cpu_since(brokers_at_first)
    result.rss_mib = copier_rss_mib(copier) if result.mode not in EXITS_WHEN_DONE else None
    names = thread_cpu.python_thread_names(pid) if copier.repl and (threads_at_first or waits_at_first) else {}
    if threads_at_first:
        result.threads = thread_cpu.by_thread(threads_at_first, threads_now(), names,
                                              result.cpu_s if jvm else cpu_seconds(pid) - cpu_at_first[0])
        if jvm:
            result.jit_cpu_s = jit_seconds(result.threads)
    if waits_at_first:
        result.thread_waits = thread_cpu.by_thread(waits_at_first, waits_now, names)


def jit_seconds(threads: dict[str, float]) -> float:
    """The JIT compiler threads' share of a by-thread breakdown (C1 and C2, every thread of each)."""
    return sum(cpu for name, cpu in threads.items() if name.startswith(kafka_brokers.COMPILER_THREADS))


def topic_config(compression: str) -> dict[str, str] | None:
    """The source topic's non-default configs for a ``--compression`` value."""
    return None if compression == "none" else {"compression.type": compression}


def run_consumer_perf(result: Result, source: str, topic: str, workdir: Path) -> Result:
    """kafka-consumer-perf-test over the source topic (bench/kafka_perf.py: its own clock)."""
    group = unique("bench-consumer-perf")
    brokers_before = kafka_brokers.broker_cpu()
    began = time.monotonic()
    tool = kafka_perf.start_consumer(workdir, source, topic, result.records, group)
    try:
        tool.wait_exit(max(300.0, result.records / 2000))
        ended = time.monotonic()
        figures = kafka_perf.consumer_figures(tool.log.read_text(errors="replace"))
        if figures["data.consumed.in.nMsg"] < result.records:
            raise SystemExit(f"read {figures['data.consumed.in.nMsg']:.0f} of {result.records} records")
        result.cpu_s = tool.cpu_s()  # its whole life (it has exited; not reaped yet)
        result.threads = thread_cpu.by_thread({}, tool.threads, {}, result.cpu_s)
        result.jit_cpu_s = jit_seconds(result.threads)
    except SystemExit as exc:
        kept = Path(tempfile.gettempdir()) / f"bench-failed-{result.mode}-{result.value_bytes}b.log"
        kept.write_text(tool.tail(400))
        result.skipped = f"failed: {exc} (log tail: {kept})"
        return result
    finally:
        tool.reap()
        kafka_perf.delete_group(source, group)
    result.broker_cpu_s, result.broker_jit_s = kafka_brokers.broker_cpu_since(brokers_before)
    result.seconds = figures["fetch.time.ms"] / 1000
    result.startup_s = ended - began - result.seconds
    result.records_per_s = figures["fetch.nMsg.sec"]
    result.mb_per_s = result.records_per_s * result.value_bytes / 1e6
    return result


def topic_names(bootstrap: str) -> set[str]:
    return set(admin(bootstrap).list_topics(timeout=30).topics)


def copier_rss_mib(copier: Copier) -> float | None:
    """Resident memory of the copier's processes now (MiB), None when one has exited."""
    try:
        return sum(rss_kb(p.pid) for p in copier.processes) / 1024
    except OSError:
        return None


def start_backfill(workdir: Path, source: str, target: str, topic: str) -> tuple[Popen[bytes], str]:
    """``mirror backfill`` of ``topic`` under a fresh source alias, and the remote topic's name."""
    alias = f"A{unique('')[1:6]}"
    props = replication.mm2_properties(source, target, source_alias=alias, topic=topic, tasks=1)
    path = workdir / f"backfill-{alias}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    process = python_child(["-m", "mirror.cli", "backfill", str(path), "--flow", f"{alias}->B",
                            "--master", SPARK_MASTER, "--no-progress"], workdir / "backfill.log")
    return process, f"{alias}.{topic}"


def all_running(result: Result, repl: replication.Replication, samples: list[tuple[float, int]],
                records: int) -> None:
    """The rate once every process ran its tasks: on Tansu the second process can start late (see
    Replication.task_start_gap_s), and until then one process copies alone."""
    times = repl.task_start_times()
    if not times or not samples:
        return
    started = max(times).timestamp()
    before = max((count for at, count in samples if at <= started), default=0)
    result.copied_before_all_started = round(before / records, 3)
    end_at = samples[-1][0]
    if end_at > started and before < records * 0.8:
        result.all_running_records_per_s = (records - before) / (end_at - started)


def _two_processes_or_fail(repl: replication.Replication, began: float, grace_s: float = 60.0) -> bool:
    """``alive`` for (c): fail fast when, after ``grace_s``, the tasks did not start in two processes."""
    if time.monotonic() - began > grace_s and repl.task_processes() < 2:
        raise SystemExit(f"after {grace_s:.0f}s only {repl.task_processes()} process(es) started a task")
    return repl.alive()


def check_tasks(repl: replication.Replication, workers: int) -> None:
    """A run with several processes only counts if each of them ran a task."""
    if workers > 1 and repl.task_processes() < workers:
        raise SystemExit(f"expected tasks in {workers} processes:\n{repl.tail()}")


def run(records: int, sizes: list[int], modes: list[str], runs: int = RUNS,
        extra: dict[str, str] | None = None, profile_dir: Path | None = None,
        profile_format: str = "svg", compare_code: Path | None = None,
        records_by_size: dict[int, int] | None = None,
        compressions: tuple[str, ...] = ("none",)) -> list[Result]:
    """All runs; one result per (size, compression, mode, round).

    Interleaved: each round runs every mode once, and each round starts one mode further down the list, so
    no mode always runs first (after the pre-load) or right after the same neighbour. A mode's ratio to
    the pipe (and to the native copier) is taken per round, against the run of the same round. Each
    compression of the source topic is a group of rounds of its own, on a source topic of its own.
    """
    if kafka_only := [mode for mode in modes if mode in JVM_MODES]:
        java_copier.require_kafka(f"--modes {','.join(kafka_only)}")
    if unknown := [c for c in compressions if c not in COMPRESSIONS]:
        raise SystemExit(f"--compression {','.join(unknown)}: choose from {', '.join(COMPRESSIONS)}")
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        workdir = Path(tmp)
        for size in sizes:
            records = (records_by_size or {}).get(size, records)
            with local_brokers(("bench-a",)) as (source,), shared_target() as target:
                for compression in compressions:
                    results += run_group(source, target, size, compression, records, modes, runs, workdir, extra,
                                         profile_dir, profile_format, compare_code)
    return results


def run_group(source: str, target: str | None, size: int, compression: str, records: int, modes: list[str],
              runs: int, workdir: Path, extra: dict[str, str] | None, profile_dir: Path | None,
              profile_format: str, compare_code: Path | None) -> list[Result]:
    """The rounds of one record size and source compression, on a source topic pre-loaded for them."""
    results: list[Result] = []
    topic = unique(f"bench-{size}b" + ("" if compression == "none" else f"-{compression}"))
    create_topic(source, topic, PARTITIONS, topic_config(compression))
    took = preload(source, topic, records, size, PARTITIONS, compression)
    print(f"pre-loaded {records:,} x {size} B on {topic} (compression {compression}) in {took:.1f}s", flush=True)
    if any(on_default_flow(mode) for mode in modes):
        commit_groups(source, topic, records // PARTITIONS // 2)
    if target is not None:  # the brokers' warm-up (see shared_target): every mode once, untimed
        for mode in modes:
            warm = run_mode(mode, source, topic, records, size, workdir, extra, None, compare_code, target,
                            compression)
            print(f"warm-up run of {mode} at {size} B (not counted): {warm.records_per_s:,.0f} "
                  f"records/s{f' ({warm.skipped})' if warm.skipped else ''}", flush=True)
        idle_threads, idle_totals = broker_load.idle(IDLE_SAMPLE_S)
        print(f"brokers with no copier, CPU seconds over {IDLE_SAMPLE_S:.0f} s: {json.dumps(idle_totals)}; by thread: "
              f"{json.dumps(dict(list(idle_threads.items())[:8]))}", flush=True)
    for index in range(runs):
        for mode in run_order(modes, index):
            profile = (None if profile_dir is None
                       else profile_dir / f"profile-{mode}-{size}b-{compression}-{index}.{profile_format}")
            result = run_mode(mode, source, topic, records, size, workdir, extra, profile, compare_code, target,
                              compression)
            result.round = index
            results.append(result)
            print(json.dumps(asdict(result)), flush=True)
    delete_topics_and_wait(source, [topic])
    return results


def run_order(modes: list[str], index: int) -> list[str]:
    """The modes of round ``index``: the list rotated by one mode per round."""
    shift = index % len(modes)
    return modes[shift:] + modes[:shift]


#: What a broker answers a commit while its group coordinator starts (first use of ``__consumer_offsets``).
COORDINATOR_STARTING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                        KafkaError.COORDINATOR_NOT_AVAILABLE)


def commit_groups(source: str, topic: str, offset: int, timeout_s: float = 60.0) -> None:
    """Consumer groups with committed offsets on the source, for the checkpoint connector to translate.

    A fresh Kafka broker answers NOT_COORDINATOR while it creates ``__consumer_offsets`` for the first
    commit: retriable errors are tried again until ``timeout_s``."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout_s
    for index in range(SOURCE_GROUPS):
        consumer = Consumer({"bootstrap.servers": source, "group.id": f"bench-group-{index}",
                             "enable.auto.commit": False})
        try:
            while True:
                try:
                    consumer.commit(offsets=[TopicPartition(topic, p, offset) for p in range(PARTITIONS)],
                                    asynchronous=False)
                    break
                except KafkaException as exc:
                    error = exc.args[0]
                    if (error.code() not in COORDINATOR_STARTING and not error.retriable()) \
                            or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        finally:
            consumer.close()


def spread(values: list[float]) -> dict[str, float]:
    """Median, min and max of one figure over the runs."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(results: list[Result]) -> list[dict[str, Any]]:
    """Per (size, compression, mode): median [min-max] of every figure over its runs; the ratios to the
    pipe and to the native copier are paired per round (a mode's run against the pipe's or the native
    copier's run of the same round and source topic), then the median of those ratios."""
    rows: list[dict[str, Any]] = []
    groups = sorted({(r.value_bytes, r.compression) for r in results},
                    key=lambda group: (group[0], COMPRESSIONS.index(group[1]) if group[1] in COMPRESSIONS else 99))
    for size, compression in groups:
        group = [r for r in results if r.value_bytes == size and r.compression == compression]
        pipes = {r.round: r.records_per_s for r in group if r.mode == "pipe" and r.skipped is None}
        natives = {r.round: r.records_per_s for r in group if r.mode == "native" and r.skipped is None}
        for mode in (*ROW_ORDER, *SETTING_VARIANTS):
            runs = [r for r in group if r.mode == mode]
            if not runs:
                continue
            done = [r for r in runs if r.skipped is None]
            if not done:
                rows.append({"mode": mode, "size": size, "compression": compression, "skipped": runs[0].skipped,
                             "broker": runs[0].broker})
                continue
            ratios = [r.records_per_s / pipes[r.round] for r in done if r.round in pipes]
            native_ratios = [r.records_per_s / natives[r.round] for r in done if r.round in natives]
            cpu_values = [r.cpu_s / r.records * 1e6 for r in done if not math.isnan(r.cpu_s)]
            jit_values = [r.jit_cpu_s / r.records * 1e6 for r in done if r.jit_cpu_s is not None]
            brokers = [(r.broker_cpu_s / r.records * 1e6, (r.broker_jit_s or 0.0) / r.records * 1e6)
                       for r in done if r.broker_cpu_s is not None]
            rows.append({
                "mode": mode, "size": size, "compression": compression, "runs": len(done),
                "failed": len(runs) - len(done), "records": done[0].records,
                "warm_records": statistics.median(r.warm_records for r in done),
                "records_per_s": spread([r.records_per_s for r in done]),
                "mb_per_s": statistics.median(r.mb_per_s for r in done),
                "ratio": spread(ratios) if ratios else None,
                "native_ratio": spread(native_ratios) if native_ratios else None,
                "cpu_us_per_record": spread(cpu_values) if cpu_values else None,
                "jit_us_per_record": spread(jit_values) if jit_values else None,
                "broker_cpu_us_per_record": spread([b[0] for b in brokers]) if brokers else None,
                "broker_jit_us_per_record": statistics.median(b[1] for b in brokers) if brokers else None,
                "startup_s": statistics.median(r.startup_s for r in done),
                "rss_mib": (statistics.median(rss) if (rss := [r.rss_mib for r in done if r.rss_mib is not None])
                            else None),
                "broker": done[0].broker,
                "seconds": statistics.median(r.seconds for r in done),
                "threads": thread_medians(done),
                "thread_shares": thread_shares(done),
                "broker_threads": per_record_medians(done, "broker_threads"),
                "broker_totals": per_record_medians(done, "broker_totals"),
                "requests": request_medians(done),
                "task_start_gap_s": (statistics.median(gaps) if (gaps := [r.task_start_gap_s for r in done
                                     if r.task_start_gap_s is not None]) else None),
                "all_running_records_per_s": (statistics.median(rates) if (rates := [
                    r.all_running_records_per_s for r in done if r.all_running_records_per_s is not None]) else None),
                "copied_before_all_started": (statistics.median(parts) if (parts := [
                    r.copied_before_all_started for r in done if r.copied_before_all_started is not None]) else None),
            })
    return rows


def thread_medians(done: list[Result]) -> dict[str, float]:
    """Median CPU per thread (us per record) over the runs that measured it (a thread absent in a run: 0)."""
    measured = [r for r in done if r.threads]
    names = {name for r in measured for name in r.threads or {}}
    medians = {name: statistics.median((r.threads or {}).get(name, 0.0) / r.records * 1e6 for r in measured)
               for name in names}
    return dict(sorted(medians.items(), key=lambda item: -item[1]))


def thread_shares(done: list[Result], top: int = 4) -> dict[str, list[float]] | None:
    """The ``top`` threads by CPU: [share of the copy time on a CPU, share ready to run but waiting for a
    CPU], medians over the runs that measured both (a thread group's shares add its threads'); None when
    none did. Which thread waits for a core says what sets the pace on a machine the brokers share."""
    measured = [r for r in done if r.threads and r.thread_waits is not None and r.seconds > 0]
    if not measured:
        return None
    cpu = {name: statistics.median((r.threads or {}).get(name, 0.0) / r.seconds for r in measured)
           for name in {name for r in measured for name in r.threads or {}} if name != "(ended threads)"}
    return {name: [share, statistics.median((r.thread_waits or {}).get(name, 0.0) / r.seconds for r in measured)]
            for name, share in sorted(cpu.items(), key=lambda item: -item[1])[:top]}


def per_record_medians(done: list[Result], figure: str) -> dict[str, float] | None:
    """Median per key of a by-name CPU figure (``broker_threads``, ``broker_totals``) in us per record, over
    the runs that measured it (a key absent in a run: 0), the largest first; None when none did."""
    measured = [(getattr(r, figure), r.records) for r in done if getattr(r, figure)]
    if not measured:
        return None
    names = {name for values, _ in measured for name in values}
    medians = {name: statistics.median(values.get(name, 0.0) / records * 1e6 for values, records in measured)
               for name in names}
    return dict(sorted(medians.items(), key=lambda item: -item[1]))


def request_medians(done: list[Result]) -> dict[str, list[float]] | None:
    """``--request-log``: per (broker, API, client), the median over the runs of each count (absent: 0),
    the most requests first; None when no run counted requests."""
    measured = [r.requests for r in done if r.requests is not None]
    if not measured:
        return None
    keys = {key for counts in measured for key in counts}
    medians = {key: [statistics.median(counts.get(key, [0, 0, 0])[i] for counts in measured) for i in range(3)]
               for key in keys}
    return dict(sorted(medians.items(), key=lambda item: -item[1][0]))


def cpu(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def fmt_spread(figure: dict[str, float] | None, fmt: str, suffix: str = "") -> str:
    """``median [min-max]``, or - when not measured."""
    if figure is None:
        return "-"
    return (f"{figure['median']:{fmt}}{suffix} [{figure['min']:{fmt}}-{figure['max']:{fmt}}]"
            if figure["min"] != figure["max"] else f"{figure['median']:{fmt}}{suffix}")


def table(rows: list[dict[str, Any]]) -> str:
    """Medians with [min-max] over the runs; the ratio is paired per round with the pipe."""
    lines = ["| copier | value | runs | records/s | MB/s | ratio to (a), paired | ratio to (n), paired "
             "| CPU us/record | copier's JIT compilers' CPU us/record | copy time (s) "
             "| start-up (s) | once all processes ran tasks | RSS at the end (MiB) "
             "| brokers' CPU us/record (JIT compilers') | broker |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    pipe = {(row["size"], row.get("compression", "none")): row["records_per_s"]["median"] for row in rows
            if row["mode"] == "pipe" and "skipped" not in row}
    for row in rows:
        label = LABELS[row["mode"]]
        group = (row["size"], row.get("compression", "none"))
        size = value_label(*group)
        if "skipped" in row:
            lines.append(f"| {label} | {size} | 0 | skipped: {row['skipped']} | | | | | | | | | | | {row['broker']} |")
            continue
        later = "-"
        if row.get("all_running_records_per_s"):
            rate = row["all_running_records_per_s"]
            later = f"{rate:,.0f} rec/s ({rate / pipe[group]:.2f}x)" if group in pipe else f"{rate:,.0f}"
        elif row.get("copied_before_all_started") is not None:
            later = f"not measured: {row['copied_before_all_started']:.0%} copied before"
        runs = f"{row['runs']}" + (f" ({row['failed']} failed)" if row["failed"] else "")
        if row.get("warm_records"):
            runs += f", timed after {row['warm_records']:,.0f} records"
        lines.append(f"| {label} | {size} | {runs} | {fmt_spread(row['records_per_s'], ',.0f')} "
                     f"| {row['mb_per_s']:.1f} | {fmt_spread(row['ratio'], '.2f', 'x')} "
                     f"| {fmt_spread(row.get('native_ratio'), '.2f', 'x')} "
                     f"| {fmt_spread(row['cpu_us_per_record'], '.2f')} "
                     f"| {fmt_spread(row.get('jit_us_per_record'), '.2f')} | {row['seconds']:.2f} "
                     f"| {row['startup_s']:.1f} | {later} "
                     f"| {'-' if row['rss_mib'] is None else format(row['rss_mib'], '.0f')} "
                     f"| {brokers_cpu(row)} | {row['broker']} |")
    return "\n".join(lines)


def value_label(size: int, compression: str = "none") -> str:
    """The table's "value" cell: the record size, and the source topic's compression when it has one."""
    return f"{size} B" if compression == "none" else f"{size} B, {compression} source"


def brokers_cpu(row: dict[str, Any]) -> str:
    """The brokers' CPU per record while the copier ran, median [min-max], and its JIT compilers' median."""
    if row.get("broker_cpu_us_per_record") is None:
        return "-"
    return f"{fmt_spread(row['broker_cpu_us_per_record'], '.2f')} ({row['broker_jit_us_per_record']:.2f})"


def thread_table(rows: list[dict[str, Any]], top: int = 8) -> str:
    """CPU per record by thread of the replication process (median over the runs), the largest first."""
    lines = ["| copier | value | CPU us/record by thread (median over the runs) |", "|---|---|---|"]
    for row in rows:
        threads = row.get("threads")
        if threads:
            shown = ", ".join(f"{name} {value:.2f}" for name, value in list(threads.items())[:top])
            lines.append(f"| {LABELS[row['mode']]} | {value_label(row['size'], row.get('compression', 'none'))} "
                         f"| {shown} |")
    return "\n".join(lines)


def thread_wait_table(rows: list[dict[str, Any]]) -> str:
    """Per copier, its busiest threads' shares of the copy time: on a CPU, and ready but waiting for one."""
    lines = ["| copier | value | busiest threads: on a CPU / ready, waiting for a CPU (share of the copy time, "
             "median over the runs) |", "|---|---|---|"]
    for row in rows:
        if shares := row.get("thread_shares"):
            shown = ", ".join(f"{name} {on:.0%} / {waiting:.0%}" for name, (on, waiting) in shares.items())
            lines.append(f"| {LABELS[row['mode']]} | {value_label(row['size'], row.get('compression', 'none'))} "
                         f"| {shown} |")
    return "\n".join(lines)


def report(rows: list[dict[str, Any]], modes: list[str]) -> str:
    """The tables of a run: the rates, the CPU by thread, how long the busiest threads waited for a CPU, and
    Java's tuned settings when that row ran."""
    parts = [table(rows), thread_table(rows)]
    if any(row.get("thread_shares") for row in rows):
        parts.append(thread_wait_table(rows))
    if any(row.get("broker_totals") for row in rows):
        parts.append(broker_load.cpu_table(rows, LABELS, value_label))
    if any(row.get("requests") for row in rows):
        parts.append(broker_load.requests_table(rows, LABELS, value_label))
    if any(mode in java_copier.TUNED for mode in modes):
        parts.append(java_copier.settings_table(java_copier.tuned_settings()))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--sizes", default="100,1000", help="value sizes in bytes, comma-separated")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--runs", type=int, default=RUNS,
                        help="interleaved rounds: every figure is the median of this many runs, with min-max")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="extra mm2.properties entry for the replication runs (repeatable)")
    parser.add_argument("--json", help="also write the summary rows to this file")
    parser.add_argument("--broker", choices=kafka_brokers.BROKERS, default="tansu",
                        help="the clusters: embedded Tansu, or single-node Apache Kafka 4.4 (KRaft); "
                             "java-mm2-1 needs kafka")
    parser.add_argument("--compression", default="none",
                        help="source topics, comma-separated: none (uncompressed) and/or a compression.type of "
                             f"{', '.join(COMPRESSIONS[1:])} (the topic's and its pre-loading producer's)")
    parser.add_argument("--compare-code", type=Path, metavar="DIR",
                        help="also run (b) on the packages in DIR (e.g. `git archive HEAD~1 | tar -x -C DIR`), "
                             "interleaved with (b) on the current code: before/after figures of a change")
    parser.add_argument("--profile-dir", type=Path,
                        help="py-spy the replication process while it copies; profiles go here")
    parser.add_argument("--profile-format", default="svg", choices=("svg", "txt", "json", "perf"),
                        help="py-spy flame graph (svg), collapsed stacks (txt), speedscope (json), or Linux perf "
                             "(perf: every thread's native stacks, librdkafka's included)")
    parser.add_argument("--profile-gil", action="store_true",
                        help="profile only the thread holding the GIL (py-spy --gil): each thread's GIL share")
    parser.add_argument("--profile-brokers", action="store_true",
                        help="with --profile-format perf on Kafka: perf the broker JVMs too, their JIT's methods "
                             "named (bench/broker_load.py)")
    parser.add_argument("--request-log", action="store_true",
                        help="Kafka: the brokers log every request, counted per broker, client and API while "
                             "each copier copies; their CPU figures then mean nothing (bench/broker_load.py)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE[,KEY=VALUE]",
                        help="also run mode mm2-1-NAME: (b) as shipped with these mm2.properties entries, "
                             "interleaved with the others (an A/B of a setting; repeatable)")
    args = parser.parse_args(argv)
    kafka_brokers.select(args.broker)
    global PROFILE_GIL, PROFILE_BROKERS
    PROFILE_GIL = args.profile_gil
    PROFILE_BROKERS = args.profile_brokers
    kafka_brokers.LOG_REQUESTS = args.request_log
    for variant in args.variant:
        add_variant(variant)
    extra = dict(item.split("=", 1) for item in args.set)
    modes = args.modes.split(",")
    if args.compare_code is not None and "mm2-1-base" not in modes:
        modes.insert(modes.index("mm2-1") if "mm2-1" in modes else len(modes), "mm2-1-base")
    results = run(args.records, [int(s) for s in args.sizes.split(",")], modes, args.runs,
                  extra, args.profile_dir, args.profile_format, args.compare_code,
                  compressions=tuple(args.compression.split(",")))
    rows = summarize(results)
    print()
    print(report(rows, modes))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
