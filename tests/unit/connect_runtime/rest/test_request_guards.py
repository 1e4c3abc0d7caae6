"""Issue 27, item 4: what a request body may be, over real HTTP (uvicorn on loopback).

JSON endpoints take JSON only (415 otherwise, as Jersey answers): a page on any site can send a
``text/plain``, form or untyped body without a CORS preflight. Every route has a body limit enforced
while reading: a declared ``Content-Length`` over it is refused before any body byte is read, a chunked
body as soon as it goes over; the signed internal endpoints have a larger limit, sized for the task
configs of a 100,000-partition flow (sent here).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from connect_runtime.rest.app import create_app
from connect_runtime.rest.security import RestSecurity
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime.request_signing import signature_headers
from mirror.config.mirror_maker_config import SOURCE_CONNECTOR_CLASS, MirrorMakerConfig, SourceAndTarget
from mirror.config.source import TASK_INDEX, TASK_TOPIC_PARTITIONS, encode_topic_partition
from mirror.source.topic_sync import assign_round_robin

from .conftest import source_config
from .fake_herder import FakeHerder

MiB = 1 << 20
TRUSTED = {"rest.mutations.allow.unauthenticated": "true"}


@pytest.fixture
def served() -> Iterator[tuple[FakeHerder, str]]:
    herder = FakeHerder()
    herder.configs["src"] = source_config()
    security = RestSecurity.from_props(TRUSTED, https=False)
    server = RestServer(create_app({("A", "B"): herder}, security=security), "http://127.0.0.1:0").start()
    try:
        yield herder, server.url
    finally:
        server.stop()


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          None])
def test_a_json_endpoint_refuses_what_a_cross_site_form_can_send(served: tuple[FakeHerder, str],
                                                                 content_type: str | None) -> None:
    """Before: a text/plain POST created the connector (201)."""
    herder, url = served
    body = json.dumps({"name": "csrf", "config": source_config("csrf")}).encode()
    headers = {"content-type": content_type} if content_type else {}
    with httpx.Client(timeout=30, trust_env=False) as http:
        for method, path in (("POST", "/A/B/connectors"), ("PUT", "/A/B/connectors/csrf/config"),
                             ("PATCH", "/A/B/connectors/src/config"), ("PUT", "/admin/loggers/root")):
            request = http.build_request(method, url + path, content=body, headers=headers)
            assert request.headers.get("content-type") == content_type  # httpx adds none for bytes
            refused = http.send(request)
            assert refused.status_code == 415, (method, path, refused.text)
            assert refused.json()["error_code"] == 415
        assert not herder.called("put_connector_config") and "csrf" not in herder.configs
        created = http.post(url + "/A/B/connectors", content=body,
                            headers={"content-type": "application/json; charset=utf-8"})
        assert created.status_code == 201, created.text
        # A request without a body (restart, pause) needs no content type, as in Connect.
        assert http.post(url + "/A/B/connectors/src/restart").status_code == 204


def _send_headers_only(url: str, path: str, declared: int) -> tuple[bytes, float]:
    """Send a request's headers announcing ``declared`` body bytes, but no body: what comes back."""
    host, port = url.removeprefix("http://").split(":")
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {declared}\r\n\r\n".encode())
        answer = sock.recv(65536)
    return answer, time.monotonic() - started


def test_a_declared_oversized_body_is_refused_before_it_is_read(served: tuple[FakeHerder, str]) -> None:
    """Before: a 5 MiB body was read whole and then refused with a 400 (200 MiB buffered on internal paths)."""
    _, url = served
    answer, _ = _send_headers_only(url, "/A/B/connectors", 5 * MiB)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    answer, _ = _send_headers_only(url, "/A/B/connectors/src/tasks", 200 * MiB)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_chunked_body_is_cut_off_at_the_limit(served: tuple[FakeHerder, str]) -> None:
    herder, url = served
    host, port = url.removeprefix("http://").split(":")
    sent = 0
    chunk = b"x" * (64 * 1024)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /A/B/connectors HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            while sent < 200 * MiB:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
        except OSError:
            pass  # the server closed the connection after its 413
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 64 * MiB, f"{sent} bytes were accepted before the refusal"
    assert not herder.called("put_connector_config")


