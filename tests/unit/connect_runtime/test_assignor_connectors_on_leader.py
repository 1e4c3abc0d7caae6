"""Invariant F of the assignor: while a member cannot reach the leader over internal REST, every connector
runs on the leader and only the tasks are balanced (issue 26: several MM2 nodes without internal REST).

Each row is one round from a fresh assignor (a new leader has no memory: missing work counts as new),
then, if it revoked something, the next round with the members reporting what they kept (KIP-415's
second round). The expected outcome is the connectors each member ends with and its number of tasks.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from connect_runtime.lifecycle import ConnectorTaskId
from connect_runtime.runtime.coordination.assignor import (
    EMPTY,
    ConnectorsAndTasks,
    IncrementalCooperativeAssignor,
    union,
)

WORK = {"source": 4, "checkpoint": 1, "heartbeat": 1}
ALL = ConnectorsAndTasks.from_work(WORK)


def owns(*connectors: str, tasks: int = 0, of: str = "source", first: int = 0) -> ConnectorsAndTasks:
    return ConnectorsAndTasks.of(connectors, (ConnectorTaskId(of, i) for i in range(first, first + tasks)))


def settle(owned: Mapping[str, ConnectorsAndTasks], connectors_on: str | None, work: ConnectorsAndTasks = ALL,
           assignor: IncrementalCooperativeAssignor | None = None, generation: int = 10,
           ) -> tuple[dict[str, ConnectorsAndTasks], int]:
    """Rounds until nothing is revoked; (what each member owns after, rounds taken)."""
    assignor = assignor or IncrementalCooperativeAssignor(max_delay_ms=300_000)
    owned = dict(owned)
    last: int | None = None
    for rounds in range(1, 5):
        plan = assignor.assign(work, owned, generation=generation + rounds, last_completed_generation=last,
                               now_ms=0.0, connectors_on=connectors_on)
        for member, change in plan.members.items():
            assert not change.assigned & union(owned.values()), "assigned work someone owns (invariant A)"
            owned[member] = (owned[member] - change.revoked) | change.assigned
        last = generation + rounds
        if not any(c.revoked for c in plan.members.values()):
            return owned, rounds
    raise AssertionError(f"did not settle: {owned}")


ROWS = [
    # (why, members' owned work, connectors_on, expected {member: (connectors, task count)}, rounds)
    ("first assignment: connectors on the leader, tasks spread",
     {"w1": EMPTY, "w2": EMPTY}, "w1",
     {"w1": ({"source", "checkpoint", "heartbeat"}, 3), "w2": (set(), 3)}, 1),
    ("the same without the rule: connectors spread too",
     {"w1": EMPTY, "w2": EMPTY}, None,
     {"w1": ({"checkpoint", "source"}, 3), "w2": ({"heartbeat"}, 3)}, 1),
    ("a follower's connector is revoked, then the leader gets it",
     {"w1": owns("checkpoint", "heartbeat", tasks=3), "w2": owns("source", tasks=3, first=1)}, "w1",
     {"w1": ({"source", "checkpoint", "heartbeat"}, 3), "w2": (set(), 3)}, 2),
    ("leadership moved to w2: the connectors follow it",
     {"w1": owns("source", "checkpoint", "heartbeat", tasks=3), "w2": owns(tasks=3, first=1)}, "w2",
     {"w1": (set(), 3), "w2": ({"source", "checkpoint", "heartbeat"}, 3)}, 2),
    ("the leader died: the survivor, new leader, takes connectors and tasks at once",
     {"w2": owns(tasks=2, first=2)}, "w2",
     {"w2": ({"source", "checkpoint", "heartbeat"}, 6)}, 1),
    ("a restarted member joins empty: it gets tasks, never connectors",
     {"w1": owns("source", "checkpoint", "heartbeat", tasks=4) | ConnectorsAndTasks.of(
         (), {ConnectorTaskId("checkpoint", 0), ConnectorTaskId("heartbeat", 0)}), "w2": EMPTY}, "w1",
     {"w1": ({"source", "checkpoint", "heartbeat"}, 3), "w2": (set(), 3)}, 2),
    ("three members, the leader in the middle of the sort order",
     {"w1": EMPTY, "w2": EMPTY, "w3": EMPTY}, "w2",
     {"w1": (set(), 2), "w2": ({"source", "checkpoint", "heartbeat"}, 2), "w3": (set(), 2)}, 1),
    ("an unknown leader id changes nothing (the rule needs a member)",
     {"w1": EMPTY, "w2": EMPTY}, "gone",
     {"w1": ({"checkpoint", "source"}, 3), "w2": ({"heartbeat"}, 3)}, 1),
]


@pytest.mark.parametrize(("why", "owned", "connectors_on", "expected", "rounds"), ROWS, ids=[r[0] for r in ROWS])
def test_connectors_on_the_leader_table(why: str, owned: dict[str, ConnectorsAndTasks], connectors_on: str | None,
                                        expected: dict[str, tuple[set[str], int]], rounds: int) -> None:
    after, taken = settle(owned, connectors_on)
    assert {m: (set(o.connectors), len(o.tasks)) for m, o in after.items()} == expected, why
    assert taken == rounds, why
    assert union(after.values()) == ALL and sum(len(o) for o in after.values()) == len(ALL), "complete, disjoint"


def test_lost_connectors_are_never_held_but_a_followers_released_tasks_are() -> None:
    """The leader keeps its memory; a follower leaves cleanly: its tasks wait for it (the delay), and a
    connector that went missing with it (it held one before the rule applied) is the leader's at once."""
    assignor = IncrementalCooperativeAssignor(max_delay_ms=300_000)
    owned, _ = settle({"w1": EMPTY, "w2": EMPTY}, "w1", assignor=assignor, generation=0)
    last = 1
    gone = owned.pop("w2")
    plan = assignor.assign(ALL, owned, generation=2, last_completed_generation=last, now_ms=0.0,
                           released=gone, connectors_on="w1")
    assert plan.held == gone and plan.delay_ms == 300_000
    assert not plan.members["w1"].assigned

    # Same, but the departed follower held a connector (balanced before the rule applied).
    assignor = IncrementalCooperativeAssignor(max_delay_ms=300_000)
    owned, _ = settle({"w1": EMPTY, "w2": EMPTY}, None, assignor=assignor, generation=0)
    gone = owned.pop("w2")
    assert gone.connectors == {"heartbeat"}
    plan = assignor.assign(ALL, owned, generation=2, last_completed_generation=1, now_ms=0.0,
                           released=gone, connectors_on="w1")
    assert plan.members["w1"].assigned.connectors == {"heartbeat"}
    assert plan.held == ConnectorsAndTasks(tasks=gone.tasks)


def test_a_new_connector_goes_to_the_leader_while_tasks_are_held() -> None:
    assignor = IncrementalCooperativeAssignor(max_delay_ms=300_000)
    owned, _ = settle({"w1": EMPTY, "w2": EMPTY, "w3": EMPTY}, "w1", assignor=assignor, generation=0)
    gone = owned.pop("w3")
    work = ALL | ConnectorsAndTasks.from_work({"extra": 1})
    plan = assignor.assign(work, owned, generation=2, last_completed_generation=1, now_ms=0.0,
                           released=gone, connectors_on="w1")
    assert plan.held == gone
    assert plan.members["w1"].assigned.connectors == {"extra"}
    assert plan.members["w2"].assigned.connectors == frozenset()
