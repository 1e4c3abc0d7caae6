"""Forwarding between workers (docs/architecture.md) over real HTTP: RestServers on loopback, port 0.

Each server wraps its app in a recorder so the test can see what actually arrived: path, query
(``forward=true``/``false``) and headers (only ``Authorization`` is copied).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from connect_runtime.api.errors import NotAssignedError, NotFoundError, NotLeaderError
from connect_runtime.rest.app import create_app
from connect_runtime.rest.forwarding import CONFLICT_MESSAGE
from connect_runtime.rest.server import RestServer

from .conftest import source_config
from .fake_herder import FakeHerder


class Recorder:
    """ASGI wrapper that remembers every HTTP request's method, path, query and headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests.append({"method": scope["method"], "path": scope["raw_path"].decode(),
                                  "query": scope["query_string"].decode(),
                                  "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]}})
        await self.app(scope, receive, send)


class Worker:
    def __init__(self, herders: dict[tuple[str, ...], FakeHerder] | FakeHerder) -> None:
        self.herders = herders
        self.recorder = Recorder(create_app(herders))
        self.server = RestServer(self.recorder, listeners="http://127.0.0.1:0").start()

    @property
    def herder(self) -> FakeHerder:
        assert isinstance(self.herders, FakeHerder)
        return self.herders

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started = [Worker(FakeHerder(worker=f"worker-{i}")) for i in range(3)]
    try:
        yield started
    finally:
        for worker in started:
            worker.server.stop()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30, trust_env=False) as client:
        yield client


def test_server_binds_port_zero_and_serves(workers: list[Worker], http: httpx.Client) -> None:
    ports = {w.server.port for w in workers}
    assert len(ports) == 3 and 0 not in ports
    assert workers[0].url == f"http://127.0.0.1:{workers[0].server.port}"
    assert http.get(workers[0].url + "/connectors").json() == []


def test_put_config_is_forwarded_to_leader(workers: list[Worker], http: httpx.Client) -> None:
    follower, leader, _ = workers
    follower.herder.fail("put_connector_config", NotLeaderError("not leader", target_url=leader.url + "/"))
    response = http.put(f"{follower.url}/connectors/src/config", json=source_config(),
                        headers={"Authorization": "Basic dXNlcjpwYXNz", "X-Custom": "not-copied"})
    assert response.status_code == 201  # the leader's "created", translated back
    assert response.json()["name"] == "src"
    assert response.headers["location"] == "/connectors/src"
    assert "src" in leader.herder.configs and "src" not in follower.herder.configs
    forwarded = leader.recorder.requests[-1]
    assert (forwarded["method"], forwarded["path"], forwarded["query"]) == ("PUT", "/connectors/src/config",
                                                                          "forward=true")
    assert forwarded["headers"]["authorization"] == "Basic dXNlcjpwYXNz"
    assert "x-custom" not in forwarded["headers"]
    # an update through the same path is a 200, not a 201
    again = http.put(f"{follower.url}/connectors/src/config", json=source_config(**{"tasks.max": "1"}))
    assert again.status_code == 200
    assert "authorization" not in leader.recorder.requests[-1]["headers"]


def test_query_parameters_and_202_body_are_forwarded(workers: list[Worker], http: httpx.Client) -> None:
    follower, leader, _ = workers
    leader.herder.configs["src"] = source_config()
    follower.herder.fail("restart_connector", NotAssignedError("not owner", target_url=leader.url))
    response = http.post(f"{follower.url}/connectors/src/restart?includeTasks=true&onlyFailed=false")
    assert response.status_code == 202
    assert response.json()["connector"]["state"] == "RESTARTING"
    assert leader.herder.called("restart_connector") == [("src", True, False)]
    assert leader.recorder.requests[-1]["query"] == "includeTasks=true&onlyFailed=false&forward=true"


def test_post_connectors_forwarded_keeps_location(workers: list[Worker], http: httpx.Client) -> None:
    follower, leader, _ = workers
    follower.herder.fail("put_connector_config", NotLeaderError("not leader", target_url=leader.url))
    response = http.post(f"{follower.url}/connectors", json={"name": "src", "config": source_config()})
    assert response.status_code == 201
    assert response.headers["location"] == "/connectors/src"
    assert leader.herder.called("put_connector_config")[0][:3] == ("src", source_config(), False)


