"""KIP-558 topic statuses: which topics a connector has used, kept in the status topic.

Java's format (``KafkaStatusBackingStore``), so Java and Python workers of one cluster read each other's:

* key ``status-topic-<topic>:connector-<connector>`` (a topic name never holds ``:``, so the first
  ``:connector-`` ends the topic);
* value ``{"topic":{"name":<topic>,"connector":<connector>,"task":<n>,"discoverTimestamp":<epoch ms>}}``,
  compact JSON in that field order, as JsonConverter writes the struct; a null value (tombstone) is
  written when the topics are reset or the connector is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_runtime.storage.config_records import dumps

TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"


def topic_status_key(topic: str, connector: str) -> bytes:
    return f"{TOPIC_STATUS_PREFIX}{topic}{TOPIC_STATUS_SEPARATOR}{connector}".encode()


def parse_topic_status_key(key: str) -> tuple[str, str] | None:
    """``status-topic-<t>:connector-<c>`` -> (t, c); None for any other key."""
    if not key.startswith(TOPIC_STATUS_PREFIX):
        return None
    topic, sep, connector = key[len(TOPIC_STATUS_PREFIX):].partition(TOPIC_STATUS_SEPARATOR)
    if not sep or not topic or not connector:
        return None
    return topic, connector


@dataclass(frozen=True, slots=True)
class TopicStatus:
    """A topic ``connector``'s task ``task`` first produced to at ``discover_timestamp`` (epoch ms)."""

    topic: str
    connector: str
    task: int
    discover_timestamp: int

    @property
    def key(self) -> bytes:
        return topic_status_key(self.topic, self.connector)

    def value(self) -> bytes:
        return dumps({"topic": {"name": self.topic, "connector": self.connector, "task": self.task,
                                "discoverTimestamp": self.discover_timestamp}})

    @staticmethod
    def parse(value: Mapping[str, Any]) -> TopicStatus:
        """From the decoded JSON value; KeyError/TypeError/ValueError when malformed."""
        body = value["topic"]
        return TopicStatus(str(body["name"]), str(body["connector"]), int(body["task"]),
                           int(body["discoverTimestamp"]))
