"""Remote topic naming: ``ReplicationPolicy`` and its two stock implementations (Kafka ``mirror-client``).

The policy is the only thing that gives a replicated topic's *name* a meaning. Everything that reasons
about topology (cycle prevention, ``MirrorClient.upstream_clusters``, checkpoint renaming) goes through it,
so it must behave exactly as Kafka's does, including two sharp edges:

* ``DefaultReplicationPolicy.topic_source`` splits with **Java ``String.split`` semantics**: trailing empty
  parts are dropped, so ``"a."`` is *not* a remote topic, while ``".b"`` has the empty alias ``""`` and
  ``"a..b"`` has source ``a`` and upstream topic ``".b"``. Python's ``str.split`` keeps trailing empties.
* ``IdentityReplicationPolicy`` keeps names unchanged, except for anything that merely *ends with*
  ``heartbeats`` (``app-heartbeats`` included), which is still prefixed so heartbeats can trace topology.

Policies are configured with the whole flow config (Java ``Configurable.configure(originals)``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping

from mirror.client.plugins import load_class

logger = logging.getLogger(__name__)

REPLICATION_POLICY_CLASS = "replication.policy.class"
REPLICATION_POLICY_CLASS_DEFAULT = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
REPLICATION_POLICY_SEPARATOR = "replication.policy.separator"
REPLICATION_POLICY_SEPARATOR_DEFAULT = "."
INTERNAL_TOPIC_SEPARATOR_ENABLED = "replication.policy.internal.topic.separator.enabled"
INTERNAL_TOPIC_SEPARATOR_ENABLED_DEFAULT = True
SOURCE_CLUSTER_ALIAS = "source.cluster.alias"

HEARTBEATS_TOPIC = "heartbeats"


class ReplicationPolicy(ABC):
    """Defines how topics are renamed when replicated, and how a remote name is traced back.

    Implementations must be constructible without arguments; ``configure`` then receives the full
    config mapping (as Kafka's ``Configurable``). All methods are pure and may be called from any thread.
    """

    def configure(self, config: Mapping[str, str]) -> None:  # noqa: B027 - optional hook, no-op by default
        """Read settings from the (flow or client) config. The default policy reads nothing."""

    @abstractmethod
    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        """The name ``topic`` of cluster ``source_cluster_alias`` gets on the target."""

    @abstractmethod
    def topic_source(self, topic: str) -> str | None:
        """The alias of the cluster ``topic`` was replicated from, or None if it is not a remote topic."""

    @abstractmethod
    def upstream_topic(self, topic: str) -> str | None:
        """The name ``topic`` has one hop upstream (itself possibly remote), or None if not remote."""

    def original_topic(self, topic: str) -> str:
        """The name at the origin of a multi-hop chain; ``topic`` itself if it is not remote.

        Stops when ``upstream_topic`` returns None or the same name (the identity policy's fixpoint).
        """
        current = topic
        while True:
            upstream = self.upstream_topic(current)
            if upstream is None or upstream == current:
                return current
            current = upstream

    def heartbeats_topic(self) -> str:
        """Name of the heartbeats topic every herder writes to on its target."""
        return HEARTBEATS_TOPIC

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """Name of the offset-syncs topic; ``cluster_alias`` is the cluster it does *not* live on."""
        return f"mm2-offset-syncs.{cluster_alias}.internal"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        """Name of the checkpoints topic on the target for checkpoints from ``cluster_alias``."""
        return f"{cluster_alias}.checkpoints.internal"

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for ``heartbeats`` and every remote copy of it (``a.heartbeats``, ``b.a.heartbeats``)."""
        return self.heartbeats_topic() == self.original_topic(topic)

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for ``<alias>.checkpoints.internal`` names."""
        return topic.endswith(".checkpoints.internal")

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True for MM2's own internal topics, which must never be replicated."""
        return topic.endswith(".internal")

    def is_internal_topic(self, topic: str) -> bool:
        """True for MM2, Kafka (``__*``, ``.*``) and Connect (``*-internal``, ``*.internal``) topics."""
        kafka_internal = topic.startswith("__") or topic.startswith(".")
        connect_internal = topic.endswith("-internal") or topic.endswith(".internal")
        return self.is_mm2_internal_topic(topic) or kafka_internal or connect_internal


def java_split(text: str, separator: str) -> list[str]:
    """``text.split(Pattern.quote(separator))`` in Java: like ``str.split`` minus trailing empty parts."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_parse_boolean(value: object) -> bool:
    # Java Boolean.parseBoolean: "true" in any case, everything else false. We also strip surrounding
    # whitespace (Java does not), because a trailing blank in a .properties file silently meaning "false"
    # is a trap, not a feature.
    return str(value).strip().lower() == "true"


class DefaultReplicationPolicy(ReplicationPolicy):
    """Prefix remote topics with ``<source alias><separator>`` (``us-west.orders``).

    ``replication.policy.internal.topic.separator.enabled`` is only honoured when a separator is
    explicitly configured, exactly as in Kafka; when false, internal topic names keep ``.``
    (pre-3.1 names) while remote topics use the custom separator.
    """

    def __init__(
        self,
        separator: str = REPLICATION_POLICY_SEPARATOR_DEFAULT,
        internal_topic_separator_enabled: bool = INTERNAL_TOPIC_SEPARATOR_ENABLED_DEFAULT,
    ) -> None:
        self._set_separator(separator)
        self._internal_separator_enabled = internal_topic_separator_enabled

    def _set_separator(self, separator: str) -> None:
        if not separator:
            # Java would split on the empty pattern (between every character); no sane setup wants that.
            raise ValueError(f"{REPLICATION_POLICY_SEPARATOR} must not be empty")
        self._separator = separator

    @property
    def separator(self) -> str:
        """The separator between the source alias and the upstream topic name."""
        return self._separator

    def configure(self, config: Mapping[str, str]) -> None:
        """Read ``replication.policy.separator`` and, only if it is set, the internal-separator flag."""
        if REPLICATION_POLICY_SEPARATOR in config:
            self._set_separator(str(config[REPLICATION_POLICY_SEPARATOR]))
            logger.info("Using custom remote topic separator: '%s'", self._separator)
            if INTERNAL_TOPIC_SEPARATOR_ENABLED in config:
                self._internal_separator_enabled = _java_parse_boolean(
                    config[INTERNAL_TOPIC_SEPARATOR_ENABLED]
                )
                if not self._internal_separator_enabled:
                    logger.warning(
                        "Disabling custom topic separator for internal topics; will use '.' instead of '%s'",
                        self._separator,
                    )

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        return f"{source_cluster_alias}{self._separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        parts = java_split(topic, self._separator)
        if len(parts) < 2:
            return None
        return parts[0]

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        if source is None:
            return None
        return topic[len(source) + len(self._separator) :]

    def _internal_separator(self) -> str:
        return self._separator if self._internal_separator_enabled else "."

    def _internal_suffix(self) -> str:
        return f"{self._internal_separator()}internal"

    def _checkpoints_suffix(self) -> str:
        return f"{self._internal_separator()}checkpoints{self._internal_suffix()}"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        return f"mm2-offset-syncs{self._internal_separator()}{cluster_alias}{self._internal_suffix()}"

    def checkpoints_topic(self, cluster_alias: str) -> str:
        return f"{cluster_alias}{self._checkpoints_suffix()}"

    def is_checkpoints_topic(self, topic: str) -> bool:
        return topic.endswith(self._checkpoints_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        return topic.endswith(self._internal_suffix())

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(separator={self._separator!r}, "
            f"internal_topic_separator_enabled={self._internal_separator_enabled})"
        )


class IdentityReplicationPolicy(DefaultReplicationPolicy):
    """Keep topic names unchanged (for migrations), but still prefix heartbeats.

    A remote topic cannot be recognised by name, so ``topic_source`` returns the configured
    ``source.cluster.alias`` (None if unset) for every topic. Anything that ends with ``heartbeats``
    delegates to :class:`DefaultReplicationPolicy`, which keeps heartbeat-based topology discovery and
    heartbeat cycle prevention working. Cycles of ordinary topics cannot be prevented with this policy.
    """

    def __init__(
        self,
        source_cluster_alias: str | None = None,
        separator: str = REPLICATION_POLICY_SEPARATOR_DEFAULT,
        internal_topic_separator_enabled: bool = INTERNAL_TOPIC_SEPARATOR_ENABLED_DEFAULT,
    ) -> None:
        super().__init__(separator, internal_topic_separator_enabled)
        self._source_cluster_alias = source_cluster_alias

    def configure(self, config: Mapping[str, str]) -> None:
        """Read the separator keys and ``source.cluster.alias``."""
        super().configure(config)
        if SOURCE_CLUSTER_ALIAS in config:
            self._source_cluster_alias = str(config[SOURCE_CLUSTER_ALIAS])
            logger.info("Using source cluster alias `%s`.", self._source_cluster_alias)

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic())

    def format_remote_topic(self, source_cluster_alias: str, topic: str) -> str:
        if self._looks_like_heartbeat(topic):
            return super().format_remote_topic(source_cluster_alias, topic)
        return topic

    def topic_source(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().topic_source(topic)
        return self._source_cluster_alias

    def upstream_topic(self, topic: str) -> str | None:
        if self._looks_like_heartbeat(topic):
            return super().upstream_topic(topic)
        return topic

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source_cluster_alias={self._source_cluster_alias!r}, "
            f"separator={self.separator!r})"
        )


_POLICY_ALIASES: dict[str, type[ReplicationPolicy]] = {
    "org.apache.kafka.connect.mirror.DefaultReplicationPolicy": DefaultReplicationPolicy,
    "org.apache.kafka.connect.mirror.IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
}


def load_policy_class(name: str) -> type[ReplicationPolicy]:
    """Resolve a ``replication.policy.class`` value: a Java class name of a stock policy or a Python path.

    Raises:
        ValueError: the class is unknown, cannot be imported or is not a ``ReplicationPolicy``.
    """
    return load_class(name, ReplicationPolicy, _POLICY_ALIASES, "replication policy")


def policy_from_config(config: Mapping[str, str]) -> ReplicationPolicy:
    """Build and configure the policy a flow or client config asks for (default: DefaultReplicationPolicy).

    The whole mapping is passed to ``configure``, as Kafka passes the originals, so the identity policy
    sees ``source.cluster.alias`` and custom policies see their own keys.
    """
    policy_class = load_policy_class(
        str(config.get(REPLICATION_POLICY_CLASS, REPLICATION_POLICY_CLASS_DEFAULT))
    )
    try:
        policy = policy_class()
    except TypeError as exc:
        raise ValueError(
            f"replication policy class {policy_class.__qualname__} must be constructible "
            f"without arguments: {exc}"
        ) from exc
    policy.configure(config)
    return policy


def is_cycle(policy: ReplicationPolicy, topic: str, target_alias: str) -> bool:
    """Whether replicating ``topic`` to ``target_alias`` would send it back where it came from.

    Walks the name chain: a cycle is any hop whose source is the target. The walk stops at a non-remote
    name or at a fixpoint of ``upstream_topic`` (the identity policy), which is why identity cannot
    detect cycles of ordinary topics.
    """
    current = topic
    while True:
        source = policy.topic_source(current)
        if source is None:
            return False
        if source == target_alias:
            return True
        upstream = policy.upstream_topic(current)
        if upstream is None or upstream == current:
            return False
        current = upstream
