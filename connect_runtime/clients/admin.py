"""TopicAdmin: the admin operations the runtime and MM2 need, over confluent-kafka's AdminClient.

Every method resolves its futures before returning and translates client errors into the runtime's
exception tree (:mod:`connect_runtime.clients.errors`). The AdminClient is held by the TopicAdmin for
its whole life: a destroyed client fails its pending futures with ``_DESTROY``, so never build one per
call inside an expression.

Remote topics are created in batches (:meth:`TopicAdmin.create_topics`, Java's ``Admin.createTopics`` as MM2
calls it): a cluster of thousands of topics is created in a few requests, not one round trip per topic, and
topics the target throttles are sent again after a backoff. KIP-599's ``controller_mutation_rate`` quota
answers THROTTLING_QUOTA_EXCEEDED per topic to a CreateTopics of version 6 or later (Java's admin client
retries those); librdkafka sends version 4, which Kafka throttles permissively instead: it creates the
topics and delays the connection's next request, so the next batch waits.

Tolerances follow Java (``MirrorUtils.createCompactedTopic``, ``TopicAdmin``): topic creation treats
"already exists", "unsupported" and authorization errors as "assume it exists" and raises on invalid
config or timeout; partition growth that the cluster cannot do (``UNSUPPORTED_FEATURE``, e.g. Tansu)
is one WARNING naming the topic, not a crash.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from connect_runtime.api.errors import ConnectError
from connect_runtime.clients.errors import kafka_error_of, map_kafka_errors, to_connect_error
from connect_runtime.clients.factory import new_admin

logger = logging.getLogger(__name__)

#: Topics the broker itself owns; ``list_topics`` hides them unless asked (Java's ``listInternal``).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

#: createCompactedTopic's "assume it exists" codes.
_CREATE_TOLERATED = {
    KafkaError.TOPIC_ALREADY_EXISTS: "it already exists",
    KafkaError.UNSUPPORTED_VERSION: "the brokers do not support the CreateTopics API",
    KafkaError._UNSUPPORTED_FEATURE: "the brokers do not support the CreateTopics API",
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "the principal lacks permission to create topics",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "the principal lacks permission to create topics",
}

_PARTITIONS_UNSUPPORTED = frozenset({
    KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION, KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
})

_OPS = {"SET": AlterConfigOpType.SET, "DELETE": AlterConfigOpType.DELETE,
        "APPEND": AlterConfigOpType.APPEND, "SUBTRACT": AlterConfigOpType.SUBTRACT}


class TopicConfigEntry(NamedTuple):
    """One topic config as the cluster reports it; ``source`` is the ConfigSource name."""

    name: str
    value: str | None
    source: str
    is_default: bool
    read_only: bool
    sensitive: bool


ConfigOp = tuple[str, str, str | None]  # (name, "SET" | "DELETE" | "APPEND" | "SUBTRACT", value)

#: A CreateTopics request holds at most this many partitions (the topics of one batch summed): KRaft
#: controllers have bounded the metadata records one request may write (10,000 in Kafka 3.x: one per
#: partition, topic and config), and a refused request then costs one batch, not the whole cluster's.
CREATE_BATCH_PARTITIONS = 2_000
#: Topics per DescribeTopics / DescribeConfigs call. An answer is Python objects per topic (each partition's
#: leader, replicas and ISR as Node objects; some forty ConfigEntry objects), and every topic of a large
#: cluster in one call held them all at once: each call is read down to what is kept before the next is
#: asked. librdkafka sends a call as one request per broker, so thousands of topics stay a few requests.
DESCRIBE_CHUNK = 200
#: Backoff of topics the target throttled (THROTTLING_QUOTA_EXCEEDED): the first wait, doubling up to the cap.
#: librdkafka does not hand the response's throttle time to Python; a quota's window refills in seconds.
THROTTLE_BACKOFF_S = (1.0, 10.0)
#: ListConsumerGroupOffsets requests one :meth:`TopicAdmin.list_consumer_group_offsets` call keeps in flight:
#: enough that a thousand groups cost a few round trips to their coordinators rather than a thousand, few
#: enough that a large cluster's groups do not queue thousands of requests on one broker connection at once.
GROUP_OFFSETS_IN_FLIGHT = 64


class TopicSpec(NamedTuple):
    """One topic to create: partitions and replication factor (-1: the broker's default) and its configs."""

    partitions: int = -1
    replication_factor: int = -1
    config: Mapping[str, str] = {}


class CreateOutcome(NamedTuple):
    """What :meth:`TopicAdmin.create_topics` did, topic by topic."""

    created: list[str]
    #: Existing, or assumed to (the tolerated errors of :meth:`TopicAdmin.create_topic`).
    existed: list[str]
    #: Still throttled by the target when the deadline came: the caller tries again later.
    throttled: list[str]
    #: Refused for another reason, or the request failed: topic -> the error.
    failed: dict[str, str]
    #: Never sent: the caller asked to stop.
    skipped: list[str]


def create_batches(topics: Mapping[str, TopicSpec], max_partitions: int = CREATE_BATCH_PARTITIONS
                   ) -> list[list[tuple[str, TopicSpec]]]:
    """``topics`` in order, cut into batches of at most ``max_partitions`` partitions (a topic whose count is
    the broker's default, -1, counts as one; a topic larger than the limit is a batch of its own)."""
    batches: list[list[tuple[str, TopicSpec]]] = []
    size = max_partitions
    for name, spec in topics.items():
        count = max(1, spec.partitions)
        if size + count > max_partitions:
            batches.append([])
            size = 0
        batches[-1].append((name, spec))
        size += count
    return batches


def _code(exc: BaseException) -> int | None:
    error = kafka_error_of(exc)
    return error.code() if error is not None else None


class TopicAdmin:
    """Admin operations on one cluster. ``config`` is a librdkafka admin config (see the factory).

    ``client`` replaces the AdminClient (tests use a fake that records calls). Thread-safe as far as
    the AdminClient is; ``timeout_s`` bounds every request.
    """

    def __init__(self, config: Mapping[str, Any], *, client: AdminClient | None = None,
                 timeout_s: float = 30.0) -> None:
        self._client = client if client is not None else new_admin(config)
        self._timeout_s = timeout_s

    @property
    def client(self) -> AdminClient:
        return self._client

    def _wait(self, future: Future[Any], context: str) -> Any:
        with map_kafka_errors(context):
            try:
                return future.result(timeout=self._timeout_s)
            except TimeoutError as exc:  # concurrent.futures.TimeoutError is TimeoutError on 3.11
                raise ConnectError(f"{context}: timed out after {self._timeout_s}s") from exc

    # -- topics ---------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = -1, replication_factor: int = -1,
                     config: Mapping[str, str] | None = None, *, compacted: bool = False) -> bool:
        """Create ``name``; True if this call created it, False if it exists (or is assumed to).

        ``-1`` partitions / replication factor take the broker defaults. ``compacted`` forces
        ``cleanup.policy=compact`` as Connect does for its internal topics. Raises ConnectError on an
        invalid config, a timeout or any error not in the tolerated list.
        """
        topic_config = dict(config or {})
        if compacted:
            topic_config["cleanup.policy"] = "compact"
        new_topic = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                             config=topic_config)
        timeout_ms = int(self._timeout_s * 1000)
        with map_kafka_errors(f"creating topic {name}"):
            future = self._client.create_topics([new_topic], operation_timeout=self._timeout_s,
                                                request_timeout=self._timeout_s)[name]
        try:
            future.result(timeout=self._timeout_s + 5)
        except KafkaException as exc:
            code = _code(exc)
            reason = _CREATE_TOLERATED.get(code) if code is not None else None
            if reason is None:
                if code in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT):
                    raise ConnectError(
                        f"Timed out after {timeout_ms} ms while checking for or creating topic '{name}'. "
                        "This could indicate a connectivity issue, unavailable topic partitions, or if this "
                        "is your first use of the topic it may have taken too long to create.") from exc
                raise to_connect_error(exc, f"Unable to create topic '{name}'") from exc
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                logger.debug("Unable to create topic '%s' since %s", name, reason)
            else:
                logger.warning("Unable to create topic '%s' since %s; assuming it exists or will be "
                               "auto-created by the broker", name, reason)
            return False
        except TimeoutError as exc:
            raise ConnectError(f"Timed out while checking for or creating topic '{name}'") from exc
        logger.info("Created topic '%s' (partitions %s, replication factor %s)", name, partitions,
                    replication_factor)
        return True

    def create_topics(self, topics: Mapping[str, TopicSpec], deadline_s: float | None = None,
                      stop: threading.Event | None = None) -> CreateOutcome:
        """Create many topics in few requests: batches of at most :data:`CREATE_BATCH_PARTITIONS` partitions,
        each batch's answers awaited together; nothing raises for one topic.

        A topic the target throttled (THROTTLING_QUOTA_EXCEEDED) is sent again after
        :data:`THROTTLE_BACKOFF_S` (doubling) until ``deadline_s`` seconds have passed (default: the admin
        timeout); what is still throttled then is in ``throttled``. ``stop`` set ends the call at the next
        batch or backoff (the rest in ``skipped``): a connector stopping does not wait for a large creation.
        The per-topic line is at DEBUG: at thousands of topics the caller logs the outcome once.
        """
        outcome = CreateOutcome([], [], [], {}, [])
        stop = stop if stop is not None else threading.Event()
        deadline = time.monotonic() + (self._timeout_s if deadline_s is None else deadline_s)
        pending = dict(topics)
        backoff, cap = THROTTLE_BACKOFF_S
        while pending:
            throttled = self._create_batches(pending, outcome, stop)
            if not throttled:
                break
            wait = min(backoff, deadline - time.monotonic())
            if wait <= 0:
                outcome.throttled.extend(throttled)
                break
            logger.info("The target throttled the creation of %d topic(s) (its controller_mutation_rate quota); "
                        "sending them again in %.1f s", len(throttled), wait)
            if stop.wait(wait):
                outcome.skipped.extend(throttled)
                break
            backoff = min(backoff * 2, cap)
            pending = {name: topics[name] for name in throttled}
        return outcome

    def _create_batches(self, topics: Mapping[str, TopicSpec], outcome: CreateOutcome,
                        stop: threading.Event) -> list[str]:
        """One pass over ``topics`` in batches; returns the throttled ones."""
        throttled: list[str] = []
        for batch in create_batches(topics):
            if stop.is_set():
                outcome.skipped.extend(name for name, _ in batch)
                continue
            new = [NewTopic(name, num_partitions=spec.partitions, replication_factor=spec.replication_factor,
                            config=dict(spec.config)) for name, spec in batch]
            try:
                with map_kafka_errors(f"creating {len(new)} topics"):
                    futures = self._client.create_topics(new, operation_timeout=self._timeout_s,
                                                         request_timeout=self._timeout_s)
            except ConnectError as exc:
                outcome.failed.update((name, str(exc)) for name, _ in batch)
                continue
            for name, future in futures.items():
                try:
                    future.result(timeout=self._timeout_s + 5)
                except KafkaException as exc:
                    code = _code(exc)
                    if code == KafkaError.THROTTLING_QUOTA_EXCEEDED:
                        throttled.append(name)
                    elif code is not None and code in _CREATE_TOLERATED:
                        outcome.existed.append(name)
                        if code != KafkaError.TOPIC_ALREADY_EXISTS:
                            logger.warning("Unable to create topic '%s' since %s; assuming it exists or will be "
                                           "auto-created by the broker", name, _CREATE_TOLERATED[code])
                    else:
                        error = kafka_error_of(exc)
                        outcome.failed[name] = f"{error.name()}: {error.str()}" if error is not None else str(exc)
                except TimeoutError:
                    outcome.failed[name] = f"timed out after {self._timeout_s}s"
                else:
                    outcome.created.append(name)
                    logger.debug("Created topic '%s' (%s)", name, topics[name])
        return throttled

    def describe_topics(self, names: Iterable[str]) -> dict[str, int]:
        """Partition count per existing topic; unknown topics are left out."""
        names = list(names)
        result: dict[str, int] = {}
        for start in range(0, len(names), DESCRIBE_CHUNK):
            with map_kafka_errors("describing topics"):
                futures = self._client.describe_topics(TopicCollection(names[start:start + DESCRIBE_CHUNK]),
                                                       request_timeout=self._timeout_s)
            for name, future in futures.items():
                try:
                    description = future.result(timeout=self._timeout_s)
                except KafkaException as exc:
                    if _code(exc) == KafkaError.UNKNOWN_TOPIC_OR_PART:
                        continue
                    raise to_connect_error(exc, f"describing topic {name}") from exc
                result[name] = len(description.partitions)
        return result

    def list_topics(self, include_internal: bool = False) -> set[str]:
        with map_kafka_errors("listing topics"):
            names = set(self._client.list_topics(timeout=self._timeout_s).topics)
        return names if include_internal else names - INTERNAL_TOPICS

    def describe_configs(self, topics: Iterable[str]) -> dict[str, list[TopicConfigEntry]]:
        """Every config of each topic, with source/default/read-only/sensitive flags as reported.

        Names and values are interned: thousands of topics report the same few dozen names, and mostly the
        same default values, each as a string of its own."""
        names = list(topics)
        result: dict[str, list[TopicConfigEntry]] = {}
        for start in range(0, len(names), DESCRIBE_CHUNK):
            resources = [ConfigResource(ResourceType.TOPIC, t) for t in names[start:start + DESCRIBE_CHUNK]]
            with map_kafka_errors("describing topic configs"):
                futures = self._client.describe_configs(resources, request_timeout=self._timeout_s)
            for resource, future in futures.items():
                entries: dict[str, ConfigEntry] = self._wait(future, f"describing configs of {resource.name}")
                result[resource.name] = [
                    TopicConfigEntry(sys.intern(e.name), None if e.value is None else sys.intern(e.value),
                                     getattr(e.source, "name", str(e.source)), bool(e.is_default),
                                     bool(e.is_read_only), bool(e.is_sensitive))
                    for e in entries.values()]
        return result

    def incremental_alter_configs(self, changes: Mapping[str, Sequence[ConfigOp]]) -> None:
        """Apply ``{topic: [(name, op, value)]}`` with op SET / DELETE (APPEND / SUBTRACT also taken)."""
        resources = []
        for topic, ops in changes.items():
            if not ops:
                continue
            entries = [ConfigEntry(name, value, incremental_operation=_OPS[op.upper()])
                       for name, op, value in ops]
            resources.append(ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries))
        if not resources:
            return
        with map_kafka_errors("altering topic configs"):
            futures = self._client.incremental_alter_configs(resources, request_timeout=self._timeout_s)
        for resource, future in futures.items():
            self._wait(future, f"altering configs of topic {resource.name}")

    def create_partitions(self, counts: Mapping[str, int]) -> set[str]:
        """Grow topics to the given partition counts; returns the topics that grew.

        A cluster that cannot add partitions (``UNSUPPORTED_FEATURE``, as on Tansu, or no permission)
        gets one WARNING per topic and the topic is left as is: the caller carries on with fewer
        partitions rather than crashing. A count that is already reached is not an error.
        """
        if not counts:
            return set()
        with map_kafka_errors("creating partitions"):
            futures = self._client.create_partitions([NewPartitions(t, n) for t, n in counts.items()],
                                                     request_timeout=self._timeout_s)
        grown: set[str] = set()
        for topic, future in futures.items():
            try:
                future.result(timeout=self._timeout_s)
            except KafkaException as exc:
                error = kafka_error_of(exc)
                code = error.code() if error is not None else None
                if code in _PARTITIONS_UNSUPPORTED:
                    logger.warning("Cannot increase the partitions of topic '%s' to %d: the cluster does not "
                                   "support it or denies it (%s); leaving it unchanged", topic, counts[topic],
                                   error.name() if error is not None else exc)
                    continue
                if code == KafkaError.INVALID_PARTITIONS:
                    logger.debug("Topic '%s' already has %d or more partitions", topic, counts[topic])
                    continue
                raise to_connect_error(exc, f"creating partitions for topic {topic}") from exc
            grown.add(topic)
            logger.info("Increased the partitions of topic '%s' to %d", topic, counts[topic])
        return grown

    # -- consumer groups ------------------------------------------------------------------------

    def list_consumer_groups(self) -> list[str]:
        with map_kafka_errors("listing consumer groups"):
            future = self._client.list_consumer_groups(request_timeout=self._timeout_s)
        listing = self._wait(future, "listing consumer groups")
        return sorted(g.group_id for g in listing.valid)

    def list_consumer_group_offsets(self, groups: Iterable[str], *, errors: dict[str, ConnectError] | None = None
                                    ) -> dict[str, dict[tuple[str, int], tuple[int, str | None]]]:
        """Committed ``(offset, metadata)`` per (topic, partition) of each group; partitions with no commit
        are left out.

        librdkafka takes one group per ListConsumerGroupOffsets request, so a thousand groups are a thousand
        requests: they are sent without waiting for each other's answers, at most
        :data:`GROUP_OFFSETS_IN_FLIGHT` at a time, and their answers are awaited in the order given. A group
        whose request fails is that group's alone: with ``errors`` it is put there (group -> the error) and
        left out of the result while the others are read; without, the first failing group (in the order
        given) raises ConnectError and no further request is sent.
        """
        result: dict[str, dict[tuple[str, int], tuple[int, str | None]]] = {}
        in_flight: deque[tuple[str, Future[Any] | ConnectError]] = deque()
        for group in dict.fromkeys(groups):
            in_flight.append((group, self._request_group_offsets(group)))
            if len(in_flight) >= GROUP_OFFSETS_IN_FLIGHT:
                self._group_offsets_answer(*in_flight.popleft(), result, errors)
        while in_flight:
            self._group_offsets_answer(*in_flight.popleft(), result, errors)
        return result

    def _request_group_offsets(self, group: str) -> Future[Any] | ConnectError:
        """One group's ListConsumerGroupOffsets, sent; the error when the client refused to send it."""
        try:
            with map_kafka_errors(f"listing offsets of group {group}"):
                futures = self._client.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self._timeout_s)
        except ConnectError as exc:
            return exc
        future: Future[Any] = futures[group]
        return future

    def _group_offsets_answer(self, group: str, request: Future[Any] | ConnectError,
                              result: dict[str, dict[tuple[str, int], tuple[int, str | None]]],
                              errors: dict[str, ConnectError] | None) -> None:
        """Waits for one group's answer and puts its committed offsets into ``result`` (its error into
        ``errors``, or raises it)."""
        try:
            if isinstance(request, ConnectError):
                raise request
            answer = self._wait(request, f"listing offsets of group {group}")
        except ConnectError as exc:
            if errors is None:
                raise
            errors[group] = exc
            return
        offsets: dict[tuple[str, int], tuple[int, str | None]] = {}
        for tp in answer.topic_partitions or []:
            if tp.error is not None or tp.offset < 0:
                continue
            offsets[(tp.topic, tp.partition)] = (tp.offset, tp.metadata)
        result[group] = offsets

    def describe_consumer_groups(self, groups: Iterable[str], *, refused_state: str | None = None) -> dict[str, str]:
        """Group state per group: the ConsumerGroupState name (``EMPTY``, ``STABLE``, ``DEAD``, ...).

        ``refused_state``: the state to report for a group the cluster answered with an error (the health
        probe reads such a group as ``DEAD``) instead of raising; a timeout still raises."""
        groups = list(groups)
        if not groups:
            return {}
        with map_kafka_errors("describing consumer groups"):
            futures = self._client.describe_consumer_groups(groups, request_timeout=self._timeout_s)
        result: dict[str, str] = {}
        for group, future in futures.items():
            try:
                description = self._wait(future, f"describing group {group}")
            except ConnectError as exc:
                if refused_state is None or kafka_error_of(exc.__cause__ or exc) is None:
                    raise
                result[group] = refused_state
                continue
            state = description.state
            result[group] = state.name if hasattr(state, "name") else str(state)
        return result

    def alter_consumer_group_offsets(self, group: str,
                                     offsets: Mapping[tuple[str, int], int | tuple[int, str | None]]) -> None:
        """Commit offsets for an (inactive) group without joining it. Raises on any partition error."""
        if not offsets:
            return
        partitions = []
        for (topic, partition), value in offsets.items():
            offset, metadata = value if isinstance(value, tuple) else (value, None)
            partitions.append(TopicPartition(topic, partition, offset) if metadata is None
                              else TopicPartition(topic, partition, offset, metadata))
        with map_kafka_errors(f"altering offsets of group {group}"):
            futures = self._client.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, partitions)], request_timeout=self._timeout_s)
        answer = self._wait(futures[group], f"altering offsets of group {group}")
        for tp in answer.topic_partitions or []:
            if tp.error is not None:
                raise to_connect_error(tp.error,
                                       f"altering offset of group {group} on {tp.topic}-{tp.partition}")

    # -- ACLs -----------------------------------------------------------------------------------

    def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        with map_kafka_errors("describing ACLs"):
            future = self._client.describe_acls(acl_filter, request_timeout=self._timeout_s)
        return list(self._wait(future, "describing ACLs"))

    def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """Create ACL bindings. WARNING: on Tansu librdkafka aborts the whole process (docs/kafka-tier.md)."""
        if not bindings:
            return
        with map_kafka_errors("creating ACLs"):
            futures = self._client.create_acls(list(bindings), request_timeout=self._timeout_s)
        for binding, future in futures.items():
            self._wait(future, f"creating ACL {binding}")
