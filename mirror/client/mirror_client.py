"""Read MM2's footprint on one cluster: heartbeats, checkpoints, remote topics (Kafka ``MirrorClient``).

A :class:`MirrorClient` talks to **one** cluster, the "local" one, and answers topology questions from
topic names alone (heartbeat topics such as ``b.a.heartbeats`` trace the replication graph) and offset
questions from the checkpoints topic. The module functions at the bottom are Kafka's
``RemoteClusterUtils``: build a client, ask one question, close it.

Config (Kafka ``MirrorClientConfig``):

* ``replication.policy.*`` and ``source.cluster.alias`` configure the :class:`ReplicationPolicy`; they are
  never handed to librdkafka.
* Plain connection keys (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``,
  ``client.id``) go to both internal clients. Other plain keys are ignored, as in Java, because the
  config is often a whole ``mm2.properties`` view whose other keys are not client settings.
* ``admin.X`` / ``consumer.X`` override the plain values for that client. Unlike Java, which keeps only
  connection keys there too, any librdkafka setting is accepted under these prefixes (it is the only way
  to tune the clients). ``producer.*`` is ignored: the client does not produce.
* A config with Java client keys (``MirrorMakerConfig.client_config(alias)``, an ``mm2.properties`` view) is
  made librdkafka's first by :func:`mirror_client_config`: librdkafka would refuse the Java keys.

The checkpoints topic is read to its end using the **fetch high watermark** (``enable.partition.eof``),
never ListOffsets (:func:`connect_runtime.clients.log_reader.read_to_end`): that is exact on Kafka and on
brokers where ListOffsets "latest" is not (Tansu).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Literal, Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message

from connect_runtime.clients.factory import new_admin, new_consumer, translate
from connect_runtime.clients.librdkafka_logging import LIBRDKAFKA_LOG
from connect_runtime.clients.log_reader import read_to_end
from mirror.client.models import Checkpoint, MalformedRecordError, OffsetAndMetadata, TopicPartition
from mirror.client.replication_policy import SOURCE_CLUSTER_ALIAS, ReplicationPolicy, policy_from_config

logger = logging.getLogger(__name__)

ADMIN_CLIENT_PREFIX = "admin."
CONSUMER_CLIENT_PREFIX = "consumer."
PRODUCER_CLIENT_PREFIX = "producer."
FORWARDING_ADMIN_CLASS = "forwarding.admin.class"
DEFAULT_TIMEOUT_S = 30.0
_CONNECTION_KEYS = frozenset({"bootstrap.servers", "security.protocol", "client.id"})
_CONNECTION_PREFIXES = ("ssl.", "sasl.")
_AUTHORIZATION_CODES = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError.SASL_AUTHENTICATION_FAILED,
    }
)


class _TopicLister(Protocol):
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...


def is_connection_key(key: str) -> bool:
    """A connection/security key (Java ``MirrorClientConfig.CLIENT_CONFIG_DEF``, plus ``client.id``)."""
    return key in _CONNECTION_KEYS or key.startswith(_CONNECTION_PREFIXES)


def client_properties(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """One internal client's keys (Java ``MirrorClientConfig.adminConfig``/``consumerConfig``): the
    connection keys of ``config`` overlaid with its ``prefix`` keys (``admin.``, ``consumer.``), stripped.

    Every MirrorClient config is cut this way, the Java ones of ``mm2.properties`` too
    (:func:`reader_config`). The prefix is stripped here rather than with ``connect_runtime.api.prefixed_keys``,
    the same rule: ``mirror.client`` may import nothing of the runtime but ``connect_runtime.clients``."""
    result = {key: value for key, value in config.items() if is_connection_key(key)}
    result.update({key[len(prefix) :]: value for key, value in config.items()
                   if key.startswith(prefix) and len(key) > len(prefix)})
    return result


def client_config(config: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """The librdkafka config for one internal client: :func:`client_properties`.

    Values become strings except Python objects confluent-kafka takes as they are (a token callback
    ``oauth_cb``, a ``logger``)."""
    result = {key: _value(value) for key, value in client_properties(config, prefix).items()}
    # A metadata request for a missing topic must not create it (Kafka brokers with auto-create on,
    # and Tansu, would); the checkpoints topic in particular must only ever be created by MM2.
    result["allow.auto.create.topics"] = "false"
    return result


def _value(value: Any) -> Any:
    return str(value) if value is None or isinstance(value, (str, int, float, bool)) else value


ReaderKind = Literal["admin", "consumer"]


def reader_config(raw: Mapping[str, str], kind: ReaderKind) -> dict[str, Any]:
    """The librdkafka config of the ``kind`` client that reads a cluster as a MirrorClient does, from a
    Java ``MirrorClientConfig`` map (``MirrorMakerConfig.client_config(alias)``): its connection keys
    overlaid with its ``<kind>.`` keys (:func:`client_properties`), translated from Java by the runtime's
    client translation (``ssl.truststore.location`` becomes ``ssl.ca.pem``, ``sasl.jaas.config`` a user and
    password). ``mirror offsets translate``, ``mirror cutover``, the translation endpoint, the health probe
    and ``mirror check`` all build their clients from it."""
    return translate(client_properties(raw, f"{kind}."), kind)


def mirror_client_config(raw: Mapping[str, str], client_label: str = "") -> dict[str, Any]:
    """A MirrorClient config from ``MirrorMakerConfig.client_config``: Java client keys made librdkafka's.

    Each internal client's config (:func:`reader_config`) comes back under its prefix, with librdkafka's
    log lines sent to Python logging; the ``replication.policy.*`` keys are kept as they are.
    ``client_label`` (who reads, for what) names the clients ``[<user client.id>|]<client_label>|<kind>``,
    the form of the tasks' clients, so that brokers tell those reads apart (librdkafka's default id is
    ``rdkafka``); without it the user's ``client.id``, if any, is kept as it is, as Java's MirrorClient does."""
    config: dict[str, Any] = {k: v for k, v in raw.items() if k.startswith("replication.policy.")}
    kinds: tuple[tuple[str, ReaderKind], ...] = ((ADMIN_CLIENT_PREFIX, "admin"), (CONSUMER_CLIENT_PREFIX, "consumer"))
    for prefix, kind in kinds:
        client = reader_config(raw, kind)
        if client_label:
            client["client.id"] = "|".join(filter(None, (client.get("client.id"), client_label, kind)))
        config.update({prefix + k: v for k, v in client.items()})
        config[prefix + "logger"] = LIBRDKAFKA_LOG  # librdkafka's lines through Python logging
    return config


def heartbeat_topics_in(policy: ReplicationPolicy, topics: Iterable[str]) -> set[str]:
    """The heartbeats topics among ``topics``: ``heartbeats``, ``a.heartbeats``, ``b.a.heartbeats``, ..."""
    return {topic for topic in topics if policy.is_heartbeats_topic(topic)}


def all_sources(policy: ReplicationPolicy, topic: str) -> set[str]:
    """Every alias in the name chain of ``topic``; stops at a repeated alias (identity-like policies)."""
    sources: set[str] = set()
    current: str | None = topic
    source = policy.topic_source(topic)
    while source is not None and source not in sources:
        sources.add(source)
        current = policy.upstream_topic(current) if current is not None else None
        if current is None:
            break
        source = policy.topic_source(current)
    return sources


def count_hops(policy: ReplicationPolicy, topic: str, source_cluster_alias: str) -> int:
    """Hops from ``source_cluster_alias`` along the name chain of ``topic``; -1 if not on the chain."""
    hops = 0
    visited: set[str] = set()
    current: str | None = topic
    while current is not None:
        hops += 1
        source = policy.topic_source(current)
        if source is None:
            return -1
        if source == source_cluster_alias:
            return hops
        if source in visited:
            # A policy that cannot prevent cycles (identity) would loop for ever: assume we never get there.
            return -1
        visited.add(source)
        current = policy.upstream_topic(current)
    return -1


def is_remote_topic(policy: ReplicationPolicy, topic: str) -> bool:
    """A replicated data topic: not internal, and its name has a source alias."""
    return not policy.is_internal_topic(topic) and policy.topic_source(topic) is not None


class MirrorClient:
    """Answers MM2 topology and offset questions about one cluster. Not thread-safe; close when done.

    Args:
        config: client config (see module docstring) with ``bootstrap.servers`` and optional
            ``replication.policy.*`` keys.
        admin: an admin client to use instead of building one (tests inject a fake here).
        consumer_factory: builds the consumer that reads the checkpoints topic (default: the client
            factory's ``new_consumer``).
    """

    def __init__(
        self,
        config: Mapping[str, str],
        *,
        admin: _TopicLister | None = None,
        consumer_factory: Callable[[dict[str, str]], Consumer] | None = None,
    ) -> None:
        self._policy = policy_from_config(config)
        self._admin_config = client_config(config, ADMIN_CLIENT_PREFIX)
        self._consumer_config = client_config(config, CONSUMER_CLIENT_PREFIX)
        if FORWARDING_ADMIN_CLASS in config:
            logger.warning(
                "%s is a Java plugin hook and is ignored by the Python MirrorClient", FORWARDING_ADMIN_CLASS
            )
        self._admin = admin
        self._consumer_factory = consumer_factory or new_consumer
        ignored = sorted(
            k
            for k in config
            if not is_connection_key(k)
            and not k.startswith(
                (ADMIN_CLIENT_PREFIX, CONSUMER_CLIENT_PREFIX, PRODUCER_CLIENT_PREFIX, "replication.policy.")
            )
            and k not in (SOURCE_CLUSTER_ALIAS, FORWARDING_ADMIN_CLASS)
        )
        if ignored:
            logger.debug("MirrorClient ignores non-client keys: %s", ignored)

    def __enter__(self) -> MirrorClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the admin client. The checkpoint consumer is closed after each read already."""
        self._admin = None

    def replication_policy(self) -> ReplicationPolicy:
        """The policy used to interpret topic names on this cluster."""
        return self._policy

    def _admin_client(self) -> _TopicLister:
        if self._admin is None:
            self._admin = new_admin(self._admin_config)
        return self._admin

    def list_topics(self, timeout_s: float = DEFAULT_TIMEOUT_S) -> set[str]:
        """All topic names on the cluster. Raises ``confluent_kafka.KafkaException`` on failure."""
        metadata = self._admin_client().list_topics(timeout=timeout_s)
        return set(metadata.topics)

    def heartbeat_topics(self) -> set[str]:
        """All heartbeats topics here: ``heartbeats`` and its copies ``a.heartbeats``, ``b.a.heartbeats``."""
        return heartbeat_topics_in(self._policy, self.list_topics())

    def checkpoint_topics(self) -> set[str]:
        """All ``<alias>.checkpoints.internal`` topics here."""
        return {topic for topic in self.list_topics() if self._policy.is_checkpoints_topic(topic)}

    def upstream_clusters(self) -> set[str]:
        """Every cluster that replicates into this one, however many hops away, from heartbeat topic names."""
        clusters: set[str] = set()
        for topic in self.heartbeat_topics():
            clusters |= all_sources(self._policy, topic)
        return clusters

    def replication_hops(self, upstream_cluster_alias: str) -> int:
        """Shortest hop count from ``upstream_cluster_alias`` (A->B->C: 2 from A to C); -1 if unreachable."""
        hops = [count_hops(self._policy, topic, upstream_cluster_alias) for topic in self.heartbeat_topics()]
        reachable = [h for h in hops if h != -1]
        return min(reachable) if reachable else -1

    def remote_topics(self, source: str | None = None) -> set[str]:
        """Replicated topics here; with ``source``, only those replicated directly (one hop) from it."""
        remote = {topic for topic in self.list_topics() if is_remote_topic(self._policy, topic)}
        if source is None:
            return remote
        return {topic for topic in remote if self._policy.topic_source(topic) == source}

    def remote_consumer_offsets(
        self, consumer_group_id: str, remote_cluster_alias: str, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Translate a group of ``remote_cluster_alias`` into offsets of this cluster, from checkpoints.

        Reads ``checkpointsTopic(remote_cluster_alias)`` partition 0 from the beginning to its end (the
        fetch high watermark) and keeps the **last** checkpoint per topic-partition for the group. Keys are
        local (renamed) topic-partitions such as ``("primary.orders", 3)``. Undecodable records are
        skipped with a warning. If ``timeout_s`` passes first, the partial result is returned. A missing
        checkpoints topic gives an empty result.
        """
        topic = self._policy.checkpoints_topic(remote_cluster_alias)
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        if topic not in self.list_topics(timeout_s):
            logger.warning(
                "Checkpoints topic %s does not exist; no offsets for group %s from %s",
                topic,
                consumer_group_id,
                remote_cluster_alias,
            )
            return offsets
        config = dict(self._consumer_config)
        config.setdefault("group.id", "mirror-client")  # librdkafka requires one; assign() never joins it
        config.setdefault("isolation.level", "read_uncommitted")  # Java consumer default
        config.update(
            {"enable.auto.commit": "false", "enable.partition.eof": "true", "auto.offset.reset": "earliest"}
        )
        consumer = self._consumer_factory(config)
        try:
            complete, records = self._read_to_end(consumer, topic, consumer_group_id, offsets, timeout_s)
        finally:
            consumer.close()
        if complete:
            logger.info(
                "Consumed %d checkpoint records (%d partitions) for %s from %s.",
                records,
                len(offsets),
                consumer_group_id,
                topic,
            )
        else:
            logger.warning(
                "Timed out after %.1fs reading %s; returning %d partitions for %s (may be partial)",
                timeout_s,
                topic,
                len(offsets),
                consumer_group_id,
            )
        return offsets

    @staticmethod
    def _read_to_end(
        consumer: Consumer,
        topic: str,
        group: str,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        timeout_s: float,
    ) -> tuple[bool, int]:
        records = 0

        def keep(batch: list[Message]) -> None:
            nonlocal records
            records += len(batch)
            for msg in batch:
                try:
                    checkpoint = Checkpoint.from_record(msg.key(), msg.value())
                except MalformedRecordError as exc:
                    logger.warning(
                        "Could not deserialize record %s[%d]@%d. Skipping: %s",
                        topic,
                        msg.partition(),
                        msg.offset(),
                        exc,
                    )
                    continue
                if checkpoint.consumer_group_id == group:
                    offsets[checkpoint.topic_partition] = checkpoint.offset_and_metadata()

        def unless_unrecoverable(err: KafkaError) -> None:
            if err.fatal() or err.code() in _AUTHORIZATION_CODES:
                raise KafkaException(err)
            # Connection blips and the like: librdkafka recovers by itself, so keep reading until
            # the deadline, as Java's poll loop does.
            logger.warning("Error reading %s (will keep trying until the deadline): %s", topic, err)

        reached = read_to_end(
            consumer,
            {(topic, 0): OFFSET_BEGINNING},
            keep,
            timeout_s,
            on_error=unless_unrecoverable,
            missing_ok=True,
        )
        if reached.missing:
            logger.warning("Checkpoints topic %s disappeared while reading", topic)
        return reached.complete, records


# ------------------------------------------------------------------ RemoteClusterUtils: one call, one client


def translate_offsets(
    config: Mapping[str, str],
    remote_cluster_alias: str,
    consumer_group_id: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """Offsets on the cluster of ``config`` for group ``consumer_group_id`` of ``remote_cluster_alias``."""
    with MirrorClient(config) as client:
        return client.remote_consumer_offsets(consumer_group_id, remote_cluster_alias, timeout_s)


def replication_hops(config: Mapping[str, str], upstream_cluster_alias: str) -> int:
    """Shortest hop count from ``upstream_cluster_alias`` to the cluster of ``config``; -1 if unreachable."""
    with MirrorClient(config) as client:
        return client.replication_hops(upstream_cluster_alias)


def heartbeat_topics(config: Mapping[str, str]) -> set[str]:
    """All heartbeats topics on the cluster of ``config``."""
    with MirrorClient(config) as client:
        return client.heartbeat_topics()


def checkpoint_topics(config: Mapping[str, str]) -> set[str]:
    """All checkpoints topics on the cluster of ``config``."""
    with MirrorClient(config) as client:
        return client.checkpoint_topics()


def upstream_clusters(config: Mapping[str, str]) -> set[str]:
    """All clusters replicating (directly or not) into the cluster of ``config``."""
    with MirrorClient(config) as client:
        return client.upstream_clusters()
