"""Java's MirrorMaker 2 as a copier of the benchmarks, beside ours, on Apache Kafka brokers only; two rows.

It runs ``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties`` (the Kafka tier's
tests/support/java_mm2.py: ``JavaMirrorMaker``, jars fetched once by Maven from
tests/kafka/mirrormaker/pom.xml) on the mm2.properties our ``connect-mirror-maker`` gets in the same
benchmark (bench/replication.py's ``mm2_properties``: one flow A->B, one topic, RF 1, ACL sync off,
``tasks.max``, the checkpoint and heartbeat connectors on at MM2's defaults for the flow as shipped),
with the JVM as ``connect-mirror-maker.sh`` starts it (``-Xms256M -Xmx2G`` and ``kafka-run-class.sh``'s
G1 options, :func:`jvm`). Only with ``--broker kafka``: the comparison is meant on the broker MM2's users
run, and Java's MM2 was never tried against Tansu.

What differs between the rows, and from ours:

* ``java-mm2-1``, **as shipped**: every client setting is Java's or Connect's default. Connect's task
  producer runs with ``max.in.flight.requests.per.connection=1`` and idempotence off (Connect's
  ``baseProducerConfigs``), 16 KB batches (``batch.size``), ``linger.ms`` 5, 32 MiB of ``buffer.memory``
  and fixed socket buffers; ours runs with librdkafka's and the task's settings (5 requests in flight,
  idempotent, 1 MB batches, ``linger.ms`` 10). It is timed from its first record on B, in a JVM that
  has just started: the JIT compiles during the copy, on the same two cores.
* ``java-mm2-1-tuned``, **tuned and warm**: the same, plus our task producer's and source consumer's
  settings translated to Java's keys (:func:`tuned_settings`, from the effective librdkafka configs of
  the task's clients as the shipped library reports them, ``bench/native_copier.py --dump``), set on
  the flow (``A->B.producer.override.*``, ``A->B.consumer.*``). And it is timed warm: the clock starts
  once B holds :data:`WARM_FRACTION` of the records, copied by the same JVM, and stops at the last; the
  rate and the CPU per record are over the rest. What is still not the same: librdkafka's pre-fetch queue
  (``queued.min.messages``) and its message-count cap per batch (``batch.num.messages``) have no Java
  keys, and ``enable.gapless.guarantee`` none either (Java's idempotent producer fails the same way on a
  gap, it does not skip).

Both rows report the CPU of the JVM's JIT compiler threads (``C1/C2 CompilerThre``) apart, over the
timed interval (bench/throughput.py). The process is the JVM itself (no wrapper script), so its CPU comes
from ``/proc/<pid>/stat`` exactly as our process's does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import kafka_brokers, replication

#: ``connect-mirror-maker.sh``'s heap (``KAFKA_HEAP_OPTS``); the rest is ``SHIPPED_JVM_OPTIONS``.
HEAP = ("-Xms256M", "-Xmx2G")
#: The Java modes of bench/throughput.py: as shipped, and tuned to our client settings and timed warm.
MODES = ("java-mm2-1", "java-mm2-1-tuned")
TUNED = ("java-mm2-1-tuned",)
#: Tuned and warm: the share of the records copied before the clock starts (by the same JVM).
WARM_FRACTION = 0.5
#: Java's integer maximum: what ``delivery.timeout.ms`` is when librdkafka's ``message.timeout.ms`` is 0
#: (never time out), and Connect's own setting.
JAVA_INT_MAX = 2**31 - 1


def jvm() -> tuple[str, ...]:
    """The JVM options of Java's MirrorMaker as its script starts it."""
    from tests.support.apache_kafka import SHIPPED_JVM_OPTIONS

    return (*HEAP, *SHIPPED_JVM_OPTIONS)


def version() -> str:
    from tests.support.java_mm2 import MIRRORMAKER_VERSION

    return MIRRORMAKER_VERSION


def require_kafka(what: str) -> None:
    """Java MM2 and Kafka's perf tools run only against Apache Kafka brokers: a clear error otherwise."""
    if kafka_brokers.current() != "kafka":
        raise SystemExit(f"{what}: Java MirrorMaker 2 and Kafka's perf tools run only with --broker kafka")


