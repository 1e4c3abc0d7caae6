"""/admin/loggers on Python logging (KIP-495 / KIP-976 shapes)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from connect_runtime.rest.app import create_app

from .fake_herder import FakeHerder

NS = "tests.rest.loggers.ns"


@pytest.fixture(autouse=True)
def restore_levels() -> Iterator[None]:
    names = [NS, NS + ".child", NS + ".child.grand", NS + "sibling"]
    for name in names:
        logging.getLogger(name)  # exist before the request, as real module loggers do
    yield
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_put_sets_namespace_and_descendants(client: TestClient) -> None:
    response = client.put(f"/admin/loggers/{NS}", json={"level": "DEBUG"})
    assert response.status_code == 200
    assert response.json() == [NS, NS + ".child", NS + ".child.grand"]  # not the "...nssibling" logger
    assert logging.getLogger(NS + ".child.grand").level == logging.DEBUG
    assert logging.getLogger(NS + "sibling").level == logging.NOTSET
    one = client.get(f"/admin/loggers/{NS}.child").json()
    assert one["level"] == "DEBUG"
    assert isinstance(one["last_modified"], int)
    listed = client.get("/admin/loggers").json()
    assert listed[NS]["level"] == "DEBUG"
    assert listed["root"]["level"] == logging.getLevelName(logging.getLogger().getEffectiveLevel()).replace(
        "WARNING", "WARN").replace("CRITICAL", "FATAL")


@pytest.mark.parametrize(("given", "reported"), [
    ("warn", "WARN"), ("WARNING", "WARN"), ("fatal", "FATAL"), ("CRITICAL", "FATAL"), ("TRACE", "TRACE"),
    ("error", "ERROR"),
])
def test_levels_accept_log4j_and_python_names(client: TestClient, given: str, reported: str) -> None:
    assert client.put(f"/admin/loggers/{NS}", json={"level": given}).status_code == 200
    assert client.get(f"/admin/loggers/{NS}").json()["level"] == reported


def test_unknown_logger_is_404(client: TestClient) -> None:
    response = client.get("/admin/loggers/tests.rest.loggers.never.created")
    assert response.status_code == 404
    assert response.json()["message"] == "Logger tests.rest.loggers.never.created not found."


def test_cluster_scope_uses_herder_when_it_can() -> None:
    class ClusterHerder(FakeHerder):
        def set_cluster_logger_level(self, namespace: str, level: str) -> bool:
            self.calls.append(("set_cluster_logger_level", namespace, level))
            return True

    herder = ClusterHerder()
    with TestClient(create_app(herder)) as client:
        response = client.put(f"/admin/loggers/{NS}?scope=cluster", json={"level": "INFO"})
    assert (response.status_code, response.content) == (204, b"")
    assert herder.called("set_cluster_logger_level") == [(NS, "INFO")]
    assert logging.getLogger(NS).level == logging.NOTSET  # the herder applies it, via the config topic


def test_cluster_scope_without_cluster_support_applies_locally(client: TestClient) -> None:
    response = client.put(f"/admin/loggers/{NS}?scope=CLUSTER", json={"level": "ERROR"})
    assert response.status_code == 204
    assert logging.getLogger(NS).level == logging.ERROR


def test_unknown_scope_defaults_to_worker(client: TestClient, caplog: Any) -> None:
    response = client.put(f"/admin/loggers/{NS}?scope=galaxy", json={"level": "ERROR"})
    assert response.status_code == 200
    assert NS in response.json()
