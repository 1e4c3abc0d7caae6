"""create_app: namespaced mounting (KIP-710 encoding), /flows, root endpoints, /metrics."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.routing import Route
from starlette.testclient import TestClient

from connect_runtime.api.errors import NotLeaderError
from connect_runtime.rest.app import create_app, encode_namespace_element, namespace_path
from connect_runtime.runtime.herder import WorkerHealth

from .conftest import source_config, unreachable_url
from .fake_herder import FakeHerder


@pytest.mark.parametrize(("alias", "encoded"), [
    ("A", "A"),
    ("us west", "us%20west"),  # URLEncoder gives "+", KIP-710 replaces it by %20
    ("a+b", "a%2Bb"),
    ("x*y.z-_", "x*y.z-_"),  # Java leaves * . - _ alone
    ("t~1", "t%7E1"),  # ...and encodes ~, which Python's quote would not
    ("a/b", "a%2Fb"),
    ("{x}", "%7Bx%7D"),
    ("é", "%C3%A9"),
])
def test_namespace_element_encoding_matches_java(alias: str, encoded: str) -> None:
    assert encode_namespace_element(alias) == encoded


def test_namespace_path() -> None:
    assert namespace_path(("us west", "B")) == "/us%20west/B"
    assert namespace_path(()) == ""


AWKWARD = ("us west+1", "eu/{b}~")


@pytest.fixture
def flows() -> dict[tuple[str, ...], FakeHerder]:
    return {("A", "B"): FakeHerder(cluster_id="B-id"), ("B", "A"): FakeHerder(cluster_id="A-id"),
            AWKWARD: FakeHerder(cluster_id="A-id"), ("A",): FakeHerder()}


@pytest.fixture
def mm2(flows: dict[tuple[str, ...], FakeHerder]) -> Iterator[TestClient]:
    with TestClient(create_app(flows)) as client:
        yield client


Flows = dict[tuple[str, ...], FakeHerder]


def test_each_namespace_reaches_its_own_herder(mm2: TestClient, flows: Flows) -> None:
    created = mm2.post("/A/B/connectors", json={"name": "src", "config": source_config()})
    assert created.status_code == 201
    assert created.headers["location"] == "/A/B/connectors/src"
    assert "src" in flows[("A", "B")].configs
    assert all("src" not in h.configs for ns, h in flows.items() if ns != ("A", "B"))
    assert mm2.get("/A/B/connectors").json() == ["src"]
    assert mm2.get("/B/A/connectors").json() == []
    assert mm2.get("/A/B/connectors/src/status").json()["name"] == "src"
    assert mm2.get("/A/B/").json()["kafka_cluster_id"] == "B-id"


def test_shorter_namespace_does_not_shadow_longer(mm2: TestClient, flows: Flows) -> None:
    mm2.put("/A/connectors/one/config", json=source_config("one"))
    assert "one" in flows[("A",)].configs and "one" not in flows[("A", "B")].configs


def test_awkward_aliases_are_url_encoded(mm2: TestClient, flows: dict[tuple[str, ...], FakeHerder]) -> None:
    prefix = namespace_path(AWKWARD)
    assert prefix == "/us%20west%2B1/eu%2F%7Bb%7D%7E"
    response = mm2.put(f"{prefix}/connectors/src/config", json=source_config())
    assert response.status_code == 201
    assert response.headers["location"] == f"{prefix}/connectors/src"
    assert "src" in flows[AWKWARD].configs
    # any valid percent-encoding of the same alias (lower-case hex, encoded ~) reaches the same herder
    assert mm2.get("/us%20west%2b1/eu%2f%7bb%7d~/connectors").json() == ["src"]


def test_unknown_namespace_is_404(mm2: TestClient) -> None:
    response = mm2.get("/X/Y/connectors")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}


def test_flows_lists_mounted_namespaces(mm2: TestClient) -> None:
    body = mm2.get("/flows").json()
    assert body == sorted(body, key=lambda f: f["path"])
    assert {"namespace": list(AWKWARD), "path": namespace_path(AWKWARD)} in body
    assert {tuple(f["namespace"]) for f in body} == {("A", "B"), ("B", "A"), AWKWARD, ("A",)}


def test_root_without_root_herder(mm2: TestClient, flows: dict[tuple[str, ...], FakeHerder]) -> None:
    info = mm2.get("/").json()
    assert info["kafka_cluster_id"] is None  # the flows span several clusters
    assert mm2.get("/health").status_code == 200
    flows[("B", "A")].health_state = WorkerHealth("starting", "reading config topic")
    starting = mm2.get("/health")
    assert starting.status_code == 503
    assert starting.json()["status"] == "starting"
    flows[("A", "B")].health_state = WorkerHealth("unhealthy", "tick thread stuck")
    assert mm2.get("/health").status_code == 500
    assert mm2.get("/connectors").status_code == 404  # no herder at the root


def test_root_herder_alongside_namespaces() -> None:
    root, flow = FakeHerder(), FakeHerder()
    with TestClient(create_app({(): root, ("A", "B"): flow})) as client:
        client.put("/connectors/r/config", json=source_config("r"))
        client.put("/A/B/connectors/f/config", json=source_config("f"))
        assert (list(root.configs), list(flow.configs)) == (["r"], ["f"])
        assert client.get("/flows").json() == [{"namespace": [], "path": "/"},
                                               {"namespace": ["A", "B"], "path": "/A/B"}]


def test_empty_namespace_element_is_rejected() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        create_app({("A", ""): FakeHerder()})


def test_extra_routes_are_served() -> None:
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse

    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hi")

    with TestClient(create_app(FakeHerder(), extra_routes=[Route("/hello", hello)])) as client:
        assert client.get("/hello").text == "hi"


def test_metrics_exposes_the_given_registry() -> None:
    registry = prometheus_client.CollectorRegistry()
    counter = prometheus_client.Counter("mirror_test_records", "records", ["topic"], registry=registry)
    counter.labels(topic="t1").inc(3)
    with TestClient(create_app(FakeHerder(), registry=registry)) as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"] == prometheus_client.CONTENT_TYPE_LATEST
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    samples = [s for s in families["mirror_test_records"].samples if s.name == "mirror_test_records_total"]
    assert [(s.labels, s.value) for s in samples] == [({"topic": "t1"}, 3.0)]


def test_slow_herder_call_times_out_with_500() -> None:
    release = threading.Event()

    class SlowHerder(FakeHerder):
        def connectors(self) -> list[str]:
            release.wait(30)
            return []

    with TestClient(create_app(SlowHerder(), request_timeout_s=0.2)) as client:
        try:
            response = client.get("/connectors")
        finally:
            release.set()
    assert response.status_code == 500
    assert response.json() == {"error_code": 500, "message": "Request timed out"}


def test_request_log_has_no_bodies(caplog: pytest.LogCaptureFixture) -> None:
    herder = FakeHerder()
    herder.fail("patch_connector_config", NotLeaderError("not leader", target_url=unreachable_url()))
    with caplog.at_level(logging.DEBUG, logger="connect_runtime"), TestClient(create_app(herder)) as client:
        created = client.put("/connectors/src/config", json=source_config(**{"sasl.jaas.config": "hunter2"}))
        forwarded = client.patch("/connectors/src/config", json={"ssl.key.password": "hunter3"})
    assert (created.status_code, forwarded.status_code) == (201, 500)
    assert "PUT /connectors/src/config -> 201" in caplog.text
    assert "Forwarding request PATCH /connectors/src/config" in caplog.text
    assert "hunter2" not in caplog.text and "hunter3" not in caplog.text
