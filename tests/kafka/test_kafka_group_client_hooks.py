"""The group client's SyncGroup hook on Apache Kafka: a SyncGroup answered REBALANCE_IN_PROGRESS confirms
the member as of the answer's arrival, not the request's send time.

Kafka's coordinator holds a follower's SyncGroup until the leader's arrives; when another member's
JoinGroup starts a new rebalance meanwhile, it answers the held SyncGroup REBALANCE_IN_PROGRESS and
restarts the session of every member it answers that way. The member is then still in the group as of
the answer, which may be a whole session after the request left; confirming it as of the send time made
a worker whose SyncGroup was held fence itself. Here the leader's assignment takes a few seconds, a third
member joins while the follower's SyncGroup is held, and the follower's first confirmation must be dated
after that join started (the other hooks: tests/integration/test_group_client_hooks.py, on Tansu).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

import pytest

from tests.integration.test_group_client_hooks import Member
from tests.support.apache_kafka import KafkaBroker
from tests.support.kafka import unique

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

ASSIGN_S = 4.0


class SlowLeader(Member):
    """A member whose assignment, once ``slow`` is set, takes ASSIGN_S (``assigning`` says it started)."""

    def __init__(self, bootstrap: str, group: str, name: str) -> None:
        self.slow = threading.Event()
        self.assigning = threading.Event()
        super().__init__(bootstrap, group, name)

    def _assign(self, leader: str, generation: int, members: Mapping[str, bytes]) -> dict[str, bytes]:
        if self.slow.is_set():
            self.slow.clear()
            self.assigning.set()
            time.sleep(ASSIGN_S)
        return super()._assign(leader, generation, members)


def _drive(members: list[Member], stop: threading.Event) -> list[threading.Thread]:
    def loop(member: Member) -> None:
        while not stop.is_set():
            member.client.ensure_active_group(0.2)
            member.client.poll_heartbeat()

    threads = [threading.Thread(target=loop, args=(m,), name=f"drive-{m.name}", daemon=True) for m in members]
    for thread in threads:
        thread.start()
    return threads


def test_a_sync_group_answered_rebalance_in_progress_confirms_at_its_arrival(kafka_a: KafkaBroker) -> None:
    group = unique("hooks-held-sync")
    bootstrap = kafka_a.bootstrap_servers
    leader = SlowLeader(bootstrap, group, "leader")
    members: list[Member] = [leader]
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        assert leader.client.ensure_active_group(60)  # alone: the leader from here on
        leader.slow.set()
        follower = Member(bootstrap, group, "follower")
        members.append(follower)
        threads = _drive([leader, follower], stop)
        assert leader.assigning.wait(60), "the leader never assigned the second generation"
        time.sleep(1.0)  # the follower's SyncGroup has left and is held by the coordinator
        third = Member(bootstrap, group, "third")
        members.append(third)
        joined_from = time.monotonic()  # the third member's JoinGroup leaves after this
        threads += _drive([third], stop)
        deadline = time.monotonic() + 90
        while not (follower.confirmations and follower.joins):
            assert time.monotonic() < deadline, (follower.confirmations, follower.joins)
            time.sleep(0.1)
        first_at, told, joins_by_then = follower.confirmations[0]
        assert joins_by_then == 0  # a SyncGroup answer: no heartbeat runs before the first join
        # dated at the held SyncGroup's answer (after the third member's JoinGroup), not at its send
        assert first_at >= joined_from, (first_at - joined_from, follower.confirmations)
        assert told - first_at < ASSIGN_S / 2
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        for member in members:
            member.close()
