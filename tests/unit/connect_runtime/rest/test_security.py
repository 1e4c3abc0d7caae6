"""The REST API is safe by default, over real HTTP(S): uvicorn on loopback, httpx as the client.

Every state-changing endpoint is enumerated from the app's routes (root and namespaced), so an
endpoint added later without an entry in ``SUCCESS`` fails ``test_every_state_change_needs_credentials``
rather than escaping the rule. The herder is the shared FakeHerder: what is under test is the HTTP layer.
"""

from __future__ import annotations

import base64
import logging
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from connect_runtime.api.errors import ConfigError, NotLeaderError
from connect_runtime.lifecycle import TargetState
from connect_runtime.rest.app import _NamespaceDispatch, create_app  # noqa: PLC2701 (a unit test of this module's own internal)
from connect_runtime.rest.basic_auth import (
    BASIC_AUTH_EXTENSION,
    BasicAuthenticator,
    credentials_file_from_jaas,
    jaas_file_location,
)
from connect_runtime.rest.security import SAFE_METHODS, RestSecurity, is_internal_request
from connect_runtime.rest.server import RestServer
from connect_runtime.runtime.herder import ConnectorOffset
from tests.support.rest_certs import PemFiles, self_signed

from .conftest import source_config
from .fake_herder import FakeHerder

USER, PASSWORD = "admin", "pa55:word"
LOGGER = "tests.rest.security"

#: (method, route path) -> (path params, JSON body, the success status Connect answers).
SUCCESS: dict[tuple[str, str], tuple[dict[str, str], Any, int]] = {
    ("POST", "/connectors"): ({}, {"name": "new", "config": source_config("new")}, 201),
    ("DELETE", "/connectors/{connector}"): ({}, None, 204),
    ("PUT", "/connectors/{connector}/config"): ({}, source_config("src"), 200),
    ("PATCH", "/connectors/{connector}/config"): ({}, {"tasks.max": "1"}, 200),
    ("POST", "/connectors/{connector}/tasks/{task}/restart"): ({"task": "0"}, None, 204),
    ("POST", "/connectors/{connector}/restart"): ({}, None, 204),
    ("PUT", "/connectors/{connector}/pause"): ({}, None, 202),
    ("PUT", "/connectors/{connector}/resume"): ({}, None, 202),
    ("PUT", "/connectors/{connector}/stop"): ({}, None, 204),
    ("PATCH", "/connectors/{connector}/offsets"): ({}, {"offsets": [{"partition": {"p": 1}, "offset": {"o": 2}}]},
                                                   200),
    ("DELETE", "/connectors/{connector}/offsets"): ({}, None, 200),
    ("PUT", "/connectors/{connector}/topics/reset"): ({}, None, 202),
    ("PUT", "/connector-plugins/{plugin}/config/validate"): ({"plugin": "MirrorSourceConnector"},
                                                             source_config("src"), 200),
    ("PUT", "/admin/loggers/{logger}"): ({"logger": LOGGER}, {"level": "DEBUG"}, 200),
}


class TrackingHerder(FakeHerder):
    """FakeHerder with topic tracking on (its default answers 403 'Topic tracking is disabled.')."""

    def reset_connector_active_topics(self, name: str) -> None:
        self._call("reset_connector_active_topics", name)
        self._config(name)


def mounted_apps(app: Starlette) -> list[Starlette]:
    """The per-flow apps the namespace dispatcher mounts (``create_app`` with namespaced herders)."""
    out: list[Starlette] = []
    for middleware in app.user_middleware:
        if cast(object, middleware.cls) is _NamespaceDispatch:
            out += [mounted for _, mounted in cast(list[tuple[Any, Starlette]], middleware.kwargs["mounts"])]
    return out


def state_changing_routes(app: Starlette) -> set[tuple[str, str]]:
    """(method, path) of every route of ``app`` and its namespace mounts that is neither a read nor an
    internal (signed) endpoint."""
    found = set()
    for each in [app, *mounted_apps(app)]:
        for route in each.routes:
            assert isinstance(route, Route)
            for method in route.methods or ():
                if method not in SAFE_METHODS and not is_internal_request(method, route.path.replace("{", "x")):
                    found.add((method, route.path))
    return found


