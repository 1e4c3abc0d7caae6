"""Fixtures of the Kafka tier: Apache Kafka 4.4 brokers (tests/support/apache_kafka.py).

``kafka_a`` and ``kafka_b`` are shared by the tests of one pytest worker (started on first use): each has
every listener (PLAINTEXT, SSL, MTLS, SASL_PLAINTEXT, SASL_SSL with PLAIN, SCRAM and OAUTHBEARER) and the
StandardAuthorizer, :data:`SUPER_USERS` being super users (alice and bob are not). A test that
stops, kills or reconfigures a broker starts its own with ``fresh_kafka``.

A broker that cannot be fetched or started is a :class:`KafkaStartError`, the infrastructure failure a
test may be rerun for (tests/conftest.py). Without Java or Maven the tier is skipped locally; under CI
(``CI=true`` or ``MIRROR_REQUIRE_BROKERS=1``) it fails.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from tests.support.apache_kafka import KafkaBroker, KafkaStartError
from tests.support.tls import Pki

#: Every listener the shared brokers have.
ALL_LISTENERS = ("SSL", "MTLS", "SASL_PLAINTEXT", "SASL_SSL")
#: PLAINTEXT clients (ANONYMOUS), the SASL user admin and the test PKI's client certificate (MTLS).
SUPER_USERS = ("User:ANONYMOUS", "User:admin", "User:CN=mm2-client")


def _required() -> bool:
    return os.environ.get("MIRROR_REQUIRE_BROKERS") == "1" or os.environ.get("CI", "").lower() == "true"


def start_kafka(broker: KafkaBroker) -> KafkaBroker:
    """``broker.start()``; a start failure skips the test locally and raises under CI."""
    try:
        return broker.start()
    except KafkaStartError as exc:
        if _required():
            raise
        pytest.skip(f"no Apache Kafka broker: {exc}")


@pytest.fixture(scope="session")
def kafka_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kafka")


def _shared(name: str, kafka_dir: Path, pki: Pki) -> Iterator[KafkaBroker]:
    broker = start_kafka(KafkaBroker(name, kafka_dir / name, listeners=ALL_LISTENERS, pki=pki, authorizer=True,
                                     super_users=SUPER_USERS))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_a(kafka_dir: Path, pki: Pki) -> Iterator[KafkaBroker]:
    """Apache Kafka cluster "A" shared by this worker's tests (every listener, StandardAuthorizer)."""
    yield from _shared("a", kafka_dir, pki)


@pytest.fixture(scope="session")
def kafka_b(kafka_dir: Path, pki: Pki) -> Iterator[KafkaBroker]:
    """Apache Kafka cluster "B" shared by this worker's tests (every listener, StandardAuthorizer)."""
    yield from _shared("b", kafka_dir, pki)


@pytest.fixture
def fresh_kafka(tmp_path: Path, pki: Pki) -> Iterator[Callable[..., KafkaBroker]]:
    """Factory of brokers owned by one test: ``fresh_kafka("src", listeners=(...), config={...})``.

    Keyword arguments are :class:`KafkaBroker` fields; every broker is stopped after the test."""
    started: list[KafkaBroker] = []

    def make(name: str, **kwargs: Any) -> KafkaBroker:
        kwargs.setdefault("pki", pki)
        broker = KafkaBroker(name, tmp_path / f"kafka-{name}", **kwargs)
        started.append(broker)
        return start_kafka(broker)

    yield make
    for broker in started:
        broker.stop()


class Stoppable(Protocol):
    def stop(self) -> None: ...


@pytest.fixture
def running(request: pytest.FixtureRequest) -> Iterator[list[Stoppable]]:
    """Whatever a test started (nodes, load, checker), stopped in reverse order even when it fails; the
    nodes' logs (anything with a ``tail``) are printed when it failed."""
    started: list[Stoppable] = []
    failed_before = request.session.testsfailed
    yield started
    for thing in reversed(started):
        thing.stop()
    if request.session.testsfailed > failed_before:
        for thing in started:
            tail = getattr(thing, "tail", None)
            if callable(tail):
                print(f"\n{getattr(thing, 'log', thing)}:\n{tail(80)}")
