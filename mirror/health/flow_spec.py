"""What the health probe needs to know about each flow, taken from mm2.properties.

A :class:`FlowSpec` holds the flow's replication policy, filters, internal topic names and health
thresholds; :func:`cluster_io` gives the read-only clients of one cluster. Kept apart from
:mod:`mirror.health.probe` so that the probe only reads clusters: ``mirror status`` and the background
monitor build the specs once from the file, and tests build them by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mirror.client.mirror_client import ReaderKind, reader_config
from mirror.client.replication_policy import ReplicationPolicy, policy_from_config
from mirror.config.checkpoint import SYNC_GROUP_OFFSETS_ENABLED
from mirror.config.connector_base import OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT
from mirror.config.heartbeat import EMIT_HEARTBEATS_INTERVAL_SECONDS, EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT
from mirror.config.mirror_maker_config import (
    CHECKPOINT_CONNECTOR_CLASS,
    HEARTBEAT_CONNECTOR_CLASS,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.filters import GroupFilter, TopicFilter, load_group_filter, load_topic_filter
from mirror.health.flow_health import Thresholds
from mirror.health.kafka_io import ClusterIO


@dataclass(frozen=True)
class FlowSpec:
    """What the probe needs to know about one flow, taken from mm2.properties."""

    source: str
    target: str
    policy: ReplicationPolicy
    topic_filter: TopicFilter
    group_filter: GroupFilter
    offsets_topic: str
    offset_syncs_on_source: bool
    heartbeat_interval_s: float
    thresholds: Thresholds
    sync_group_offsets: bool = False
    #: the flow's Connect status topic: a node that cannot do its part says so there (stalled_handoffs.py)
    status_topic: str = ""

    @property
    def name(self) -> str:
        return f"{self.source}->{self.target}"


def cluster_io(config: MirrorMakerConfig, alias: str) -> ClusterIO:
    """A read-only client pair for ``alias``: its Java client keys from mm2.properties made librdkafka's."""
    raw = config.client_config(alias)
    configs: dict[ReaderKind, dict[str, Any]] = {}
    for kind in ("consumer", "admin"):
        configs[kind] = reader_config(raw, kind)
        configs[kind].pop("client.id", None)
    return ClusterIO(alias, configs["consumer"], configs["admin"])


def flow_specs(config: MirrorMakerConfig, pairs: Iterable[SourceAndTarget],
               overrides: Mapping[str, Any] | None = None) -> list[FlowSpec]:
    """One :class:`FlowSpec` per enabled flow among ``pairs`` (heartbeat-only pairs are left out);
    thresholds from ``health.*`` keys, then ``overrides`` (flags)."""
    raw = config.raw_properties()
    specs = []
    for pair in pairs:
        source_cfg = config.connector_base_config(pair, SOURCE_CONNECTOR_CLASS)
        if not parse_boolean(source_cfg.get("enabled")):
            continue  # a heartbeat-only herder: it replicates nothing, so it has no health to judge
        checkpoint_cfg = config.connector_base_config(pair, CHECKPOINT_CONNECTOR_CLASS)
        heartbeat_cfg = config.connector_base_config(pair, HEARTBEAT_CONNECTOR_CLASS)
        policy = policy_from_config(source_cfg)
        interval = float(heartbeat_cfg.get(EMIT_HEARTBEATS_INTERVAL_SECONDS,
                                           EMIT_HEARTBEATS_INTERVAL_SECONDS_DEFAULT))
        location = source_cfg.get(OFFSET_SYNCS_TOPIC_LOCATION, OFFSET_SYNCS_TOPIC_LOCATION_DEFAULT)
        thresholds = Thresholds.from_properties(raw, str(pair)).with_overrides(overrides or {})
        specs.append(FlowSpec(
            source=pair.source, target=pair.target, policy=policy,
            topic_filter=load_topic_filter(source_cfg), group_filter=load_group_filter(checkpoint_cfg),
            offsets_topic=config.worker_config(pair)["offset.storage.topic"],
            status_topic=config.worker_config(pair)["status.storage.topic"],
            offset_syncs_on_source=location.strip().lower() != "target",
            heartbeat_interval_s=interval, thresholds=thresholds,
            sync_group_offsets=parse_boolean(checkpoint_cfg.get(SYNC_GROUP_OFFSETS_ENABLED, "false"))))
    return specs
