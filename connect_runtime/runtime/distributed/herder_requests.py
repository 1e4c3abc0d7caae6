"""The state changes a REST caller asks of a
:class:`~connect_runtime.runtime.distributed.distributed_herder.DistributedHerder`.

Each request (create, update or delete a connector, restart, pause, resume, stop, write task configs
a follower sent, fence zombies, alter or reset offsets) is submitted to the herder's tick thread and
runs there against a consistent snapshot; writes to the config topic are the leader's, fenced against
stale leaders; a restart of an instance runs where it is assigned (NotAssignedError with the owner's
URL otherwise, which the REST layer forwards to). These handlers live apart from the tick loop
(:mod:`connect_runtime.runtime.distributed.distributed_herder`) so that each module reads as one job: the loop
keeps the worker in line with the cluster, this module turns requests into tick-thread work.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from connect_runtime.api.errors import AlreadyExistsError, NotAssignedError, NotFoundError
from connect_runtime.api.records import SourceMap
from connect_runtime.lifecycle import ConnectorTaskId, TargetState
from connect_runtime.runtime.distributed.abstract_herder import AbstractHerder
from connect_runtime.runtime.distributed.connector_offsets import modify_offsets, offsets_to_alter
from connect_runtime.runtime.distributed.local_work import LocalWork
from connect_runtime.runtime.distributed.restarts import owner_url, restart_plan, restarting_view
from connect_runtime.runtime.distributed.tick_executor import TickExecutor
from connect_runtime.runtime.herder import ConnectorOffset, ConnectorStateInfo, Created
from connect_runtime.runtime.leader.generation_fencing import GenerationFencing
from connect_runtime.runtime.leader.leader_config_writer import LeaderConfigWriter
from connect_runtime.runtime.worker import connector_validation as validation
from connect_runtime.storage.config_records import RestartRequest
from connect_runtime.storage.config_topic_state import ClusterConfigState

logger = logging.getLogger(__name__)


class HerderRequests(AbstractHerder):
    """The request side of the distributed herder; the herder sets these parts up and runs the tick."""

    _worker_id: str
    _ticks: TickExecutor
    _leader: LeaderConfigWriter
    _fencing: GenerationFencing
    _work: LocalWork
    #: The tick thread's view of the config topic (read and replaced on the tick thread only).
    _snapshot: ClusterConfigState

    @abstractmethod
    def _reconcile(self) -> None:
        """Make the worker run exactly what the assignment and the snapshot say."""

    @abstractmethod
    def _refresh_snapshot(self) -> None:
        """Apply our own writes now rather than on the next tick (REST answers must reflect them)."""

    # ===================================================================== Herder: connectors ===
    def put_connector_config(self, name: str, config: Mapping[str, str], allow_replace: bool,
                             initial_state: TargetState | None = None) -> Created:
        validation.raise_if_invalid(self.validate_connector_config(config))

        def write() -> Created:
            self._leader.require_leader("create or update a connector")
            exists = self._snapshot.contains(name)
            if exists and not allow_replace:
                raise AlreadyExistsError(f"Connector {name} already exists")
            state = None if exists else initial_state
            logger.info("%s connector %s", "Updating" if exists else "Creating", name)
            self._leader.write(lambda: self._config_store.put_connector_config(name, dict(config), state))
            self._refresh_snapshot()
            return Created(not exists, self.connector_info(name))

        return self._ticks.submit(write)

    def delete_connector(self, name: str) -> None:
        def delete() -> None:
            self._leader.require_leader("delete a connector")
            self._require(self._snapshot, name)
            logger.info("Deleting connector %s", name)
            self._leader.write(lambda: self._config_store.remove_connector_config(name))
            self._refresh_snapshot()

        self._ticks.submit(delete)

    def restart_connector(self, name: str, include_tasks: bool,
                          only_failed: bool) -> ConnectorStateInfo | None:
        if not include_tasks and not only_failed:
            def restart_instance() -> None:
                self._require(self._snapshot, name)
                if not self._work.runs_connector(name):
                    raise NotAssignedError(f"Cannot restart connector {name}: not assigned to this worker",
                                           self._owner_url(name, None))
                self._work.stop_connector(name)
                self._reconcile()

            self._ticks.submit(restart_instance)
            return None

        def restart() -> ConnectorStateInfo:
            self._require(self._snapshot, name)
            self._leader.require_leader("restart a connector")
            current = self.connector_status(name)
            request = RestartRequest(name, include_tasks, only_failed)
            restart_connector, tasks = restart_plan(self._status_store, self._snapshot, request)
            self._leader.write(lambda: self._config_store.put_restart_request(request))
            return restarting_view(current, restart_connector, tasks)

        return self._ticks.submit(restart)

    def restart_task(self, task: ConnectorTaskId) -> None:
        def restart() -> None:
            if task not in self._snapshot.tasks(task.connector):
                raise NotFoundError(f"Unknown task: {task}")
            if not self._work.runs_task(task):
                raise NotAssignedError(f"Cannot restart task {task}: it is not assigned to this worker",
                                       self._owner_url(task.connector, task.task))
            self._work.stop_tasks([task])
            self._reconcile()

        self._ticks.submit(restart)

    def _owner_url(self, connector: str, task: int | None) -> str | None:
        return owner_url(self._status_store, connector, task, self._worker_id, self._leader.leader_url())

    def _set_target_state(self, name: str, state: TargetState) -> None:
        def write() -> None:
            self._require(self._snapshot, name)
            self._leader.require_leader(f"change the state of connector {name} to {state.value}")
            logger.info("Connector %s: target state %s requested", name, state.value)
            if state is TargetState.STOPPED:
                # Task configs first (Java): a STARTED connector with zero tasks is harmless if we die
                # in between; a STOPPED one with tasks would confuse users.
                self._leader.write(lambda: self._config_store.put_task_configs(name, []))
            self._leader.write(lambda: self._config_store.put_target_state(name, state))
            self._refresh_snapshot()

        self._ticks.submit(write)

    def pause_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.PAUSED)

    def resume_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STARTED)

    def stop_connector(self, name: str) -> None:
        self._set_target_state(name, TargetState.STOPPED)

    # ============================================================ internal endpoints (KIP-507) ===
    def session_key(self) -> bytes | None:
        key = self._config_store.snapshot().session_key
        return None if key is None else key.key

    def put_task_configs(self, connector: str, configs: list[dict[str, str]]) -> None:
        """Task configs a follower computed for a connector it runs (leader only)."""
        def write() -> None:
            self._require(self._snapshot, connector)
            self._leader.require_leader("write task configs")
            if configs == [dict(c) for c in self._snapshot.task_config_list(connector)] and (
                    self._snapshot.task_count(connector) == len(configs)):
                return
            logger.info("Connector %s: writing %d task config(s) sent by a follower", connector, len(configs))
            self._leader.write(lambda: self._config_store.put_task_configs(connector, configs))
            self._refresh_snapshot()

        self._ticks.submit(write)

    def task_transactional_ids(self, connector: str, task_count: int) -> list[str]:
        return self._leader.task_transactional_ids(connector, task_count)

    def fence_zombies(self, connector: str) -> None:
        """KIP-618 zombie fencing (leader only), see :meth:`LeaderConfigWriter.fence_zombies`."""
        self._leader.check_fencing_configured()

        def run() -> None:
            self._require(self._snapshot, connector)
            self._leader.require_leader(f"fence zombies of connector {connector}")
            if self._fencing.serve(self._config_store.snapshot(), connector):
                self._refresh_snapshot()

        self._ticks.submit(run)

    # ======================================================================== Herder: offsets ===
    def alter_connector_offsets(self, name: str, offsets: list[ConnectorOffset]) -> None:
        entries = offsets_to_alter(offsets)
        self._ticks.submit(lambda: self._modify_offsets(name, entries))

    def reset_connector_offsets(self, name: str) -> None:
        self._ticks.submit(lambda: self._modify_offsets(name, None))

    def _modify_offsets(self, name: str,
                        offsets: list[tuple[SourceMap, Mapping[str, Any] | None]] | None) -> None:
        """KIP-875 PATCH (``offsets``) or DELETE (None) on the tick thread: the connector must be STOPPED."""
        self._require(self._snapshot, name)
        self._leader.require_leader("modify connector offsets")
        modify_offsets(name, offsets, snapshot=self._snapshot, offset_store=self._offset_store,
                       plugins=self._plugins, fence=self._fencing.fence_for_offsets)
