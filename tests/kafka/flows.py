"""Helpers of the Kafka tier: mm2.properties for Apache Kafka clusters, and reads as a user's consumer does.

Unlike the Tansu tiers, nothing here reads record batches by hand: Apache Kafka's ``read_committed`` is
trusted to drop aborted transactions, so :func:`read_committed` is a plain consumer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message

from connect_runtime.clients.log_reader import read_to_end
from tests.integration.support.mm2_process import mm2_properties
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import admin, unique
from tests.support.tls import properties


@dataclass(frozen=True)
class Endpoint:
    """How the driver reaches one cluster: the broker, a listener, a SASL mechanism, a user and its password
    (``None``: the fixture users' own)."""

    broker: KafkaBroker
    listener: str = "PLAINTEXT"
    mechanism: str | None = None
    user: str = "admin"
    password: str | None = None

    def client(self) -> dict[str, str]:
        return self.broker.client(self.listener, self.mechanism, self.user, self.password)


def write_mm2(path: Path, clusters: Mapping[str, KafkaBroker | Endpoint], body: str = "") -> Path:
    """An mm2.properties for Apache Kafka clusters (alias -> broker or endpoint), then ``body``.

    The Tansu fixed part (tests/integration/support/mm2_process.py) is reused; its ``sync.topic.acls.enabled
    = false`` (Tansu has no ACLs) is turned back on here: Apache Kafka has them.
    """
    endpoints = {a: c if isinstance(c, Endpoint) else Endpoint(c) for a, c in clusters.items()}
    security = "".join(properties(alias, {k: v for k, v in e.client().items() if k != "bootstrap.servers"})
                       for alias, e in endpoints.items())
    text = mm2_properties({a: e.client()["bootstrap.servers"] for a, e in endpoints.items()},
                          # literal secrets (the point of these files) stored as ${mm2:<key>} references: no Java node
                          # runs these flows, and Java's stored form would refuse them
                          security + "sync.topic.acls.enabled = true\nconfigs.topic.compatibility = python\n" + body)
    path.write_text(text, encoding="utf-8")
    return path


def read_committed(bootstrap: str, topic: str, timeout_s: float = 30.0) -> list[Message]:
    """Every committed record of ``topic`` up to its last stable offset: a plain read_committed consumer."""
    return _read(bootstrap, topic, "read_committed", timeout_s)


def read_uncommitted(bootstrap: str, topic: str, timeout_s: float = 30.0) -> list[Message]:
    return _read(bootstrap, topic, "read_uncommitted", timeout_s)


def _read(bootstrap: str, topic: str, isolation: str, timeout_s: float) -> list[Message]:
    partitions = admin(bootstrap).list_topics(topic, timeout=10).topics[topic].partitions
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("kafka-reader"),
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", "isolation.level": isolation})
    out: list[Message] = []

    def fail(err: KafkaError) -> None:
        raise AssertionError(f"consume error on {topic}: {err}")

    try:
        reached = read_to_end(consumer, {(topic, p): OFFSET_BEGINNING for p in partitions}, out.extend,
                              timeout_s, on_error=fail)
        assert reached.complete, f"{topic} not read to its end within {timeout_s}s"
    finally:
        consumer.close()
    return out


def wait_for_records(bootstrap: str, topic: str, count: int, timeout_s: float = 60.0,
                     committed: bool = False) -> list[Message]:
    """Read ``topic`` until it holds at least ``count`` records; fails with what it saw on timeout."""
    deadline = time.monotonic() + timeout_s
    seen: list[Message] = []
    while time.monotonic() < deadline:
        if topic in admin(bootstrap).list_topics(timeout=10).topics:
            seen = (read_committed if committed else read_uncommitted)(bootstrap, topic)
            if len(seen) >= count:
                return seen
        time.sleep(0.5)
    raise AssertionError(f"{topic}: {len(seen)} records after {timeout_s}s, expected {count}")
