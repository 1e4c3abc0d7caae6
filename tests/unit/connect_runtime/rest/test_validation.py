"""Malformed requests get a 4xx with Connect's error body and a message saying what was expected,
never a 500 or a traceback, and never reach the herder; herder errors map to Connect's statuses."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from starlette.testclient import TestClient

from connect_runtime.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConfigError,
    ConflictError,
    NotFoundError,
    NotLeaderError,
)
from connect_runtime.rest.forwarding import CONFLICT_MESSAGE, NO_LEADER_MESSAGE

from .conftest import MIRROR_SOURCE, source_config, unreachable_url
from .fake_herder import FakeHerder

#: (method, path) of every public endpoint that takes a JSON body.
BODY_ENDPOINTS = [
    ("POST", "/connectors"),
    ("PUT", "/connectors/src/config"),
    ("PATCH", "/connectors/src/config"),
    ("PATCH", "/connectors/src/offsets"),
    ("PUT", "/connector-plugins/MirrorSourceConnector/config/validate"),
    ("PUT", "/admin/loggers/some.logger"),
]

#: Bodies no body-taking endpoint accepts, with a fragment the message must contain.
GENERIC_BAD_BODIES = [
    (b"", "empty"),
    (b"   ", "empty"),
    (b"{not json", "not valid JSON"),
    (b'{"a": "b"', "not valid JSON"),
    (b"\xff\xfe", "JSON"),
    (b'{"a": NaN}', "not valid JSON"),
    (b"[]", "got a JSON array"),
    (b'["x"]', "got a JSON array"),
    (b'"text"', "got a JSON string"),
    (b"42", "got a JSON number"),
    (b"null", "got a JSON null"),
    (b"true", "got a JSON boolean"),
]

#: Endpoint-specific malformed bodies: (method, path, body, expected status, message fragment).
SPECIFIC_BAD_BODIES: list[tuple[str, str, Any, int, str]] = [
    ("POST", "/connectors", {"config": {"connector.class": MIRROR_SOURCE}}, 400, "name must be provided"),
    ("POST", "/connectors", {"name": "src"}, 400, "configuration must be provided"),
    ("POST", "/connectors", {"name": "src", "config": None}, 400, "configuration must be provided"),
    ("POST", "/connectors", {"name": 5, "config": {}}, 400, "'name' must be a string"),
    ("POST", "/connectors", {"name": "src", "config": ["a"]}, 400, "got a JSON array"),
    ("POST", "/connectors", {"name": "src", "config": {"tasks.max": {"n": 1}}}, 400,
     "Value of 'tasks.max' in the connector config must be a string, got a JSON object"),
    ("POST", "/connectors", {"name": "src", "config": {"topics": ["a", "b"]}}, 400, "got a JSON array"),
    ("POST", "/connectors", {"name": "src", "config": {"topics": None}}, 400, "got a JSON null"),
    ("POST", "/connectors", {"name": "src", "config": {"name": "other"}}, 400,
     "Connector name configuration (other) doesn't match connector name in the URL (src)"),
    ("POST", "/connectors", {"name": "src", "config": {}, "initial_state": "SLEEPING"}, 400, "initial_state"),
    ("PUT", "/connectors/src/config", {"name": "other"}, 400, "doesn't match connector name in the URL"),
    ("PUT", "/connectors/src/config", {"tasks.max": None}, 400, "got a JSON null"),
    ("PUT", "/connectors/src/config", {"tasks.max": [1]}, 400, "got a JSON array"),
    ("PATCH", "/connectors/src/config", {"tasks.max": {"a": "b"}}, 400, "got a JSON object"),
    ("PATCH", "/connectors/src/config", {"name": "other"}, 400, "doesn't match connector name"),
    ("PATCH", "/connectors/src/offsets", {}, 400, "Partitions / offsets need to be provided"),
    ("PATCH", "/connectors/src/offsets", {"offsets": []}, 400, "Partitions / offsets need to be provided"),
    ("PATCH", "/connectors/src/offsets", {"offsets": None}, 400, "Partitions / offsets need to be provided"),
    ("PATCH", "/connectors/src/offsets", {"offsets": {"p": 1}}, 400, "'offsets' must be a JSON array"),
    ("PATCH", "/connectors/src/offsets", {"offsets": [1]}, 400, "offsets[0] must be a JSON object"),
    ("PATCH", "/connectors/src/offsets", {"offsets": [{"offset": {}}]}, 400, "offsets[0].partition"),
    ("PATCH", "/connectors/src/offsets", {"offsets": [{"partition": "p", "offset": {}}]}, 400,
     "offsets[0].partition must be a JSON object"),
    ("PATCH", "/connectors/src/offsets", {"offsets": [{"partition": {}, "offset": [1]}]}, 400,
     "offsets[0].offset must be a JSON object or null"),
    ("PUT", "/connector-plugins/MirrorSourceConnector/config/validate", {"a": {"b": "c"}}, 400,
     "must be a string"),
    ("PUT", "/admin/loggers/some.logger", {}, 400, "Desired 'level' parameter was not specified"),
    ("PUT", "/admin/loggers/some.logger", {"level": 10}, 400, "'level' must be a string"),
    ("PUT", "/admin/loggers/some.logger", {"level": "LOUD"}, 404, "invalid log level 'LOUD'"),
]

#: Query parameters with values that are not what the endpoint expects.
BAD_QUERIES = [
    ("POST", "/connectors/src/restart?includeTasks=yes", 400, "'includeTasks' must be 'true' or 'false'"),
    ("POST", "/connectors/src/restart?onlyFailed=1", 400, "'onlyFailed' must be 'true' or 'false'"),
    ("GET", "/connector-plugins?connectorsOnly=maybe", 400, "'connectorsOnly' must be 'true' or 'false'"),
    ("GET", "/connectors/src/status?forward=sure", 400, "'forward' must be 'true' or 'false'"),
    ("PUT", "/connectors/src/pause?forward=", 400, "'forward' must be 'true' or 'false'"),
    ("GET", "/connectors/src/tasks/one/status", 404, "must be an integer"),
    ("POST", "/connectors/src/tasks/-x/restart", 404, "must be an integer"),
]


def assert_error(response: Any, status: int, fragment: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error_code", "message"}
    assert body["error_code"] == status
    assert fragment in body["message"]
    assert "Traceback" not in response.text
    assert 'File "' not in response.text


def herder_mutations(herder: FakeHerder) -> list[tuple[Any, ...]]:
    readonly = {"connectors", "connector_info", "connector_status", "connector_config", "health"}
    return [c for c in herder.calls if c[0] not in readonly]


@pytest.mark.parametrize(("method", "path"), BODY_ENDPOINTS)
@pytest.mark.parametrize(("body", "fragment"), GENERIC_BAD_BODIES)
def test_malformed_body_is_400(client: TestClient, herder: FakeHerder, method: str, path: str, body: bytes,
                               fragment: str) -> None:
    herder.configs["src"] = source_config()
    response = client.request(method, path, content=body, headers={"content-type": "application/json"})
    assert_error(response, 400, fragment)
    assert herder_mutations(herder) == []


@pytest.mark.parametrize(("method", "path", "body", "status", "fragment"), SPECIFIC_BAD_BODIES)
def test_invalid_body_is_rejected_with_reason(client: TestClient, herder: FakeHerder, method: str, path: str,
                                              body: Any, status: int, fragment: str) -> None:
    herder.configs["src"] = source_config()
    response = client.request(method, path, json=body)
    assert_error(response, status, fragment)
    assert herder_mutations(herder) == []


@pytest.mark.parametrize(("method", "path", "status", "fragment"), BAD_QUERIES)
def test_invalid_query_or_path_parameter(client: TestClient, herder: FakeHerder, method: str, path: str,
                                         status: int, fragment: str) -> None:
    herder.configs["src"] = source_config()
    response = client.request(method, path)
    assert_error(response, status, fragment)
    assert herder_mutations(herder) == []


@pytest.mark.parametrize("value", ["TRUE", "False", "true"])
def test_booleans_are_case_insensitive_like_java(client: TestClient, herder: FakeHerder, value: str) -> None:
    herder.configs["src"] = source_config()
    response = client.post(f"/connectors/src/restart?includeTasks={value}")
    assert response.status_code == (202 if value.lower() == "true" else 204)  # 204: the connector alone
    assert herder.called("restart_connector") == [("src", value.lower() == "true", False)]


@pytest.mark.parametrize(("error", "status"), [
    (NotFoundError("Connector src not found"), 404),
    (AlreadyExistsError("Connector src already exists"), 409),
    (ConflictError("Request cannot be completed because a rebalance is expected"), 409),
    (BadRequestError("Connectors must be in the STOPPED state"), 400),
    (ConfigError("Connector configuration is invalid and contains 1 error(s)", key="topics"), 400),
])
def test_herder_errors_map_to_connect_statuses(client: TestClient, herder: FakeHerder, error: Exception,
                                               status: int) -> None:
    herder.fail("put_connector_config", error)
    response = client.put("/connectors/src/config", json=source_config())
    assert_error(response, status, str(error))


def test_unexpected_error_is_500_without_traceback(client: TestClient, herder: FakeHerder,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    herder.fail("connector_status", RuntimeError("status store unavailable"))
    with caplog.at_level(logging.ERROR, logger="connect_runtime.rest.handling"):
        response = client.get("/connectors/src/status")
    assert_error(response, 500, "status store unavailable")
    # ...but the server log has the traceback, for the operator
    assert any(r.exc_info is not None for r in caplog.records)


def test_error_without_message_still_says_something(client: TestClient, herder: FakeHerder) -> None:
    herder.fail("connectors", KeyError())
    assert_error(client.get("/connectors"), 500, "KeyError")


def test_unknown_route_and_wrong_method_use_error_body(client: TestClient) -> None:
    assert_error(client.get("/no/such/thing"), 404, "HTTP 404 Not Found")
    assert_error(client.post("/connectors/src/status"), 405, "HTTP 405 Method Not Allowed")


def test_not_leader_without_known_leader_is_409(client: TestClient, herder: FakeHerder) -> None:
    herder.fail("put_connector_config", NotLeaderError("not the leader", target_url=None))
    assert_error(client.put("/connectors/src/config", json=source_config()), 409, NO_LEADER_MESSAGE)


def test_not_leader_on_last_hop_is_409(client: TestClient, herder: FakeHerder) -> None:
    herder.fail("stop_connector", NotLeaderError("not the leader", target_url="http://127.0.0.1:9"))
    assert_error(client.put("/connectors/src/stop?forward=false"), 409, CONFLICT_MESSAGE)


def test_unreachable_leader_is_500_with_io_message(client: TestClient, herder: FakeHerder) -> None:
    herder.fail("stop_connector", NotLeaderError("not the leader", target_url=unreachable_url()))
    assert_error(client.put("/connectors/src/stop"), 500, "IO Error trying to forward REST request")
