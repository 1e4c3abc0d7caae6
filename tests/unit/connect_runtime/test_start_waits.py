"""Start-up waits removed for issue 18: the three internal topics are read at once, idempotent producers
open their connections at once, and a transactional config write reports its offset so that it can be
read back without a read-to-end round. (The time saved is measured by bench/first_record.py.)"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from connect_runtime.clients import factory
from connect_runtime.runtime.distributed.distributed_herder import start_together
from connect_runtime.storage.fenced_writer import _unwrap  # noqa: PLC2701 (a unit test of this module's own internal)


def test_starts_run_at_the_same_time_and_only_the_started_ones_are_undone() -> None:
    # Each start waits for the other two: run one after the other, every one would time out.
    together = threading.Barrier(3, timeout=5)
    ran: list[str] = []

    def start(name: str, fail: bool = False) -> Any:
        def run() -> None:
            together.wait()
            ran.append(name)
            if fail:
                raise RuntimeError(f"{name} failed")
        return run

    stops, failure = start_together([(start("status"), [lambda: None]),
                                     (start("config", fail=True), [lambda: None]),
                                     (start("worker"), [lambda: None, lambda: None])])
    assert sorted(ran) == ["config", "status", "worker"]
    assert isinstance(failure, RuntimeError) and str(failure) == "config failed"
    assert len(stops) == 3  # status's one and the worker's two: nothing of the config store's


def test_stops_come_in_the_order_given_whatever_order_the_starts_end_in() -> None:
    order: list[str] = []
    late = threading.Event()

    def slow() -> None:
        late.wait(5)

    def quick() -> None:
        late.set()

    stops, failure = start_together([(slow, [lambda: order.append("slow")]),
                                     (quick, [lambda: order.append("quick")])])
    assert failure is None
    for stop in stops:
        stop()
    assert order == ["slow", "quick"]


@pytest.mark.parametrize(("config", "sparse"), [
    ({"enable.idempotence": "true"}, "false"),
    ({"transactional.id": "t-1"}, "false"),
    ({"enable.idempotence": "true", "enable.sparse.connections": "true"}, "true"),  # the user's choice
    ({"enable.idempotence": "false"}, None),
    ({}, None),
])
def test_idempotent_producers_open_their_connections_at_once(monkeypatch: pytest.MonkeyPatch,
                                                              config: dict[str, str], sparse: str | None) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(factory, "TrackedProducer", lambda conf: built.append(conf))
    monkeypatch.setattr(factory, "track", lambda client, kind: None)
    factory.new_producer({"bootstrap.servers": "127.0.0.1:9", **config})
    assert built[0].get("enable.sparse.connections") == sparse


def test_a_system_error_raised_over_a_kafka_error_is_that_kafka_error() -> None:
    fenced = KafkaException(KafkaError(KafkaError._FENCED))
    try:
        try:
            raise fenced
        except KafkaException as cause:
            raise SystemError("<built-in method commit_transaction> returned a result with an exception set") \
                from cause
    except SystemError as exc:
        assert _unwrap(exc) is fenced


def test_any_other_system_error_is_raised_as_it_is() -> None:
    error = SystemError("something else")
    with pytest.raises(SystemError, match="something else"):
        _unwrap(error)
