"""REST builds its answers from the herder contract: optional capabilities a herder overrides are
served, the defaults answer as Connect does when the feature is off."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

from starlette.testclient import TestClient

from connect_runtime.rest.app import create_app
from connect_runtime.runtime.request_signing import signature_headers

from .conftest import source_config
from .fake_herder import FakeHerder


class TrackingHerder(FakeHerder):
    """A herder with topic tracking and a non-default signature algorithm."""

    def __init__(self) -> None:
        super().__init__()
        self.active: dict[str, set[str]] = {"src": {"b", "a"}}

    def connector_active_topics(self, name: str) -> Collection[str]:
        self._call("connector_active_topics", name)
        return self.active[name]

    def reset_connector_active_topics(self, name: str) -> None:
        self._call("reset_connector_active_topics", name)
        self.active[name] = set()

    def verification_algorithms(self) -> Sequence[str]:
        return ("HmacSHA512",)


def test_topic_tracking_is_served_when_the_herder_tracks_topics() -> None:
    herder = TrackingHerder()
    with TestClient(create_app(herder)) as client:
        assert client.get("/connectors/src/topics").json() == {"src": {"topics": ["a", "b"]}}
        response = client.put("/connectors/src/topics/reset")
        assert (response.status_code, response.content) == (202, b"")
        assert client.get("/connectors/src/topics").json() == {"src": {"topics": []}}
    assert herder.called("reset_connector_active_topics") == [("src",)]


def test_topic_tracking_default_is_connects_403(client: TestClient) -> None:
    for response in (client.get("/connectors/src/topics"), client.put("/connectors/src/topics/reset")):
        assert response.status_code == 403
        assert response.json() == {"error_code": 403, "message": "Topic tracking is disabled."}


def test_internal_endpoints_accept_the_herders_own_verification_algorithms() -> None:
    herder = TrackingHerder()
    herder.configs["src"] = source_config()
    assert herder.key is not None
    body = json.dumps([{"k": "v"}]).encode()
    with TestClient(create_app({("A", "B"): herder})) as client:
        json_type = {"content-type": "application/json"}
        accepted = client.post("/A/B/connectors/src/tasks", content=body,
                               headers={**signature_headers(herder.key, "HmacSHA512", body), **json_type})
        refused = client.post("/A/B/connectors/src/tasks", content=body,
                              headers={**signature_headers(herder.key, "HmacSHA256", body), **json_type})
    assert accepted.status_code == 204
    assert refused.status_code == 400
    assert "configured to use: ['HmacSHA512']" in refused.json()["message"]
    assert herder.task_config_writes == [("src", [{"k": "v"}])]
