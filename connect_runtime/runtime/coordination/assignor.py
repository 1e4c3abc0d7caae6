"""Incremental cooperative assignment of connectors and tasks to the workers of a Connect group.

This is the leader's half of KIP-415 (Java ``IncrementalCooperativeAssignor``), as a pure function of
its inputs plus a little memory of its own previous round. It never opens a socket and never reads a
clock: the coordinator passes ``now_ms`` in, so the unit tests drive time by hand.

Inputs of one round: the configured work (every connector and its task ids, from the config topic the
leader has read) and, for every member of the new generation, what that member reports it *owns*
(runs right now). Output: for every member, what it must start (``assigned``) and what it must stop
(``revoked``), plus ``delay_ms`` when lost work is being held back.

Invariants (the coordinator and the herder keep the other half; see ``kafka_membership.py``):

* **A. Never assign what someone owns.** An item is assigned only when no member of this generation
  reports it. Items revoked in this round are *not* reassigned in the same round: their owner first
  stops them and rejoins without them, and the next round (triggered by that rejoin) assigns them.
  That is KIP-415's two-round handoff, and the reason a task never runs on two live members.
* **B. Sticky.** An owned item stays where it is unless it was deleted, is owned twice, or must move
  to restore balance; balance revocations take only the excess above each worker's target.
* **C. Balanced within one.** Connectors and tasks are balanced separately (as Java does): after the
  rounds settle, every worker holds ``floor(n/w)`` or ``ceil(n/w)`` of each. The ceil slots go to the
  currently most loaded workers, so the fewest items move.
* **D. Lost work is held only when its owner let it go.** Work the leader assigned last round that no
  member reports any more (its worker left or died) is *lost*. Lost work whose last status says its
  owner stopped it cleanly (``released``: UNASSIGNED, written by a worker that shut down or restarts)
  is held unassigned for up to ``max_delay_ms`` (``scheduled.rebalance.max.delay.ms``) so that the
  restarting worker finds it still free; as soon as a new, empty member joins while work is held (the
  restarted worker, under its new member id) the held work goes to it at once instead of waiting out
  the delay. Lost work whose owner did *not* release it (a crash, kill -9, a machine or network loss:
  its status still says it runs there) is held only for ``crash_delay_ms``
  (``scheduled.rebalance.crash.delay.ms``, default 0: reassigned in the round that notices the
  departure). Java holds all lost work for the full delay, so a dead node stops its share of the work
  for five minutes; for a replicator that is five minutes of extra RPO exactly when a machine dies.
  No balance revocation happens while work is held (moving things around for a worker that is about
  to come back is wasted churn). When the delay expires, lost work goes to the least loaded workers,
  which are the ones that (re)joined empty. Exceptions, as in Java: when every member of the previous
  round is still present (the work was lost by a member that missed its assignment, not by a
  departure) or when this leader has no valid memory (new leader, or it missed a generation), missing
  work is treated as new and assigned at once.
* **E. Deterministic.** Members and items are visited in sorted order; the same inputs and memory
  give the same plan.
* **F. Connectors on the leader when a follower cannot reach it.** A follower that runs a connector
  hands the connector's task configs (and its exactly-once fencing requests) to the leader over
  internal REST; a member without it (MM2 without ``dedicated.mode.enable.internal.rest``) cannot. When
  the coordinator passes ``connectors_on`` (the leader's member id: some member said it cannot reach
  the leader), every connector goes to that member and only the tasks are balanced; a connector held
  by another member is revoked (and, invariant A, assigned to the leader in the next round). Lost
  connectors are never held back then: they belong to the leader at once. Connectors therefore move
  with leadership, and the leader writes their task configs itself.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from connect_runtime.lifecycle import ConnectorTaskId

logger = logging.getLogger(__name__)

T = TypeVar("T", str, ConnectorTaskId)


@dataclass(frozen=True, slots=True)
class ConnectorsAndTasks:
    """An immutable set of connectors and task ids (one worker's load, or any slice of the work)."""

    connectors: frozenset[str] = frozenset()
    tasks: frozenset[ConnectorTaskId] = frozenset()

    @classmethod
    def of(cls, connectors: Iterable[str] = (), tasks: Iterable[ConnectorTaskId] = ()) -> ConnectorsAndTasks:
        return cls(frozenset(connectors), frozenset(tasks))

    @classmethod
    def from_work(cls, work: Mapping[str, int]) -> ConnectorsAndTasks:
        """All connectors and their task ids from ``{connector: number of tasks}``."""
        return cls(frozenset(work),
                   frozenset(ConnectorTaskId(name, i) for name, count in work.items() for i in range(count)))

    def __or__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors | other.connectors, self.tasks | other.tasks)

    def __sub__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors - other.connectors, self.tasks - other.tasks)

    def __and__(self, other: ConnectorsAndTasks) -> ConnectorsAndTasks:
        return ConnectorsAndTasks(self.connectors & other.connectors, self.tasks & other.tasks)

    def __bool__(self) -> bool:
        return bool(self.connectors or self.tasks)

    def __len__(self) -> int:
        return len(self.connectors) + len(self.tasks)

    def __repr__(self) -> str:
        return f"<connectors={sorted(self.connectors)} tasks={[str(t) for t in sorted(self.tasks)]}>"


