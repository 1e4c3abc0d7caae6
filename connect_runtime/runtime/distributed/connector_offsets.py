"""KIP-875 offset changes (``PATCH``/``DELETE /connectors/<c>/offsets``): the checks before a write.

Offsets may change only while the connector is STOPPED with no tasks (nothing may commit over them),
and a source connector may refuse them (``SourceConnector.alter_offsets``) before anything is written.
Under exactly-once a source connector's tasks are fenced first (``fence``, as Java does): a zombie task
of the stopped connector could otherwise still commit offsets over the new ones.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from connect_runtime.api.connector import Connector, SourceConnector
from connect_runtime.api.errors import BadRequestError, ConnectError
from connect_runtime.api.records import SourceMap, canonical_partition_json
from connect_runtime.lifecycle import TargetState
from connect_runtime.runtime.herder import ConnectorOffset
from connect_runtime.runtime.worker.connector_validation import CONNECTOR_CLASS
from connect_runtime.runtime.worker.plugins import Plugins
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.offset_store import OffsetStore

logger = logging.getLogger(__name__)

STOPPED_REQUIRED = ("Connectors must be in the STOPPED state before their offsets can be modified. "
                    "This can be done for the specified connector by issuing a 'PUT' request to the "
                    "'/connectors/{name}/stop' endpoint")


def offsets_to_alter(offsets: Sequence[ConnectorOffset]) -> list[tuple[SourceMap, Mapping[str, Any] | None]]:
    """The body of an alter request as (partition, offset) pairs; BadRequestError if empty or a partition
    is missing (checked before the request reaches the tick thread)."""
    if not offsets:
        raise BadRequestError("Partitions / offsets need to be provided for an alter offsets request")
    for entry in offsets:
        if entry.partition is None:
            raise BadRequestError("Source partitions may not be null")
    return [(o.partition, o.offset) for o in offsets]


def require_stopped(snapshot: ClusterConfigState, name: str) -> None:
    """BadRequestError unless ``name`` is STOPPED and its (empty) task generation is written."""
    if snapshot.target_state(name) is not TargetState.STOPPED or snapshot.task_count(name) > 0:
        raise BadRequestError(STOPPED_REQUIRED.format(name=name))


def check_offsets_with_connector(connector: Connector, name: str, config: Mapping[str, str],
                                 offsets: Sequence[tuple[SourceMap, Mapping[str, Any] | None]]) -> None:
    """Let a source connector validate KIP-875 offsets before they are written (it raises to refuse).

    A connector's own ConnectError (BadRequestError: 400) passes through; anything else is its bug and
    becomes a ConnectError (500), as Java's ``ConnectUtils.maybeWrap`` does.
    """
    if not isinstance(connector, SourceConnector):
        return
    keyed = {canonical_partition_json(p): (p, o) for p, o in offsets}
    try:
        connector.alter_offsets(dict(config), keyed)
    except ConnectError:
        raise
    except Exception as exc:
        raise ConnectError(f"Failed to alter the offsets for connector {name}: {exc}") from exc


def modify_offsets(name: str, offsets: list[tuple[SourceMap, Mapping[str, Any] | None]] | None, *,
                   snapshot: ClusterConfigState, offset_store: OffsetStore, plugins: Plugins,
                   fence: Callable[[ClusterConfigState, str], None] | None = None) -> None:
    """KIP-875 PATCH (``offsets``) or DELETE (None) of a STOPPED connector's offsets (the caller checked
    the connector exists and this worker leads): checked by the connector, its zombies fenced (a source
    connector, with ``fence``; a failed fencing raises and nothing is written), then written."""
    require_stopped(snapshot, name)
    config = snapshot.connector_configs[name]
    if offsets is None:
        offset_store.refresh()
        offsets = [(p, None) for p, _ in offset_store.connector_offsets(name)]
    connector = plugins.new_connector(config.get(CONNECTOR_CLASS, ""))
    check_offsets_with_connector(connector, name, config, offsets)
    if fence is not None and isinstance(connector, SourceConnector):
        fence(snapshot, name)
    if offsets:
        offset_store.put(name, offsets)
    logger.info("Connector %s: %d offset(s) %s", name, len(offsets), "altered" if offsets else "reset")
