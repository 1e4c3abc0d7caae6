"""HerderSlot: the stable REST target of one MM2 flow, before and while its herder runs (no sockets)."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterator
from typing import cast
from unittest import mock

import pytest
from starlette.exceptions import StarletteDeprecationWarning

with warnings.catch_warnings():
    # Starlette 1.x nudges towards the httpx2 package for its TestClient; httpx is what we ship with.
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

from connect_runtime.api.errors import ConflictError, ForbiddenError
from connect_runtime.rest.app import create_app
from connect_runtime.runtime.herder import Herder
from connect_runtime.runtime.request_signing import DEFAULT_SIGNATURE_ALGORITHM, signature_headers
from mirror.config.mirror_maker_config import SourceAndTarget
from mirror.maker.herder_slot import HerderSlot
from mirror.maker.mirror_herder import MirrorHerder

#: Every method of the herder contract (public API, internal endpoints, optional capabilities).
HERDER_METHODS = sorted(name for name, _ in inspect.getmembers(Herder, inspect.isfunction)
                        if not name.startswith("_"))
#: What the slot answers itself while no herder runs; everything else needs one.
ANSWERED_WITHOUT_HERDER = {"health", "session_key", "verification_algorithms", "set_cluster_logger_level",
                           "connector_active_topics", "reset_connector_active_topics"}


def _slot() -> HerderSlot:
    return HerderSlot(SourceAndTarget("A", "B"), lambda: pytest.fail("not built in unit tests"))


def _running(slot: HerderSlot) -> mock.NonCallableMagicMock:
    herder = mock.create_autospec(MirrorHerder, instance=True)
    slot._herder, slot._ready = cast(MirrorHerder, herder), True
    return cast(mock.NonCallableMagicMock, herder)


def _arguments(name: str) -> list[object]:
    """One distinct placeholder per parameter of ``Herder.<name>`` (optional ones too: all are passed on)."""
    return [object() for _ in list(inspect.signature(getattr(Herder, name)).parameters)[1:]]


def _returns_none(name: str) -> bool:
    return inspect.signature(getattr(Herder, name)).return_annotation in (None, "None")


def test_the_contract_is_what_the_slot_is_checked_against() -> None:
    assert {"connectors", "session_key", "put_task_configs", "fence_zombies", "verification_algorithms",
            "set_cluster_logger_level", "connector_active_topics"} <= set(HERDER_METHODS)
    assert set(HERDER_METHODS) >= ANSWERED_WITHOUT_HERDER


@pytest.mark.parametrize("name", HERDER_METHODS)
def test_slot_delegates_every_herder_method_to_the_running_herder(name: str) -> None:
    slot = _slot()
    herder = _running(slot)
    args = _arguments(name)
    delegated = getattr(herder, name)
    if _returns_none(name):  # as a real herder answers
        delegated.return_value = None
    result = getattr(slot, name)(*args)
    delegated.assert_called_once_with(*args)
    assert result is delegated.return_value


@pytest.mark.parametrize("name", sorted(set(HERDER_METHODS) - ANSWERED_WITHOUT_HERDER))
def test_slot_without_a_running_herder_answers_409_with_the_reason(name: str) -> None:
    with pytest.raises(ConflictError, match=r"^The herder of flow A->B is not running: starting$"):
        getattr(_slot(), name)(*_arguments(name))


def test_slot_without_a_running_herder_answers_for_itself() -> None:
    slot = _slot()
    assert (slot.health().status, slot.health().message) == ("starting", "Flow A->B: starting")
    assert slot.session_key() is None  # the internal endpoints answer 503 until a herder knows the key
    assert list(slot.verification_algorithms()) == [DEFAULT_SIGNATURE_ALGORITHM]
    assert slot.set_cluster_logger_level("org.example", "DEBUG") is False
    with pytest.raises(ForbiddenError, match=r"^Topic tracking is disabled\.$"):
        slot.connector_active_topics("MirrorSourceConnector")
    with pytest.raises(ForbiddenError, match=r"^Topic tracking is disabled\.$"):
        slot.reset_connector_active_topics("MirrorSourceConnector")


@pytest.fixture
def rest() -> Iterator[tuple[HerderSlot, TestClient]]:
    slot = _slot()
    with TestClient(create_app({("A", "B"): slot})) as client:
        yield slot, client


def test_rest_serves_a_slot_before_its_herder_runs(rest: tuple[HerderSlot, TestClient]) -> None:
    _slot, client = rest
    body = b"[]"
    headers = {**signature_headers(b"any key", DEFAULT_SIGNATURE_ALGORITHM, body), "content-type": "application/json"}
    response = client.post("/A/B/connectors/MirrorSourceConnector/tasks", content=body, headers=headers)
    assert (response.status_code, response.json()["error_code"]) == (503, 503)
    response = client.get("/A/B/connectors")
    assert response.status_code == 409
    assert response.json()["message"] == "The herder of flow A->B is not running: starting"
    assert client.get("/A/B/connectors/MirrorSourceConnector/topics").status_code == 403


def test_rest_reaches_the_running_herder_through_the_slot(rest: tuple[HerderSlot, TestClient]) -> None:
    slot, client = rest
    herder = _running(slot)
    herder.session_key.return_value = b"session key"
    herder.verification_algorithms.return_value = (DEFAULT_SIGNATURE_ALGORITHM,)
    body = b'[{"k":"v"}]'
    headers = {**signature_headers(b"session key", DEFAULT_SIGNATURE_ALGORITHM, body),
               "content-type": "application/json"}
    response = client.post("/A/B/connectors/MirrorSourceConnector/tasks", content=body, headers=headers)
    assert response.status_code == 204
    herder.put_task_configs.assert_called_once_with("MirrorSourceConnector", [{"k": "v"}])
