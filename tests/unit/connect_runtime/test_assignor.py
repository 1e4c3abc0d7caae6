"""The incremental cooperative assignor (KIP-415), a pure function: joins, leaves, delays, config changes."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import (
    EMPTY,
    AssignmentPlan,
    ConnectorsAndTasks,
    IncrementalCooperativeAssignor,
    union,
)

DELAY_MS = 10_000


class Group:
    """Members that apply plans the way the coordinator does: stop revoked, start assigned, report owned."""

    def __init__(self, max_delay_ms: int = DELAY_MS, members: tuple[str, ...] = ("w1", "w2"),
                 crash_delay_ms: int = 0) -> None:
        self.assignor = IncrementalCooperativeAssignor(max_delay_ms, crash_delay_ms)
        #: Work whose last status says its owner stopped it cleanly (UNASSIGNED in the status topic).
        self.released = EMPTY
        self.owned: dict[str, ConnectorsAndTasks] = {m: EMPTY for m in members}
        self.generation = 0
        self.last_completed: int | None = None
        self.now_ms = 0.0
        self.work: dict[str, int] = {}

    def round(self) -> AssignmentPlan:
        self.generation += 1
        plan = self.assignor.assign(ConnectorsAndTasks.from_work(self.work), dict(self.owned),
                                    generation=self.generation, last_completed_generation=self.last_completed,
                                    now_ms=self.now_ms, released=self.released)
        for member, change in plan.members.items():
            assert not (change.assigned & change.revoked)
            # Invariant A: nothing assigned is owned by anyone at this point.
            assert not (change.assigned & union(self.owned.values()))
            self.owned[member] = (self.owned[member] - change.revoked) | change.assigned
            self.released = self.released - change.assigned  # its new owner reports it RUNNING
        self.last_completed = self.generation
        return plan

    def settle(self, max_rounds: int = 5) -> list[AssignmentPlan]:
        """Rounds until nothing is revoked (a revoking member rejoins at once, triggering the next round)."""
        plans = [self.round()]
        while any(c.revoked for c in plans[-1].members.values()):
            assert len(plans) < max_rounds, f"did not settle: {plans}"
            plans.append(self.round())
        return plans

    def leave(self, member: str, *, clean: bool) -> ConnectorsAndTasks:
        """``member`` leaves: a clean shutdown releases its work (statuses UNASSIGNED), a crash does not."""
        lost = self.owned.pop(member)
        if clean:
            self.released = self.released | lost
        return lost

    def moved(self, before: Mapping[str, ConnectorsAndTasks]) -> int:
        """How many items left the member that had them."""
        return sum(len(before[m] - self.owned.get(m, EMPTY)) for m in before)


def tasks(connector: str, *ids: int) -> frozenset[ConnectorTaskId]:
    return frozenset(ConnectorTaskId(connector, i) for i in ids)


def assert_complete_disjoint_balanced(group: Group) -> None:
    everything = ConnectorsAndTasks.from_work(group.work)
    owned = list(group.owned.values())
    assert union(owned) == everything
    assert sum(len(o) for o in owned) == len(everything), "some item is owned twice"
    connector_loads = [len(o.connectors) for o in owned]
    task_loads = [len(o.tasks) for o in owned]
    assert max(connector_loads) - min(connector_loads) <= 1, group.owned
    assert max(task_loads) - min(task_loads) <= 1, group.owned


def test_first_assignment_is_complete_disjoint_and_balanced() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 4, "b": 3, "c": 1}
    plans = group.settle()
    assert len(plans) == 1
    assert all(not c.revoked for c in plans[0].members.values())
    assert_complete_disjoint_balanced(group)


def test_assignment_is_deterministic_whatever_the_input_order() -> None:
    def run(order: tuple[str, ...], work: dict[str, int]) -> dict[str, ConnectorsAndTasks]:
        group = Group(members=order)
        group.work = work
        group.settle()
        return group.owned

    first = run(("w1", "w2", "w3"), {"a": 4, "b": 3, "c": 1})
    second = run(("w3", "w1", "w2"), {"c": 1, "b": 3, "a": 4})
    assert first == second


def test_join_moves_only_what_must_move_in_two_rounds() -> None:
    group = Group(members=("w1", "w2"))
    group.work = {"a": 6}
    group.settle()
    before = dict(group.owned)
    group.owned["w3"] = EMPTY

    first = group.round()
    # Round 1 only revokes, from the workers above the new target (2 tasks each)...
    assert {m: len(c.revoked.tasks) for m, c in first.members.items()} == {"w1": 1, "w2": 1, "w3": 0}
    assert not any(c.assigned for c in first.members.values())
    # ...round 2 (the revoking members rejoin) gives the revoked tasks to the new worker.
    second = group.round()
    revoked = first.members["w1"].revoked.tasks | first.members["w2"].revoked.tasks
    assert second.members["w3"].assigned.tasks == revoked
    assert not any(c.revoked for c in second.members.values())
    assert group.moved(before) == 2
    assert_complete_disjoint_balanced(group)


def test_leave_holds_lost_work_until_the_delay_expires_then_spreads_it() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 6, "b": 3}
    group.settle()
    lost = group.leave("w3", clean=True)
    kept = dict(group.owned)

    held = group.round()
    assert held.held == lost
    assert held.delay_ms == DELAY_MS
    assert not any(c.assigned or c.revoked for c in held.members.values())

    group.now_ms += DELAY_MS / 2
    still = group.round()
    assert still.held == lost
    assert still.delay_ms == DELAY_MS / 2
    assert group.owned == kept

    group.now_ms += DELAY_MS / 2
    released = group.round()
    assert released.held == EMPTY
    assert released.delay_ms == 0
    assert union(c.assigned for c in released.members.values()) == lost
    assert group.moved(kept) == 0
    assert_complete_disjoint_balanced(group)


def test_rolling_restart_gives_the_lost_work_back_to_the_restarted_worker_as_soon_as_it_joins() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 6, "b": 3}
    group.settle()
    before = dict(group.owned)
    lost = group.leave("w3", clean=True)
    assert group.round().held == lost  # w3 gone: its released work is held for it
    group.now_ms += 1000
    group.owned["w3-restarted"] = EMPTY
    back = group.round()
    assert back.held == EMPTY and back.delay_ms == 0
    assert back.members["w3-restarted"].assigned == lost
    assert not any(c.revoked for c in back.members.values())
    assert {m: group.owned[m] for m in ("w1", "w2")} == {m: before[m] for m in ("w1", "w2")}
    assert_complete_disjoint_balanced(group)


def test_crashed_members_work_is_reassigned_in_the_round_that_notices_the_departure() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 6, "b": 3}
    group.settle()
    lost = group.leave("w3", clean=False)
    kept = dict(group.owned)
    plan = group.round()
    assert plan.held == EMPTY and plan.delay_ms == 0
    assert union(c.assigned for c in plan.members.values()) == lost
    assert group.moved(kept) == 0
    assert_complete_disjoint_balanced(group)


def test_crash_delay_holds_a_crashed_members_work_for_that_long_only() -> None:
    group = Group(members=("w1", "w2", "w3"), crash_delay_ms=2_000)
    group.work = {"a": 6}
    group.settle()
    lost = group.leave("w3", clean=False)
    plan = group.round()
    assert plan.held == lost and plan.delay_ms == 2_000
    group.now_ms += 2_000
    plan = group.round()
    assert plan.held == EMPTY
    assert union(c.assigned for c in plan.members.values()) == lost


def test_released_and_crashed_work_are_held_separately() -> None:
    group = Group(members=("w1", "w2", "w3", "w4"))
    group.work = {"a": 8}
    group.settle()
    clean = group.leave("w3", clean=True)
    crashed = group.leave("w4", clean=False)
    plan = group.round()
    assert plan.held == clean and plan.delay_ms == DELAY_MS
    assert union(c.assigned for c in plan.members.values()) == crashed
    group.now_ms += DELAY_MS
    plan = group.round()
    assert plan.held == EMPTY
    assert union(c.assigned for c in plan.members.values()) == clean
    assert_complete_disjoint_balanced(group)


def test_new_work_is_assigned_while_lost_work_is_held() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 3}
    group.settle()
    group.leave("w3", clean=True)
    group.work["b"] = 2
    plan = group.round()
    assert plan.delay_ms == DELAY_MS
    assert union(c.assigned for c in plan.members.values()) == ConnectorsAndTasks.of({"b"}, tasks("b", 0, 1))


def test_more_tasks_only_adds_the_new_tasks() -> None:
    group = Group(members=("w1", "w2"))
    group.work = {"a": 4}
    group.settle()
    before = dict(group.owned)
    group.work = {"a": 6}
    plans = group.settle()
    assert len(plans) == 1
    assert union(c.assigned for c in plans[0].members.values()) == ConnectorsAndTasks.of((), tasks("a", 4, 5))
    assert group.moved(before) == 0
    assert_complete_disjoint_balanced(group)


def test_fewer_tasks_and_deleted_connectors_are_revoked_from_their_owners() -> None:
    group = Group(members=("w1", "w2"))
    group.work = {"a": 4, "b": 2}
    group.settle()
    group.work = {"a": 2}
    plans = group.settle()
    revoked = union(c.revoked for p in plans for c in p.members.values())
    assert revoked.connectors == {"b"}
    assert tasks("a", 2, 3) | tasks("b", 0, 1) <= revoked.tasks
    assert_complete_disjoint_balanced(group)


def test_work_reported_twice_is_revoked_from_both_then_assigned_once() -> None:
    group = Group(members=("w1", "w2"))
    group.work = {"a": 2}
    group.owned = {"w1": ConnectorsAndTasks.of({"a"}, tasks("a", 0)),
                   "w2": ConnectorsAndTasks.of({"a"}, tasks("a", 1))}
    first = group.round()
    assert first.members["w1"].revoked.connectors == {"a"}
    assert first.members["w2"].revoked.connectors == {"a"}
    group.settle()
    assert_complete_disjoint_balanced(group)


def test_missing_work_without_a_departure_is_reassigned_at_once() -> None:
    group = Group(members=("w1", "w2"))
    group.work = {"a": 2}
    group.settle()
    group.owned["w2"] = EMPTY  # w2 missed its assignment but is still a member
    plan = group.round()
    assert plan.delay_ms == 0
    assert_complete_disjoint_balanced(group)


def test_a_new_leader_without_memory_assigns_missing_work_at_once() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 3}
    group.settle()
    group.owned.pop("w3")
    group.assignor = IncrementalCooperativeAssignor(DELAY_MS)  # leadership moved to another worker
    plan = group.round()
    assert plan.delay_ms == 0
    assert_complete_disjoint_balanced(group)


def test_a_leader_that_missed_a_generation_forgets_its_memory() -> None:
    group = Group(members=("w1", "w2", "w3"))
    group.work = {"a": 3}
    group.settle()
    group.owned.pop("w3")
    group.last_completed = group.generation + 5  # generations led elsewhere in between
    assert group.round().delay_ms == 0
    assert_complete_disjoint_balanced(group)


def test_zero_delay_reassigns_lost_work_immediately() -> None:
    group = Group(max_delay_ms=0, members=("w1", "w2", "w3"))
    group.work = {"a": 3}
    group.settle()
    group.owned.pop("w3")
    plan = group.round()
    assert plan.delay_ms == 0
    assert_complete_disjoint_balanced(group)


EVENTS = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.integers(0, 5)),
    st.tuples(st.just("crash"), st.integers(0, 5)),
    st.tuples(st.just("tasks"), st.sampled_from("abc"), st.integers(0, 5)),
    st.tuples(st.just("wait"), st.integers(0, 2 * DELAY_MS)),
), max_size=12)


@settings(max_examples=150, deadline=None)
@given(events=EVENTS)
def test_random_histories_never_double_assign_and_settle_balanced(events: list[tuple[object, ...]]) -> None:
    group = Group(members=("w0", "w1"))
    group.work = {"a": 2}
    group.settle()
    for event in events:
        kind = event[0]
        if kind == "join":
            group.owned.setdefault(f"w{event[1]}", EMPTY)
        elif kind in ("leave", "crash") and len(group.owned) > 1 and f"w{event[1]}" in group.owned:
            group.leave(f"w{event[1]}", clean=kind == "leave")
        elif kind == "tasks":
            group.work[str(event[1])] = int(str(event[2]))
        elif kind == "wait":
            group.now_ms += int(str(event[1]))
        group.settle()  # Group.round asserts invariant A on every round
        owned = list(group.owned.values())
        assert sum(len(o) for o in owned) == len(union(owned)), "an item is owned twice"
    group.now_ms += DELAY_MS + 1
    group.settle()
    group.settle()
    assert_complete_disjoint_balanced(group)
