"""The leader forgets the statuses of deleted work: tombstones in the status topic.

When a connector is deleted its connector and task statuses are tombstoned (DESTROYED); when a new
task generation has fewer tasks, the statuses of the dropped task numbers are. Only the leader does
it (one writer, not one per worker), after reconciling, so the worker's own "UNASSIGNED" reports come
before the tombstones.
"""

from __future__ import annotations

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.status_store import KafkaStatusStore


def forget_deleted(previous: ClusterConfigState, current: ClusterConfigState, statuses: KafkaStatusStore,
                   status: StatusWriter) -> None:
    """Tombstone the statuses of what ``current`` deleted or dropped since ``previous``."""
    for name in previous.connectors():
        if not current.contains(name):
            for task_status in statuses.get_all(name):
                if task_status.task is not None:
                    status.on_task_deletion(ConnectorTaskId(name, task_status.task))
            status.on_connector_deletion(name)
        else:
            if name in current.inconsistent:
                continue  # the previous generation still counts
            kept = current.task_count(name)
            for task_status in statuses.get_all(name):
                if task_status.task is not None and task_status.task >= kept:
                    status.on_task_deletion(ConnectorTaskId(name, task_status.task))
