"""Fuzzing the Connect REST API over real HTTP: generated methods, paths, queries, bodies, content types.

Two real uvicorn servers (``RestServer``) serve ``create_app``: one herder at the root, as
``connect-distributed`` does, and two herders under KIP-710 namespaces (``/A/B``, ``/B/A``), as the MM2
driver does. The herders are the REST tests' in-memory ``FakeHerder`` (this fuzzes the REST layer's
parsing and error mapping, not a cluster), seeded with a connector so generated paths reach existing
resources as well as missing ones. Whatever the request: never a 5xx other than a JSON 503 (what a
herder answers while a rebalance runs), every error a JSON body in Connect's shape, and the server
answers ``GET /`` afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from connect_runtime.rest.app import create_app
from connect_runtime.rest.server import RestServer
from tests.support.fuzz import fuzz_settings, timeout_s
from tests.unit.connect_runtime.rest.fake_herder import FakeHerder

pytestmark = pytest.mark.timeout(timeout_s())

SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "FOO"]
PREFIXES = ["", "", "/A/B", "/B/A", "/A/C", "/A%2FB/B", "/A", "/%41/B", "/A/B/A/B"]
NAMES = ["src", "src", "MirrorSourceConnector", "nope", "", "%00", "..", "a%2Fb", "%C3%BC", "x" * 300, "%",
         "%ZZ", "-1", "a b", "{connector}", "src?x=1", "src#frag"]
TASKS = ["0", "1", "-1", "99999999999999999999", "x", "", "1.5", "0x1"]
PLUGINS = [SOURCE, "MirrorSourceConnector", "MirrorSourceConnector".lower(), "nope", "", "%20"]
LOGGERS = ["root", "connect_runtime", "org.apache.kafka", "", "%00", "a" * 200]
#: path template -> the methods it serves (a request uses one of them 3 times in 4)
TEMPLATES: dict[str, list[str]] = {
    "/": ["GET"], "/health": ["GET"], "/metrics": ["GET"], "/flows": ["GET"],
    "/connectors": ["GET", "POST"], "/connectors/{c}": ["GET", "DELETE"],
    "/connectors/{c}/config": ["GET", "PUT", "PATCH"], "/connectors/{c}/status": ["GET"],
    "/connectors/{c}/tasks": ["GET", "POST"], "/connectors/{c}/tasks-config": ["GET"],
    "/connectors/{c}/tasks/{t}/status": ["GET"], "/connectors/{c}/tasks/{t}/restart": ["POST"],
    "/connectors/{c}/restart": ["POST"], "/connectors/{c}/pause": ["PUT"], "/connectors/{c}/resume": ["PUT"],
    "/connectors/{c}/stop": ["PUT"], "/connectors/{c}/offsets": ["GET", "PATCH", "DELETE"],
    "/connectors/{c}/topics": ["GET"], "/connectors/{c}/topics/reset": ["PUT"], "/connectors/{c}/fence": ["PUT"],
    "/connector-plugins": ["GET"], "/connector-plugins/{p}/config": ["GET"],
    "/connector-plugins/{p}/config/validate": ["PUT"], "/admin/loggers": ["GET"],
    "/admin/loggers/{l}": ["GET", "PUT"],
}
QUERY_KEYS = ["expand", "includeTasks", "onlyFailed", "connectorsOnly", "scope", "forward", "level"]
QUERY_VALUES = ["status", "info", "true", "false", "TRUE", "1", "", "cluster", "worker", "x", "%", "\u00fc"]
CONTENT_TYPES = ["application/json", "application/json", "text/plain", "application/x-www-form-urlencoded",
                 "application/json; charset=latin-1", "application/json; charset=nope",
                 "multipart/form-data; boundary=x", "", "*/*", "application/xml"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12)
config_values = st.one_of(st.sampled_from(["", "1", "-1", "true", SOURCE, "src", ".*", "a,b"]),
                          st.text(max_size=10), st.integers(), st.none(), json_values)
connector_configs = st.dictionaries(
    st.one_of(st.sampled_from(["name", "connector.class", "tasks.max", "topics", "source.cluster.alias",
                               "target.cluster.alias", "config.action.reload", "key.converter"]),
              st.text(max_size=10)), config_values, max_size=6)
offsets_bodies = st.fixed_dictionaries({"offsets": st.lists(st.fixed_dictionaries(
    {"partition": st.one_of(json_values, st.just({"cluster": "A", "topic": "t", "partition": 0})),
     "offset": st.one_of(json_values, st.just({"offset": 5}))}), max_size=3)})
bodies = st.one_of(
    st.none(),
    json_values.map(lambda v: json.dumps(v).encode()),
    connector_configs.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"name": st.sampled_from(["src", "new", ""]) | st.text(max_size=5),
                           "config": connector_configs}).map(lambda v: json.dumps(v).encode()),
    offsets_bodies.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"level": st.sampled_from(["DEBUG", "INFO", "nope", "", "TRACE"]) | json_values})
    .map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60),
    st.sampled_from([b"{", b"[]", b"null", b'{"a": NaN}', b"1e99999", b'"\\ud800"', b"\xff\xfe{}", b"{}" * 50]),
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    template = draw(st.sampled_from(sorted(TEMPLATES)))
    path = template.format(c=draw(st.sampled_from(NAMES) | st.text(max_size=12).map(quote)),
                           t=draw(st.sampled_from(TASKS)), p=draw(st.sampled_from(PLUGINS)),
                           l=draw(st.sampled_from(LOGGERS)))
    if draw(st.integers(0, 9)) == 0:  # a raw mangled path
        # printable ASCII as is (stray '%', '..', '//'), the rest percent-encoded as a client must
        path = "/" + quote(draw(st.text(max_size=20)).replace("#", "").replace("?", ""), safe="/%:@!$&'()*+,;=~.")
    query = draw(st.dictionaries(st.sampled_from(QUERY_KEYS), st.sampled_from(QUERY_VALUES), max_size=3))
    headers = {}
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    if content_type:
        headers["Content-Type"] = content_type
    if draw(st.integers(0, 5)) == 0:
        headers["X-Connect-Authorization"] = draw(st.sampled_from(["", "abc", "=", "x" * 100]))
        headers["X-Connect-Request-Signature-Algorithm"] = draw(st.sampled_from(["HmacSHA256", "", "MD5"]))
    method = draw(st.sampled_from(TEMPLATES[template] if draw(st.integers(0, 3)) else METHODS))
    return {"method": method, "prefix": draw(st.sampled_from(PREFIXES)),
            "path": path, "params": query, "headers": headers, "content": draw(bodies)}


def seeded() -> FakeHerder:
    herder = FakeHerder()
    herder.configs["src"] = {"name": "src", "connector.class": SOURCE, "tasks.max": "2"}
    return herder


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[httpx.Client, list[str]]]:
    root = RestServer(create_app(seeded()), "http://127.0.0.1:0").start()
    namespaced = RestServer(create_app({("A", "B"): seeded(), ("B", "A"): seeded()}), "http://127.0.0.1:0").start()
    urls = [f"http://127.0.0.1:{root.port}", f"http://127.0.0.1:{namespaced.port}"]
    with httpx.Client(timeout=15) as client:
        yield client, urls
    root.stop()
    namespaced.stop()


@fuzz_settings()
@given(request=requests(), which=st.integers(0, 1))
def test_rest_answers_any_request(request: dict[str, Any], which: int,
                                  servers: tuple[httpx.Client, list[str]]) -> None:
    client, urls = servers
    base = urls[which]
    request = dict(request)
    prefix = request.pop("prefix")
    method = request.pop("method")
    url = base + (prefix if which == 1 else "") + request.pop("path")
    response = client.request(method, url, **request)
    event(f"{response.status_code}")
    described = f"{method} {url} -> {response.status_code}: {response.text[:300]}"
    if response.status_code >= 500:
        assert response.status_code == 503, described
    if response.status_code >= 400 and method != "HEAD":
        body = response.json()
        assert isinstance(body, dict) and body.get("error_code") == response.status_code, described
        assert isinstance(body.get("message"), str), described
    assert client.get(base + "/").status_code == 200, f"the server stopped answering after {described}"
