"""``MirrorHeartbeatConnector`` / ``MirrorHeartbeatTask`` config (Kafka ``MirrorHeartbeatConfig``).

``emit.heartbeats.enabled`` matters beyond this connector: the driver uses it to decide which herder
pairs exist at all (docs/architecture.md), which is why every pair gets a heartbeat-only herder by default.
"""

from __future__ import annotations

from collections.abc import Mapping

from connect_runtime.api.config import ConfigDef, ConfigKey, Importance, Type, at_least
from mirror.config.connector_base import BASE_CONNECTOR_CONFIG_DEF, MirrorConnectorConfig, replication_factor
from mirror.config.settings import Flag, Integer, Period

EMIT_HEARTBEATS_ENABLED = "emit.heartbeats.enabled"
EMIT_HEARTBEATS_INTERVAL_SECONDS = "emit.heartbeats.interval.seconds"
EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT = 1
HEARTBEATS_TOPIC_REPLICATION_FACTOR = "heartbeats.topic.replication.factor"
HEARTBEATS_TOPIC_REPLICATION_FACTOR_DEFAULT = 3

_GROUP = "Mirror Heartbeat"

CONFIG_DEF: ConfigDef = BASE_CONNECTOR_CONFIG_DEF.merge(ConfigDef([
    ConfigKey(EMIT_HEARTBEATS_ENABLED, Type.BOOLEAN, True, Importance.LOW,
              "Whether to emit heartbeats to the target cluster.", group=_GROUP),
    ConfigKey(EMIT_HEARTBEATS_INTERVAL_SECONDS, Type.LONG, EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT,
              Importance.LOW, "Frequency of heartbeats.", at_least(0), _GROUP),
    ConfigKey(HEARTBEATS_TOPIC_REPLICATION_FACTOR, Type.INT, HEARTBEATS_TOPIC_REPLICATION_FACTOR_DEFAULT,
              Importance.LOW, "Replication factor for the heartbeats topic.", replication_factor, _GROUP),
]))


class MirrorHeartbeatConfig(MirrorConnectorConfig):
    """Typed view of a ``MirrorHeartbeatConnector`` / task config (the task takes the connector's config)."""

    CONFIG_DEF = CONFIG_DEF

    def __init__(self, props: Mapping[str, str], config_def: ConfigDef | None = None) -> None:
        super().__init__(props, config_def or type(self).CONFIG_DEF)

    emit_heartbeats_enabled = Flag(EMIT_HEARTBEATS_ENABLED)
    #: Seconds between heartbeats; ``-1`` when ``emit.heartbeats.enabled=false``.
    emit_heartbeats_interval_s = Period(EMIT_HEARTBEATS_ENABLED, EMIT_HEARTBEATS_INTERVAL_SECONDS)
    heartbeats_topic_replication_factor = Integer(HEARTBEATS_TOPIC_REPLICATION_FACTOR)

    def target_admin_config(self, role: str | None = "heartbeats-target-admin") -> dict[str, str]:
        return self.client_config("target", "admin", role)
