"""MirrorHerder: the distributed herder of one MM2 flow (Java's ``MirrorHerder``).

A plain Connect cluster member except for what makes it MM2's: a newly elected leader writes the three
MM2 connector configs from mm2.properties when they differ from what is stored (the leader's file wins,
as in Java), its thread's log lines name the flow, and it can tell whether it replicates at all
(heartbeat-only reverse flows do not) and how many records it has replicated (the start-up narration).
All of it runs on the herder's tick thread; the slot (:mod:`mirror.maker.herder_slot`) supervises it and
the node (:mod:`mirror.maker.mirror_maker`) builds it.
"""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import CollectorRegistry

from connect_runtime.api.errors import ConnectError, NotFoundError
from connect_runtime.logging_context import set_context
from connect_runtime.runtime.distributed.distributed_herder import DistributedHerder
from mirror.config.mirror_maker_config import (
    CONNECTOR_CLASSES,
    SOURCE_CONNECTOR_CLASS,
    MirrorMakerConfig,
    SourceAndTarget,
    parse_boolean,
)
from mirror.metrics import replicated_records

logger = logging.getLogger(__name__)


class MirrorHerder(DistributedHerder):
    """A herder for one replication flow; as a newly elected leader it (re)configures MM2's connectors."""

    def __init__(self, *, pair: SourceAndTarget, mm_config: MirrorMakerConfig,
                 metrics: CollectorRegistry | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pair = pair
        self._mm_config = mm_config
        self._metrics = metrics
        #: False for a heartbeat-only herder: it never replicates a record.
        self.replicates = parse_boolean(mm_config.connector_base_config(pair, SOURCE_CONNECTOR_CLASS).get("enabled"))

    def replicated_records(self) -> float:
        """Records this node's source tasks replicated (acknowledged by the target), from its metrics.

        Read once a second by the slot until the first record shows (the start-up narration), while the
        tasks start: it sums the tasks' plain per-partition counts, never collects the registry (that
        builds about a hundred samples per partition, seconds of the GIL at thousands of partitions,
        enough to starve the node's heartbeats). Never on the per-record path.
        """
        if self._metrics is None:
            return 0.0
        return float(replicated_records(self._metrics))

    def on_tick_thread_start(self) -> None:
        """Every log line of this herder's thread names its flow."""
        set_context(flow=str(self.pair))

    def on_leadership_gained(self) -> None:
        """Write each connector's config from mm2.properties when it differs from the stored one
        (Java's ``MirrorHerder.rebalanceSuccess``: the newly elected leader's file wins)."""
        for connector_class in CONNECTOR_CLASSES:
            config = self._mm_config.connector_stored_config(self.pair, connector_class)
            name = config["name"]
            try:
                if self.connector_config(name) == config:
                    continue
            except NotFoundError:
                pass
            try:
                self.put_connector_config(name, config, allow_replace=True)
                logger.info("%s: configured %s", self.pair, name)
            except ConnectError as exc:
                # Java logs and carries on: e.g. the checkpoint connector is invalid when offset syncs
                # are disabled, and the other two must still run.
                logger.error("%s: connector %s not configured: %s", self.pair, name, exc)
