"""Java's MirrorMaker 2 as a copier of the benchmarks, beside ours, on Apache Kafka brokers only.

It runs ``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties`` (the Kafka tier's
tests/support/java_mm2.py: ``JavaMirrorMaker``, jars fetched once by Maven from
tests/kafka/mirrormaker/pom.xml) with the very mm2.properties our ``connect-mirror-maker`` gets in the
same benchmark (bench/replication.py's ``mm2_properties``: one flow A->B, one topic, RF 1, ACL sync off,
``tasks.max``), so the two differ only in the implementation. Everything else is MM2's default: the
checkpoint and heartbeat connectors on (``DEFAULT_FLOW``), Java's client defaults, Connect's plugin
discovery, and the JVM as ``connect-mirror-maker.sh`` starts it (``-Xms256M -Xmx2G`` and
``kafka-run-class.sh``'s G1 options, :func:`jvm`). Only with ``--broker kafka``: the comparison is meant
on the broker MM2's users run, and Java's MM2 was never tried against Tansu.

The process is the JVM itself (no wrapper script), so its CPU comes from ``/proc/<pid>/stat`` exactly
as our process's does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import kafka_brokers, replication

#: ``connect-mirror-maker.sh``'s heap (``KAFKA_HEAP_OPTS``); the rest is ``SHIPPED_JVM_OPTIONS``.
HEAP = ("-Xms256M", "-Xmx2G")


def jvm() -> tuple[str, ...]:
    """The JVM options of Java's MirrorMaker as its script starts it."""
    from tests.support.apache_kafka import SHIPPED_JVM_OPTIONS

    return (*HEAP, *SHIPPED_JVM_OPTIONS)


def version() -> str:
    from tests.support.java_mm2 import MIRRORMAKER_VERSION

    return MIRRORMAKER_VERSION


def require_kafka(what: str) -> None:
    """Java MM2 runs only against Apache Kafka brokers: a clear error otherwise."""
    if kafka_brokers.current() != "kafka":
        raise SystemExit(f"{what}: Java MirrorMaker 2 runs only with --broker kafka")


def start(workdir: Path, source: str, target: str, *, topic: str, source_alias: str, tasks: int = 1,
          extra: Mapping[str, str] | None = None) -> Any:
    """A started ``JavaMirrorMaker`` replicating ``topic`` to ``<source_alias>.<topic>`` on ``target``."""
    from tests.support.java_mm2 import JavaMirrorMaker

    props = replication.mm2_properties(source, target, source_alias=source_alias, topic=topic, tasks=tasks,
                                       extra=dict(extra or {}))
    path = workdir / f"java-mm2-{source_alias}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return JavaMirrorMaker(path, log=workdir / f"java-mm2-{source_alias}.log", jvm=jvm()).start()
