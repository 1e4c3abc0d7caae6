"""Which broker the benchmarks start: embedded Tansu (the default) or Apache Kafka 4.4 in KRaft mode.

``--broker kafka`` on a bench script calls :func:`select`, which sets ``$BENCH_BROKER`` so that
:func:`bench.common.local_brokers` (in this process and in every bench script it spawns, e.g. run.py's
``first_record.py``) starts single-node Apache Kafka clusters instead of Tansu. The Kafka brokers are the
Kafka tier's (tests/support/apache_kafka.py: ``KafkaBroker``, jars fetched once by Maven from
tests/kafka/pom.xml), one combined broker+controller JVM per cluster, PLAINTEXT on loopback, data in a
temporary directory that is removed with the broker. Each JVM runs as ``kafka-server-start.sh`` starts it:
a 1 GiB heap (``-Xmx1G -Xms1G``) and ``kafka-run-class.sh``'s options (G1, the C2 compiler), not the
tier's quick-start options (384 MiB, serial GC, C1 only), which would slow the brokers every copier
shares.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BROKERS = ("tansu", "kafka")
ENV = "BENCH_BROKER"
#: Heap of each benchmark Kafka broker (MiB).
KAFKA_HEAP_MB = 1024


def select(kind: str) -> None:
    """Use ``kind`` for every broker this process and its bench children start."""
    if kind not in BROKERS:
        raise SystemExit(f"--broker {kind}: unknown broker; choose one of {', '.join(BROKERS)}")
    os.environ[ENV] = kind


def current() -> str:
    """The broker in use: ``$BENCH_BROKER`` (set by :func:`select`), default ``tansu``."""
    kind = os.environ.get(ENV, "tansu")
    if kind not in BROKERS:
        raise SystemExit(f"${ENV}={kind}: unknown broker; choose one of {', '.join(BROKERS)}")
    return kind


def label(kind: str | None = None) -> str:
    """How a results table names the broker: ``Tansu`` or ``Kafka 4.4.0``."""
    kind = kind or current()
    if kind == "kafka":
        from tests.support.apache_kafka import KAFKA_VERSION

        return f"Kafka {KAFKA_VERSION}"
    return "Tansu"


#: The log file of each running broker, by its bootstrap address.
BROKER_LOGS: dict[str, Path] = {}
#: Each running broker JVM by its pid: (its name, e.g. ``bench-b``, and its log file); bench/broker_load.py
#: reads their threads' CPU and their request logs.
RUNNING: dict[int, tuple[str, Path]] = {}
#: Whether the brokers started from now on log every completed request (``--request-log``; see
#: bench/broker_load.py). It costs them CPU per request: their CPU figures then mean nothing.
LOG_REQUESTS = False


@contextmanager
def kafka_brokers(names: tuple[str, ...], log_requests: bool = False,
                  config: dict[str, str] | None = None) -> Iterator[list[str]]:
    """Fresh single-node Apache Kafka clusters, one per name, stopped and deleted on exit (``log_requests``,
    or :data:`LOG_REQUESTS`: each logs every request it completed to its log, named in :data:`BROKER_LOGS`;
    ``config``: broker properties over the tier's)."""
    from tests.support.apache_kafka import SHIPPED_JVM_OPTIONS, KafkaBroker, KafkaStartError

    log_requests = log_requests or LOG_REQUESTS
    root = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    brokers: list[Any] = []
    try:
        for name in names:
            broker = KafkaBroker(name, root / name, heap_mb=KAFKA_HEAP_MB,
                                 jvm_options=(f"-Xms{KAFKA_HEAP_MB}m", *SHIPPED_JVM_OPTIONS),
                                 log_requests=log_requests, config=dict(config or {}))
            brokers.append(broker)
            try:
                broker.start()
            except KafkaStartError as exc:
                raise SystemExit(f"Apache Kafka broker {name} did not start: {exc}") from exc
            BROKER_LOGS[broker.bootstrap_servers] = broker.log_path
            if broker.process is not None:
                RUNNING[broker.process.pid] = (name, broker.log_path)
        yield [b.bootstrap_servers for b in brokers]
    finally:
        for broker in brokers:
            if broker.process is not None:
                RUNNING.pop(broker.process.pid, None)
            broker.stop()
        shutil.rmtree(root, ignore_errors=True)


#: The JVM's just-in-time compiler threads (HotSpot names them ``C1 CompilerThread0``, ``C2 CompilerThread1``...;
#: Linux keeps the first 15 characters).
COMPILER_THREADS = ("C1 CompilerThre", "C2 CompilerThre")

#: Per broker JVM: pid -> (CPU seconds so far, of which its JIT compiler threads').
BrokerCpu = dict[int, tuple[float, float]]


def broker_cpu() -> BrokerCpu:
    """The CPU so far of every Apache Kafka broker JVM on the machine (the benchmarks' brokers), and the
    share of their JIT compilers: a fresh broker compiles the code paths each new kind of client first
    takes, on the same cores as the copy it serves (bench/results.md, 2026-11-26 22:40)."""
    from bench.common import cpu_seconds  # bench.common imports this module
    from bench.thread_cpu import snapshot

    result: BrokerCpu = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"kafka.Kafka" not in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                continue  # the broker's main class, not a Java MirrorMaker
            jit = sum(cpu for name, cpu in snapshot(int(pid)).values() if name.startswith(COMPILER_THREADS))
        except OSError:
            continue
        result[int(pid)] = (cpu_seconds(int(pid)), jit)
    return result


def broker_cpu_since(before: BrokerCpu) -> tuple[float | None, float | None]:
    """CPU seconds of the brokers since ``before`` (:func:`broker_cpu`), and of their JIT compilers (a
    compiler thread that ended meanwhile is left out of the second figure: it is a lower bound); None
    without Kafka brokers (Tansu)."""
    if not before:
        return None, None
    after = broker_cpu()
    total = sum(now[0] - before.get(pid, (0.0, 0.0))[0] for pid, now in after.items())
    jit = sum(now[1] - before.get(pid, (0.0, 0.0))[1] for pid, now in after.items())
    return total, jit
