"""The group client's kafka-python hooks, each shown doing its job against a real broker (Tansu).

connect_runtime/clients/group_client.py overrides kafka-python internals; its version gate checks their
names and signatures, and these tests check what each is for, so a kafka-python release that keeps a
hook's signature but stops calling it, or calls it differently, fails here:

* ``_perform_assignment``: called once per generation, on the leader only, with every member's metadata;
* ``_on_join_complete_async``: delivers this member's own assignment bytes;
* ``_do_join_and_sync_async``: an exchange that finished while nobody was waiting is kept for the next
  poll, so a member polling with a zero timeout joins (without it, each poll starts a new JoinGroup).

* ``_process_sync_group_response`` and ``_handle_heartbeat_response``: the broker still counted this
  member as of the request's *send* time, which the session lease is measured from; shown through a
  proxy that delays every byte, so the time a response arrives is well after its request was sent.

The other case of ``_process_sync_group_response`` (a SyncGroup answered REBALANCE_IN_PROGRESS confirms
at its arrival: Kafka's coordinator holds such a SyncGroup until another member's JoinGroup) needs
Apache Kafka's coordinator: tests/kafka/test_kafka_group_client_hooks.py.

Tansu holds every JoinGroup for session.timeout.ms / 2 (docs/tansu.md), so the session is short here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from connect_runtime.clients.group_client import (
    CoordinatorCallbacks,
    CoordinatorSettings,
    KafkaPythonCoordinator,
    group_client_config,
)
from mirror.local.broker import LocalBroker, free_port
from tests.conftest import Cluster
from tests.support.kafka import unique
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.integration

SESSION_MS = 6000
PROTOCOL_TYPE = "connect"
PROTOCOL = "hooks"


class Member:
    """One group member built as a worker builds it, recording what the hooks passed to its callbacks."""

    def __init__(self, cluster: Cluster | str, group: str, name: str) -> None:
        self.name = name
        self.metadata = f"metadata-of-{name}".encode()
        self.lock = threading.Lock()
        self.assigned: list[tuple[str, int, dict[str, bytes]]] = []  # (leader, generation, members' metadata)
        self.joins: list[tuple[int, str, bytes]] = []  # (generation, member id, assignment)
        self.join_requests = 0  # JoinGroup exchanges started (join_in_flight with a send time)
        self.confirmations: list[tuple[float, float, int]] = []  # (as of, when told, joins by then)
        callbacks = CoordinatorCallbacks(metadata=self._metadata, assign=self._assign, joined=self._joined,
                                         join_in_flight=self._in_flight, confirmed=self._confirmed,
                                         changed=lambda: None)
        settings = CoordinatorSettings(group, SESSION_MS, 1000, 30_000, retry_backoff_ms=100,
                                       request_timeout_ms=30_000)
        bootstrap = cluster if isinstance(cluster, str) else cluster.bootstrap
        config = group_client_config({"bootstrap.servers": bootstrap, "client.id": f"hooks-{name}"})
        self.client = KafkaPythonCoordinator.connect(config, settings, PROTOCOL_TYPE, PROTOCOL, callbacks, 30)

    def _metadata(self, _generation_lost: bool) -> bytes:
        return self.metadata

    def _assign(self, leader: str, generation: int, members: Mapping[str, bytes]) -> dict[str, bytes]:
        with self.lock:
            self.assigned.append((leader, generation, dict(members)))
        return {member: b"assignment-for-" + metadata for member, metadata in members.items()}

    def _joined(self, generation: int, member_id: str, assignment: bytes) -> None:
        with self.lock:
            self.joins.append((generation, member_id, assignment))

    def _in_flight(self, sent_at: float | None) -> None:
        if sent_at is not None:
            with self.lock:
                self.join_requests += 1

    def _confirmed(self, at: float) -> None:
        with self.lock:
            self.confirmations.append((at, time.monotonic(), len(self.joins)))

    def close(self) -> None:
        try:
            self.client.leave_group(5000)
        finally:
            self.client.close()


def _join_together(members: list[Member], timeout_s: float) -> int:
    """Poll every member until all are joined in one generation; that generation."""
    deadline = time.monotonic() + timeout_s
    while True:
        for member in members:
            member.client.ensure_active_group(0.2)
            member.client.poll_heartbeat()
        generations = {m.joins[-1][0] if m.joins else None for m in members}
        if None not in generations and len(generations) == 1 and all(m.client.stable() for m in members):
            return int(next(iter(generations)))  # type: ignore[arg-type]
        assert time.monotonic() < deadline, [(m.name, m.joins) for m in members]


def test_the_leader_assigns_once_per_generation_from_every_members_metadata_and_each_gets_its_own_bytes(
        cluster_a: Cluster) -> None:
    group = unique("hooks-assign")
    members = [Member(cluster_a, group, "one"), Member(cluster_a, group, "two")]
    try:
        generation = _join_together(members, 90)
        ids = {m.name: m.client.member_id for m in members}
        calls = [(m.name, call) for m in members for call in m.assigned if call[1] == generation]
        assert len(calls) == 1, calls  # _perform_assignment: once, on one member
        leader_name, (leader_id, _, metadata) = calls[0]
        assert leader_id == ids[leader_name]
        assert metadata == {ids[m.name]: m.metadata for m in members}  # every member's metadata
        for member in members:  # _on_join_complete_async: this member's own bytes
            assert member.joins[-1] == (generation, ids[member.name], b"assignment-for-" + member.metadata)
    finally:
        for member in members:
            member.close()


def test_a_member_polling_with_a_zero_timeout_joins_with_the_exchange_that_finished_between_polls(
        cluster_a: Cluster) -> None:
    """As many JoinGroup exchanges as a member that waits for its join (kafka-python retries once for
    MEMBER_ID_REQUIRED): the exchange that finished between two polls was claimed, not redone."""
    waiter = Member(cluster_a, unique("hooks-wait"), "waiter")
    try:
        assert waiter.client.ensure_active_group(60)
        expected_requests = waiter.join_requests
    finally:
        waiter.close()
    member = Member(cluster_a, unique("hooks-zero"), "poller")
    try:
        deadline = time.monotonic() + 60
        while not member.client.ensure_active_group(0.001):  # never waits for the exchange itself
            assert time.monotonic() < deadline, f"not joined; {member.join_requests} JoinGroup exchanges started"
            time.sleep(0.05)
        assert member.join_requests == expected_requests
        assert len(member.joins) == 1
        generation, member_id, assignment = member.joins[0]
        assert member_id == member.client.member_id
        assert assignment == b"assignment-for-" + member.metadata
        assert [call[1] for call in member.assigned] == [generation]
    finally:
        member.close()


DELAY_S = 0.5


def test_sync_group_and_heartbeat_responses_confirm_the_member_as_of_the_requests_send_time(
        tmp_path: Path) -> None:
    """Every byte is held DELAY_S each way, so a response arrives at least 2 x DELAY_S after its request
    left: a confirmation dated at the arrival would be told at once, one dated at the send that late."""
    port = free_port()
    with TcpProxy(port) as proxy:
        broker = LocalBroker(name="hooks", port=port, advertised_port=proxy.port, log_dir=tmp_path).start()
        try:
            proxy.delay(DELAY_S)
            member = Member(f"127.0.0.1:{proxy.port}", unique("hooks-lease"), "lease")
            try:
                assert member.client.ensure_active_group(60)
                sync = [c for c in member.confirmations if c[2] == 0]  # told before the join completed
                assert sync, "no SyncGroup confirmation"
                deadline = time.monotonic() + 30
                while len([c for c in member.confirmations if c[2] == 1]) < 3:
                    member.client.poll_heartbeat()
                    assert time.monotonic() < deadline, member.confirmations
                    time.sleep(0.1)
                heartbeats = [c for c in member.confirmations if c[2] == 1]
                for at, told, _ in sync + heartbeats:
                    assert told - at >= 2 * DELAY_S * 0.9, (sync, heartbeats)
            finally:
                member.close()
        finally:
            proxy.delay(0)
            broker.stop()