def test_the_public_limit_is_a_key_and_internal_paths_have_their_own() -> None:
    herder = FakeHerder()
    herder.configs["src"] = source_config()
    big = json.dumps({"name": "big", "config": source_config("big", padding="p" * (2 * MiB))}).encode()
    raised = RestSecurity.from_props({**TRUSTED, "rest.request.max.bytes": str(4 * MiB)}, https=False)
    servers = [RestServer(create_app(herder, security=s), "http://127.0.0.1:0").start()
               for s in (RestSecurity.from_props(TRUSTED, https=False), raised)]
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            json_type = {"content-type": "application/json"}
            refused = http.post(servers[0].url + "/connectors", content=big, headers=json_type)
            assert refused.status_code == 413 and "1048576" in refused.json()["message"]
            # The internal endpoint reads the same 2 MiB and answers on its signature (unsigned: 400).
            internal = http.post(servers[0].url + "/connectors/src/tasks", content=b"[" + b" " * (2 * MiB) + b"]",
                                 headers=json_type)
            assert internal.status_code == 400 and "signature" in internal.json()["message"].lower()
            assert http.post(servers[1].url + "/connectors", content=big, headers=json_type).status_code == 201
    finally:
        for server in servers:
            server.stop()


def _task_configs_of_a_100k_partition_flow() -> list[dict[str, str]]:
    """What MirrorSourceConnector.task_configs hands the leader for 100,000 partitions: 100 topics of
    1,000 partitions with names of Kafka's maximum length (249), over 500 tasks, each task config
    carrying the connector config as MM2 builds it."""
    config = MirrorMakerConfig({"clusters": "A, B", "A.bootstrap.servers": "127.0.0.1:1",
                                "B.bootstrap.servers": "127.0.0.1:2", "A->B.enabled": "true",
                                "A->B.topics": ".*"})
    base = config.connector_base_config(SourceAndTarget("A", "B"), SOURCE_CONNECTOR_CLASS)
    partitions = [(f"{t:03d}-" + "t" * 245, p) for t in range(100) for p in range(1000)]
    configs = []
    for index, chunk in enumerate(assign_round_robin(partitions, 500)):
        configs.append({**base, TASK_TOPIC_PARTITIONS: ",".join(encode_topic_partition(t, p) for t, p in chunk),
                        TASK_INDEX: str(index)})
    return configs


def test_the_task_configs_of_a_100k_partition_flow_pass_the_internal_limit(
        served: tuple[FakeHerder, str]) -> None:
    herder, url = served
    configs = _task_configs_of_a_100k_partition_flow()
    body = json.dumps(configs).encode()
    assert herder.key is not None
    headers = {**signature_headers(herder.key, "HmacSHA256", body), "content-type": "application/json"}
    with httpx.Client(timeout=120, trust_env=False) as http:
        response = http.post(url + "/A/B/connectors/src/tasks", content=body, headers=headers)
    assert response.status_code == 204, response.text
    assert herder.task_config_writes == [("src", configs)]
    assert 16 * MiB < len(body) < 128 * MiB // 2, len(body)  # the default keeps a 2x margin


def test_routes_added_beside_the_connect_api_are_guarded_too() -> None:
    """The guard sits before routing: an extra route (the driver's /mirror/offsets/translate, the UI's)
    gets the same 415 and 413 as the Connect resources, whatever it does with its body."""
    async def echo(request: Request) -> Response:
        return Response(await request.body(), media_type="application/json")

    security = RestSecurity.from_props(TRUSTED, https=False)
    app = create_app(FakeHerder(), extra_routes=[Route("/extra", echo, methods=["POST"])], security=security)
    server = RestServer(app, "http://127.0.0.1:0").start()
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            assert http.post(server.url + "/extra", content=b'{"a": 1}',
                             headers={"content-type": "text/plain"}).status_code == 415
            # headers only: a client still writing the refused body when the server closes may lose the
            # 413 to the connection reset (the body is deliberately left unread)
            answer, _ = _send_headers_only(server.url, "/extra", 2 * MiB)
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            echoed = http.post(server.url + "/extra", json={"a": 1})
            assert (echoed.status_code, echoed.json()) == (200, {"a": 1})
    finally:
        server.stop()