def test_second_hop_uses_forward_false(workers: list[Worker], http: httpx.Client) -> None:
    first, second, third = workers
    third.herder.configs["src"] = source_config()
    first.herder.fail("stop_connector", NotLeaderError("stale", target_url=second.url))
    second.herder.fail("stop_connector", NotLeaderError("moved", target_url=third.url))
    response = http.put(f"{first.url}/connectors/src/stop")
    assert response.status_code == 204
    assert third.herder.called("stop_connector") == [("src",)]
    assert second.recorder.requests[-1]["query"] == "forward=true"
    assert third.recorder.requests[-1]["query"] == "forward=false"


def test_third_hop_is_refused_with_409(workers: list[Worker], http: httpx.Client) -> None:
    first, second, third = workers
    first.herder.fail("delete_connector", NotLeaderError("stale", target_url=second.url))
    second.herder.fail("delete_connector", NotLeaderError("moved", target_url=third.url))
    third.herder.fail("delete_connector", NotLeaderError("moved again", target_url=first.url))
    response = http.delete(f"{first.url}/connectors/src")
    assert response.status_code == 409
    assert response.json() == {"error_code": 409, "message": CONFLICT_MESSAGE}
    # the third worker did not forward again: the first worker saw only the client's request
    assert len(first.recorder.requests) == 1


def test_errors_from_the_leader_pass_through(workers: list[Worker], http: httpx.Client) -> None:
    follower, leader, _ = workers
    follower.herder.fail("patch_connector_config", NotLeaderError("not leader", target_url=leader.url))
    leader.herder.fail("patch_connector_config", NotFoundError("Connector src not found"))
    response = http.patch(f"{follower.url}/connectors/src/config", json={"tasks.max": "3"})
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "Connector src not found"}
    assert leader.herder.called("patch_connector_config") == [("src", {"tasks.max": "3"})]


def test_namespaced_request_is_forwarded_to_the_same_namespace(http: httpx.Client) -> None:
    flow = ("us west", "eu/1")
    follower = Worker({flow: FakeHerder(), ("other", "x"): FakeHerder()})
    leader = Worker({flow: FakeHerder()})
    try:
        follower_herder = follower.herders[flow]  # type: ignore[index]
        leader_herder = leader.herders[flow]  # type: ignore[index]
        follower_herder.fail("put_connector_config", NotLeaderError("not leader", target_url=leader.url))
        response = http.put(f"{follower.url}/us%20west/eu%2F1/connectors/src/config", json=source_config())
        assert response.status_code == 201
        assert response.headers["location"] == "/us%20west/eu%2F1/connectors/src"
        assert "src" in leader_herder.configs
        assert leader.recorder.requests[-1]["path"] == "/us%20west/eu%2F1/connectors/src/config"
    finally:
        follower.server.stop()
        leader.server.stop()


def test_stop_is_bounded_and_idempotent() -> None:
    server = RestServer(create_app(FakeHerder()), listeners="http://127.0.0.1:0").start()
    with httpx.Client(trust_env=False) as client:  # hold a keep-alive connection open across stop()
        assert client.get(server.url + "/").status_code == 200
        server.stop()
        server.stop()
        with pytest.raises(httpx.TransportError):
            client.get(server.url + "/", timeout=2)


def test_an_unreachable_leader_is_a_500_io_error(workers: list[Worker], http: httpx.Client) -> None:
    # The failure path of a forward (httpx is imported there on first use, not at start-up).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    follower = workers[0]
    follower.herder.fail("put_connector_config", NotLeaderError("not leader", target_url=f"http://127.0.0.1:{closed_port}"))
    response = http.put(f"{follower.url}/connectors/src/config", json=source_config())
    assert response.status_code == 500
    assert response.json()["message"].startswith("IO Error trying to forward REST request: ")
    assert "src" not in follower.herder.configs
