"""KIP-507/KIP-710 internal endpoints: signed task-config writes and fencing requests."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest
from starlette.testclient import TestClient

from connect_runtime.api.errors import NotLeaderError
from connect_runtime.rest.app import create_app
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime.request_signing import SIGNATURE_ALGORITHM_HEADER, SIGNATURE_HEADER, signature_headers

from .conftest import source_config
from .fake_herder import FakeHerder

TASKS = [{"task.class": "T", "topic": "a"}, {"task.class": "T", "topic": "b"}]
BODY = json.dumps(TASKS).encode()


@pytest.fixture
def flow_herder() -> FakeHerder:
    herder = FakeHerder()
    herder.configs["src"] = source_config()
    return herder


@pytest.fixture
def mm2(flow_herder: FakeHerder) -> Iterator[TestClient]:
    with TestClient(create_app({("A", "B"): flow_herder})) as client:
        yield client


def signed(herder: FakeHerder, body: bytes, algorithm: str = "HmacSHA256") -> dict[str, str]:
    assert herder.key is not None
    return {**signature_headers(herder.key, algorithm, body), "content-type": "application/json"}


def test_signed_task_configs_are_written(mm2: TestClient, flow_herder: FakeHerder) -> None:
    response = mm2.post("/A/B/connectors/src/tasks", content=BODY, headers=signed(flow_herder, BODY))
    assert (response.status_code, response.content) == (204, b"")
    assert flow_herder.task_config_writes == [("src", TASKS)]


def test_signed_fence_request(mm2: TestClient, flow_herder: FakeHerder) -> None:
    response = mm2.put("/A/B/connectors/src/fence", headers=signed(flow_herder, b""))
    assert response.status_code == 204
    assert flow_herder.called("fence_zombies") == [("src",)]


def _bad_signature_cases(herder: FakeHerder) -> list[tuple[dict[str, str], int, str]]:
    good = signed(herder, BODY)
    return [
        ({"content-type": "application/json"}, 400, "missing required signature"),
        ({SIGNATURE_HEADER: good[SIGNATURE_HEADER], "content-type": "application/json"}, 400,
         "missing required signature"),
        ({**good, SIGNATURE_ALGORITHM_HEADER: "HmacSHA999"}, 400, "HmacSHA999"),
        (signed(herder, BODY, "HmacSHA512"), 400, "does not support the 'HmacSHA512' key signing algorithm"),
        ({**good, SIGNATURE_HEADER: "%%%not-base64"}, 400, "base64"),
        ({**good, SIGNATURE_HEADER: base64.b64encode(b"x" * 32).decode()}, 403, "invalid signature"),
        (signed(herder, BODY + b" "), 403, "invalid signature"),
    ]


@pytest.mark.parametrize("case", range(7))
def test_bad_signatures_are_refused(mm2: TestClient, flow_herder: FakeHerder, case: int) -> None:
    headers, status, fragment = _bad_signature_cases(flow_herder)[case]
    response = mm2.post("/A/B/connectors/src/tasks", content=BODY, headers=headers)
    assert response.status_code == status
    assert response.json()["error_code"] == status
    assert fragment in response.json()["message"]
    assert flow_herder.task_config_writes == []


def test_no_session_key_yet_is_503(mm2: TestClient, flow_herder: FakeHerder) -> None:
    headers = signed(flow_herder, BODY)
    flow_herder.key = None
    response = mm2.post("/A/B/connectors/src/tasks", content=BODY, headers=headers)
    assert response.status_code == 503
    assert "session key" in response.json()["message"]


@pytest.mark.parametrize(("body", "fragment"), [
    (b"{}", "got a JSON object"),
    (b"[1]", "task config 0"),
    (b'[{"a": {"b": 1}}]', "must be a string"),
    (b"[", "not valid JSON"),
])
def test_malformed_task_configs_are_400(mm2: TestClient, flow_herder: FakeHerder, body: bytes,
                                        fragment: str) -> None:
    response = mm2.post("/A/B/connectors/src/tasks", content=body, headers=signed(flow_herder, body))
    assert response.status_code == 400
    assert fragment in response.json()["message"]


def test_unknown_flow_is_404_with_connect_message(mm2: TestClient) -> None:
    response = mm2.put("/X/Y%20Z/connectors/src/fence", headers={})
    assert response.status_code == 404
    assert response.json()["message"] == "No replication flow found for source 'X' and target 'Y Z'"


def test_follower_forwards_signed_request_to_leader(flow_herder: FakeHerder) -> None:
    leader_herder = FakeHerder()
    leader = RestServer(create_app({("A", "B"): leader_herder}), listeners="http://127.0.0.1:0").start()
    follower = RestServer(create_app({("A", "B"): flow_herder}), listeners="http://127.0.0.1:0").start()
    try:
        flow_herder.fail("put_task_configs", NotLeaderError("not leader", target_url=leader.url))
        with httpx.Client(trust_env=False, timeout=30) as http:
            response = http.post(f"{follower.url}/A/B/connectors/src/tasks", content=BODY,
                                 headers=signed(flow_herder, BODY))
        # the signature headers travel with the unchanged body, so the leader accepts it
        assert response.status_code == 204
        assert leader_herder.task_config_writes == [("src", TASKS)]
    finally:
        follower.stop()
        leader.stop()