def trusting(pem: PemFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pem.certificate))


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def write_jaas(tmp_path: Path) -> Path:
    users = tmp_path / "users.properties"
    users.write_text(f"# Kafka's PropertyFileLoginModule format\n{USER}: {PASSWORD.replace(':', chr(92) + ':')}\n"
                     "reader: other\n")
    jaas = tmp_path / "connect-jaas.conf"
    jaas.write_text("// as in Kafka's docs\nKafkaConnect {\n"
                    "  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
                    f'  file="{users}";\n}};\n')
    return jaas


@pytest.fixture
def pem(tmp_path: Path) -> PemFiles:
    return self_signed(tmp_path)


def secured_props(tmp_path: Path, pem: PemFiles, **extra: str) -> dict[str, str]:
    return {"rest.extension.classes": BASIC_AUTH_EXTENSION,
            "rest.basic.auth.jaas.config": str(write_jaas(tmp_path)),
            "listeners.https.ssl.keystore.type": "PEM",
            "listeners.https.ssl.keystore.location": str(pem.keystore),
            "listeners.https.ssl.truststore.type": "PEM",
            "listeners.https.ssl.truststore.location": str(pem.certificate), **extra}


class Served:
    def __init__(self, app: Starlette, security: RestSecurity, scheme: str = "https") -> None:
        self.server = RestServer(app, f"{scheme}://127.0.0.1:0", ssl_context=security.server_ssl).start()
        self.url = self.server.url


@pytest.fixture
def https_worker(tmp_path: Path, pem: PemFiles) -> Iterator[tuple[FakeHerder, Served, httpx.Client]]:
    herder = TrackingHerder()
    security = RestSecurity.from_props(secured_props(tmp_path, pem), https=True)
    served = Served(create_app(herder, security=security), security)
    try:
        with httpx.Client(verify=trusting(pem), timeout=30, trust_env=False) as http:
            yield herder, served, http
    finally:
        served.server.stop()


def reset(herder: FakeHerder, stopped: bool = False) -> None:
    """Connector ``src`` exists (STOPPED for offset changes, which Connect requires, else running)."""
    herder.configs.clear()
    herder.configs["src"] = source_config("src")
    herder.target["src"] = TargetState.STOPPED if stopped else TargetState.STARTED
    herder.offsets["src"] = [ConnectorOffset({"p": 1}, {"o": 1})]


def call(http: httpx.Client, base: str, method: str, path: str, params: dict[str, str], body: Any,
         headers: dict[str, str] | None = None) -> httpx.Response:
    url = base + path.format(**{"connector": "src", **params})
    return http.request(method, url, json=body, headers=headers)


def test_enumerated_routes_match_the_table() -> None:
    """The table holds exactly the state-changing endpoints, at the root and under a namespace."""
    assert state_changing_routes(create_app(FakeHerder())) == set(SUCCESS)
    namespaced = state_changing_routes(create_app({("A", "B"): FakeHerder()}))
    assert namespaced == set(SUCCESS), namespaced ^ set(SUCCESS)


def test_every_state_change_needs_credentials(https_worker: tuple[FakeHerder, Served, httpx.Client]) -> None:
    herder, served, http = https_worker
    assert served.url.startswith("https://")
    logging.getLogger(LOGGER)
    for (method, path), (params, body, status) in SUCCESS.items():
        reset(herder, stopped=path.endswith("/offsets"))
        calls = len(herder.calls)
        refused = call(http, served.url, method, path, params, body)
        assert refused.status_code == 401, (method, path, refused.text)
        assert refused.json()["error_code"] == 401
        assert refused.headers["www-authenticate"].startswith("Basic realm=")
        wrong = call(http, served.url, method, path, params, body, basic(USER, "wrong"))
        assert wrong.status_code == 401 and wrong.json()["message"] == "User cannot access the resource."
        assert len(herder.calls) == calls, f"{method} {path} reached the herder without credentials"
        allowed = call(http, served.url, method, path, params, body, basic(USER, PASSWORD))
        assert allowed.status_code == status, (method, path, allowed.text)


