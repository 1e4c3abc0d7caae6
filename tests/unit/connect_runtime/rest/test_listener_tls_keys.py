"""The HTTPS listener's ``listeners.https.ssl.enabled.protocols`` / ``ssl.protocol`` / ``ssl.cipher.suites``,
enforced by Python's ``ssl`` (real handshakes with the running REST server), and its Java-only keys refused
naming the key. Before: the listener read only its stores; these keys changed nothing.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette

from connect_runtime.api.errors import ConfigError
from connect_runtime.rest.security import RestSecurity
from connect_runtime.rest.server import RestServer
from tests.support.rest_certs import PemFiles, self_signed


@pytest.fixture
def pem(tmp_path: Path) -> PemFiles:
    return self_signed(tmp_path)


def _props(pem: PemFiles, **extra: str) -> dict[str, str]:
    return {"listeners.https.ssl.keystore.type": "PEM", "listeners.https.ssl.keystore.location": str(pem.keystore),
            "listeners.https.ssl.truststore.type": "PEM",
            "listeners.https.ssl.truststore.location": str(pem.certificate),
            **{f"listeners.https.{k}": v for k, v in extra.items()}}


@pytest.fixture
def serve(pem: PemFiles) -> Iterator[Callable[..., int]]:
    servers: list[RestServer] = []

    def start(**keys: str) -> int:
        security = RestSecurity.from_props(_props(pem, **keys), https=True)
        server = RestServer(Starlette(), "https://127.0.0.1:0", ssl_context=security.server_ssl).start()
        servers.append(server)
        return server.port

    yield start
    for server in servers:
        server.stop()


def _handshake(pem: PemFiles, port: int, version: ssl.TLSVersion) -> str:
    """The version a client limited to ``version`` negotiates with the listener (SSLError when none)."""
    context = ssl.create_default_context(cafile=str(pem.certificate))
    context.minimum_version = context.maximum_version = version
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return str(tls.version())


def test_tls13_only_listener_refuses_a_tls12_client(serve: Callable[..., int], pem: PemFiles) -> None:
    port = serve(**{"ssl.enabled.protocols": "TLSv1.3"})
    assert _handshake(pem, port, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
    with pytest.raises(ssl.SSLError):
        _handshake(pem, port, ssl.TLSVersion.TLSv1_2)


def test_tls12_only_listener_is_enforced_here(serve: Callable[..., int], pem: PemFiles) -> None:
    """Python's ssl caps the version too, so TLSv1.2 alone (refused for Kafka clients) is honoured here."""
    port = serve(**{"ssl.protocol": "TLSv1.2"})
    assert _handshake(pem, port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    with pytest.raises(ssl.SSLError):
        _handshake(pem, port, ssl.TLSVersion.TLSv1_3)


def test_java_defaults_listener_serves_both(serve: Callable[..., int], pem: PemFiles) -> None:
    port = serve(**{"ssl.protocol": "TLSv1.3", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
                    "ssl.keymanager.algorithm": "SunX509"})
    assert _handshake(pem, port, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
    assert _handshake(pem, port, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"


@pytest.mark.parametrize(("key", "value"), [("ssl.provider", "SunJSSE"), ("ssl.enabled.protocols", "TLSv1.1"),
                                            ("ssl.keymanager.algorithm", "NewSunX509"),
                                            ("ssl.cipher.suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")])
def test_a_listener_value_python_cannot_enforce_is_refused_naming_the_key(pem: PemFiles, key: str,
                                                                          value: str) -> None:
    with pytest.raises(ConfigError) as error:
        RestSecurity.from_props(_props(pem, **{key: value}), https=True)
    assert error.value.key == f"listeners.https.{key}"
    assert str(error.value).startswith(f"Invalid value {value} for configuration listeners.https.{key}: ")
