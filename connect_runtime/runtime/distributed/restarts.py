"""Restart requests (``POST /connectors/<c>/restart``): which instances one restarts (:class:`RestartPlan`),
the 202 body, how a worker applies one to what it runs, and where a restart of work running elsewhere is
forwarded.

A restart with ``include_tasks`` or ``only_failed`` is written to the config topic by the leader and
applied by every worker to what it runs, so each worker computes the same plan from the status
store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from connect_runtime.api.errors import ConflictError
from connect_runtime.lifecycle import ConnectorTaskId, State
from connect_runtime.runtime.distributed.local_work import LocalWork
from connect_runtime.runtime.herder import ConnectorStateInfo, TaskStateInfo
from connect_runtime.runtime.worker.status_writer import StatusWriter
from connect_runtime.storage.config_records import RestartRequest
from connect_runtime.storage.config_topic_state import ClusterConfigState
from connect_runtime.storage.status_store import KafkaStatusStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RestartPlan:
    """Which of a connector and its tasks a restart request restarts (Java's ``RestartPlan``)."""

    request: RestartRequest
    restart_connector: bool
    tasks: tuple[ConnectorTaskId, ...]

    @classmethod
    def of(cls, statuses: KafkaStatusStore, snapshot: ClusterConfigState, request: RestartRequest) -> RestartPlan:
        """All of them, or with ``only_failed`` those whose current status is FAILED; tasks only with
        ``include_tasks``."""
        status = statuses.get(request.connector)
        restart_connector = not request.only_failed or (status is not None and status.state is State.FAILED)
        tasks: list[ConnectorTaskId] = []
        if request.include_tasks:
            for task in snapshot.tasks(request.connector):
                task_status = statuses.get_task(task.connector, task.task)
                if not request.only_failed or (task_status is not None and task_status.state is State.FAILED):
                    tasks.append(task)
        return cls(request, restart_connector, tuple(tasks))

    def restarting_view(self, current: ConnectorStateInfo) -> ConnectorStateInfo:
        """The 202 body of a restart (Java's ``restartConnectorStateInfo``): what will restart is shown as
        RESTARTING, the rest as it is."""
        restarting = {t.task for t in self.tasks}
        return ConnectorStateInfo(
            current.name, State.RESTARTING if self.restart_connector else current.connector_state,
            current.connector_worker_id,
            [TaskStateInfo(t.id, State.RESTARTING if t.id in restarting else t.state, t.worker_id,
                           None if t.id in restarting else t.trace) for t in current.tasks],
            current.type, None if self.restart_connector else current.connector_trace)


def apply_restart(request: RestartRequest, snapshot: ClusterConfigState, statuses: KafkaStatusStore,
                  work: LocalWork, status: StatusWriter) -> bool:
    """Stop what ``request`` restarts among what runs here and report it RESTARTING; True if anything
    was stopped (the caller then reconciles, which starts it again)."""
    if not snapshot.contains(request.connector):
        return False
    plan = RestartPlan.of(statuses, snapshot, request)
    restart_connector = plan.restart_connector and work.runs_connector(request.connector)
    local_tasks = [t for t in plan.tasks if work.runs_task(t)]
    if not restart_connector and not local_tasks:
        return False
    logger.info("Restarting connector %s%s and %d task(s)", request.connector,
                "" if restart_connector else " (tasks only)", len(local_tasks))
    if restart_connector:
        work.stop_connector(request.connector)
        status.on_connector_restart(request.connector)
    work.stop_tasks(local_tasks)
    for task in local_tasks:
        status.on_task_restart(task)
    return True


def owner_url(statuses: KafkaStatusStore, connector: str, task: int | None, worker_id: str,
              leader_url: str | None) -> str | None:
    """The REST URL of the worker running a connector or task, from its status (its worker id is the
    ``host:port`` of that worker's listener), else the leader's, which knows the assignment: where a
    restart of an instance that does not run here is forwarded (NotAssignedError).

    The scheme is this cluster's (the leader's URL's): workers of one cluster share a listener
    protocol. A status written by this very worker is stale (the caller checked it does not run here).
    """
    status = statuses.get(connector) if task is None else statuses.get_task(connector, task)
    if status is None or not status.worker_id or status.worker_id == worker_id:
        return leader_url
    if "/" in status.worker_id:
        # Java MirrorMaker's worker id (``host:port/<src>-><tgt>``): its REST server serves only the internal
        # endpoints, so a forwarded restart would come back 404. Every node applies a connector restart request.
        instance = connector if task is None else f"task {task} of connector {connector}"
        raise ConflictError(
            f"Cannot restart {instance} here: it runs on worker {status.worker_id}, a Java MirrorMaker node, whose "
            f"REST server serves no restart endpoint; restart that node, or, while a node of this runtime leads the "
            f"group, use the connector's restart with includeTasks=true (onlyFailed=true for the failed ones "
            f"only), which every node, Java's included, applies to what it runs")
    scheme = leader_url.split("://", 1)[0] if leader_url and "://" in leader_url else "http"
    return f"{scheme}://{status.worker_id}"