def test_reads_need_credentials_but_health_and_internal_endpoints_do_not(
        https_worker: tuple[FakeHerder, Served, httpx.Client]) -> None:
    """Issue 27: with basic auth configured, reads were open; Kafka's extension authenticates them all."""
    herder, served, http = https_worker
    reset(herder)
    for path in ("/", "/connectors", "/connectors/src", "/connectors/src/config",
                 "/connectors/src/status", "/connectors/src/tasks", "/connectors/src/offsets", "/metrics",
                 "/admin/loggers", "/connector-plugins"):
        refused = http.get(served.url + path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Basic realm=")
        assert "rest.reads.allow.unauthenticated" in refused.json()["message"]
        assert http.get(served.url + path, headers=basic(USER, "wrong")).status_code == 401, path
        assert http.get(served.url + path, headers=basic(USER, PASSWORD)).status_code == 200, path
    assert http.get(served.url + "/health").status_code == 200
    # Not a 401: the internal endpoints are exempt from basic auth and refuse an unsigned body themselves.
    unsigned = http.post(served.url + "/connectors/src/tasks", json=[])
    assert unsigned.status_code == 400 and "signature" in unsigned.json()["message"].lower()
    assert http.put(served.url + "/connectors/src/fence").status_code == 400


def test_reads_can_be_opened_again_under_basic_auth(tmp_path: Path, pem: PemFiles) -> None:
    security = RestSecurity.from_props(secured_props(tmp_path, pem, **{"rest.reads.allow.unauthenticated": "true"}),
                                       https=True)
    herder = FakeHerder()
    served = Served(create_app(herder, security=security), security)
    try:
        with httpx.Client(verify=trusting(pem), timeout=30, trust_env=False) as http:
            reset(herder)
            assert http.get(served.url + "/connectors/src/status").status_code == 200
            assert http.put(served.url + "/connectors/src/pause").status_code == 401
    finally:
        served.server.stop()


def test_default_is_refusal_and_opt_in_opens(tmp_path: Path) -> None:
    herder = FakeHerder()
    closed = RestSecurity.from_props({}, https=False)
    opened = RestSecurity.from_props({"rest.mutations.allow.unauthenticated": "true"}, https=False)
    servers = [Served(create_app(herder, security=s), s, "http") for s in (closed, opened)]
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            reset(herder)
            refused = http.put(servers[0].url + "/connectors/src/pause")
            assert refused.status_code == 403
            assert "rest.mutations.allow.unauthenticated" in refused.json()["message"]
            assert http.put(servers[0].url + "/connectors/src/pause", headers=basic(USER, PASSWORD)).status_code == 403
            assert http.get(servers[0].url + "/connectors/src/status").status_code == 200
            assert http.put(servers[1].url + "/connectors/src/pause").status_code == 202
    finally:
        for served in servers:
            served.server.stop()


def test_forwarded_request_carries_the_callers_credentials(tmp_path: Path, pem: PemFiles) -> None:
    """Follower -> leader over HTTPS with auth on both: the leader checks the forwarded header."""
    security = RestSecurity.from_props(secured_props(tmp_path, pem), https=True)
    leader_herder, follower_herder = FakeHerder(worker="leader"), FakeHerder(worker="follower")
    leader = Served(create_app(leader_herder, security=security), security)
    follower = Served(create_app(follower_herder, security=security), security)
    follower_herder.fail("put_connector_config", NotLeaderError("not leader", target_url=leader.url))
    try:
        with httpx.Client(verify=trusting(pem), timeout=30, trust_env=False) as http:
            body = {"name": "src", "config": source_config("src")}
            assert http.post(follower.url + "/connectors", json=body).status_code == 401
            created = http.post(follower.url + "/connectors", json=body, headers=basic(USER, PASSWORD))
            assert created.status_code == 201, created.text
            assert "src" in leader_herder.configs
    finally:
        follower.server.stop()  # first: it closes its forwarding connection, which the leader would wait for
        leader.server.stop()


def test_provider_allowlist_for_rest_submitted_configs(tmp_path: Path) -> None:
    herder = FakeHerder()
    security = RestSecurity.from_props({"rest.mutations.allow.unauthenticated": "true",
                                        "rest.config.providers.allowlist": "vault"}, https=False)
    served = Served(create_app(herder, security=security), security, "http")
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            leak = source_config("x", **{"topics": "${file:/etc/passwd:root}"})
            refused = http.post(served.url + "/connectors", json={"name": "x", "config": leak})
            assert refused.status_code == 400
            assert "'file'" in refused.json()["message"] and "topics" in refused.json()["message"]
            assert http.patch(served.url + "/connectors/x/config", json={"a": "${env:HOME}"}).status_code == 400
            assert http.put(served.url + "/connector-plugins/MirrorSourceConnector/config/validate",
                            json=leak).status_code == 400
            assert not herder.called("put_connector_config")
            fine = source_config("y", **{"ssl.key.password": "${vault:secret/kafka:key}"})
            assert http.post(served.url + "/connectors", json={"name": "y", "config": fine}).status_code == 201
    finally:
        served.server.stop()


def test_cors_preflight_and_headers() -> None:
    security = RestSecurity.from_props({"access.control.allow.origin": "https://ui.example",
                                        "access.control.allow.methods": "GET,PUT"}, https=False)
    served = Served(create_app(FakeHerder(), security=security), security, "http")
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            preflight = http.options(served.url + "/connectors", headers={
                "Origin": "https://ui.example", "Access-Control-Request-Method": "PUT"})
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == "https://ui.example"
            assert "PUT" in preflight.headers["access-control-allow-methods"]
            other = http.get(served.url + "/connectors", headers={"Origin": "https://evil.example"})
            assert "access-control-allow-origin" not in other.headers
    finally:
        served.server.stop()


def test_jaas_and_credentials_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jaas = write_jaas(tmp_path)
    auth = BasicAuthenticator.from_jaas(str(jaas))
    assert auth.authenticate(basic(USER, PASSWORD)["Authorization"]) == USER
    assert auth.authenticate(basic("reader", "other")["Authorization"]) == "reader"
    for bad in (None, "", "Bearer x", "Basic !!!", basic("nobody", PASSWORD)["Authorization"],
                basic(USER, PASSWORD + "x")["Authorization"]):
        assert auth.authenticate(bad) is None
    # A rotated password is read without a restart.
    Path(auth.credentials_file).write_text(f"{USER}: rotated-password-long\n")
    assert auth.authenticate(basic(USER, "rotated-password-long")["Authorization"]) == USER
    assert jaas_file_location({}, {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={jaas}"}) == str(jaas)
    assert jaas_file_location({"java.security.auth.login.config": "/j.conf"}, {}) == "/j.conf"
    assert jaas_file_location({}, {}) is None
    with pytest.raises(ConfigError, match="no 'KafkaConnect"):
        credentials_file_from_jaas("KafkaServer { x required; };", "j.conf")
    with pytest.raises(ConfigError, match=r"needs a file="):
        credentials_file_from_jaas(f"KafkaConnect {{ {'org.apache.kafka.connect.rest.basic.auth.extension.'}"
                                   "PropertyFileLoginModule required; };", "j.conf")


@pytest.mark.parametrize(("props", "message"), [
    ({"rest.extension.classes": "com.example.MyExtension"}, "only org.apache.kafka"),
    ({"rest.extension.classes": BASIC_AUTH_EXTENSION}, "no JAAS file"),
    ({"rest.extension.classes": BASIC_AUTH_EXTENSION, "rest.basic.auth.jaas.config": "/nonexistent/j.conf"},
     "cannot read the JAAS file"),
    ({"rest.mutations.allow.unauthenticated": "yes"}, "rest.mutations.allow.unauthenticated"),
    ({"listeners.https.ssl.client.auth": "maybe"}, "listeners.https.ssl.client.auth"),
])
def test_bad_security_settings_are_config_errors(props: dict[str, str], message: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    with pytest.raises(ConfigError, match=message):
        RestSecurity.from_props(props, https=False)


def test_https_listener_settings(tmp_path: Path, pem: PemFiles) -> None:
    with pytest.raises(ConfigError, match="needs a key store"):
        RestSecurity.from_props({}, https=True)
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl\.keystore\.location"):
        # A JKS store (the default type) that does not exist: the error names the key.
        RestSecurity.from_props({"listeners.https.ssl.keystore.location": str(tmp_path / "ks.jks")}, https=True)
    # Inline PEM (ssl.keystore.key + ssl.keystore.certificate.chain), as Kafka allows.
    inline = RestSecurity.from_props({"listeners.https.ssl.keystore.type": "PEM",
                                      "listeners.https.ssl.keystore.key": pem.key_pem,
                                      "listeners.https.ssl.keystore.certificate.chain": pem.cert_pem}, https=True)
    served = Served(create_app(FakeHerder(), security=inline), inline)
    try:
        with httpx.Client(verify=trusting(pem), timeout=30, trust_env=False) as http:
            assert http.get(served.url + "/connectors").status_code == 200
        with httpx.Client(timeout=30, trust_env=False) as untrusting, pytest.raises(httpx.ConnectError):
            untrusting.get(served.url + "/connectors")
    finally:
        served.server.stop()


def test_encrypted_key_and_required_client_certificates(tmp_path: Path) -> None:
    pem = self_signed(tmp_path, key_password="key-pass-1")
    props = {"listeners.https.ssl.keystore.type": "PEM", "listeners.https.ssl.keystore.location": str(pem.keystore),
             "listeners.https.ssl.key.password": "key-pass-1", "listeners.https.ssl.client.auth": "required",
             "listeners.https.ssl.truststore.type": "PEM",
             "listeners.https.ssl.truststore.location": str(pem.certificate)}
    security = RestSecurity.from_props(props, https=True)
    served = Served(create_app(FakeHerder(), security=security), security)
    try:
        assert security.client_ssl is not None
        with httpx.Client(verify=security.client_ssl, timeout=30, trust_env=False) as with_cert:
            assert with_cert.get(served.url + "/connectors").status_code == 200
        with httpx.Client(verify=trusting(pem), timeout=30, trust_env=False) as without_cert, \
                pytest.raises((httpx.ReadError, httpx.ConnectError, httpx.RemoteProtocolError)):
            without_cert.get(served.url + "/connectors")
    finally:
        served.server.stop()


def test_internal_endpoints_can_be_left_out() -> None:
    """MM2 without dedicated.mode.enable.internal.rest: no internal endpoint, as in Java (KIP-710)."""
    herder = FakeHerder()
    served = Served(create_app({("A", "B"): herder}, internal_endpoints=False), RestSecurity(), "http")
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            # 405: GET .../tasks (the public task list) exists; POST (the internal write) does not.
            assert http.post(served.url + "/A/B/connectors/src/tasks", json=[]).status_code == 405
            assert http.put(served.url + "/A/B/connectors/src/fence").status_code == 404
            assert http.get(served.url + "/A/B/connectors").status_code == 200
    finally:
        served.server.stop()


def test_https_listener_with_pkcs12_key_and_trust_stores(tmp_path: Path, pem: PemFiles) -> None:
    """Java key and trust stores work for the listener as for clients (connect_runtime.clients.java_stores)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = serialization.load_pem_private_key(pem.key_pem.encode(), None)
    cert = x509.load_pem_x509_certificate(pem.cert_pem.encode())
    keystore, truststore = tmp_path / "rest.p12", tmp_path / "trust.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"rest", key, cert, None, serialization.BestAvailableEncryption(b"store-pass")))  # type: ignore[arg-type]
    truststore.write_bytes(pkcs12.serialize_java_truststore(
        [pkcs12.PKCS12Certificate(cert, b"ca")], serialization.BestAvailableEncryption(b"trust-pass")))
    props = {"listeners.https.ssl.keystore.type": "PKCS12", "listeners.https.ssl.keystore.location": str(keystore),
             "listeners.https.ssl.keystore.password": "store-pass", "listeners.https.ssl.truststore.type": "PKCS12",
             "listeners.https.ssl.truststore.location": str(truststore),
             "listeners.https.ssl.truststore.password": "trust-pass"}
    with pytest.raises(ConfigError, match=r"listeners\.https\.ssl\.keystore\.password"):
        RestSecurity.from_props({**props, "listeners.https.ssl.keystore.password": "wrong"}, https=True)
    security = RestSecurity.from_props(props, https=True)
    served = Served(create_app(FakeHerder(), security=security), security)
    try:
        assert security.client_ssl is not None  # the trust store is what forwarding trusts
        with httpx.Client(verify=security.client_ssl, timeout=30, trust_env=False) as http:
            assert http.get(served.url + "/connectors").status_code == 200
    finally:
        served.server.stop()


def test_response_http_headers_config_adds_headers_to_every_answer() -> None:
    security = RestSecurity.from_props(
        {"rest.mutations.allow.unauthenticated": "true",
         "response.http.headers.config": "set X-Frame-Options: DENY, add Cache-Control: no-cache, "
                                         "add Cache-Control: no-store, setDate Expires: 3600000"}, https=False)
    served = Served(create_app(FakeHerder(), security=security), security, scheme="http")
    try:
        with httpx.Client(timeout=30, trust_env=False) as http:
            for response in (http.get(served.url + "/connectors"), http.get(served.url + "/no/such/path")):
                assert response.headers["X-Frame-Options"] == "DENY"
                assert response.headers.get_list("Cache-Control") == ["no-cache", "no-store"]
                assert response.headers["Expires"].endswith(" GMT")
    finally:
        served.server.stop()
    with pytest.raises(ConfigError, match=r"response\.http\.headers\.config"):
        RestSecurity.from_props({"response.http.headers.config": "replace X-A: b"}, https=False)