def java_client_settings(producer: Mapping[str, str], consumer: Mapping[str, str],
                         max_poll_records: int) -> dict[str, dict[str, str]]:
    """Java client keys for the settings of effective librdkafka configs (``rd_kafka_conf_dump`` keys).

    Each Java key is the same setting as the librdkafka key it comes from; a librdkafka socket buffer of
    0 (the operating system's, autotuned) is Java's -1, and ``message.timeout.ms`` 0 (never) Java's
    integer maximum. ``max_poll_records``: how many records one poll of our task returns.
    """
    acks = producer["request.required.acks"]
    timeout_ms = int(producer["message.timeout.ms"])
    return {
        "producer": {
            "acks": "all" if acks in ("-1", "all") else acks,
            "enable.idempotence": producer["enable.idempotence"],
            "max.in.flight.requests.per.connection": producer["max.in.flight.requests.per.connection"],
            "linger.ms": producer["queue.buffering.max.ms"],
            "batch.size": producer["batch.size"],
            "buffer.memory": str(int(producer["queue.buffering.max.kbytes"]) * 1024),
            "compression.type": producer["compression.codec"],
            "delivery.timeout.ms": str(JAVA_INT_MAX if timeout_ms == 0 else timeout_ms),
            "send.buffer.bytes": _socket_buffer(producer["socket.send.buffer.bytes"]),
            "receive.buffer.bytes": _socket_buffer(producer["socket.receive.buffer.bytes"]),
        },
        "consumer": {
            "fetch.min.bytes": consumer["fetch.min.bytes"],
            "fetch.max.bytes": consumer["fetch.max.bytes"],
            "max.partition.fetch.bytes": consumer["fetch.message.max.bytes"],
            "fetch.max.wait.ms": consumer["fetch.wait.max.ms"],
            "max.poll.records": str(max_poll_records),
            "isolation.level": consumer["isolation.level"],
            "receive.buffer.bytes": _socket_buffer(consumer["socket.receive.buffer.bytes"]),
        },
    }


def _socket_buffer(value: str) -> str:
    return "-1" if int(value) == 0 else value


def tuned_settings() -> dict[str, dict[str, str]]:
    """Our task producer's and source consumer's settings as Java client keys (see the module docstring)."""
    from bench import native_copier
    from mirror.source.task import MAX_POLL_RECORDS_DEFAULT

    with tempfile.TemporaryDirectory(prefix="java-tuned-") as tmp:
        configs = native_copier.effective_configs(Path(tmp))
    return java_client_settings(configs["producer"], configs["consumer"], MAX_POLL_RECORDS_DEFAULT)


def tuned_properties(flow: str, settings: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The mm2.properties entries that give the flow's task producers and source consumer ``settings``."""
    return {**{f"{flow}.producer.override.{key}": value for key, value in settings["producer"].items()},
            **{f"{flow}.consumer.{key}": value for key, value in settings["consumer"].items()}}


def start(workdir: Path, source: str, target: str, *, topic: str, source_alias: str, tasks: int = 1,
          extra: Mapping[str, str] | None = None, tuned: bool = False) -> Any:
    """A started ``JavaMirrorMaker`` replicating ``topic`` to ``<source_alias>.<topic>`` on ``target``
    (``tuned``: with :func:`tuned_settings` on the flow)."""
    from tests.support.java_mm2 import JavaMirrorMaker

    props = replication.mm2_properties(source, target, source_alias=source_alias, topic=topic, tasks=tasks,
                                       extra=dict(extra or {}))
    if tuned:
        props.update(tuned_properties(f"{source_alias}->B", tuned_settings()))
    path = workdir / f"java-mm2-{source_alias}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return JavaMirrorMaker(path, log=workdir / f"java-mm2-{source_alias}.log", jvm=jvm()).start()


def settings_table(settings: Mapping[str, Mapping[str, str]]) -> str:
    """Java's tuned settings as a markdown table, published beside its row."""
    lines = ["| Java MM2 tuned: client | key | value |", "|---|---|---|"]
    for client in ("producer", "consumer"):
        where = "task producer (`A->B.producer.override.`)" if client == "producer" else \
            "source consumer (`A->B.consumer.`)"
        lines += [f"| {where} | `{key}` | {value} |" for key, value in settings[client].items()]
    return "\n".join(lines)
