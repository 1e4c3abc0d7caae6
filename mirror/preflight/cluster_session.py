"""One cluster as ``mirror check`` sees it: reached or not, as whom, with which rights and which brokers.

A :class:`ClusterSession` holds one admin client built from the cluster's mm2.properties keys, as the
health probe builds its own (``<alias>.*`` and ``<alias>.admin.*``), with an error callback: librdkafka
reports a refused password or an unreachable broker only there, while the request itself just times out.
:meth:`start` sends DescribeCluster (with KIP-430's authorized operations) without waiting, so every cluster
is asked at once and an unreachable one costs its timeout, not the sum of all; :meth:`finish` collects the
answer or names why there is none.

Every other read is one admin request, answered from a cache when asked again, and changes nothing:
DescribeTopics, DescribeConsumerGroups (both with authorized operations), DescribeAcls, DescribeConfigs,
ListTopics, ListConsumerGroups, and CreateTopics / IncrementalAlterConfigs with ``validate_only``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupType, KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from connect_runtime.clients.admin import TopicConfigEntry
from connect_runtime.clients.factory import new_admin
from mirror.preflight.authorizer_rules import CLUSTER_NAME, Acl, allowed

#: librdkafka's trailing "(after 311ms in state AUTH_REQ)" on connection errors: not news to an operator.
_DETAIL = re.compile(r"\s*\((?:after|\d+ identical)[^()]*\)\s*$")
#: Every binding of every resource (None matches any value; the stubs only say ``str``).
_ANY: Any = None
_EVERY_ACL = AclBindingFilter(ResourceType.ANY, _ANY, ResourcePatternType.ANY, _ANY, _ANY, AclOperation.ANY,
                              AclPermissionType.ANY)
#: Answers that say "ask again shortly", not "no".
_TRANSIENT = frozenset({KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
                        KafkaError.NOT_COORDINATOR, KafkaError.LEADER_NOT_AVAILABLE})
_RETRY_BACKOFF_S = 0.2
_UNSUPPORTED = (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION)
_UNREACHABLE = (KafkaError._TRANSPORT, KafkaError._RESOLVE, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT)


@dataclass(frozen=True)
class TopicState:
    """A topic as DescribeTopics answered: ``visible`` False when the principal may not DESCRIBE it (Kafka
    then does not say whether it exists), ``exists`` False when it does not exist."""

    visible: bool
    exists: bool
    #: KIP-430's answer; None when the broker gave none (a broker that does not compute them)
    operations: frozenset[AclOperation] | None = frozenset()
    partitions: int = 0
    replicas: int = 0


@dataclass(frozen=True)
class GroupState:
    """A group as DescribeConsumerGroups answered; ``visible`` False without DESCRIBE. A group of another
    protocol (a Connect group that exists: ``connect``) is answered by the broker but not described by the
    client: its ``operations`` are then unknown (None), its state comes from the group listing."""

    visible: bool
    operations: frozenset[AclOperation] | None = frozenset()
    state: str = ""
    members: int | None = 0


def principal_of(config: Mapping[str, Any]) -> str | None:
    """The Kafka principal a client with this librdkafka config authenticates as, where the config says it:
    ``User:<name>`` for SASL PLAIN and SCRAM, ``User:ANONYMOUS`` without authentication; None for a TLS
    certificate, Kerberos or OAUTHBEARER (the broker maps those to a principal by its own rules)."""
    protocol = str(config.get("security.protocol", "plaintext")).lower()
    if protocol.startswith("sasl"):
        mechanism = str(config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI"))).upper()
        username = config.get("sasl.username")
        if (mechanism == "PLAIN" or mechanism.startswith("SCRAM")) and username:
            return f"User:{username}"
        return None
    if protocol == "ssl" and any(config.get(k) for k in ("ssl.certificate.pem", "ssl.certificate.location",
                                                         "ssl.keystore.location")):
        return None
    return "User:ANONYMOUS"


class ClusterSession:
    """Read-only admin access to one cluster; not thread-safe."""

    def __init__(self, alias: str, admin_config: Mapping[str, Any], timeout_s: float) -> None:
        self.alias = alias
        self.timeout_s = timeout_s
        self.bootstrap = str(admin_config.get("bootstrap.servers", ""))
        self.principal = principal_of(admin_config)
        self.mechanism = str(admin_config.get("sasl.mechanism", admin_config.get("sasl.mechanisms", "")))
        self._errors: list[KafkaError] = []
        self.admin: AdminClient = new_admin({**admin_config, "client.id": "mirror-check",
                                             "error_cb": self._errors.append})
        self._described: Future[Any] | None = None
        self.reached = False
        #: the brokers answered DescribeCluster with "unsupported": older than Kafka 2.8
        self.describe_cluster_unsupported = False
        self.cluster_id = ""
        self.brokers: list[int] = []
        self.controller: int | None = None
        #: KIP-430: None when the principal may not DESCRIBE the cluster (Kafka then gives no list)
        self.cluster_operations: frozenset[AclOperation] | None = None
        #: False: no authorizer (every right is granted); None: not known yet
        self.authorizer: bool | None = None
        #: the DescribeAcls listing, None when it cannot be read (no DESCRIBE on the cluster)
        self.acls: list[Acl] | None = None
        self.super_user = False
        self._topics: dict[str, TopicState] = {}
        self._groups: dict[str, GroupState] = {}
        self._creates: dict[str, KafkaError | None] = {}
        self._broker_configs: dict[str, str] | KafkaError | None = None

    # ---- reaching the cluster ----

    def start(self) -> None:
        """Send DescribeCluster; :meth:`finish` waits for it."""
        self._described = self.admin.describe_cluster(include_authorized_operations=True,
                                                      request_timeout=self.timeout_s)

    def finish(self) -> str | None:
        """Wait for DescribeCluster; None when the cluster answered, else why it did not (one sentence)."""
        assert self._described is not None
        try:
            description = self._described.result(timeout=self.timeout_s + 2)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() in _UNSUPPORTED:
                return self._from_metadata(exc)
            return self._why_unreached(exc)
        except TimeoutError as exc:
            return self._why_unreached(exc)
        self.reached = True
        self.cluster_id = str(description.cluster_id or "")
        self.brokers = sorted(node.id for node in description.nodes)
        self.controller = description.controller.id if description.controller is not None else None
        ops = description.authorized_operations
        self.cluster_operations = frozenset(ops) if ops else None
        return None

    def _from_metadata(self, exc: KafkaException) -> str | None:
        """A broker without DescribeCluster (before Kafka 2.8, KIP-700) answered: learn its brokers from the
        metadata instead; its rights are then read per resource."""
        try:
            metadata = self.admin.list_topics(timeout=self.timeout_s)
        except KafkaException as again:
            return self._why_unreached(again)
        self.reached = True
        self.describe_cluster_unsupported = True
        self.cluster_id = str(metadata.cluster_id or "")
        self.brokers = sorted(metadata.brokers)
        self.controller = metadata.controller_id if metadata.controller_id >= 0 else None
        return None

    def _why_unreached(self, exc: BaseException) -> str:
        self.admin.poll(0)  # delivers the error callbacks: the only place librdkafka says why
        errors = list(self._errors)
        for code, what in ((KafkaError._AUTHENTICATION, "authentication failed"),
                           (KafkaError._SSL, "the TLS handshake failed")):
            found = next((e for e in errors if e.code() == code), None)
            if found is not None:
                return f"{what}: {_DETAIL.sub('', found.str())}"
        seen = next((e for e in errors if e.code() in _UNREACHABLE and e.code() != KafkaError._ALL_BROKERS_DOWN),
                    None)
        detail = f" (last error: {_DETAIL.sub('', seen.str())})" if seen is not None else ""
        if isinstance(exc, KafkaException) and exc.args and exc.args[0].code() not in _UNREACHABLE:
            detail = f" ({exc.args[0].str()})"
        return f"no broker at {self.bootstrap} answered within {self.timeout_s:g} s{detail}"

    # ---- rights ----

    def load_authorization(self) -> None:
        """Learn whether there is an authorizer, read the ACL listing if allowed, and spot a super user."""
        try:
            bindings = self._wait(self.admin.describe_acls(_EVERY_ACL, request_timeout=self.timeout_s))
        except KafkaException as exc:
            code = exc.args[0].code() if exc.args else None
            self.authorizer = code != KafkaError.SECURITY_DISABLED
            return
        self.authorizer = True
        ops = self.cluster_operations
        if ops is None or AclOperation.DESCRIBE not in ops:
            return  # Kafka answers an empty listing, not an error, without DESCRIBE on the cluster
        self.acls = [Acl.of(b) for b in bindings]
        if AclOperation.CLUSTER_ACTION in ops:
            # what only brokers and super users may do: if no binding grants it, a super user asked
            principals = [self.principal] if self.principal else sorted({a.principal for a in self.acls})
            self.super_user = not any(allowed(self.acls, p, ResourceType.BROKER, CLUSTER_NAME,
                                              AclOperation.CLUSTER_ACTION) for p in principals)

    def topics(self, names: Iterable[str]) -> dict[str, TopicState]:
        """DescribeTopics with authorized operations, per topic."""
        wanted = [n for n in dict.fromkeys(names) if n not in self._topics]
        if wanted:
            answers = self._retrying(lambda batch: self.admin.describe_topics(
                TopicCollection(batch), include_authorized_operations=True, request_timeout=self.timeout_s), wanted)
            for name, answer in answers.items():
                try:
                    topic = _value(answer)
                except KafkaException as exc:
                    code = exc.args[0].code() if exc.args else None
                    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                        self._topics[name] = TopicState(visible=False, exists=False)
                    elif code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                        self._topics[name] = TopicState(visible=True, exists=False)
                    else:
                        raise
                    continue
                replicas = min((len(p.replicas) for p in topic.partitions), default=0)
                self._topics[name] = TopicState(True, True, _operations(topic.authorized_operations),
                                                len(topic.partitions), replicas)
        return {n: self._topics[n] for n in names}

    def groups(self, names: Iterable[str]) -> dict[str, GroupState]:
        """DescribeConsumerGroups with authorized operations, per group (a group that does not exist is
        described as DEAD, with the operations its ACLs grant)."""
        wanted = [n for n in dict.fromkeys(names) if n not in self._groups]
        if wanted:
            answers = self._retrying(lambda batch: self.admin.describe_consumer_groups(
                batch, include_authorized_operations=True, request_timeout=self.timeout_s), wanted)
            for name, answer in answers.items():
                try:
                    group = _value(answer)
                except KafkaException as exc:
                    code = exc.args[0].code() if exc.args else None
                    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
                        self._groups[name] = GroupState(visible=False)
                        continue
                    if code == KafkaError._INVALID_ARG:  # "is not a consumer group (connect)"
                        self._groups[name] = GroupState(True, None, *self._other_protocol_group(name))
                        continue
                    raise
                self._groups[name] = GroupState(True, _operations(group.authorized_operations),
                                                getattr(group.state, "name", str(group.state)), len(group.members))
        return {n: self._groups[n] for n in names}

    def _other_protocol_group(self, group: str) -> tuple[str, int | None]:
        """State and member count of a group of another protocol than ``consumer`` (a Connect group), which
        ListConsumerGroups leaves out and DescribeConsumerGroups refuses to describe: the client's older
        ``list_groups`` (ListGroups and DescribeGroups, any protocol) tells them."""
        try:
            found = self.admin.list_groups(group, timeout=self.timeout_s)
        except KafkaException:
            return "", None
        for metadata in found:
            if metadata.id == group and metadata.error is None:
                return str(metadata.state or "").upper(), len(metadata.members)
        return "", None

    def validate_create(self, topics: Sequence[NewTopic]) -> dict[str, KafkaError | None]:
        """CreateTopics with ``validate_only``: per topic, None if the broker would create it, else its error
        (authorization first, then replication factor and configs)."""
        wanted = [t for t in topics if t.topic not in self._creates]
        if wanted:
            futures = self.admin.create_topics(wanted, validate_only=True, request_timeout=self.timeout_s,
                                               operation_timeout=self.timeout_s)
            for name, future in futures.items():
                try:
                    self._wait(future)
                    self._creates[name] = None
                except KafkaException as exc:
                    self._creates[name] = exc.args[0]
        return {t.topic: self._creates[t.topic] for t in topics}

    def validate_alter(self, topic: str, ops: Sequence[tuple[str, str, str | None]]) -> KafkaError | None:
        """IncrementalAlterConfigs with ``validate_only`` for one topic: None if the broker would apply it."""
        entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType[op]) for name, op, value in ops]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        try:
            self._wait(self.admin.incremental_alter_configs([resource], validate_only=True,
                                                            request_timeout=self.timeout_s)[resource])
        except KafkaException as exc:
            return exc.args[0]  # type: ignore[no-any-return]
        return None

    def topic_configs(self, names: Iterable[str]) -> dict[str, list[TopicConfigEntry] | KafkaError]:
        """DescribeConfigs per topic: its entries, or the error (DESCRIBE_CONFIGS refused)."""
        resources = [ConfigResource(ResourceType.TOPIC, n) for n in dict.fromkeys(names)]
        if not resources:
            return {}
        result: dict[str, list[TopicConfigEntry] | KafkaError] = {}
        for resource, future in self.admin.describe_configs(resources, request_timeout=self.timeout_s).items():
            try:
                entries = self._wait(future)
            except KafkaException as exc:
                result[resource.name] = exc.args[0]
                continue
            result[resource.name] = [
                TopicConfigEntry(e.name, e.value, getattr(e.source, "name", str(e.source)), bool(e.is_default),
                                 bool(e.is_read_only), bool(e.is_sensitive)) for e in entries.values()]
        return result

    def broker_configs(self) -> dict[str, str] | KafkaError:
        """One broker's configs (DESCRIBE_CONFIGS on the cluster), or the error that refused them."""
        if self._broker_configs is None:
            broker = self.controller if self.controller is not None else (self.brokers or [0])[0]
            resource = ConfigResource(ResourceType.BROKER, str(broker))
            try:
                entries = self._wait(self.admin.describe_configs([resource], request_timeout=self.timeout_s)[resource])
                self._broker_configs = {name: str(e.value) for name, e in entries.items() if e.value is not None}
            except KafkaException as exc:
                self._broker_configs = exc.args[0]
        assert self._broker_configs is not None
        return self._broker_configs

    def list_topics(self) -> dict[str, int]:
        """The topics this principal may DESCRIBE, with their partition counts."""
        metadata = self.admin.list_topics(timeout=self.timeout_s)
        return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}

    def list_groups(self, consumer_protocol_only: bool = False) -> list[str] | KafkaError:
        """The consumer groups this principal may DESCRIBE (only KIP-848 ones with ``consumer_protocol_only``),
        or the error (e.g. a broker without KIP-848's ListGroups type filter)."""
        kwargs: dict[str, Any] = {"request_timeout": self.timeout_s}
        if consumer_protocol_only:
            kwargs["types"] = {ConsumerGroupType.CONSUMER}
        try:
            listing = self._wait(self.admin.list_consumer_groups(**kwargs))
        except KafkaException as exc:
            return exc.args[0]  # type: ignore[no-any-return]
        if listing.errors:
            error = listing.errors[0]
            return error.args[0] if isinstance(error, KafkaException) else KafkaError(KafkaError._FAIL, str(error))
        return sorted(g.group_id for g in listing.valid)

    def _retrying(self, send: Callable[[list[str]], Mapping[str, Future[Any]]], names: list[str]) -> dict[str, Any]:
        """``send(names)``, sent again for the names answered with a transient error (a group coordinator
        still loading, a partition leader moving) until the timeout; each answer or its KafkaException."""
        deadline = time.monotonic() + self.timeout_s
        answers: dict[str, Any] = {}
        pending = names
        while pending:
            again = []
            for name, future in send(pending).items():
                try:
                    answers[name] = self._wait(future)
                except KafkaException as exc:
                    if exc.args and exc.args[0].code() in _TRANSIENT and time.monotonic() < deadline:
                        again.append(name)
                    else:
                        answers[name] = exc
            pending = again
            if pending:
                time.sleep(_RETRY_BACKOFF_S)
        return answers

    def _wait(self, future: Future[Any]) -> Any:
        try:
            return future.result(timeout=self.timeout_s + 2)
        except TimeoutError as exc:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"no answer from {self.alias} within "
                                                                   f"{self.timeout_s:g} s")) from exc


def _value(answer: Any) -> Any:
    """An answer of :meth:`ClusterSession._retrying`, or its error raised again."""
    if isinstance(answer, KafkaException):
        raise answer
    return answer


def _operations(reported: Iterable[AclOperation] | None) -> frozenset[AclOperation] | None:
    """KIP-430's authorized operations as reported; None when the broker reported none (Kafka reports every
    operation it authorizes on a resource the principal may DESCRIBE, so an absent list is no answer)."""
    return None if reported is None else frozenset(reported)