EMPTY = ConnectorsAndTasks()


def union(parts: Iterable[ConnectorsAndTasks]) -> ConnectorsAndTasks:
    result = EMPTY
    for part in parts:
        result = result | part
    return result


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What one member must stop (``revoked``) and then start (``assigned``) after a round."""

    assigned: ConnectorsAndTasks = EMPTY
    revoked: ConnectorsAndTasks = EMPTY


@dataclass(frozen=True, slots=True)
class AssignmentPlan:
    """The leader's decision for one generation.

    ``delay_ms`` > 0 means lost work (``held``) is being held back: every member schedules a rejoin after
    that many milliseconds, so that some leader looks at the lost work again when the delay expires.
    """

    members: Mapping[str, MemberAssignment]
    delay_ms: int = 0
    held: ConnectorsAndTasks = EMPTY


@dataclass
class _Deadline:
    """When held lost work is reassigned anyway; ``at_ms`` 0: nothing held."""

    at_ms: float = 0.0

    def hold(self, work: ConnectorsAndTasks, delay_ms: int, now_ms: float) -> tuple[ConnectorsAndTasks, int]:
        """(work still held, ms left); starts the clock on first use, clears it when it expires."""
        if not work or delay_ms <= 0:
            self.at_ms = 0.0
            return EMPTY, 0
        if self.at_ms > 0 and now_ms >= self.at_ms:
            logger.info("Scheduled rebalance delay expired; reassigning lost work %s", work)
            self.at_ms = 0.0
            return EMPTY, 0
        if self.at_ms <= 0:
            self.at_ms = now_ms + delay_ms
        return work, max(1, int(self.at_ms - now_ms))


@dataclass
class _Memory:
    """What the leader remembers from the round it computed last (Java's ``previousAssignment`` etc.)."""

    previous: ConnectorsAndTasks = EMPTY  # complete assignment after last round, minus revoked, plus held
    revoked: ConnectorsAndTasks = EMPTY  # revoked last round (to detect a revocation that did not happen)
    members: frozenset[str] = frozenset()
    generation: int | None = None
    clean_hold: _Deadline = field(default_factory=_Deadline)  # work its owner released
    crash_hold: _Deadline = field(default_factory=_Deadline)  # work of crashed members
    hold_members: frozenset[str] = frozenset()  # the members when the current hold began


class IncrementalCooperativeAssignor:
    """KIP-415 assignment with memory across rounds; one instance per worker (used while it leads)."""

    def __init__(self, max_delay_ms: int, crash_delay_ms: int = 0) -> None:
        self.max_delay_ms = max_delay_ms
        self.crash_delay_ms = crash_delay_ms
        self._memory = _Memory()

    def assign(self, configured: ConnectorsAndTasks, owned: Mapping[str, ConnectorsAndTasks], *,
               generation: int, last_completed_generation: int | None, now_ms: float,
               released: ConnectorsAndTasks = EMPTY, connectors_on: str | None = None) -> AssignmentPlan:
        """Compute the plan for ``generation``.

        ``owned`` maps every member id of the new generation to what it reports it runs.
        ``last_completed_generation`` is the last generation this worker completed (any leader); if
        it is not the one this assignor computed last, the memory is stale and is dropped (Java does
        the same) so missing work is treated as new. ``released`` is the work whose last status says
        its owner stopped it cleanly (invariant D); other lost work counts as crashed.
        ``connectors_on``: the member every connector must run on (invariant F), None to balance them.
        """
        if not owned:
            return AssignmentPlan({})
        memory = self._memory
        if memory.generation is None or memory.generation != last_completed_generation:
            if memory.generation is not None:
                logger.info("Assignor memory from generation %s dropped (last completed generation %s)",
                            memory.generation, last_completed_generation)
            memory = self._memory = _Memory()
        members = sorted(owned)
        active = union(owned.values())
        previous = memory.previous
        if memory.revoked & active:
            # A revocation of the last round did not take effect (its member missed the assignment):
            # resynchronise on what the members actually report.
            previous = active

        pinned = connectors_on if connectors_on in owned else None
        revoke = self._revoke_deleted_and_duplicated(configured, owned)
        if pinned is not None:
            for member in members:
                if member != pinned and owned[member].connectors:
                    revoke[member] = revoke[member] | ConnectorsAndTasks(owned[member].connectors)
        current = {m: owned[m] - revoke[m] for m in members}
        lost = (previous & configured) - active
        new = configured - previous - active
        if pinned is not None:  # a lost connector is the leader's at once (invariant F)
            new = new | ConnectorsAndTasks(lost.connectors)
            lost = ConnectorsAndTasks(tasks=lost.tasks)
        held, delay_ms = self._handle_lost(lost, released, owned, now_ms)
        new = new | (lost - held)

        if delay_ms == 0:
            for member, extra in self._balance_revocations(configured, current, pinned is None).items():
                revoke[member] = revoke[member] | extra
                current[member] = current[member] - extra

        if pinned is None:
            assigned = self._assign_least_loaded(new, current)
        else:
            assigned = self._assign_least_loaded(ConnectorsAndTasks(tasks=new.tasks), current)
            assigned[pinned] = assigned[pinned] | ConnectorsAndTasks(new.connectors)
        final = {m: current[m] | assigned[m] for m in members}
        revoked_all = union(revoke.values())
        memory.previous = union(final.values()) | held
        memory.revoked = revoked_all
        memory.members = frozenset(owned)
        memory.generation = generation
        plan = AssignmentPlan({m: MemberAssignment(assigned[m], revoke[m]) for m in members}, delay_ms, held)
        logger.debug("Generation %s plan: %s", generation, plan)
        return plan

    def led_alone(self, member: str, generation: int) -> bool:
        """Whether this assignor's last round was ``generation`` and ``member`` was its only member."""
        memory = self._memory
        return memory.generation == generation and memory.members == frozenset((member,))

    def note_generation(self, generation: int) -> None:
        """Record a round this leader completed without a plan (config mismatch), keeping its memory valid."""
        if self._memory.generation is not None:
            self._memory.generation = generation

    @staticmethod
    def _revoke_deleted_and_duplicated(
        configured: ConnectorsAndTasks, owned: Mapping[str, ConnectorsAndTasks],
    ) -> dict[str, ConnectorsAndTasks]:
        """Items no longer configured, and items reported by two members (revoked from all holders)."""
        connectors = Counter(c for o in owned.values() for c in o.connectors)
        tasks = Counter(t for o in owned.values() for t in o.tasks)
        duplicated = ConnectorsAndTasks(frozenset(c for c, n in connectors.items() if n > 1),
                                        frozenset(t for t, n in tasks.items() if n > 1))
        if duplicated:
            logger.warning("Work owned by more than one member, revoked from all of them: %s", duplicated)
        return {m: (o - configured) | (o & duplicated) for m, o in owned.items()}

    def _handle_lost(self, lost: ConnectorsAndTasks, released: ConnectorsAndTasks,
                     owned: Mapping[str, ConnectorsAndTasks], now_ms: float) -> tuple[ConnectorsAndTasks, int]:
        """Invariant D: returns (work to hold back, delay_ms); lost work not held is reassigned now."""
        memory = self._memory
        if not lost:
            memory.clean_hold.at_ms = memory.crash_hold.at_ms = 0.0
            return EMPTY, 0
        holding = memory.clean_hold.at_ms > 0 or memory.crash_hold.at_ms > 0
        if not holding and memory.members <= set(owned):
            logger.info("Work %s missing although no member departed; reassigning it now", lost)
            return EMPTY, 0
        if not holding:
            memory.hold_members = memory.members
        clean = lost & released
        crashed = lost - clean
        held_clean, clean_delay = memory.clean_hold.hold(clean, self.max_delay_ms, now_ms)
        if held_clean and self._newcomers(owned):
            logger.info("Lost work %s goes to the member(s) that joined since it was released: %s", held_clean,
                        ", ".join(self._newcomers(owned)))
            memory.clean_hold.at_ms, held_clean, clean_delay = 0.0, EMPTY, 0
        held_crashed, crash_delay = memory.crash_hold.hold(crashed, self.crash_delay_ms, now_ms)
        if crashed and not held_crashed:
            logger.info("Reassigning work %s of departed member(s) that did not release it (crash or lost "
                        "connection)", crashed)
        held = held_clean | held_crashed
        delays = [d for d in (clean_delay, crash_delay) if d > 0]
        if held:
            logger.info("Holding lost work %s for %d ms (released: scheduled.rebalance.max.delay.ms; "
                        "crashed: scheduled.rebalance.crash.delay.ms)", held, min(delays))
        return held, min(delays) if delays else 0

    def _newcomers(self, owned: Mapping[str, ConnectorsAndTasks]) -> list[str]:
        """Members that joined empty since the hold began: restarted workers, under new member ids."""
        return sorted(m for m, work in owned.items() if not work and m not in self._memory.hold_members)

    @staticmethod
    def _balance_revocations(configured: ConnectorsAndTasks, current: Mapping[str, ConnectorsAndTasks],
                             balance_connectors: bool = True) -> dict[str, ConnectorsAndTasks]:
        """Invariants B and C: revoke only each worker's excess above its target (tasks only under F)."""
        connectors = (_excess(len(configured.connectors), {m: c.connectors for m, c in current.items()})
                      if balance_connectors else {})
        tasks = _excess(len(configured.tasks), {m: c.tasks for m, c in current.items()})
        return {m: ConnectorsAndTasks(frozenset(connectors.get(m, ())), frozenset(tasks.get(m, ())))
                for m in set(connectors) | set(tasks)}

    @staticmethod
    def _assign_least_loaded(new: ConnectorsAndTasks,
                             current: Mapping[str, ConnectorsAndTasks]) -> dict[str, ConnectorsAndTasks]:
        connectors = _least_loaded(sorted(new.connectors), {m: len(c.connectors) for m, c in current.items()})
        tasks = _least_loaded(sorted(new.tasks), {m: len(c.tasks) for m, c in current.items()})
        return {m: ConnectorsAndTasks(frozenset(connectors[m]), frozenset(tasks[m])) for m in current}


def _targets(total: int, loads: Mapping[str, int]) -> dict[str, int]:
    """Per-worker targets summing to ``total``: ceil for the most loaded ``total % n``, floor for the rest."""
    floor, extra = divmod(total, len(loads))
    order = sorted(loads, key=lambda m: (-loads[m], m))
    return {m: floor + (1 if i < extra else 0) for i, m in enumerate(order)}


def _excess(total: int, items: Mapping[str, frozenset[T]]) -> dict[str, list[T]]:
    targets = _targets(total, {m: len(v) for m, v in items.items()})
    excess: dict[str, list[T]] = {}
    for member in sorted(items):
        surplus = len(items[member]) - targets[member]
        if surplus > 0:
            excess[member] = sorted(items[member])[-surplus:]
    return excess


def _least_loaded(new: list[T], loads: Mapping[str, int]) -> dict[str, list[T]]:
    counts = dict(loads)
    result: dict[str, list[T]] = {m: [] for m in loads}
    for item in new:
        member = min(counts, key=lambda m: (counts[m], m))
        result[member].append(item)
        counts[member] += 1
    return result
