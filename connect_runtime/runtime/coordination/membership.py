"""Cluster membership: who leads the Connect group and which connectors and tasks each worker runs.

The herder never decides its own work; it asks a :class:`GroupMembership` and reconciles what it runs
with the :class:`Assignment` it gets back. Two implementations fit the seam:

* :class:`~connect_runtime.runtime.coordination.kafka_membership.KafkaGroupMembership`, what
  ``connect-distributed`` and the MM2 driver use: kafka-python's ``BaseCoordinator`` (through
  :mod:`~connect_runtime.clients.group_client`) with protocol type ``connect``.
  The leader computes everyone's assignment from the config snapshot during the group's sync phase.
* :class:`SoleMember`, for unit tests only: this process is the whole cluster, always the leader and
  assigned every connector and task in the config snapshot it is shown (no broker coordination).

Contract shared by both (what keeps the herder unchanged when one replaces the other):

* every call happens on the herder's tick thread;
* :meth:`GroupMembership.poll` is called at least every ``heartbeat.interval.ms`` and is given the
  herder's latest config snapshot; it returns a new Assignment whenever the group's assignment (or
  generation) changed, else None;
* an Assignment is the full set this worker should run, not a delta: the herder stops whatever is
  running and not in it (revoked) *before* starting what is new, so a task never runs on two workers
  of the same generation;
* :meth:`GroupMembership.request_rebalance` tells the membership that connectors or tasks were added
  or removed (``work_changed``), so the leader must reassign, or that it must rejoin for another reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.storage.config_topic_state import ClusterConfigState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Assignment:
    """What this worker runs in one group generation."""

    generation: int
    leader: bool
    leader_url: str | None
    connectors: frozenset[str]
    tasks: frozenset[ConnectorTaskId]
    config_offset: int = -1

    @classmethod
    def of(cls, generation: int, leader: bool, leader_url: str | None, connectors: Iterable[str],
           tasks: Iterable[ConnectorTaskId], config_offset: int = -1) -> Assignment:
        return cls(generation, leader, leader_url, frozenset(connectors), frozenset(tasks), config_offset)


class GroupMembership(Protocol):
    """This worker's membership of the Connect group."""

    def join(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment:
        """Join the group and wait for the first assignment. Raises ConnectError on timeout."""
        ...

    def poll(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment | None:
        """Heartbeat; return the new assignment after a completed rebalance, else None.

        May block up to ``timeout_s`` when nothing happens (the herder wakes it with :meth:`wakeup`).
        """
        ...

    def request_rebalance(self, work_changed: bool = False) -> None:
        """Rejoin the group. ``work_changed``: only because connectors or tasks were added or removed,
        so that a leader that is the group's only member may assign them without a rebalance (a
        rebalance for any other reason, e.g. a fenced leader, always rejoins)."""
        ...

    def wakeup(self) -> None:
        """Make a blocked :meth:`poll` return early (thread-safe)."""
        ...

    def leave(self) -> None:
        """Leave the group so that others take over at once."""
        ...


class SoleMember:
    """A one-worker cluster: always the leader, assigned everything.

    The generation grows by one each time the assignment changes, as a real group's would after a
    rebalance; statuses are written with it. A Kafka coordinator keeps generations across worker
    restarts; a sole member cannot, so ``generation_floor`` (the highest generation in the status
    topic) makes it start above every status already written. Otherwise, a restarted worker with a
    new worker id could not overwrite an old RUNNING with FAILED (invariant "generation" of
    :mod:`connect_runtime.storage.status_store`).
    """

    def __init__(self, advertised_url: str | None, generation_floor: Callable[[], int] | None = None) -> None:
        self._url = advertised_url
        self._floor = generation_floor
        self._generation = 0
        self._current: Assignment | None = None

    def _assign(self, snapshot: ClusterConfigState) -> Assignment:
        connectors = snapshot.connectors()
        tasks = snapshot.all_tasks()
        return Assignment.of(self._generation, True, self._url, connectors, tasks, snapshot.offset)

    def join(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment:
        floor = self._floor() if self._floor is not None else 0
        self._generation = max(self._generation, floor) + 1
        self._current = self._assign(snapshot)
        logger.info("Joined as the only member of the group, generation %d: %d connector(s), %d task(s)",
                    self._generation, len(self._current.connectors), len(self._current.tasks))
        return self._current

    def poll(self, snapshot: ClusterConfigState, timeout_s: float) -> Assignment | None:
        if self._current is None:
            return self.join(snapshot, timeout_s)
        candidate = self._assign(snapshot)
        if (candidate.connectors, candidate.tasks) == (self._current.connectors, self._current.tasks):
            return None
        self._generation += 1
        self._current = Assignment.of(self._generation, True, self._url, candidate.connectors,
                                      candidate.tasks, snapshot.offset)
        logger.info("Rebalanced to generation %d: %d connector(s), %d task(s)", self._generation,
                    len(self._current.connectors), len(self._current.tasks))
        return self._current

    def request_rebalance(self, work_changed: bool = False) -> None:
        """Nothing to do: every poll recomputes the assignment from the snapshot it is given."""

    def wakeup(self) -> None:
        """Nothing blocks in :meth:`poll`."""

    def leave(self) -> None:
        self._current = None
